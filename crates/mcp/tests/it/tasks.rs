//! Long-running tools in every form, over the in-memory transport: the 2026-07-28 extension,
//! 2025-11-25 tasks, and the job pattern; questions inside tasks; caps; cancellation.
//!
//! Every test runs on tokio's paused clock: the work, the grace before a call becomes a task and
//! the test's waits are timers, and the clock jumps to the next one whenever everything else
//! waits, so a test takes no real time and the order of events is always the same.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp::proxy::ProxyContext as _;
use mcp::server::{Json, NoArgs, RequestContext, Router, ToolDef, ToolError};
use mcp::tasks::{TaskConfig, TaskSupport};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::support::{modern_with, Peer};

const EXT: &str = "io.modelcontextprotocol/tasks";

#[derive(Deserialize, JsonSchema)]
struct Work {
    /// Milliseconds of work.
    ms: u64,
}

#[derive(Serialize, JsonSchema)]
struct Done {
    ms: u64,
}

async fn work(args: Work, cx: RequestContext) -> Result<Json<Done>, ToolError> {
    let steps = args.ms / 10;
    for step in 0..steps {
        cx.progress(step as f64, Some(steps as f64), Some(&format!("step {step} of {steps}"))).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(Json(Done { ms: args.ms }))
}

/// Steps of work done by `counted` (to see that cancelled work stops).
static STEPS: AtomicUsize = AtomicUsize::new(0);

async fn counted(args: Work, _cx: RequestContext) -> Result<String, ToolError> {
    for _ in 0..args.ms / 10 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        STEPS.fetch_add(1, Ordering::Relaxed);
    }
    Ok("counted".into())
}

async fn ask_inside(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    cx.become_task().await;
    let question =
        json!({"message": "OK?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}});
    let answer = cx.ask_keyed("ok", "elicitation/create", question).await?;
    Ok(format!("answered {}", answer["content"]["ok"]))
}

async fn refuses(args: Work, _: RequestContext) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(args.ms)).await;
    Err(ToolError::new("the tool refused: fix the input"))
}

async fn broken(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    cx.become_task().await;
    Err(ToolError::invalid_params("broken on purpose"))
}

fn router(max: usize) -> Router {
    let config = TaskConfig { grace: Duration::from_millis(50), max_per_account: max, ..TaskConfig::default() };
    Router::new()
        .task_config(config)
        .tool_def(ToolDef::new("work").description("Works.").task_support(TaskSupport::Optional), work)
        .tool_def(ToolDef::new("must").description("Works, as a task only.").task_support(TaskSupport::Required), work)
        .tool_def(ToolDef::new("ask_inside").description("Asks.").task_support(TaskSupport::Optional), ask_inside)
        .tool_def(ToolDef::new("broken").description("Fails.").task_support(TaskSupport::Optional), broken)
        .tool_def(ToolDef::new("refuses").description("isError.").task_support(TaskSupport::Optional), refuses)
        .tool_def(ToolDef::new("counted").description("Counts.").task_support(TaskSupport::Optional), counted)
        .tool("plain", "Plain.", |_: NoArgs, _cx: RequestContext| async move { Ok::<_, ToolError>("plain".to_owned()) })
}

fn ext() -> Value {
    json!({"extensions": {EXT: {}}, "elicitation": {}})
}

fn call(name: &str, args: Value, caps: Value) -> Value {
    modern_with(json!({"name": name, "arguments": args}), caps)
}

async fn get(peer: &mut Peer, id: i64, task: &str) -> Value {
    peer.request(id, "tasks/get", modern_with(json!({"taskId": task}), ext())).await
}

/// Polls `tasks/get` until the task ends.
async fn until_done(peer: &mut Peer, task: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    for id in 1000.. {
        let r = get(peer, id, task).await;
        let status = r["result"]["status"].as_str().unwrap_or_default().to_owned();
        if ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            return r;
        }
        assert!(Instant::now() < deadline, "the task did not end: {r}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    unreachable!()
}

#[tokio::test(start_paused = true)]
async fn the_extension_form_from_creation_to_result() {
    let mut peer = Peer::new(router(5));
    let discover = peer.request(1, "server/discover", modern_with(json!({}), json!({}))).await;
    assert!(discover["result"]["capabilities"]["extensions"][EXT].is_object(), "{discover}");
    // Quick work answers plainly; long work becomes a task at once.
    let quick = peer.request(2, "tools/call", call("work", json!({"ms": 0}), ext())).await;
    assert_eq!(quick["result"]["resultType"], "complete", "{quick}");
    let started = Instant::now();
    let created = peer.request(3, "tools/call", call("work", json!({"ms": 400}), ext())).await;
    assert!(started.elapsed() < Duration::from_millis(300), "answered in {:?}", started.elapsed());
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created}");
    assert_eq!(task["status"], "working");
    for field in ["taskId", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"] {
        assert!(!task[field].is_null(), "{field} missing: {task}");
    }
    for field in ["result", "error", "inputRequests", "requestState", "task"] {
        assert!(task.get(field).is_none(), "{field} present: {task}");
    }
    let id = task["taskId"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let working = get(&mut peer, 4, &id).await;
    assert_eq!(working["result"]["status"], "working");
    assert!(
        working["result"]["statusMessage"].as_str().unwrap().starts_with("step "),
        "progress is the message: {working}"
    );
    let done = until_done(&mut peer, &id).await;
    assert_eq!(done["result"]["status"], "completed");
    assert_eq!(done["result"]["resultType"], "complete");
    assert_eq!(done["result"]["result"]["structuredContent"], json!({"ms": 400}));
    // A protocol error is `failed`, with the error inlined.
    let created = peer.request(5, "tools/call", call("broken", json!({}), ext())).await;
    let failed = until_done(&mut peer, created["result"]["taskId"].as_str().unwrap()).await;
    assert_eq!(failed["result"]["status"], "failed");
    assert_eq!(failed["result"]["error"]["code"], -32602);
    assert!(failed["result"].get("result").is_none());
    // Unknown ids are -32602; the methods need the extension.
    let unknown = get(&mut peer, 6, "nope").await;
    assert_eq!(unknown["error"]["code"], -32602);
    let gated = peer.request(7, "tasks/get", modern_with(json!({"taskId": id}), json!({}))).await;
    assert_eq!(gated["error"]["code"], -32021);
    assert!(gated["error"]["data"]["requiredCapabilities"]["extensions"][EXT].is_object());
    let required = peer.request(8, "tools/call", call("must", json!({"ms": 10}), json!({}))).await;
    assert_eq!(required["error"]["code"], -32021, "a required task without the extension: {required}");
}

#[tokio::test(start_paused = true)]
async fn a_question_inside_a_task_is_answered_through_tasks_update() {
    let mut peer = Peer::new(router(5));
    let created = peer.request(1, "tools/call", call("ask_inside", json!({}), ext())).await;
    let id = created["result"]["taskId"].as_str().expect("a task").to_owned();
    let mut waiting = Value::Null;
    for n in 0..100 {
        waiting = get(&mut peer, 10 + n, &id).await;
        if waiting["result"]["status"] == "input_required" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(waiting["result"]["status"], "input_required", "{waiting}");
    assert_eq!(waiting["result"]["inputRequests"]["ok"]["method"], "elicitation/create");
    let ack = peer
        .request(
            200,
            "tasks/update",
            modern_with(
                json!({"taskId": id, "inputResponses": {"ok": {"action": "accept", "content": {"ok": true}}}}),
                ext(),
            ),
        )
        .await;
    assert_eq!(ack["result"]["resultType"], "complete");
    assert!(ack["result"].get("status").is_none(), "an empty acknowledgement: {ack}");
    let done = until_done(&mut peer, &id).await;
    assert_eq!(done["result"]["result"]["content"][0]["text"], "answered true");
}

#[tokio::test(start_paused = true)]
async fn clients_without_tasks_get_jobs_and_the_generated_tools() {
    let mut peer = Peer::new(router(5));
    let list = peer.request(1, "tools/list", modern_with(json!({}), json!({}))).await;
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(
        names.contains(&"work_status") && names.contains(&"work_cancel") && names.contains(&"work_list"),
        "{names:?}"
    );
    let work = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "work").unwrap();
    assert!(work.get("outputSchema").is_none(), "a tool that may answer with a job id declares no output schema");
    assert!(work.get("execution").is_none(), "no execution field in 2026-07-28");
    let with_ext = peer.request(2, "tools/list", modern_with(json!({}), ext())).await;
    let names: Vec<&str> =
        with_ext["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(!names.contains(&"work_status"), "a client that follows tasks needs no job tools: {names:?}");
    let started = peer.request(3, "tools/call", call("work", json!({"ms": 300}), json!({}))).await;
    let text = started["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Started job ") && text.contains("work_status"), "{text}");
    assert!(started["result"].get("taskId").is_none());
    let job = text.split_whitespace().nth(2).unwrap().to_owned();
    let status = peer.request(4, "tools/call", call("work_status", json!({"job_id": job}), json!({}))).await;
    assert!(status["result"]["content"][0]["text"].as_str().unwrap().contains("is working"), "{status}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = peer.request(5, "tools/call", call("work_status", json!({"job_id": job}), json!({}))).await;
    assert!(status["result"]["content"][0]["text"].as_str().unwrap().contains("completed"), "{status}");
    assert_eq!(status["result"]["structuredContent"], json!({"ms": 300}), "the result comes with the status");
    let listed = peer.request(6, "tools/call", call("work_list", json!({}), json!({}))).await;
    assert!(listed["result"]["content"][0]["text"].as_str().unwrap().contains(&job));
    let unknown = peer.request(7, "tools/call", call("work_status", json!({"job_id": "nope"}), json!({}))).await;
    assert_eq!(unknown["result"]["isError"], true);
}

#[tokio::test(start_paused = true)]
async fn the_2025_11_25_form() {
    let mut peer = Peer::new(router(5));
    let init = peer.initialize("2025-11-25").await;
    assert_eq!(init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"], json!({}), "{init}");
    let list = peer.request(1, "tools/list", json!({})).await;
    let work = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "work").unwrap().clone();
    assert_eq!(work["execution"]["taskSupport"], "optional");
    let created =
        peer.request(2, "tools/call", json!({"name": "work", "arguments": {"ms": 200}, "task": {"ttl": 60000}})).await;
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttl"], 60000);
    let id = task["taskId"].as_str().unwrap().to_owned();
    let got = peer.request(3, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["taskId"], id);
    assert!(got["result"].get("resultType").is_none(), "legacy shapes carry no resultType");
    // tasks/result waits for the end; status notifications arrive meanwhile.
    peer.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/result", "params": {"taskId": id}})).await;
    let mut statuses = Vec::new();
    let result = loop {
        let m = peer.recv().await;
        if m["method"] == "notifications/tasks/status" {
            statuses.push(m["params"]["status"].clone());
        } else if m["id"] == 4 {
            break m;
        }
    };
    assert_eq!(result["result"]["structuredContent"], json!({"ms": 200}), "{result}");
    assert_eq!(result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id);
    assert!(statuses.contains(&json!("completed")), "{statuses:?}");
    let listed = peer.request(5, "tasks/list", json!({})).await;
    assert!(listed["result"]["tasks"].as_array().unwrap().iter().any(|t| t["taskId"] == id));
    let cancel = peer.request(6, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(cancel["error"]["code"], -32602, "a task that ended cannot be cancelled: {cancel}");
    let plain = peer.request(7, "tools/call", json!({"name": "plain", "arguments": {}, "task": {}})).await;
    assert_eq!(plain["error"]["code"], -32601, "a tool that does not run as a task: {plain}");
}

/// 2025-11-25 (tasks.mdx, "Task Execution Errors"): a tool result with `isError` makes the task
/// `failed`, the cap's refusal too; `tasks/result` still answers the result itself. The
/// 2026-07-28 extension keeps `completed` for such a result (its `failed` is a JSON-RPC error).
#[tokio::test(start_paused = true)]
async fn a_2025_11_25_task_whose_tool_reports_an_error_fails() {
    let mut peer = Peer::new(router(1));
    peer.initialize("2025-11-25").await;
    let created = peer.request(1, "tools/call", json!({"name": "refuses", "arguments": {"ms": 300}, "task": {}})).await;
    let id = created["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    // The cap (1) is taken: the refusal is a task too, failed at once, whose result explains.
    let busy = peer.request(2, "tools/call", json!({"name": "work", "arguments": {"ms": 10}, "task": {}})).await;
    assert_eq!(busy["result"]["task"]["status"], "failed", "{busy}");
    let busy_id = busy["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    let explained = peer.request(3, "tasks/result", json!({"taskId": busy_id})).await;
    assert_eq!(explained["result"]["isError"], true, "{explained}");
    assert!(explained["result"]["content"][0]["text"].as_str().unwrap().contains("the limit is 1"));
    let result = peer.request(4, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["result"]["isError"], true, "{result}");
    let got = peer.request(5, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "failed", "{got}");
    assert!(got["result"]["statusMessage"].as_str().unwrap().contains("the tool refused"), "{got}");
    // The extension form: completed, with the isError result in it.
    let mut modern = Peer::new(router(5));
    let created = modern.request(1, "tools/call", call("refuses", json!({"ms": 100}), ext())).await;
    let task =
        created["result"]["taskId"].as_str().or(created["result"]["task"]["taskId"].as_str()).unwrap().to_owned();
    let done = until_done(&mut modern, &task).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["isError"], true, "{done}");
}

#[tokio::test(start_paused = true)]
async fn older_legacy_clients_get_jobs() {
    let mut peer = Peer::new(router(5));
    let init = peer.initialize("2025-06-18").await;
    assert!(init["result"]["capabilities"].get("tasks").is_none());
    let list = peer.request(1, "tools/list", json!({})).await;
    let work = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "work").unwrap().clone();
    assert!(work.get("execution").is_none());
    let started = peer.request(2, "tools/call", json!({"name": "work", "arguments": {"ms": 200}})).await;
    assert!(started["result"]["content"][0]["text"].as_str().unwrap().starts_with("Started job"), "{started}");
    let tasks = peer.request(3, "tasks/get", json!({"taskId": "x"})).await;
    assert_eq!(tasks["error"]["code"], -32601, "no tasks methods before 2025-11-25");
}

#[tokio::test(start_paused = true)]
async fn the_cap_answers_at_once_and_a_cancel_frees_the_slot_and_stops_the_work() {
    let mut peer = Peer::new(router(2));
    let mut ids = Vec::new();
    for n in 0..2 {
        let created = peer.request(n, "tools/call", call("counted", json!({"ms": 5000}), ext())).await;
        ids.push(created["result"]["taskId"].as_str().expect("a task").to_owned());
    }
    let busy = peer.request(10, "tools/call", call("counted", json!({"ms": 5000}), ext())).await;
    let text = busy["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(busy["result"]["isError"], true);
    assert!(text.starts_with("2 jobs running for this account (the limit is 2): retry in about "), "{text}");
    let steps = STEPS.load(Ordering::Relaxed);
    let ack = peer.request(11, "tasks/cancel", modern_with(json!({"taskId": ids[0]}), ext())).await;
    assert_eq!(ack["result"], json!({"resultType": "complete", "_meta": ack["result"]["_meta"]}));
    let cancelled = get(&mut peer, 12, &ids[0]).await;
    assert_eq!(cancelled["result"]["status"], "cancelled");
    let again = peer.request(13, "tools/call", call("counted", json!({"ms": 5000}), ext())).await;
    assert_eq!(again["result"]["resultType"], "task", "the slot is free at once: {again}");
    for id in [&ids[1], &again["result"]["taskId"].as_str().unwrap().to_owned()] {
        peer.request(14, "tasks/cancel", modern_with(json!({"taskId": id}), ext())).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = STEPS.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(STEPS.load(Ordering::Relaxed), after, "cancelled work stopped (steps went {steps} → {after})");
}

#[tokio::test(start_paused = true)]
async fn status_changes_stream_through_subscriptions_listen() {
    let mut peer = Peer::new(router(5));
    let created = peer.request(1, "tools/call", call("work", json!({"ms": 200}), ext())).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let listen = modern_with(json!({"notifications": {"taskIds": [id]}}), ext());
    peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen", "params": listen})).await;
    let mut statuses = Vec::new();
    while !statuses.contains(&json!("completed")) {
        let m = peer.recv().await;
        if m["method"] == "notifications/tasks" {
            assert_eq!(m["params"]["taskId"], id);
            assert_eq!(m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 2);
            statuses.push(m["params"]["status"].clone());
        }
    }
    let done: Vec<&Value> = statuses.iter().filter(|s| *s == "completed").collect();
    assert_eq!(done.len(), 1, "{statuses:?}");
    let without = peer
        .request(3, "subscriptions/listen", modern_with(json!({"notifications": {"taskIds": [id]}}), json!({})))
        .await;
    assert_eq!(without["error"]["code"], -32021);
}

#[tokio::test(start_paused = true)]
async fn a_task_whose_caller_gives_up_is_cancelled_on_the_server() {
    // The task's id, as the client sees it go by.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let sink = seen.clone();
    let tracer: mcp::client::Tracer = std::sync::Arc::new(move |_, message: &Value| {
        if let Some(id) = message["result"]["taskId"].as_str() {
            sink.lock().unwrap().get_or_insert_with(|| id.to_owned());
        }
    });
    let options = mcp::client::ClientOptions { tracer: Some(tracer), ..Default::default() };
    let client = mcp::testing::connect_with(router(5), options).await.unwrap();
    let gave_up = tokio::time::timeout(Duration::from_millis(300), client.call_tool("must", json!({"ms": 5000}))).await;
    assert!(gave_up.is_err(), "the call was still running: {gave_up:?}");
    let id = seen.lock().unwrap().clone().expect("the call became a task");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let task = client.get_task(&id).await.unwrap();
        if task.status == mcp::types::tasks::TaskStatus::Cancelled {
            break;
        }
        assert!(Instant::now() < deadline, "the abandoned task was not cancelled: {task:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
