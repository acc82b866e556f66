//! JSON-RPC batches, which only 2025-03-26 sessions may send: each request run in turn, each
//! notification and answer delivered, the responses returned as one JSON array.

use std::sync::Arc;

use http::{HeaderMap, Response, StatusCode};
use mcp_types::jsonrpc::{Envelope, MessageKind};
use mcp_types::version::ProtocolVersion;
use mcp_types::ErrorObject;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::post::{attach_caller, cancel, resolve, RequestParts};
use super::respond::accepted;
use super::sessions::HttpSession;
use super::{json, rpc_error, Body, Shared};
use crate::engine::outbox::Outbox;
use crate::engine::raw::RawParams;
use crate::server::connection::response_bytes;
use crate::server::era;
use crate::server::identity::Identity;

/// JSON-RPC batches: 2025-03-26 sessions only. `parts` is the HTTP request's head (each item's
/// span is of that request).
#[cfg_attr(not(feature = "otel"), allow(unused_variables))]
pub(super) async fn batch(
    shared: Arc<Shared>,
    session: Option<Arc<HttpSession>>,
    caller: Option<&Identity>,
    body: &[u8],
    parts: &http::request::Parts,
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
            let mut admitted =
                era::admit(&method, id.clone(), params, Some(&session.session), outbox, CancellationToken::new());
            if let Ok(a) = &mut admitted {
                let from = RequestParts {
                    headers: &HeaderMap::new(),
                    session: Some(session.clone()),
                    caller: caller.cloned(),
                    peer: None,
                    #[cfg(feature = "otel")]
                    http: Some(parts),
                };
                attach_caller(&mut a.cx, &shared.config, from);
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
