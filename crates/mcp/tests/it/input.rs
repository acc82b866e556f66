//! Asking the client for input, written once in the handler, served in both eras.

use serde_json::{json, Value};

use crate::support::{modern_with, router, Peer};

#[tokio::test]
async fn legacy_elicitation_is_a_request_to_the_client() {
    let mut peer = Peer::new(router());
    peer.initialize("2025-11-25").await;
    peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "confirm_twice", "arguments": {}}})).await;
    for answer in [true, false] {
        let ask = peer.recv().await;
        assert_eq!(ask["method"], "elicitation/create");
        assert_eq!(ask["params"]["requestedSchema"]["properties"]["ok"]["type"], "boolean");
        let id = ask["id"].clone();
        peer.send(json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"ok": answer}}})).await;
    }
    let r = peer.recv().await;
    assert_eq!(r["id"], 1);
    assert_eq!(r["result"]["content"][0]["text"], "Accepted(Confirm { ok: true }) Accepted(Confirm { ok: false })");
}

#[tokio::test]
async fn modern_elicitation_is_input_required_then_a_retry() {
    let mut peer = Peer::new(router());
    let caps = json!({"elicitation": {}});
    let base = modern_with(json!({"name": "confirm_twice", "arguments": {}}), caps);
    // Round 1: the server asks the first question.
    let r = peer.request(1, "tools/call", base.clone()).await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required");
    let (key, request) = result["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    let state = result["requestState"].as_str().unwrap().to_owned();
    // Round 2: answer it; the server asks the second.
    let mut retry = base.clone();
    retry["inputResponses"] = json!({key: {"action": "accept", "content": {"ok": true}}});
    retry["requestState"] = Value::String(state);
    let r = peer.request(2, "tools/call", retry).await;
    assert_eq!(r["result"]["resultType"], "input_required");
    let key2 = r["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    assert_ne!(&key2, key);
    let state2 = r["result"]["requestState"].as_str().unwrap().to_owned();
    // Round 3: answer the second; the first answer travels sealed in the state.
    let mut retry = base.clone();
    retry["inputResponses"] = json!({key2: {"action": "decline"}});
    retry["requestState"] = Value::String(state2.clone());
    let r = peer.request(3, "tools/call", retry).await;
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["content"][0]["text"], "Accepted(Confirm { ok: true }) Declined");
    // A forged state, or one replayed against other arguments, is refused.
    let mut forged = base.clone();
    forged["requestState"] = json!(format!("x{state2}"));
    assert_eq!(peer.request(4, "tools/call", forged).await["error"]["code"], -32602);
}

#[tokio::test]
async fn elicitation_without_the_capability_is_refused() {
    let mut peer = Peer::new(router());
    let r =
        peer.request(1, "tools/call", modern_with(json!({"name": "confirm_twice", "arguments": {}}), json!({}))).await;
    assert_eq!(r["error"]["code"], -32021);
    assert_eq!(r["error"]["data"]["requiredCapabilities"], json!({"elicitation": {}}));
}
