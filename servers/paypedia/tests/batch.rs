//! `iban_check_batch` on the real binary, over real pipes and sockets: per-account caps,
//! cancellation that stops the work, results that survive a restart (and work cut by `kill -9`
//! that reads as failed), the job tools for a client that knows nothing of tasks, and the
//! 2025-11-25 task form.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcp::client::{Client, ClientOptions, StdioCommand, ToolCall};
use mcp::testing::{HttpServer, LinePeer};
use mcp::types::tasks::TaskStatus;
use serde_json::{json, Value};

const PAYPEDIA: &str = env!("CARGO_BIN_EXE_paypedia");

/// A directory with `million.txt`: 1,000,000 IBANs, one per line.
fn batch_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let line = "DE89 3704 0044 0532 0130 00\n";
    std::fs::write(dir.path().join("million.txt"), line.repeat(1_000_000)).unwrap();
    dir
}

fn million(dir: &Path) -> String {
    format!("file://{}", std::fs::canonicalize(dir).unwrap().join("million.txt").display())
}

async fn http_client(server: &HttpServer, account: Option<&str>) -> Client {
    let mut options = ClientOptions::default();
    if let Some(account) = account {
        options.headers.push(("X-Account".into(), account.into()));
    }
    Client::connect_http(server.url(), options).await.unwrap()
}

async fn start(client: &Client, uri: &str) -> ToolCall {
    client.start_tool("iban_check_batch", json!({"uri": uri})).await.unwrap()
}

fn task_id(call: &ToolCall) -> String {
    match call {
        ToolCall::Task(task) => task.id.clone(),
        ToolCall::Done(result) => panic!("expected a task, got {result:?}"),
    }
}

fn text(call: &ToolCall) -> String {
    match call {
        ToolCall::Done(result) => mcp::testing::assert_tool_error(result, ""),
        ToolCall::Task(task) => panic!("expected an answer, got task {}", task.id),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sixth_job_of_an_account_is_refused_while_another_account_gets_a_slot() {
    let dir = batch_dir();
    let input = dir.path().to_str().unwrap();
    let server = HttpServer::start(
        PAYPEDIA,
        &["--input-dir", input, "--account-header", "X-Account", "--max-jobs-per-account", "5"],
    )
    .unwrap();
    let (alice, bob) = (http_client(&server, Some("alice")).await, http_client(&server, Some("bob")).await);
    let uri = million(dir.path());
    let mut tasks = Vec::new();
    for _ in 0..5 {
        tasks.push(task_id(&start(&alice, &uri).await));
    }
    let refused = text(&start(&alice, &uri).await);
    assert!(
        refused.starts_with("5 jobs running for this account (the limit is 5): retry in about "),
        "the sixth: {refused}"
    );
    let other = task_id(&start(&bob, &uri).await);
    for id in &tasks {
        alice.cancel_task(id).await.unwrap();
    }
    bob.cancel_task(&other).await.unwrap();
    assert!(bob.get_task(&tasks[0]).await.is_err(), "another account's task is unknown to bob");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_batch_stops_its_work_at_once_and_frees_its_slot() {
    let dir = batch_dir();
    let server =
        HttpServer::start(PAYPEDIA, &["--input-dir", dir.path().to_str().unwrap(), "--max-jobs-per-account", "1"])
            .unwrap();
    let client = http_client(&server, None).await;
    let uri = million(dir.path());
    let id = task_id(&start(&client, &uri).await);
    assert!(text(&start(&client, &uri).await).contains("1 job running"), "at the cap");
    client.cancel_task(&id).await.unwrap();
    let cancelled = Instant::now();
    while !server.stderr().contains("iban_check_batch: stopped after") {
        assert!(cancelled.elapsed() < Duration::from_secs(5), "the worker never stopped: {}", server.stderr());
        std::thread::sleep(Duration::from_millis(2));
    }
    let stopped = cancelled.elapsed();
    assert!(stopped < Duration::from_millis(100), "the worker ended {stopped:?} after the cancel");
    assert_eq!(client.get_task(&id).await.unwrap().status, TaskStatus::Cancelled);
    let next = task_id(&start(&client, &uri).await); // the slot is free again
    client.cancel_task(&next).await.unwrap();
}

fn sqlite_server(dir: &Path, db: &Path) -> HttpServer {
    let store = format!("sqlite:{}", db.display());
    HttpServer::start(PAYPEDIA, &["--input-dir", dir.to_str().unwrap(), "--task-store", &store]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_sqlite_results_survive_a_restart_and_a_kill_reads_as_failed() {
    let dir = batch_dir();
    let db: PathBuf = dir.path().join("tasks.db");
    let uri = million(dir.path());
    let server = sqlite_server(dir.path(), &db);
    let client = http_client(&server, None).await;
    let done = task_id(&start(&client, &uri).await);
    let result = client.wait_task(&done, |_| {}).await.unwrap();
    assert!(mcp::testing::assert_tool_ok(&result).contains("1000000 IBANs checked: 1000000 valid"));
    let cut = task_id(&start(&client, &uri).await);
    drop(client);
    drop(server); // SIGKILL while the second batch runs
    let server = sqlite_server(dir.path(), &db);
    let client = http_client(&server, None).await;
    let finished = client.get_task(&done).await.unwrap();
    assert_eq!(finished.status, TaskStatus::Completed);
    let summary = &finished.result.expect("the stored result")["structuredContent"];
    assert_eq!((summary["total"].clone(), summary["valid"].clone()), (json!(1_000_000), json!(1_000_000)));
    let failed = client.get_task(&cut).await.unwrap();
    assert_eq!(failed.status, TaskStatus::Failed, "{failed:?}");
    let reason = failed.error.expect("a reason").message;
    assert!(reason.contains("stopped while this task was running"), "{reason}");
}

/// The process's peak resident memory (`VmHWM`), in KiB.
fn peak_rss_kib(pid: u32) -> i64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Polls `iban_check_batch_status` until the job is done; returns its last answer.
fn follow_job(server: &mut LinePeer, job: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status =
            server.request("tools/call", json!({"name": "iban_check_batch_status", "arguments": {"job_id": job}}));
        let text = status["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
        if !text.contains("is working") {
            return status;
        }
        assert!(Instant::now() < deadline, "the job never finished: {text}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_client_that_knows_nothing_of_tasks_completes_the_batch_through_the_status_tool() {
    let dir = batch_dir();
    let mut server = LinePeer::spawn(PAYPEDIA, &["--input-dir", dir.path().to_str().unwrap()]);
    server.timeout = Duration::from_secs(20);
    server.initialize("2025-06-18");
    let tools = server.request("tools/list", json!({}));
    let names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in ["iban_check_batch", "iban_check_batch_status", "iban_check_batch_cancel", "iban_check_batch_list"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let asked = Instant::now();
    let started =
        server.request("tools/call", json!({"name": "iban_check_batch", "arguments": {"uri": million(dir.path())}}));
    assert!(asked.elapsed() < Duration::from_secs(1), "the first answer took {:?}", asked.elapsed());
    let text = started["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.starts_with("Started job "), "{text}");
    let job = text.split_whitespace().nth(2).unwrap().to_owned();
    let done = follow_job(&mut server, &job);
    let summary = &done["result"]["structuredContent"];
    assert_eq!(summary["total"], 1_000_000, "{done}");
    assert!(done["result"]["content"][1]["text"].as_str().unwrap().contains("1000000 IBANs checked"), "{done}");
    let report = summary["report"]["uri"].as_str().unwrap().to_owned();
    let part = server.request("resources/read", json!({"uri": format!("{report}/part/10")}));
    let csv = part["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(csv.starts_with("input,verdict,error,bank,bic\n"), "{}", &csv[..80]);
    assert_eq!(csv.lines().count(), 100_001, "a part holds 100,000 rows and the header");
    // The whole report, tens of megabytes, is one response: streamed from its file as it is
    // written, so the server's peak memory does not grow by the report's size.
    let bytes = summary["report"]["bytes"].as_u64().unwrap();
    assert!(bytes > 40 << 20, "a report larger than any message budget: {bytes}");
    let peak_before = peak_rss_kib(server.pid());
    let whole = server.request("resources/read", json!({"uri": report}));
    let text = whole["result"]["contents"][0]["text"].as_str().expect("the whole report");
    assert_eq!(text.len() as u64, bytes, "every byte of the file");
    assert_eq!(text.lines().count(), 1_000_001);
    assert_eq!(&text[..csv.len().min(29)], &csv[..29], "the same header");
    let grown = peak_rss_kib(server.pid()) - peak_before;
    eprintln!(
        "reading the whole report ({bytes} bytes) grew the server's peak memory ({peak_before} KiB) by {grown} KiB"
    );
    assert!(grown < (bytes / 1024 / 4) as i64, "peak memory grew by {grown} KiB for a {bytes}-byte report");
    assert!(peak_before + grown < (bytes / 1024) as i64, "the server never held the whole report at once");
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_2025_11_25_form_over_stdio() {
    let dir = batch_dir();
    let command = StdioCommand::new(PAYPEDIA).args(["--input-dir", dir.path().to_str().unwrap()]);
    // A budget large enough for the whole report (ours is 16 MiB unless raised).
    let options = ClientOptions { legacy_only: true, max_message_bytes: 128 << 20, ..ClientOptions::default() };
    let client = Client::connect_stdio(command, options).await.unwrap();
    assert_eq!(client.description().protocol_version, "2025-11-25");
    let started = start(&client, &million(dir.path())).await;
    let id = task_id(&started);
    let mut seen = Vec::new();
    let result = client.wait_task(&id, |t| seen.push(t.status)).await.unwrap();
    assert!(mcp::testing::assert_tool_ok(&result).contains("1000000 IBANs checked"));
    let report = result.structured_content.as_ref().unwrap()["report"]["uri"].as_str().unwrap().to_owned();
    let whole = serde_json::to_value(client.read_resource(&report).await.unwrap()).unwrap();
    assert_eq!(whole["contents"][0]["text"].as_str().unwrap().lines().count(), 1_000_001, "our client reads it whole");
    assert!(seen.contains(&TaskStatus::Working), "{seen:?}");
    let listed = client.list_tasks().await.unwrap();
    assert!(listed.iter().any(|t| t.id == id && t.status == TaskStatus::Completed), "{listed:?}");
    let small = client.start_tool("iban_check_batch", json!({"input": "DE89 3704 0044 0532 0130 00"})).await.unwrap();
    let small = client.wait_task(&task_id(&small), |_| {}).await.unwrap();
    assert!(mcp::testing::assert_tool_ok(&small).contains("1 IBANs checked: 1 valid"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_is_readable_only_by_the_account_that_ran_the_batch() {
    let dir = batch_dir();
    std::fs::write(dir.path().join("latin1.txt"), b"DE89 3704 0044 0532 0130 00\n\xe9t\xe9\n").unwrap();
    let input = dir.path().to_str().unwrap();
    let server = HttpServer::start(PAYPEDIA, &["--input-dir", input, "--account-header", "X-Account"]).unwrap();
    let alice = http_client(&server, Some("alice")).await;
    let bob = http_client(&server, Some("bob")).await;
    let inline = "DE89 3704 0044 0532 0130 00\nFR76 3000 6000 0112 3456 7890 189\n";
    let result = alice.call_tool("iban_check_batch", json!({"input": inline})).await.unwrap();
    let summary = result.structured_content.clone().expect("a summary");
    let uri = summary["report"]["uri"].as_str().unwrap().to_owned();
    let read = alice.read_resource(&uri).await.unwrap();
    assert!(serde_json::to_string(&read).unwrap().contains("Commerzbank"), "{read:?}");
    for uri in [uri.clone(), format!("{uri}/part/1")] {
        let refused = bob.read_resource(&uri).await.expect_err("bob reads no report of alice's");
        assert!(refused.to_string().contains("of yours"), "{refused}");
        let anonymous = http_client(&server, None).await;
        assert!(anonymous.read_resource(&uri).await.is_err(), "nor does an anonymous caller");
    }
    // A file that is not UTF-8 is refused in words, not read whole first.
    let latin1 = format!("file://{}", std::fs::canonicalize(dir.path()).unwrap().join("latin1.txt").display());
    let result = alice.call_tool("iban_check_batch", json!({"uri": latin1})).await.unwrap();
    let said = mcp::testing::assert_tool_error(&result, "UTF-8");
    assert!(said.contains("one IBAN per line"), "{said}");
}
