//! DELETE on the MCP endpoint: ends a legacy session (on every node, with a shared directory).

use std::sync::Arc;

use http::request::Parts;
use http::{Response, StatusCode};
use mcp_types::ErrorObject;

use super::directory::ClusterEvent;
use super::headers::{header, SESSION};
use super::lookup::{find_session, unavailable};
use super::post::caller;
use super::{plain, rpc_error, sse, Body, Shared, SharedSessions};

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
