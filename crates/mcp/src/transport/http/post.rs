//! POST, GET and DELETE on the MCP endpoint.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use mcp_types::jsonrpc::{Envelope, MessageKind};
use mcp_types::utilities::CancelledParams;
use mcp_types::version::ProtocolVersion;
use mcp_types::{ErrorCode, ErrorObject, RequestId};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::directory::{ClusterEvent, STORE_UNAVAILABLE};
use super::events::EventStream;
use super::sessions::HttpSession;
use super::{json, modern_status, plain, rpc_error, security, sse, Body, Shared, SharedSessions};
use crate::engine::outbox::{Outbox, OutboxReceiver};
use crate::engine::raw::RawParams;
use crate::engine::session::Session;
use crate::server::bounded;
use crate::server::connection::{forward_changes_from, response_bytes};
use crate::server::era::{self, Admitted};
use crate::server::head::ParamsHead;
use crate::server::identity::Identity;
use crate::server::reply::Reply;

const SESSION: &str = "mcp-session-id";

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The authenticated caller of a request (put there by the resource server's layer).
pub(crate) fn caller(parts: &Parts) -> Option<Identity> {
    parts.extensions.get::<Identity>().cloned()
}

/// POST: one JSON-RPC message (or, in 2025-03-26 sessions, a batch).
pub(crate) async fn handle(shared: Arc<Shared>, parts: Parts, body: Bytes) -> Response<Body> {
    let caller = caller(&parts);
    let peer = parts.extensions.get::<super::PeerAddr>().map(|p| p.0.ip());
    let owner = caller.as_ref().map(Identity::account);
    if let Some(id) = parts.uri.query().and_then(|q| q.strip_prefix("sessionId=")) {
        return super::legacy_sse::post(&shared, id, owner.as_deref(), &body).await;
    }
    for check in [security::check_content_type(&parts.headers), security::check_post_accept(&parts.headers)] {
        if let Err(refusal) = check {
            return rpc_error(refusal.status, None, ErrorObject::invalid_request(refusal.message));
        }
    }
    let session = match header(&parts.headers, SESSION) {
        Some(id) => match find_session(&shared, id, owner.as_deref()).await {
            Ok(Some(s)) => Some(s),
            Ok(None) => return session_not_found(),
            Err(unavailable) => return unavailable,
        },
        None => None,
    };
    if let Some(version) = header(&parts.headers, "mcp-protocol-version") {
        if session.is_some() && !ProtocolVersion::LEGACY.contains(&version) {
            let e = ErrorObject::invalid_request(format!("unsupported MCP-Protocol-Version {version:?}"));
            return rpc_error(StatusCode::BAD_REQUEST, None, e);
        }
    }
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return batch(shared, session, caller.as_ref(), &body).await;
    }
    let envelope = match serde_json::from_slice::<Envelope>(&body) {
        Ok(e) => e,
        Err(e) => {
            return rpc_error(StatusCode::BAD_REQUEST, None, ErrorObject::parse_error(format!("Parse error: {e}")))
        }
    };
    match envelope.kind() {
        Ok(MessageKind::Request { id, method, params }) => {
            let raw = RawParams::in_body(&body, params);
            let change = super::directory::RecordChange::of(&method, params.map(|p| p.get()));
            let to_save = session.clone().zip(change);
            #[cfg(feature = "otel")]
            let transport = traced_transport(&parts, session.as_deref());
            let request_parts = RequestParts {
                headers: &parts.headers,
                session,
                caller,
                peer,
                #[cfg(feature = "otel")]
                transport,
            };
            let response = request(&shared, request_parts, id, &method, params, raw).await;
            if let Some((session, change)) = to_save.filter(|(s, c)| c.made_on(&s.session)) {
                if let Err(e) = share_change(&shared, &session, &change).await {
                    tracing::warn!("the session's new state is not shared: {e}");
                }
            }
            response
        }
        Ok(MessageKind::Notification { method, params }) => {
            #[cfg(feature = "otel")]
            {
                let version = session.as_ref().map(|s| s.session.version.as_ref());
                let transport = traced_transport(&parts, session.as_deref());
                crate::server::traced::notification(&method, params.map(RawValue::get), version, &transport);
            }
            if method == "notifications/cancelled" {
                cancel(&shared, session.as_deref(), params);
            } else if method == "notifications/roots/list_changed" {
                if let Some(s) = &session {
                    s.session.roots_changed();
                }
            }
            accepted()
        }
        Ok(MessageKind::Result { id, result }) => {
            if let Some(s) = &session {
                deliver(&shared, s, id, answer(&shared, result));
            }
            accepted()
        }
        Ok(MessageKind::Error { id, error }) => {
            if let (Some(s), Some(id)) = (&session, id) {
                deliver(&shared, s, id, Err(error));
            }
            accepted()
        }
        Ok(MessageKind::InvalidResponse { id, reason }) => {
            // A response is never answered with JSON-RPC: a plain 400 says it was not taken.
            tracing::warn!("dropped a malformed response POSTed by a client ({reason})");
            if let (Some(s), Some(id)) = (&session, id) {
                let error = ErrorObject::invalid_request(format!("the client's response is malformed: {reason}"));
                s.session.resolve(&id, Err(error));
            }
            plain(StatusCode::BAD_REQUEST, &format!("malformed JSON-RPC response: {reason}"))
        }
        Err(invalid) => rpc_error(StatusCode::BAD_REQUEST, invalid.id, ErrorObject::invalid_request(invalid.reason)),
    }
}

/// A client's answer, parsed within the router's budget.
fn answer(shared: &Shared, result: &RawValue) -> Result<Value, ErrorObject> {
    let budget = shared.router.inner.config.value_budget;
    bounded::parse(result.get(), budget)
        .map_err(|e| ErrorObject::invalid_request(format!("the client's response is {e}")))
}

/// A client's answer to a server request: resolved here, or, when another node of the cluster
/// sent the request, passed to it.
fn deliver(shared: &Shared, session: &HttpSession, id: RequestId, outcome: Result<Value, ErrorObject>) {
    if session.session.is_pending(&id) {
        session.session.resolve(&id, outcome);
    } else if let Some(SharedSessions(directory)) = &shared.config.directory {
        directory.publish(ClusterEvent::Response { session: session.id.to_string(), id, outcome });
    }
}

/// A response in a batch: it resolves the session's request it names.
fn resolve(shared: &Shared, session: &HttpSession, response: MessageKind<'_>) {
    match response {
        MessageKind::Result { id, result } => {
            deliver(shared, session, id, answer(shared, result));
        }
        MessageKind::Error { id: Some(id), error } => {
            deliver(shared, session, id, Err(error));
        }
        MessageKind::InvalidResponse { id: Some(id), reason } => {
            let error = ErrorObject::invalid_request(format!("the client's response is malformed: {reason}"));
            session.session.resolve(&id, Err(error));
        }
        _ => {}
    }
}

fn accepted() -> Response<Body> {
    let mut r = Response::new(sse::empty());
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

fn cancel(shared: &Shared, session: Option<&HttpSession>, params: Option<&RawValue>) {
    let Some(session) = session else { return };
    let Some(Ok(p)) = params.map(|p| serde_json::from_str::<CancelledParams>(p.get())) else { return };
    if let Some(id) = p.request_id {
        let here = session.inflight.lock().unwrap().cancel(&id);
        // Not running here: another node of the cluster may be running it.
        if let (false, Some(SharedSessions(directory))) = (here, &shared.config.directory) {
            directory.publish(ClusterEvent::Cancel { session: session.id.to_string(), request: id });
        }
    }
}

/// Where a request comes from: its headers, its legacy session, its authenticated caller, its
/// address.
struct RequestParts<'a> {
    headers: &'a HeaderMap,
    session: Option<Arc<HttpSession>>,
    caller: Option<Identity>,
    peer: Option<std::net::IpAddr>,
    /// The same, as telemetry records it.
    #[cfg(feature = "otel")]
    transport: crate::telemetry::Transport,
}

/// How a request came, in telemetry's words: HTTP's version, the client's address, the legacy
/// session, the request's own trace context (its `traceparent` header).
#[cfg(feature = "otel")]
fn traced_transport(parts: &Parts, session: Option<&HttpSession>) -> crate::telemetry::Transport {
    use crate::telemetry::{Carrier, Peer, Transport};
    let peer = parts.extensions.get::<super::PeerAddr>().map(|p| Peer::Socket(p.0));
    let mut transport = Transport::http(Transport::http_version_of(parts.version), peer);
    transport.session = session.map(|s| s.id.clone());
    transport.http_context = Carrier::from_headers(&parts.headers).and_then(|c| c.span_context());
    transport
}

async fn request(
    shared: &Arc<Shared>,
    from: RequestParts<'_>,
    id: RequestId,
    method: &str,
    params: Option<&RawValue>,
    mut raw: RawParams,
) -> Response<Body> {
    // The era is what `_meta` says, as the one reader of the params' head reads it.
    let head = match ParamsHead::read(params) {
        Ok(head) => head,
        // Unreadable params: on a legacy session the error is a JSON-RPC answer, as there.
        Err(e) if from.session.is_some() => return rpc_error(StatusCode::OK, Some(id), e),
        Err(e) => return rpc_error(StatusCode::BAD_REQUEST, Some(id), e),
    };
    let modern = head.is_modern();
    if method == "initialize" && !modern {
        return initialize(shared, id, params, from).await;
    }
    #[cfg(feature = "otel")]
    let RequestParts { headers, session, caller, peer, transport } = from;
    #[cfg(not(feature = "otel"))]
    let RequestParts { headers, session, caller, peer } = from;
    if modern {
        if let Err(e) = check_modern_headers(&shared.router, headers, method, params, &head) {
            return rpc_error(StatusCode::BAD_REQUEST, Some(id), e);
        }
    }
    if let Some(std::borrow::Cow::Borrowed(named)) = head.named(method) {
        raw = raw.with_named(named); // the middleware's `Call::name` is not read again
    }
    let token = CancellationToken::new();
    let (outbox, rx) = Outbox::channel(64);
    let legacy = if modern { None } else { session.as_ref().map(|s| &s.session) };
    let admitted = era::admit_read(method, id.clone(), head.meta, legacy, outbox, token.clone());
    let Admitted { cx, modern } = match admitted {
        Ok(admitted) => admitted,
        // Without a session the request is judged as a 2026-07-28 one: 400 or 404.
        Err(e) if modern || legacy.is_none() => return rpc_error(modern_status(e.code), Some(id), e),
        Err(e) => return rpc_error(StatusCode::OK, Some(id), e),
    };
    let session = if modern { None } else { session };
    let from = RequestParts {
        headers,
        session: session.clone(),
        caller,
        peer,
        #[cfg(feature = "otel")]
        transport,
    };
    attach_caller(&cx, &shared.config, from);
    let ticket = session.as_ref().map(|s| s.inflight.lock().unwrap().insert(id.clone(), token.clone()));
    let router = shared.router.clone();
    let method = method.to_owned();
    let task_token = token.clone();
    let task_id = id.clone();
    let task_session = session.clone();
    let mut work = Box::pin(async move {
        let result = tokio::select! {
            r = router.serve_request(&method, raw, &cx, modern) => Some(r),
            _ = task_token.cancelled() => None,
        };
        if let (Some(s), Some(ticket)) = (&task_session, &ticket) {
            s.inflight.lock().unwrap().finish(ticket);
        }
        result.filter(|_| !task_token.is_cancelled()).map(|r| Answer::of(&task_id, r, modern))
    });
    // Most handlers finish at their first poll: answered here, without a task of their own.
    // One that waits is moved to a task (polled again there, with a real waker), so that its
    // messages can stream while it runs.
    let task = match crate::util::poll_once(&mut work) {
        Ok(Some(answer)) if shared.config.json_only || rx.is_empty() => {
            return match answer {
                Some(answer) => answer.into_response(),
                None => accepted(),
            };
        }
        Ok(Some(answer)) => tokio::spawn(std::future::ready(answer)), // its messages go first
        Ok(None) => tokio::spawn(work),
        // As a panicking task was (a handler's own panic is already an error response).
        Err(_) => return plain(StatusCode::INTERNAL_SERVER_ERROR, "internal error: the request's processing panicked"),
    };
    respond(shared, session, modern, rx, task, token, &id).await
}

/// Gives the request its caller and the account it counts against: the authenticated caller,
/// else the configured header, else its legacy session, else its address (an anonymous caller,
/// who may not list tasks: see [`crate::server::tasks::ANONYMOUS`]).
fn attach_caller(cx: &crate::RequestContext, config: &super::HttpConfig, from: RequestParts<'_>) {
    #[cfg(feature = "otel")]
    let RequestParts { headers, session, caller, peer, transport } = from;
    #[cfg(not(feature = "otel"))]
    let RequestParts { headers, session, caller, peer } = from;
    #[cfg(feature = "otel")]
    cx.set_transport(transport);
    if let Some(identity) = caller {
        cx.insert_extension(identity); // its account is the caller's
        return;
    }
    match (account(config, headers, session.as_deref()), peer) {
        (Some(account), _) => cx.insert_extension(crate::server::tasks::Account(account)),
        // The account string is made only if tasks ask for it (most requests never do).
        (None, Some(ip)) => cx.insert_extension(crate::server::tasks::AnonymousPeer(ip)),
        (None, None) => {}
    }
}

/// The account of an unauthenticated request: the configured header, else its legacy session.
fn account(config: &super::HttpConfig, headers: &HeaderMap, session: Option<&HttpSession>) -> Option<String> {
    if let Some(value) = config.account_header.as_deref().and_then(|name| header(headers, name)) {
        return Some(format!("header:{value}"));
    }
    // A digest, not the id itself: the id lets its holder use the session, and records are kept.
    session.map(|s| {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(s.id.as_bytes());
        format!("session:{}", digest[..12].iter().map(|b| format!("{b:02x}")).collect::<String>())
    })
}

/// A request's response, ready to send.
struct Answer {
    status: StatusCode,
    bytes: Vec<u8>,
    /// Seconds, when a rate limit refused the request.
    retry_after: Option<u64>,
}

impl Answer {
    /// The response to request `id`: a rate limit's refusal is also `429` with `Retry-After`, a
    /// 2026-07-28 error has its HTTP status.
    fn of(id: &RequestId, result: Result<Reply, ErrorObject>, modern: bool) -> Answer {
        let (status, retry_after) = match &result {
            Err(e) if e.code == crate::server::middleware::RATE_LIMITED => {
                let ms = e.data.as_ref().and_then(|d| d["retryAfterMs"].as_u64()).unwrap_or(1000);
                (StatusCode::TOO_MANY_REQUESTS, Some(ms.div_ceil(1000).max(1)))
            }
            Err(e) if modern => (modern_status(e.code), None),
            _ => (StatusCode::OK, None),
        };
        Answer { status, bytes: response_bytes(id, result), retry_after }
    }

    fn into_response(self) -> Response<Body> {
        let mut r = json(self.status, self.bytes);
        if let Some(secs) = self.retry_after {
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        r
    }
}

/// Answers with JSON when the result comes before any other message, else with SSE.
async fn respond(
    shared: &Arc<Shared>,
    session: Option<Arc<HttpSession>>,
    modern: bool,
    rx: OutboxReceiver,
    task: tokio::task::JoinHandle<Option<Answer>>,
    token: CancellationToken,
    request: &RequestId,
) -> Response<Body> {
    // A 2026-07-28 client that closes its connection before the answer (or its stream) began
    // cancels the request: the handler is told, as it is when the stream is closed later.
    let mut disconnect = CancelOnDisconnect(modern.then(|| token.clone()));
    let response = respond_now(shared, session, modern, rx, task, token, request).await;
    disconnect.0 = None;
    response
}

/// Cancels a request when dropped armed: the connection went before the response was ready.
struct CancelOnDisconnect(Option<CancellationToken>);

impl Drop for CancelOnDisconnect {
    fn drop(&mut self) {
        if let Some(token) = self.0.take() {
            token.cancel();
        }
    }
}

async fn respond_now(
    shared: &Arc<Shared>,
    session: Option<Arc<HttpSession>>,
    modern: bool,
    mut rx: OutboxReceiver,
    mut task: tokio::task::JoinHandle<Option<Answer>>,
    token: CancellationToken,
    request: &RequestId,
) -> Response<Body> {
    if shared.config.json_only {
        let drain = async { while rx.recv().await.is_some() {} };
        let result = tokio::select! { r = &mut task => r, _ = drain => (&mut task).await };
        return match result {
            Ok(Some(answer)) => answer.into_response(),
            _ => accepted(),
        };
    }
    let first = tokio::select! {
        biased;
        // `None` (the handler finished and dropped its outbox) disables this branch.
        Some(message) = rx.recv() => Some(message),
        result = &mut task => {
            if let Ok(message) = rx.try_recv() {
                Some(message) // notifications raced the result: stream them first
            } else {
                return match result {
                    Ok(Some(answer)) => answer.into_response(),
                    _ => accepted(),
                };
            }
        }
    };
    let stream = Arc::new(EventStream::answering(request.clone()));
    let mut log = None;
    let prefix = match (&session, &shared.config.directory) {
        // In a cluster the stream's number is unique across nodes, and its events are logged
        // where any node can replay them.
        (Some(s), Some(SharedSessions(directory))) => {
            let n = match random_stream_number() {
                Ok(n) => n,
                Err(no_random) => {
                    return rpc_error(StatusCode::INTERNAL_SERVER_ERROR, Some(request.clone()), no_random.into())
                }
            };
            s.add_stream_numbered(n, stream.clone());
            directory.log_open(&s.id, n, request).await;
            log = Some(StreamLogger { directory: directory.clone(), session: s.id.to_string(), stream: n });
            Some(n.to_string())
        }
        (Some(s), None) => Some(s.add_stream(stream.clone()).to_string()),
        (None, _) => None,
    };
    tokio::spawn(pump(stream.clone(), first, rx, task, log));
    let priming = prefix.as_ref().map(|p| sse::priming(&format!("{p}-0"), shared.config.sse_retry_ms));
    let body = sse::follow(stream, prefix, 0, priming, modern.then_some(token));
    sse_response(body)
}

/// Where a stream's events are copied in a cluster.
struct StreamLogger {
    directory: Arc<dyn super::directory::SessionDirectory>,
    session: String,
    stream: u64,
}

/// A stream number for a cluster: random, so that nodes never pick the same one.
fn random_stream_number() -> Result<u64, crate::util::random::Unavailable> {
    let mut bytes = [0u8; 4];
    crate::util::random::fill(&mut bytes)?;
    Ok(u64::from(u32::from_le_bytes(bytes)) + 1_000_000)
}

/// Moves a request's messages and then its response into its event stream (and its shared
/// log, in a cluster).
async fn pump(
    stream: Arc<EventStream>,
    first: Option<Vec<u8>>,
    mut rx: OutboxReceiver,
    mut task: tokio::task::JoinHandle<Option<Answer>>,
    log: Option<StreamLogger>,
) {
    let push = |message: Vec<u8>| async {
        if message.is_empty() {
            stream.cut(); // the handler asked to close the connection (SSE polling)
        } else {
            if let Some(log) = &log {
                // Logged before it is delivered: what a client may have seen is in the log.
                let seq = stream.next_seq();
                // A text streamed into the message is sent once, here: the log keeps an error.
                let spent = crate::engine::splice::spent(&message);
                let logged = spent.as_deref().unwrap_or(&message);
                log.directory.log_event(&log.session, log.stream, seq, logged).await;
            }
            stream.push(message);
        }
    };
    if let Some(message) = first {
        push(message).await;
    }
    let result = loop {
        tokio::select! {
            biased;
            message = rx.recv() => match message {
                Some(message) => push(message).await,
                None => break (&mut task).await,
            },
            result = &mut task => break result,
        }
    };
    while let Ok(message) = rx.try_recv() {
        push(message).await;
    }
    if let Ok(Some(answer)) = result {
        push(answer.bytes).await;
    }
    if let Some(log) = &log {
        log.directory.log_end(&log.session, log.stream, stream.next_seq() - 1).await;
    }
    stream.finish();
}

pub(crate) fn sse_response(body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

fn unavailable(message: String) -> Response<Body> {
    unavailable_for(None, message)
}

/// 503: the shared store cannot be reached (answering request `id`, if any).
fn unavailable_for(id: Option<RequestId>, message: String) -> Response<Body> {
    let e = ErrorObject::new(STORE_UNAVAILABLE, format!("{message}; try again in a moment"));
    rpc_error(StatusCode::SERVICE_UNAVAILABLE, id, e)
}

/// 404: the legacy session is not (or no longer) known; the client initializes again.
fn session_not_found() -> Response<Body> {
    rpc_error(StatusCode::NOT_FOUND, None, ErrorObject::invalid_request("Session not found: initialize again"))
}

/// The session `id` of `owner`: this node's copy, checked against (or rebuilt from) the shared
/// directory when there is one, in one round trip when the copy is current. `Err` is the
/// response to send when the directory cannot be reached.
async fn find_session(
    shared: &Arc<Shared>,
    id: &str,
    owner: Option<&str>,
) -> Result<Option<Arc<HttpSession>>, Response<Body>> {
    let local = shared.sessions.get(id, owner);
    let Some(SharedSessions(directory)) = &shared.config.directory else { return Ok(local) };
    let Some(rev) = directory.touch(id, shared.config.session_idle).await.map_err(unavailable)? else {
        shared.sessions.forget(id); // ended on another node, or idle everywhere
        return Ok(None);
    };
    if let Some(s) = local.as_ref().filter(|s| s.rev.load(Ordering::Relaxed) == rev) {
        return Ok(Some(s.clone()));
    }
    let Some((rev, record)) = directory.get(id).await.map_err(unavailable)? else {
        shared.sessions.forget(id);
        return Ok(None);
    };
    if record.owner.as_deref() != owner {
        tracing::warn!("refused a request on a session that another caller created");
        return Ok(None);
    }
    let entry = match local {
        Some(entry) => entry,
        None => {
            let (outbox, rx) = Outbox::channel(256);
            let session =
                Session::new(record.version.clone(), record.capabilities.clone(), record.client_info.clone(), outbox);
            session.set_request_id_base(random_id_base().map_err(|e| unavailable(e.to_string()))?);
            let Some(entry) =
                shared.sessions.insert_with_id(id.to_owned(), Arc::new(session), rx, record.owner.clone())
            else {
                return Err(unavailable("too many sessions on this node".into()));
            };
            super::cluster::relay_get_messages(&entry, directory.clone());
            entry
        }
    };
    entry.adopt(rev, record);
    Ok(Some(entry))
}

/// A random start for a session copy's request ids: far apart on every node.
fn random_id_base() -> Result<i64, crate::util::random::Unavailable> {
    let mut bytes = [0u8; 4];
    crate::util::random::fill(&mut bytes)?;
    Ok(i64::from(u32::from_le_bytes(bytes)) << 20)
}

/// Applies `change` to the newest shared record of `session` (read again and re-applied when
/// another node changed the record in between, so neither change is lost), then brings this
/// copy in line with the result.
async fn share_change(
    shared: &Shared,
    session: &HttpSession,
    change: &super::directory::RecordChange,
) -> Result<(), String> {
    let Some(SharedSessions(directory)) = &shared.config.directory else { return Ok(()) };
    for _ in 0..16 {
        let Some((rev, mut record)) = directory.get(&session.id).await? else { return Err("the session ended".into()) };
        change.apply(&mut record);
        if let Some(new) = directory.put_if(&session.id, &record, shared.config.session_idle, rev).await? {
            session.adopt(new, record);
            directory.publish(ClusterEvent::SessionChanged(session.id.to_string()));
            return Ok(());
        }
    }
    Err("the session's record kept changing under this node".into())
}

/// Writes a session's record to the shared directory, if there is one.
async fn save_session(shared: &Shared, session: &HttpSession) -> Result<(), String> {
    let Some(SharedSessions(directory)) = &shared.config.directory else { return Ok(()) };
    let rev = directory.put(&session.id, &session.record(), shared.config.session_idle).await?;
    session.rev.store(rev, Ordering::Relaxed);
    directory.publish(ClusterEvent::SessionChanged(session.id.to_string()));
    Ok(())
}

async fn initialize(
    shared: &Arc<Shared>,
    id: RequestId,
    params: Option<&RawValue>,
    from: RequestParts<'_>,
) -> Response<Body> {
    let caller = from.caller.clone();
    let (outbox, rx) = Outbox::channel(256);
    let extend = |cx: &crate::RequestContext| attach_caller(cx, &shared.config, from);
    let era::Opened { session, result } =
        match era::open_session(&shared.router, id.clone(), params, outbox, extend).await {
            Ok(opened) => opened,
            Err(e) => return rpc_error(StatusCode::OK, Some(id), e),
        };
    let entry = match shared.sessions.insert(session, rx, caller.as_ref().map(Identity::account)) {
        Ok(Some(entry)) => entry,
        Ok(None) => {
            let e = ErrorObject::internal("too many sessions: try again later");
            return rpc_error(StatusCode::SERVICE_UNAVAILABLE, Some(id), e);
        }
        Err(no_random) => return rpc_error(StatusCode::INTERNAL_SERVER_ERROR, Some(id), no_random.into()),
    };
    if let Err(e) = save_session(shared, &entry).await {
        shared.sessions.forget(&entry.id);
        return unavailable_for(Some(id), e);
    }
    if let Some(SharedSessions(directory)) = &shared.config.directory {
        super::cluster::relay_get_messages(&entry, directory.clone());
    }
    let mut r = json(StatusCode::OK, response_bytes(&id, Ok(result.into())));
    if let Ok(v) = HeaderValue::from_str(&entry.id) {
        r.headers_mut().insert(SESSION, v);
    }
    r
}

/// 2026-07-28: the request-metadata headers must be present and match the body, and arguments
/// annotated `x-mcp-header` must be mirrored in `Mcp-Param-*`.
fn check_modern_headers(
    router: &crate::server::Router,
    headers: &HeaderMap,
    method: &str,
    params: Option<&RawValue>,
    head: &ParamsHead<'_>,
) -> Result<(), ErrorObject> {
    check_metadata_headers(headers, method, head)?;
    check_param_headers(router, headers, method, head.name().as_deref(), params)
}

fn check_metadata_headers(headers: &HeaderMap, method: &str, body: &ParamsHead<'_>) -> Result<(), ErrorObject> {
    let mismatch = |what: String| ErrorObject::new(ErrorCode::HEADER_MISMATCH, format!("Header mismatch: {what}"));
    let version = body.version();
    let version = version.as_deref().unwrap_or("");
    match header(headers, "mcp-protocol-version") {
        Some(h) if h == version => {}
        Some(h) => return Err(mismatch(format!("MCP-Protocol-Version header {h:?} does not match body {version:?}"))),
        None => return Err(mismatch("the MCP-Protocol-Version header is required".into())),
    }
    match header(headers, "mcp-method") {
        Some(h) if h == method => {}
        Some(h) => return Err(mismatch(format!("Mcp-Method header {h:?} does not match body method {method:?}"))),
        None => return Err(mismatch("the Mcp-Method header is required".into())),
    }
    let mirrored = match method {
        "tools/call" | "prompts/get" => Some(body.name()),
        "resources/read" => Some(body.uri()),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some(body.task_id()),
        _ => None,
    };
    if let Some(field) = mirrored {
        let expected = field.as_deref().unwrap_or("");
        match header(headers, "mcp-name").map(decode_header_value) {
            Some(Some(h)) if h == expected => {}
            Some(Some(h)) => {
                return Err(mismatch(format!("Mcp-Name header value {h:?} does not match body value {expected:?}")))
            }
            Some(None) => return Err(mismatch("the Mcp-Name header is not valid base64".into())),
            None => return Err(mismatch("the Mcp-Name header is required".into())),
        }
    }
    Ok(())
}

/// `tools/call`: arguments annotated `x-mcp-header` must be mirrored, equal, in `Mcp-Param-*`.
/// Only for a tool that has such arguments are they read, and then only those (no tree).
fn check_param_headers(
    router: &crate::server::Router,
    headers: &HeaderMap,
    method: &str,
    name: Option<&str>,
    params: Option<&RawValue>,
) -> Result<(), ErrorObject> {
    let Some(name) = name.filter(|_| method == "tools/call") else { return Ok(()) };
    let annotated = router.header_params(name);
    if annotated.is_empty() {
        return Ok(());
    }
    let wanted: Vec<&str> = annotated.iter().map(|(arg, _, _)| arg.as_str()).collect();
    let values = picked::arguments(params, &wanted)?;
    let mismatch = |what: String| ErrorObject::new(ErrorCode::HEADER_MISMATCH, format!("Header mismatch: {what}"));
    for ((arg, suffix, kind), value) in annotated.iter().zip(values) {
        let header_name = format!("mcp-param-{}", suffix.to_ascii_lowercase());
        let present = headers.get(&header_name);
        match (value, present) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(mismatch(format!("Mcp-Param-{suffix} is set but {arg} is absent from the body")))
            }
            (Some(_), None) => {
                return Err(mismatch(format!("the Mcp-Param-{suffix} header is required when {arg} is given")))
            }
            (Some(value), Some(raw)) => {
                let raw = raw.to_str().map_err(|_| mismatch(format!("Mcp-Param-{suffix} has invalid characters")))?;
                let decoded = decode_header_value(raw)
                    .ok_or_else(|| mismatch(format!("Mcp-Param-{suffix} is not valid base64")))?;
                if !header_matches(&decoded, value, kind) {
                    return Err(mismatch(format!(
                        "Mcp-Param-{suffix} value {decoded:?} does not match body value {}",
                        picked::shown(value)
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Whether a header's value is the argument `body` (JSON text): a string, a boolean or a number.
fn header_matches(header: &str, body: &RawValue, kind: &str) -> bool {
    let text = body.get();
    match text.as_bytes().first() {
        Some(b'"') => serde_json::from_str::<String>(text).is_ok_and(|s| header == s),
        Some(b't' | b'f') => header == text,
        Some(b'-' | b'0'..=b'9') => {
            let Ok(n) = serde_json::from_str::<serde_json::Number>(text) else { return false };
            if kind == "integer" || kind == "number" {
                header.trim().parse::<f64>().ok().zip(n.as_f64()).is_some_and(|(h, b)| (h - b).abs() < 1e-9)
            } else {
                header == n.to_string()
            }
        }
        _ => false,
    }
}

mod picked {
    //! Some arguments of a `tools/call`, read in place, the others skipped.

    use std::borrow::Cow;
    use std::fmt;

    use mcp_types::ErrorObject;
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
    use serde_json::value::RawValue;

    /// The arguments named in `wanted`, in its order, each as JSON text (`None`: absent or
    /// `null`). `arguments`, or one of the wanted arguments, given twice is refused.
    pub(super) fn arguments<'a>(
        params: Option<&'a RawValue>,
        wanted: &[&str],
    ) -> Result<Vec<Option<&'a RawValue>>, ErrorObject> {
        #[derive(serde::Deserialize)]
        struct Params<'a> {
            #[serde(borrow, default)]
            arguments: Option<&'a RawValue>,
        }
        let refused = |e: serde_json::Error| ErrorObject::invalid_params(format!("invalid params: arguments: {e}"));
        let none = vec![None; wanted.len()];
        let Some(params) = params else { return Ok(none) };
        let Some(arguments) = serde_json::from_str::<Params>(params.get()).map_err(refused)?.arguments else {
            return Ok(none);
        };
        if !arguments.get().starts_with('{') {
            return Ok(none); // not an object: the tool's schema says so
        }
        let mut de = serde_json::Deserializer::from_str(arguments.get());
        Pick { wanted }.deserialize(&mut de).map_err(refused)
    }

    /// A value as an error message shows it: its first 60 characters.
    pub(super) fn shown(value: &RawValue) -> Cow<'_, str> {
        let text = value.get();
        match text.char_indices().nth(60) {
            None => Cow::Borrowed(text),
            Some((cut, _)) => Cow::Owned(format!("{}…", &text[..cut])),
        }
    }

    struct Pick<'w> {
        wanted: &'w [&'w str],
    }

    impl<'de> DeserializeSeed<'de> for Pick<'_> {
        type Value = Vec<Option<&'de RawValue>>;

        fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
            deserializer.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Pick<'_> {
        type Value = Vec<Option<&'de RawValue>>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object of arguments")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = vec![None; self.wanted.len()];
            let mut seen = vec![false; self.wanted.len()];
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                match self.wanted.iter().position(|w| *w == key) {
                    Some(i) if seen[i] => {
                        return Err(serde::de::Error::custom(format_args!("duplicate field `{key}`")))
                    }
                    Some(i) => {
                        seen[i] = true;
                        let value: &'de RawValue = map.next_value()?;
                        found[i] = Some(value).filter(|v| v.get() != "null");
                    }
                    None => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(found)
        }
    }
}

/// Header values that are not plain ASCII travel as `=?base64?...?=`.
fn decode_header_value(value: &str) -> Option<String> {
    use base64::Engine as _;
    match value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) {
        Some(encoded) => {
            base64::engine::general_purpose::STANDARD.decode(encoded).ok().and_then(|b| String::from_utf8(b).ok())
        }
        None => Some(value.to_owned()),
    }
}

/// JSON-RPC batches: 2025-03-26 sessions only.
async fn batch(
    shared: Arc<Shared>,
    session: Option<Arc<HttpSession>>,
    caller: Option<&Identity>,
    body: &[u8],
) -> Response<Body> {
    let allowed = session.as_ref().is_some_and(|s| s.session.version == ProtocolVersion::V2025_03_26);
    let items: Vec<&RawValue> = match serde_json::from_slice(body) {
        Ok(items) => items,
        Err(e) => {
            return rpc_error(StatusCode::BAD_REQUEST, None, ErrorObject::parse_error(format!("Parse error: {e}")))
        }
    };
    let (Some(session), true, false) = (session, allowed, items.is_empty()) else {
        let e =
            ErrorObject::invalid_request("JSON-RPC batches are only allowed in protocol version 2025-03-26 sessions");
        return rpc_error(StatusCode::BAD_REQUEST, None, e);
    };
    let mut answers = Vec::new();
    for item in items {
        let Ok(Ok(kind)) = serde_json::from_str::<Envelope>(item.get()).map(Envelope::kind) else {
            answers.push(
                serde_json::to_value(mcp_types::jsonrpc::JsonRpcError::new(
                    None,
                    ErrorObject::invalid_request("invalid message in batch"),
                ))
                .unwrap_or_default(),
            );
            continue;
        };
        if let MessageKind::Request { id, method, params } = kind {
            let (outbox, _rx) = Outbox::channel(1);
            let admitted =
                era::admit(&method, id.clone(), params, Some(&session.session), outbox, CancellationToken::new());
            if let Ok(a) = &admitted {
                let from = RequestParts {
                    headers: &HeaderMap::new(),
                    session: Some(session.clone()),
                    caller: caller.cloned(),
                    peer: None,
                    #[cfg(feature = "otel")]
                    transport: crate::telemetry::Transport::http("1.1", None),
                };
                attach_caller(&a.cx, &shared.config, from);
            }
            let result = match admitted {
                Ok(a) => shared.router.serve_request(&method, RawParams::copied(params), &a.cx, a.modern).await,
                Err(e) => Err(e),
            };
            answers.push(serde_json::from_slice(&response_bytes(&id, result)).unwrap_or_default());
        } else if let MessageKind::Notification { method, params } = kind {
            if method == "notifications/cancelled" {
                cancel(&shared, Some(&session), params);
            } else if method == "notifications/roots/list_changed" {
                session.session.roots_changed();
            }
        } else {
            resolve(&shared, &session, kind);
        }
    }
    if answers.is_empty() {
        return accepted();
    }
    json(StatusCode::OK, serde_json::to_vec(&answers).unwrap_or_default())
}

/// GET: a legacy session's stream (or the resumption of a cut one); without a session, the
/// 2024-11-05 HTTP+SSE transport.
pub(crate) async fn get(shared: Arc<Shared>, parts: Parts) -> Response<Body> {
    if !security::accepts(&parts.headers, "text/event-stream") {
        return plain(StatusCode::NOT_ACCEPTABLE, "Accept must list text/event-stream");
    }
    let caller = caller(&parts);
    let Some(id) = header(&parts.headers, SESSION) else {
        return super::legacy_sse::open(&shared, caller);
    };
    let session = match find_session(&shared, id, caller.as_ref().map(Identity::account).as_deref()).await {
        Ok(Some(session)) => session,
        Ok(None) => return session_not_found(),
        Err(unavailable) => return unavailable,
    };
    if let Some(last) = header(&parts.headers, "last-event-id") {
        if let Some((stream, seq)) = last.split_once('-').and_then(|(n, s)| Some((n.parse().ok()?, s.parse().ok()?))) {
            if let Some(events) = session.stream(stream) {
                return sse_response(sse::follow(events, Some(stream.to_string()), seq, None, None));
            }
            if let Some(SharedSessions(directory)) = &shared.config.directory {
                return resume_elsewhere(directory.clone(), &session.id, stream, seq);
            }
        }
    }
    let guard = match session.get_rx.clone().try_lock_owned() {
        Ok(guard) => guard,
        // In a cluster the relay to other nodes may hold the queue: it gives it up at once; an
        // open GET stream does not.
        Err(_) if shared.config.directory.is_some() => {
            if let Some(relay) = session.get_wanted.get() {
                relay.notify_one();
            }
            match tokio::time::timeout(GET_HANDOVER, session.get_rx.clone().lock_owned()).await {
                Ok(guard) => guard,
                Err(_) => return plain(StatusCode::CONFLICT, "this session already has an open GET stream"),
            }
        }
        Err(_) => return plain(StatusCode::CONFLICT, "this session already has an open GET stream"),
    };
    session.get_open.store(true, Ordering::Relaxed);
    // List changes and resource updates reach the session while its GET stream is open.
    let remote = shared.config.directory.as_ref().map(|_| shared.remote_changes.subscribe());
    let forwarder = tokio::spawn(forward_changes_from(shared.router.changes(), remote, session.session.clone()));
    let closing = session.clone();
    let on_end = move || {
        forwarder.abort();
        closing.get_open.store(false, Ordering::Relaxed);
    };
    let body = sse::from_queue(guard, on_end, Some(Bytes::from_static(b": stream open\n\n")));
    sse_response(body)
}

/// How long a GET waits for the cluster relay to give its session's queue up.
const GET_HANDOVER: std::time::Duration = std::time::Duration::from_millis(500);

/// How often a stream produced on another node is read from the shared log.
const FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// A stream another node produces (or produced): its events after `seq` from the shared log,
/// then its new ones as they are logged, until it ends; if its producer died first, the
/// request gets an error saying so, instead of a stream that never ends.
fn resume_elsewhere(
    directory: Arc<dyn super::directory::SessionDirectory>,
    session: &str,
    stream: u64,
    seq: u64,
) -> Response<Body> {
    let events = Arc::new(EventStream::default());
    let gone = CancellationToken::new();
    let (feed, session, watch) = (events.clone(), session.to_owned(), gone.clone());
    tokio::spawn(async move {
        let mut after = seq;
        let mut missing = 0;
        loop {
            let log = match directory.log_read(&session, stream, after).await {
                Ok(log) => log,
                Err(e) => {
                    tracing::warn!("resuming a stream: {e}");
                    feed.finish();
                    return;
                }
            };
            if let Some(request) = &log.request {
                feed.set_request(request.clone()); // for the error, should this reader lose events
            }
            if log.gap {
                // Some events are not in the shared log: replaying the rest would hide that.
                let error = ErrorObject::new(
                    super::directory::STORE_UNAVAILABLE,
                    "this response stream cannot be resumed whole: some of its events are no longer kept (the \
                     last 256 are) or never reached the shared store; call again",
                );
                let id = log.request.unwrap_or(RequestId::Number(0));
                feed.push_at(after + 1, response_bytes(&id, Err(error)));
                break;
            }
            for (n, data) in log.events {
                after = after.max(n);
                feed.push_at(n, data);
            }
            if log.ended {
                break;
            }
            if log.request.is_none() {
                missing += 1; // not logged (yet): give the producer a moment
                if missing > 20 {
                    break;
                }
            } else if !log.producer_alive {
                let error = ErrorObject::internal(
                    "the server instance running this request stopped before it finished; call again",
                );
                let id = log.request.unwrap_or(RequestId::Number(0));
                feed.push_at(after + 1, response_bytes(&id, Err(error)));
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep(FOLLOW_EVERY) => {}
                _ = watch.cancelled() => return,
            }
        }
        feed.finish();
    });
    sse_response(sse::follow(events, Some(stream.to_string()), seq, None, Some(gone)))
}

/// DELETE: ends a legacy session (on every node, with a shared directory).
pub(crate) async fn delete(shared: Arc<Shared>, parts: Parts) -> Response<Body> {
    let owner = caller(&parts).map(|c| c.account());
    let ended = match (header(&parts.headers, SESSION), &shared.config.directory) {
        (Some(id), Some(SharedSessions(directory))) => match find_session(&shared, id, owner.as_deref()).await {
            Ok(Some(_)) => {
                shared.sessions.remove(id, owner.as_deref());
                match directory.remove(id).await {
                    Ok(_) => {
                        directory.publish(ClusterEvent::Ended(id.to_owned()));
                        true
                    }
                    Err(e) => return unavailable(e),
                }
            }
            Ok(None) => false,
            Err(unavailable) => return unavailable,
        },
        (Some(id), None) => shared.sessions.remove(id, owner.as_deref()),
        (None, _) => false,
    };
    match header(&parts.headers, SESSION) {
        Some(_) if ended => {
            let mut r = Response::new(sse::empty());
            *r.status_mut() = StatusCode::OK;
            r
        }
        Some(_) => rpc_error(StatusCode::NOT_FOUND, None, ErrorObject::invalid_request("Session not found")),
        None => plain(StatusCode::METHOD_NOT_ALLOWED, "DELETE needs an Mcp-Session-Id"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        serde_json::from_str(text).unwrap()
    }

    /// The annotated arguments are read in place, whatever the others hold.
    #[test]
    fn picked_arguments_are_read_in_place() {
        let params = raw(r#"{"name":"t","arguments":{"big":[[[1]]],"region":"eu","n":null,"id":7}}"#);
        let got = picked::arguments(Some(&params), &["region", "n", "id", "missing"]).unwrap();
        let texts: Vec<Option<&str>> = got.iter().map(|v| v.map(RawValue::get)).collect();
        assert_eq!(texts, vec![Some("\"eu\""), None, Some("7"), None]);
        assert!(header_matches("eu", got[0].unwrap(), "string"));
        assert!(header_matches("7.0", got[2].unwrap(), "integer"));
        assert!(!header_matches("7.0", got[2].unwrap(), "string"));
        for twice in
            [r#"{"arguments":{"region":"eu","region":"us"}}"#, r#"{"arguments":{"region":null,"region":"us"}}"#]
        {
            let e = picked::arguments(Some(&raw(twice)), &["region"]).unwrap_err();
            assert!(e.message.contains("duplicate field `region`"), "{}", e.message);
        }
        assert!(picked::arguments(Some(&raw(r#"{"arguments":{},"arguments":{}}"#)), &["region"]).is_err());
        assert!(picked::arguments(Some(&raw(r#"{"arguments":[1]}"#)), &["a"]).unwrap()[0].is_none());
        let long = raw(&format!("[{}]", vec!["1"; 100].join(",")));
        assert_eq!(picked::shown(&long).chars().count(), 61);
    }
}
