//! A request's answer on its way out: JSON when the result comes before any other message, else
//! an SSE stream (numbered for resumption in a legacy session, logged where every node of a
//! cluster can replay it) that carries the request's messages and then its result; a 2026-07-28
//! client that goes away before the answer cancels the request. Also the plain responses several
//! handlers send (`202 Accepted`, an SSE response's headers).

use std::sync::Arc;

use http::{header, HeaderValue, Response, StatusCode};
use mcp_types::{ErrorObject, RequestId};
use tokio_util::sync::CancellationToken;

use super::events::EventStream;
use super::sessions::HttpSession;
use super::{json, modern_status, rpc_error, sse, Body, Shared, SharedSessions};
use crate::engine::outbox::OutboxReceiver;
use crate::server::connection::response_bytes;
use crate::server::reply::Reply;

pub(super) fn accepted() -> Response<Body> {
    let mut r = Response::new(sse::empty());
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

/// A request's response, ready to send.
pub(super) struct Answer {
    status: StatusCode,
    bytes: Vec<u8>,
    /// Seconds, when a rate limit refused the request.
    retry_after: Option<u64>,
}

impl Answer {
    /// The response to request `id`: a rate limit's refusal is also `429` with `Retry-After`, a
    /// 2026-07-28 error has its HTTP status.
    pub(super) fn of(id: &RequestId, result: Result<Reply, ErrorObject>, modern: bool) -> Answer {
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

    pub(super) fn into_response(self) -> Response<Body> {
        let mut r = json(self.status, self.bytes);
        if let Some(secs) = self.retry_after {
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        r
    }
}

/// Answers with JSON when the result comes before any other message, else with SSE.
pub(super) async fn respond(
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
