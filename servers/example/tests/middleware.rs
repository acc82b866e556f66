//! The MCP middleware flags on the real binary, over stdio and HTTP: the audit log is JSON lines,
//! one per request with its id; a rate limit refuses with a retry time (and 429 + Retry-After on
//! HTTP); a timeout stops a slow tool with an error result; a size cap turns a large result into
//! an error result.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use mcp::testing::{HttpServer, LinePeer};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-example");

fn temp_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-example-mw-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    dir
}

fn audit_lines(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"))).collect()
}

#[test]
fn stdio_audit_log_has_one_json_line_per_request() {
    let log = temp_path("audit.jsonl");
    let mut server = LinePeer::spawn(BIN, &["--audit-log", log.to_str().unwrap()]);
    server.initialize("2025-06-18");
    let mut ids = Vec::new();
    for (i, (name, args)) in
        [("echo", json!({"text": "secret-ish"})), ("sum", json!({"a": 1, "b": 2})), ("sum", json!({"a": 1}))]
            .iter()
            .enumerate()
    {
        let id = 10 + i as i64;
        server.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}}),
        );
        assert_eq!(server.recv()["id"], id);
        ids.push(id);
    }
    server.send(&json!({"jsonrpc": "2.0", "id": 20, "method": "prompts/get", "params": {"name": "nope"}}));
    assert!(server.recv()["error"].is_object());
    server.finish();
    let mut lines = audit_lines(&log);
    assert_eq!(lines.len(), 5, "{lines:?}");
    let initialize = lines.remove(0);
    assert_eq!(initialize["method"], "initialize", "initialize is logged like any request: {initialize}");
    assert_eq!(initialize["client"], json!({"name": "mcp-testing", "version": "1"}));
    assert_eq!(initialize["protocolVersion"], "2025-06-18");
    assert_eq!(initialize["outcome"], "ok");
    for (line, id) in lines.iter().zip(ids.iter().chain([20].iter())) {
        assert_eq!(line["requestId"], *id);
        assert!(line["time"].as_str().unwrap().ends_with('Z'));
        assert!(line["durationMs"].as_f64().unwrap() >= 0.0);
        assert_eq!(line["account"], "local");
        assert!(line.get("params").is_none(), "arguments are not logged unless asked");
    }
    assert_eq!(lines[0]["method"], "tools/call");
    assert_eq!(lines[0]["name"], "echo");
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[2]["outcome"], "tool_error", "a bad argument is the tool's error");
    assert_eq!(lines[3]["outcome"], "error");
    assert_eq!(lines[3]["errorCode"], -32602);
    assert!(!std::fs::read_to_string(&log).unwrap().contains("secret-ish"));
    let _ = std::fs::remove_file(&log);
}

#[test]
fn stdio_rate_limit_says_when_to_retry() {
    let mut server = LinePeer::spawn(BIN, &["--rate-limit", "2/s", "--rate-burst", "2"]);
    server.initialize("2025-11-25");
    let echo = json!({"name": "echo", "arguments": {"text": "x"}});
    assert!(server.request("tools/call", echo.clone())["result"].is_object());
    assert!(server.request("tools/call", echo.clone())["result"].is_object());
    let refused = server.request("tools/call", echo.clone());
    assert_eq!(refused["error"]["code"], 429, "{refused}");
    let wait = refused["error"]["data"]["retryAfterMs"].as_u64().unwrap();
    assert!(wait > 0 && wait <= 500, "{wait}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("Retry in"));
    std::thread::sleep(Duration::from_millis(wait + 20));
    assert!(server.request("tools/call", echo)["result"].is_object(), "a token is back after the wait");
    assert!(server.request("ping", json!({}))["result"].is_object(), "ping is never limited");
    server.finish();
}

#[test]
fn stdio_timeout_stops_a_slow_tool_with_an_error_result() {
    let mut server = LinePeer::spawn(BIN, &["--request-timeout", "300ms"]);
    server.initialize("2025-06-18");
    let started = std::time::Instant::now();
    let slow = server.request("tools/call", json!({"name": "wait", "arguments": {"ms": 5000}}));
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert_eq!(slow["result"]["isError"], true, "{slow}");
    let text = slow["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("300 ms") && text.contains("wait"), "{text}");
    let quick = server.request("tools/call", json!({"name": "wait", "arguments": {"ms": 10}}));
    assert_eq!(quick["result"]["content"][0]["text"], "waited 10 ms");
    server.finish();
}

#[test]
fn stdio_response_cap_turns_a_large_result_into_an_error_result() {
    let mut server = LinePeer::spawn(BIN, &["--max-response-bytes", "1K"]);
    server.initialize("2025-06-18");
    let small = server.request("tools/call", json!({"name": "echo", "arguments": {"text": "short"}}));
    assert_eq!(small["result"]["content"][0]["text"], "short");
    let big = server.request("tools/call", json!({"name": "echo", "arguments": {"text": "x".repeat(5000)}}));
    assert_eq!(big["result"]["isError"], true);
    assert!(big["result"]["content"][0]["text"].as_str().unwrap().contains("1024 bytes"));
    server.finish();
}

/// POSTs a 2026-07-28 tools/call; returns the status, the headers and the body.
fn call(port: u16, name: &str, arguments: Value) -> (u16, String, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
                  "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}})
    .to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
         Mcp-Name: {name}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let status = raw.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (head, payload) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let message = payload
        .lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data: ").or(Some(l)))
        .find_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .unwrap_or(Value::Null);
    (status, head.to_ascii_lowercase(), message)
}

#[test]
fn http_rate_limit_is_429_with_retry_after_and_a_json_rpc_error() {
    let server = HttpServer::start(BIN, &["--rate-limit", "1/s", "--rate-burst", "1"]).unwrap();
    let (status, _, first) = call(server.port(), "echo", json!({"text": "a"}));
    assert_eq!(status, 200, "{first}");
    let (status, head, refused) = call(server.port(), "echo", json!({"text": "b"}));
    assert_eq!(status, 429, "{refused}");
    assert!(head.contains("retry-after: 1"), "{head}");
    assert_eq!(refused["id"], 7, "the error answers the request");
    assert_eq!(refused["error"]["code"], 429);
    assert!(refused["error"]["data"]["retryAfterMs"].as_u64().unwrap() <= 1000);
}

#[test]
fn http_timeout_and_audit_log_on_stderr() {
    let server =
        HttpServer::start(BIN, &["--request-timeout", "200ms", "--audit-log", "-", "--audit-arguments"]).unwrap();
    let (status, _, slow) = call(server.port(), "wait", json!({"ms": 3000}));
    assert_eq!(status, 200);
    assert_eq!(slow["result"]["isError"], true, "{slow}");
    assert_eq!(slow["result"]["resultType"], "complete", "a 2026-07-28 result keeps its shape");
    let (_, _, ok) = call(server.port(), "echo", json!({"text": "logged"}));
    assert_eq!(ok["result"]["content"][0]["text"], "logged");
    std::thread::sleep(Duration::from_millis(100));
    let entries: Vec<Value> =
        server.stderr().lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(entries.len(), 2, "{}", server.stderr());
    assert_eq!(entries[0]["name"], "wait");
    assert_eq!(entries[0]["outcome"], "tool_error");
    assert_eq!(entries[0]["protocolVersion"], "2026-07-28");
    assert_eq!(entries[1]["params"]["arguments"]["text"], "logged", "--audit-arguments records them");
}
