//! The tower layer in front of the MCP endpoint: metadata, challenges, verification, scopes.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::Full;
use mcp_types::jsonrpc::{Envelope, MessageKind};
use serde_json::json;
use serde_json::value::RawValue;

use super::challenge::{credentials, Challenge, Credentials};
use super::dpop::{check_proof, ReplayCache, ALGORITHMS};
use super::verify::{Accepted, TokenCache, TokenError};
use super::{split_origin, ResourceServer, METADATA_PATH};
use crate::net::body::{full as full_body, Body};
use crate::server::identity::Identity;
use crate::Router;

/// Makes [`AuthService`]s: see [`ResourceServer::layer`].
#[derive(Clone)]
pub struct AuthLayer {
    shared: Arc<Shared>,
}

struct Shared {
    server: Arc<ResourceServer>,
    router: Router,
    cache: TokenCache,
    replays: ReplayCache,
    max_body: usize,
}

impl AuthLayer {
    pub(crate) fn new(server: Arc<ResourceServer>, router: Router) -> Self {
        let cache = TokenCache::new(server.cache_size, server.cache_cap);
        let replays = ReplayCache::default();
        AuthLayer { shared: Arc::new(Shared { server, router, cache, replays, max_body: 4 * 1024 * 1024 }) }
    }

    /// The largest request body read (default 4 MiB, as the endpoint's own default).
    pub fn max_body(self, bytes: usize) -> Self {
        let shared = &self.shared;
        let cache = TokenCache::new(shared.server.cache_size, shared.server.cache_cap);
        let shared = Shared {
            server: shared.server.clone(),
            router: shared.router.clone(),
            cache,
            replays: ReplayCache::default(),
            max_body: bytes,
        };
        AuthLayer { shared: Arc::new(shared) }
    }
}

impl<S> tower_layer::Layer<S> for AuthLayer {
    type Service = AuthService<S>;

    fn layer(&self, inner: S) -> AuthService<S> {
        AuthService { shared: self.shared.clone(), inner }
    }
}

/// The MCP endpoint behind the resource server: requests reach `S` only with a valid token
/// carrying the scopes they need, with the caller's [`Identity`] in their extensions.
#[derive(Clone)]
pub struct AuthService<S> {
    shared: Arc<Shared>,
    inner: S,
}

impl<S, B> tower_service::Service<Request<B>> for AuthService<S>
where
    S: tower_service::Service<Request<Full<Bytes>>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let shared = self.shared.clone();
        // The clone that was driven to readiness serves this request (tower's rule).
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move { Ok(handle(shared, inner, request).await) })
    }
}

async fn handle<S, B>(shared: Arc<Shared>, mut inner: S, request: Request<B>) -> Response<Body>
where
    S: tower_service::Service<Request<Full<Bytes>>, Response = Response<Body>, Error = Infallible>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if let Some(response) = metadata(&shared, &request) {
        return response;
    }
    let (mut parts, body) = request.into_parts();
    if parts.method == Method::OPTIONS || parts.uri.path().starts_with("/.well-known/") {
        // A CORS preflight carries no credentials; other well-known documents are not ours.
        return call(&mut inner, Request::from_parts(parts, Full::new(Bytes::new()))).await;
    }
    let body = if parts.method == Method::POST {
        let length = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.trim().parse().ok());
        match crate::net::body::read_limited(body, shared.max_body, length).await {
            Ok(bytes) => bytes,
            Err(crate::net::body::ReadError::TooLarge) => {
                return oauth_error(StatusCode::PAYLOAD_TOO_LARGE, "invalid_request", "the request body is too large")
            }
            Err(crate::net::body::ReadError::Failed(_)) => {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "the request body could not be read")
            }
        }
    } else {
        Bytes::new()
    };
    let needed = needed_scopes(&shared.router, &parts.method, &body);
    let identity = match authenticate(&shared, &parts, &needed).await {
        Ok(identity) => identity,
        Err(refusal) => return refusal,
    };
    if let Some(description) = scope_shortfall(&shared.router, &identity, &needed) {
        return challenge(&shared, StatusCode::FORBIDDEN, Some("insufficient_scope"), &description, &needed);
    }
    parts.extensions.insert(identity);
    call(&mut inner, Request::from_parts(parts, Full::new(body))).await
}

/// Why the token's scopes fall short of `needed`, if they do.
fn scope_shortfall(router: &Router, identity: &Identity, needed: &[String]) -> Option<String> {
    let rules = router.scope_rules();
    if rules.satisfied(identity.scopes(), needed) {
        return None;
    }
    let missing: Vec<&str> = needed
        .iter()
        .filter(|n| !rules.satisfied(identity.scopes(), std::slice::from_ref(n)))
        .map(String::as_str)
        .collect();
    Some(format!("this request needs the scopes {}; the token lacks {}", needed.join(" "), missing.join(" ")))
}

async fn call<S>(inner: &mut S, request: Request<Full<Bytes>>) -> Response<Body>
where
    S: tower_service::Service<Request<Full<Bytes>>, Response = Response<Body>, Error = Infallible>,
{
    match inner.call(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// The caller, or the response refusing it.
async fn authenticate(
    shared: &Shared,
    parts: &http::request::Parts,
    needed: &[String],
) -> Result<Identity, Response<Body>> {
    let (token, dpop) = match credentials(&parts.headers) {
        Credentials::Bearer(token) => (token, false),
        Credentials::Dpop(token) => (token, true),
        Credentials::Malformed(why) => {
            return Err(challenge(shared, StatusCode::BAD_REQUEST, Some("invalid_request"), why, needed));
        }
        Credentials::None => {
            let why = if parts.uri.query().is_some_and(|q| q.contains("access_token=")) {
                "send the access token in the Authorization header: a token in the URL is not accepted"
            } else {
                "this server needs an access token: see resource_metadata"
            };
            return Err(challenge(shared, StatusCode::UNAUTHORIZED, None, why, needed));
        }
    };
    let accepted = match shared.cache.get(token) {
        Some(accepted) => accepted,
        None => match shared.server.verifier.verify(token).await {
            Ok(verified) => {
                let audience_ok = shared.server.audience_ok(&verified.audience);
                let identity = Identity::new(Arc::new(verified), Arc::from(token));
                let accepted = Accepted { identity, audience_ok };
                shared.cache.put(accepted.clone());
                accepted
            }
            Err(TokenError::Invalid(why)) => {
                tracing::debug!("refused a token: {why}");
                return Err(challenge(shared, StatusCode::UNAUTHORIZED, Some("invalid_token"), &why, needed));
            }
            Err(TokenError::Unavailable(why)) => {
                tracing::warn!("cannot verify tokens: {why}");
                let mut r = oauth_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "temporarily_unavailable",
                    "tokens cannot be verified right now",
                );
                r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                return Err(r);
            }
        },
    };
    let identity = accepted.identity;
    if identity.expires_at().is_some_and(|exp| exp + 30 < now()) {
        return Err(challenge(
            shared,
            StatusCode::UNAUTHORIZED,
            Some("invalid_token"),
            "the token has expired",
            needed,
        ));
    }
    if !accepted.audience_ok {
        let why = "the token was issued for another resource (its audience does not name this server)";
        return Err(challenge(shared, StatusCode::UNAUTHORIZED, Some("invalid_token"), why, needed));
    }
    check_binding(shared, parts, token, dpop, identity.claims())
        .map_err(|(error, why)| challenge(shared, StatusCode::UNAUTHORIZED, Some(error), &why, needed))?;
    Ok(identity)
}

/// RFC 9449: a token bound to a key (`cnf.jkt`) needs the `DPoP` scheme and a valid proof; the
/// `DPoP` scheme needs a bound token.
fn check_binding(
    shared: &Shared,
    parts: &http::request::Parts,
    token: &str,
    dpop: bool,
    claims: &mcp_types::JsonObject,
) -> Result<(), (&'static str, String)> {
    let jkt = claims.get("cnf").and_then(|c| c.get("jkt")).and_then(serde_json::Value::as_str);
    match (jkt, dpop) {
        (None, false) => Ok(()),
        (None, true) => Err(("invalid_token", "the DPoP scheme needs a DPoP-bound token".into())),
        (Some(_), false) => {
            Err(("invalid_token", "this token is bound to a DPoP key: send it with the DPoP scheme and a proof".into()))
        }
        (Some(jkt), true) => {
            let mut proofs = parts.headers.get_all("dpop").iter();
            let (Some(proof), None) = (proofs.next(), proofs.next()) else {
                return Err(("invalid_dpop_proof", "a DPoP request needs exactly one DPoP proof header".into()));
            };
            let proof = proof.to_str().map_err(|_| ("invalid_dpop_proof", "the DPoP proof is not ASCII".to_owned()))?;
            let resource = shared.server.resource.as_deref().unwrap_or_default();
            let url = format!("{}{}", split_origin(resource).0, parts.uri.path());
            check_proof(proof, parts.method.as_str(), &url, token, jkt, &shared.replays)
                .map_err(|why| ("invalid_dpop_proof", why))
        }
    }
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Every scope the request needs (all messages of a batch): the server's minimum, plus the
/// scopes of each tool, resource or prompt it names. The messages are read by the endpoint's own
/// readers (the [`Envelope`] and the params' head), without a tree: what is judged here is what
/// runs there. A message they refuse (a body that does not parse, a key given twice) needs the
/// minimum, and the endpoint answers its error.
pub(super) fn needed_scopes(router: &Router, method: &Method, body: &[u8]) -> Vec<String> {
    let rules = router.scope_rules();
    if *method != Method::POST || rules.is_empty() {
        return rules.minimum.clone();
    }
    let mut needed = rules.minimum.clone();
    let mut add = |envelope: Envelope<'_>| {
        if let Ok(MessageKind::Request { method, params, .. } | MessageKind::Notification { method, params }) =
            envelope.kind()
        {
            let name = crate::server::middleware::named_item(&method, params.map(RawValue::get));
            rules.add_required(&mut needed, &method, name.as_deref());
        }
    };
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        let items: Vec<&RawValue> = serde_json::from_slice(body).unwrap_or_default();
        items.iter().filter_map(|item| serde_json::from_str(item.get()).ok()).for_each(&mut add);
    } else if let Ok(envelope) = serde_json::from_slice(body) {
        add(envelope);
    }
    needed
}

/// The metadata document, when the request asks for it.
fn metadata<B>(shared: &Shared, request: &Request<B>) -> Option<Response<Body>> {
    // The metadata path itself, or with the resource's path inserted after it.
    let after = request.uri().path().trim_end_matches('/').strip_prefix(METADATA_PATH)?;
    let resource = shared.server.resource.as_deref().unwrap_or_default();
    let (_, resource_path) = split_origin(resource);
    if !after.is_empty() && after != resource_path.trim_end_matches('/') {
        return None;
    }
    let mut response = match *request.method() {
        Method::GET | Method::HEAD => {
            let doc = shared.server.metadata(shared.router.scope_rules().all());
            let mut r = Response::new(full_body(doc.to_string()));
            r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("max-age=300"));
            r
        }
        Method::OPTIONS => {
            let mut r = Response::new(full_body(Bytes::new()));
            *r.status_mut() = StatusCode::NO_CONTENT;
            r
        }
        _ => {
            let mut r = Response::new(full_body("use GET"));
            *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
            r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD, OPTIONS"));
            r
        }
    };
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, HEAD, OPTIONS"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("*"));
    Some(response)
}

/// A challenge response: `status`, the `WWW-Authenticate` header, and the OAuth error as JSON.
fn challenge(
    shared: &Shared,
    status: StatusCode,
    error: Option<&'static str>,
    why: &str,
    scopes: &[String],
) -> Response<Body> {
    let metadata_url = shared.server.metadata_url();
    let header_value = Challenge { error, description: Some(why), scopes, resource_metadata: &metadata_url }.header();
    let mut r = oauth_error(status, error.unwrap_or("unauthorized"), why);
    if let Ok(value) = HeaderValue::from_str(&header_value) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    if status == StatusCode::UNAUTHORIZED {
        // The DPoP scheme is accepted too (RFC 9449 §7.1).
        let dpop_error = if error == Some("invalid_dpop_proof") { ", error=\"invalid_dpop_proof\"" } else { "" };
        let dpop = format!("DPoP algs=\"{}\"{dpop_error}", ALGORITHMS.join(" "));
        if let Ok(value) = HeaderValue::from_str(&dpop) {
            r.headers_mut().append(header::WWW_AUTHENTICATE, value);
        }
    }
    r.headers_mut().insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("WWW-Authenticate"));
    r
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response<Body> {
    let body = json!({"error": error, "error_description": description}).to_string();
    let mut r = Response::new(full_body(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}
