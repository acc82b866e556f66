//! HTTP as a client of authorization machinery and of servers: the connector (proxies; with the
//! `tls` feature, TLS with the system's roots and extra ones, errors explained), small bounded
//! fetches of metadata, JWKS and token endpoints, the TLS configurations (feature `tls`), and the
//! response body type every HTTP server of ours answers with. Used by the resource server
//! (`auth`), the client, the HTTP transport and the command line; it uses nothing of theirs.

pub mod body;
pub mod connect;
pub mod fetch;
pub mod oauth;
#[cfg(feature = "tls")]
pub mod tls;

/// The TLS acceptor of an HTTPS server: rustls's.
#[cfg(feature = "tls")]
pub type TlsAcceptor = tokio_rustls::TlsAcceptor;

/// Built without the `tls` feature, no TLS acceptor exists: `None` is the only value an
/// `Option<TlsAcceptor>` can take.
#[cfg(not(feature = "tls"))]
#[derive(Clone)]
pub enum TlsAcceptor {}
