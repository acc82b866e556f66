//! A request's legacy session: `initialize` opens one (and, in a cluster, writes its record to the
//! shared directory); a request naming `Mcp-Session-Id` finds this node's copy, checked against
//! (or rebuilt from) the shared record; a change a request made to the session (its log level, its
//! subscriptions) is written back to the record. Also the responses when a session is unknown
//! (404) or the shared store cannot be reached (503).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use http::{HeaderValue, Response, StatusCode};
use mcp_types::{ErrorObject, RequestId};
use serde_json::value::RawValue;

use super::directory::{ClusterEvent, STORE_UNAVAILABLE};
use super::headers::SESSION;
use super::post::{attach_caller, RequestParts};
use super::sessions::HttpSession;
use super::{json, rpc_error, Body, Shared, SharedSessions};
use crate::engine::outbox::Outbox;
use crate::engine::session::Session;
use crate::server::connection::response_bytes;
use crate::server::era;
use crate::server::identity::Identity;

pub(super) fn unavailable(message: String) -> Response<Body> {
    unavailable_for(None, message)
}

/// 503: the shared store cannot be reached (answering request `id`, if any).
fn unavailable_for(id: Option<RequestId>, message: String) -> Response<Body> {
    let e = ErrorObject::new(STORE_UNAVAILABLE, format!("{message}; try again in a moment"));
    rpc_error(StatusCode::SERVICE_UNAVAILABLE, id, e)
}

/// 404: the legacy session is not (or no longer) known; the client initializes again.
pub(super) fn session_not_found() -> Response<Body> {
    rpc_error(StatusCode::NOT_FOUND, None, ErrorObject::invalid_request("Session not found: initialize again"))
}

/// The session `id` of `owner`: this node's copy, checked against (or rebuilt from) the shared
/// directory when there is one, in one round trip when the copy is current. `Err` is the
/// response to send when the directory cannot be reached.
pub(super) async fn find_session(
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
pub(super) async fn share_change(
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

pub(super) async fn initialize(
    shared: &Arc<Shared>,
    id: RequestId,
    params: Option<&RawValue>,
    from: RequestParts<'_>,
) -> Response<Body> {
    let caller = from.caller.clone();
    let (outbox, rx) = Outbox::channel(256);
    let extend = |cx: &mut crate::RequestContext| attach_caller(cx, &shared.config, from);
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
