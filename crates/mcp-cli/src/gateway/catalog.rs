//! What the gateway serves: every upstream's tools, prompts, resources and templates,
//! registered in one router under their public names, and kept in step with the upstreams
//! (listed again when one connects or says its lists changed).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use mcp::server::middleware::AuditLog;
use mcp::server::uri_template::UriTemplate;
use mcp::server::{RequestContext, ResourceRequest, ToolDef, ToolError};
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

/// Why an upstream could not be brought in step.
#[derive(Debug)]
pub enum Refresh {
    /// It could not be listed (not connected, or it failed to answer): tried again when it
    /// connects or says its lists changed.
    Unlisted(String),
    /// Its names clash with another upstream's (at start: the gateway does not start).
    Clash(String),
}

impl std::fmt::Display for Refresh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refresh::Unlisted(why) | Refresh::Clash(why) => f.write_str(why),
        }
    }
}

/// What one upstream has in the router: public name → the upstream's own name, and URIs.
#[derive(Debug, Default, Clone)]
struct Served {
    tools: BTreeMap<String, String>,
    prompts: BTreeMap<String, String>,
    resources: BTreeSet<String>,
    templates: BTreeMap<String, Option<UriTemplateKey>>,
    /// Each tool's definition as the upstream listed it, hashed (its own name → SHA-256).
    hashes: BTreeMap<String, String>,
}

/// A parsed template, for finding which upstream a URI belongs to.
#[derive(Debug, Clone)]
struct UriTemplateKey(Arc<UriTemplate>);

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
    upstreams: Vec<Arc<Upstream>>,
    served: Mutex<Vec<Served>>,
    /// How many downstream sessions are subscribed to each URI.
    subscriptions: Mutex<HashMap<String, usize>>,
    /// Which upstream runs each task a call created.
    tasks: Mutex<TaskOwners>,
    /// Where each listing of an upstream's tools is recorded, with their hashes.
    audit: Option<AuditLog>,
}

/// Task id → upstream, the oldest forgotten past a bound.
#[derive(Default)]
struct TaskOwners {
    owners: HashMap<String, usize>,
    order: std::collections::VecDeque<String>,
}

impl TaskOwners {
    const MAX: usize = 100_000;

    fn insert(&mut self, id: String, upstream: usize) {
        if self.owners.insert(id.clone(), upstream).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > Self::MAX {
            if let Some(old) = self.order.pop_front() {
                self.owners.remove(&old);
            }
        }
    }
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

impl Catalog {
    /// A catalog serving `upstreams` through `router` (completions and subscriptions included).
    pub fn new(router: Router, upstreams: Vec<Arc<Upstream>>, audit: Option<AuditLog>) -> Arc<Catalog> {
        let served = Mutex::new(vec![Served::default(); upstreams.len()]);
        let catalog = Arc::new(Catalog {
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

    /// Lists upstream `index` again and brings the router in step. With `strict`, a name that
    /// another upstream serves already is an error (at start); otherwise it is left out, logged.
    pub async fn refresh(self: &Arc<Self>, index: usize, strict: bool) -> Result<(), Refresh> {
        let upstream = self.upstreams[index].clone();
        let listing = list(&upstream).await.map_err(Refresh::Unlisted)?;
        let mut served = self.served.lock().unwrap();
        let others = |field: fn(&Served) -> Vec<String>| -> BTreeSet<String> {
            served.iter().enumerate().filter(|(i, _)| *i != index).flat_map(|(_, s)| field(s)).collect()
        };
        let taken_tools = others(|s| s.tools.keys().cloned().collect());
        let taken_prompts = others(|s| s.prompts.keys().cloned().collect());
        let taken_uris = others(|s| s.resources.iter().chain(s.templates.keys()).cloned().collect());
        let mut next = Served {
            hashes: listing.tools.iter().map(|t| (t.name.clone(), tool_hash(t))).collect(),
            ..Served::default()
        };
        self.audit_listing(&upstream, &served[index].hashes, &next.hashes);
        let mut clashes = Vec::new();
        for tool in listing.tools.into_iter().filter(|t| upstream.config.serves_tool(&t.name)) {
            let public = public_name(&upstream.config.prefix, &tool.name);
            if taken_tools.contains(&public) || next.tools.contains_key(&public) || !is_valid(&public) {
                clashes.push(format!("tool {public:?}"));
                continue;
            }
            next.tools.insert(public.clone(), tool.name.clone());
            self.add_tool(&upstream, public, tool);
        }
        for prompt in listing.prompts {
            let public = public_name(&upstream.config.prefix, &prompt.name);
            if taken_prompts.contains(&public) || next.prompts.contains_key(&public) {
                clashes.push(format!("prompt {public:?}"));
                continue;
            }
            next.prompts.insert(public.clone(), prompt.name.clone());
            self.add_prompt(&upstream, public, prompt);
        }
        for resource in listing.resources {
            if taken_uris.contains(&resource.uri) || !next.resources.insert(resource.uri.clone()) {
                clashes.push(format!("resource {:?}", resource.uri));
                continue;
            }
            self.add_resource(&upstream, resource);
        }
        for template in listing.templates {
            let key = template.uri_template.clone();
            if taken_uris.contains(&key) || next.templates.contains_key(&key) {
                clashes.push(format!("resource template {key:?}"));
                continue;
            }
            match self.add_template(&upstream, template) {
                Ok(parsed) => {
                    next.templates.insert(key, Some(UriTemplateKey(parsed)));
                }
                Err(why) => tracing::warn!("upstream {:?}: resource template {key:?} left out: {why}", upstream.key()),
            }
        }
        let previous = std::mem::replace(&mut served[index], next);
        let current = &served[index];
        for gone in previous.tools.keys().filter(|k| !current.tools.contains_key(*k)) {
            self.router.remove_tool(gone);
        }
        for gone in previous.prompts.keys().filter(|k| !current.prompts.contains_key(*k)) {
            self.router.remove_prompt(gone);
        }
        for gone in previous.resources.iter().filter(|k| !current.resources.contains(*k)) {
            self.router.remove_resource(gone);
        }
        for gone in previous.templates.keys().filter(|k| !current.templates.contains_key(*k)) {
            self.router.remove_resource_template(gone);
        }
        drop(served);
        if clashes.is_empty() {
            return Ok(());
        }
        let message = format!(
            "upstream {:?}: {} already served by another upstream (give it a \"prefix\"): {}",
            upstream.key(),
            if clashes.len() == 1 { "this name is" } else { "these names are" },
            clashes.join(", ")
        );
        if strict {
            return Err(Refresh::Clash(message));
        }
        tracing::warn!("{message}; left out");
        Ok(())
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
                    let answer = rounds::forward(&upstream.for_caller(&cx), &cx, "tools/call", params).await?;
                    if let (Some(catalog), Some(id)) = (catalog.upgrade(), created_task(&answer)) {
                        catalog.tasks.lock().unwrap().insert(id, upstream.index);
                    }
                    Ok(answer)
                })
            }),
        );
    }

    fn add_prompt(&self, upstream: &Arc<Upstream>, public: String, mut prompt: Prompt) {
        let own_name = std::mem::replace(&mut prompt.name, public);
        let upstream = upstream.clone();
        self.router.add_prompt(prompt, move |args: BTreeMap<String, String>, cx: RequestContext| {
            let upstream = upstream.clone();
            let params = json!({"name": own_name, "arguments": args});
            async move { typed::<GetPromptResult>(rounds::forward(&upstream, &cx, "prompts/get", params).await?) }
        });
    }

    fn add_resource(&self, upstream: &Arc<Upstream>, resource: Resource) {
        let upstream = upstream.clone();
        self.router.add_resource(resource, move |request: ResourceRequest, cx: RequestContext| {
            let upstream = upstream.clone();
            async move { read(&upstream, request.uri, &cx).await }
        });
    }

    fn add_template(&self, upstream: &Arc<Upstream>, template: ResourceTemplate) -> Result<Arc<UriTemplate>, String> {
        let parsed = Arc::new(UriTemplate::parse(&template.uri_template)?);
        let upstream = upstream.clone();
        self.router.add_resource_template(
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

    /// The upstream serving `uri`: the one listing it, else the one whose template matches it
    /// (or is it).
    fn uri_owner(&self, uri: &str) -> Option<Arc<Upstream>> {
        let served = self.served.lock().unwrap();
        let listed = served.iter().position(|s| s.resources.contains(uri) || s.templates.contains_key(uri));
        let matched = || {
            served.iter().position(|s| s.templates.values().flatten().any(|UriTemplateKey(t)| t.matches(uri).is_some()))
        };
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

    /// A `tasks/*` request, sent to the upstream running the task (`tasks/list`: to each).
    async fn task_request(&self, method: &str, params: Value, cx: &RequestContext) -> Result<Value, ErrorObject> {
        if method == "tasks/list" {
            let mut tasks = Vec::new();
            for upstream in &self.upstreams {
                if let Ok(page) = upstream.pass(method, params.clone(), cx).await {
                    tasks.extend(page.get("tasks").and_then(Value::as_array).cloned().unwrap_or_default());
                }
            }
            return Ok(json!({"tasks": tasks}));
        }
        let id = params.get("taskId").and_then(Value::as_str).unwrap_or_default();
        let owner = self.tasks.lock().unwrap().owners.get(id).copied();
        let owner = match (owner, self.upstreams.len()) {
            (Some(i), _) => i,
            (None, 1) => 0,
            (None, _) => return Err(ErrorObject::invalid_params(format!("Unknown task: {id}"))),
        };
        self.upstreams[owner].pass(method, params, cx).await
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
