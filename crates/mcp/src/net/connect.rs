//! How the HTTP client reaches a server: directly, or through the proxy that `HTTPS_PROXY`,
//! `HTTP_PROXY` and `NO_PROXY` name (an `https` URL tunnels with CONNECT, an `http` one is
//! forwarded), with TLS for `https` URLs (feature `tls`; without it an `https` URL is refused,
//! saying so).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
#[cfg(feature = "tls")]
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
#[cfg(feature = "tls")]
use tokio_rustls::client::TlsStream;

/// Opens connections for the HTTP client.
#[derive(Clone)]
pub(crate) struct Connector {
    #[cfg(feature = "tls")]
    tls: Arc<Tls>,
    proxies: Arc<Matcher>,
}

/// The TLS configuration: made with the connector when it has roots of its own (so that a bad
/// certificate file is said at once), else at the first `https` connection (reading the system's
/// roots cost a process that never used TLS, such as a stdio server exporting telemetry over
/// plain HTTP, some ten milliseconds as it started). A read that found no root at all (files
/// unreadable for a moment, descriptors exhausted) is not kept: the next connection reads again.
#[cfg(feature = "tls")]
enum Tls {
    Ready(Arc<rustls::ClientConfig>),
    SystemRoots(std::sync::OnceLock<Arc<rustls::ClientConfig>>),
}

impl Connector {
    /// A connector trusting the system's roots and `extra_roots`, with the environment's proxies.
    pub fn new(extra_roots: &[std::path::PathBuf]) -> io::Result<Connector> {
        #[cfg(not(feature = "tls"))]
        let _ = extra_roots; // no TLS, no roots
        #[cfg(feature = "tls")]
        let tls = match extra_roots {
            [] => Tls::SystemRoots(std::sync::OnceLock::new()),
            extra => Tls::Ready(crate::net::tls::client_config(extra)?),
        };
        Ok(Connector {
            #[cfg(feature = "tls")]
            tls: Arc::new(tls),
            proxies: Arc::new(Matcher::from_env()),
        })
    }

    /// The TLS configuration, made now if it was not.
    #[cfg(feature = "tls")]
    fn tls_config(&self) -> io::Result<Arc<rustls::ClientConfig>> {
        match &*self.tls {
            Tls::Ready(config) => Ok(config.clone()),
            Tls::SystemRoots(kept) => {
                if let Some(config) = kept.get() {
                    return Ok(config.clone());
                }
                let (config, roots) = crate::net::tls::client_config_counted(&[])?;
                if roots > 0 {
                    let _ = kept.set(config.clone());
                }
                Ok(config)
            }
        }
    }

    /// The `Proxy-Authorization` an `http` request to `uri` needs, if it goes through a proxy
    /// with credentials (`https` requests carry them in the CONNECT instead).
    #[cfg_attr(not(feature = "client-http"), allow(dead_code))] // the client sends it to its proxy
    pub fn proxy_authorization(&self, uri: &Uri) -> Option<http::HeaderValue> {
        if uri.scheme_str() != Some("http") {
            return None;
        }
        self.proxies.intercept(uri).and_then(|i| i.basic_auth().cloned())
    }
}

/// A connection, plain or TLS.
pub(crate) enum Conn {
    Plain {
        io: TokioIo<TcpStream>,
        proxied: bool,
    },
    #[cfg(feature = "tls")]
    Tls(Box<TokioIo<TlsStream<TcpStream>>>),
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        match self {
            Conn::Plain { proxied, .. } => Connected::new().proxy(*proxied),
            #[cfg(feature = "tls")]
            Conn::Tls(_) => Connected::new(),
        }
    }
}

impl hyper::rt::Read for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain { io, .. } => Pin::new(io).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            Conn::Tls(io) => Pin::new(io.as_mut()).poll_read(cx, buf),
        }
    }
}

impl hyper::rt::Write for Conn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain { io, .. } => Pin::new(io).poll_write(cx, buf),
            #[cfg(feature = "tls")]
            Conn::Tls(io) => Pin::new(io.as_mut()).poll_write(cx, buf),
        }
    }

    /// Vectored, so that hyper writes a request's head and body together without copying the
    /// body into its buffer first (a telemetry batch is a few hundred kilobytes).
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain { io, .. } => Pin::new(io).poll_write_vectored(cx, bufs),
            #[cfg(feature = "tls")]
            Conn::Tls(io) => Pin::new(io.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Plain { io, .. } => io.is_write_vectored(),
            #[cfg(feature = "tls")]
            Conn::Tls(io) => io.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain { io, .. } => Pin::new(io).poll_flush(cx),
            #[cfg(feature = "tls")]
            Conn::Tls(io) => Pin::new(io.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain { io, .. } => Pin::new(io).poll_shutdown(cx),
            #[cfg(feature = "tls")]
            Conn::Tls(io) => Pin::new(io.as_mut()).poll_shutdown(cx),
        }
    }
}

impl tower_service::Service<Uri> for Connector {
    type Response = Conn;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Conn>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let me = self.clone();
        Box::pin(async move { me.connect(uri).await })
    }
}

fn tcp_connector() -> HttpConnector {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http
}

async fn tcp(uri: Uri) -> io::Result<TcpStream> {
    let mut http = tcp_connector();
    let io = tower_service::Service::call(&mut http, uri.clone())
        .await
        .map_err(|e| io::Error::new(io::ErrorKind::ConnectionRefused, format!("cannot connect to {uri}: {e}")))?;
    Ok(io.into_inner())
}

impl Connector {
    async fn connect(&self, uri: Uri) -> io::Result<Conn> {
        let https = uri.scheme_str() == Some("https");
        #[cfg(not(feature = "tls"))]
        if https {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{uri} needs TLS, which this build left out (the `tls` feature of mcp-stack)"),
            ));
        }
        let proxy = self.proxies.intercept(&uri);
        let stream = match (&proxy, https) {
            (None, _) => tcp(uri.clone()).await?,
            (Some(proxy), false) => {
                return Ok(Conn::Plain { io: TokioIo::new(tcp(proxy.uri().clone()).await?), proxied: true })
            }
            (Some(proxy), true) => self.tunnel(proxy, &uri).await?,
        };
        #[cfg(feature = "tls")]
        if https {
            let host = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
            return self.tls(stream, host).await;
        }
        Ok(Conn::Plain { io: TokioIo::new(stream), proxied: false })
    }

    #[cfg(feature = "tls")]
    async fn tls(&self, stream: TcpStream, host: String) -> io::Result<Conn> {
        let name = ServerName::try_from(host.clone())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("{host:?} is not a valid server name")))?;
        let tls = tokio_rustls::TlsConnector::from(self.tls_config()?).connect(name, stream).await.map_err(|e| {
            match crate::net::tls::explain(&e, &host) {
                Some(words) => io::Error::new(io::ErrorKind::InvalidData, words),
                None => io::Error::new(e.kind(), format!("TLS with {host} failed: {e}")),
            }
        })?;
        Ok(Conn::Tls(Box::new(TokioIo::new(tls))))
    }

    /// A CONNECT tunnel through `proxy` to `uri`'s host.
    async fn tunnel(&self, proxy: &hyper_util::client::proxy::matcher::Intercept, uri: &Uri) -> io::Result<TcpStream> {
        use hyper_util::client::legacy::connect::proxy::Tunnel;
        let mut tunnel = Tunnel::new(proxy.uri().clone(), tcp_connector());
        if let Some(auth) = proxy.basic_auth() {
            tunnel = tunnel.with_auth(auth.clone());
        }
        let io = tower_service::Service::call(&mut tunnel, uri.clone())
            .await
            .map_err(|e| io::Error::other(format!("the proxy {} refused a tunnel to {uri}: {e}", proxy.uri())))?;
        Ok(io.into_inner())
    }
}

/// Why a request failed, in the words of its deepest cause (a refused connection, a certificate
/// problem explained), not hyper's "client error (Connect)".
pub fn why(e: &hyper_util::client::legacy::Error) -> String {
    let mut deepest: Option<String> = None;
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            deepest = Some(io.to_string());
        }
        source = cause.source();
    }
    deepest.unwrap_or_else(|| e.to_string())
}
