//! Run-time changes reach clients: list_changed on legacy sessions, resource subscriptions, and
//! the 2026-07-28 listen stream.

use mcp::server::{NoArgs, RequestContext, ToolDef, ToolError};
use mcp::types::prompts::Prompt;
use serde_json::json;

use crate::support::{modern, router, Peer};

async fn noop(_: NoArgs, _cx: RequestContext) -> Result<String, ToolError> {
    Ok("new".into())
}

#[tokio::test]
async fn a_tool_added_at_run_time_is_announced_to_legacy_sessions() {
    let router = router();
    let mut peer = Peer::new(router.clone());
    peer.initialize("2025-11-25").await;
    router.lists().add_tool(ToolDef::new("added").description("Added."), noop);
    let n = peer.recv().await;
    assert_eq!(n["method"], "notifications/tools/list_changed");
    let r = peer.request(1, "tools/call", json!({"name": "added", "arguments": {}})).await;
    assert_eq!(r["result"]["content"][0]["text"], "new");
    assert!(router.lists().remove_tool("added"));
    assert_eq!(peer.recv().await["method"], "notifications/tools/list_changed");
}

// The silences below are waits on the paused clock: no real time.
#[tokio::test(start_paused = true)]
async fn legacy_resource_subscriptions() {
    let router = router();
    let mut peer = Peer::new(router.clone());
    peer.initialize("2025-11-25").await;
    peer.request(1, "resources/subscribe", json!({"uri": "test://static"})).await;
    router.lists().notify_resource_updated("test://other");
    router.lists().notify_resource_updated("test://static");
    let n = peer.recv().await;
    assert_eq!(n["method"], "notifications/resources/updated");
    assert_eq!(n["params"]["uri"], "test://static");
    peer.request(2, "resources/unsubscribe", json!({"uri": "test://static"})).await;
    router.lists().notify_resource_updated("test://static");
    peer.silent_for(150).await;
}

#[tokio::test(start_paused = true)]
async fn modern_listen_acknowledges_then_streams_tagged_notifications() {
    let router = router();
    let mut peer = Peer::new(router.clone());
    let params =
        modern(json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["test://static"]}}));
    peer.send(json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen", "params": params})).await;
    let ack = peer.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1");
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
    router.lists().add_tool(ToolDef::new("added").description("Added."), noop);
    let n = peer.recv().await;
    assert_eq!(n["method"], "notifications/tools/list_changed");
    assert_eq!(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1");
    router.lists().notify_resource_updated("test://static");
    let n = peer.recv().await;
    assert_eq!(
        (n["method"].as_str(), n["params"]["uri"].as_str()),
        (Some("notifications/resources/updated"), Some("test://static"))
    );
    // Prompts were not asked for: nothing comes.
    let p2 = Prompt { name: "p2".into(), description: Some("More.".into()), ..Default::default() };
    router.lists().add_prompt(p2, |_: NoArgs, _cx: RequestContext| async move { Ok::<_, ToolError>("x".to_owned()) });
    peer.silent_for(150).await;
    // Cancelling ends the stream without a response.
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "listen-1"}}))
        .await;
    peer.request(9, "tools/list", modern(json!({}))).await; // the cancellation has been processed
    router.lists().add_tool(ToolDef::new("added2").description("Added."), noop);
    peer.silent_for(150).await;
}
