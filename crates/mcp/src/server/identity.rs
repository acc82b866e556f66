//! Who is calling: the verified token's subject, client, scopes and claims, as handlers see them
//! (`RequestContext::caller`).

use std::fmt;
use std::sync::Arc;

use mcp_types::JsonObject;

/// A token the verifier accepted.
#[derive(Clone, PartialEq)]
pub struct Verified {
    /// `sub`.
    pub subject: String,
    /// `client_id` (or `azp`).
    pub client_id: Option<String>,
    /// The granted scopes.
    pub scopes: Vec<String>,
    /// `iss`.
    pub issuer: Option<String>,
    /// `aud`, as a list.
    pub audience: Vec<String>,
    /// `exp`, seconds since the epoch.
    pub expires_at: Option<u64>,
    /// Every claim.
    pub claims: JsonObject,
}

impl fmt::Debug for Verified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verified")
            .field("subject", &self.subject)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

/// The authenticated caller of a request.
#[derive(Clone)]
pub struct Identity {
    verified: Arc<Verified>,
    token: Arc<str>,
    account: Arc<str>,
}

impl Identity {
    #[cfg_attr(not(feature = "auth"), allow(dead_code))] // made by the resource server
    pub(crate) fn new(verified: Arc<Verified>, token: Arc<str>) -> Identity {
        let account = format!("sub:{}#{}", verified.issuer.as_deref().unwrap_or_default(), verified.subject);
        Identity { verified, token, account: Arc::from(account) }
    }

    /// What the verifier accepted.
    pub fn verified(&self) -> &Verified {
        &self.verified
    }

    /// The subject (`sub`): who the token speaks for.
    pub fn subject(&self) -> &str {
        &self.verified.subject
    }

    /// The OAuth client the token was issued to.
    pub fn client_id(&self) -> Option<&str> {
        self.verified.client_id.as_deref()
    }

    /// The granted scopes.
    pub fn scopes(&self) -> &[String] {
        &self.verified.scopes
    }

    /// Whether `scope` was granted (exactly; the router's hierarchy applies to declared scopes).
    pub fn has_scope(&self, scope: &str) -> bool {
        self.verified.scopes.iter().any(|s| s == scope)
    }

    /// The issuer (`iss`).
    pub fn issuer(&self) -> Option<&str> {
        self.verified.issuer.as_deref()
    }

    /// When the token expires, seconds since the epoch.
    pub fn expires_at(&self) -> Option<u64> {
        self.verified.expires_at
    }

    /// A claim of the token.
    pub fn claim(&self, name: &str) -> Option<&serde_json::Value> {
        self.verified.claims.get(name)
    }

    /// Every claim of the token.
    pub fn claims(&self) -> &JsonObject {
        &self.verified.claims
    }

    /// The raw access token. Dangerous: it is the client's credential for *this* server only;
    /// forwarding it to another service is the token passthrough the spec forbids (get a token
    /// of that service's own instead), and it must never reach a log or a result.
    pub fn dangerous_raw_token(&self) -> &str {
        &self.token
    }

    /// The account tasks and rate limits count this caller against: issuer and subject.
    pub fn account(&self) -> String {
        self.account.to_string()
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity").field("verified", &self.verified).field("token", &"<redacted>").finish()
    }
}
