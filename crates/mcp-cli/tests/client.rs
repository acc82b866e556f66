//! The client library over stdio against a real server process: starting a server apart from
//! connecting to it, where its stderr goes, and what becomes of a process nobody connected to.

use std::time::{Duration, Instant};

use mcp::client::{Client, ClientOptions, Stderr, StdioCommand};
use serde_json::json;

mod common;
use common::{example, running, unique_sleep};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn a_server_started_before_the_runtime_is_connected_later() {
    let process = StdioCommand::new(example().to_str().unwrap()).stderr(Stderr::Discard).spawn().unwrap();
    runtime().block_on(async {
        let client = Client::connect_process(process, ClientOptions::default()).await.unwrap();
        let result = client.call_tool("echo", json!({"text": "later"})).await.unwrap();
        assert_eq!(serde_json::to_value(&result).unwrap()["content"][0]["text"], "later");
        client.close().await;
    });
}

#[test]
fn the_servers_stderr_is_captured_by_default() {
    let script = format!("echo 'starting up' >&2; exec '{}'", example().display());
    runtime().block_on(async {
        let command = StdioCommand::new("sh").args(["-c", &script]);
        let client = Client::connect_stdio(command, ClientOptions::default()).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !client.stderr().contains("starting up") && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(client.stderr().contains("starting up"), "{:?}", client.stderr());
        client.close().await;
    });
}

#[test]
fn a_process_nobody_connected_to_is_killed_and_reaped_when_dropped() {
    let sleep = unique_sleep();
    let process = StdioCommand::new("sleep").args([sleep.as_str()]).spawn().unwrap();
    assert!(running(&sleep));
    drop(process);
    assert!(!running(&sleep), "`sleep {sleep}` outlived its ServerProcess");
}
