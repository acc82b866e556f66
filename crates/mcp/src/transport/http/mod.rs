//! Streamable HTTP, every era on one endpoint, as a [`tower_service::Service`] over
//! `http::Request` (so it mounts in axum or bare hyper), plus [`serve`] to run it on an address.
//!
//! - 2026-07-28: stateless POST; headers checked against the body; a JSON answer, or an SSE
//!   stream when the request emits notifications first; closing that stream cancels the request.
//! - 2025-03-26 to 2025-11-25: `initialize` opens a session (`Mcp-Session-Id`); POST answers JSON
//!   or SSE (with a priming event and `retry:`; a cut stream resumes with `Last-Event-ID`); GET
//!   opens the session's stream; DELETE ends it; an unknown session is 404.
//! - 2024-11-05: GET without a session opens the old HTTP+SSE transport (`endpoint` event, then
//!   messages POSTed to `?sessionId=`).
//!
//! Safe by default: Host and Origin checked on loopback, bounded bodies, a bounded session table
//! with an idle reaper.

mod batch;
mod cluster;
mod delete;
pub mod directory;
mod events;
mod get;
mod headers;
mod legacy_sse;
mod listen;
mod lookup;
mod post;
mod respond;
mod security;
mod sessions;
mod sse;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use mcp_types::jsonrpc::JsonRpcError;
use mcp_types::{ErrorCode, ErrorObject};

use crate::server::Router;
pub use listen::{
    library_metrics, serve, serve_listener, serve_service, serve_tls_listener, serve_with_config, PeerAddr,
    WithSideRoutes,
};
use sessions::SessionTable;
pub use sse::Body;

/// Settings of the HTTP transport.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The endpoint path (default `/mcp`).
    pub path: String,
    /// Accept only loopback `Host` and `Origin` values (on by default when bound to loopback).
    pub loopback_only: bool,
    /// Extra allowed `Host` values (`host` or `host:port`; `*` for any).
    pub allowed_hosts: Vec<String>,
    /// Extra allowed `Origin` values (`scheme://host:port`; `*` for any).
    pub allowed_origins: Vec<String>,
    /// Behind a reverse proxy: take the host from `X-Forwarded-Host`.
    pub trust_proxy: bool,
    /// The largest request body, in bytes (default 4 MiB).
    pub max_body: usize,
    /// The most live legacy sessions (default 10,000).
    pub max_sessions: usize,
    /// Sessions idle this long are ended (default 10 minutes).
    pub session_idle: Duration,
    /// Never stream: every request gets one JSON response (notifications are dropped).
    pub json_only: bool,
    /// `retry:` sent with priming events, in milliseconds.
    pub sse_retry_ms: u64,
    /// The request header naming the account tasks count against (see [`crate::server::tasks::Account`]).
    pub account_header: Option<String>,
    /// Serve HTTPS with this certificate chain and key (PEM files, reloaded when they change).
    pub tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    /// Require OAuth access tokens (see [`crate::auth`]); its resource defaults to the URL served.
    #[cfg(feature = "auth")]
    pub auth: Option<crate::auth::ResourceServer>,
    /// Legacy sessions shared with other nodes (see [`directory`]); `None`: this node's alone.
    pub directory: Option<SharedSessions>,
    /// Plain `GET` pages beside the endpoint (`/healthz`, `/metrics`), answered after the Host
    /// and Origin checks but before any authorization: they must tell nothing a caller without
    /// a token may not know.
    pub side_routes: Option<SideRoutes>,
    /// Serve the side pages on this address of their own instead (with `/healthz` and a
    /// `/metrics` of the library's where [`HttpConfig::side_routes`] has none): a port the
    /// world does not reach, for a monitoring system that does.
    pub metrics_addr: Option<String>,
}

/// What a side route answers: the HTTP status code, the content type and the body.
pub type SidePage = (u16, &'static str, String);

/// The pages [`HttpConfig::side_routes`] serves: given the path of a `GET`, its page, or `None`
/// for a path that is not one of them.
#[derive(Clone)]
pub struct SideRoutes(pub Arc<SidePages>);

/// The function behind [`SideRoutes`]: a path, its page.
pub type SidePages = dyn Fn(&str) -> Option<SidePage> + Send + Sync;

impl std::fmt::Debug for SideRoutes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SideRoutes")
    }
}

/// A [`directory::SessionDirectory`] shared by the nodes of a cluster.
#[derive(Clone)]
pub struct SharedSessions(pub Arc<dyn directory::SessionDirectory>);

impl std::fmt::Debug for SharedSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedSessions")
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: "/mcp".into(),
            loopback_only: true,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            trust_proxy: false,
            max_body: 4 * 1024 * 1024,
            max_sessions: 10_000,
            session_idle: Duration::from_secs(600),
            json_only: false,
            sse_retry_ms: 1000,
            account_header: None,
            tls: None,
            #[cfg(feature = "auth")]
            auth: None,
            directory: None,
            side_routes: None,
            metrics_addr: None,
        }
    }
}

/// The MCP endpoint as a service.
#[derive(Clone)]
pub struct McpService {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub router: Router,
    pub config: HttpConfig,
    pub sessions: Arc<SessionTable>,
    pub old_sse: legacy_sse::Table,
    /// Changes announced on other nodes of the cluster (with a shared directory).
    pub remote_changes: tokio::sync::broadcast::Sender<crate::server::Change>,
}

impl McpService {
    /// A service for `router`; call from within a tokio runtime (it starts the session reaper).
    pub fn new(router: Router, config: HttpConfig) -> Self {
        let sessions = Arc::new(SessionTable::new(config.max_sessions, config.session_idle));
        sessions.spawn_reaper();
        let old_sse = legacy_sse::Table::new(config.max_sessions);
        let (remote_changes, _) = tokio::sync::broadcast::channel(256);
        let shared = Arc::new(Shared { router, config, sessions, old_sse, remote_changes });
        if let Some(SharedSessions(directory)) = &shared.config.directory {
            tokio::spawn(cluster::relay(Arc::downgrade(&shared), directory.clone()));
        }
        McpService { shared }
    }

    /// How many legacy sessions are live.
    pub fn session_count(&self) -> usize {
        self.shared.sessions.len()
    }

    /// Handles one request.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<Body>
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let shared = self.shared.clone();
        if request.uri().path() != shared.config.path && request.uri().path() != "/sse" {
            return plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is elsewhere");
        }
        if let Err(refusal) = security::check_host_and_origin(&shared.config, request.headers()) {
            return rpc_error(refusal.status, None, ErrorObject::invalid_request(refusal.message));
        }
        // `/sse` is the 2024-11-05 transport's own endpoint: its event stream, and the messages
        // POSTed with a `sessionId`; a Streamable HTTP POST there is refused, so a client that
        // tries Streamable HTTP first falls back to the old transport.
        let old_transport_post =
            request.uri().query().is_some_and(|q| q.starts_with("sessionId=")) || request.method() != Method::POST;
        if request.uri().path() == "/sse" && !old_transport_post {
            let mut r =
                plain(StatusCode::METHOD_NOT_ALLOWED, "this is the HTTP+SSE endpoint: GET it for the event stream");
            r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET"));
            return r;
        }
        match *request.method() {
            Method::POST => {
                let (parts, body) = request.into_parts();
                match read_body(body, shared.config.max_body, content_length(&parts.headers)).await {
                    Ok(bytes) => post::handle(shared, parts, bytes).await,
                    Err(response) => response,
                }
            }
            Method::GET => get::get(shared, request.into_parts().0).await,
            Method::DELETE => delete::delete(shared, request.into_parts().0).await,
            _ => {
                let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "use POST, GET or DELETE");
                r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
                r
            }
        }
    }
}

impl<B> tower_service::Service<Request<B>> for McpService
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let service = self.clone();
        Box::pin(async move { Ok(service.handle(request).await) })
    }
}

async fn read_body<B>(body: B, max: usize, length: Option<usize>) -> Result<Bytes, Response<Body>>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match crate::net::body::read_limited(body, max, length).await {
        Ok(bytes) => Ok(bytes),
        Err(crate::net::body::ReadError::TooLarge) => Err(rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            ErrorObject::invalid_request(format!("the request body exceeds {max} bytes")),
        )),
        Err(crate::net::body::ReadError::Failed(e)) => {
            Err(plain(StatusCode::BAD_REQUEST, &format!("could not read the request body: {e}")))
        }
    }
}

/// The `Content-Length` a request declares, if it is a number.
pub(crate) fn content_length(headers: &http::HeaderMap) -> Option<usize> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

pub(crate) fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(sse::full(text.to_owned()));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

pub(crate) fn json(status: StatusCode, bytes: Vec<u8>) -> Response<Body> {
    let body = match crate::engine::splice::expand(bytes) {
        crate::engine::splice::Expanded::Whole(bytes) => sse::full(bytes),
        crate::engine::splice::Expanded::Streamed(pieces) => sse::pieces(pieces),
    };
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

pub(crate) fn rpc_error(status: StatusCode, id: Option<mcp_types::RequestId>, error: ErrorObject) -> Response<Body> {
    json(status, serde_json::to_vec(&JsonRpcError::new(id, error)).unwrap_or_default())
}

/// The HTTP status of a 2026-07-28 admission error.
pub(crate) fn modern_status(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        ErrorCode::INTERNAL_ERROR => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    }
}
