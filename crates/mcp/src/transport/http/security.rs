//! Request checks that come before any JSON: DNS rebinding (Host and Origin), media types.

use http::{header, HeaderMap, StatusCode};

use super::HttpConfig;

/// Why a request was refused before it reached the protocol.
pub(crate) struct Refusal {
    pub status: StatusCode,
    pub message: String,
}

fn refuse(status: StatusCode, message: impl Into<String>) -> Refusal {
    Refusal { status, message: message.into() }
}

/// The host part of a `Host`-like value: `localhost:8080` → `localhost`, `[::1]:80` → `[::1]`.
fn host_name(value: &str) -> &str {
    if let Some(end) = value.find(']') {
        return &value[..=end];
    }
    value.rsplit_once(':').map_or(value, |(h, port)| if port.bytes().all(|b| b.is_ascii_digit()) { h } else { value })
}

fn is_loopback_name(host: &str) -> bool {
    matches!(host.to_ascii_lowercase().as_str(), "localhost" | "127.0.0.1" | "[::1]") || host.starts_with("127.")
}

/// DNS-rebinding protection: on a server bound to loopback, `Host` must name loopback (or an
/// allowed host) and a present `Origin` must be a loopback or allowed origin.
pub(crate) fn check_host_and_origin(config: &HttpConfig, headers: &HeaderMap) -> Result<(), Refusal> {
    let forwarded = config.trust_proxy.then(|| headers.get("x-forwarded-host")).flatten();
    let host = forwarded.or_else(|| headers.get(header::HOST)).and_then(|v| v.to_str().ok()).unwrap_or("");
    let host_ok = config
        .allowed_hosts
        .iter()
        .any(|h| h == "*" || h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(host_name(host)))
        || (config.loopback_only && is_loopback_name(host_name(host)));
    if !host_ok && (config.loopback_only || !config.allowed_hosts.is_empty()) {
        return Err(refuse(StatusCode::MISDIRECTED_REQUEST, format!("Host {host:?} is not allowed")));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let name = origin.split_once("://").map_or(origin, |(_, rest)| rest);
        let allowed = config.allowed_origins.iter().any(|o| o == "*" || o.eq_ignore_ascii_case(origin))
            || (config.loopback_only && is_loopback_name(host_name(name)));
        if !allowed && (config.loopback_only || !config.allowed_origins.is_empty()) {
            return Err(refuse(StatusCode::FORBIDDEN, format!("Origin {origin:?} is not allowed")));
        }
    }
    Ok(())
}

/// POST bodies must be JSON.
pub(crate) fn check_content_type(headers: &HeaderMap) -> Result<(), Refusal> {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if ct.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json")) {
        Ok(())
    } else {
        Err(refuse(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json"))
    }
}

/// Whether the `Accept` header lists `media` (or a wildcard for it).
pub(crate) fn accepts(headers: &HeaderMap, media: &str) -> bool {
    let kind = media.split_once('/').map_or(media, |(kind, _)| kind);
    accepted_items(headers).any(|item| covers(item, media, kind))
}

/// The media ranges of every `Accept` header, without their parameters.
fn accepted_items(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    let values = headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok());
    values.flat_map(|v| v.split(',')).map(|item| item.split(';').next().unwrap_or("").trim())
}

/// Whether the media range `item` covers `media`, whose type is `kind`.
fn covers(item: &str, media: &str, kind: &str) -> bool {
    let kind_wildcard = item.len() == kind.len() + 2
        && item.ends_with("/*")
        && item.get(..kind.len()).is_some_and(|k| k.eq_ignore_ascii_case(kind));
    item.eq_ignore_ascii_case(media) || item == "*/*" || kind_wildcard
}

/// POST must accept both JSON and SSE answers (one pass over the header).
pub(crate) fn check_post_accept(headers: &HeaderMap) -> Result<(), Refusal> {
    let (mut json, mut sse) = (false, false);
    for item in accepted_items(headers) {
        json |= covers(item, "application/json", "application");
        sse |= covers(item, "text/event-stream", "text");
    }
    if json && sse {
        Ok(())
    } else {
        Err(refuse(StatusCode::NOT_ACCEPTABLE, "Accept must list both application/json and text/event-stream"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_lists_and_wildcards() {
        let with = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT, value.parse().unwrap());
            h
        };
        assert!(check_post_accept(&with("application/json, text/event-stream")).is_ok());
        assert!(check_post_accept(&with("Application/JSON;q=0.9 , TEXT/*")).is_ok());
        assert!(check_post_accept(&with("*/*")).is_ok());
        assert!(check_post_accept(&with("application/json")).is_err());
        assert!(check_post_accept(&with("application/*, text/plain")).is_err());
        assert!(check_post_accept(&with("app/*, text/event-stream")).is_err());
        assert!(accepts(&with("text/*"), "text/event-stream"));
        assert!(!accepts(&with("texts/*"), "text/event-stream"));
    }

    #[test]
    fn host_names() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("[::1]:80"), "[::1]");
        assert_eq!(host_name("example.com"), "example.com");
        assert!(is_loopback_name("127.0.0.1"));
        assert!(!is_loopback_name("evil.example.com"));
    }
}
