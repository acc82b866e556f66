//! The client keeps the JSON-RPC rules too: it answers each request of the server once, never
//! answers a response however malformed, and a malformed answer to one of its own requests fails
//! that request at once instead of leaving it waiting.

use std::time::Duration;

use mcp::client::{Client, ClientOptions};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The test plays the server on the other end of an in-memory pipe.
struct FakeServer {
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
}

impl FakeServer {
    async fn recv(&mut self, wait: Duration) -> Option<Value> {
        let line = tokio::time::timeout(wait, self.lines.next_line()).await.ok()?.ok()??;
        Some(serde_json::from_str(&line).expect("the client writes JSON"))
    }

    async fn send_line(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }
}

async fn connected() -> (tokio::task::JoinHandle<Client>, FakeServer) {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(client_end);
    let options = ClientOptions { legacy_only: true, timeout: Duration::from_secs(20), ..ClientOptions::default() };
    let client = tokio::spawn(async move { Client::connect_streams(read, write, options).await.unwrap() });
    let (server_read, writer) = tokio::io::split(server_end);
    let mut server = FakeServer { lines: BufReader::new(server_read).lines(), writer };
    let init = server.recv(Duration::from_secs(5)).await.expect("initialize");
    assert_eq!(init["method"], "initialize");
    let answer = json!({"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "fake", "version": "1"}}});
    server.send_line(&answer.to_string()).await;
    assert_eq!(server.recv(Duration::from_secs(5)).await.unwrap()["method"], "notifications/initialized");
    (client, server)
}

// The silences that end these tests are waits on the paused clock: no real time, and they end
// only once the client has handled everything sent to it.
#[tokio::test(start_paused = true)]
async fn the_client_never_answers_a_response_and_answers_each_request_once() {
    let (client, mut server) = connected().await;
    let client = client.await.unwrap();
    for line in [
        r#"{"jsonrpc":"2.0","id":1000,"result":{}}"#,
        r#"{"jsonrpc":"1.0","id":1001,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1002,"error":"no"}"#,
        r#"{"jsonrpc":"2.0","id":{"x":1},"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1e400,"result":{}}"#,
        r#"{"id":1003,"error":{"code":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#,
    ] {
        server.send_line(line).await;
    }
    let mut answers = Vec::new();
    while let Some(message) = server.recv(Duration::from_millis(400)).await {
        answers.push(message);
    }
    let ids: Vec<&Value> = answers.iter().map(|m| &m["id"]).collect();
    assert_eq!(ids, [&json!("p"), &json!("p")], "two pings, two answers, nothing else: {answers:?}");
    drop(client);
}

#[tokio::test(start_paused = true)]
async fn a_malformed_answer_fails_the_request_at_once() {
    let (client, mut server) = connected().await;
    let client = client.await.unwrap();
    let call = tokio::spawn(async move { client.request("tools/list", json!({})).await });
    let request = server.recv(Duration::from_secs(5)).await.expect("tools/list");
    let bad = json!({"jsonrpc": "1.0", "id": request["id"], "result": {"tools": []}});
    server.send_line(&bad.to_string()).await;
    let outcome = tokio::time::timeout(Duration::from_secs(2), call).await.expect("no waiting for a timeout").unwrap();
    let error = outcome.expect_err("a malformed answer is an error");
    assert!(error.to_string().contains("malformed"), "{error}");
    while let Some(message) = server.recv(Duration::from_millis(300)).await {
        assert!(message.get("method").is_some(), "the malformed answer was answered: {message}");
    }
}
