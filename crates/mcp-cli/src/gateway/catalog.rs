//! What the gateway serves: every upstream's tools, prompts, resources and templates,
//! registered in one router under their public names (each guarded by its upstream's scopes),
//! and kept in step with the upstreams (listed again when one connects or says its lists
//! changed, each under its own deadline).
//!
//! Two upstreams may offer the same name or URI. The one earlier in the file serves it, whatever
//! order they connect in: a tool or prompt name that clashes is an error on stderr and in
//! `/readyz` until a `prefix` tells them apart; a resource URI or template that clashes is served
//! from the earlier upstream (prefixes apply to names, not URIs), said once on stderr.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::proxy::ProxyRouter as _;
use mcp::server::middleware::AuditLog;
use mcp::server::tasks::ANONYMOUS;
use mcp::server::uri_template::UriTemplate;
use mcp::server::{Lists, RequestContext, ResourceRequest, ScopedItem, ToolDef, ToolError};
use mcp::types::completion::{CompleteParams, CompleteResult, Completion, CompletionRef};
use mcp::types::prompts::Prompt;
use mcp::types::resources::{Resource, ResourceTemplate};
use mcp::types::tools::Tool;
use mcp::types::ErrorObject;
use mcp::Router;
use serde_json::{json, Value};

use super::names::{is_valid, public_name};
use super::rounds;
use super::upstream::Upstream;
use mcp::types::content::ResourceContents;
use mcp::types::prompts::GetPromptResult;
use mcp::types::resources::ReadResourceResult;

/// How long one upstream's listing may take (a server that hangs is marked not listed and tried
/// again when it next connects or changes; the others are not held).
pub const LIST_DEADLINE: Duration = Duration::from_secs(20);
/// The most tasks one listing shows (each is asked of its upstream as it is now).
const MAX_LISTED_TASKS: usize = 100;

/// What one upstream has in the router: public name → the upstream's own name, and URIs.
#[derive(Debug, Default, Clone)]
struct Served {
    tools: BTreeMap<String, String>,
    prompts: BTreeMap<String, String>,
    resources: BTreeSet<String>,
    templates: BTreeMap<String, Arc<UriTemplate>>,
    /// Each tool's definition as the upstream listed it, hashed (its own name → SHA-256).
    hashes: BTreeMap<String, String>,
    /// Names it lists that another upstream serves (for `/readyz`).
    clashes: Vec<String>,
    /// Whether it has been listed since it last connected.
    listed: bool,
}

/// Everything one upstream lists.
#[derive(Default)]
struct Listing {
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
}

/// The gateway's catalog.
pub struct Catalog {
    router: Router,
    /// The router's lists, which the upstreams' items are added to and removed from.
    lists: Lists,
    upstreams: Vec<Arc<Upstream>>,
    served: Mutex<Vec<Served>>,
    /// How many downstream sessions are subscribed to each URI.
    subscriptions: Mutex<HashMap<String, usize>>,
    /// Who made each task a call created, and on which connection it runs.
    tasks: Mutex<TaskOwners>,
    /// Where each listing of an upstream's tools is recorded, with their hashes.
    audit: Option<AuditLog>,
}

/// One task made through the gateway.
struct TaskEntry {
    /// The connection it was made on (a caller's own child holds its tasks).
    connection: Arc<Upstream>,
    /// The account that made it: only it may see or touch the task.
    owner: String,
}

/// Task id → its entry, the oldest forgotten past a bound.
#[derive(Default)]
struct TaskOwners {
    entries: HashMap<String, TaskEntry>,
    order: VecDeque<String>,
}

impl TaskOwners {
    const MAX: usize = 100_000;

    fn insert(&mut self, id: String, entry: TaskEntry) {
        if self.entries.insert(id.clone(), entry).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > Self::MAX {
            if let Some(old) = self.order.pop_front() {
                self.entries.remove(&old);
            }
        }
    }

    /// The connection of task `id`, if `account` made it.
    fn of(&self, id: &str, account: &str) -> Option<Arc<Upstream>> {
        self.entries.get(id).filter(|e| e.owner == account).map(|e| e.connection.clone())
    }

    /// `account`'s newest `most` tasks, newest first, with the connection each runs on.
    fn mine(&self, account: &str, most: usize) -> Vec<(String, Arc<Upstream>)> {
        let owned = self.order.iter().rev().filter_map(|id| Some((id, self.entries.get(id)?)));
        owned.filter(|(_, e)| e.owner == account).take(most).map(|(id, e)| (id.clone(), e.connection.clone())).collect()
    }

    /// Forgets task `id` (its upstream no longer knows it).
    fn forget(&mut self, id: &str) {
        if self.entries.remove(id).is_some() {
            self.order.retain(|o| o != id);
        }
    }
}

/// The error for a task the caller may not see: the library's words, so the gateway gives away
/// no more than a server would.
fn unknown_task(id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("Unknown task: {id} (it never existed, belongs to someone else, or expired)"))
}

/// The SHA-256 of a tool's definition as listed (description, schemas, annotations: what the
/// model is shown), in hex.
fn tool_hash(tool: &Tool) -> String {
    crate::digest::json_sha256(&serde_json::to_value(tool).unwrap_or_default())
}

/// The id of the task a `tools/call` answer says was created.
fn created_task(answer: &Value) -> Option<String> {
    let task =
        if answer.get("resultType").and_then(Value::as_str) == Some("task") { answer } else { answer.get("task")? };
    task.get("taskId").and_then(Value::as_str).map(str::to_owned)
}

/// Which upstream other than `index` holds a name, found by `holds`.
fn holder(served: &[Served], index: usize, holds: impl Fn(&Served) -> bool) -> Option<usize> {
    served.iter().enumerate().find(|(i, s)| *i != index && holds(s)).map(|(i, _)| i)
}

impl Catalog {
    /// A catalog serving `upstreams` through `router` (completions and subscriptions included).
    pub fn new(router: Router, upstreams: Vec<Arc<Upstream>>, audit: Option<AuditLog>) -> Arc<Catalog> {
        let served = Mutex::new(vec![Served::default(); upstreams.len()]);
        let catalog = Arc::new(Catalog {
            lists: router.lists(),
            router,
            upstreams,
            served,
            subscriptions: Mutex::new(HashMap::new()),
            tasks: Mutex::new(TaskOwners::default()),
            audit,
        });
        let weak = Arc::downgrade(&catalog);
        let completer = weak.clone();
        let tasks = weak.clone();
        let router = catalog.router.clone();
        let _ = router
            .complete_with(Arc::new(move |params: CompleteParams, cx: RequestContext| {
                let catalog = completer.upgrade();
                Box::pin(async move {
                    let catalog = catalog.ok_or_else(|| ToolError::new("the gateway is stopping"))?;
                    catalog.complete(params, cx).await
                })
            }))
            .forward_tasks(Arc::new(move |method: String, params: Value, cx: RequestContext| {
                let catalog = tasks.upgrade();
                Box::pin(async move {
                    let catalog = catalog.ok_or_else(|| ErrorObject::internal("the gateway is stopping"))?;
                    catalog.task_request(&method, params, &cx).await
                })
            }))
            .on_subscribe(move |uri, on| {
                if let Some(catalog) = weak.upgrade() {
                    catalog.subscribe(uri, on);
                }
            });
        catalog
    }

    pub fn upstreams(&self) -> &[Arc<Upstream>] {
        &self.upstreams
    }

    /// What keeps the gateway from being ready, per upstream: not connected, not listed, or
    /// names that clash with another's. Empty when ready.
    pub fn not_ready(&self) -> Vec<String> {
        let served = self.served.lock().unwrap();
        let mut problems = Vec::new();
        for (upstream, served) in self.upstreams.iter().zip(served.iter()) {
            if !upstream.is_up() {
                problems.push(format!("{}: not connected", upstream.key()));
            } else if !served.listed {
                problems.push(format!("{}: not listed yet", upstream.key()));
            }
            if !served.clashes.is_empty() {
                problems.push(format!(
                    "{}: {} served by another upstream (give it a \"prefix\")",
                    upstream.key(),
                    served.clashes.join(", ")
                ));
            }
        }
        problems
    }

    /// Whether the item a request of `method` names is served now (a tool, prompt or URI).
    pub fn serves(&self, method: &str, name: &str) -> bool {
        match method {
            "tools/call" => self.served.lock().unwrap().iter().any(|s| s.tools.contains_key(name)),
            "prompts/get" => self.prompt_owner(name).is_some(),
            "resources/read" | "resources/subscribe" => self.uri_owner(name).is_some(),
            _ => false,
        }
    }

    /// Marks upstream `index` as needing a listing (it connected again).
    pub fn unlisted(&self, index: usize) {
        self.served.lock().unwrap()[index].listed = false;
    }

    /// Lists upstream `index` again (within [`LIST_DEADLINE`]) and brings the router in step.
    /// `Err` says why it could not be listed; names that clash are left to the earlier upstream
    /// and reported (see the module's documentation).
    pub async fn refresh(self: &Arc<Self>, index: usize) -> Result<(), String> {
        let upstream = self.upstreams[index].clone();
        let listing = match tokio::time::timeout(LIST_DEADLINE, list(&upstream)).await {
            Ok(listing) => listing?,
            Err(_) => {
                return Err(format!(
                    "upstream {:?} did not answer its listing within {} s",
                    upstream.key(),
                    LIST_DEADLINE.as_secs()
                ))
            }
        };
        let mut served = self.served.lock().unwrap();
        let mut next = Served {
            hashes: listing.tools.iter().map(|t| (t.name.clone(), tool_hash(t))).collect(),
            listed: true,
            ..Served::default()
        };
        self.audit_listing(&upstream, &served[index].hashes, &next.hashes);
        let mut shadowed = Vec::new();
        for tool in listing.tools.into_iter().filter(|t| upstream.config.serves_tool(&t.name)) {
            let public = public_name(&upstream.config.prefix, &tool.name);
            if !is_valid(&public) || next.tools.contains_key(&public) {
                next.clashes.push(format!("tool {public:?}"));
                continue;
            }
            if let Some(other) = holder(&served, index, |s| s.tools.contains_key(&public)) {
                if other < index {
                    next.clashes.push(format!("tool {public:?}"));
                    continue;
                }
                served[other].tools.remove(&public);
                served[other].clashes.push(format!("tool {public:?}"));
            }
            next.tools.insert(public.clone(), tool.name.clone());
            self.add_tool(&upstream, public, tool);
        }
        for prompt in listing.prompts {
            let public = public_name(&upstream.config.prefix, &prompt.name);
            if next.prompts.contains_key(&public) {
                next.clashes.push(format!("prompt {public:?}"));
                continue;
            }
            if let Some(other) = holder(&served, index, |s| s.prompts.contains_key(&public)) {
                if other < index {
                    next.clashes.push(format!("prompt {public:?}"));
                    continue;
                }
                served[other].prompts.remove(&public);
                served[other].clashes.push(format!("prompt {public:?}"));
            }
            next.prompts.insert(public.clone(), prompt.name.clone());
            self.add_prompt(&upstream, public, prompt);
        }
        for resource in listing.resources {
            let uri = resource.uri.clone();
            if let Some(other) = holder(&served, index, |s| s.resources.contains(&uri)) {
                if other < index {
                    shadowed.push(format!("resource {uri:?}"));
                    continue;
                }
                served[other].resources.remove(&uri);
            }
            if next.resources.insert(uri) {
                self.add_resource(&upstream, resource);
            }
        }
        for template in listing.templates {
            let key = template.uri_template.clone();
            if let Some(other) = holder(&served, index, |s| s.templates.contains_key(&key)) {
                if other < index {
                    shadowed.push(format!("resource template {key:?}"));
                    continue;
                }
                served[other].templates.remove(&key);
            }
            match self.add_template(&upstream, template) {
                Ok(parsed) => drop(next.templates.insert(key, parsed)),
                Err(why) => tracing::warn!("upstream {:?}: resource template {key:?} left out: {why}", upstream.key()),
            }
        }
        let previous = std::mem::replace(&mut served[index], next);
        self.remove_gone(&previous, &served[index]);
        let clashes = served[index].clashes.clone();
        drop(served);
        if !shadowed.is_empty() {
            tracing::warn!(
                "upstream {:?}: {} served from an upstream earlier in the file: {}",
                upstream.key(),
                if shadowed.len() == 1 { "this URI is" } else { "these URIs are" },
                shadowed.join(", ")
            );
        }
        if !clashes.is_empty() {
            tracing::error!(
                "upstream {:?}: {} already served by an upstream earlier in the file, so left out (give it a \
                 \"prefix\"): {}",
                upstream.key(),
                if clashes.len() == 1 { "this name is" } else { "these names are" },
                clashes.join(", ")
            );
        }
        Ok(())
    }

    /// Takes out of the router what `previous` served and `current` does not.
    fn remove_gone(&self, previous: &Served, current: &Served) {
        for gone in previous.tools.keys().filter(|k| !current.tools.contains_key(*k)) {
            self.lists.remove_tool(gone);
        }
        for gone in previous.prompts.keys().filter(|k| !current.prompts.contains_key(*k)) {
            self.lists.remove_prompt(gone);
            let _ = self.lists.set_item_scopes(ScopedItem::Prompt(gone), &[]);
        }
        for gone in previous.resources.iter().filter(|k| !current.resources.contains(*k)) {
            self.lists.remove_resource(gone);
            let _ = self.lists.set_item_scopes(ScopedItem::Resource(gone), &[]);
        }
        for gone in previous.templates.keys().filter(|k| !current.templates.contains_key(*k)) {
            self.lists.remove_resource_template(gone);
            let _ = self.lists.set_item_scopes(ScopedItem::Template(gone), &[]);
        }
    }

    /// Records the tools an upstream listed, each with the hash of its definition: a description
    /// or schema that changed between two listings is named (and logged as a warning).
    fn audit_listing(&self, upstream: &Upstream, before: &BTreeMap<String, String>, now: &BTreeMap<String, String>) {
        let changed: Vec<&String> =
            now.iter().filter(|(n, h)| before.get(*n).is_some_and(|b| b != *h)).map(|(n, _)| n).collect();
        if !changed.is_empty() {
            tracing::warn!(
                "upstream {:?} changed the definition of {changed:?} since its last listing",
                upstream.key()
            );
        }
        let Some(audit) = &self.audit else { return };
        let tools: Vec<Value> = now.iter().map(|(name, hash)| json!({"name": name, "sha256": hash})).collect();
        let mut fields = serde_json::Map::new();
        fields.insert("upstream".into(), json!(upstream.key()));
        fields.insert("tools".into(), Value::Array(tools));
        fields.insert("changed".into(), json!(changed));
        fields.insert("removed".into(), json!(before.keys().filter(|n| !now.contains_key(*n)).collect::<Vec<_>>()));
        audit.note("upstream_tools_listed", fields);
    }

    fn add_tool(self: &Arc<Self>, upstream: &Arc<Upstream>, public: String, mut tool: Tool) {
        let own_name: Arc<str> = std::mem::replace(&mut tool.name, public).into();
        // A 2026-07-28 upstream lists no execution hints; whether a call becomes a task is the
        // upstream's to say, per call: its answer (a task included) is passed on as it is.
        tool.execution = None;
        let scopes = upstream.config.scopes_of(&own_name);
        let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let def = ToolDef::from_tool(tool).scopes(&scopes);
        let upstream = upstream.clone();
        let catalog = Arc::downgrade(self);
        self.router.add_raw_tool(
            def,
            Arc::new(move |arguments: &str, cx: RequestContext| {
                let upstream = upstream.clone();
                let catalog = catalog.clone();
                let arguments: Result<Value, _> = serde_json::from_str(arguments);
                let name = own_name.clone();
                Box::pin(async move {
                    let arguments =
                        arguments.map_err(|e| ToolError::invalid_params(format!("invalid arguments: {e}")))?;
                    let params = json!({"name": &*name, "arguments": arguments});
                    let connection = upstream.for_caller(&cx);
                    let answer = rounds::forward(&connection, &cx, "tools/call", params).await?;
                    if let (Some(catalog), Some(id)) = (catalog.upgrade(), created_task(&answer)) {
                        let entry = TaskEntry { connection, owner: cx.account() };
                        catalog.tasks.lock().unwrap().insert(id, entry);
                    }
                    Ok(answer)
                })
            }),
        );
    }

    fn add_prompt(&self, upstream: &Arc<Upstream>, public: String, mut prompt: Prompt) {
        let own_name = std::mem::replace(&mut prompt.name, public.clone());
        let _ = self.lists.set_item_scopes(ScopedItem::Prompt(&public), &upstream.config.prompt_scopes_of(&own_name));
        let upstream = upstream.clone();
        self.lists.add_prompt(prompt, move |args: BTreeMap<String, String>, cx: RequestContext| {
            let upstream = upstream.clone();
            let params = json!({"name": own_name, "arguments": args});
            async move {
                let answer = rounds::forward(&upstream.for_caller(&cx), &cx, "prompts/get", params).await?;
                typed::<GetPromptResult>(answer)
            }
        });
    }

    fn add_resource(&self, upstream: &Arc<Upstream>, resource: Resource) {
        let scopes = upstream.config.resource_scopes_of(&resource.uri);
        let _ = self.lists.set_item_scopes(ScopedItem::Resource(&resource.uri), &scopes);
        let upstream = upstream.clone();
        self.lists.add_resource(resource, move |request: ResourceRequest, cx: RequestContext| {
            let upstream = upstream.clone();
            async move { read(&upstream, request.uri, &cx).await }
        });
    }

    fn add_template(&self, upstream: &Arc<Upstream>, template: ResourceTemplate) -> Result<Arc<UriTemplate>, String> {
        let parsed = Arc::new(UriTemplate::parse(&template.uri_template)?);
        let scopes = upstream.config.resource_scopes_of(&template.uri_template);
        self.lists.set_item_scopes(ScopedItem::Template(&template.uri_template), &scopes)?;
        let upstream = upstream.clone();
        self.lists.add_resource_template(
            template,
            move |request: ResourceRequest<BTreeMap<String, String>>, cx: RequestContext| {
                let upstream = upstream.clone();
                async move { read(&upstream, request.uri, &cx).await }
            },
        )?;
        Ok(parsed)
    }

    /// The upstream serving prompt `public`, and the prompt's own name there.
    fn prompt_owner(&self, public: &str) -> Option<(Arc<Upstream>, String)> {
        let served = self.served.lock().unwrap();
        served.iter().enumerate().find_map(|(i, s)| Some((self.upstreams[i].clone(), s.prompts.get(public)?.clone())))
    }

    /// The upstream serving `uri`: the one listing it, else the first whose template matches it
    /// (or is it).
    fn uri_owner(&self, uri: &str) -> Option<Arc<Upstream>> {
        let served = self.served.lock().unwrap();
        let listed = served.iter().position(|s| s.resources.contains(uri) || s.templates.contains_key(uri));
        let matched = || served.iter().position(|s| s.templates.values().any(|t| t.matches(uri).is_some()));
        listed.or_else(matched).map(|i| self.upstreams[i].clone())
    }

    async fn complete(&self, params: CompleteParams, cx: RequestContext) -> Result<Completion, ToolError> {
        let mut forwarded = serde_json::to_value(&params).map_err(|e| ToolError::new(e.to_string()))?;
        let upstream = match &params.reference {
            CompletionRef::Prompt { name, .. } => {
                let (upstream, own) = self
                    .prompt_owner(name)
                    .ok_or_else(|| ToolError::invalid_params(format!("Unknown prompt: {name}")))?;
                forwarded["ref"]["name"] = Value::String(own);
                upstream
            }
            CompletionRef::Resource { uri } => self
                .uri_owner(uri)
                .ok_or_else(|| ToolError::invalid_params(format!("Unknown resource or template: {uri}")))?,
        };
        if let Value::Object(object) = &mut forwarded {
            object.remove("_meta");
        }
        let value = upstream
            .for_caller(&cx)
            .forward(&cx, None, move |client, _| {
                Box::pin(async move { client.request("completion/complete", forwarded).await })
            })
            .await?;
        let result: CompleteResult = serde_json::from_value(value)
            .map_err(|e| ToolError::new(format!("the upstream's completion is malformed: {e}")))?;
        Ok(result.completion)
    }

    /// A `tasks/*` request, sent to the connection running the task if the caller made it;
    /// `tasks/list` lists the caller's own tasks (none for an anonymous caller).
    async fn task_request(&self, method: &str, params: Value, cx: &RequestContext) -> Result<Value, ErrorObject> {
        let account = cx.account();
        if method == "tasks/list" {
            return self.list_tasks(&account, cx).await;
        }
        let id = params.get("taskId").and_then(Value::as_str).unwrap_or_default();
        let connection = self.tasks.lock().unwrap().of(id, &account).ok_or_else(|| unknown_task(id))?;
        connection.pass(method, params, cx).await
    }

    /// The caller's tasks (its newest [`MAX_LISTED_TASKS`]), each as its connection says it is
    /// now; one the upstream no longer knows is forgotten.
    async fn list_tasks(&self, account: &str, cx: &RequestContext) -> Result<Value, ErrorObject> {
        if account.starts_with(ANONYMOUS) {
            return Err(ErrorObject::invalid_request(
                "tasks are not listed for anonymous callers: the gateway cannot tell them apart (no \
                 authentication, no --account-header, no session); keep the id each call answered with and ask \
                 for that task",
            ));
        }
        let mine = self.tasks.lock().unwrap().mine(account, MAX_LISTED_TASKS);
        let asked = mine.into_iter().map(|(id, connection)| async move {
            let now = connection.pass("tasks/get", json!({"taskId": id}), cx).await;
            (id, now)
        });
        let mut tasks = Vec::new();
        for (id, now) in futures_util::future::join_all(asked).await {
            match now {
                Ok(Value::Object(mut task)) => {
                    task.remove("resultType");
                    task.remove("_meta");
                    tasks.push(Value::Object(task));
                }
                Ok(_) => {}
                Err(e) if e.code == mcp::types::ErrorCode::INVALID_PARAMS => self.tasks.lock().unwrap().forget(&id),
                Err(_) => {}
            }
        }
        Ok(json!({"tasks": tasks}))
    }

    /// Counts subscriptions per URI; the first subscribes upstream, the last unsubscribes.
    fn subscribe(&self, uri: &str, on: bool) {
        let send = {
            let mut counts = self.subscriptions.lock().unwrap();
            let count = counts.entry(uri.to_owned()).or_default();
            let before = *count;
            *count = if on { before + 1 } else { before.saturating_sub(1) };
            let after = *count;
            if after == 0 {
                counts.remove(uri);
            }
            (before == 0 && after == 1) || (before == 1 && after == 0)
        };
        if let Some(upstream) = self.uri_owner(uri).filter(|_| send) {
            upstream.watch_resource(uri, on);
        }
    }
}

async fn read(upstream: &Arc<Upstream>, uri: String, cx: &RequestContext) -> Result<Vec<ResourceContents>, ToolError> {
    let answer = rounds::forward(&upstream.for_caller(cx), cx, "resources/read", json!({"uri": uri})).await?;
    Ok(typed::<ReadResourceResult>(answer)?.contents)
}

/// An upstream's answer read as what it should be.
fn typed<T: serde::de::DeserializeOwned>(answer: Value) -> Result<T, ToolError> {
    serde_json::from_value(answer).map_err(|e| ToolError::new(format!("the upstream's answer is malformed: {e}")))
}

/// Everything an upstream offers, each list asked only when its capability is declared.
async fn list(upstream: &Upstream) -> Result<Listing, String> {
    let (_, client) = upstream.client()?;
    // A remembered era is spoken at once while the server confirms it: its capabilities are
    // known once it has.
    client.era().await.map_err(|e| format!("upstream {:?}: {e}", upstream.key()))?;
    let capabilities = client.description().capabilities;
    let failed = |what: &str, e: mcp::Error| format!("upstream {:?}: listing its {what}: {e}", upstream.key());
    let mut listing = Listing::default();
    if capabilities.tools.is_some() {
        listing.tools = client.list_tools().await.map_err(|e| failed("tools", e))?;
    }
    if capabilities.prompts.is_some() {
        listing.prompts = client.list_prompts().await.map_err(|e| failed("prompts", e))?;
    }
    if capabilities.resources.is_some() {
        listing.resources = client.list_resources().await.map_err(|e| failed("resources", e))?;
        listing.templates = client.list_resource_templates().await.map_err(|e| failed("resource templates", e))?;
    }
    Ok(listing)
}
