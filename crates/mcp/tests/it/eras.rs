//! Both eras on one connection type: the legacy handshake and 2026-07-28 per-request `_meta`.

use serde_json::json;

use crate::support::{modern, router, Peer};

#[tokio::test]
async fn initialize_negotiates_the_clients_version_or_our_newest_legacy_one() {
    for (asked, got) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
    ] {
        let mut peer = Peer::new(router());
        let r = peer.initialize(asked).await;
        assert_eq!(r["result"]["protocolVersion"], got, "asked {asked}");
        assert_eq!(r["result"]["serverInfo"]["name"], "test-server");
        assert!(r["result"].get("resultType").is_none(), "legacy results carry no resultType");
    }
}

#[tokio::test]
async fn a_second_initialize_is_refused() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    let r = peer
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32600);
}

#[tokio::test]
async fn requests_before_initialize_without_meta_are_refused_but_ping_works() {
    let mut peer = Peer::new(router());
    let r = peer.request(1, "tools/list", json!({})).await;
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("initialize"));
    let r = peer.request(2, "ping", json!({})).await;
    assert!(r.get("error").is_some() || r["result"] == json!({}));
}

#[tokio::test]
async fn modern_discover_then_call_without_initialize() {
    let mut peer = Peer::new(router());
    let r = peer.request(1, "server/discover", modern(json!({}))).await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"][0], "2026-07-28");
    assert!(result["supportedVersions"].as_array().unwrap().contains(&json!("2024-11-05")));
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "test-server");
    assert!(result["ttlMs"].is_i64() || result["ttlMs"].is_u64());
    assert_eq!(result["cacheScope"], "private");
    let r = peer.request(2, "tools/call", modern(json!({"name": "echo", "arguments": {"text": "hi"}}))).await;
    assert_eq!(r["result"]["content"][0]["text"], "hi");
    assert_eq!(r["result"]["resultType"], "complete");
    let r = peer.request(3, "tools/list", modern(json!({}))).await;
    assert!(r["result"]["ttlMs"].is_number() && r["result"]["cacheScope"].is_string());
}

#[tokio::test]
async fn modern_errors_missing_meta_unsupported_version_removed_methods() {
    let mut peer = Peer::new(router());
    let r = peer.request(1, "server/discover", json!({})).await;
    assert_eq!(r["error"]["code"], -32602, "no _meta at all");
    let no_caps = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    let r = peer.request(2, "tools/list", no_caps).await;
    assert_eq!(r["error"]["code"], -32602, "missing clientCapabilities");
    let old = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1900-01-01", "io.modelcontextprotocol/clientCapabilities": {}}});
    let r = peer.request(3, "tools/list", old).await;
    assert_eq!(r["error"]["code"], -32022);
    assert_eq!(r["error"]["data"]["requested"], "1900-01-01");
    assert!(r["error"]["data"]["supported"].as_array().unwrap().contains(&json!("2026-07-28")));
    let r = peer.request(4, "ping", modern(json!({}))).await;
    assert_eq!(r["error"]["code"], -32601, "ping does not exist in 2026-07-28");
    let bad_level = modern(json!({}));
    let mut bad_level = bad_level;
    bad_level["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loud");
    let r = peer.request(5, "tools/list", bad_level).await;
    assert_eq!(r["error"]["code"], -32602);
    let r = peer.request(6, "resources/read", modern(json!({"uri": "test://missing"}))).await;
    assert_eq!(r["error"]["code"], -32602, "2026-07-28 reports a missing resource as -32602");
}

#[tokio::test]
async fn both_eras_share_one_connection() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-06-18").await;
    let legacy = peer.request(1, "tools/call", json!({"name": "echo", "arguments": {"text": "a"}})).await;
    assert!(legacy["result"].get("resultType").is_none());
    let modern_r = peer.request(2, "tools/call", modern(json!({"name": "echo", "arguments": {"text": "b"}}))).await;
    assert_eq!(modern_r["result"]["resultType"], "complete");
}

// The `sleep` tool's steps are timers on the paused clock: no real time.
#[tokio::test(start_paused = true)]
async fn progress_and_log_messages_follow_each_eras_rules() {
    // Legacy: logging/setLevel for the session, progress by token.
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    peer.request(1, "logging/setLevel", json!({"level": "info"})).await;
    let call = json!({"name": "sleep", "arguments": {"ms": 30}, "_meta": {"progressToken": "p1"}});
    peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})).await;
    let (mut progress, mut logs) = (Vec::new(), 0);
    loop {
        let m = peer.recv().await;
        match m["method"].as_str() {
            Some("notifications/progress") => progress.push(m["params"]["progress"].as_f64().unwrap()),
            Some("notifications/message") => logs += 1,
            _ => {
                assert_eq!(m["id"], 2);
                break;
            }
        }
    }
    assert_eq!(progress, [0.0, 1.0, 2.0]);
    assert_eq!(logs, 3);

    // Modern: no log messages unless this request asks for them.
    let mut peer = Peer::new(router());
    let mut params = modern(json!({"name": "sleep", "arguments": {"ms": 20}}));
    params["_meta"]["progressToken"] = json!(5);
    peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params.clone()})).await;
    let methods = peer.methods_before_response().await;
    assert_eq!(methods, ["notifications/progress", "notifications/progress"]);
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    params["_meta"].as_object_mut().unwrap().remove("progressToken");
    peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})).await;
    let methods = peer.methods_before_response().await;
    assert_eq!(methods, ["notifications/message", "notifications/message"]);
}

/// Refuses `tools/call` of `echo`: a layer a batch's items must pass through too.
struct NoEcho;

impl mcp::middleware::Middleware for NoEcho {
    fn handle<'a>(
        &'a self,
        call: mcp::middleware::Call<'a>,
        next: mcp::middleware::Next<'a>,
    ) -> futures_util::future::BoxFuture<'a, mcp::middleware::Outcome> {
        Box::pin(async move {
            if call.method() == "tools/call" && call.name() == Some("echo") {
                return Err(mcp::types::ErrorObject::invalid_params("echo is refused by a layer"));
            }
            next.run(call).await
        })
    }
}

#[tokio::test]
async fn a_batchs_items_pass_through_the_middleware_like_any_request() {
    let mut peer = Peer::new(router().layer(NoEcho));
    peer.initialize("2025-03-26").await;
    peer.send_line(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}]"#).await;
    let batch = peer.recv().await;
    let items = batch.as_array().expect("a batch response");
    let echo = items.iter().find(|item| item["id"] == 2).expect("the call's answer");
    assert_eq!(echo["error"]["message"], "echo is refused by a layer", "{batch}");
    assert!(items.iter().any(|item| item["id"] == 1 && item["result"].is_object()), "{batch}");
}

#[tokio::test]
async fn batches_only_in_2025_03_26() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-03-26").await;
    peer.send_line(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}]"#).await;
    let batch = peer.recv().await;
    let items = batch.as_array().expect("a batch response");
    assert_eq!(items.len(), 2);
    let mut peer = Peer::new(router());
    peer.initialize("2025-06-18").await;
    peer.send_line(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).await;
    assert_eq!(peer.recv().await["error"]["code"], -32600);
}
