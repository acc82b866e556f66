//! The method table: one function per request method, each decoding its own params.
//!
//! Protocol failures are JSON-RPC errors; a tool's own failure (including arguments that do not
//! match its schema) is an `isError: true` result the model can act on.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;

use mcp_types::completion::{CompleteParams, CompleteResult};
use mcp_types::legacy::{SetLevelParams, SubscribeParams};
use mcp_types::lifecycle::DiscoverResult;
use mcp_types::mrtr::InputRequiredResult;
use mcp_types::prompts::{GetPromptParams, ListPromptsResult};
use mcp_types::resources::{ListResourceTemplatesResult, ListResourcesResult, ReadResourceParams, ReadResourceResult};
use mcp_types::result::{PaginatedParams, ResultType};
use mcp_types::subscriptions::{ListenParams, SubscriptionFilter};
use mcp_types::tools::{CallToolResult, ListToolsResult};
use mcp_types::version::ProtocolVersion;
use mcp_types::{ErrorObject, JsonObject};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::bounded;
use super::context::RequestContext;
use super::pagination;
use super::registry::Change;
use super::reply::Reply;
use super::state;
use super::Router;
use crate::engine::raw::RawParams;
use crate::error::{ToolError, ToolErrorKind};
use crate::server::task_calls::methods as task_methods;
use crate::server::task_calls::run;

/// The error for a URI that names no resource. A long URI is not echoed whole: an 8 MiB URI must
/// not come back twice in the error.
fn not_found(uri: &str, modern: bool) -> ErrorObject {
    let error = ToolError::not_found(format!("Resource not found: {}", shown(uri))).into_error_object(modern);
    if uri.len() <= 2048 {
        error.with_data(json!({"uri": uri}))
    } else {
        error
    }
}

/// A name or URI from the client as it appears in a message: whole when short, else its start.
fn shown(text: &str) -> Cow<'_, str> {
    const SHOWN: usize = 200;
    match text.char_indices().nth(SHOWN) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => Cow::Owned(format!("{}…", &text[..cut])),
    }
}

/// `inputResponses`, parsed within the budget.
fn bounded_object(text: &str, budget: usize) -> Result<JsonObject, ErrorObject> {
    match bounded::parse(text, budget) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(ErrorObject::invalid_params("invalid params: inputResponses must be an object")),
        Err(e) => Err(ErrorObject::invalid_params(format!("invalid params: inputResponses is {e}"))),
    }
}

/// A method's params as its type, within `budget` bytes of memory: a text too short to outgrow
/// it (see [`bounded::cannot_outgrow`]) is read straight into the type; a longer one is first
/// parsed under the budget, so a type holding free-form JSON (`_meta`) never takes more.
fn params<P: DeserializeOwned>(raw: &RawParams, budget: usize) -> Result<P, ErrorObject> {
    let text = raw.text().unwrap_or("{}");
    let invalid = |e: String| ErrorObject::invalid_params(format!("invalid params: {e}"));
    if bounded::cannot_outgrow(text, budget) {
        return serde_json::from_str(text).map_err(|e| invalid(e.to_string()));
    }
    let tree = bounded::parse(text, budget).map_err(|e| invalid(format!("the params are {e}")))?;
    serde_json::from_value(tree).map_err(|e| invalid(e.to_string()))
}

/// `tools/call` params, read in place: the arguments stay JSON text until the tool's schema and
/// type read them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallToolText<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default)]
    input_responses: Option<&'a RawValue>,
    #[serde(default)]
    request_state: Option<String>,
    /// 2025-11-25: run as a task (`{ttl?}`).
    #[serde(borrow, default)]
    task: Option<&'a RawValue>,
}

/// The requested lifetime of a 2025-11-25 `params.task`: `Some(None)` when a task is asked
/// without one.
fn task_param(raw: Option<&RawValue>) -> Result<Option<Option<std::time::Duration>>, ErrorObject> {
    let Some(raw) = raw else { return Ok(None) };
    if raw.get() == "null" {
        return Ok(None);
    }
    let meta: mcp_types::tasks::legacy::TaskMetadata = serde_json::from_str(raw.get())
        .map_err(|e| ErrorObject::invalid_params(format!("invalid params: task: {e}")))?;
    Ok(Some(meta.ttl.map(|ms| std::time::Duration::from_millis(ms.max(0) as u64))))
}

/// What an `input_required` state is bound to: the method, the name or URI, the arguments.
struct Call<'a> {
    method: &'static str,
    name: &'a str,
    arguments: CallArgs<'a>,
}

enum CallArgs<'a> {
    Text(&'a str),
    Value(Value),
}

impl Call<'_> {
    /// The request's fingerprint (the arguments parsed, so a client's re-encoding of the same
    /// arguments on its retry still matches).
    fn fingerprint(&self, budget: usize) -> Result<String, ErrorObject> {
        let parsed;
        let arguments = match &self.arguments {
            CallArgs::Value(v) => v,
            CallArgs::Text(text) => {
                parsed = bounded::parse(text, budget).map_err(ErrorObject::invalid_params)?;
                &parsed
            }
        };
        Ok(state::fingerprint(self.method, self.name, arguments))
    }
}

/// The params of `skills/get`.
#[derive(serde::Deserialize)]
struct UriParams {
    uri: String,
}

/// The params of `resources/directory/read`.
#[derive(serde::Deserialize)]
struct DirectoryParams {
    uri: String,
    cursor: Option<String>,
}

fn to_value<T: Serialize>(result: T) -> Result<Value, ErrorObject> {
    serde_json::to_value(result).map_err(|e| ErrorObject::internal(format!("could not serialize the result: {e}")))
}

impl Router {
    /// [`Router::handle`], with a panicking handler turned into an internal error, so the
    /// request is still answered and the connection lives on.
    pub(crate) async fn handle_guarded(
        &self,
        method: &str,
        raw: RawParams,
        cx: &RequestContext,
        modern: bool,
    ) -> Result<Reply, ErrorObject> {
        // Boxed: the caller's task then holds a pointer, not the whole state machine.
        AssertUnwindSafe(Box::pin(self.handle(method, raw, cx, modern)))
            .catch_unwind()
            .await
            .unwrap_or_else(|_| Err(ErrorObject::internal("internal error: the handler panicked")))
    }

    /// Runs one admitted request and returns its result, shaped for its era.
    pub(crate) async fn handle(
        &self,
        method: &str,
        raw: RawParams,
        cx: &RequestContext,
        modern: bool,
    ) -> Result<Reply, ErrorObject> {
        cx.served_by(self);
        if method == "tools/call" {
            // Its result stays typed until it is written (see `Reply`).
            let reply = self.call_tool(raw, cx, modern).await?;
            return Ok(super::era::finish(self, method, reply, modern));
        }
        let result = match method {
            "server/discover" => self.discover(),
            "ping" => Ok(json!({})),
            "tools/list" => self.list_tools(params(&raw, self.inner.config.value_budget)?, cx, modern),
            "resources/list" => self.list_resources(params(&raw, self.inner.config.value_budget)?),
            "resources/templates/list" => self.list_templates(params(&raw, self.inner.config.value_budget)?),
            "resources/read" => self.read_resource(params(&raw, self.inner.config.value_budget)?, cx, modern).await,
            "prompts/list" => self.list_prompts(params(&raw, self.inner.config.value_budget)?),
            "prompts/get" => self.get_prompt(params(&raw, self.inner.config.value_budget)?, cx, modern).await,
            "completion/complete" => self.complete(params(&raw, self.inner.config.value_budget)?, cx).await,
            "logging/setLevel" => self.set_level(params(&raw, self.inner.config.value_budget)?, cx),
            "resources/subscribe" => self.subscribe(params(&raw, self.inner.config.value_budget)?, cx, true),
            "resources/unsubscribe" => self.subscribe(params(&raw, self.inner.config.value_budget)?, cx, false),
            "subscriptions/listen" => {
                return self.listen(params(&raw, self.inner.config.value_budget)?, cx).await.map(Reply::from)
            }
            "skills/list" if self.serves_skills() => {
                let p: PaginatedParams = params(&raw, self.inner.config.value_budget)?;
                self.list_skills(p.cursor.as_deref())
            }
            "skills/get" if self.serves_skills() => {
                let p: UriParams = params(&raw, self.inner.config.value_budget)?;
                self.get_skill(&p.uri)
            }
            "resources/directory/read" if self.serves_skills() => {
                let p: DirectoryParams = params(&raw, self.inner.config.value_budget)?;
                self.read_directory(&p.uri, p.cursor.as_deref())
            }
            "tasks/get" | "tasks/update" | "tasks/cancel" | "tasks/result" | "tasks/list"
                if self.inner.task_forwarder.get().is_some() =>
            {
                let forwarder = self.inner.task_forwarder.get().cloned().expect("checked");
                task_methods::gate(method, cx, modern)?;
                let params: Value = params(&raw, self.inner.config.value_budget)?;
                forwarder(method.to_owned(), params, cx.clone()).await
            }
            "tasks/get" => {
                task_methods::get(self.tasks(), params(&raw, self.inner.config.value_budget)?, cx, modern).await
            }
            "tasks/update" => {
                task_methods::update(self.tasks(), params(&raw, self.inner.config.value_budget)?, cx, modern).await
            }
            "tasks/cancel" => {
                task_methods::cancel(self.tasks(), params(&raw, self.inner.config.value_budget)?, cx, modern).await
            }
            "tasks/result" => {
                task_methods::result(self.tasks(), params(&raw, self.inner.config.value_budget)?, cx).await
            }
            "tasks/list" => {
                let p: PaginatedParams = params(&raw, self.inner.config.value_budget)?;
                task_methods::list(self.tasks(), p.cursor, self.inner.config.page_size, cx).await
            }
            _ => Err(ErrorObject::method_not_found(method)),
        }?;
        Ok(super::era::finish(self, method, result.into(), modern))
    }

    fn discover(&self) -> Result<Value, ErrorObject> {
        to_value(DiscoverResult {
            result_type: None,
            supported_versions: ProtocolVersion::ALL.iter().map(|v| v.to_string()).collect(),
            capabilities: self.capabilities_for(ProtocolVersion::LATEST),
            instructions: self.inner.config.instructions.clone(),
            ttl_ms: None,
            cache_scope: None,
            meta: None,
        })
    }

    /// One page of a registry list, cloned out from under the lock.
    pub(crate) fn page_of<'a, T: Clone + 'a>(
        &self,
        items: impl Iterator<Item = &'a T>,
        cursor: Option<&str>,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        let all: Vec<&T> = items.collect();
        let (page, next_cursor) = pagination::page(&all, cursor, self.inner.config.page_size)?;
        Ok((page.into_iter().cloned().collect(), next_cursor))
    }

    /// `tools/list`, as this client sees it: `execution` only in 2025-11-25 sessions; job tools
    /// only for clients that follow no task form, which also do not see the `outputSchema` of
    /// tools that may answer them with a job id instead.
    fn list_tools(&self, p: PaginatedParams, cx: &RequestContext, modern: bool) -> Result<Value, ErrorObject> {
        let caps = cx.client_capabilities();
        let legacy_tasks = !modern && cx.protocol_version() == ProtocolVersion::V2025_11_25;
        let follows_tasks =
            (modern && caps.has_extension(mcp_types::tasks::EXTENSION_ID)) || (legacy_tasks && caps.tasks.is_some());
        let jobs_answer = !follows_tasks && self.task_settings().job_tools;
        let only_permitted = cx.caller().is_some() && self.scope_rules().filter_tools;
        let registry = self.inner.registry.read().unwrap();
        let shown: Vec<std::borrow::Cow<'_, mcp_types::tools::Tool>> = registry
            .tools
            .iter()
            .filter(|t| t.job.is_none() || !follows_tasks)
            .filter(|t| !only_permitted || self.may_call_tool(cx, &t.name))
            .map(|t| {
                let def = t.def();
                let strip_execution = def.execution.is_some() && !legacy_tasks;
                let strip_output = t.support.is_some() && jobs_answer && def.output_schema.is_some();
                if !strip_execution && !strip_output {
                    return std::borrow::Cow::Borrowed(def);
                }
                let mut def = def.clone();
                if strip_execution {
                    def.execution = None;
                }
                if strip_output {
                    def.output_schema = None;
                }
                std::borrow::Cow::Owned(def)
            })
            .collect();
        let (tools, next_cursor) = self.page_of(shown.iter().map(|t| t.as_ref()), p.cursor.as_deref())?;
        to_value(ListToolsResult { tools, next_cursor, ..Default::default() })
    }

    /// `tools/call`. The arguments are checked and handed to the tool as the JSON text they
    /// came in (a flat schema reads it in place); on a legacy session the request's buffer is
    /// dropped before the tool runs, as nothing needs it again.
    async fn call_tool(&self, raw: RawParams, cx: &RequestContext, modern: bool) -> Result<Reply, ErrorObject> {
        let budget = self.inner.config.value_budget;
        let text = raw.text().unwrap_or("{}");
        let p: CallToolText =
            serde_json::from_str(text).map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))?;
        let tool = self.inner.registry.read().unwrap().tools.get(&p.name);
        let Some(tool) = tool else {
            return Err(ErrorObject::invalid_params(format!("Unknown tool: {}", shown(&p.name))));
        };
        let arguments = match p.arguments.map(RawValue::get) {
            None | Some("null") => "{}",
            Some(a) if a.starts_with('{') => a,
            Some(_) => return Err(ErrorObject::invalid_params("invalid params: arguments must be an object")),
        };
        let legacy_task = task_param(p.task)?;
        if legacy_task.is_some() && tool.support.is_none() && cx.protocol_version() == ProtocolVersion::V2025_11_25 {
            return Err(ErrorObject::method_not_found("tools/call")
                .with_data(json!({"reason": format!("the tool {} does not run as a task", p.name)})));
        }
        let input = match tool.prepare(arguments, budget) {
            Ok(input) => input,
            Err(problems) => {
                let text = format!(
                    "Invalid arguments for tool {}: {}. Fix the arguments to match the tool's input schema and call it again.",
                    p.name,
                    problems.join("; ")
                );
                return Ok(Reply::tool(CallToolResult::error(text)));
            }
        };
        if let Some(job) = &tool.job {
            return crate::server::task_calls::jobs::call(self.tasks(), job, arguments, cx).await.map(Reply::from);
        }
        let call = Call { method: "tools/call", name: &p.name, arguments: CallArgs::Text(arguments) };
        let responses = p.input_responses.map(|r| bounded_object(r.get(), budget)).transpose()?;
        self.resume(cx, modern, &call, p.request_state.as_deref(), responses)?;
        if let Some(raw) = &tool.raw {
            return match raw(arguments, cx.clone()).await {
                Ok(answer) => Ok(answer.into()),
                Err(ToolError { kind: ToolErrorKind::Message(m) }) => Ok(Reply::tool(CallToolResult::error(m))),
                Err(e) => self.fail(e, cx, modern.then_some(&call)).map(Reply::from),
            };
        }
        if let Some(support) = tool.support {
            let mode = run::mode(self.task_settings(), &tool.name, support, cx, modern, legacy_task)?;
            return match run::start(self.tasks(), &tool, input, cx, mode).await? {
                run::Started::Task(answer) => Ok(answer.into()),
                run::Started::Done(outcome) => self.tool_outcome(outcome, cx, modern.then_some(&call)),
            };
        }
        let running = (tool.handler)(input, cx.clone());
        if !modern {
            drop(call);
            drop(p);
            drop(raw); // nothing reads the request again: a huge one is not held while the tool runs
            return self.tool_outcome(running.await, cx, None);
        }
        let outcome = running.await;
        self.tool_outcome(outcome, cx, Some(&call))
    }

    fn tool_outcome(
        &self,
        outcome: Result<CallToolResult, ToolError>,
        cx: &RequestContext,
        call: Option<&Call<'_>>,
    ) -> Result<Reply, ErrorObject> {
        match outcome {
            Ok(result) => Ok(Reply::tool(result)),
            Err(ToolError { kind: ToolErrorKind::Message(m) }) => Ok(Reply::tool(CallToolResult::error(m))),
            Err(e) => self.fail(e, cx, call).map(Reply::from),
        }
    }

    /// On a 2026-07-28 request, hands the handler the answers of earlier rounds (sealed in
    /// `requestState`) merged with this retry's. Legacy requests are never retried.
    fn resume(
        &self,
        cx: &RequestContext,
        modern: bool,
        call: &Call<'_>,
        request_state: Option<&str>,
        responses: Option<JsonObject>,
    ) -> Result<(), ErrorObject> {
        if !modern {
            return Ok(());
        }
        let mut answers = match request_state {
            Some(s) => {
                state::open(&self.inner.config.state_key, &call.fingerprint(self.inner.config.value_budget)?, s)?
            }
            None => JsonObject::new(),
        };
        answers.extend(responses.unwrap_or_default());
        cx.set_answers(answers, request_state.is_some());
        Ok(())
    }

    /// Turns a handler's error into `input_required` (modern) or a JSON-RPC error.
    fn fail(&self, error: ToolError, cx: &RequestContext, call: Option<&Call<'_>>) -> Result<Value, ErrorObject> {
        let modern = call.is_some();
        match (error.kind, call) {
            (ToolErrorKind::InputRequired { requests }, Some(call)) => {
                let config = &self.inner.config;
                let fp = call.fingerprint(config.value_budget)?;
                let state = state::seal(&config.state_key, fp, cx.answers(), config.state_ttl)?;
                to_value(InputRequiredResult {
                    result_type: ResultType::InputRequired,
                    input_requests: Some(requests),
                    request_state: Some(state),
                    meta: None,
                })
            }
            (kind, _) => Err(ToolError { kind }.into_error_object(modern)),
        }
    }

    fn list_resources(&self, p: PaginatedParams) -> Result<Value, ErrorObject> {
        let registry = self.inner.registry.read().unwrap();
        let (resources, next_cursor) = self.page_of(registry.resources.iter().map(|r| &r.def), p.cursor.as_deref())?;
        to_value(ListResourcesResult { resources, next_cursor, ..Default::default() })
    }

    fn list_templates(&self, p: PaginatedParams) -> Result<Value, ErrorObject> {
        let registry = self.inner.registry.read().unwrap();
        let (resource_templates, next_cursor) =
            self.page_of(registry.templates.iter().map(|t| &t.def), p.cursor.as_deref())?;
        to_value(ListResourceTemplatesResult { resource_templates, next_cursor, ..Default::default() })
    }

    async fn read_resource(
        &self,
        p: ReadResourceParams,
        cx: &RequestContext,
        modern: bool,
    ) -> Result<Value, ErrorObject> {
        let (handler, vars) = {
            let registry = self.inner.registry.read().unwrap();
            match registry.resources.get(&p.uri) {
                Some(entry) => (entry.handler.clone(), BTreeMap::new()),
                None => registry
                    .templates
                    .iter()
                    .find_map(|t| t.template.matches(&p.uri).map(|vars| (t.handler.clone(), vars)))
                    .ok_or_else(|| not_found(&p.uri, modern))?,
            }
        };
        let call = Call { method: "resources/read", name: &p.uri, arguments: CallArgs::Value(Value::Null) };
        self.resume(cx, modern, &call, p.request_state.as_deref(), p.input_responses)?;
        match handler(p.uri.clone(), vars, cx.clone()).await {
            Ok(contents) => to_value(ReadResourceResult { contents, ..Default::default() }),
            Err(e) => self.fail(e, cx, modern.then_some(&call)),
        }
    }

    fn list_prompts(&self, p: PaginatedParams) -> Result<Value, ErrorObject> {
        let registry = self.inner.registry.read().unwrap();
        let (prompts, next_cursor) = self.page_of(registry.prompts.iter().map(|p| &p.def), p.cursor.as_deref())?;
        to_value(ListPromptsResult { prompts, next_cursor, ..Default::default() })
    }

    async fn get_prompt(&self, p: GetPromptParams, cx: &RequestContext, modern: bool) -> Result<Value, ErrorObject> {
        let prompt = self.inner.registry.read().unwrap().prompts.get(&p.name);
        let Some(prompt) = prompt else {
            return Err(ErrorObject::invalid_params(format!("Unknown prompt: {}", shown(&p.name))));
        };
        let args = p.arguments.unwrap_or_default();
        let call = Call { method: "prompts/get", name: &p.name, arguments: CallArgs::Value(json!(args)) };
        self.resume(cx, modern, &call, p.request_state.as_deref(), p.input_responses)?;
        match (prompt.handler)(args, cx.clone()).await {
            Ok(result) => to_value(result),
            Err(e) => self.fail(e, cx, modern.then_some(&call)),
        }
    }

    async fn complete(&self, p: CompleteParams, cx: &RequestContext) -> Result<Value, ErrorObject> {
        self.check_completion_reference(&p)?;
        let forwarder = self.inner.completer.get().cloned();
        let completion = match forwarder {
            Some(completer) => completer(p, cx.clone()).await.map_err(|e| e.into_error_object(cx.is_modern()))?,
            None => self.inner.completers.read().unwrap().complete(&p),
        };
        to_value(CompleteResult { completion, ..Default::default() })
    }

    /// A completion must name a registered prompt, resource or template.
    fn check_completion_reference(&self, p: &CompleteParams) -> Result<(), ErrorObject> {
        use mcp_types::completion::CompletionRef;
        let registry = self.inner.registry.read().unwrap();
        match &p.reference {
            CompletionRef::Prompt { name, .. } if !registry.prompts.contains(name) => {
                Err(ErrorObject::invalid_params(format!("Unknown prompt: {name}")))
            }
            CompletionRef::Resource { uri }
                if !registry.templates.contains(uri) && !registry.resources.contains(uri) =>
            {
                Err(ErrorObject::invalid_params(format!("Unknown resource or template: {uri}")))
            }
            _ => Ok(()),
        }
    }

    fn set_level(&self, p: SetLevelParams, cx: &RequestContext) -> Result<Value, ErrorObject> {
        if let Some(session) = cx.session() {
            session.set_log_level(p.level);
        }
        Ok(json!({}))
    }

    fn subscribe(&self, p: SubscribeParams, cx: &RequestContext, on: bool) -> Result<Value, ErrorObject> {
        let Some(session) = cx.session() else {
            return Ok(json!({}));
        };
        if !on {
            session.unsubscribe(&p.uri);
        } else if !session.subscribe(p.uri.clone(), self.inner.config.max_subscriptions) {
            return Err(ErrorObject::invalid_params("too many resource subscriptions on this session"));
        }
        if let Some(hook) = self.inner.on_subscribe.get() {
            hook(&p.uri, on);
        }
        Ok(json!({}))
    }

    /// `subscriptions/listen`: acknowledge, then forward matching changes until cancelled.
    async fn listen(&self, p: ListenParams, cx: &RequestContext) -> Result<Value, ErrorObject> {
        if p.notifications.task_ids.is_some() {
            let data = json!({"requiredCapabilities": {"extensions": {mcp_types::tasks::EXTENSION_ID: {}}}});
            if !cx.client_capabilities().has_extension(mcp_types::tasks::EXTENSION_ID) {
                return Err(ErrorObject::new(
                    mcp_types::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    "taskIds needs the tasks extension in clientCapabilities",
                )
                .with_data(data));
            }
        }
        let honoured = p.notifications;
        let mut changes = self.lists().changes();
        let task_ids = honoured.task_ids.clone().unwrap_or_default();
        let mut task_changes = (!task_ids.is_empty()).then(|| self.tasks().changes());
        let account = cx.account();
        let mut meta = JsonObject::new();
        meta.insert(mcp_types::meta::SUBSCRIPTION_ID.into(), to_value(cx.request_id())?);
        let ack = json!({"notifications": honoured, "_meta": meta});
        cx.notify("notifications/subscriptions/acknowledged", &ack).await;
        loop {
            let change = tokio::select! {
                change = changes.recv() => change,
                Some(Ok(task)) = async { Some(task_changes.as_mut()?.recv().await) } => {
                    if let Some(mut params) = task_methods::notification(&task, &task_ids, &account) {
                        params["_meta"] = Value::Object(meta.clone());
                        cx.notify("notifications/tasks", &params).await;
                    }
                    continue;
                }
                _ = cx.cancelled() => return Err(ErrorObject::internal("cancelled")),
            };
            match change {
                Ok(change) if wants(&honoured, &change) => {
                    cx.notify(change.method(), &change.params(Some(meta.clone()))).await;
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    for change in [Change::Tools, Change::Prompts, Change::Resources] {
                        if wants(&honoured, &change) {
                            cx.notify(change.method(), &change.params(Some(meta.clone()))).await;
                        }
                    }
                }
                Err(broadcast::error::RecvError::Closed) => {
                    return to_value(json!({"resultType": "complete", "_meta": meta}));
                }
            }
        }
    }
}

/// Whether a listener asked for this change.
pub(crate) fn wants(filter: &SubscriptionFilter, change: &Change) -> bool {
    match change {
        Change::Tools => filter.tools_list_changed == Some(true),
        Change::Prompts => filter.prompts_list_changed == Some(true),
        Change::Resources => filter.resources_list_changed == Some(true),
        Change::ResourceUpdated(uri) => filter.resource_subscriptions.as_ref().is_some_and(|s| s.contains(uri)),
    }
}
