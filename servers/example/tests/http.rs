//! `mcp-example --http 127.0.0.1:PORT` as a host configured with its URL reaches it: the legacy
//! handshake and 2026-07-28 requests, over a real socket to the real binary.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

struct Server(Child, u16);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the server on a port the OS picks, read from its "serving MCP on ..." line.
fn start() -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-example"))
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let port = line.trim().rsplit(':').next().and_then(|p| p.trim_end_matches("/mcp").parse().ok()).expect(&line);
    Server(child, port)
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
    let (status, session, r) = post(server.1, &[], &init);
    assert_eq!((status, r["result"]["protocolVersion"].clone()), (200, json!("2025-06-18")));
    let session = session.expect("Mcp-Session-Id");
    let h = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
    post(server.1, &h, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let (_, _, r) = post(server.1, &h, &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    assert!(r["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "sum"));
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "sum", "arguments": {"a": 2, "b": 3}}});
    let (_, _, r) = post(server.1, &h, &call);
    assert_eq!(r["result"]["content"][0]["text"], "2 + 3 = 5");
}

#[test]
fn a_2026_host_discovers_and_calls() {
    let server = start();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}});
    let h = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "server/discover")];
    let (status, session, r) = post(server.1, &h, &discover);
    assert_eq!((status, session), (200, None));
    assert_eq!(r["result"]["resultType"], "complete");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}});
    let h = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")];
    let (status, _, r) = post(server.1, &h, &call);
    assert_eq!((status, r["result"]["content"][0]["text"].clone()), (200, json!("hi")));
}
