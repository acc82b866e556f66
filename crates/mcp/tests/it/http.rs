//! The Streamable HTTP transport on a real socket: both eras, sessions, SSE, the old HTTP+SSE
//! transport, and every kind of bad request getting the status the spec names.

use std::time::Duration;

use mcp::transport::http::{serve_listener, HttpConfig, McpService};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{modern, router};

pub(crate) struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
    /// The JSON payloads of an SSE body's `data:` lines.
    pub fn events(&self) -> Vec<Value> {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    }
}

async fn start(config: HttpConfig) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_listener(listener, McpService::new(router(), config)));
    addr.to_string()
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    loop {
        let Some((size, rest)) = body.split_once("\r\n") else { return out };
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else { return out };
        if n == 0 || rest.len() < n {
            return out;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
}

/// One request on a fresh connection, read to the end (a streaming body is read for `wait`).
pub(crate) async fn send(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    wait: Duration,
) -> Reply {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(wait, stream.read_to_end(&mut raw)).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())).collect();
    let chunked = headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_owned() };
    Reply { status, headers, body }
}

pub(crate) const JSON_SSE: (&str, &str) = ("Accept", "application/json, text/event-stream");
pub(crate) const CT: (&str, &str) = ("Content-Type", "application/json");
pub(crate) const QUICK: Duration = Duration::from_secs(5);

async fn post(addr: &str, headers: &[(&str, &str)], body: Value) -> Reply {
    let mut all = vec![JSON_SSE, CT];
    all.extend_from_slice(headers);
    send(addr, "POST", "/mcp", &all, &body.to_string(), QUICK).await
}

pub(crate) fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

async fn initialize(addr: &str) -> String {
    let init = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let reply = post(addr, &[], init).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["result"]["protocolVersion"], "2025-11-25");
    reply.header("mcp-session-id").expect("a session id").to_owned()
}

#[tokio::test]
async fn legacy_sessions_live_and_end() {
    let addr = start(HttpConfig::default()).await;
    let sid = initialize(&addr).await;
    let s = [("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&addr, &s, note).await.status, 202);
    let r = post(&addr, &s, rpc(2, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}}))).await;
    assert_eq!(r.json()["result"]["content"][0]["text"], "hi");
    let unknown = [("Mcp-Session-Id", "nope")];
    assert_eq!(post(&addr, &unknown, rpc(3, "tools/list", json!({}))).await.status, 404);
    assert_eq!(send(&addr, "DELETE", "/mcp", &s, "", QUICK).await.status, 200);
    assert_eq!(post(&addr, &s, rpc(4, "tools/list", json!({}))).await.status, 404, "an ended session is 404");
}

#[tokio::test]
async fn legacy_progress_streams_as_sse_with_a_priming_event() {
    let addr = start(HttpConfig::default()).await;
    let sid = initialize(&addr).await;
    let s = [("Mcp-Session-Id", sid.as_str())];
    let call = rpc(5, "tools/call", json!({"name": "sleep", "arguments": {"ms": 30}, "_meta": {"progressToken": "t"}}));
    let r = post(&addr, &s, call).await;
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert!(r.body.starts_with("id: "), "priming event first: {}", r.body);
    assert!(r.body.contains("retry: "));
    let events = r.events();
    assert_eq!(events.iter().filter(|e| e["method"] == "notifications/progress").count(), 3);
    assert_eq!(events.last().unwrap()["result"]["content"][0]["text"], "slept 30 ms");
}

#[tokio::test]
async fn a_panicking_handler_is_answered_in_both_eras() {
    let addr = start(HttpConfig::default()).await;
    let sid = initialize(&addr).await;
    let s = [("Mcp-Session-Id", sid.as_str())];
    let r = post(&addr, &s, rpc(2, "tools/call", json!({"name": "panic", "arguments": {}}))).await;
    assert_eq!(r.json()["error"]["code"], -32603, "{}", r.body);
    assert_eq!(post(&addr, &s, rpc(3, "ping", json!({}))).await.json()["result"], json!({}), "the session lives on");
    let call = rpc(4, "tools/call", modern(json!({"name": "panic", "arguments": {}})));
    let r = post(&addr, &modern_headers("tools/call", Some("panic")), call).await;
    assert_eq!(r.json()["error"]["code"], -32603, "{}", r.body);
}

fn modern_headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method)];
    if let Some(name) = name {
        h.push(("Mcp-Name", name));
    }
    h
}

#[tokio::test]
async fn modern_requests_are_stateless_and_checked() {
    let addr = start(HttpConfig::default()).await;
    let call = rpc(1, "tools/call", modern(json!({"name": "echo", "arguments": {"text": "hello"}})));
    let r = post(&addr, &modern_headers("tools/call", Some("echo")), call.clone()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"]["resultType"], "complete");
    assert!(r.header("mcp-session-id").is_none(), "no sessions in 2026-07-28");
    // Header and body disagree: 400 and -32020.
    let r = post(&addr, &modern_headers("tools/call", Some("other")), call.clone()).await;
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32020)));
    let r = post(&addr, &[("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")], call).await;
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32020)), "missing MCP-Protocol-Version");
    // Unknown method: 404 and -32601.
    let r = post(&addr, &modern_headers("nope/nope", None), rpc(2, "nope/nope", modern(json!({})))).await;
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (404, json!(-32601)));
    // Unsupported version: 400 and -32022.
    let old = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01", "io.modelcontextprotocol/clientCapabilities": {}}});
    let h = [("MCP-Protocol-Version", "1999-01-01"), ("Mcp-Method", "tools/list")];
    let r = post(&addr, &h, rpc(3, "tools/list", old)).await;
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32022)));
    // No _meta and no session: 400 and -32602.
    let r = post(&addr, &[], rpc(4, "tools/list", json!({}))).await;
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32602)));
    // GET and DELETE without a session.
    assert_eq!(send(&addr, "DELETE", "/mcp", &[], "", QUICK).await.status, 405);
    assert_eq!(send(&addr, "GET", "/mcp", &[("Accept", "application/json")], "", QUICK).await.status, 406);
}

#[tokio::test]
async fn modern_progress_streams_on_the_request() {
    let addr = start(HttpConfig::default()).await;
    let mut params = modern(json!({"name": "sleep", "arguments": {"ms": 20}}));
    params["_meta"]["progressToken"] = json!(1);
    let r = post(&addr, &modern_headers("tools/call", Some("sleep")), rpc(1, "tools/call", params)).await;
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let events = r.events();
    assert_eq!(events.iter().filter(|e| e["method"] == "notifications/progress").count(), 2);
    assert_eq!(events.last().unwrap()["result"]["resultType"], "complete");
}

#[tokio::test]
async fn bad_requests_get_the_status_the_spec_names() {
    let addr = start(HttpConfig { max_body: 1024, ..HttpConfig::default() }).await;
    let body = rpc(1, "tools/list", modern(json!({}))).to_string();
    let h = modern_headers("tools/list", None);
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut all = h.clone();
        all.extend_from_slice(extra);
        all
    };
    let r = send(&addr, "POST", "/mcp", &with(&[JSON_SSE, ("Content-Type", "text/plain")]), &body, QUICK).await;
    assert_eq!(r.status, 415);
    let r = send(&addr, "POST", "/mcp", &with(&[("Accept", "application/json"), CT]), &body, QUICK).await;
    assert_eq!(r.status, 406);
    let r = send(&addr, "POST", "/mcp", &with(&[JSON_SSE, CT]), "{not json", QUICK).await;
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32700)));
    let big = format!("{{\"x\":\"{}\"}}", "a".repeat(4096));
    assert_eq!(send(&addr, "POST", "/mcp", &with(&[JSON_SSE, CT]), &big, QUICK).await.status, 413);
    let r =
        send(&addr, "POST", "/mcp", &with(&[JSON_SSE, CT, ("Origin", "http://evil.example.com")]), &body, QUICK).await;
    assert_eq!(r.status, 403);
    let r =
        send(&addr, "POST", "/mcp", &with(&[JSON_SSE, CT, ("Origin", "http://localhost:5173")]), &body, QUICK).await;
    assert_eq!(r.status, 200, "a loopback origin is fine");
    let batch = format!("[{body}]");
    assert_eq!(send(&addr, "POST", "/mcp", &with(&[JSON_SSE, CT]), &batch, QUICK).await.status, 400);
    assert_eq!(send(&addr, "PUT", "/mcp", &[], "", QUICK).await.status, 405);
    assert_eq!(send(&addr, "POST", "/elsewhere", &[], "", QUICK).await.status, 404);
}

#[tokio::test]
async fn host_checks_and_a_trusted_proxy() {
    let addr = start(HttpConfig::default()).await;
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let req = "POST /mcp HTTP/1.1\r\nHost: evil.example.com\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}";
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 421"), "{raw}");

    let proxied =
        start(HttpConfig { trust_proxy: true, allowed_hosts: vec!["mcp.example.com".into()], ..HttpConfig::default() })
            .await;
    let h = [("X-Forwarded-Host", "mcp.example.com")];
    let mut all = modern_headers("tools/list", None);
    all.extend_from_slice(&h);
    let r = post(&proxied, &all, rpc(1, "tools/list", modern(json!({})))).await;
    assert_eq!(r.status, 200, "behind a proxy the forwarded host counts: {}", r.body);
}

#[tokio::test]
async fn the_2024_11_05_http_sse_transport() {
    let addr = start(HttpConfig::default()).await;
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let req = format!("GET /sse HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains("sessionId=") {
        let n = tokio::time::timeout(QUICK, stream.read(&mut buf)).await.unwrap().unwrap();
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.contains("event: endpoint"));
    let endpoint = seen.lines().find_map(|l| l.strip_prefix("data: ")).unwrap().trim().to_owned();
    let init = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}),
    );
    let r = send(&addr, "POST", &endpoint, &[CT], &init.to_string(), QUICK).await;
    assert_eq!(r.status, 202);
    while !seen.contains("\"protocolVersion\":\"2024-11-05\"") {
        let n = tokio::time::timeout(QUICK, stream.read(&mut buf)).await.unwrap().unwrap();
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let r = send(&addr, "POST", "/mcp?sessionId=unknown", &[CT], "{}", QUICK).await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn json_only_mode_never_streams() {
    let addr = start(HttpConfig { json_only: true, ..HttpConfig::default() }).await;
    let mut params = modern(json!({"name": "sleep", "arguments": {"ms": 20}}));
    params["_meta"]["progressToken"] = json!(1);
    let r = post(&addr, &modern_headers("tools/call", Some("sleep")), rpc(1, "tools/call", params)).await;
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["result"]["content"][0]["text"], "slept 20 ms");
}

const MALFORMED_RESPONSES: [&str; 6] = [
    r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
    r#"{"jsonrpc":"2.0","id":2,"error":"not an object"}"#,
    r#"{"jsonrpc":"2.0","id":{"x":1},"result":{}}"#,
    r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}"#,
    r#"{"id":3,"result":null}"#,
    r#"{"jsonrpc":"2.0","id":4,"result":{},"error":{"code":1,"message":"m"}}"#,
];

#[tokio::test]
async fn responses_posted_to_the_endpoint_are_never_answered_with_json_rpc() {
    let addr = start(HttpConfig::default()).await;
    let sid = initialize(&addr).await;
    let session = [JSON_SSE, CT, ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    for body in MALFORMED_RESPONSES {
        for headers in [&session[..], &[JSON_SSE, CT][..]] {
            let r = send(&addr, "POST", "/mcp", headers, body, QUICK).await;
            assert_eq!(r.status, 400, "{body}");
            assert!(r.header("content-type").unwrap_or("").starts_with("text/plain"), "{body}: {:?}", r.headers);
            assert!(serde_json::from_str::<Value>(&r.body).is_err(), "{body} was answered: {}", r.body);
        }
    }
    // A well-formed response to nothing of ours: accepted and dropped.
    let r = send(&addr, "POST", "/mcp", &session, r#"{"jsonrpc":"2.0","id":"s-99","result":{}}"#, QUICK).await;
    assert_eq!((r.status, r.body.as_str()), (202, ""));
}

#[tokio::test]
async fn responses_on_the_2024_11_05_transport_are_never_answered() {
    let addr = start(HttpConfig::default()).await;
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let req = format!("GET /sse HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains("sessionId=") {
        let n = tokio::time::timeout(QUICK, stream.read(&mut buf)).await.unwrap().unwrap();
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let endpoint = seen.lines().find_map(|l| l.strip_prefix("data: ")).unwrap().trim().to_owned();
    let init = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}),
    );
    send(&addr, "POST", &endpoint, &[CT], &init.to_string(), QUICK).await;
    for body in MALFORMED_RESPONSES {
        let r = send(&addr, "POST", &endpoint, &[CT], body, QUICK).await;
        assert_eq!(r.status, 202, "{body}");
    }
    send(&addr, "POST", &endpoint, &[CT], &rpc(77, "ping", json!({})).to_string(), QUICK).await;
    while !seen.contains("\"id\":77") {
        let n = tokio::time::timeout(QUICK, stream.read(&mut buf)).await.unwrap().unwrap();
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let answered: Vec<Value> = seen
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|m| m.get("id").is_some())
        .collect();
    let ids: Vec<&Value> = answered.iter().map(|m| &m["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(77)], "only the two requests were answered: {answered:?}");
}

/// Two anonymous 2026-07-28 clients over HTTP (no authentication, no --account-header, no
/// session): neither may list the other's jobs (no listing is offered to callers that cannot be
/// told apart), and a job is reached by its id alone.
#[tokio::test]
async fn anonymous_http_callers_cannot_list_or_reach_each_others_jobs() {
    use mcp::server::{RequestContext, Router, ToolDef, ToolError};
    use mcp::tasks::{TaskConfig, TaskSupport};
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Nap {
        ms: u64,
    }
    async fn nap(args: Nap, _: RequestContext) -> Result<String, ToolError> {
        tokio::time::sleep(Duration::from_millis(args.ms)).await;
        Ok("rested".into())
    }
    let config = TaskConfig { grace: Duration::from_millis(20), ..TaskConfig::default() };
    let router = Router::new()
        .task_config(config)
        .tool_def(ToolDef::new("nap").description("Naps.").task_support(TaskSupport::Optional), nap);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(serve_listener(listener, McpService::new(router, HttpConfig::default())));
    let call =
        |id: i64, name: &str, args: Value| rpc(id, "tools/call", modern(json!({"name": name, "arguments": args})));
    // Client A starts a job.
    let r = post(&addr, &modern_headers("tools/call", Some("nap")), call(1, "nap", json!({"ms": 3000}))).await;
    let text = r.json()["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    let job = text.split_whitespace().nth(2).unwrap_or_default().to_owned();
    assert!(text.starts_with("Started job ") && job.len() == 32, "{}", r.body);
    // Client B (another connection): no listing, and a guessed id reaches nothing.
    let r = post(&addr, &modern_headers("tools/call", Some("nap_list")), call(2, "nap_list", json!({}))).await;
    let listed = r.json();
    assert_eq!(listed["result"]["isError"], true, "{}", r.body);
    assert!(listed.to_string().contains("not listed for anonymous callers") && !listed.to_string().contains(&job));
    let guess = "0".repeat(32);
    let r =
        post(&addr, &modern_headers("tools/call", Some("nap_cancel")), call(3, "nap_cancel", json!({"job_id": guess})))
            .await;
    assert!(r.json()["result"]["content"][0]["text"].as_str().unwrap().starts_with("No job"), "{}", r.body);
    // With its id the job is there, still running.
    let r =
        post(&addr, &modern_headers("tools/call", Some("nap_status")), call(4, "nap_status", json!({"job_id": job})))
            .await;
    assert_ne!(r.json()["result"]["isError"], true, "{}", r.body);
}

/// The text of `test://big`: about 13 MB of lines with quotes and non-ASCII to escape.
fn big_text() -> String {
    (0..300_000).map(|i| format!("line {i}: \"ünïcødé\" \\ tab\there\n")).collect()
}

/// The test router with `test://big`, streamed ([`mcp::server::StreamedText`]) after a progress
/// report.
fn router_with_big_resource() -> mcp::server::Router {
    use mcp::server::{RequestContext, ResourceRequest, StreamedText};
    router().resource("test://big", "big", |_r: ResourceRequest, cx: RequestContext| async move {
        cx.progress(0.0, None, Some("streaming")).await;
        Ok::<_, mcp::ToolError>(StreamedText::new(std::io::Cursor::new(big_text().into_bytes())))
    })
}

/// A server with `test://big` on a real socket.
async fn start_with_big_resource() -> String {
    let router = router_with_big_resource();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_listener(listener, McpService::new(router, HttpConfig::default())));
    addr.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_text_arrives_whole_in_json_and_in_sse_and_is_not_sent_twice() {
    let addr = start_with_big_resource().await;
    let expected = big_text();
    let long = Duration::from_secs(60);
    // 2026-07-28, no progress token: one JSON body, written as the text is read.
    let read = rpc(1, "resources/read", modern(json!({"uri": "test://big"})));
    let mut headers = vec![JSON_SSE, CT];
    headers.extend(modern_headers("resources/read", Some("test://big")));
    let r = send(&addr, "POST", "/mcp", &headers, &read.to_string(), long).await;
    assert_eq!(r.header("content-type"), Some("application/json"));
    let contents = &r.json()["result"]["contents"][0];
    assert!(contents["text"].as_str() == Some(expected.as_str()), "the whole text, escaped as JSON");
    // A legacy session with a progress token: an SSE stream, the text in its last event.
    let sid = initialize(&addr).await;
    let s = [JSON_SSE, CT, ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let read = rpc(2, "resources/read", json!({"uri": "test://big", "_meta": {"progressToken": "p"}}));
    let r = send(&addr, "POST", "/mcp", &s, &read.to_string(), long).await;
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let events = r.events();
    assert_eq!(events[0]["method"], "notifications/progress");
    assert!(events[1]["result"]["contents"][0]["text"].as_str() == Some(expected.as_str()), "the whole text in SSE");
    // Resumed after the progress event, the stream cannot send the text again: it says so.
    let progress_id = r.body.lines().filter_map(|l| l.strip_prefix("id: ")).nth(1).expect("the progress event's id");
    let resume = [("Accept", "text/event-stream"), ("Mcp-Session-Id", sid.as_str()), ("Last-Event-ID", progress_id)];
    let again = send(&addr, "GET", "/mcp", &resume, "", QUICK).await;
    let answer = again.events().pop().expect("the answer, replayed");
    assert_eq!(answer["id"], 2);
    assert!(answer["error"]["message"].as_str().unwrap().contains("read the resource again"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_reads_a_response_within_its_budget_and_fails_one_beyond_it_at_once() {
    use mcp::client::{Client, ClientOptions};
    let text_of = |read: &mcp::types::resources::ReadResourceResult| {
        serde_json::to_value(read).unwrap()["contents"][0]["text"].clone()
    };
    let small = |legacy_only| ClientOptions { max_message_bytes: 1 << 20, legacy_only, ..ClientOptions::default() };
    let large = |legacy_only| ClientOptions { max_message_bytes: 64 << 20, legacy_only, ..ClientOptions::default() };
    // A byte stream (stdio's reader), then HTTP in both eras (a JSON body, an SSE event).
    for legacy_only in [true, false] {
        let client = mcp::testing::connect_with(router_with_big_resource(), small(legacy_only)).await.unwrap();
        let asked = std::time::Instant::now();
        let refused = client.read_resource("test://big").await.expect_err("13 MB over a 1 MiB budget");
        assert!(refused.to_string().contains("max_message_bytes"), "{refused}");
        assert!(asked.elapsed() < Duration::from_secs(20), "failed at once, not at the timeout");
        let client = mcp::testing::connect_with(router_with_big_resource(), large(legacy_only)).await.unwrap();
        assert_eq!(text_of(&client.read_resource("test://big").await.unwrap()), big_text());
    }
    let addr = start_with_big_resource().await;
    let url = format!("http://{addr}/mcp");
    for legacy_only in [true, false] {
        let client = Client::connect_http(&url, small(legacy_only)).await.unwrap();
        let refused = client.read_resource("test://big").await.expect_err("over the budget on HTTP");
        assert!(refused.to_string().contains("max_message_bytes"), "{refused}");
        let client = Client::connect_http(&url, large(legacy_only)).await.unwrap();
        assert_eq!(text_of(&client.read_resource("test://big").await.unwrap()), big_text());
        // With a progress report first, the answer is an SSE event: too large, it fails too.
        let client = Client::connect_http(&url, small(legacy_only)).await.unwrap();
        let streamed = client.request_with_progress("resources/read", json!({"uri": "test://big"}), |_| {}).await;
        let refused = streamed.expect_err("an SSE event over the budget");
        assert!(refused.to_string().contains("max_message_bytes"), "{refused}");
    }
}
