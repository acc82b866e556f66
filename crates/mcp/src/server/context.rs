//! [`RequestContext`]: what a handler knows about its request and can do through it, the same on
//! every era and transport.
//!
//! Progress and log messages leave through the request's outbox. Asking the client for input
//! (elicitation, sampling, roots) is written once: on a legacy session it sends a request to the
//! client and waits; on a 2026-07-28 request it ends the call with `input_required`, and the
//! handler runs again when the client retries with the answers (so code before the question runs
//! once per round; keep it free of side effects, or idempotent).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use mcp_types::elicitation::{ElicitAction, ElicitParams, ElicitResult, RequestedSchema};
use mcp_types::lifecycle::{ClientCapabilities, Implementation};
use mcp_types::logging::{LoggingLevel, LoggingMessageParams};
use mcp_types::meta::ProgressToken;
use mcp_types::mrtr::InputRequest;
use mcp_types::roots::ListRootsResult;
use mcp_types::sampling::{CreateMessageParams, CreateMessageResult};
use mcp_types::utilities::ProgressParams;
use mcp_types::{ErrorCode, ErrorObject, JsonObject, RequestId};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::engine::outbox::Outbox;
use crate::engine::session::Session;
use crate::error::ToolError;
use crate::server::tasks::manager::LiveTask;
use crate::server::tasks::record::TaskForm;
use crate::server::tasks::{Account, AnonymousPeer, ANONYMOUS};
use crate::server::Router;

/// A legacy session, named without being kept alive (see
/// [`ProxyContext::session_ref`](crate::proxy::ProxyContext::session_ref)).
#[derive(Clone, Debug)]
pub struct SessionRef(std::sync::Weak<Session>);

impl SessionRef {
    /// Whether the session is still open.
    pub fn is_alive(&self) -> bool {
        self.0.strong_count() > 0
    }

    /// Whether both name the same session.
    pub fn same(&self, other: &SessionRef) -> bool {
        self.0.ptr_eq(&other.0)
    }

    /// A number telling live sessions apart (reused after a session ends: check
    /// [`same`](Self::same) too).
    pub fn key(&self) -> usize {
        self.0.as_ptr() as usize
    }
}

/// Adds `_meta["io.modelcontextprotocol/related-task"]` to a message's params (2025-11-25).
fn tag_related(params: &mut Value, task_id: &str) {
    if !params.is_object() {
        *params = json!({});
    }
    let meta = params.as_object_mut().map(|p| p.entry("_meta").or_insert_with(|| json!({})));
    if let Some(Value::Object(meta)) = meta {
        meta.insert(crate::server::tasks::wire::RELATED_TASK.into(), json!({"taskId": task_id}));
    }
}

/// The context of one request. Cheap to clone.
#[derive(Clone, Debug)]
pub struct RequestContext {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The router serving the request, set when it starts to (its state, its lists).
    router: OnceLock<Router>,
    id: RequestId,
    origin: Origin,
    progress_token: Option<ProgressToken>,
    outbox: Outbox,
    cancel: CancellationToken,
    last_progress: Mutex<Option<f64>>,
    input: InputState,
    extensions: Mutex<http::Extensions>,
    /// A call that may become a task: what ties it to its task once it is one.
    task: Option<Arc<TaskSlot>>,
    /// The trace context the request carried, and how it came.
    #[cfg(feature = "otel")]
    traced: Traced,
}

/// What telemetry knows of a request: the trace context in its `_meta`, and its transport. Both
/// are set as the context is made, before it is shared: plain fields, not cells set once (a
/// `OnceLock`'s `set` cost a request more than reading them does).
#[cfg(feature = "otel")]
#[derive(Debug, Default, Clone)]
struct Traced {
    carrier: Option<crate::telemetry::Carrier>,
    transport: Option<crate::telemetry::Transport>,
}

/// Ties the work of a call that may become a task to that task.
pub(crate) struct TaskSlot {
    state: tokio::sync::watch::Sender<SlotState>,
    /// The handler asked to become a task now.
    wanted: tokio::sync::Notify,
}

/// Whether the call became a task.
#[derive(Clone)]
enum SlotState {
    /// Not decided yet.
    Open,
    /// It is this task.
    Task(Arc<LiveTask>),
    /// It will not be one (the client follows no task form, or it ended first).
    Never,
}

impl Default for TaskSlot {
    fn default() -> Self {
        TaskSlot { state: tokio::sync::watch::Sender::new(SlotState::Open), wanted: tokio::sync::Notify::new() }
    }
}

impl std::fmt::Debug for TaskSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskSlot")
    }
}

impl TaskSlot {
    /// The task, once the call is one.
    pub fn live(&self) -> Option<Arc<LiveTask>> {
        match &*self.state.borrow() {
            SlotState::Task(task) => Some(task.clone()),
            _ => None,
        }
    }

    /// The call is now this task: progress and questions go to it from here on.
    pub fn attach(&self, task: Arc<LiveTask>) {
        self.state.send_replace(SlotState::Task(task));
    }

    /// The call will not become a task.
    pub fn close(&self) {
        self.state.send_if_modified(|state| match state {
            SlotState::Open => {
                *state = SlotState::Never;
                true
            }
            _ => false,
        });
    }

    /// Resolves when the handler asks to become a task.
    pub async fn wanted(&self) {
        self.wanted.notified().await
    }

    /// Asks to become a task and waits until that is decided.
    async fn request(&self) {
        self.wanted.notify_one();
        let mut state = self.state.subscribe();
        let _ = state.wait_for(|s| !matches!(s, SlotState::Open)).await;
    }
}

/// Answers to input requests known so far (2026-07-28), and the count of questions asked.
#[derive(Debug, Default)]
struct InputState {
    answers: Mutex<JsonObject>,
    asked: AtomicUsize,
    had_state: std::sync::atomic::AtomicBool,
}

/// Where a request's version, capabilities and client identity come from.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one per request, inside an Arc: boxing would add an allocation
pub(crate) enum Origin {
    /// A legacy session: what `initialize` established.
    Session(Arc<Session>),
    /// A 2026-07-28 request: its own `_meta`.
    Request {
        protocol_version: String,
        client_capabilities: ClientCapabilities,
        client_info: Option<Implementation>,
        log_level: Option<LoggingLevel>,
    },
}

/// How a request's context is built by the engine.
pub(crate) struct ContextParts {
    pub id: RequestId,
    pub origin: Origin,
    pub progress_token: Option<ProgressToken>,
    pub outbox: Outbox,
    pub cancel: CancellationToken,
}

impl RequestContext {
    pub(crate) fn new(parts: ContextParts) -> Self {
        RequestContext {
            inner: Arc::new(Inner {
                router: OnceLock::new(),
                id: parts.id,
                origin: parts.origin,
                progress_token: parts.progress_token,
                outbox: parts.outbox,
                cancel: parts.cancel,
                last_progress: Mutex::new(None),
                input: InputState::default(),
                extensions: Mutex::new(http::Extensions::new()),
                task: None,
                #[cfg(feature = "otel")]
                traced: Traced::default(),
            }),
        }
    }

    /// What telemetry knows of the request, while the context is not shared yet (it was just
    /// made: every caller sets it there). A context already cloned keeps what it had; that would
    /// be a mistake of this crate, which debug builds stop at.
    #[cfg(feature = "otel")]
    fn traced_mut(&mut self) -> Option<&mut Traced> {
        let traced = Arc::get_mut(&mut self.inner).map(|inner| &mut inner.traced);
        debug_assert!(traced.is_some(), "a request's trace context is set before its context is shared");
        traced
    }

    /// The trace context the request's `_meta` carried (read by the era adapter).
    #[cfg(feature = "otel")]
    pub(crate) fn set_carrier(&mut self, carrier: crate::telemetry::Carrier) {
        if let Some(traced) = self.traced_mut() {
            traced.carrier = Some(carrier);
        }
    }

    /// [`RequestContext::set_carrier`]'s.
    #[cfg(feature = "otel")]
    pub(crate) fn carrier(&self) -> Option<&crate::telemetry::Carrier> {
        self.inner.traced.carrier.as_ref()
    }

    /// How the request came (set by its transport; stdio when unset).
    #[cfg(feature = "otel")]
    pub(crate) fn set_transport(&mut self, transport: crate::telemetry::Transport) {
        if let Some(traced) = self.traced_mut() {
            traced.transport = Some(transport);
        }
    }

    /// [`RequestContext::set_transport`]'s.
    #[cfg(feature = "otel")]
    pub(crate) fn transport(&self) -> Option<&crate::telemetry::Transport> {
        self.inner.traced.transport.as_ref()
    }

    /// The context the work of a call that may become a task runs with: the same request, its
    /// own cancellation (after it becomes a task, only `tasks/cancel` stops it), and a slot that
    /// ties it to its task.
    pub(crate) fn for_task(&self, cancel: CancellationToken) -> (RequestContext, Arc<TaskSlot>) {
        let slot = Arc::new(TaskSlot::default());
        let inner = &self.inner;
        let input = InputState {
            answers: Mutex::new(inner.input.answers.lock().unwrap().clone()),
            asked: AtomicUsize::new(inner.input.asked.load(Ordering::Relaxed)),
            had_state: std::sync::atomic::AtomicBool::new(inner.input.had_state.load(Ordering::Relaxed)),
        };
        let cx = RequestContext {
            inner: Arc::new(Inner {
                router: inner.router.clone(),
                id: inner.id.clone(),
                origin: inner.origin.clone(),
                progress_token: inner.progress_token.clone(),
                outbox: inner.outbox.clone(),
                cancel,
                last_progress: Mutex::new(None),
                input,
                extensions: Mutex::new(inner.extensions.lock().unwrap().clone()),
                task: Some(slot.clone()),
                #[cfg(feature = "otel")]
                traced: inner.traced.clone(),
            }),
        };
        (cx, slot)
    }

    /// Ties the request to the router that serves it (the first router to do so keeps it).
    pub(crate) fn served_by(&self, router: &Router) {
        if self.inner.router.get().is_none() {
            let _ = self.inner.router.set(router.clone());
        }
    }

    /// The value of type `S` given to [`Router::with_state`] (the same one a handler taking
    /// [`State<S>`](crate::server::State) gets). A router without one answers the request with an
    /// internal error naming the type: a mistake of the server's author, not one the model can
    /// fix.
    pub fn state<S: Send + Sync + 'static>(&self) -> Result<&S, ToolError> {
        self.inner.router.get().and_then(|router| router.inner.config.states.get::<S>()).ok_or_else(|| {
            ToolError::protocol(ErrorObject::internal(format!(
                "the server has no state of type {}: its author must give it with Router::with_state",
                std::any::type_name::<S>()
            )))
        })
    }

    /// The router serving the request (read-only: its identity, settings and state; what it
    /// lists changes through [`RequestContext::lists`]). `None` only for a context no router has
    /// served yet.
    pub fn router(&self) -> Option<&Router> {
        self.inner.router.get()
    }

    /// The task this call became, if it did.
    pub(crate) fn task(&self) -> Option<Arc<LiveTask>> {
        self.inner.task.as_ref().and_then(|slot| slot.live())
    }

    /// The id of the task this call runs as, once it is one (a tool that may run long can name
    /// what it produces after it).
    pub fn task_id(&self) -> Option<String> {
        self.task().map(|t| t.id.clone())
    }

    /// For a tool that may run long: asks the engine to turn this call into a task now (when the
    /// client can take one, or a job otherwise) instead of after the grace period, and returns
    /// once that is done: the call has been answered with the task, and what the tool does next
    /// (asking the user, say) belongs to the task. When the client takes no task, returns at once
    /// and the call goes on as a plain one. No effect on other tools.
    pub async fn become_task(&self) {
        if let Some(slot) = &self.inner.task {
            slot.request().await;
        }
    }

    /// The JSON-RPC id of the request.
    pub fn request_id(&self) -> &RequestId {
        &self.inner.id
    }

    /// The protocol version of the request (negotiated, or from its `_meta`).
    pub fn protocol_version(&self) -> &str {
        match &self.inner.origin {
            Origin::Session(s) => &s.version,
            Origin::Request { protocol_version, .. } => protocol_version,
        }
    }

    /// Whether the request is a 2026-07-28 (stateless) one.
    pub(crate) fn is_modern(&self) -> bool {
        self.session().is_none()
    }

    /// What the client can do, as declared for this request.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        match &self.inner.origin {
            Origin::Session(s) => &s.client_capabilities,
            Origin::Request { client_capabilities, .. } => client_capabilities,
        }
    }

    /// Who the client says it is (self-reported: not for security decisions).
    pub fn client_info(&self) -> Option<&Implementation> {
        match &self.inner.origin {
            Origin::Session(s) => Some(&s.client_info),
            Origin::Request { client_info, .. } => client_info.as_ref(),
        }
    }

    /// Resolves when the client cancels the request (or the connection ends).
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await
    }

    /// The legacy session the request came on, as a handle that does not keep it alive: a
    /// gateway keeps a child process per session and ends it when the session ends. `None` for
    /// a 2026-07-28 request.
    pub(crate) fn session_ref(&self) -> Option<SessionRef> {
        self.session().map(|s| SessionRef(Arc::downgrade(s)))
    }

    /// The legacy session the request belongs to, if any.
    pub(crate) fn session(&self) -> Option<&Arc<Session>> {
        match &self.inner.origin {
            Origin::Session(s) => Some(s),
            Origin::Request { .. } => None,
        }
    }

    /// Whether the client cancelled the request.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// A value the transport attached to the request (on HTTP: the authenticated caller, the
    /// request's headers).
    pub fn extension<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.inner.extensions.lock().unwrap().get::<T>().cloned()
    }

    /// The account this request counts against, as the task cap and task visibility see it:
    /// the authenticated caller, an `--account-header` value or a legacy HTTP session; an
    /// anonymous 2026-07-28 HTTP request's source address (`anonymous:` and the IP); `local`
    /// on stdio. A server binds what a caller made (a report, a file) to it.
    pub fn account(&self) -> String {
        if let Some(account) = self.extension::<Account>() {
            return account.0;
        }
        if let Some(caller) = self.caller() {
            return caller.account();
        }
        match self.extension::<AnonymousPeer>() {
            Some(AnonymousPeer(ip)) => format!("{ANONYMOUS}{ip}"),
            None => "local".to_owned(),
        }
    }

    /// The authenticated caller: the subject, client, scopes and claims of its access token
    /// (HTTP behind a [`ResourceServer`](crate::auth::ResourceServer); `None` on stdio).
    pub fn caller(&self) -> Option<crate::server::identity::Identity> {
        self.extension::<crate::server::identity::Identity>()
    }

    pub(crate) fn insert_extension<T: Clone + Send + Sync + 'static>(&self, value: T) {
        self.inner.extensions.lock().unwrap().insert(value);
    }

    /// Reports progress, when the client asked for it with a progress token. Values that do not
    /// increase are dropped, as the spec requires progress to grow.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(task) = self.task() {
            // A task's progress is its status message and wait hint (and, for 2025-11-25
            // tasks, progress notifications to the session, which the token stays valid for).
            task.progress(progress, total, message).await;
            if task.form != TaskForm::Legacy {
                return;
            }
        }
        let Some(token) = self.inner.progress_token.clone() else {
            return;
        };
        {
            let mut last = self.inner.last_progress.lock().unwrap();
            if last.is_some_and(|l| progress <= l) || self.is_cancelled() {
                return;
            }
            *last = Some(progress);
        }
        let params =
            ProgressParams { progress_token: token, progress, total, message: message.map(Into::into), meta: None };
        self.notify("notifications/progress", &params).await;
    }

    /// Sends a log message to the client, when its level is at least the one the client asked for.
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: impl Serialize) {
        if self.task().is_some_and(|t| t.form != TaskForm::Legacy) {
            return; // the tasks extension and job tools carry no log messages
        }
        let threshold = match &self.inner.origin {
            Origin::Session(session) => session.log_level(),
            Origin::Request { log_level, .. } => *log_level,
        };
        if threshold.is_none_or(|t| level < t) || self.is_cancelled() {
            return;
        }
        let params = LoggingMessageParams {
            level,
            logger: logger.map(Into::into),
            data: serde_json::to_value(data).unwrap_or(Value::Null),
            meta: None,
        };
        self.notify("notifications/message", &params).await;
    }

    /// On HTTP, closes this request's SSE response stream now (2025-11-25 SSE polling): the
    /// client reconnects with `Last-Event-ID` and receives the rest, the result included. Has no
    /// effect on stdio or on a JSON response.
    pub async fn close_stream(&self) {
        self.inner.outbox.send_raw(Vec::new()).await;
    }

    /// Sends a notification related to this request.
    pub async fn notify<P: Serialize>(&self, method: &str, params: &P) {
        if self.is_cancelled() {
            return; // nothing more may be sent for a cancelled request
        }
        let mut message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        match self.task() {
            None => {
                self.inner.outbox.send(&message).await;
            }
            // After its response, a 2025-11-25 task speaks on the session, tagged with its id.
            Some(task) => {
                if let (Some(session), TaskForm::Legacy) = (self.session(), task.form) {
                    tag_related(&mut message["params"], &task.id);
                    session.outbox.send(&message).await;
                }
            }
        }
    }

    /// Asks the user to fill a form described by `T`'s schema (form-mode elicitation).
    ///
    /// `Ok` carries what the user did; `content` is `Some` only when they accepted.
    pub async fn elicit<T: DeserializeOwned + JsonSchema>(&self, message: &str) -> Result<Elicitation<T>, ToolError> {
        let schema = super::schema::schema_for::<T>();
        let requested: RequestedSchema = serde_json::from_value(Value::Object(schema))
            .map_err(|e| ToolError::new(format!("the elicitation type is not a flat object: {e}")))?;
        let result = self.elicit_raw(ElicitParams::form(message, requested)).await?;
        Elicitation::from_result(result)
    }

    /// Sends any elicitation request, form or URL mode.
    pub async fn elicit_raw(&self, params: ElicitParams) -> Result<ElicitResult, ToolError> {
        self.ask("elicitation/create", "elicitation", serde_json::to_value(params)?).await
    }

    /// Asks the client's model for a completion (sampling).
    pub async fn sample(&self, params: CreateMessageParams) -> Result<CreateMessageResult, ToolError> {
        self.ask("sampling/createMessage", "sampling", serde_json::to_value(params)?).await
    }

    /// Asks the client for its roots.
    pub async fn roots(&self) -> Result<ListRootsResult, ToolError> {
        self.ask("roots/list", "roots", json!({})).await
    }

    /// The client's roots, listed once per legacy session and again after the client sends
    /// `notifications/roots/list_changed`. A 2026-07-28 request has no session: its roots come
    /// with the request (asked with `input_required` as [`roots`](Self::roots) does).
    pub async fn roots_cached(&self) -> Result<Arc<ListRootsResult>, ToolError> {
        let Some(session) = self.session().cloned() else {
            return Ok(Arc::new(self.roots().await?));
        };
        match session.cached_roots() {
            Ok(roots) => Ok(roots),
            Err(generation) => {
                let roots = Arc::new(self.roots().await?);
                session.keep_roots(generation, roots.clone());
                Ok(roots)
            }
        }
    }

    /// The client must have declared the capability a question needs (-32021 otherwise).
    fn check_capability(&self, method: &str, params: &Value) -> Result<(), ToolError> {
        let caps = self.client_capabilities();
        match method {
            "elicitation/create" => {
                let url = params.get("mode").and_then(Value::as_str) == Some("url");
                let supported = if url { caps.elicitation_url() } else { caps.elicitation_form() };
                let mode = if url { json!({"url": {}}) } else { json!({}) };
                if !supported {
                    return Err(self.missing_capability(json!({"elicitation": mode}), "elicitation"));
                }
            }
            "sampling/createMessage" => {
                if caps.sampling.is_none() {
                    return Err(self.missing_capability(json!({"sampling": {}}), "sampling"));
                }
                if params.get("tools").is_some() && caps.sampling.as_ref().is_some_and(|s| s.tools.is_none()) {
                    return Err(self.missing_capability(json!({"sampling": {"tools": {}}}), "sampling with tools"));
                }
            }
            "roots/list" => {
                if caps.roots.is_none() {
                    return Err(self.missing_capability(json!({"roots": {}}), "roots"));
                }
            }
            other => return Err(ToolError::new(format!("{other} cannot be asked of a client"))),
        }
        Ok(())
    }

    fn missing_capability(&self, required: Value, what: &str) -> ToolError {
        let message = format!("this request needs the client's {what} capability, which it did not declare");
        ToolError::protocol(
            ErrorObject::new(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY, message)
                .with_data(json!({"requiredCapabilities": required})),
        )
    }

    /// Legacy: a request to the client. Modern: the answer from the retry, or `input_required`.
    async fn ask<R: DeserializeOwned>(&self, method: &str, kind: &str, params: Value) -> Result<R, ToolError> {
        let n = self.inner.input.asked.fetch_add(1, Ordering::Relaxed);
        let answer = self.ask_keyed(&format!("{kind}-{n}"), method, params).await?;
        serde_json::from_value(answer)
            .map_err(|e| ToolError::invalid_params(format!("the client's answer to {method} is malformed: {e}")))
    }

    /// Asks the client one question under a key of your choosing: `method` is
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`. On a legacy session this
    /// is a request to the client; on a 2026-07-28 request the answer comes from the retry's
    /// `inputResponses[key]`, or the call ends with `input_required` asking for it.
    pub(crate) async fn ask_keyed(&self, key: &str, method: &str, params: Value) -> Result<Value, ToolError> {
        let mut answers = self.ask_all(vec![(key.to_owned(), method.to_owned(), params)]).await?;
        Ok(answers.pop().unwrap_or(Value::Null))
    }

    /// Asks several questions at once (one `input_required` round on 2026-07-28 requests; one
    /// request after another on a legacy session). Answers come back in the order asked.
    pub(crate) async fn ask_all(&self, questions: Vec<(String, String, Value)>) -> Result<Vec<Value>, ToolError> {
        for (_, method, params) in &questions {
            self.check_capability(method, params)?;
        }
        if let Some(task) = self.task() {
            return self.ask_in_task(&task, questions).await;
        }
        if let Some(session) = self.session() {
            let mut answers = Vec::with_capacity(questions.len());
            for (_, method, params) in questions {
                answers.push(session.request(&self.inner.outbox, &method, params).await?);
            }
            return Ok(answers);
        }
        let known = self.inner.input.answers.lock().unwrap().clone();
        let missing: mcp_types::mrtr::InputRequests = questions
            .iter()
            .filter(|(key, _, _)| !known.contains_key(key))
            .map(|(key, method, params)| {
                (key.clone(), InputRequest { method: method.clone(), params: Some(params.clone()) })
            })
            .collect();
        if !missing.is_empty() {
            return Err(ToolError::input_required(missing));
        }
        questions.iter().map(|(key, method, _)| checked_answer(key, method, known[key].clone())).collect()
    }

    /// Questions asked by a call that is now a task: through `tasks/update` in the 2026-07-28
    /// extension; as requests on the session, tagged with the task, otherwise.
    async fn ask_in_task(
        &self,
        task: &LiveTask,
        questions: Vec<(String, String, Value)>,
    ) -> Result<Vec<Value>, ToolError> {
        if task.form == TaskForm::Extension {
            let requests: JsonObject = questions
                .iter()
                .map(|(key, method, params)| (key.clone(), json!({"method": method, "params": params})))
                .collect();
            let answers = task.ask(requests).await?;
            return questions
                .iter()
                .map(|(key, method, _)| checked_answer(key, method, answers[key].clone()))
                .collect();
        }
        let Some(session) = self.session() else {
            return Err(ToolError::new(
                "this job needs an answer from the user, and its client can give one only before a job starts: \
                 call the tool again, or use a client that supports tasks",
            ));
        };
        let mut answers = Vec::with_capacity(questions.len());
        for (_, method, mut params) in questions {
            tag_related(&mut params, &task.id);
            task.waiting_on_client(true).await;
            let answer = session.request(&session.outbox, &method, params).await;
            task.waiting_on_client(false).await;
            answers.push(answer?);
        }
        Ok(answers)
    }

    /// 2026-07-28: the answer the client sent for `key`, on this retry or an earlier round.
    pub(crate) fn input_response(&self, key: &str) -> Option<Value> {
        self.inner.input.answers.lock().unwrap().get(key).cloned()
    }

    /// 2026-07-28: keeps `value` under `key` in the sealed `requestState` of the
    /// `input_required` this request ends with, so that the retry finds it with
    /// [`input_response`](Self::input_response) while the server keeps nothing (a gateway keeps
    /// its upstream's state there). Use a key no question has.
    pub(crate) fn keep_in_state(&self, key: &str, value: Value) {
        self.inner.input.answers.lock().unwrap().insert(key.to_owned(), value);
    }

    /// 2026-07-28: whether this retry carried a `requestState` that this server issued and that
    /// verified (sealed, for this request, unexpired).
    pub(crate) fn has_request_state(&self) -> bool {
        self.inner.input.had_state.load(Ordering::Relaxed)
    }

    /// 2026-07-28: the answers the client sent with this retry, merged with earlier rounds'.
    pub(crate) fn set_answers(&self, answers: JsonObject, had_state: bool) {
        *self.inner.input.answers.lock().unwrap() = answers;
        self.inner.input.had_state.store(had_state, Ordering::Relaxed);
    }

    pub(crate) fn answers(&self) -> JsonObject {
        self.inner.input.answers.lock().unwrap().clone()
    }
}

/// An answer from `inputResponses`, checked to have the shape of its method's result.
fn checked_answer(key: &str, method: &str, answer: Value) -> Result<Value, ToolError> {
    let problem = match method {
        "elicitation/create" => serde_json::from_value::<ElicitResult>(answer.clone()).err(),
        "sampling/createMessage" => serde_json::from_value::<CreateMessageResult>(answer.clone()).err(),
        "roots/list" => serde_json::from_value::<ListRootsResult>(answer.clone()).err(),
        _ => None,
    };
    match problem {
        None => Ok(answer),
        Some(e) => {
            Err(ToolError::invalid_params(format!("inputResponses[{key:?}] is not a valid {method} result: {e}")))
        }
    }
}

/// The user's answer to a form elicitation, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicitation<T> {
    /// The user submitted the form.
    Accepted(T),
    /// The user refused.
    Declined,
    /// The user dismissed it.
    Cancelled,
}

impl<T: DeserializeOwned> Elicitation<T> {
    fn from_result(result: ElicitResult) -> Result<Self, ToolError> {
        match result.action {
            ElicitAction::Accept => {
                let content = Value::Object(result.content.unwrap_or_default());
                serde_json::from_value(content)
                    .map(Elicitation::Accepted)
                    .map_err(|e| ToolError::new(format!("the form the user submitted does not match: {e}")))
            }
            ElicitAction::Decline => Ok(Elicitation::Declined),
            ElicitAction::Cancel => Ok(Elicitation::Cancelled),
        }
    }
}
