//! files-mcp on every era and transport: a 2026-07-28 request on stdio, Streamable HTTP with our
//! client, progress on a long walk, and a cancelled grep that stops and is not answered.

mod common;

use std::time::Duration;

use common::{call, ok, Tree};
use mcp::testing::{HttpServer, LinePeer};
use serde_json::json;

/// `dirs` directories of `files` files each under `root/big`.
fn fill(root: &std::path::Path, dirs: usize, files: usize) {
    for d in 0..dirs {
        let dir = root.join(format!("big/d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..files {
            std::fs::write(dir.join(format!("f{f:03}.txt")), format!("file {d} {f}\n")).unwrap();
        }
    }
}

#[test]
fn a_2026_07_28_request_on_stdio() {
    let tree = Tree::new();
    let mut s = LinePeer::spawn(env!("CARGO_BIN_EXE_files-mcp"), &[tree.root().to_str().unwrap()]);
    s.timeout = Duration::from_secs(20);
    let params = LinePeer::modern(json!({"name": "read_text_file", "arguments": {"path": "inside.txt"}}));
    let r = s.request("tools/call", params);
    assert_eq!(r["result"]["content"][0]["text"], "inside\n", "{r}");
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let r = s.request(
        "tools/call",
        LinePeer::modern(json!({"name": "read_text_file", "arguments": {"path": "../outside/secret.txt"}})),
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_with_our_client() {
    let tree = Tree::new();
    let server = HttpServer::start(env!("CARGO_BIN_EXE_files-mcp"), &[tree.root().to_str().unwrap()]).unwrap();
    let client = server.client().await.unwrap();
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "grep"));
    let r = client.call_tool("grep", json!({"pattern": "fn two"})).await.unwrap();
    assert!(mcp::testing::assert_tool_ok(&r).contains("sub/b.rs:2:fn two() {}"));
    let r = client.call_tool("read_text_file", json!({"path": "etc/passwd"})).await.unwrap();
    mcp::testing::assert_tool_error(&r, "symbolic link");
    client.close().await;
}

#[test]
fn a_long_walk_reports_progress() {
    let tree = Tree::new();
    fill(&tree.root(), 100, 100);
    let mut s = common::spawn(&[&tree.root()], &[], false);
    s.send(&json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": {"name": "directory_tree",
        "arguments": {"path": tree.at("big")}, "_meta": {"progressToken": "walk"}}}));
    let mut progress = 0;
    loop {
        let m = s.recv();
        if m["method"] == "notifications/progress" {
            assert_eq!(m["params"]["progressToken"], "walk");
            progress += 1;
        } else if m["id"] == 50 {
            assert!(ok(&m["result"]).contains("f099.txt"));
            break;
        }
    }
    assert!(progress >= 1, "no progress notification");
}

#[test]
fn a_cancelled_grep_stops_and_is_not_answered() {
    let tree = Tree::new();
    fill(&tree.root(), 300, 100);
    let mut s = common::spawn(&[&tree.root()], &[], false);
    s.send(&json!({"jsonrpc": "2.0", "id": 60, "method": "tools/call", "params": {"name": "grep",
        "arguments": {"pattern": "no such line (\\d+)x{3}", "noIgnore": true}}}));
    std::thread::sleep(Duration::from_millis(5));
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 60, "reason": "test"}}),
    );
    let mut answered = false;
    while let Some(m) = s.try_recv(Duration::from_millis(1500)) {
        answered |= m["id"] == 60;
    }
    assert!(!answered, "the cancelled grep was answered");
    // The server is free again: the same grep, uncancelled, completes.
    let r = call(&mut s, "grep", json!({"pattern": "file 299 99$"}));
    assert!(ok(&r).contains("d299/f099.txt:1:file 299 99"), "{r}");
}
