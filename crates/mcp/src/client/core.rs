//! The client engine: ids, the pending table, era negotiation, `_meta` on 2026-07-28 requests,
//! `input_required` rounds, answers to server requests, timeouts reset by progress, and
//! cancellation when a call is dropped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use mcp_types::jsonrpc::{Envelope, MessageKind};
use mcp_types::lifecycle::ServerCapabilities;
use mcp_types::utilities::ProgressParams;
use mcp_types::version::ProtocolVersion;
use mcp_types::{meta, ErrorCode, ErrorObject, RequestId};
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};
// Tokio's clock, the one its timeouts run on (the same as std's, unless a test pauses it).
use tokio::time::Instant;

use super::{ClientOptions, KnownEra, ServerDescription};
use crate::error::Error;

/// Which way a traced message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server.
    Out,
    /// Server to client.
    In,
}

/// A local error code: the HTTP session is gone (404); the engine re-initializes.
pub(crate) const SESSION_EXPIRED: ErrorCode = ErrorCode(-31001);
/// A local error code: the transport failed for this request.
pub(crate) const TRANSPORT_FAILED: ErrorCode = ErrorCode(-31002);
/// A local error code: the server answered, but with a malformed response.
pub(crate) const MALFORMED_ANSWER: ErrorCode = ErrorCode(-31003);
pub(crate) use crate::error::{AUTH_FAILED, AUTH_REQUIRED};

type ProgressFn = Arc<dyn Fn(ProgressParams) + Send + Sync>;

struct Pending {
    tx: oneshot::Sender<Result<Value, ErrorObject>>,
    token: Option<String>,
    progress: Option<ProgressFn>,
    touched: mpsc::UnboundedSender<()>,
    /// The tag of the [`tagged`] scope the request was sent from.
    tag: Option<u64>,
}

tokio::task_local! {
    /// The tag every request sent from this scope carries (see [`tagged`]).
    static SENT_WITH: u64;
    /// The tag of the request a server's message came with, while a handler answers it.
    static CAME_WITH: Option<u64>;
}

/// Runs `future` with every request it sends tagged `tag`, so that a server's question or
/// notification that comes with one of those requests can be told apart from others: a proxy
/// serving several callers over one connection tags each caller's requests, and its handlers
/// ask [`question_tag`] whose question it is. With telemetry (feature `otel`) the future also
/// keeps the trace context current where `tagged` is called, so a proxy that spawns it still
/// sends its requests as children of the request it serves.
pub fn tagged<F: std::future::Future>(tag: u64, future: F) -> impl std::future::Future<Output = F::Output> {
    #[cfg(feature = "otel")]
    let future = opentelemetry::trace::FutureExt::with_current_context(future);
    SENT_WITH.scope(tag, future)
}

/// Inside a [`Handlers`](super::Handlers) callback (and its future) or an
/// [`on_notification`](super::ClientOptions::on_notification) callback: the tag of the request
/// the server's message came with, when the transport says which request that is (Streamable
/// HTTP: the message came on that request's response stream) and it was sent [`tagged`].
/// `None` otherwise: on stdio a server's questions carry no link to any request.
pub fn question_tag() -> Option<u64> {
    CAME_WITH.try_with(|tag| *tag).ok().flatten()
}

/// How the engine sends.
pub(crate) trait Sender: Send + Sync {
    /// Sends one message.
    fn send(&self, message: Value) -> crate::util::BoxFuture<Result<(), Error>>;
    /// Stops waiting for the answer to `id` (HTTP: drops its response stream).
    fn abandon(&self, id: &RequestId);
    /// After `initialize`: the negotiated version (HTTP uses it in headers).
    fn set_version(&self, _version: &str, _modern: bool) {}
    /// After a legacy `initialize`: open what carries server-initiated messages (HTTP: GET).
    fn after_initialize(&self) {}
    /// Ends the connection.
    fn close(&self) -> crate::util::BoxFuture<()>;
    /// Captured stderr (stdio).
    fn stderr(&self) -> String {
        String::new()
    }
}

#[derive(Default)]
struct Negotiated {
    modern: bool,
    version: String,
    supported: Vec<String>,
    server_info: Option<mcp_types::lifecycle::Implementation>,
    capabilities: ServerCapabilities,
    instructions: Option<String>,
}

pub(crate) struct Core {
    pub options: ClientOptions,
    /// Per tool, the arguments mirrored into `Mcp-Param-*` headers (from the last tools/list).
    pub header_params: RwLock<HashMap<String, Vec<(String, String)>>>,
    /// Whether the transport is HTTP (tools with invalid `x-mcp-header` are then dropped).
    pub http: std::sync::atomic::AtomicBool,
    sender: RwLock<Option<Arc<dyn Sender>>>,
    pending: Mutex<HashMap<RequestId, Pending>>,
    /// The connection ended (set under the `pending` lock): new requests fail at once.
    ended: AtomicBool,
    next_id: AtomicI64,
    state: RwLock<Negotiated>,
    /// `None` while a remembered modern era awaits the `server/discover` that confirms it; then
    /// `Ok` (the era in `state` holds) or why negotiating failed.
    settled: tokio::sync::watch::Sender<Option<Result<(), String>>>,
    /// Per tool, its 2025-11-25 `execution.taskSupport` (from the last tools/list).
    pub task_support: RwLock<HashMap<String, String>>,
    /// Task status notifications (`notifications/tasks/status`, `notifications/tasks`).
    pub task_events: tokio::sync::broadcast::Sender<Value>,
    /// Results the server said stay fresh (`ttlMs`), and whose of them this connection reads.
    cache: Arc<super::cache::ResultCache>,
    cache_owner: RwLock<super::cache::Owner>,
    /// How the era was decided.
    negotiation: Mutex<super::Negotiation>,
    /// How the server is reached, as telemetry records it (unset: stdio).
    #[cfg(feature = "otel")]
    pub transport: std::sync::OnceLock<crate::telemetry::Transport>,
}

/// How long a `ping` probe waits: every server answers one (a legacy one with `{}` or a refusal,
/// a 2026-07-28 one with "method not found"), so only one that is still starting (or broken)
/// is waited for.
const PING_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Core {
    pub fn new(options: ClientOptions) -> Arc<Core> {
        Arc::new(Core {
            header_params: RwLock::new(HashMap::new()),
            http: std::sync::atomic::AtomicBool::new(false),
            sender: RwLock::new(None),
            pending: Mutex::new(HashMap::new()),
            ended: AtomicBool::new(false),
            next_id: AtomicI64::new(1),
            state: RwLock::new(Negotiated::default()),
            settled: tokio::sync::watch::Sender::new(Some(Ok(()))),
            task_support: RwLock::new(HashMap::new()),
            task_events: tokio::sync::broadcast::channel(64).0,
            cache: options.cache.clone().unwrap_or_default(),
            cache_owner: RwLock::new(super::cache::Owner::new("")),
            negotiation: Mutex::new(Default::default()),
            #[cfg(feature = "otel")]
            transport: std::sync::OnceLock::new(),
            options,
        })
    }

    /// Names the server for the cache: results it marks public are shared with other clients
    /// of `server` that share this client's cache. Without it (stdio), nothing is shared.
    #[cfg_attr(not(feature = "client-http"), allow(dead_code))] // an HTTP connection's
    pub fn set_cache_server(&self, server: &str) {
        let mut owner = self.cache_owner.write().unwrap();
        owner.server = server.into();
    }

    fn cache_owner(&self) -> super::cache::Owner {
        let owner = self.cache_owner.read().unwrap().clone();
        match owner.server.is_empty() {
            true => super::cache::Owner { server: owner.connection.clone(), ..owner },
            false => owner,
        }
    }

    /// A request whose result the server may say stays fresh: answered from the cache while it
    /// is, else sent and kept. `part` tells the results of `method` apart (a cursor, a URI).
    pub async fn cached_request(self: &Arc<Self>, method: &str, part: &str, params: Value) -> Result<Value, Error> {
        let owner = self.cache_owner();
        if let Some(result) = self.cache.get(&owner, method, part) {
            return Ok(result);
        }
        let result = self.request(method, params, None).await?;
        self.cache.put(&owner, method, part, &result);
        Ok(result)
    }

    /// Drops every cached result of `method`; `true` when there was one.
    pub fn forget_cached(&self, method: &str) -> bool {
        self.cache.forget(&self.cache_owner(), method, None)
    }

    pub fn set_sender(&self, sender: Arc<dyn Sender>) {
        *self.sender.write().unwrap() = Some(sender);
    }

    fn sender(&self) -> Result<Arc<dyn Sender>, Error> {
        self.sender.read().unwrap().clone().ok_or_else(Error::closed)
    }

    pub fn trace(&self, direction: Direction, message: &Value) {
        if let Some(tracer) = &self.options.tracer {
            tracer(direction, message);
        }
    }

    pub fn stderr(&self) -> String {
        self.sender().map(|s| s.stderr()).unwrap_or_default()
    }

    pub fn description(&self) -> ServerDescription {
        let s = self.state.read().unwrap();
        ServerDescription {
            protocol_version: s.version.clone(),
            modern: s.modern,
            supported_versions: s.supported.clone(),
            server_info: s.server_info.clone(),
            capabilities: s.capabilities.clone(),
            instructions: s.instructions.clone(),
        }
    }

    pub(crate) async fn send(&self, message: Value) -> Result<(), Error> {
        self.trace(Direction::Out, &message);
        self.sender()?.send(message).await
    }

    /// The connection ended: every waiting request fails.
    pub fn closed(&self) {
        let mut pending = self.pending.lock().unwrap();
        self.ended.store(true, Ordering::Relaxed);
        pending.clear();
    }

    /// Whether the connection ended (the child exited, the stream closed).
    pub fn is_ended(&self) -> bool {
        self.ended.load(Ordering::Relaxed)
    }

    /// One message from the server that came with request `related` (on its response stream).
    #[cfg_attr(not(feature = "client-http"), allow(dead_code))] // HTTP response streams
    pub fn on_message_with(self: &Arc<Self>, message: Value, related: Option<&RequestId>) {
        self.trace(Direction::In, &message);
        let Ok(text) = serde_json::to_string(&message) else { return };
        self.on_envelope(&text, related);
    }

    /// One message from the server as the JSON text it came in (a stdio line), read once
    /// (twice when traced). `false` when the text is not JSON at all.
    /// Fails request `id`: its response was larger than [`ClientOptions::max_message_bytes`].
    pub fn fail_oversized(self: &Arc<Self>, id: &RequestId) {
        let limit = self.options.max_message_bytes;
        let message = format!(
            "the server's response is larger than this client accepts ({limit} bytes: raise \
             ClientOptions::max_message_bytes, or `mcp --max-message-mib`)"
        );
        let error =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": TRANSPORT_FAILED.0, "message": message}});
        self.on_text(&error.to_string());
    }

    pub fn on_text(self: &Arc<Self>, text: &str) -> bool {
        if self.options.tracer.is_some() {
            match serde_json::from_str::<Value>(text) {
                Ok(message) => self.trace(Direction::In, &message),
                Err(_) => return false,
            }
        }
        self.on_envelope(text, None) || serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
    }

    /// The tag of pending request `related`, if it has one.
    fn tag_of(&self, related: Option<&RequestId>) -> Option<u64> {
        related.and_then(|id| self.pending.lock().unwrap().get(id).and_then(|p| p.tag))
    }

    /// Acts on one message; `false` when it is not a JSON-RPC envelope. `related`: the request
    /// whose response stream it came on.
    fn on_envelope(self: &Arc<Self>, text: &str, related: Option<&RequestId>) -> bool {
        let Ok(envelope) = serde_json::from_str::<Envelope>(text) else { return false };
        match envelope.kind() {
            Ok(MessageKind::Result { id, result }) => {
                self.resolve(&id, Ok(serde_json::from_str(result.get()).unwrap_or(Value::Null)))
            }
            Ok(MessageKind::Error { id: Some(id), error }) => self.resolve(&id, Err(error)),
            Ok(MessageKind::InvalidResponse { id, reason }) => {
                tracing::warn!("dropped a malformed response from the server ({reason})");
                if let Some(id) = id {
                    let error =
                        ErrorObject::new(MALFORMED_ANSWER, format!("the server's response is malformed: {reason}"));
                    self.resolve(&id, Err(error));
                }
            }
            Ok(MessageKind::Notification { method, params })
                if method == "notifications/tasks/status" || method == "notifications/tasks" =>
            {
                if let Some(Ok(params)) = params.map(|p| serde_json::from_str::<Value>(p.get())) {
                    let _ = self.task_events.send(params);
                }
            }
            Ok(MessageKind::Notification { method, params }) if method == "notifications/progress" => {
                if let Some(Ok(p)) = params.map(|p| serde_json::from_str::<ProgressParams>(p.get())) {
                    self.progress(p);
                }
            }
            Ok(MessageKind::Notification { method, params }) => {
                // What the notification makes stale goes before anyone is told of it, so a
                // listing it prompts is fetched anew.
                self.cache.on_notification(&self.cache_owner(), &method, params.map(|p| p.get()));
                if let Some(notify) = &self.options.on_notification {
                    let params = params.and_then(|p| serde_json::from_str(p.get()).ok()).unwrap_or(Value::Null);
                    CAME_WITH.sync_scope(self.tag_of(related), || notify(&method, &params));
                }
            }
            Ok(MessageKind::Request { id, method, params }) => {
                let params = params.and_then(|p| serde_json::from_str(p.get()).ok()).unwrap_or(Value::Null);
                let core = self.clone();
                let method = method.into_owned();
                let tag = self.tag_of(related);
                tokio::spawn(CAME_WITH.scope(tag, async move {
                    let answer = core.answer(&method, params).await;
                    let message = match answer {
                        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
                    };
                    let _ = core.send(message).await;
                }));
            }
            _ => {}
        }
        true
    }

    fn resolve(&self, id: &RequestId, answer: Result<Value, ErrorObject>) {
        if let Some(p) = self.pending.lock().unwrap().remove(id) {
            let _ = p.tx.send(answer);
        }
    }

    fn progress(&self, p: ProgressParams) {
        let token = match &p.progress_token {
            meta::ProgressToken::String(s) => s.clone(),
            meta::ProgressToken::Number(n) => n.to_string(),
        };
        let pending = self.pending.lock().unwrap();
        if let Some(entry) = pending.values().find(|e| e.token.as_deref() == Some(token.as_str())) {
            let _ = entry.touched.send(());
            if let Some(f) = &entry.progress {
                f(p);
            }
        }
    }

    /// Answers a server's question with the handlers (legacy requests and modern input requests).
    pub(crate) async fn answer(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        let handlers = &self.options.handlers;
        let unsupported = || ErrorObject::method_not_found(method);
        let bad = |e: serde_json::Error| ErrorObject::invalid_params(e.to_string());
        let failed = |e: String| ErrorObject::internal(e);
        match method {
            "ping" => Ok(json!({})),
            "elicitation/create" => {
                let h = handlers.elicitation.as_ref().ok_or_else(unsupported)?;
                let r = h(serde_json::from_value(params).map_err(bad)?).await.map_err(failed)?;
                serde_json::to_value(r).map_err(|e| failed(e.to_string()))
            }
            "sampling/createMessage" => {
                let h = handlers.sampling.as_ref().ok_or_else(unsupported)?;
                let r = h(serde_json::from_value(params).map_err(bad)?).await.map_err(failed)?;
                serde_json::to_value(r).map_err(|e| failed(e.to_string()))
            }
            "roots/list" => {
                let h = handlers.roots.as_ref().ok_or_else(unsupported)?;
                let r = h(()).await.map_err(failed)?;
                serde_json::to_value(r).map_err(|e| failed(e.to_string()))
            }
            _ => Err(unsupported()),
        }
    }

    fn meta(&self, version: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(meta::PROTOCOL_VERSION.into(), version.into());
        let mut capabilities = self.options.capabilities();
        if self.options.tasks {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(mcp_types::tasks::EXTENSION_ID.into(), json!({}));
        }
        m.insert(meta::CLIENT_CAPABILITIES.into(), serde_json::to_value(capabilities).unwrap_or_default());
        m.insert(meta::CLIENT_INFO.into(), serde_json::to_value(&self.options.client_info).unwrap_or_default());
        if let Some(level) = self.options.log_level {
            m.insert(meta::LOG_LEVEL.into(), serde_json::to_value(level).unwrap_or_default());
        }
        m
    }

    /// Sends a notification (with telemetry, its span's context in its `_meta`).
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        #[cfg(feature = "otel")]
        let params = {
            let mut params = params;
            let version = self.state.read().unwrap().version.clone();
            let transport = self.transport.get().cloned().unwrap_or_default();
            super::traced::notification(method, &mut params, &version, &transport);
            params
        };
        let message = match params {
            Some(params) => json!({"jsonrpc": "2.0", "method": method, "params": params}),
            None => json!({"jsonrpc": "2.0", "method": method}),
        };
        self.send(message).await
    }

    /// Sends one request and waits for its answer, with timeouts; dropping the future cancels.
    async fn raw(&self, method: &str, params: Value, progress: Option<ProgressFn>) -> Result<Value, ErrorObject> {
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        #[cfg(feature = "otel")]
        let (op, params) = {
            let mut params = params;
            let version = self.state.read().unwrap().version.clone();
            let transport = self.transport.get().cloned().unwrap_or_default();
            (super::traced::start(method, &id, &mut params, Some(&version), &transport), params)
        };
        let outcome = self.raw_untraced(method, id, params, progress).await;
        #[cfg(feature = "otel")]
        super::traced::end(op, &outcome);
        outcome
    }

    /// [`Core::raw`] without telemetry.
    async fn raw_untraced(
        &self,
        method: &str,
        id: RequestId,
        mut params: Value,
        progress: Option<ProgressFn>,
    ) -> Result<Value, ErrorObject> {
        // A progress token only when someone listens: progress also resets the timeout.
        let token = progress.is_some().then(|| format!("p{id}"));
        if let (Some(token), Value::Object(p)) = (&token, &mut params) {
            let meta = p.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(m) = meta {
                m.insert("progressToken".into(), token.clone().into());
            }
        }
        let (tx, rx) = oneshot::channel();
        let (touched, mut touches) = mpsc::unbounded_channel();
        {
            let mut pending = self.pending.lock().unwrap();
            if self.ended.load(Ordering::Relaxed) {
                return Err(ErrorObject::new(TRANSPORT_FAILED, "the connection closed"));
            }
            let tag = SENT_WITH.try_with(|tag| *tag).ok();
            pending.insert(id.clone(), Pending { tx, token, progress, touched, tag });
        }
        let guard = CancelOnDrop { core: self, id: id.clone(), done: false };
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(e) = self.send(message).await {
            return Err(ErrorObject::new(TRANSPORT_FAILED, e.to_string()));
        }
        let started = Instant::now();
        let mut rx = rx;
        let outcome = loop {
            let idle = tokio::time::sleep(self.options.timeout);
            let cap = tokio::time::sleep(self.options.max_timeout.saturating_sub(started.elapsed()));
            tokio::select! {
                answer = &mut rx => break answer.unwrap_or_else(|_| Err(ErrorObject::new(TRANSPORT_FAILED, "the connection closed"))),
                Some(()) = touches.recv() => continue,
                _ = idle => break Err(ErrorObject::new(TRANSPORT_FAILED, format!("no answer to {method} within {:?}", self.options.timeout))),
                _ = cap => break Err(ErrorObject::new(TRANSPORT_FAILED, format!("{method} took longer than {:?}", self.options.max_timeout))),
            }
        };
        let mut guard = guard;
        guard.done = outcome.as_ref().is_ok() || outcome.as_ref().is_err_and(|e| e.code != TRANSPORT_FAILED);
        drop(guard);
        outcome
    }

    /// A request with `_meta` (modern), `input_required` rounds, and re-initialization when an
    /// HTTP session expired.
    pub async fn request(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        progress: Option<ProgressFn>,
    ) -> Result<Value, Error> {
        self.request_rounds(method, params, progress, true).await
    }

    /// [`Core::request`]; without `answer_input`, an `input_required` result is returned as
    /// it is, its questions unanswered.
    pub async fn request_rounds(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        progress: Option<ProgressFn>,
        answer_input: bool,
    ) -> Result<Value, Error> {
        let mut params = if params.is_null() { json!({}) } else { params };
        let mut reinitialized = false;
        for _round in 0..16 {
            let (modern, version) = {
                let s = self.state.read().unwrap();
                (s.modern, s.version.clone())
            };
            let mut sent = params.clone();
            if modern {
                if let Value::Object(p) = &mut sent {
                    let meta = p.entry("_meta").or_insert_with(|| json!({}));
                    if let Value::Object(m) = meta {
                        // What the caller put in `_meta` stays (a gateway's client's capabilities).
                        for (key, value) in self.meta(&version) {
                            m.entry(key).or_insert(value);
                        }
                    }
                }
            }
            let result = match self.raw_confirmed(method, sent, progress.clone()).await {
                Ok(Some(result)) => result,
                Ok(None) => continue, // not the remembered era: sent again in the real one
                Err(e) if e.code == SESSION_EXPIRED && !reinitialized => {
                    reinitialized = true;
                    self.initialize().await?;
                    continue;
                }
                Err(e) if e.code == TRANSPORT_FAILED || e.code == MALFORMED_ANSWER => {
                    return Err(Error::protocol(e.message))
                }
                Err(e) => return Err(Error::from(e)),
            };
            if !answer_input || result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                return Ok(result);
            }
            params = self.fulfil(params, &result).await?;
        }
        Err(Error::protocol(format!("{method}: too many input_required rounds")))
    }

    /// Waits until the era is settled; `Ok(true)` for a modern one.
    pub async fn settled(&self) -> Result<bool, ErrorObject> {
        let mut settled = self.settled.subscribe();
        let outcome = settled.wait_for(Option::is_some).await.map(|o| o.clone());
        match outcome {
            Ok(Some(Ok(()))) => Ok(self.state.read().unwrap().modern),
            Ok(Some(Err(e))) => Err(ErrorObject::new(TRANSPORT_FAILED, e)),
            _ => Err(ErrorObject::new(TRANSPORT_FAILED, "the connection closed")),
        }
    }

    /// [`Core::raw`], trusted only once the era is settled. `Ok(None)`: the request went out in a
    /// remembered modern era the server turned out not to speak; send it again.
    async fn raw_confirmed(
        &self,
        method: &str,
        params: Value,
        progress: Option<ProgressFn>,
    ) -> Result<Option<Value>, ErrorObject> {
        if self.settled.borrow().is_some() {
            return self.raw(method, params, progress).await.map(Some);
        }
        if method == "tools/call" {
            // A legacy server may run a tool it is sent before `initialize`, and the call would
            // then run twice: calls wait for the era to be confirmed.
            self.settled().await?;
            return Ok(None);
        }
        let version = self.state.read().unwrap().version.clone();
        let held = |modern: bool| modern && self.state.read().unwrap().version == version;
        let raw = self.raw(method, params, progress);
        tokio::pin!(raw);
        tokio::select! {
            answer = &mut raw => match held(self.settled().await?) {
                true => answer.map(Some),
                false => Ok(None),
            },
            modern = self.settled() => match held(modern?) {
                true => raw.await.map(Some),
                false => Ok(None), // a legacy server may never answer it: stop waiting
            },
        }
    }

    /// Builds the retry of an `input_required` result: the answers, and the state echoed.
    async fn fulfil(&self, mut params: Value, result: &Value) -> Result<Value, Error> {
        let mut responses = Map::new();
        if let Some(Value::Object(requests)) = result.get("inputRequests") {
            for (key, request) in requests {
                let method = request["method"].as_str().unwrap_or("");
                // The question came with a request sent from this scope: it carries its tag.
                let tag = SENT_WITH.try_with(|tag| *tag).ok();
                let params = request.get("params").cloned().unwrap_or(json!({}));
                let answer = CAME_WITH.scope(tag, self.answer(method, params)).await?;
                responses.insert(key.clone(), answer);
            }
        }
        if let Value::Object(p) = &mut params {
            p.insert("inputResponses".into(), Value::Object(responses));
            match result.get("requestState") {
                Some(state) => p.insert("requestState".into(), state.clone()),
                None => p.remove("requestState"),
            };
        }
        Ok(params)
    }

    /// Decides the era: from memory (see [`KnownEra`]), else a probe, else `initialize`.
    pub async fn negotiate(self: &Arc<Self>, http: bool) -> Result<(), Error> {
        let started = Instant::now();
        let outcome = match self.options.known_era.clone() {
            _ if self.options.legacy_only => self.initialize().await,
            Some(KnownEra::Modern(version)) => {
                self.confirm_in_background(http, version);
                tokio::task::yield_now().await; // the probe goes out first, as a rule
                Ok(())
            }
            Some(KnownEra::Legacy) => match self.initialize().await {
                Ok(()) => Ok(()),
                Err(e) => {
                    self.note(format!("remembered as legacy, but initialize failed ({e}): probing"));
                    self.probe(http, ProtocolVersion::LATEST.to_owned(), !http).await
                }
            },
            None => self.probe(http, ProtocolVersion::LATEST.to_owned(), !http).await,
        };
        self.negotiation.lock().unwrap().elapsed = started.elapsed();
        outcome
    }

    /// Notes one step of the negotiation (what [`Core::negotiation`] reports).
    fn note(&self, step: String) {
        self.negotiation.lock().unwrap().steps.push(step);
    }

    /// How the era was decided.
    pub fn negotiation(&self) -> super::Negotiation {
        self.negotiation.lock().unwrap().clone()
    }

    /// A probe preferring `version`, else `initialize`. With `ping_first` (stdio), a `ping` goes
    /// before `server/discover`: see [`Core::ping_says_legacy`].
    async fn probe(self: &Arc<Self>, http: bool, version: String, ping_first: bool) -> Result<(), Error> {
        if ping_first && self.ping_says_legacy(&version).await? {
            return match self.initialize().await {
                Ok(()) => Ok(()),
                // Not legacy after all (a 2026-07-28 server that answers `ping` oddly).
                Err(e) if e.rpc().is_some() => {
                    self.note(format!("initialize refused ({e}): asking server/discover"));
                    match self.discover_with(http, version, false).await? {
                        true => Ok(()),
                        false => Err(e),
                    }
                }
                Err(e) => Err(e),
            };
        }
        if self.discover_with(http, version, false).await? {
            return Ok(());
        }
        self.initialize().await
    }

    /// stdio: a `ping` carrying 2026-07-28 `_meta`, asked before `server/discover`, `true` when
    /// its answer shows a legacy server. `ping` is the one request a legacy server takes before
    /// `initialize` (answered `{}`, or refused as early by some), and 2026-07-28 removed it, so
    /// a modern server answers "method not found" (-32601) and is asked `server/discover` next.
    /// A legacy server is so never sent a method it does not know: the Python SDK 1.x logs some
    /// 250 lines of validation errors for `server/discover`, and a server that ignores unknown
    /// methods would leave it to time out. A wrong guess costs a refused `initialize`, then the
    /// `server/discover` probe, never a wrong era.
    async fn ping_says_legacy(self: &Arc<Self>, version: &str) -> Result<bool, Error> {
        let ping = json!({"_meta": self.meta(version)});
        let limit = self.options.timeout.min(PING_LIMIT);
        let (legacy, step) = match tokio::time::timeout(limit, self.raw("ping", ping, None)).await {
            Ok(Ok(result)) if result.get("resultType").is_none() => (true, "ping answered: a legacy server".to_owned()),
            Ok(Ok(_)) => (false, "ping answered with a resultType".to_owned()),
            Ok(Err(e)) if e.code == AUTH_REQUIRED || e.code == AUTH_FAILED => return Err(Error::from(e)),
            Ok(Err(e)) if e.code == ErrorCode::METHOD_NOT_FOUND => (false, "ping unknown: not a legacy server".into()),
            // The request's own time limit may be the shorter one: a wait as well.
            Ok(Err(e)) if e.code == TRANSPORT_FAILED && !self.is_ended() && e.message.starts_with("no answer") => {
                self.negotiation.lock().unwrap().waited_out = true;
                (true, format!("no answer to ping within {limit:?}: trying initialize"))
            }
            Ok(Err(e)) if e.code == TRANSPORT_FAILED => return Err(Error::protocol(e.message)),
            Ok(Err(e)) => (true, format!("ping refused before initialize ({}): a legacy server", e.code.0)),
            Err(_) => {
                self.negotiation.lock().unwrap().waited_out = true;
                (true, format!("no answer to ping within {limit:?}: trying initialize"))
            }
        };
        self.note(step);
        Ok(legacy)
    }

    /// Speaks `version` at once; a `server/discover` sent first confirms it, or the fallback to
    /// `initialize` runs. Requests meanwhile wait on [`Core::settled`] before trusting an answer.
    fn confirm_in_background(self: &Arc<Self>, http: bool, version: String) {
        // The probe sets this too, but only once its task runs; requests may go out before.
        {
            let mut s = self.state.write().unwrap();
            s.modern = true;
            s.version = version.clone();
        }
        self.settled.send_replace(None);
        let core = self.clone();
        tokio::spawn(async move {
            let outcome = core.probe(http, version, false).await;
            let why = |e: Error| e.to_string().trim_start_matches("protocol error: ").to_owned();
            core.settled.send_replace(Some(outcome.map_err(why)));
        });
    }

    /// `Ok(true)` when the server answered as a 2026-07-28 server.
    async fn discover_with(self: &Arc<Self>, http: bool, version: String, retried: bool) -> Result<bool, Error> {
        {
            let mut s = self.state.write().unwrap();
            s.modern = true;
            s.version = version.clone();
        }
        self.sender()?.set_version(&version, true);
        let probe = json!({"_meta": self.meta(&version)});
        let limit = self.options.timeout.min(std::time::Duration::from_secs(if http { 30 } else { 5 }));
        let answer = tokio::time::timeout(limit, self.raw("server/discover", probe, None)).await;
        let result = match answer {
            Ok(Ok(result)) if result.get("supportedVersions").is_some() => {
                self.note("server/discover answered: a 2026-07-28 server".into());
                result
            }
            Ok(Err(e)) if e.code == AUTH_REQUIRED || e.code == AUTH_FAILED => return Err(Error::from(e)),
            Ok(Err(e)) if e.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => {
                let supported: Vec<String> = e
                    .data
                    .as_ref()
                    .and_then(|d| d.get("supported"))
                    .and_then(|s| serde_json::from_value(s.clone()).ok())
                    .unwrap_or_default();
                let modern = supported.iter().find(|v| ProtocolVersion::MODERN.contains(&v.as_str()));
                if let (Some(version), false) = (modern, retried) {
                    // The server named a 2026 version we speak: probe again with it, once.
                    return Box::pin(self.discover_with(http, version.clone(), true)).await;
                }
                if supported.iter().any(|v| ProtocolVersion::LEGACY.contains(&v.as_str())) {
                    self.state.write().unwrap().modern = false;
                    return Ok(false);
                }
                return Err(Error::protocol(format!("the server supports none of our versions: {supported:?}")));
            }
            other => {
                let step = match other {
                    Err(_) => {
                        self.negotiation.lock().unwrap().waited_out = true;
                        format!("no answer to server/discover within {limit:?}: a legacy server")
                    }
                    Ok(Err(e)) => format!("server/discover refused ({}: {}): a legacy server", e.code.0, e.message),
                    Ok(Ok(_)) => "server/discover answered without supportedVersions: a legacy server".into(),
                };
                self.note(step);
                self.state.write().unwrap().modern = false;
                return Ok(false);
            }
        };
        let mut s = self.state.write().unwrap();
        s.supported = serde_json::from_value(result["supportedVersions"].clone()).unwrap_or_default();
        s.capabilities = serde_json::from_value(result["capabilities"].clone()).unwrap_or_default();
        s.instructions = result["instructions"].as_str().map(str::to_owned);
        s.server_info = serde_json::from_value(result["_meta"][meta::SERVER_INFO].clone()).ok();
        Ok(true)
    }

    /// The legacy handshake.
    async fn initialize(self: &Arc<Self>) -> Result<(), Error> {
        self.state.write().unwrap().modern = false;
        self.sender()?.set_version(ProtocolVersion::LATEST_LEGACY, false);
        let params = json!({
            "protocolVersion": ProtocolVersion::LATEST_LEGACY,
            "capabilities": self.options.capabilities(),
            "clientInfo": self.options.client_info,
        });
        let result = self.raw("initialize", params, None).await.map_err(|e| {
            if e.code == TRANSPORT_FAILED {
                Error::protocol(e.message)
            } else {
                Error::from(e)
            }
        })?;
        let version = result["protocolVersion"].as_str().unwrap_or("").to_owned();
        if !ProtocolVersion::LEGACY.contains(&version.as_str()) {
            return Err(Error::protocol(format!(
                "the server chose protocol version {version:?}, which this client does not speak"
            )));
        }
        self.sender()?.set_version(&version, false);
        {
            let mut s = self.state.write().unwrap();
            s.version = version.clone();
            s.supported = vec![version];
            s.capabilities = serde_json::from_value(result["capabilities"].clone()).unwrap_or_default();
            s.server_info = serde_json::from_value(result["serverInfo"].clone()).ok();
            s.instructions = result["instructions"].as_str().map(str::to_owned);
        }
        self.notify("notifications/initialized", None).await?;
        self.sender()?.after_initialize();
        let logs = self.state.read().unwrap().capabilities.logging.is_some();
        if let Some(level) = self.options.log_level.filter(|_| logs) {
            if let Err(e) = self.raw("logging/setLevel", json!({"level": level}), None).await {
                tracing::debug!("logging/setLevel refused: {}", e.message);
            }
        }
        Ok(())
    }

    pub async fn close(&self) {
        if let Ok(sender) = self.sender() {
            sender.close().await;
        }
    }
}

/// Cancels a request whose caller stopped waiting.
struct CancelOnDrop<'a> {
    core: &'a Core,
    id: RequestId,
    done: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        self.core.pending.lock().unwrap().remove(&self.id);
        if self.done {
            return;
        }
        let Ok(sender) = self.core.sender() else { return };
        sender.abandon(&self.id);
        let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": self.id, "reason": "the caller stopped waiting"}});
        self.core.trace(Direction::Out, &note);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = sender.send(note).await;
            });
        }
    }
}

/// The id of the response whose first and last bytes are `head` and `tail` (a line too long to
/// read whole), when it stands where servers put it: among the first members (ours, rmcp, the
/// Python SDK: `{"jsonrpc":"2.0","id":…`) or last (the TypeScript SDK: `…,"jsonrpc":"2.0","id":1}`).
pub(crate) fn answered_id(head: &[u8], tail: &[u8]) -> Option<RequestId> {
    id_among_first_members(&String::from_utf8_lossy(head)).or_else(|| id_as_last_member(&String::from_utf8_lossy(tail)))
}

fn id_among_first_members(head: &str) -> Option<RequestId> {
    let mut rest = head.trim_start().strip_prefix('{')?;
    loop {
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let key = values.next()?.ok()?;
        let after_key = rest[values.byte_offset()..].trim_start().strip_prefix(':')?;
        let mut values = serde_json::Deserializer::from_str(after_key).into_iter::<Value>();
        let value = values.next()?.ok()?; // a large value (the result) ends the search
        if key == "id" {
            return serde_json::from_value(value).ok();
        }
        rest = after_key[values.byte_offset()..].trim_start().strip_prefix(',')?;
    }
}

fn id_as_last_member(tail: &str) -> Option<RequestId> {
    let mut rest = tail.trim_end().strip_suffix('}')?.trim_end();
    if let Some(before) = rest.strip_suffix("\"2.0\"") {
        let before = before.trim_end().strip_suffix(':')?.trim_end().strip_suffix("\"jsonrpc\"")?;
        rest = before.trim_end().strip_suffix(',')?.trim_end();
    }
    let at = rest.rfind("\"id\"")?;
    let value = rest[at + 4..].trim_start().strip_prefix(':')?.trim();
    let opens_member = rest[..at].trim_end().ends_with([',', '{']);
    opens_member.then(|| serde_json::from_str(value).ok()).flatten()
}

#[cfg(test)]
mod answered_id_tests {
    use super::{answered_id, RequestId};

    #[test]
    fn the_id_is_found_first_or_last() {
        let ours = br#"{"jsonrpc":"2.0","id":12,"result":{"contents":[{"text":"aaaa"#;
        assert_eq!(answered_id(ours, b"aaa\"}]}}"), Some(RequestId::Number(12)));
        let typescript = br#"aaaa"}]},"jsonrpc":"2.0","id":"r-7"}"#;
        assert_eq!(
            answered_id(br#"{"result":{"contents":[{"text":"aaaa"#, typescript),
            Some(RequestId::String("r-7".into()))
        );
        let spaced = br#"{ "jsonrpc": "2.0", "id": 3, "result": {"#;
        assert_eq!(answered_id(spaced, b""), Some(RequestId::Number(3)));
        // An "id" inside the result is not the response's.
        assert_eq!(answered_id(br#"{"result":{"id":5,"text":"aaaa"#, br#"aaaa"}}"#), None);
        assert_eq!(answered_id(b"", br#"{"text":"x","id":9}}"#), None);
    }
}
