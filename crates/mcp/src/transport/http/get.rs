//! GET on the MCP endpoint: a legacy session's stream of server messages (held by one GET at a
//! time; in a cluster handed over by the relay), or the resumption of a cut response stream with
//! `Last-Event-ID` (from this node's copy, or followed in the shared log when another node
//! produces it); without a session, the 2024-11-05 HTTP+SSE transport.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{Response, StatusCode};
use mcp_types::{ErrorObject, RequestId};
use tokio_util::sync::CancellationToken;

use super::events::EventStream;
use super::headers::{header, SESSION};
use super::lookup::{find_session, session_not_found};
use super::post::caller;
use super::respond::sse_response;
use super::{plain, security, sse, Body, Shared, SharedSessions};
use crate::server::connection::{forward_changes_from, response_bytes};
use crate::server::identity::Identity;

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
    let forwarder =
        tokio::spawn(forward_changes_from(shared.router.lists().changes(), remote, session.session.clone()));
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
