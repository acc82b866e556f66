//! Running the transport: binding an address (plain or TLS, behind the resource server when the
//! router asks for tokens), the side pages beside `/mcp` (`/healthz`, `/metrics`), and serving
//! each connection with the caller's address attached.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use mcp_types::ErrorObject;

use super::{plain, rpc_error, security, sse, Body, HttpConfig, McpService, SidePage, SideRoutes};
use crate::server::Router;

/// Serves `router` over Streamable HTTP at `addr` (path `/mcp`) until the process ends.
pub async fn serve(router: Router, addr: &str) -> std::io::Result<()> {
    serve_with_config(router, addr, HttpConfig::default()).await
}

/// [`serve`] with settings; Host and Origin are checked when `addr` is a loopback address.
pub async fn serve_with_config(router: Router, addr: &str, config: HttpConfig) -> std::io::Result<()> {
    crate::engine::memory::tune_for_large_messages();
    let tls = tls_acceptor(&config)?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let mut config = HttpConfig { loopback_only: local.ip().is_loopback(), ..config };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!("{scheme}://{local}{}", config.path);
    tracing::info!("serving MCP on {url}");
    eprintln!("serving MCP on {url}");
    #[cfg(feature = "auth")]
    if let Some(auth) = config.auth.take() {
        return serve_protected(router, listener, config, auth, &url, tls).await;
    }
    let service = McpService::new(router, config.clone());
    let routes = side_routes(&mut config, &service).await?;
    serve_service(listener, WithSideRoutes::new(service, routes, &config), tls).await
}

/// The side pages to serve beside the endpoint: those of `config`, unless `--metrics-addr` asks
/// for them elsewhere, in which case they are served there (with the library's own `/healthz` and
/// `/metrics` where the config has none) and none beside the endpoint.
async fn side_routes(config: &mut HttpConfig, service: &McpService) -> std::io::Result<Option<SideRoutes>> {
    let Some(addr) = config.metrics_addr.take() else { return Ok(config.side_routes.clone()) };
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("--metrics-addr {addr}: {e}")))?;
    let local = listener.local_addr()?;
    eprintln!("serving /healthz and /metrics on http://{local}");
    let own = HttpConfig { loopback_only: local.ip().is_loopback(), ..config.clone() };
    let pages = config.side_routes.take();
    let sessions = service.shared.sessions.clone();
    let routes = SideRoutes(Arc::new(move |path: &str| {
        pages.as_ref().and_then(|pages| (pages.0)(path)).or_else(|| library_page(path, sessions.len()))
    }));
    let only = WithSideRoutes::new(NotFound, Some(routes), &own);
    tokio::spawn(async move {
        if let Err(e) = serve_service(listener, only, None).await {
            tracing::warn!("the metrics address stopped: {e}");
        }
    });
    Ok(None)
}

/// The library's own side pages: `/healthz`, and `/metrics` in the Prometheus text format.
fn library_page(path: &str, sessions: usize) -> Option<SidePage> {
    match path {
        "/healthz" => Some((200, "text/plain; charset=utf-8", "ok\n".into())),
        "/metrics" => Some((200, "text/plain; version=0.0.4; charset=utf-8", library_metrics(sessions))),
        _ => None,
    }
}

/// The library's metrics: the process's counters ([`crate::server::counters`]), live legacy
/// sessions, and with telemetry the conventions' histograms.
pub fn library_metrics(sessions: usize) -> String {
    let mut page = crate::server::counters::prometheus();
    page.push_str(&format!(
        "# HELP mcp_http_sessions Live legacy sessions (protocol versions up to 2025-11-25).\n\
         # TYPE mcp_http_sessions gauge\nmcp_http_sessions {sessions}\n"
    ));
    // The MCP conventions' histograms (`mcp_server_operation_duration_seconds`...).
    #[cfg(feature = "otel")]
    page.push_str(&crate::telemetry::metrics::prometheus());
    page
}

/// Answers 404: behind the side pages of a metrics address, nothing else is served.
#[derive(Clone, Copy)]
struct NotFound;

impl<B> tower_service::Service<Request<B>> for NotFound {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _request: Request<B>) -> Self::Future {
        std::future::ready(Ok(plain(StatusCode::NOT_FOUND, "not found: this address serves /healthz and /metrics")))
    }
}

/// A service with [`SideRoutes`] answered in front of it, once the request passed the Host and
/// Origin checks of `config` (DNS rebinding: a page of another site, its name pointed at
/// 127.0.0.1, must not read them any more than the endpoint).
#[derive(Clone)]
pub struct WithSideRoutes<S> {
    inner: S,
    routes: Option<SideRoutes>,
    config: Arc<HttpConfig>,
}

impl<S> WithSideRoutes<S> {
    /// `inner`, with `routes` (if any) answered first, to requests `config` lets through.
    pub fn new(inner: S, routes: Option<SideRoutes>, config: &HttpConfig) -> Self {
        WithSideRoutes { inner, routes, config: Arc::new(config.clone()) }
    }
}

impl<S, B> tower_service::Service<Request<B>> for WithSideRoutes<S>
where
    S: tower_service::Service<Request<B>, Response = Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if request.method() == Method::GET && self.routes.is_some() {
            if let Err(refusal) = security::check_host_and_origin(&self.config, request.headers()) {
                let response = rpc_error(refusal.status, None, ErrorObject::invalid_request(refusal.message));
                return Box::pin(async move { Ok(response) });
            }
            if let Some(page) = self.routes.as_ref().and_then(|routes| (routes.0)(request.uri().path())) {
                let (status, content_type, body) = page;
                let mut response = Response::new(sse::full(body));
                *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
                return Box::pin(async move { Ok(response) });
            }
        }
        Box::pin(self.inner.call(request))
    }
}

/// Serves `router` behind the resource server `auth`, whose resource defaults to `url`.
#[cfg(feature = "auth")]
async fn serve_protected(
    router: Router,
    listener: tokio::net::TcpListener,
    config: HttpConfig,
    auth: crate::auth::ResourceServer,
    url: &str,
    tls: Option<crate::net::TlsAcceptor>,
) -> std::io::Result<()> {
    if auth.resource_uri().is_none() && listener.local_addr()?.ip().is_unspecified() {
        eprintln!("warning: the resource URI is taken from {url}; give the public one with --auth-resource");
    }
    let auth = auth.or_resource(url);
    eprintln!(
        "protected resource {} (metadata at its /.well-known/oauth-protected-resource)",
        auth.resource_uri().unwrap_or_default()
    );
    let layer = auth.layer(&router).max_body(config.max_body);
    let mut config = config;
    let endpoint = McpService::new(router, config.clone());
    let routes = side_routes(&mut config, &endpoint).await?;
    let service = tower_layer::Layer::layer(&layer, endpoint);
    serve_service(listener, WithSideRoutes::new(service, routes, &config), tls).await
}

/// Serves `service` on an already bound listener.
pub async fn serve_listener(listener: tokio::net::TcpListener, service: McpService) -> std::io::Result<()> {
    serve_service(listener, service, None).await
}

/// Serves `service` on a bound listener, over TLS when an acceptor is given.
pub async fn serve_tls_listener(
    listener: tokio::net::TcpListener,
    service: McpService,
    tls: Option<crate::net::TlsAcceptor>,
) -> std::io::Result<()> {
    serve_service(listener, service, tls).await
}

/// Serves any HTTP service (the MCP endpoint behind layers, such as
/// [`AuthLayer`](crate::auth::AuthLayer)) on a bound listener, over TLS when an acceptor is given.
pub async fn serve_service<S>(
    listener: tokio::net::TcpListener,
    service: S,
    tls: Option<crate::net::TlsAcceptor>,
) -> std::io::Result<()>
where
    S: tower_service::Service<Request<hyper::body::Incoming>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    loop {
        let (stream, peer): (tokio::net::TcpStream, SocketAddr) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => serve_connection(hyper_util::rt::TokioIo::new(stream), service, peer).await,
                Some(acceptor) => serve_tls_connection(acceptor, stream, service, peer).await,
            }
        });
    }
}

/// The acceptor `--tls-cert`/`--tls-key` ask for (the certificate reloaded when its files
/// change), `None` for plain HTTP.
#[cfg(feature = "tls")]
fn tls_acceptor(config: &HttpConfig) -> std::io::Result<Option<crate::net::TlsAcceptor>> {
    let Some((cert, key)) = &config.tls else { return Ok(None) };
    let cert = crate::net::tls::ReloadingCert::new(cert.clone(), key.clone())?;
    cert.watch(Duration::from_secs(5));
    Ok(Some(tokio_rustls::TlsAcceptor::from(cert.server_config()?)))
}

/// Built without the `tls` feature: a certificate is refused with the reason.
#[cfg(not(feature = "tls"))]
fn tls_acceptor(config: &HttpConfig) -> std::io::Result<Option<crate::net::TlsAcceptor>> {
    match config.tls {
        None => Ok(None),
        Some(_) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "this server was built without TLS support (feature `tls`): --tls-cert needs it",
        )),
    }
}

/// The TLS handshake (bounded to 10 s), then HTTP/1.1 on the encrypted stream.
#[cfg(feature = "tls")]
async fn serve_tls_connection<S>(
    acceptor: crate::net::TlsAcceptor,
    stream: tokio::net::TcpStream,
    service: S,
    peer: SocketAddr,
) where
    S: tower_service::Service<Request<hyper::body::Incoming>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await {
        Ok(Ok(tls)) => serve_connection(hyper_util::rt::TokioIo::new(tls), service, peer).await,
        Ok(Err(e)) => tracing::debug!("TLS handshake failed: {e}"),
        Err(_) => tracing::debug!("TLS handshake timed out"),
    }
}

#[cfg(not(feature = "tls"))]
async fn serve_tls_connection<S>(acceptor: crate::net::TlsAcceptor, _: tokio::net::TcpStream, _: S, _: SocketAddr) {
    match acceptor {}
}

/// The address a request came from, in its extensions: an anonymous caller counts as its
/// address for the task cap (see [`crate::server::tasks::Account`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerAddr(pub SocketAddr);

/// Serves HTTP/1.1 on one accepted connection from `peer`.
async fn serve_connection<I, S>(io: I, service: S, peer: SocketAddr)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: tower_service::Service<Request<hyper::body::Incoming>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let hyper_service = hyper::service::service_fn(move |mut request: Request<hyper::body::Incoming>| {
        request.extensions_mut().insert(PeerAddr(peer));
        let mut service = service.clone();
        service.call(request)
    });
    if let Err(e) =
        hyper::server::conn::http1::Builder::new().keep_alive(true).serve_connection(io, hyper_service).await
    {
        tracing::debug!("connection ended: {e}");
    }
}
