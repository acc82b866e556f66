//! The Streamable HTTP transport of the client, both eras: 2026-07-28 requests with their
//! metadata headers, legacy sessions (`Mcp-Session-Id`, a 404 means "initialize again"), SSE
//! responses that resume with `Last-Event-ID` after `retry:` when the server cuts them, and the
//! 2024-11-05 HTTP+SSE transport as a last resort.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use mcp_types::RequestId;
use serde_json::{json, Value};

use super::auth::{AuthError, Authorizer, Refusal};
use super::core::{Core, Sender, AUTH_FAILED, AUTH_REQUIRED, SESSION_EXPIRED, TRANSPORT_FAILED};
use super::sse::{Parser, Resumption};
use crate::error::Error;
use crate::net::connect::{why, Connector};
use crate::util::BoxFuture;

type Hyper = HyperClient<Connector, Full<Bytes>>;

#[derive(Default)]
struct State {
    session: Option<String>,
    version: String,
    modern: bool,
    /// 2024-11-05: where to POST, learned from the `endpoint` event.
    old_endpoint: Option<Uri>,
}

struct HttpSender {
    client: Hyper,
    connector: Connector,
    url: Uri,
    headers: Vec<(String, String)>,
    auth: Option<Arc<dyn Authorizer>>,
    state: Mutex<State>,
    inflight: Mutex<HashMap<RequestId, tokio::task::AbortHandle>>,
    /// The session's GET stream, ended on close (a server keeps a session whose stream is open).
    get_stream: Mutex<Option<tokio::task::AbortHandle>>,
    core: Weak<Core>,
    /// Sees each exchange's head (`ClientOptions::http_tracer`).
    http_tracer: Option<super::HttpTracer>,
    /// `ClientOptions::max_message_bytes`: a JSON body or an SSE event at most this large.
    max_message: usize,
}

/// Wires an HTTP endpoint to `core`.
pub(crate) fn start(core: &Arc<Core>, url: &str) -> Result<(), Error> {
    let url: Uri = url.parse().map_err(|e| Error::protocol(format!("invalid URL {url:?}: {e}")))?;
    if !matches!(url.scheme_str(), Some("http" | "https")) {
        return Err(Error::protocol(format!("{url} is not an http:// or https:// URL")));
    }
    core.set_cache_server(&url.to_string());
    let connector = Connector::new(&core.options.ca_files).map_err(Error::from)?;
    let client = HyperClient::builder(TokioExecutor::new()).build(connector.clone());
    let has_authorization = core.options.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
    let auth = core.options.auth.clone().filter(|_| !has_authorization);
    if let Some(auth) = &auth {
        auth.attach(&url.to_string());
    }
    let sender = Arc::new(HttpSender {
        client,
        connector,
        url,
        headers: core.options.headers.clone(),
        auth,
        state: Mutex::new(State::default()),
        inflight: Mutex::new(HashMap::new()),
        get_stream: Mutex::new(None),
        core: Arc::downgrade(core),
        http_tracer: core.options.http_tracer.clone(),
        max_message: core.options.max_message_bytes,
    });
    core.http.store(true, std::sync::atomic::Ordering::Relaxed);
    #[cfg(feature = "otel")]
    let _ = core.transport.set(traced_transport(&sender.url));
    core.set_sender(Arc::new(sender));
    Ok(())
}

/// The server as telemetry records it: HTTP over TCP, the URL's host and port.
#[cfg(feature = "otel")]
fn traced_transport(url: &Uri) -> crate::telemetry::Transport {
    let tls = url.scheme_str() == Some("https");
    let peer = url.host().map(|host| {
        let port = url.port_u16().unwrap_or(if tls { 443 } else { 80 });
        crate::telemetry::Peer::Host(host.trim_start_matches('[').trim_end_matches(']').into(), port)
    });
    crate::telemetry::Transport::http("1.1", peer)
}

/// Why a request could not be sent.
enum SendFailure {
    Transport(String),
    Auth(AuthError),
}

/// An authorization failure as the JSON-RPC error a request fails with.
pub(crate) fn auth_error(e: &AuthError) -> mcp_types::ErrorObject {
    let code = if matches!(e, AuthError::Required(_)) { AUTH_REQUIRED } else { AUTH_FAILED };
    mcp_types::ErrorObject::new(code, e.to_string())
}

/// What a request asks, for counting step-ups per operation: the method and the name.
fn operation(message: Option<&Value>) -> String {
    let Some(message) = message else { return "GET".into() };
    let method = message["method"].as_str().unwrap_or("message");
    match message["params"]["name"].as_str().or(message["params"]["uri"].as_str()) {
        Some(name) => format!("{method} {name}"),
        None => method.to_owned(),
    }
}

/// A header value as the spec wants it: plain visible ASCII, else `=?base64?...?=`.
fn header_value(value: &str) -> String {
    use base64::Engine as _;
    let plain = value.bytes().all(|b| (0x21..=0x7e).contains(&b) || b == b' ')
        && value.trim() == value
        && !value.starts_with("=?base64?");
    if plain {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(value))
    }
}

/// Headers as a tracer sees them: secrets replaced by `(hidden)`.
fn shown_headers(headers: &http::HeaderMap) -> Vec<(String, String)> {
    const SECRET: [&str; 5] = ["authorization", "proxy-authorization", "dpop", "cookie", "set-cookie"];
    headers
        .iter()
        .map(|(k, v)| {
            let value = if SECRET.contains(&k.as_str()) {
                "(hidden)".to_owned()
            } else {
                String::from_utf8_lossy(v.as_bytes()).into_owned()
            };
            (k.as_str().to_owned(), value)
        })
        .collect()
}

/// Redirects followed for one request, at most.
const MAX_REDIRECTS: usize = 5;

/// Where a `307` or `308` answer sends the request (the only redirects that keep its method and
/// body; a `301`, `302` or `303` would turn the POST into a GET and is not followed).
fn redirected(response: &hyper::Response<hyper::body::Incoming>, from: &Uri) -> Option<Result<Uri, String>> {
    if !matches!(response.status(), StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT) {
        return None;
    }
    let location = response.headers().get(header::LOCATION)?.to_str().ok()?;
    Some(crate::net::fetch::resolve(from, location))
}

impl HttpSender {
    /// Sends a request (see [`HttpSender::send_authorized`]), following `307` and `308`
    /// redirects with the same method and body, at most [`MAX_REDIRECTS`] of them. Credentials
    /// and the session go only to the server's own origin: a redirect elsewhere is followed
    /// without the session, and refused for a request that carries credentials.
    async fn send_request(
        &self,
        method: Method,
        uri: &Uri,
        message: Option<&Value>,
        extra: &[(String, String)],
    ) -> Result<hyper::Response<hyper::body::Incoming>, SendFailure> {
        use crate::net::fetch::origin;
        let mut target = uri.clone();
        let mut extra = extra.to_vec();
        let mut home = true;
        for _hop in 0..=MAX_REDIRECTS {
            let (response, credentials) = self.send_authorized(method.clone(), &target, message, &extra, home).await?;
            let Some(next) = redirected(&response, &target) else { return Ok(response) };
            let next = next.map_err(SendFailure::Transport)?;
            if origin(&next) != origin(&self.url) {
                if credentials {
                    return Err(SendFailure::Transport(format!(
                        "{target} redirects to another origin ({next}); a request carrying credentials is not \
                         sent there (use that URL directly if it is the server)"
                    )));
                }
                // Elsewhere, no session and no authorization: a 401 there is not ours to answer.
                home = false;
                extra.retain(|(k, _)| !k.eq_ignore_ascii_case("mcp-session-id"));
            }
            target = next;
        }
        Err(SendFailure::Transport(format!("{uri} redirects more than {MAX_REDIRECTS} times")))
    }

    /// Sends a request, with credentials when there is an authorizer (and the request goes to
    /// the server's own origin, `home`): a `401`, or a `403` for want of scope, goes to it, and
    /// the request is sent again when it has new credentials. Also says whether the request that
    /// was answered carried credentials.
    async fn send_authorized(
        &self,
        method: Method,
        uri: &Uri,
        message: Option<&Value>,
        extra: &[(String, String)],
        home: bool,
    ) -> Result<(hyper::Response<hyper::body::Incoming>, bool), SendFailure> {
        let auth = self.auth.as_ref().filter(|_| home);
        for _attempt in 0..8 {
            let credentials = match auth {
                Some(auth) => auth.credentials(method.as_str(), &uri.to_string()).await.map_err(SendFailure::Auth)?,
                None => Default::default(),
            };
            let mut headers = extra.to_vec();
            headers.extend(credentials.headers.iter().cloned());
            let carried = !credentials.headers.is_empty()
                || self.headers.iter().chain(&headers).any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
            let request = self.build(method.clone(), uri, message, &headers, home);
            let sent = self.http_tracer.as_ref().map(|_| shown_headers(request.headers()));
            let response = self.client.request(request).await.map_err(|e| SendFailure::Transport(why(&e)))?;
            if let (Some(trace), Some(sent)) = (&self.http_tracer, sent) {
                trace(&super::HttpExchange {
                    method: method.to_string(),
                    url: uri.to_string(),
                    message: message.cloned(),
                    status: response.status().as_u16(),
                    request_headers: sent,
                    response_headers: shown_headers(response.headers()),
                });
            }
            let status = response.status();
            let Some(auth) = auth else { return Ok((response, carried)) };
            if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
                return Ok((response, carried));
            }
            let values = response.headers().get_all(header::WWW_AUTHENTICATE);
            let challenges = super::auth::challenge::parse_all(values.iter().filter_map(|v| v.to_str().ok()));
            let refusal = Refusal {
                status: status.as_u16(),
                challenges,
                dpop_nonce: response.headers().get("dpop-nonce").and_then(|v| v.to_str().ok()).map(str::to_owned),
                operation: operation(message),
            };
            match auth.refused(&self.url.to_string(), &refusal, credentials.generation).await {
                Ok(true) => continue,
                Ok(false) => return Ok((response, carried)),
                Err(e) => return Err(SendFailure::Auth(e)),
            }
        }
        Err(SendFailure::Auth(AuthError::Refused(format!("{} keeps refusing the credentials it is given", self.url))))
    }

    /// [`HttpSender::send_request`], a failure reported as request `id`'s error.
    async fn send_for(
        &self,
        id: &RequestId,
        method: Method,
        uri: &Uri,
        message: Option<&Value>,
        extra: &[(String, String)],
    ) -> Option<hyper::Response<hyper::body::Incoming>> {
        match self.send_request(method, uri, message, extra).await {
            Ok(response) => Some(response),
            Err(SendFailure::Transport(why)) => {
                self.fail(id, TRANSPORT_FAILED, format!("cannot reach {}: {why}", self.url));
                None
            }
            Err(SendFailure::Auth(e)) => {
                let error = auth_error(&e);
                self.deliver(
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": error.code.0, "message": error.message}}),
                );
                None
            }
        }
    }

    fn deliver(&self, message: Value) {
        self.deliver_with(message, None);
    }

    /// Delivers what came with request `related` (in its response), or outside any request.
    fn deliver_with(&self, message: Value, related: Option<&RequestId>) {
        if let Some(core) = self.core.upgrade() {
            match message {
                Value::Array(items) => items.into_iter().for_each(|m| core.on_message_with(m, related)),
                m => core.on_message_with(m, related),
            }
        }
    }

    fn fail(&self, id: &RequestId, code: mcp_types::ErrorCode, message: String) {
        self.deliver(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code.0, "message": message}}));
    }

    /// The request; the user's headers (`--header`, an entry's `headers`) go only to the
    /// server's own origin (`home`).
    fn build<K: AsRef<str>>(
        &self,
        method: Method,
        uri: &Uri,
        message: Option<&Value>,
        extra: &[(K, String)],
        home: bool,
    ) -> Request<Full<Bytes>> {
        let body = message.map(|m| Bytes::from(serde_json::to_vec(m).unwrap_or_default())).unwrap_or_default();
        let mut b = Request::builder().method(method).uri(uri.clone());
        b = b.header(
            header::ACCEPT,
            if message.is_some() { "application/json, text/event-stream" } else { "text/event-stream" },
        );
        if message.is_some() {
            b = b.header(header::CONTENT_TYPE, "application/json");
        }
        for (k, v) in self.headers.iter().filter(|_| home) {
            b = b.header(k.as_str(), v.as_str());
        }
        if let Some(auth) = self.connector.proxy_authorization(uri) {
            b = b.header(header::PROXY_AUTHORIZATION, auth);
        }
        for (k, v) in extra {
            b = b.header(k.as_ref(), v.as_str());
        }
        b.body(Full::new(body)).expect("a valid request")
    }

    /// `Mcp-Param-*` for a tool call's annotated arguments (absent or null: no header).
    fn param_headers(&self, message: &Value) -> Vec<(String, String)> {
        let Some(core) = self.core.upgrade() else { return Vec::new() };
        let name = message["params"]["name"].as_str().unwrap_or_default();
        let params = core.header_params.read().unwrap().get(name).cloned().unwrap_or_default();
        params
            .into_iter()
            .filter_map(|(arg, header)| {
                let value = match &message["params"]["arguments"][&arg] {
                    Value::String(s) => header_value(s),
                    Value::Bool(b) => b.to_string(),
                    Value::Number(n) => n.to_string(),
                    _ => return None,
                };
                Some((format!("mcp-param-{}", header.to_ascii_lowercase()), value))
            })
            .collect()
    }

    /// The protocol headers for `message` in the current era.
    fn protocol_headers(&self, message: &Value) -> Vec<(String, String)> {
        let state = self.state.lock().unwrap();
        let mut h = Vec::new();
        if state.modern {
            h.push(("mcp-protocol-version".to_owned(), state.version.clone()));
            if let Some(method) = message["method"].as_str() {
                h.push(("mcp-method".to_owned(), method.to_owned()));
                let name = match method {
                    "tools/call" | "prompts/get" => message["params"]["name"].as_str(),
                    "resources/read" => message["params"]["uri"].as_str(),
                    "tasks/get" | "tasks/update" | "tasks/cancel" => message["params"]["taskId"].as_str(),
                    _ => None,
                };
                if let Some(name) = name {
                    h.push(("mcp-name".to_owned(), header_value(name)));
                }
                if method == "tools/call" {
                    h.extend(self.param_headers(message));
                }
            }
        } else {
            if let Some(session) = &state.session {
                h.push(("mcp-session-id".to_owned(), session.clone()));
            }
            if !state.version.is_empty() && message["method"] != "initialize" {
                h.push(("mcp-protocol-version".to_owned(), state.version.clone()));
            }
        }
        h
    }

    /// POSTs one request and delivers everything its response carries.
    async fn post_request(self: Arc<Self>, id: RequestId, message: Value) {
        let old = self.state.lock().unwrap().old_endpoint.clone();
        if let Some(endpoint) = old {
            // 2024-11-05: the answer comes on the event stream.
            let _ = self.send_for(&id, Method::POST, &endpoint, Some(&message), &[]).await;
            return;
        }
        let headers = self.protocol_headers(&message);
        let Some(response) = self.send_for(&id, Method::POST, &self.url, Some(&message), &headers).await else {
            return;
        };
        let status = response.status();
        if message["method"] == "initialize" {
            if let Some(session) = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
                self.state.lock().unwrap().session = Some(session.to_owned());
            }
            if matches!(status, StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED) {
                return self.open_old_transport(id, message).await;
            }
        }
        let is_sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        if status == StatusCode::NOT_FOUND && self.state.lock().unwrap().session.take().is_some() {
            return self.fail(&id, SESSION_EXPIRED, "the session expired".into());
        }
        if is_sse && status.is_success() {
            return self.follow_stream(id, response.into_body()).await;
        }
        let body = match Limited::new(response.into_body(), self.max_message).collect().await {
            Ok(body) => body.to_bytes(),
            Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
                if let Some(core) = self.core.upgrade() {
                    core.fail_oversized(&id);
                }
                return;
            }
            Err(_) => Default::default(),
        };
        match serde_json::from_slice::<Value>(&body) {
            Ok(mut v) if v.get("jsonrpc").is_some() || v.is_array() => {
                // A JSON body is the answer to the request it was POSTed with: an error about
                // it may carry a null id, or one of the server's own (the Python SDK says
                // "server-error" when a session is missing), and is still this request's.
                if v.get("error").is_some() && v.get("method").is_none() && v["id"] != json!(id) {
                    v["id"] = json!(id);
                }
                self.deliver_with(v, Some(&id))
            }
            _ if status == StatusCode::ACCEPTED => {}
            _ => self.fail(
                &id,
                TRANSPORT_FAILED,
                format!("HTTP {status}: {}", String::from_utf8_lossy(&body).chars().take(200).collect::<String>()),
            ),
        }
    }

    /// Reads an SSE response; when the server cuts it before the answer, resumes with GET and
    /// `Last-Event-ID` after the advertised `retry:` delay.
    async fn follow_stream(&self, id: RequestId, body: hyper::body::Incoming) {
        let mut body = Some(body);
        let mut resume = Resumption::default();
        let answer = json!(id);
        for _attempt in 0..10 {
            let Some(stream) = body.take() else { break };
            let answered = |m: &Value| m.get("id") == Some(&answer) && m.get("method").is_none();
            if self.read_events(stream, &mut resume, Some(&id), answered).await {
                return;
            }
            if resume.dropped_oversized {
                // The answer was, most likely, the event too large to take: resuming would
                // only replay it.
                if let Some(core) = self.core.upgrade() {
                    core.fail_oversized(&id);
                }
                return;
            }
            // Cut before the answer: resume if we can.
            let (Some(last), Some(session)) = (resume.last_id.clone(), self.state.lock().unwrap().session.clone())
            else {
                break;
            };
            tokio::time::sleep(resume.retry).await;
            let version = self.state.lock().unwrap().version.clone();
            let extra = [
                ("mcp-session-id".to_owned(), session),
                ("last-event-id".to_owned(), last),
                ("mcp-protocol-version".to_owned(), version),
            ];
            match self.send_request(Method::GET, &self.url, None, &extra).await {
                Ok(r) if r.status().is_success() => body = Some(r.into_body()),
                _ => break,
            }
        }
        self.fail(&id, TRANSPORT_FAILED, "the response stream ended before the answer".into());
    }

    /// Delivers every message of an SSE body (the response stream of request `related`, or the
    /// session's own stream), noting the event ids and `retry:` delays to resume with; returns
    /// `true` as soon as a delivered message satisfies `last`.
    async fn read_events(
        &self,
        mut body: hyper::body::Incoming,
        resume: &mut Resumption,
        related: Option<&RequestId>,
        last: impl Fn(&Value) -> bool,
    ) -> bool {
        let mut parser = Parser::with_limit(self.max_message);
        while let Some(Ok(frame)) = body.frame().await {
            let Some(data) = frame.data_ref() else { continue };
            for event in parser.feed(data) {
                resume.note(event.id, event.retry);
                let Ok(message) = serde_json::from_str::<Value>(&event.data) else { continue };
                let done = last(&message);
                self.deliver_with(message, related);
                if done {
                    return true;
                }
            }
        }
        resume.dropped_oversized |= parser.dropped_any();
        false
    }

    /// The session's GET stream: server-initiated requests and notifications. Reconnects with
    /// `Last-Event-ID` while the session lives; a 405 means the server offers none.
    async fn listen(self: Arc<Self>, session: String) {
        let mut resume = Resumption::default();
        for _attempt in 0..100 {
            if self.state.lock().unwrap().session.as_deref() != Some(session.as_str()) || self.core.upgrade().is_none()
            {
                return;
            }
            let version = self.state.lock().unwrap().version.clone();
            let mut extra =
                vec![("mcp-session-id".to_owned(), session.clone()), ("mcp-protocol-version".to_owned(), version)];
            if let Some(last) = &resume.last_id {
                extra.push(("last-event-id".to_owned(), last.clone()));
            }
            let response = match self.send_request(Method::GET, &self.url, None, &extra).await {
                Ok(r) if r.status().is_success() => r,
                _ => return,
            };
            self.read_events(response.into_body(), &mut resume, None, |_| false).await;
            tokio::time::sleep(resume.retry).await;
        }
    }

    /// 2024-11-05: GET the event stream, learn the endpoint, then POST `initialize` there.
    async fn open_old_transport(self: Arc<Self>, id: RequestId, initialize: Value) {
        let Some(response) = self.send_for(&id, Method::GET, &self.url, None, &[]).await else { return };
        if !response.status().is_success() {
            let status = response.status();
            return self.fail(&id, TRANSPORT_FAILED, format!("HTTP {status} on POST and GET: not an MCP endpoint"));
        }
        let (tx, rx) = tokio::sync::oneshot::channel::<Uri>();
        let me = self.clone();
        tokio::spawn(async move {
            let mut body = response.into_body();
            let mut parser = Parser::with_limit(me.max_message);
            let mut tx = Some(tx);
            while let Some(Ok(frame)) = body.frame().await {
                let Some(data) = frame.data_ref() else { continue };
                for event in parser.feed(data) {
                    if event.event.as_deref() == Some("endpoint") {
                        let endpoint: Option<Uri> = if event.data.starts_with('/') {
                            let authority = me.url.authority().map(|a| a.as_str()).unwrap_or("");
                            let scheme = me.url.scheme_str().unwrap_or("http");
                            format!("{scheme}://{authority}{}", event.data).parse().ok()
                        } else {
                            event.data.parse().ok()
                        };
                        if let (Some(tx), Some(endpoint)) = (tx.take(), endpoint) {
                            let _ = tx.send(endpoint);
                        }
                    } else if let Ok(message) = serde_json::from_str::<Value>(&event.data) {
                        me.deliver(message);
                    }
                }
            }
            if let Some(core) = me.core.upgrade() {
                core.closed();
            }
        });
        match tokio::time::timeout(Duration::from_secs(10), rx).await {
            Ok(Ok(endpoint)) => {
                self.state.lock().unwrap().old_endpoint = Some(endpoint);
                Box::pin(self.post_request(id, initialize)).await;
            }
            _ => self.fail(&id, TRANSPORT_FAILED, "no endpoint event on the HTTP+SSE stream".into()),
        }
    }
}

impl Sender for Arc<HttpSender> {
    fn send(&self, message: Value) -> BoxFuture<Result<(), Error>> {
        let me = self.clone();
        Box::pin(async move {
            let id = message.get("id").and_then(|i| serde_json::from_value::<RequestId>(i.clone()).ok());
            match (id, message.get("method").is_some()) {
                (Some(id), true) => {
                    let task = tokio::spawn(me.clone().post_request(id.clone(), message));
                    me.inflight.lock().unwrap().insert(id, task.abort_handle());
                    Ok(())
                }
                _ => {
                    // A notification or a response: POST, expect 202.
                    let (uri, headers) = {
                        let old = me.state.lock().unwrap().old_endpoint.clone();
                        (old.unwrap_or_else(|| me.url.clone()), me.protocol_headers(&message))
                    };
                    match me.send_request(Method::POST, &uri, Some(&message), &headers).await {
                        Ok(_) => Ok(()),
                        Err(SendFailure::Transport(why)) => Err(Error::protocol(format!("POST failed: {why}"))),
                        Err(SendFailure::Auth(e)) => Err(Error::from(auth_error(&e))),
                    }
                }
            }
        })
    }

    fn after_initialize(&self) {
        let (session, old) = {
            let s = self.state.lock().unwrap();
            (s.session.clone(), s.old_endpoint.is_some())
        };
        let Some(session) = session.filter(|_| !old) else { return };
        let task = tokio::spawn(self.clone().listen(session));
        if let Some(previous) = self.get_stream.lock().unwrap().replace(task.abort_handle()) {
            previous.abort();
        }
    }

    fn abandon(&self, id: &RequestId) {
        if let Some(task) = self.inflight.lock().unwrap().remove(id) {
            task.abort(); // on 2026-07-28, closing the response stream is the cancellation
        }
    }

    fn set_version(&self, version: &str, modern: bool) {
        let mut s = self.state.lock().unwrap();
        s.version = version.to_owned();
        s.modern = modern;
    }

    fn close(&self) -> BoxFuture<()> {
        let me = self.clone();
        Box::pin(async move {
            if let Some(stream) = me.get_stream.lock().unwrap().take() {
                stream.abort();
            }
            let session = me.state.lock().unwrap().session.take();
            if let Some(session) = session {
                let _ = me.send_request(Method::DELETE, &me.url, None, &[("mcp-session-id".to_owned(), session)]).await;
            }
        })
    }
}
