//! `mcp-example --http 127.0.0.1:PORT` as a host configured with its URL reaches it: the legacy
//! handshake and 2026-07-28 requests, over a real socket to the real binary.

use std::io::{Read, Write};
use std::net::TcpStream;

use mcp::testing::HttpServer;
use serde_json::{json, Value};

/// `mcp-example --http 127.0.0.1:0`, its port read from its "serving MCP on ..." line.
fn start() -> HttpServer {
    HttpServer::start(env!("CARGO_BIN_EXE_mcp-example"), &[]).expect("mcp-example serves HTTP")
}

/// POSTs `body` with `headers`; returns status, the session header and the JSON-RPC message
/// (from a JSON body or the last SSE event).
fn post(port: u16, headers: &[(&str, &str)], body: &Value) -> (u16, Option<String>, Value) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let body = body.to_string();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    stream.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let status = raw.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let session =
        raw.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id: ").map(|v| v.trim().to_owned()));
    let payload = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let message = payload
        .lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data: ").or(Some(l)))
        .find_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .unwrap_or(Value::Null);
    (status, session, message)
}

#[test]
fn a_legacy_host_initializes_lists_and_calls() {
    let server = start();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "claude-code", "version": "1.0"}}});
    let (status, session, r) = post(server.port(), &[], &init);
    assert_eq!((status, r["result"]["protocolVersion"].clone()), (200, json!("2025-06-18")));
    let session = session.expect("Mcp-Session-Id");
    let h = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
    post(server.port(), &h, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let (_, _, r) = post(server.port(), &h, &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    assert!(r["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "sum"));
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "sum", "arguments": {"a": 2, "b": 3}}});
    let (_, _, r) = post(server.port(), &h, &call);
    assert_eq!(r["result"]["content"][0]["text"], "2 + 3 = 5");
}

#[test]
fn a_2026_host_discovers_and_calls() {
    let server = start();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}});
    let h = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "server/discover")];
    let (status, session, r) = post(server.port(), &h, &discover);
    assert_eq!((status, session), (200, None));
    assert_eq!(r["result"]["resultType"], "complete");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}});
    let h = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")];
    let (status, _, r) = post(server.port(), &h, &call);
    assert_eq!((status, r["result"]["content"][0]["text"].clone()), (200, json!("hi")));
}

/// Opens a legacy session; returns its id.
fn open_session(port: u16) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, session, _) = post(port, &[], &init);
    assert_eq!(status, 200, "initialize is accepted");
    session.expect("Mcp-Session-Id")
}

/// The HTTP status of a `ping` on `session`.
fn ping(port: u16, session: &str) -> u16 {
    let h = [("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-11-25")];
    post(port, &h, &json!({"jsonrpc": "2.0", "id": 9, "method": "ping"})).0
}

/// Opens the session's GET stream and keeps it open (until the returned stream is dropped).
fn open_get_stream(port: u16, session: &str) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         MCP-Protocol-Version: 2025-11-25\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200", "the GET stream opens");
    stream
}

#[test]
fn a_full_session_table_makes_room_by_ending_the_least_recently_active_idle_session() {
    let server = HttpServer::start(env!("CARGO_BIN_EXE_mcp-example"), &["--max-sessions", "5"]).unwrap();
    let port = server.port();
    let sessions: Vec<String> = (0..105).map(|_| open_session(port)).collect();
    // Every newcomer got in; the 100 oldest were ended and answer 404; the 5 newest live on.
    let statuses: Vec<u16> = sessions.iter().map(|s| ping(port, s)).collect();
    assert!(statuses[..100].iter().all(|s| *s == 404), "{statuses:?}");
    assert!(statuses[100..].iter().all(|s| *s == 200), "{statuses:?}");
    // Activity counts: touching the oldest survivor makes another one the next to go.
    assert_eq!(ping(port, &sessions[100]), 200);
    open_session(port);
    assert_eq!(ping(port, &sessions[100]), 200, "recently active");
    assert_eq!(ping(port, &sessions[101]), 404, "least recently active");
}

#[test]
fn a_busy_session_is_never_evicted_and_503_comes_only_when_all_are_busy() {
    let server = HttpServer::start(env!("CARGO_BIN_EXE_mcp-example"), &["--max-sessions", "3"]).unwrap();
    let port = server.port();
    let busy = open_session(port);
    let _stream = open_get_stream(port, &busy);
    for _ in 0..20 {
        open_session(port);
    }
    assert_eq!(ping(port, &busy), 200, "a session with an open stream is never ended");
    let others: Vec<String> = (0..2).map(|_| open_session(port)).collect();
    let _streams: Vec<TcpStream> = others.iter().map(|s| open_get_stream(port, s)).collect();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, _, r) = post(port, &[], &init);
    assert_eq!(status, 503, "every session is busy: {r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("too many sessions"), "{r}");
}
