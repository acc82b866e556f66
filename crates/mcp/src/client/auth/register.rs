//! Who the client is at an authorization server: pre-registered credentials, a Client ID
//! Metadata Document URL, or a dynamic registration (RFC 7591), in that order of preference.
//! Credentials belong to one authorization server (its issuer) and are never shown to another.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::discovery::ServerMetadata;
use super::{AuthError, OAuthConfig};
use crate::net::fetch::Fetcher;

/// A client identity at one authorization server.
#[derive(Clone, Serialize, Deserialize, PartialEq)]
pub struct Registered {
    /// The issuer these credentials belong to.
    pub issuer: String,
    /// The client id.
    pub client_id: String,
    /// Its secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How it authenticates at the token endpoint.
    pub auth_method: String,
    /// The redirect URIs it was registered with.
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    /// `dynamic`, `metadata-document` or `pre-registered`.
    pub how: String,
}

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registered")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<secret>"))
            .field("auth_method", &self.auth_method)
            .field("how", &self.how)
            .finish()
    }
}

impl Registered {
    /// Whether these credentials can be used with `redirect_uri` (none needed: always).
    pub fn fits(&self, redirect_uri: Option<&str>) -> bool {
        match redirect_uri {
            None => true,
            Some(uri) => self.how != "dynamic" || self.redirect_uris.iter().any(|r| r == uri),
        }
    }
}

/// How a client with a secret (or a key, or neither) authenticates, among what the server takes.
fn auth_method(server: &ServerMetadata, secret: bool, key: bool) -> String {
    let supports = |m: &str| server.auth_methods.iter().any(|s| s == m);
    let choice = if key && supports("private_key_jwt") {
        "private_key_jwt"
    } else if secret && supports("client_secret_basic") {
        "client_secret_basic"
    } else if secret && supports("client_secret_post") {
        "client_secret_post"
    } else if secret {
        "client_secret_basic"
    } else if key {
        "private_key_jwt"
    } else {
        "none"
    };
    choice.to_owned()
}

/// The credentials configured by the user, if any.
pub fn configured(config: &OAuthConfig, server: &ServerMetadata) -> Option<Registered> {
    let client_id = config.client_id.clone()?;
    let secret = config.client_secret.is_some();
    Some(Registered {
        issuer: server.issuer.clone(),
        client_id,
        client_secret: config.client_secret.clone(),
        auth_method: auth_method(server, secret, config.signing_key.is_some()),
        redirect_uris: Vec::new(),
        how: "pre-registered".into(),
    })
}

/// The metadata document URL as client id, when the server accepts those.
pub fn metadata_document(config: &OAuthConfig, server: &ServerMetadata) -> Option<Registered> {
    let url = config.client_metadata_url.clone().filter(|_| server.cimd_supported)?;
    Some(Registered {
        issuer: server.issuer.clone(),
        client_id: url,
        client_secret: None,
        auth_method: auth_method(server, false, config.signing_key.is_some()),
        redirect_uris: Vec::new(),
        how: "metadata-document".into(),
    })
}

/// Registers dynamically: a native application (the spec's `application_type` for a CLI and
/// loopback redirects), the grants it will use, `refresh_token` included.
pub async fn dynamic(
    fetcher: &Fetcher,
    config: &OAuthConfig,
    server: &ServerMetadata,
    redirect_uri: Option<&str>,
) -> Result<Registered, AuthError> {
    let Some(endpoint) = &server.registration_endpoint else {
        return Err(AuthError::Config(format!(
            "{} offers no dynamic registration: give a pre-registered client id (--client-id)",
            server.issuer
        )));
    };
    crate::net::fetch::check_url(endpoint).map_err(AuthError::Discovery)?;
    let method = if server.auth_methods.iter().any(|m| m == "none") {
        "none".to_owned()
    } else {
        auth_method(server, true, false)
    };
    let mut body = json!({
        "client_name": config.client_name,
        "application_type": "native",
        "token_endpoint_auth_method": method,
        "response_types": ["code"],
        "grant_types": ["authorization_code", "refresh_token"],
    });
    if let Some(uri) = redirect_uri {
        body["redirect_uris"] = json!([uri]);
    }
    if !config.scopes.is_empty() {
        body["scope"] = json!(config.scopes.join(" "));
    }
    let answer = fetcher.post_json(endpoint, &body, &[]).await.map_err(AuthError::Unreachable)?;
    let reply: Value = answer.json().unwrap_or(Value::Null);
    if !answer.status.is_success() {
        let error = reply["error"].as_str().unwrap_or("refused");
        let description = reply["error_description"].as_str().unwrap_or_default();
        return Err(AuthError::Refused(format!("{} refused the registration: {error} {description}", server.issuer)));
    }
    let client_id = reply["client_id"]
        .as_str()
        .ok_or_else(|| AuthError::Refused("the registration answer has no client_id".into()))?;
    let client_secret = reply["client_secret"].as_str().map(str::to_owned);
    let auth_method = reply["token_endpoint_auth_method"].as_str().map(str::to_owned).unwrap_or(method);
    let redirect_uris = reply["redirect_uris"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_else(|| redirect_uri.map(|u| vec![u.to_owned()]).unwrap_or_default());
    Ok(Registered {
        issuer: server.issuer.clone(),
        client_id: client_id.to_owned(),
        client_secret,
        auth_method,
        redirect_uris,
        how: "dynamic".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_method_follows_what_the_server_takes() {
        let server = |methods: &[&str]| ServerMetadata {
            auth_methods: methods.iter().map(|m| m.to_string()).collect(),
            ..Default::default()
        };
        assert_eq!(auth_method(&server(&["none"]), false, false), "none");
        assert_eq!(auth_method(&server(&["client_secret_post"]), true, false), "client_secret_post");
        assert_eq!(
            auth_method(&server(&["client_secret_basic", "client_secret_post"]), true, false),
            "client_secret_basic"
        );
        assert_eq!(auth_method(&server(&["private_key_jwt", "client_secret_basic"]), true, true), "private_key_jwt");
    }
}
