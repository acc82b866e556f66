//! Small HTTP requests to authorization machinery: metadata documents, JWKS, token and
//! introspection endpoints. Only `https` URLs are fetched (plain `http` only on loopback), a
//! redirect is followed only within the same origin, and answers are bounded.

use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;

use crate::net::connect::Connector;

/// The largest answer read.
const MAX_BODY: usize = 1024 * 1024;
const MAX_REDIRECTS: usize = 5;

/// An answer.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Its status.
    pub status: StatusCode,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body.
    pub body: Bytes,
}

impl Fetched {
    /// The body as JSON.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body).map_err(|e| format!("not JSON ({e})"))
    }
}

/// An answer whose body is read as it arrives (a model's streamed reply).
pub struct Streaming {
    /// Its status.
    pub status: StatusCode,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body.
    pub body: hyper::body::Incoming,
}

/// Makes the requests.
#[derive(Clone)]
pub struct Fetcher {
    client: HyperClient<Connector, Full<Bytes>>,
    timeout: Duration,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fetcher")
    }
}

/// Whether a host is a loopback name or address.
pub fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Checks that `url` may be fetched: `https`, or `http` on loopback.
pub fn check_url(url: &str) -> Result<Uri, String> {
    let uri: Uri = url.parse().map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("https"), Some(_)) => Ok(uri),
        (Some("http"), Some(host)) if is_loopback(host) => Ok(uri),
        (Some("http"), Some(_)) => Err(format!("{url} is plain http: authorization endpoints must use https")),
        _ => Err(format!("{url} is not an https URL")),
    }
}

/// Scheme, host and port (the scheme's default port when none is written).
pub(crate) fn origin(uri: &Uri) -> (Option<&str>, Option<&str>, Option<u16>) {
    let port = uri.port_u16().or(match uri.scheme_str() {
        Some("http") => Some(80),
        Some("https") => Some(443),
        _ => None,
    });
    (uri.scheme_str(), uri.host(), port)
}

impl Fetcher {
    /// A fetcher trusting the system's roots and `ca_files`.
    pub fn new(ca_files: &[std::path::PathBuf]) -> std::io::Result<Fetcher> {
        let client = HyperClient::builder(TokioExecutor::new()).build(Connector::new(ca_files)?);
        Ok(Fetcher { client, timeout: Duration::from_secs(20) })
    }

    /// GET `url` with `headers`.
    pub async fn get(&self, url: &str, headers: &[(&str, String)]) -> Result<Fetched, String> {
        self.send(Method::GET, url, headers, None).await
    }

    /// POST a form to `url`.
    pub async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        headers: &[(&str, String)],
    ) -> Result<Fetched, String> {
        let body: String =
            form.iter().map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v))).collect::<Vec<_>>().join("&");
        let mut all = headers.to_vec();
        all.push((header::CONTENT_TYPE.as_str(), "application/x-www-form-urlencoded".into()));
        self.send(Method::POST, url, &all, Some(Bytes::from(body))).await
    }

    /// POST JSON to `url`.
    pub async fn post_json(
        &self,
        url: &str,
        json: &serde_json::Value,
        headers: &[(&str, String)],
    ) -> Result<Fetched, String> {
        let mut all = headers.to_vec();
        all.push((header::CONTENT_TYPE.as_str(), "application/json".into()));
        self.send(Method::POST, url, &all, Some(Bytes::from(json.to_string()))).await
    }

    /// POST JSON to `url` (http or https: whether plain http is acceptable is the caller's
    /// decision, see [`check_url`]) and return the answer before its body is read (no redirect
    /// is followed), with `timeout` for the answer's head only.
    pub async fn post_json_streaming(
        &self,
        url: &str,
        json: &serde_json::Value,
        headers: &[(&str, String)],
        timeout: Duration,
    ) -> Result<Streaming, String> {
        let uri: Uri = url.parse().map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(format!("{url} is not an http(s) URL"));
        }
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(uri.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "text/event-stream, application/json");
        for (k, v) in headers {
            request = request.header(*k, v.as_str());
        }
        let request = request.body(Full::new(Bytes::from(json.to_string()))).map_err(|e| e.to_string())?;
        let response = tokio::time::timeout(timeout, self.client.request(request))
            .await
            .map_err(|_| format!("{uri} did not answer within {timeout:?}"))?
            .map_err(|e| format!("cannot reach {uri}: {}", crate::net::connect::why(&e)))?;
        let status = response.status();
        let headers = response.headers().clone();
        Ok(Streaming { status, headers, body: response.into_body() })
    }

    /// GET `url` and return the answer's status and headers only: its body is never read (an
    /// endpoint may answer with an endless event stream), nor a redirect followed.
    pub async fn get_head(
        &self,
        url: &str,
        headers: &[(&str, String)],
    ) -> Result<(http::StatusCode, http::HeaderMap), String> {
        let uri: Uri = url.parse().map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        let mut request = Request::builder().method(Method::GET).uri(uri.clone());
        for (k, v) in headers {
            request = request.header(*k, v.as_str());
        }
        let request = request.body(Full::new(Bytes::new())).map_err(|e| e.to_string())?;
        let response = tokio::time::timeout(self.timeout, self.client.request(request))
            .await
            .map_err(|_| format!("{uri} did not answer within {:?}", self.timeout))?
            .map_err(|e| format!("cannot reach {uri}: {}", crate::net::connect::why(&e)))?;
        Ok((response.status(), response.headers().clone()))
    }

    /// DELETE `url` (an MCP session's end), its answer as is.
    pub async fn delete(&self, url: &str, headers: &[(&str, String)]) -> Result<Fetched, String> {
        self.send_with(Method::DELETE, url, headers, None, false).await
    }

    /// GET `url` and return its answer as is, redirects included (a user agent following an
    /// authorization flow reads them itself).
    pub async fn get_once(&self, url: &str, headers: &[(&str, String)]) -> Result<Fetched, String> {
        self.send_with(Method::GET, url, headers, None, false).await
    }

    async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, String)],
        body: Option<Bytes>,
    ) -> Result<Fetched, String> {
        self.send_with(method, url, headers, body, true).await
    }

    async fn send_with(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, String)],
        body: Option<Bytes>,
        follow: bool,
    ) -> Result<Fetched, String> {
        let first = check_url(url)?;
        let mut uri = first.clone();
        for _ in 0..=MAX_REDIRECTS {
            let mut request = Request::builder().method(method.clone()).uri(uri.clone());
            if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(header::ACCEPT.as_str())) {
                request = request.header(header::ACCEPT, "application/json"); // one Accept, the caller's if any
            }
            for (k, v) in headers {
                request = request.header(*k, v.as_str());
            }
            let request = request.body(Full::new(body.clone().unwrap_or_default())).map_err(|e| e.to_string())?;
            let response = tokio::time::timeout(self.timeout, self.client.request(request))
                .await
                .map_err(|_| format!("{uri} did not answer within {:?}", self.timeout))?
                .map_err(|e| format!("cannot reach {uri}: {}", crate::net::connect::why(&e)))?;
            let status = response.status();
            if status.is_redirection() && follow {
                let location =
                    response.headers().get(header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or_default();
                let next = resolve(&uri, location)?;
                if origin(&next) != origin(&first) {
                    return Err(format!("{uri} redirects to another host ({next}): not followed"));
                }
                uri = next;
                continue;
            }
            let headers = response.headers().clone();
            let body = Limited::new(response.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|e| format!("reading the answer of {uri}: {e}"))?
                .to_bytes();
            return Ok(Fetched { status, headers, body });
        }
        Err(format!("{url}: too many redirects"))
    }
}

/// A redirect target, absolute or relative to `base`.
pub(crate) fn resolve(base: &Uri, location: &str) -> Result<Uri, String> {
    if location.contains("://") {
        return location.parse().map_err(|e| format!("bad redirect {location:?}: {e}"));
    }
    let scheme = base.scheme_str().unwrap_or("https");
    let authority = base.authority().map(|a| a.as_str()).unwrap_or_default();
    let path = match location.starts_with('/') {
        true => location.to_owned(),
        // Relative to the base's directory: "mcp/" from "/api/x" is "/api/mcp/".
        false => format!("{}{location}", &base.path()[..=base.path().rfind('/').unwrap_or(0)]),
    };
    format!("{scheme}://{authority}{path}").parse().map_err(|e| format!("bad redirect {location:?}: {e}"))
}

/// `application/x-www-form-urlencoded` encoding of one key or value.
pub fn form_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http() {
        assert!(check_url("https://as.example/token").is_ok());
        assert!(check_url("http://127.0.0.1:9/token").is_ok());
        assert!(check_url("http://localhost/x").is_ok());
        assert!(check_url("http://[::1]:80/x").is_ok());
        assert!(check_url("http://as.example/token").is_err());
        assert!(check_url("ftp://as.example/").is_err());
        assert_eq!(form_encode("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
    }
}
