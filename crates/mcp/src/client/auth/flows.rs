//! The grants: the authorization code flow (PKCE S256, `state`, `resource`, RFC 9207 `iss`),
//! `client_credentials`, the JWT bearer grant, the enterprise-managed exchange, and refresh.

use super::agent::Redirect;
use super::discovery::ServerMetadata;
use super::keys::{DpopKey, SigningKey};
use super::pkce::{random_text, Pkce};
use super::register::Registered;
use super::token::{self, Endpoint, Tokens};
use super::{AuthError, Grant};
use crate::net::fetch::{form_encode, Fetcher};

/// What every grant needs.
pub(crate) struct Context<'a> {
    pub fetcher: &'a Fetcher,
    pub server: &'a ServerMetadata,
    pub client: &'a Registered,
    pub resource: &'a str,
    pub scopes: &'a [String],
    pub signing_key: Option<&'a SigningKey>,
    pub dpop: Option<&'a DpopKey>,
}

impl Context<'_> {
    fn endpoint(&self) -> Endpoint<'_> {
        Endpoint {
            fetcher: self.fetcher,
            url: &self.server.token_endpoint,
            issuer: &self.server.issuer,
            client: self.client,
            signing_key: self.signing_key,
            dpop: self.dpop,
        }
    }

    /// The grant's own fields plus `resource` and `scope`, sent, and read.
    async fn exchange(&self, what: &str, mut form: Vec<(String, String)>) -> Result<Tokens, AuthError> {
        form.push(("resource".into(), self.resource.to_owned()));
        if !self.scopes.is_empty() {
            form.push(("scope".into(), self.scopes.join(" ")));
        }
        token::request(&self.endpoint(), form, self.scopes).await?.map_err(|f| f.into_error(what))
    }
}

fn pair(k: &str, v: &str) -> (String, String) {
    (k.to_owned(), v.to_owned())
}

/// Runs a machine grant (no user involved).
pub(crate) async fn machine(cx: &Context<'_>, grant: &Grant) -> Result<Tokens, AuthError> {
    match grant {
        Grant::ClientCredentials => {
            cx.exchange("client_credentials", vec![pair("grant_type", "client_credentials")]).await
        }
        Grant::JwtBearer { assertion } => {
            let form =
                vec![pair("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), pair("assertion", assertion)];
            // A refused workload assertion is final: no retry, no other grant (SEP-1933).
            cx.exchange("the workload's JWT bearer grant", form).await
        }
        Grant::EnterpriseManaged { idp_token_endpoint, idp_client_id, idp_client_secret, id_token } => {
            let jag = id_jag(cx, idp_token_endpoint, idp_client_id, idp_client_secret.as_deref(), id_token).await?;
            let form = vec![pair("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), pair("assertion", &jag)];
            cx.exchange("the ID-JAG JWT bearer grant", form).await
        }
        Grant::AuthorizationCode => Err(AuthError::Config("the authorization code flow needs a user agent".into())),
    }
}

/// RFC 8693 at the identity provider: the user's ID token for an identity assertion grant
/// (ID-JAG) meant for this authorization server and resource.
async fn id_jag(
    cx: &Context<'_>,
    endpoint: &str,
    client_id: &str,
    client_secret: Option<&str>,
    id_token: &str,
) -> Result<String, AuthError> {
    crate::net::fetch::check_url(endpoint).map_err(AuthError::Discovery)?;
    let mut form = vec![
        pair("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
        pair("requested_token_type", "urn:ietf:params:oauth:token-type:id-jag"),
        pair("subject_token", id_token),
        pair("subject_token_type", "urn:ietf:params:oauth:token-type:id_token"),
        pair("audience", &cx.server.issuer),
        pair("resource", cx.resource),
        pair("client_id", client_id),
    ];
    if let Some(secret) = client_secret {
        form.push(pair("client_secret", secret));
    }
    if !cx.scopes.is_empty() {
        form.push(pair("scope", &cx.scopes.join(" ")));
    }
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let answer = cx.fetcher.post_form(endpoint, &pairs, &[]).await.map_err(AuthError::Unreachable)?;
    let body = answer.json().unwrap_or_default();
    if !answer.status.is_success() {
        let error = body["error"].as_str().unwrap_or("refused");
        return Err(AuthError::Refused(format!("the identity provider refused the token exchange: {error}")));
    }
    if body["issued_token_type"].as_str().is_some_and(|t| t != "urn:ietf:params:oauth:token-type:id-jag") {
        return Err(AuthError::Refused("the identity provider did not issue an ID-JAG".into()));
    }
    body["access_token"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| AuthError::Refused("the identity provider's answer has no access_token".into()))
}

/// The authorization code flow, the user sent through `redirect`.
pub(crate) async fn authorization_code(cx: &Context<'_>, redirect: Box<dyn Redirect>) -> Result<Tokens, AuthError> {
    let server = cx.server;
    let Some(endpoint) = &server.authorization_endpoint else {
        return Err(AuthError::Discovery(format!("{} has no authorization_endpoint", server.issuer)));
    };
    match &server.code_challenge_methods {
        Some(methods) if !methods.iter().any(|m| m == "S256") => {
            return Err(AuthError::Discovery(format!(
                "{} does not support PKCE with S256: refusing to authorize",
                server.issuer
            )))
        }
        None if !server.defaults_only => {
            return Err(AuthError::Discovery(format!(
                "{} does not say it supports PKCE (code_challenge_methods_supported): refusing to authorize",
                server.issuer
            )))
        }
        _ => {}
    }
    let redirect_uri = redirect.uri();
    let pkce = Pkce::new();
    let state = random_text(16);
    let mut params = vec![
        pair("response_type", "code"),
        pair("client_id", &cx.client.client_id),
        pair("redirect_uri", &redirect_uri),
        pair("code_challenge", &pkce.challenge),
        pair("code_challenge_method", "S256"),
        pair("state", &state),
        pair("resource", cx.resource),
    ];
    if !cx.scopes.is_empty() {
        params.push(pair("scope", &cx.scopes.join(" ")));
    }
    let query: Vec<String> = params.iter().map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v))).collect();
    let separator = if endpoint.contains('?') { '&' } else { '?' };
    let url = format!("{endpoint}{separator}{}", query.join("&"));
    let callback = redirect.run(url).await?;
    let code = check_callback(server, &state, &callback)?;
    let form = vec![
        pair("grant_type", "authorization_code"),
        pair("code", &code),
        pair("redirect_uri", &redirect_uri),
        pair("code_verifier", &pkce.verifier),
        pair("resource", cx.resource),
    ];
    // The scope was fixed by the authorization request: not sent again.
    token::request(&cx.endpoint(), form, cx.scopes).await?.map_err(|f| f.into_error("the code exchange"))
}

/// Reads the redirect back: `state` must be ours; RFC 9207 — `iss` must be the issuer, exactly,
/// whenever present, and present when the server says it sends it (checked before any error
/// the response carries is believed); then the code.
fn check_callback(server: &ServerMetadata, state: &str, callback: &[(String, String)]) -> Result<String, AuthError> {
    let get = |k: &str| callback.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    match (get("iss"), server.iss_parameter_supported) {
        (Some(iss), _) if iss != server.issuer => {
            return Err(AuthError::Refused(format!(
                "the authorization response names issuer {iss:?}, not {:?}: it may come from another server (mix-up attack); not used",
                server.issuer
            )))
        }
        (None, true) => {
            return Err(AuthError::Refused(
                "the authorization response lacks the iss its server promises (RFC 9207): not used".into(),
            ))
        }
        _ => {}
    }
    if get("state") != Some(state) {
        return Err(AuthError::Refused("the authorization response's state is not ours: not used".into()));
    }
    if let Some(error) = get("error") {
        let description = get("error_description").map(|d| format!(" ({d})")).unwrap_or_default();
        return Err(AuthError::Refused(format!("the authorization was not granted: {error}{description}")));
    }
    get("code")
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| AuthError::Refused("the authorization response has no code".into()))
}

/// Renews tokens with their refresh token (rotated if the server sends a new one).
pub(crate) async fn refresh(
    endpoint: &Endpoint<'_>,
    resource: &str,
    tokens: &Tokens,
) -> Result<Result<Tokens, token::TokenFailure>, AuthError> {
    let Some(refresh_token) = &tokens.refresh_token else {
        return Ok(Err(token::TokenFailure {
            error: "invalid_grant".into(),
            description: "no refresh token".into(),
            status: 400,
        }));
    };
    let form =
        vec![pair("grant_type", "refresh_token"), pair("refresh_token", refresh_token), pair("resource", resource)];
    let answer = token::request(endpoint, form, &tokens.scopes).await?;
    Ok(answer.map(|mut fresh| {
        if fresh.refresh_token.is_none() {
            fresh.refresh_token = tokens.refresh_token.clone();
        }
        fresh
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn callback(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_rfc_9207_table() {
        let advertised =
            ServerMetadata { issuer: "https://as".into(), iss_parameter_supported: true, ..Default::default() };
        let silent = ServerMetadata { issuer: "https://as".into(), ..Default::default() };
        let ok = callback(&[("code", "c"), ("state", "s"), ("iss", "https://as")]);
        assert_eq!(check_callback(&advertised, "s", &ok).unwrap(), "c");
        let missing = callback(&[("code", "c"), ("state", "s")]);
        assert!(check_callback(&advertised, "s", &missing).is_err());
        assert_eq!(check_callback(&silent, "s", &missing).unwrap(), "c");
        let wrong = callback(&[("code", "c"), ("state", "s"), ("iss", "https://evil.example.com")]);
        assert!(check_callback(&silent, "s", &wrong).is_err(), "a present iss is always compared");
        let normalized = callback(&[("code", "c"), ("state", "s"), ("iss", "https://as/")]);
        assert!(check_callback(&advertised, "s", &normalized).is_err(), "no normalization");
        let forged_error = callback(&[("error", "access_denied"), ("state", "s"), ("iss", "https://evil")]);
        assert!(check_callback(&advertised, "s", &forged_error).unwrap_err().to_string().contains("mix-up"));
        assert!(check_callback(&silent, "other", &ok).is_err(), "state must match");
    }
}
