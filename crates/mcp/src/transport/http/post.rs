//! POST on the MCP endpoint: one JSON-RPC message read (a batch goes to [`super::batch`]), its
//! session found, and a request run: the era from its params' head, its caller and account
//! attached, the handler polled once here and moved to a task only if it waits; the answer then
//! goes out as [`super::respond`] says. Notifications, answers and cancellations from the client
//! are delivered to the session (or, in a cluster, to the node that waits for them).

use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderMap, Response, StatusCode};
use mcp_types::jsonrpc::{Envelope, MessageKind};
use mcp_types::utilities::CancelledParams;
use mcp_types::version::ProtocolVersion;
use mcp_types::{ErrorObject, RequestId};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::batch::batch;
use super::directory::ClusterEvent;
use super::headers::{check_modern_headers, header, SESSION};
use super::lookup::{find_session, initialize, session_not_found, share_change};
use super::respond::{accepted, respond, Answer};
use super::sessions::HttpSession;
use super::{modern_status, plain, rpc_error, security, Body, Shared, SharedSessions};
use crate::engine::outbox::Outbox;
use crate::engine::raw::RawParams;
use crate::server::bounded;
use crate::server::era::{self, Admitted};
use crate::server::head::ParamsHead;
use crate::server::identity::Identity;

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
        return batch(shared, session, caller.as_ref(), &body, &parts).await;
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
            let request_parts = RequestParts {
                headers: &parts.headers,
                session,
                caller,
                peer,
                #[cfg(feature = "otel")]
                http: Some(&parts),
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
                let transport = traced_transport(Some(&parts), session.as_deref());
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
pub(super) fn resolve(shared: &Shared, session: &HttpSession, response: MessageKind<'_>) {
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

pub(super) fn cancel(shared: &Shared, session: Option<&HttpSession>, params: Option<&RawValue>) {
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
pub(super) struct RequestParts<'a> {
    pub(super) headers: &'a HeaderMap,
    pub(super) session: Option<Arc<HttpSession>>,
    pub(super) caller: Option<Identity>,
    pub(super) peer: Option<std::net::IpAddr>,
    /// The HTTP request itself, which telemetry describes the transport from (a reference, not
    /// that description: it is made where it is kept, not moved with the request's handling).
    #[cfg(feature = "otel")]
    pub(super) http: Option<&'a Parts>,
}

/// How a request came, in telemetry's words: HTTP's version, the client's address, the legacy
/// session, the request's own trace context (its `traceparent` header); without the request,
/// HTTP/1.1 and the legacy session only.
#[cfg(feature = "otel")]
fn traced_transport(parts: Option<&Parts>, session: Option<&HttpSession>) -> crate::telemetry::Transport {
    use crate::telemetry::{Carrier, Peer, Transport};
    let mut transport = match parts {
        Some(parts) => {
            let peer = parts.extensions.get::<super::PeerAddr>().map(|p| Peer::Socket(p.0));
            let mut transport = Transport::http(Transport::http_version_of(parts.version), peer);
            transport.http_context = Carrier::from_headers(&parts.headers).and_then(|c| c.span_context());
            transport
        }
        None => Transport::http("1.1", None),
    };
    transport.session = session.map(|s| s.id.clone());
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
    let RequestParts { headers, session, caller, peer, http } = from;
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
    let Admitted { mut cx, modern } = match admitted {
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
        http,
    };
    attach_caller(&mut cx, &shared.config, from);
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
pub(super) fn attach_caller(cx: &mut crate::RequestContext, config: &super::HttpConfig, from: RequestParts<'_>) {
    #[cfg(feature = "otel")]
    let RequestParts { headers, session, caller, peer, http } = from;
    #[cfg(not(feature = "otel"))]
    let RequestParts { headers, session, caller, peer } = from;
    #[cfg(feature = "otel")]
    cx.set_transport(traced_transport(http, session.as_deref()));
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
