//! OAuth 2.1 for the client, as the authorization pages of 2025-06-18, 2025-11-25 and
//! 2026-07-28 describe it.
//!
//! An [`OAuth`] is an [`Authorizer`]: the HTTP transport asks it for the headers of every
//! request, and tells it when the server answers `401` or `403`. On a `401` it finds the
//! authorization server ([`discovery`]), gets the client known there ([`register`]), runs the
//! grant the configuration names (the authorization code flow with PKCE through a
//! [`UserAgent`], `client_credentials`, a JWT bearer assertion, or the enterprise-managed
//! exchange), and the request is sent again. On a `403 insufficient_scope` it asks again for
//! the union of the scopes held and those the server names, in three authorizations at most per
//! operation.
//! Tokens are renewed ahead of expiry and kept in a [`Store`] shared by every process, under a
//! lock, so concurrent processes refresh once.

#[cfg(feature = "client-oauth")]
mod agent;
pub mod challenge;
#[cfg(feature = "client-oauth")]
pub mod discovery;
#[cfg(feature = "client-oauth")]
mod flows;
#[cfg(feature = "client-oauth")]
mod keys;
#[cfg(feature = "client-oauth")]
mod pkce;
#[cfg(feature = "client-oauth")]
pub mod register;
#[cfg(feature = "client-oauth")]
mod session;
#[cfg(feature = "client-oauth")]
pub mod store;
#[cfg(feature = "client-oauth")]
pub mod token;

use std::fmt;
#[cfg(feature = "client-oauth")]
use std::path::PathBuf;

use futures_util::future::BoxFuture;

#[cfg(feature = "client-oauth")]
pub use agent::{open_browser, Browser, Callback, Headless, Redirect, UserAgent};
pub use challenge::Challenge;
#[cfg(feature = "client-oauth")]
pub use keys::{DpopKey, SigningKey};
#[cfg(feature = "client-oauth")]
pub use session::{LoginSummary, OAuth};
#[cfg(feature = "client-oauth")]
pub use store::{Store, StoredToken};
#[cfg(feature = "client-oauth")]
pub use token::Tokens;

/// Why authorization did not succeed.
#[derive(Debug, Clone)]
pub enum AuthError {
    /// Authorization is needed, but this client may not start a flow (stored tokens only, or no
    /// way to reach the user): the message says what to run.
    Required(String),
    /// The authorization server or the user refused.
    Refused(String),
    /// The server's or the authorization server's metadata is missing, wrong, or unsafe.
    Discovery(String),
    /// The configuration does not allow a flow (no client id where one is needed, a bad key).
    Config(String),
    /// An endpoint could not be reached.
    Unreachable(String),
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::Required(m) => write!(f, "authorization required: {m}"),
            AuthError::Refused(m) => write!(f, "authorization failed: {m}"),
            AuthError::Discovery(m) => write!(f, "authorization discovery failed: {m}"),
            AuthError::Config(m) => write!(f, "authorization is not configured: {m}"),
            AuthError::Unreachable(m) => write!(f, "authorization server unreachable: {m}"),
        }
    }
}

impl std::error::Error for AuthError {}

/// How tokens are obtained.
#[cfg(feature = "client-oauth")]
#[derive(Clone)]
pub enum Grant {
    /// A person authorizes in a browser (authorization code with PKCE).
    AuthorizationCode,
    /// The client authenticates as itself (`client_credentials`, SEP-1046).
    ClientCredentials,
    /// A workload's own JWT, exchanged with the RFC 7523 JWT bearer grant (SEP-1933).
    JwtBearer {
        /// The workload's JWT.
        assertion: String,
    },
    /// Enterprise-managed authorization (SEP-990): the user's ID token is exchanged at the
    /// identity provider for an ID-JAG (RFC 8693), then the ID-JAG for an access token at the
    /// authorization server (RFC 7523).
    EnterpriseManaged {
        /// The identity provider's token endpoint.
        idp_token_endpoint: String,
        /// This client's id at the identity provider.
        idp_client_id: String,
        /// Its secret there, if it has one.
        idp_client_secret: Option<String>,
        /// The user's ID token from the identity provider.
        id_token: String,
    },
}

#[cfg(feature = "client-oauth")]
impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Grant::AuthorizationCode => "AuthorizationCode",
            Grant::ClientCredentials => "ClientCredentials",
            Grant::JwtBearer { .. } => "JwtBearer",
            Grant::EnterpriseManaged { .. } => "EnterpriseManaged",
        })
    }
}

/// How the client authorizes.
#[cfg(feature = "client-oauth")]
#[derive(Clone)]
pub struct OAuthConfig {
    /// A pre-registered client id (and its secret, for a confidential client).
    pub client_id: Option<String>,
    /// The pre-registered client's secret.
    pub client_secret: Option<String>,
    /// The URL of this client's Client ID Metadata Document, used as its id where the
    /// authorization server accepts those.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for instead of those the server names.
    pub scopes: Vec<String>,
    /// How tokens are obtained.
    pub grant: Grant,
    /// The client's key for `private_key_jwt`.
    pub signing_key: Option<SigningKey>,
    /// Bind tokens to a DPoP key when the authorization server supports it (default on).
    pub dpop: bool,
    /// Where tokens and registrations are kept (`None`: in memory, for this process only).
    pub store: Option<PathBuf>,
    /// The name shown to the user at registration.
    pub client_name: String,
    /// May start a flow when no token will do (off: stored tokens only, refreshed when needed).
    pub interactive: bool,
    /// CA certificates to trust for the authorization server besides the system's.
    pub ca_files: Vec<PathBuf>,
}

#[cfg(feature = "client-oauth")]
impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            scopes: Vec::new(),
            grant: Grant::AuthorizationCode,
            signing_key: None,
            dpop: true,
            store: None,
            client_name: "mcp (mcp-rs command line)".into(),
            interactive: true,
            ca_files: Vec::new(),
        }
    }
}

#[cfg(feature = "client-oauth")]
impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<secret>"))
            .field("grant", &self.grant)
            .field("scopes", &self.scopes)
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

/// The headers one request carries, and which tokens they came from.
#[derive(Clone, Default)]
pub struct Credentials {
    /// `Authorization` (and `DPoP`).
    pub headers: Vec<(String, String)>,
    /// Which tokens: changes whenever they are renewed.
    pub generation: u64,
}

/// A server's refusal of a request.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// `401` or `403`.
    pub status: u16,
    /// Its `WWW-Authenticate` challenges.
    pub challenges: Vec<Challenge>,
    /// A `DPoP-Nonce` header.
    pub dpop_nonce: Option<String>,
    /// What was asked (`tools/call write_file`): step-ups are counted per operation.
    pub operation: String,
}

/// Gives HTTP requests their credentials, and decides what to do when the server refuses them.
pub trait Authorizer: Send + Sync + 'static {
    /// Binds the authorizer to the MCP server at `server_url` (called once, on connect).
    fn attach(&self, server_url: &str) {
        let _ = server_url;
    }

    /// Before the first request: get tokens now if the server will want them and none are held
    /// (a login in a browser takes longer than a request may wait).
    fn preflight(&self) -> BoxFuture<'_, Result<(), AuthError>> {
        Box::pin(async { Ok(()) })
    }

    /// The credentials for a `method` request to `url` (none yet: send it without).
    fn credentials<'a>(&'a self, method: &'a str, url: &'a str) -> BoxFuture<'a, Result<Credentials, AuthError>>;

    /// The server answered `refusal` to a request made with credentials of `generation`:
    /// `Ok(true)` to send it again with fresh credentials, `Ok(false)` to give up quietly.
    fn refused<'a>(
        &'a self,
        url: &'a str,
        refusal: &'a Refusal,
        generation: u64,
    ) -> BoxFuture<'a, Result<bool, AuthError>>;
}
