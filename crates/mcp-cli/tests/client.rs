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
    // `spawn` returns once the exec began (its close-on-exec pipe closed); the kernel sets the new
    // program's arguments, which `running` reads from /proc, a moment later: a busy machine shows
    // that moment. Wait for them (2 s at most), then require the process.
    let deadline = Instant::now() + Duration::from_secs(2);
    while !running(&sleep) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(running(&sleep));
    drop(process);
    assert!(!running(&sleep), "`sleep {sleep}` outlived its ServerProcess");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_takes_minutes_answers_in_under_a_second_in_every_form() {
    use mcp::client::{ClientOptions, ToolCall};
    let server = mcp::testing::HttpServer::start(common::conformance_server(), &[]).unwrap();
    let args = serde_json::json!({"seconds": 300, "label": "slow"});
    // A client that follows the tasks extension gets a task.
    let client = server.client().await.unwrap();
    let asked = std::time::Instant::now();
    let started = client.start_tool("slow_compute", args.clone()).await.unwrap();
    assert!(asked.elapsed() < std::time::Duration::from_secs(1), "answered after {:?}", asked.elapsed());
    let ToolCall::Task(task) = started else { panic!("a task") };
    client.cancel_task(&task.id).await.unwrap();
    // One that follows none gets a job id, as fast.
    let options = ClientOptions { tasks: false, ..ClientOptions::default() };
    let plain = mcp::client::Client::connect_http(server.url(), options).await.unwrap();
    let asked = std::time::Instant::now();
    let started = plain.start_tool("slow_compute", args).await.unwrap();
    assert!(asked.elapsed() < std::time::Duration::from_secs(1), "answered after {:?}", asked.elapsed());
    let ToolCall::Done(result) = started else { panic!("a job, in a plain result") };
    let text = mcp::testing::assert_tool_ok(&result);
    assert!(text.starts_with("Started job "), "{text}");
    let job = text.split_whitespace().nth(2).unwrap();
    let cancelled = plain.call_tool("slow_compute_cancel", serde_json::json!({"job_id": job})).await.unwrap();
    assert!(mcp::testing::assert_tool_ok(&cancelled).contains("was cancelled"));
}
