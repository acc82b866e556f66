//! The stdio rules of the walkthrough, and the engine's own invariants.
//!
//! Tests that wait on a timer (the `sleep` tool, a stretch of silence) run on tokio's paused
//! clock: it jumps to the next timer whenever everything else waits, so they take no real time.

use std::time::Duration;

use serde_json::json;

use crate::support::{router, Peer};

#[tokio::test]
async fn invalid_json_gets_parse_error_with_null_id_and_the_connection_goes_on() {
    let mut peer = Peer::new(router());
    peer.send_line("{not json").await;
    let e = peer.recv().await;
    assert_eq!(e["error"]["code"], -32700);
    assert_eq!(e["id"], json!(null));
    let r = peer.initialize("2025-06-18").await;
    assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
}

#[tokio::test]
async fn null_and_other_non_objects_never_crash_it() {
    let mut peer = Peer::new(router());
    for line in ["null", "42", "\"text\"", "true", "[]", "[1,2]", "{}", "{\"jsonrpc\":\"2.0\"}"] {
        peer.send_line(line).await;
        let e = peer.recv().await;
        assert!(e["error"]["code"] == -32600 || e["error"]["code"] == -32700, "{line}: {e}");
    }
    peer.send_line("").await;
    peer.send_line("   ").await;
    let r = peer.initialize("2025-11-25").await;
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
}

#[tokio::test(start_paused = true)]
async fn a_notification_gets_no_response() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/whatever"})).await;
    peer.send(json!({"jsonrpc": "2.0", "method": "tools/list"})).await; // no id: a notification
    peer.silent_for(200).await;
}

#[tokio::test]
async fn an_unknown_method_gets_method_not_found() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    let r = peer.request(1, "no/such/method", json!({})).await;
    assert_eq!(r["error"]["code"], -32601);
}

#[tokio::test]
async fn an_unknown_tool_is_a_json_rpc_error() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    let r = peer.request(1, "tools/call", json!({"name": "nope", "arguments": {}})).await;
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("nope"));
}

#[tokio::test]
async fn a_failing_tool_is_a_result_with_is_error() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    let r = peer.request(1, "tools/call", json!({"name": "fail", "arguments": {}})).await;
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(r["result"]["content"][0]["text"], "the backend is down; try again later");
}

#[tokio::test]
async fn arguments_that_break_the_schema_are_a_tool_error_naming_the_problem() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    let r = peer.request(1, "tools/call", json!({"name": "echo", "arguments": {"text": 5, "extra": 1}})).await;
    assert_eq!(r["result"]["isError"], true);
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("/text") && text.contains("extra"), "{text}");
    let r = peer.request(2, "tools/call", json!({"name": "echo"})).await;
    assert_eq!(r["result"]["isError"], true, "missing arguments: {r}");
}

#[tokio::test]
async fn a_panicking_handler_answers_internal_error_and_the_server_lives() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    let r = peer.request(1, "tools/call", json!({"name": "panic", "arguments": {}})).await;
    assert_eq!(r["error"]["code"], -32603);
    let r = peer.request(2, "tools/call", json!({"name": "echo", "arguments": {"text": "still here"}})).await;
    assert_eq!(r["result"]["content"][0]["text"], "still here");
}

#[tokio::test]
async fn ids_keep_their_type_and_a_null_id_is_invalid() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    peer.send(json!({"jsonrpc": "2.0", "id": "7", "method": "ping"})).await;
    assert_eq!(peer.recv().await["id"], json!("7"));
    peer.send(json!({"jsonrpc": "2.0", "id": null, "method": "ping"})).await;
    let e = peer.recv().await;
    assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (json!(null), json!(-32600)));
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_request_gets_no_response() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    peer.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "sleep", "arguments": {"ms": 2000}}})).await;
    tokio::time::sleep(Duration::from_millis(50)).await; // the call is running
    peer.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9, "reason": "user"}}),
    )
    .await;
    peer.silent_for(2500).await; // past the end of the call: no late answer either
    let r = peer.request(10, "ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
}

#[tokio::test(start_paused = true)]
async fn requests_run_concurrently() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    let started = tokio::time::Instant::now();
    peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "sleep", "arguments": {"ms": 500}}})).await;
    let r = peer.request(2, "tools/call", json!({"name": "echo", "arguments": {"text": "fast"}})).await;
    assert_eq!(r["result"]["content"][0]["text"], "fast", "the fast call must not wait for the slow one");
    // On the paused clock, time moves only as the slow call's timers fire.
    assert!(started.elapsed() < Duration::from_millis(500), "answered after {:?}", started.elapsed());
}

#[tokio::test]
async fn an_oversized_line_is_rejected_and_the_connection_goes_on() {
    let options = mcp::server::ServeOptions { max_line: 1024, ..Default::default() };
    let mut peer = Peer { inner: mcp::transport::memory::connect_with(router(), options) };
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(100_000)
    );
    peer.send_line(&big).await;
    let e = peer.recv().await;
    assert_eq!(e["error"]["code"], -32600);
    let r = peer.initialize("2025-11-25").await;
    assert!(r["result"].is_object());
}

#[tokio::test(start_paused = true)]
async fn end_of_input_ends_the_server_after_answering() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "sleep", "arguments": {"ms": 100}}})).await;
    peer.inner.close().await.unwrap();
    let r = peer.recv().await;
    assert_eq!(r["result"]["content"][0]["text"], "slept 100 ms");
    let end = tokio::time::timeout(Duration::from_secs(5), peer.inner.recv()).await.unwrap().unwrap();
    assert!(end.is_none(), "the server closes its output after end of input");
}

#[tokio::test]
async fn pagination_uses_opaque_cursors() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    let mut names = Vec::new();
    let mut cursor = serde_json::Value::Null;
    for id in 1..10 {
        let params = if cursor.is_null() { json!({}) } else { json!({"cursor": cursor}) };
        let r = peer.request(id, "tools/list", params).await;
        names.extend(r["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        cursor = r["result"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(names, ["echo", "fail", "panic", "sleep", "weather", "confirm_twice"]);
    let r = peer.request(20, "tools/list", json!({"cursor": "forged"})).await;
    assert_eq!(r["error"]["code"], -32602);
}

#[tokio::test]
async fn resources_templates_and_prompts() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    let r = peer.request(1, "resources/read", json!({"uri": "test://items/42"})).await;
    assert_eq!(r["result"]["contents"][0]["text"], "item 42");
    assert_eq!(r["result"]["contents"][0]["uri"], "test://items/42");
    let r = peer.request(2, "resources/read", json!({"uri": "test://items/notanumber"})).await;
    assert_eq!(r["error"]["code"], -32602);
    let r = peer.request(3, "resources/read", json!({"uri": "test://missing"})).await;
    assert_eq!(r["error"]["code"], -32002, "legacy sessions get the legacy not-found code");
    let r = peer.request(4, "prompts/get", json!({"name": "greet", "arguments": {"name": "Ada"}})).await;
    assert_eq!(r["result"]["messages"][0]["content"]["text"], "Hello Ada");
    let r = peer.request(5, "prompts/get", json!({"name": "greet", "arguments": {}})).await;
    assert_eq!(r["error"]["code"], -32602, "a missing required argument");
    let r = peer.request(6, "prompts/list", json!({})).await;
    assert_eq!(
        r["result"]["prompts"][0]["arguments"][0],
        json!({"name": "name", "description": "Who.", "required": true})
    );
    let r = peer.request(7, "tools/call", json!({"name": "weather", "arguments": {}})).await;
    assert_eq!(r["result"]["structuredContent"], json!({"celsius": 21.5}));
}
