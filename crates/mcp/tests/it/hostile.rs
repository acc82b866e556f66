//! Hostile input on the endpoint's readers: the era is what `_meta` says (never a substring of the
//! params), a key given twice is refused by every reader alike (the envelope, the params' head,
//! on HTTP and on a line transport), and the side pages answer only what the Host and Origin
//! checks let through.

use std::sync::Arc;
use std::time::Duration;

use mcp::transport::http::{serve_service, HttpConfig, McpService, SidePage, SideRoutes, WithSideRoutes};
use serde_json::{json, Value};

use crate::http::{rpc, send, Reply, CT, JSON_SSE, QUICK};
use crate::support::{modern, router, Peer};

async fn start(config: HttpConfig, routes: Option<SideRoutes>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let service = WithSideRoutes::new(McpService::new(router(), config.clone()), routes, &config);
    tokio::spawn(serve_service(listener, service, None));
    addr
}

async fn post_text(addr: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut all = vec![JSON_SSE, CT];
    all.extend_from_slice(headers);
    send(addr, "POST", "/mcp", &all, body, QUICK).await
}

async fn legacy_session(addr: &str) -> String {
    let init = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let reply = post_text(addr, &[], &init.to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.header("mcp-session-id").expect("a session id").to_owned()
}

const MODERN_CALL: [(&str, &str); 3] =
    [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")];

/// A user asking about MCP, a spec page being written: the words are data, not the era.
#[tokio::test]
async fn the_protocol_version_key_in_arguments_is_echoed_on_a_legacy_session() {
    let addr = start(HttpConfig::default(), None).await;
    let sid = legacy_session(&addr).await;
    let session = [("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    for text in [
        "io.modelcontextprotocol/protocolVersion",
        r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
    ] {
        let call = rpc(2, "tools/call", json!({"name": "echo", "arguments": {"text": text}}));
        let reply = post_text(&addr, &session, &call.to_string()).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(reply.json()["result"]["content"][0]["text"], text, "{}", reply.body);
    }
    // Without a session and without `_meta`, the same words do not make a 2026-07-28 request.
    let call =
        rpc(3, "tools/call", json!({"name": "echo", "arguments": {"text": "io.modelcontextprotocol/protocolVersion"}}));
    let reply = post_text(&addr, &MODERN_CALL, &call.to_string()).await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert!(reply.json()["error"]["message"].as_str().unwrap().contains("missing params._meta"), "{}", reply.body);
}

/// The same words on a line transport: an `initialize` that mentions them opens a session.
#[tokio::test]
async fn the_protocol_version_key_in_client_info_is_no_era_on_stdio() {
    let mut peer = Peer::new(router());
    let info = json!({"name": "io.modelcontextprotocol/protocolVersion", "version": "1"});
    let reply = peer
        .request(1, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}))
        .await;
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25", "{reply}");
}

fn error_of(reply: &Value) -> (i64, String) {
    (reply["error"]["code"].as_i64().unwrap_or(0), reply["error"]["message"].as_str().unwrap_or("").to_owned())
}

/// A key given twice, on HTTP: the envelope's keys (whichever value another reader would take,
/// the endpoint takes neither) and the params fields the server reads, in both eras.
#[tokio::test]
async fn the_endpoint_refuses_a_key_given_twice() {
    let addr = start(HttpConfig::default(), None).await;
    let meta = modern(json!({}))["_meta"].to_string();
    let twice_method = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"ran"}},"_meta":{meta}}}}}"#
    );
    let reply = post_text(&addr, &MODERN_CALL, &twice_method).await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    let (code, message) = error_of(&reply.json());
    assert_eq!(code, -32600, "{message}");
    assert!(message.contains("\"method\" appears more than once"), "{message}");
    assert_eq!(reply.json()["id"], 1, "answered to the id it had");

    let twice_name = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"fail","name":"echo","arguments":{{"text":"ran"}},"_meta":{meta}}}}}"#
    );
    let reply = post_text(&addr, &MODERN_CALL, &twice_name).await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    let (code, message) = error_of(&reply.json());
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("duplicate field `name`"), "{message}");

    let sid = legacy_session(&addr).await;
    let session = [("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let legacy_twice = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"},"name":"fail"}}"#;
    let reply = post_text(&addr, &session, legacy_twice).await;
    assert_eq!(reply.status, 200, "a legacy session's error is a JSON-RPC answer: {}", reply.body);
    let (code, message) = error_of(&reply.json());
    assert_eq!((code, message.contains("duplicate field `name`")), (-32602, true), "{message}");
    let twice_meta_key = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"},"_meta":{"progressToken":1,"progressToken":2}}}"#;
    let (code, message) = error_of(&post_text(&addr, &session, twice_meta_key).await.json());
    assert_eq!((code, message.contains("duplicate field `progressToken`")), (-32602, true), "{message}");
}

/// The same refusals on a line transport (the era adapter and the envelope of stdio).
#[tokio::test]
async fn the_line_transport_refuses_a_key_given_twice() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    peer.send_line(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","method":"tools/call","params":{"name":"echo","arguments":{"text":"ran"}}}"#)
        .await;
    let reply = peer.recv().await;
    let (code, message) = error_of(&reply);
    assert_eq!((code, reply["id"].clone()), (-32600, json!(7)), "{reply}");
    assert!(message.contains("\"method\" appears more than once"), "{message}");
    peer.send_line(r#"{"jsonrpc":"2.0","id":8,"id":9,"method":"ping"}"#).await;
    let reply = peer.recv().await;
    assert_eq!((error_of(&reply).0, reply["id"].clone()), (-32600, Value::Null), "no one id to answer: {reply}");
    peer.send_line(r#"{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":"a","uri":"b"}}"#).await;
    let reply = peer.recv().await;
    let (code, message) = error_of(&reply);
    assert_eq!(code, -32602, "{reply}");
    assert!(message.contains("duplicate field `uri`") && message.contains("each key may appear once"), "{message}");
}

/// The side pages (`/healthz`, `/metrics`) answer only what the endpoint would: a page of another
/// site whose name resolves to 127.0.0.1 (DNS rebinding) reads nothing.
#[tokio::test]
async fn side_pages_are_behind_the_host_and_origin_checks() {
    type Pages = Arc<dyn Fn(&str) -> Option<SidePage> + Send + Sync>;
    let pages: Pages = Arc::new(|path: &str| match path {
        "/metrics" => Some((200, "text/plain", "upstream_up{name=\"private-db\"} 1\n".into())),
        _ => None,
    });
    let addr = start(HttpConfig::default(), Some(SideRoutes(pages))).await;
    let port = addr.rsplit(':').next().unwrap();
    let ok = send(&addr, "GET", "/metrics", &[], "", QUICK).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert!(ok.body.contains("private-db"));
    for (name, value) in [("Host", format!("rebind.example:{port}")), ("Origin", "http://rebind.example".to_owned())] {
        let reply = raw_get(&addr, "/metrics", name, &value).await;
        assert!(reply.status == 421 || reply.status == 403, "{name} {value}: {} {}", reply.status, reply.body);
        assert!(!reply.body.contains("private-db"), "{}", reply.body);
    }
}

/// A GET with one header replaced (`send` always names the listener as Host).
async fn raw_get(addr: &str, path: &str, name: &str, value: &str) -> Reply {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let host = if name == "Host" { value.to_owned() } else { addr.to_owned() };
    let extra = if name == "Host" { String::new() } else { format!("{name}: {value}\r\n") };
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut raw)).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Reply { status, headers: Vec::new(), body }
}
