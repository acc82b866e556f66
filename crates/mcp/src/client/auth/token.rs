//! The token endpoint: every grant's request, the client authenticating itself (`none`,
//! `client_secret_basic`, `client_secret_post`, `private_key_jwt`), DPoP proofs with one retry
//! on the server's nonce, and the answer read into a [`Tokens`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::keys::{DpopKey, SigningKey};
use super::register::Registered;
use super::AuthError;
use crate::net::fetch::{form_encode, Fetcher};

/// Tokens from the authorization server.
#[derive(Clone, Serialize, Deserialize, PartialEq)]
pub struct Tokens {
    /// The access token.
    pub access_token: String,
    /// `Bearer` or `DPoP`.
    pub token_type: String,
    /// The refresh token, if one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When it was issued.
    #[serde(default)]
    pub issued_at: u64,
    /// The scopes granted (or asked, when the server does not say).
    #[serde(default)]
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("token_type", &self.token_type)
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "<secret>"))
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

pub(crate) fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Tokens {
    /// Whether the access token should be renewed before use: expired, or past 80% of its life
    /// (and within five minutes of its end).
    pub fn needs_refresh(&self) -> bool {
        let Some(expires) = self.expires_at else { return false };
        let now = now();
        let life = expires.saturating_sub(self.issued_at);
        let left = expires.saturating_sub(now);
        left == 0 || (left * 5 < life && left < 300) || left < 10
    }

    /// Whether it has expired.
    pub fn expired(&self) -> bool {
        self.expires_at.is_some_and(|e| e <= now())
    }
}

/// A refusal by the token endpoint.
#[derive(Debug, Clone)]
pub struct TokenFailure {
    /// The OAuth error code (`invalid_grant`, `invalid_client`...).
    pub error: String,
    /// Its description.
    pub description: String,
    /// The HTTP status.
    pub status: u16,
}

impl TokenFailure {
    pub(crate) fn into_error(self, what: &str) -> AuthError {
        if self.error.is_empty() {
            return AuthError::Refused(format!("{what}: the authorization server answered HTTP {}", self.status));
        }
        let description = if self.description.is_empty() { String::new() } else { format!(" ({})", self.description) };
        AuthError::Refused(format!("{what}: {}{description}", self.error))
    }
}

/// Where and how to ask for tokens.
pub(crate) struct Endpoint<'a> {
    pub fetcher: &'a Fetcher,
    pub url: &'a str,
    /// The authorization server's issuer (the audience of client assertions).
    pub issuer: &'a str,
    pub client: &'a Registered,
    pub signing_key: Option<&'a SigningKey>,
    pub dpop: Option<&'a DpopKey>,
}

/// Adds the client's authentication to a token request.
fn authenticate(
    endpoint: &Endpoint<'_>,
    form: &mut Vec<(String, String)>,
    headers: &mut Vec<(&'static str, String)>,
) -> Result<(), AuthError> {
    use base64::Engine as _;
    let client = endpoint.client;
    match client.auth_method.as_str() {
        "client_secret_basic" => {
            let secret = client.client_secret.as_deref().unwrap_or_default();
            let pair = format!("{}:{}", form_encode(&client.client_id), form_encode(secret));
            headers
                .push(("authorization", format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))));
        }
        "client_secret_post" => {
            form.push(("client_id".into(), client.client_id.clone()));
            form.push(("client_secret".into(), client.client_secret.clone().unwrap_or_default()));
        }
        "private_key_jwt" => {
            let key = endpoint
                .signing_key
                .ok_or_else(|| AuthError::Config("private_key_jwt needs the client's private key".into()))?;
            form.push(("client_id".into(), client.client_id.clone()));
            form.push((
                "client_assertion_type".into(),
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
            ));
            form.push(("client_assertion".into(), key.assertion(&client.client_id, endpoint.issuer)?));
        }
        _ => form.push(("client_id".into(), client.client_id.clone())),
    }
    Ok(())
}

/// Sends one token request (`form` holds the grant's own fields) and reads the tokens.
pub(crate) async fn request(
    endpoint: &Endpoint<'_>,
    form: Vec<(String, String)>,
    asked_scopes: &[String],
) -> Result<Result<Tokens, TokenFailure>, AuthError> {
    let mut nonce: Option<String> = None;
    for _attempt in 0..2 {
        let mut form = form.clone();
        let mut headers = Vec::new();
        authenticate(endpoint, &mut form, &mut headers)?;
        if let Some(key) = endpoint.dpop {
            headers.push(("dpop", key.proof("POST", endpoint.url, nonce.as_deref(), None)));
        }
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let answer =
            endpoint.fetcher.post_form(endpoint.url, &pairs, &headers).await.map_err(AuthError::Unreachable)?;
        let body: Value = answer.json().unwrap_or(Value::Null);
        if answer.status.is_success() {
            return Ok(Ok(read_tokens(&body, asked_scopes)?));
        }
        let failure = TokenFailure {
            error: body["error"].as_str().unwrap_or_default().to_owned(),
            description: body["error_description"].as_str().unwrap_or_default().to_owned(),
            status: answer.status.as_u16(),
        };
        let server_nonce = answer.headers.get("dpop-nonce").and_then(|v| v.to_str().ok()).map(str::to_owned);
        if failure.error == "use_dpop_nonce" && endpoint.dpop.is_some() && server_nonce.is_some() && nonce.is_none() {
            nonce = server_nonce;
            continue;
        }
        return Ok(Err(failure));
    }
    Ok(Err(TokenFailure { error: "use_dpop_nonce".into(), description: "the nonce was refused".into(), status: 400 }))
}

fn read_tokens(body: &Value, asked_scopes: &[String]) -> Result<Tokens, AuthError> {
    let access_token = body["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| AuthError::Refused("the token endpoint answered without an access_token".into()))?;
    let token_type = match body["token_type"].as_str() {
        Some(t) if t.eq_ignore_ascii_case("dpop") => "DPoP",
        _ => "Bearer",
    };
    let issued_at = now();
    let scopes = match body["scope"].as_str() {
        Some(s) => s.split_whitespace().map(str::to_owned).collect(),
        None => asked_scopes.to_vec(),
    };
    Ok(Tokens {
        access_token: access_token.to_owned(),
        token_type: token_type.to_owned(),
        refresh_token: body["refresh_token"].as_str().map(str::to_owned),
        expires_at: body["expires_in"].as_u64().map(|s| issued_at + s),
        issued_at,
        scopes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_ahead_of_expiry() {
        let t = |life: u64, left: u64| Tokens {
            access_token: "a".into(),
            token_type: "Bearer".into(),
            refresh_token: None,
            expires_at: Some(now() + left),
            issued_at: now() + left - life,
            scopes: vec![],
        };
        assert!(!t(3600, 3000).needs_refresh());
        assert!(t(3600, 200).needs_refresh(), "under 20% and under five minutes");
        assert!(!t(86400, 3600).needs_refresh(), "a long token is renewed in its last minutes only");
        assert!(t(60, 5).needs_refresh());
        assert!(t(60, 0).expired());
    }
}
