//! `mcp-example` as a real child process on real pipes: every era, and the walkthrough's rules.

use std::time::Duration;

use mcp::testing::LinePeer;
use serde_json::{json, Value};

fn spawn() -> LinePeer {
    LinePeer::spawn(env!("CARGO_BIN_EXE_mcp-example"), &[])
}

fn modern(params: Value) -> Value {
    LinePeer::modern(params)
}

#[test]
fn serves_each_legacy_version_initialize_list_call() {
    for version in ["2024-11-05", "2025-06-18", "2025-11-25"] {
        let mut server = spawn();
        let init = server.initialize(version);
        assert_eq!(init["result"]["protocolVersion"], version);
        assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example");
        let list = server.request("tools/list", json!({}));
        let names: Vec<&str> =
            list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert!(names.contains(&"echo") && names.contains(&"sum"), "{names:?}");
        let call = server.request("tools/call", json!({"name": "sum", "arguments": {"a": 2, "b": 3}}));
        assert_eq!(call["result"]["content"][0]["text"], "2 + 3 = 5", "{version}");
        let call = server.request("tools/call", json!({"name": "echo", "arguments": {"text": "héllo"}}));
        assert_eq!(call["result"]["content"][0]["text"], "héllo");
        server.finish();
    }
}

#[test]
fn serves_a_2026_client_without_initialize() {
    let mut server = spawn();
    let discover = server.request("server/discover", modern(json!({})));
    assert_eq!(discover["result"]["resultType"], "complete");
    assert!(discover["result"]["supportedVersions"].as_array().unwrap().contains(&json!("2026-07-28")));
    let call = server.request("tools/call", modern(json!({"name": "sum", "arguments": {"a": 1.5, "b": 2}})));
    assert_eq!(call["result"]["content"][0]["text"], "1.5 + 2 = 3.5");
    assert_eq!(call["result"]["resultType"], "complete");
    assert_eq!(call["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-example");
    server.finish();
}

#[test]
fn the_walkthrough_rules_hold_on_a_real_pipe() {
    let mut server = spawn();
    // Invalid JSON: -32700 with id null, and the connection goes on.
    server.send_line("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
    let e = server.recv();
    assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (Value::Null, json!(-32700)));
    // null and other non-objects never crash it.
    for line in ["null", "[]", "17", "\"x\""] {
        server.send_line(line);
        assert!(server.recv()["error"]["code"].is_i64());
    }
    server.initialize("2025-11-25");
    // A notification gets no response.
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}),
    );
    server.silent_for(200);
    // Unknown method: -32601.
    assert_eq!(server.request("does/not/exist", json!({}))["error"]["code"], -32601);
    // Unknown tool: JSON-RPC -32602.
    assert_eq!(server.request("tools/call", json!({"name": "nope", "arguments": {}}))["error"]["code"], -32602);
    // A failing tool: a normal result with isError: true.
    let r = server.request("tools/call", json!({"name": "sum", "arguments": {"a": 1e308, "b": 1e308}}));
    assert_eq!(r["result"]["isError"], true);
    let r = server.request("tools/call", json!({"name": "sum", "arguments": {"a": "one"}}));
    assert_eq!(r["result"]["isError"], true);
    server.finish();
}

#[test]
fn many_calls_in_a_row_keep_the_stream_clean() {
    let mut server = spawn();
    server.initialize("2025-11-25");
    for id in 10..60 {
        let r = server.request("tools/call", json!({"name": "echo", "arguments": {"text": format!("m{id}")}}));
        assert_eq!(r["result"]["content"][0]["text"], format!("m{id}"));
    }
    server.finish();
}

#[test]
fn end_of_input_ends_the_server_cleanly() {
    let mut server = spawn();
    server.initialize("2025-06-18");
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "last"}}}));
    server.close_input();
    assert_eq!(server.recv()["result"]["content"][0]["text"], "last");
    server.finish();
}

#[test]
fn responses_are_never_answered_and_stdout_stays_json_rpc() {
    let mut server = spawn();
    server.initialize("2025-11-25");
    // Responses to requests the server never sent, well formed or not, of every id type and size.
    let malformed = [
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":"s-0","error":{"code":-32000,"message":"no"}}"#,
        r#"{"jsonrpc":"1.0","id":7,"result":{}}"#,
        r#"{"id":8,"result":null}"#,
        r#"{"jsonrpc":"2.0","id":9,"error":"not an object"}"#,
        r#"{"jsonrpc":"2.0","id":10,"error":{"code":"x","message":5}}"#,
        r#"{"jsonrpc":"2.0","id":{"nested":true},"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":[1,2],"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1e400,"error":{"code":1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":11,"result":{},"error":{"code":1,"message":"m"}}"#,
        r#"[{"jsonrpc":"2.0","id":12,"result":{}},{"jsonrpc":"1.0","id":13,"error":{}}]"#,
    ];
    for line in malformed {
        server.send_line(line);
    }
    server.silent_for(300);
    // The server still answers, once per request.
    let r = server.request("tools/call", json!({"name": "echo", "arguments": {"text": "still here"}}));
    assert_eq!(r["result"]["content"][0]["text"], "still here");
    server.send_line(r#"{"jsonrpc":"2.0","id":"dup","method":"ping"}"#);
    server.send_line(r#"{"jsonrpc":"2.0","id":"dup","method":"ping"}"#);
    let (a, b) = (server.recv(), server.recv());
    assert_eq!((a["id"].clone(), b["id"].clone()), (json!("dup"), json!("dup")));
    assert!(server.try_recv(Duration::from_millis(300)).is_none(), "one answer per request");
    server.finish();
}
