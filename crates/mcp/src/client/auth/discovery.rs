//! Where to get a token: the server's protected resource metadata (RFC 9728; the URL the 401
//! names, then the path-inserted well-known URI, then the root one), the authorization server's
//! metadata (RFC 8414, then OpenID discovery, in the spec's order, its `issuer` checked), and
//! the 2025-03-26 fallbacks for servers without resource metadata.

use serde_json::Value;

use super::challenge::Challenge;
use super::AuthError;
use crate::net::fetch::Fetcher;
use crate::net::oauth::canonical_resource;

/// What the authorization server says about itself.
#[derive(Debug, Clone, Default)]
pub struct ServerMetadata {
    /// Its issuer identifier.
    pub issuer: String,
    /// Where the user authorizes.
    pub authorization_endpoint: Option<String>,
    /// Where tokens come from.
    pub token_endpoint: String,
    /// Dynamic registration (RFC 7591).
    pub registration_endpoint: Option<String>,
    /// The scopes it knows.
    pub scopes_supported: Vec<String>,
    /// PKCE methods (`None`: not said).
    pub code_challenge_methods: Option<Vec<String>>,
    /// RFC 9207: it puts `iss` in authorization responses.
    pub iss_parameter_supported: bool,
    /// Token endpoint authentication methods.
    pub auth_methods: Vec<String>,
    /// Algorithms for `private_key_jwt`.
    pub auth_signing_algs: Vec<String>,
    /// DPoP algorithms (empty: no DPoP).
    pub dpop_algs: Vec<String>,
    /// It accepts Client ID Metadata Document URLs as client ids.
    pub cimd_supported: bool,
    /// The grants it supports, if it says.
    pub grant_types: Vec<String>,
    /// Made up from the 2025-03-26 defaults (no metadata anywhere).
    pub defaults_only: bool,
}

/// What discovery found.
#[derive(Debug, Clone)]
pub struct Discovered {
    /// The `resource` to ask tokens for (RFC 8707).
    pub resource: String,
    /// `scopes_supported` of the resource metadata.
    pub resource_scopes: Vec<String>,
    /// The resource metadata lists DPoP algorithms: the server takes DPoP-bound tokens.
    pub resource_dpop: bool,
    /// The authorization server chosen.
    pub server: ServerMetadata,
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

/// `scheme://authority` and the path (no query) of a URL.
fn split(url: &str) -> (String, String) {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => (url[..after_scheme + i].to_owned(), url[after_scheme + i..].trim_end_matches('/').to_owned()),
        None => (url.to_owned(), String::new()),
    }
}

/// Whether the metadata's `resource` may stand for `server_url`: the same origin, and a path
/// that is the server's or one of its parents.
pub fn resource_covers(resource: &str, server_url: &str) -> bool {
    let (r_origin, r_path) = split(&canonical_resource(resource));
    let (s_origin, s_path) = split(&canonical_resource(server_url));
    r_origin == s_origin && (r_path.is_empty() || s_path == r_path || s_path.starts_with(&format!("{r_path}/")))
}

/// The resource metadata URLs to try, in order.
pub fn metadata_candidates(server_url: &str, challenge: Option<&Challenge>) -> Vec<String> {
    let (origin, path) = split(server_url);
    let mut urls = Vec::new();
    if let Some(url) = challenge.and_then(|c| c.get("resource_metadata")) {
        urls.push(url.to_owned());
    }
    if !path.is_empty() {
        urls.push(format!("{origin}/.well-known/oauth-protected-resource{path}"));
    }
    urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    urls.dedup();
    urls
}

/// The first resource metadata document found, with the URL it came from.
async fn resource_metadata(fetcher: &Fetcher, urls: &[String], version: &str) -> Result<Option<Value>, AuthError> {
    for url in urls {
        let answer = match fetcher.get(url, &[("mcp-protocol-version", version.to_owned())]).await {
            Ok(answer) => answer,
            // Plain http where https is needed, or a redirect to another host (a token for this
            // server must never be asked for on another's word): said, not passed over.
            Err(e) if e.contains("https") || e.contains("another host") => return Err(AuthError::Discovery(e)),
            Err(_) => continue,
        };
        if !answer.status.is_success() {
            continue;
        }
        match answer.json() {
            Ok(doc @ Value::Object(_)) => return Ok(Some(doc)),
            _ => return Err(AuthError::Discovery(format!("the resource metadata at {url} is not a JSON object"))),
        }
    }
    Ok(None)
}

/// An authorization server's metadata document, read: its token endpoint (required) and every
/// endpoint URL checked, the rest taken as said.
pub(crate) fn read_server_metadata(doc: &serde_json::Map<String, Value>) -> Result<ServerMetadata, AuthError> {
    let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
    let token_endpoint = text("token_endpoint")
        .ok_or_else(|| AuthError::Discovery("the authorization server's metadata names no token_endpoint".into()))?;
    for (name, url) in
        [("token_endpoint", Some(&token_endpoint)), ("authorization_endpoint", text("authorization_endpoint").as_ref())]
    {
        if let Some(url) = url {
            crate::net::fetch::check_url(url).map_err(|e| AuthError::Discovery(format!("{name}: {e}")))?;
        }
    }
    Ok(ServerMetadata {
        issuer: text("issuer").unwrap_or_default(),
        authorization_endpoint: text("authorization_endpoint"),
        token_endpoint,
        registration_endpoint: text("registration_endpoint"),
        scopes_supported: strings(&doc.get("scopes_supported").cloned().unwrap_or_default()),
        code_challenge_methods: doc.get("code_challenge_methods_supported").map(strings),
        iss_parameter_supported: doc.get("authorization_response_iss_parameter_supported") == Some(&Value::Bool(true)),
        auth_methods: doc
            .get("token_endpoint_auth_methods_supported")
            .map(strings)
            .unwrap_or_else(|| vec!["client_secret_basic".into()]),
        auth_signing_algs: strings(
            &doc.get("token_endpoint_auth_signing_alg_values_supported").cloned().unwrap_or_default(),
        ),
        dpop_algs: strings(&doc.get("dpop_signing_alg_values_supported").cloned().unwrap_or_default()),
        cimd_supported: doc.get("client_id_metadata_document_supported") == Some(&Value::Bool(true)),
        grant_types: strings(&doc.get("grant_types_supported").cloned().unwrap_or_default()),
        defaults_only: false,
    })
}

/// The metadata of the authorization server `issuer`, whose stated issuer must be it exactly.
pub async fn authorization_server(fetcher: &Fetcher, issuer: &str) -> Result<ServerMetadata, AuthError> {
    crate::net::fetch::check_url(issuer).map_err(AuthError::Discovery)?;
    let doc = crate::net::oauth::issuer_metadata(fetcher, issuer).await.map_err(AuthError::Discovery)?;
    read_server_metadata(&doc)
}

/// 2025-03-26, no resource metadata: the authorization server is the MCP server's origin, its
/// metadata at the origin's well-known URI, else the default endpoints there.
async fn legacy_server(fetcher: &Fetcher, server_url: &str) -> Result<ServerMetadata, AuthError> {
    let (origin, _) = split(server_url);
    let url = format!("{origin}/.well-known/oauth-authorization-server");
    if let Ok(answer) = fetcher.get(&url, &[]).await {
        if answer.status.is_success() {
            if let Ok(Value::Object(doc)) = answer.json() {
                let stated = doc.get("issuer").and_then(Value::as_str).unwrap_or_default();
                if stated.trim_end_matches('/') != origin {
                    return Err(AuthError::Discovery(format!(
                        "the metadata at {url} is for issuer {stated:?}, not {origin:?}: not used"
                    )));
                }
                return read_server_metadata(&doc);
            }
        }
    }
    Ok(ServerMetadata {
        issuer: origin.clone(),
        authorization_endpoint: Some(format!("{origin}/authorize")),
        token_endpoint: format!("{origin}/token"),
        registration_endpoint: Some(format!("{origin}/register")),
        auth_methods: vec!["client_secret_basic".into(), "client_secret_post".into(), "none".into()],
        defaults_only: true,
        ..ServerMetadata::default()
    })
}

/// Finds the authorization server of the MCP server at `server_url`, from the challenge of its
/// 401 (if any). `preferred` picks among several authorization servers (one we hold
/// credentials for).
pub async fn discover(
    fetcher: &Fetcher,
    server_url: &str,
    challenge: Option<&Challenge>,
    version: &str,
    preferred: impl Fn(&str) -> bool,
) -> Result<Discovered, AuthError> {
    let candidates = metadata_candidates(server_url, challenge);
    let Some(prm) = resource_metadata(fetcher, &candidates, version).await? else {
        let server = legacy_server(fetcher, server_url).await?;
        return Ok(Discovered {
            resource: canonical_resource(server_url),
            resource_scopes: Vec::new(),
            resource_dpop: false,
            server,
        });
    };
    let said = read_resource_metadata(&prm, server_url, preferred)?;
    let server = authorization_server(fetcher, &said.issuer).await?;
    Ok(Discovered { resource: said.resource, resource_scopes: said.scopes, resource_dpop: said.dpop, server })
}

/// What a protected resource's metadata says, read.
pub(crate) struct ResourceSays {
    /// The resource to ask tokens for.
    pub resource: String,
    /// The authorization server chosen.
    pub issuer: String,
    /// `scopes_supported`.
    pub scopes: Vec<String>,
    /// It lists DPoP algorithms.
    pub dpop: bool,
}

/// Reads the resource metadata `prm` of the MCP server at `server_url`: its `resource` must cover
/// the server's URL, and it must name an authorization server (`preferred` picks among several).
pub(crate) fn read_resource_metadata(
    prm: &Value,
    server_url: &str,
    preferred: impl Fn(&str) -> bool,
) -> Result<ResourceSays, AuthError> {
    let resource = match prm.get("resource").and_then(Value::as_str) {
        Some(resource) if resource_covers(resource, server_url) => resource.to_owned(),
        Some(resource) => {
            return Err(AuthError::Discovery(format!(
                "the server's metadata says it is {resource}, not {server_url}: refusing to get a token for it"
            )))
        }
        None => canonical_resource(server_url),
    };
    let servers = strings(&prm["authorization_servers"]);
    let issuer = servers
        .iter()
        .find(|s| preferred(s))
        .or(servers.first())
        .ok_or_else(|| AuthError::Discovery("the server's metadata names no authorization server".into()))?
        .clone();
    let dpop = !strings(&prm["dpop_signing_alg_values_supported"]).is_empty();
    Ok(ResourceSays { resource, issuer, scopes: strings(&prm["scopes_supported"]), dpop })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_in_order() {
        let c = Challenge {
            scheme: "bearer".into(),
            params: [("resource_metadata".to_string(), "https://h/custom".to_string())].into(),
        };
        assert_eq!(
            metadata_candidates("https://h/v1/mcp", Some(&c)),
            [
                "https://h/custom",
                "https://h/.well-known/oauth-protected-resource/v1/mcp",
                "https://h/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(metadata_candidates("https://h", None), ["https://h/.well-known/oauth-protected-resource"]);
    }

    #[test]
    fn a_resource_covers_its_own_url_and_children_only() {
        assert!(resource_covers("https://h/mcp", "https://h/mcp"));
        assert!(resource_covers("https://H/mcp/", "https://h/mcp"));
        assert!(resource_covers("https://h", "https://h/mcp"));
        assert!(resource_covers("https://h/api", "https://h/api/mcp"));
        assert!(!resource_covers("https://h/api", "https://h/apiary/mcp"));
        assert!(!resource_covers("https://evil.example.com/mcp", "http://localhost:3000/mcp"));
        assert!(!resource_covers("https://h/other", "https://h/mcp"));
    }
}
