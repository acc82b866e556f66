//! The server as an OAuth 2.1 resource server: who may call it, with which scopes.
//!
//! One [`ResourceServer`] holds the canonical resource URI, the authorization servers and the
//! token verifier; the protected resource metadata (RFC 9728), the `WWW-Authenticate`
//! challenges and the audience check are all derived from it, so they cannot drift apart.
//! [`ResourceServer::layer`] makes the tower layer that goes in front of
//! [`McpService`](crate::transport::http::McpService):
//!
//! - the metadata at `/.well-known/oauth-protected-resource` and its path-inserted form;
//! - `401` with `WWW-Authenticate: Bearer resource_metadata="…", scope="…"` without a valid
//!   token (plus `error="invalid_token"` for a bad one); `400` for a malformed `Authorization`
//!   header; a token in the query string never counts;
//! - the token verified by a [`TokenVerifier`] (JWT against the issuer's JWKS, or RFC 7662
//!   introspection), its audience checked against the canonical resource whatever the verifier,
//!   and the verdict cached until the token expires;
//! - the scopes the request needs (declared on the [`Router`](crate::Router) per tool, resource,
//!   template and prompt, plus a minimum for the whole server) checked before any handler runs or
//!   any stream opens: `403` with an `insufficient_scope` challenge naming every scope needed;
//! - the caller's [`Identity`] handed to handlers ([`RequestContext::caller`](crate::RequestContext::caller)).
//!
//! ```no_run
//! use mcp::server::{NoArgs, RequestContext, Router, ToolDef, ToolError};
//! use mcp::transport::http::HttpConfig;
//!
//! async fn delete_file(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
//!     let who = cx.caller().map(|c| c.subject().to_owned()).unwrap_or_default();
//!     Ok(format!("deleted, for {who}"))
//! }
//!
//! # async fn demo() -> std::io::Result<()> {
//! let router = Router::new()
//!     .tool_def(ToolDef::new("delete_file").scopes(&["files:write"]), delete_file)
//!     .template_scopes("file:///{path}", &["files:read"])
//!     .require_scopes(&["mcp"]) // every request
//!     .scope_hierarchy(|granted, needed| needed.starts_with(&format!("{granted}:")))
//!     .list_only_permitted_tools()
//!     .layer(mcp::middleware::AuditLog::to_stderr());
//! let auth = mcp::auth::ResourceServer::jwt("https://login.example.com")?.resource("https://mcp.example.com/mcp");
//! let config = HttpConfig { auth: Some(auth), ..HttpConfig::default() };
//! mcp::transport::http::serve_with_config(router, "0.0.0.0:8443", config).await
//! # }
//! ```

mod challenge;
mod dpop;
mod layer;
mod verify;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

pub use crate::server::identity::{Identity, Verified};
pub use crate::server::scopes::ScopeHierarchy;
pub use layer::{AuthLayer, AuthService};

/// The scopes a POST of `body` needs, as the layer's peek reads it (for the fuzz targets).
#[cfg(feature = "fuzzing")]
pub(crate) fn needed_scopes_of(router: &crate::Router, body: &[u8]) -> Vec<String> {
    layer::needed_scopes(router, &http::Method::POST, body)
}
pub use verify::{
    issuer_metadata, metadata_urls, EitherVerifier, IntrospectionVerifier, JwksCache, JwksSource, JwtVerifier,
    TokenError, TokenVerifier,
};

use crate::net::fetch::Fetcher;
pub use crate::net::oauth::canonical_resource;
use crate::net::oauth::split_origin;

/// The well-known path of protected resource metadata (RFC 9728).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What the server tells clients about itself as a protected resource, and how it checks them.
#[derive(Clone)]
pub struct ResourceServer {
    resource: Option<String>,
    authorization_servers: Vec<String>,
    verifier: Arc<dyn TokenVerifier>,
    resource_name: Option<String>,
    documentation: Option<String>,
    any_audience: bool,
    cache_size: usize,
    cache_cap: Duration,
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .finish_non_exhaustive()
    }
}

impl ResourceServer {
    /// A resource server checking tokens with `verifier`. Name at least one authorization server
    /// ([`ResourceServer::authorization_server`]) so clients know where to get tokens.
    pub fn new(verifier: impl TokenVerifier) -> Self {
        ResourceServer::from_arc(Arc::new(verifier))
    }

    /// [`ResourceServer::new`] with a shared verifier.
    pub fn from_arc(verifier: Arc<dyn TokenVerifier>) -> Self {
        ResourceServer {
            resource: None,
            authorization_servers: Vec::new(),
            verifier,
            resource_name: None,
            documentation: None,
            any_audience: false,
            cache_size: 10_000,
            cache_cap: Duration::from_secs(3600),
        }
    }

    /// A resource server for JWT access tokens of `issuer`, checked against the keys its
    /// metadata publishes (`jwks_uri`), with the issuer as the authorization server.
    pub fn jwt(issuer: &str) -> std::io::Result<Self> {
        let fetcher = Fetcher::new(&[])?;
        let keys = JwksCache::new(JwksSource::Issuer(issuer.to_owned()), fetcher);
        Ok(ResourceServer::new(JwtVerifier::new(issuer, keys)).authorization_server(issuer))
    }

    /// The canonical URI of this server, the audience its tokens must carry (by default the URL
    /// it is served at, known once the address is bound).
    pub fn resource(mut self, uri: &str) -> Self {
        self.resource = Some(canonical_resource(uri));
        self
    }

    /// Adds an authorization server (its issuer URL) clients may get tokens from.
    pub fn authorization_server(mut self, issuer: &str) -> Self {
        self.authorization_servers.push(issuer.trim_end_matches('/').to_owned());
        self
    }

    /// A human-readable name for the metadata (`resource_name`).
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// A page documenting the server for developers (`resource_documentation`).
    pub fn documentation(mut self, url: impl Into<String>) -> Self {
        self.documentation = Some(url.into());
        self
    }

    /// How long a verified token may be reused without asking the verifier again, at most (its
    /// expiry always bounds it; default one hour). Shorten it when revocation must be seen soon.
    pub fn cache_for(mut self, duration: Duration) -> Self {
        self.cache_cap = duration;
        self
    }

    /// Accepts tokens whatever their audience. Dangerous: a token any other service obtained for
    /// itself then works here (the confused deputy the spec forbids). Only for authorization
    /// servers that cannot put a resource in their tokens (no RFC 8707); logged at start-up.
    pub fn dangerous_accept_any_audience(mut self) -> Self {
        self.any_audience = true;
        self
    }

    /// The canonical resource, if set.
    pub fn resource_uri(&self) -> Option<&str> {
        self.resource.as_deref()
    }

    /// Sets the resource when none was given (the transport calls this with the served URL).
    pub fn or_resource(mut self, uri: &str) -> Self {
        if self.resource.is_none() {
            self.resource = Some(canonical_resource(uri));
        }
        self
    }

    /// The layer protecting `router`'s HTTP endpoint. The resource must be known by now.
    pub fn layer(self, router: &crate::Router) -> AuthLayer {
        if self.any_audience {
            tracing::warn!("accepting access tokens of any audience: tokens meant for other services will work here");
            eprintln!("warning: accepting access tokens of any audience (tokens meant for other services work here)");
        }
        AuthLayer::new(Arc::new(self), router.clone())
    }

    /// The URL of the metadata document (path-inserted, as the challenge names it).
    fn metadata_url(&self) -> String {
        let resource = self.resource.as_deref().unwrap_or_default();
        let (origin, path) = split_origin(resource);
        format!("{origin}{METADATA_PATH}{path}")
    }

    /// The metadata document (RFC 9728 §2).
    fn metadata(&self, scopes_supported: Vec<String>) -> Value {
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
            "dpop_signing_alg_values_supported": dpop::ALGORITHMS,
        });
        let scopes: Vec<String> = scopes_supported.into_iter().filter(|s| s != "offline_access").collect();
        if !scopes.is_empty() {
            doc["scopes_supported"] = json!(scopes);
        }
        if let Some(name) = &self.resource_name {
            doc["resource_name"] = json!(name);
        }
        if let Some(url) = &self.documentation {
            doc["resource_documentation"] = json!(url);
        }
        doc
    }

    /// Whether a token's audience names this server.
    fn audience_ok(&self, audience: &[String]) -> bool {
        if self.any_audience {
            return true;
        }
        let Some(resource) = &self.resource else { return false };
        audience.iter().any(|aud| canonical_resource(aud) == *resource)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_url_is_path_inserted() {
        struct Never;
        impl TokenVerifier for Never {
            fn verify<'a>(&'a self, _: &'a str) -> futures_util::future::BoxFuture<'a, Result<Verified, TokenError>> {
                Box::pin(async { Err(TokenError::Invalid("no".into())) })
            }
        }
        let rs = ResourceServer::new(Never).resource("https://api.example.com/v1/mcp");
        assert_eq!(rs.metadata_url(), "https://api.example.com/.well-known/oauth-protected-resource/v1/mcp");
        let root = ResourceServer::new(Never).resource("https://api.example.com");
        assert_eq!(root.metadata_url(), "https://api.example.com/.well-known/oauth-protected-resource");
    }
}
