//! The inspector's web server: loopback only, and every request must carry the token the URL
//! printed at start (in the query for the page, in `x-inspector-token` for the API), with a Host
//! naming this listener (no DNS rebinding) and, when an Origin is sent, this origin (no
//! cross-site page can drive it). An app's frame is the exception: its URL holds a single-use
//! id the page was given, never the token (the app's document can read its own address). The page, its script and its style are built into
//! the binary.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::session::{epoch_seconds, Session};

const PAGE: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const FORMS: &str = include_str!("page/forms.js");
const STYLE: &str = include_str!("page/app.css");
/// The largest request body the API takes (a tool's arguments, an app's HTML).
const BODY_CAP: usize = 8 * 1024 * 1024;
/// App frames handed out and not loaded yet, at most.
const FRAMES_CAP: usize = 64;
/// The page's own policy: nothing from elsewhere, frames only from here, nobody frames it.
const PAGE_CSP: &str = "default-src 'self'; img-src 'self' data:; media-src 'self' data:; \
    script-src 'self'; style-src 'self'; connect-src 'self'; frame-src 'self'; frame-ancestors 'none'; \
    form-action 'none'; base-uri 'none'";

/// What every request is checked against.
pub struct Guard {
    /// The secret of the printed URL.
    pub token: String,
    /// The listener's port (Host must be 127.0.0.1:PORT or localhost:PORT).
    pub port: u16,
}

impl Guard {
    fn origins(&self) -> [String; 2] {
        [format!("http://127.0.0.1:{}", self.port), format!("http://localhost:{}", self.port)]
    }

    /// Why the request is refused, if it is.
    fn refuse(&self, req: &Request<Incoming>, query: &HashMap<String, String>) -> Option<(StatusCode, &'static str)> {
        let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
        if !self.origins().iter().any(|o| o.strip_prefix("http://") == Some(host)) {
            return Some((StatusCode::MISDIRECTED_REQUEST, "this inspector answers only at 127.0.0.1 or localhost"));
        }
        if let Some(origin) = req.headers().get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or_default();
            if !self.origins().iter().any(|o| o == origin) {
                return Some((StatusCode::FORBIDDEN, "requests from other origins are refused"));
            }
        }
        // An app's frame is loaded by its single-use id alone (128 random bits, given to the page
        // that holds the token): the token stays out of the frame's address.
        if req.method() == Method::GET && req.uri().path().starts_with("/frame/") {
            return None;
        }
        let given = req
            .headers()
            .get("x-inspector-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| query.get("token").cloned())
            .unwrap_or_default();
        if !same(given.as_bytes(), self.token.as_bytes()) {
            return Some((
                StatusCode::UNAUTHORIZED,
                "the inspector's token is missing or wrong: open the URL it printed",
            ));
        }
        None
    }
}

/// Compares two secrets in time that depends only on their lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Serves until the listener fails.
pub async fn serve(listener: tokio::net::TcpListener, guard: Arc<Guard>, session: Arc<Session>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let (guard, session) = (guard.clone(), session.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let (guard, session) = (guard.clone(), session.clone());
                async move { Ok::<_, Infallible>(handle(req, &guard, &session).await) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
        });
    }
}

/// The address to listen on: loopback, a free port.
pub fn address() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

type Reply = Response<Full<Bytes>>;

fn reply(status: StatusCode, kind: &str, body: impl Into<Bytes>) -> Reply {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, kind)
        .header(header::CACHE_CONTROL, "no-store")
        .header("x-content-type-options", "nosniff")
        .header("referrer-policy", "no-referrer")
        .body(Full::new(body.into()))
        .expect("a valid response")
}

fn json_reply(value: Value) -> Reply {
    reply(StatusCode::OK, "application/json", value.to_string())
}

fn refused(status: StatusCode, why: &str) -> Reply {
    reply(status, "text/plain; charset=utf-8", format!("{why}\n"))
}

fn query(req: &Request<Incoming>) -> HashMap<String, String> {
    req.uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_owned(), mcp::util::percent::percent_decode(v)))
        .collect()
}

async fn handle(req: Request<Incoming>, guard: &Guard, session: &Arc<Session>) -> Reply {
    let query = query(&req);
    if let Some((status, why)) = guard.refuse(&req, &query) {
        return refused(status, why);
    }
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    match (method, path.as_str()) {
        (Method::GET, "/") => page(&guard.token),
        (Method::GET, "/app.js") => reply(StatusCode::OK, "text/javascript; charset=utf-8", SCRIPT),
        (Method::GET, "/forms.js") => reply(StatusCode::OK, "text/javascript; charset=utf-8", FORMS),
        (Method::GET, "/app.css") => reply(StatusCode::OK, "text/css; charset=utf-8", STYLE),
        (Method::GET, "/api/events") => {
            let after = query.get("after").and_then(|a| a.parse().ok());
            let wait = query.get("wait").and_then(|w| w.parse().ok()).unwrap_or(20_000u64).min(30_000);
            json_reply(session.events(after, Duration::from_millis(wait)).await)
        }
        (Method::GET, "/api/server") => json_reply(match session.server().await {
            Ok(server) => server,
            Err(e) => json!({"error": e}),
        }),
        (Method::GET, "/api/auth") => json_reply(match &session.auth {
            Some(auth) => auth.steps().await,
            None => json!({"steps": [], "stdio": true}),
        }),
        (Method::GET, "/api/traffic.jsonl") => Response::builder()
            .header(header::CONTENT_TYPE, "application/x-ndjson")
            .header(
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"mcp-traffic-{}.jsonl\"", epoch_seconds()),
            )
            .header(header::CACHE_CONTROL, "no-store")
            .body(Full::new(session.traffic_lines().into()))
            .expect("a valid response"),
        (Method::GET, frame) if frame.starts_with("/frame/") => app_frame(session, &frame["/frame/".len()..]),
        (Method::POST, api) if api.starts_with("/api/") => {
            let is_json = req
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("application/json"));
            if !is_json {
                return refused(StatusCode::UNSUPPORTED_MEDIA_TYPE, "the API takes application/json");
            }
            let body = match Limited::new(req.into_body(), BODY_CAP).collect().await {
                Ok(body) => body.to_bytes(),
                Err(_) => return refused(StatusCode::PAYLOAD_TOO_LARGE, "the body is over 8 MiB, or was cut"),
            };
            let body: Value = match serde_json::from_slice(&body) {
                Ok(body) => body,
                Err(e) => return refused(StatusCode::BAD_REQUEST, &format!("the body is not JSON: {e}")),
            };
            post(session, &api["/api/".len()..], body, guard).await
        }
        _ => refused(StatusCode::NOT_FOUND, "no such page"),
    }
}

fn page(token: &str) -> Reply {
    let mut reply = reply(StatusCode::OK, "text/html; charset=utf-8", PAGE.replace("{{TOKEN}}", token));
    let headers = reply.headers_mut();
    headers.insert("content-security-policy", PAGE_CSP.parse().expect("a valid header"));
    headers.insert("x-frame-options", "DENY".parse().expect("a valid header"));
    reply
}

async fn post(session: &Arc<Session>, route: &str, body: Value, guard: &Guard) -> Reply {
    let text = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    match route {
        "request" => {
            let method = text("method");
            if method.is_empty() {
                return refused(StatusCode::BAD_REQUEST, "name the method");
            }
            let params = body.get("params").cloned().unwrap_or_else(|| json!({}));
            json_reply(session.request(method, params, text("call")).await)
        }
        "subscribe" => json_reply(match session.subscribe(text("uri")).await {
            Ok(()) => json!({"ok": true}),
            Err(e) => json!({"error": e}),
        }),
        "login" => match &session.auth {
            Some(auth) => {
                let outcome = auth.login().await;
                if outcome.get("authorized").is_some() {
                    let _ = session.connect().await;
                }
                json_reply(outcome)
            }
            None => refused(StatusCode::BAD_REQUEST, "a stdio server has no authorization"),
        },
        "log-level" => match serde_json::from_value(body.get("level").cloned().unwrap_or_default()) {
            Ok(level) => json_reply(match session.set_log_level(level).await {
                Ok(()) => json!({"ok": true}),
                Err(e) => json!({"error": e}),
            }),
            Err(_) => refused(
                StatusCode::BAD_REQUEST,
                "level: debug, info, notice, warning, error, critical, alert or emergency",
            ),
        },
        "cancel" => json_reply(json!({"cancelled": session.cancel(&text("call"))})),
        "answer" => {
            let Some(id) = body.get("id").and_then(Value::as_u64) else {
                return refused(StatusCode::BAD_REQUEST, "name the question's id");
            };
            json_reply(json!({"delivered": session.answer(id, body.get("answer").cloned().unwrap_or_default())}))
        }
        "validate" => {
            json_reply(validate(body.get("schema").unwrap_or(&Value::Null), body.get("value").unwrap_or(&Value::Null)))
        }
        "reconnect" => json_reply(match session.connect().await {
            Ok(server) => server,
            Err(e) => json!({"error": e}),
        }),
        "roots" => {
            let roots = serde_json::from_value(body.get("roots").cloned().unwrap_or_else(|| json!([])));
            match roots {
                Ok(roots) => json_reply(match session.set_roots(roots).await {
                    Ok(()) => json!({"ok": true}),
                    Err(e) => json!({"error": e}),
                }),
                Err(e) => refused(StatusCode::BAD_REQUEST, &format!("roots must be [{{uri, name}}]: {e}")),
            }
        }
        "frame" => {
            let id = match super::random_hex(16) {
                Ok(id) => id,
                Err(no_random) => return refused(StatusCode::INTERNAL_SERVER_ERROR, &no_random.to_string()),
            };
            let csp = app_csp(body.get("csp").unwrap_or(&Value::Null), guard);
            let mut frames = session.frames.lock().unwrap();
            if frames.len() >= FRAMES_CAP {
                frames.clear(); // frames are loaded at once; a pile of unloaded ones is abandoned
            }
            frames.insert(id.clone(), (text("html"), csp));
            drop(frames);
            // The frame's URL holds its single-use id alone: the app's document can read its own
            // address, and the inspector's token must not be there for it to take.
            json_reply(json!({"url": format!("/frame/{id}")}))
        }
        _ => refused(StatusCode::NOT_FOUND, "no such API"),
    }
}

/// What a JSON Schema says of a value: every error with its place, or that the schema itself is
/// broken.
fn validate(schema: &Value, value: &Value) -> Value {
    match jsonschema::options().build(schema) {
        Err(e) => json!({"schemaError": e.to_string()}),
        Ok(validator) => {
            let errors: Vec<Value> = validator
                .iter_errors(value)
                .take(50)
                .map(|e| json!({"path": e.instance_path().to_string(), "message": e.to_string()}))
                .collect();
            json!({"valid": errors.is_empty(), "errors": errors})
        }
    }
}

/// A `ui://` app's page, once: the frame URL works a single time.
fn app_frame(session: &Session, id: &str) -> Reply {
    let Some((html, csp)) = session.frames.lock().unwrap().remove(id) else {
        return refused(StatusCode::NOT_FOUND, "this app frame was shown already: call the tool again");
    };
    let mut reply = reply(StatusCode::OK, "text/html; charset=utf-8", html);
    let headers = reply.headers_mut();
    if let Ok(csp) = csp.parse() {
        headers.insert("content-security-policy", csp);
    }
    reply
}

/// The policy of an app's frame: inline script and style (an app is one HTML document), and
/// beyond that only the domains its resource's `_meta.ui.csp` declares.
fn app_csp(declared: &Value, guard: &Guard) -> String {
    let domains = |key: &str| -> String {
        declared
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|d| is_source(d))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (connect, resources) = (domains("connectDomains"), domains("resourceDomains"));
    let ancestors = guard.origins().join(" ");
    format!(
        "default-src 'none'; script-src 'unsafe-inline' {resources}; style-src 'unsafe-inline' {resources}; \
         img-src data: {resources}; font-src {resources}; media-src data: {resources}; \
         connect-src {}; frame-ancestors {ancestors}; form-action 'none'; base-uri 'none'",
        if connect.is_empty() { "'none'".to_owned() } else { connect }
    )
}

/// A CSP source an app may declare: an http(s) origin, perhaps with a `*.` wildcard; nothing
/// that could end the directive or add another.
fn is_source(domain: &str) -> bool {
    let rest = domain.strip_prefix("https://").or_else(|| domain.strip_prefix("http://"));
    rest.is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_alphanumeric() || ".-:*/_".contains(c)))
        || domain.starts_with("wss://")
            && domain[6..].chars().all(|c| c.is_ascii_alphanumeric() || ".-:*/_".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_sources_cannot_break_out_of_their_directive() {
        assert!(is_source("https://cdn.example.com"));
        assert!(is_source("https://*.example.com"));
        assert!(!is_source("https://a.com; script-src *"));
        assert!(!is_source("'unsafe-eval'"));
        assert!(!is_source("*"));
        assert!(!is_source("javascript:alert(1)"));
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
    }

    #[test]
    fn validation_names_the_place_of_each_error() {
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]});
        assert_eq!(validate(&schema, &json!({"n": 2}))["valid"], true);
        let bad = validate(&schema, &json!({"n": 0}));
        assert_eq!(bad["valid"], false);
        assert_eq!(bad["errors"][0]["path"], "/n");
        assert!(validate(&json!({"type": 5}), &json!(1))["schemaError"].is_string());
    }
}
