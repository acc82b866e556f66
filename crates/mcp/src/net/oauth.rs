//! What both sides of OAuth read alike: a resource URI in canonical form (RFC 8707), and an
//! authorization server's metadata (RFC 8414 and OpenID Connect discovery), whose `issuer` must
//! be the one asked for.

use mcp_types::JsonObject;
use serde_json::Value;

use super::fetch::Fetcher;

/// `scheme://authority` and the path of a URL.
pub(crate) fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => url.split_at(after_scheme + i),
        None => (url, ""),
    }
}

/// A resource URI in canonical form (RFC 8707 and the MCP authorization page): scheme and host
/// lowercase, no fragment, no query, no trailing slash.
pub fn canonical_resource(uri: &str) -> String {
    let uri = uri.split('#').next().unwrap_or_default();
    let uri = uri.split('?').next().unwrap_or_default();
    let (origin, path) = split_origin(uri);
    let mut out = origin.to_ascii_lowercase();
    out.push_str(path.trim_end_matches('/'));
    out
}

/// The well-known URLs of an issuer's metadata, in the order RFC 8414 and OpenID give them.
pub fn metadata_urls(issuer: &str) -> Vec<String> {
    let issuer = issuer.trim_end_matches('/');
    let (origin, path) = match issuer.find("://").and_then(|i| issuer[i + 3..].find('/').map(|j| i + 3 + j)) {
        Some(split) => (&issuer[..split], &issuer[split..]),
        None => (issuer, ""),
    };
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{issuer}/.well-known/openid-configuration"),
        ]
    }
}

/// An issuer's metadata, whose `issuer` must be the one asked for.
pub async fn issuer_metadata(fetcher: &Fetcher, issuer: &str) -> Result<JsonObject, String> {
    let mut tried = Vec::new();
    for url in metadata_urls(issuer) {
        let Ok(answer) = fetcher.get(&url, &[]).await else {
            tried.push(url);
            continue;
        };
        if !answer.status.is_success() {
            tried.push(url);
            continue;
        }
        let Ok(Value::Object(metadata)) = answer.json() else { continue };
        let stated = metadata.get("issuer").and_then(Value::as_str).unwrap_or_default();
        if stated != issuer {
            return Err(format!("the metadata at {url} is for issuer {stated:?}, not {issuer:?}"));
        }
        return Ok(metadata);
    }
    Err(format!("no authorization server metadata for {issuer} (tried {})", tried.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms() {
        assert_eq!(canonical_resource("HTTPS://Example.COM/MCP/"), "https://example.com/MCP");
        assert_eq!(canonical_resource("https://example.com/"), "https://example.com");
        assert_eq!(canonical_resource("https://example.com/mcp#x"), "https://example.com/mcp");
        assert_eq!(canonical_resource("http://127.0.0.1:8080/mcp"), "http://127.0.0.1:8080/mcp");
    }
}
