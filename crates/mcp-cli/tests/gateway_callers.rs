//! `mcp gateway` and `mcp bridge` shared by several callers at once: each caller's questions,
//! roots, log lines and tasks stay its own. Real processes and sockets: the gateway, a legacy
//! upstream that asks questions in the middle of its calls (as servers written with the SDKs
//! do), and three or four of our clients at once, each with its own identity, roots and answers,
//! answering late so that their calls overlap.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::client::{Client, ClientOptions, Handlers};
use mcp::types::elicitation::{ElicitAction, ElicitParams, ElicitResult};
use mcp::types::roots::{ListRootsResult, Root};
use serde_json::{json, Value};

mod common;
use common::gateway::Gateway;
use common::{example, mcp};

/// A legacy (2025-06-18) stdio server, as hosts' servers are written: it asks the client for
/// its roots once, right after `notifications/initialized` (when the client declares roots),
/// and keeps them for the connection; its `whoami {tag}` tool logs a line and asks the client a
/// question (elicitation), then answers with what it knows: the roots, the answer, the tag.
/// Several calls may be in flight at once.
const ASKER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
pending, state = {}, {"roots": None, "caps": {}, "n": 0}
def ask(method, params, then):
    state["n"] += 1
    rid = "s%d" % state["n"]
    pending[rid] = then
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
def set_roots(r):
    state["roots"] = [x["uri"] for x in r["result"]["roots"]] if "result" in r else "error: " + r["error"]["message"]
for line in sys.stdin:
    m = json.loads(line)
    if "method" not in m:
        then = pending.pop(m.get("id"), None)
        if then: then(m)
        continue
    method, mid, p = m["method"], m.get("id"), m.get("params") or {}
    if method == "initialize":
        state["caps"] = p.get("capabilities", {})
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-06-18",
              "capabilities": {"tools": {}, "logging": {}}, "serverInfo": {"name": "asker", "version": "1"}}})
    elif method == "notifications/initialized":
        if "roots" in state["caps"]:
            ask("roots/list", {}, set_roots)
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": "whoami", "inputSchema": {"type": "object",
              "properties": {"tag": {"type": "string"}}, "required": ["tag"]}}]}})
    elif method == "tools/call":
        tag = p["arguments"]["tag"]
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "working for " + tag}})
        def answered(r, mid=mid, tag=tag):
            if "error" in r:
                text, bad = json.dumps({"tag": tag, "error": r["error"]["message"], "roots": state["roots"]}), True
            else:
                text, bad = json.dumps({"tag": tag, "answer": r["result"].get("content"), "roots": state["roots"]}), False
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}], "isError": bad}})
        ask("elicitation/create", {"message": "who is asking? (" + tag + ")",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}, answered)
    elif mid is not None:
        r = {} if method == "ping" else None
        if r is None:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": r})
"#;

fn asker(dir: &std::path::Path) -> Value {
    let path = dir.join("asker.py");
    std::fs::write(&path, ASKER).unwrap();
    json!({"command": "python3", "args": [path]})
}

/// One downstream caller: its name, what its handlers were asked, and its client.
struct Caller {
    name: String,
    questions: Arc<Mutex<Vec<String>>>,
    client: Client,
}

/// Connects `name` to `url`: a legacy session or a 2026-07-28 client, with `headers`, roots
/// `file:///NAME` when `roots`, and an elicitation handler that answers `{"name": NAME}` after
/// `delay` (so that several callers' questions are open at once).
async fn caller(url: &str, name: &str, legacy: bool, roots: bool, headers: &[(&str, &str)]) -> Caller {
    let questions = Arc::new(Mutex::new(Vec::new()));
    let seen = questions.clone();
    let me = name.to_owned();
    let elicitation = Arc::new(move |params: ElicitParams| {
        let message = serde_json::to_value(&params).unwrap()["message"].as_str().unwrap_or_default().to_owned();
        seen.lock().unwrap().push(message);
        let me = me.clone();
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            let content = json!({"name": me}).as_object().cloned();
            Ok(ElicitResult { result_type: None, action: ElicitAction::Accept, content, meta: None })
        }) as mcp::server::BoxFuture<Result<ElicitResult, String>>
    });
    let root = format!("file:///{name}");
    let roots = roots.then(|| {
        Arc::new(move |()| {
            let roots = vec![Root { uri: root.clone(), name: None, meta: None }];
            Box::pin(async move { Ok(ListRootsResult { roots, ..Default::default() }) })
                as mcp::server::BoxFuture<Result<ListRootsResult, String>>
        }) as mcp::client::Handler<(), ListRootsResult>
    });
    let options = ClientOptions {
        legacy_only: legacy,
        handlers: Handlers { elicitation: Some(elicitation), sampling: None, roots },
        headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..ClientOptions::default()
    };
    let client = Client::connect_http(url, options).await.unwrap();
    Caller { name: name.to_owned(), questions, client }
}

/// What `whoami` answered for `caller`, as JSON.
async fn whoami(caller: &Caller, tool: &str) -> (bool, Value) {
    let result = caller.client.call_tool(tool, json!({"tag": caller.name})).await.unwrap();
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap_or_default().to_owned();
    let value = serde_json::from_str(&text).unwrap_or_else(|_| json!({"text": text}));
    (result.is_error == Some(true), value)
}

/// Calls `whoami` for every caller at once.
async fn all_at_once(callers: &[Caller], tool: &str) -> Vec<(bool, Value)> {
    futures_util::future::join_all(callers.iter().map(|c| whoami(c, tool))).await
}

/// Nobody saw a question meant for another caller.
fn each_saw_only_its_own(callers: &[Caller]) {
    for caller in callers {
        for question in caller.questions.lock().unwrap().iter() {
            assert_eq!(
                question,
                &format!("who is asking? ({})", caller.name),
                "{} was shown another's question",
                caller.name
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_question_and_root_reaches_its_own_caller_through_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let gateway =
        Gateway::launch(json!({"asker": asker(dir.path())}), "127.0.0.1:0", &["--account-header", "x-account"], &[])
            .unwrap();
    let callers = vec![
        caller(&gateway.url, "alice", true, true, &[]).await,
        caller(&gateway.url, "bob", true, true, &[]).await,
        caller(&gateway.url, "carol", false, true, &[("x-account", "carol")]).await,
        caller(&gateway.url, "dave", false, true, &[("x-account", "dave")]).await,
    ];
    for round in 0..2 {
        for (caller, (failed, answer)) in callers.iter().zip(all_at_once(&callers, "asker__whoami").await) {
            let me = &caller.name;
            assert!(!failed, "round {round}: {me}: {answer}");
            assert_eq!(answer["tag"], *me);
            assert_eq!(answer["answer"], json!({"name": me}), "round {round}: {me} got another's answer: {answer}");
            assert_eq!(answer["roots"], json!([format!("file:///{me}")]), "round {round}: {me}'s roots: {answer}");
        }
    }
    each_saw_only_its_own(&callers);
    for caller in &callers {
        assert_eq!(caller.questions.lock().unwrap().len(), 2, "{} was asked once per call", caller.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anonymous_caller_is_never_told_anothers_roots_and_a_question_that_cannot_be_placed_fails() {
    let dir = tempfile::tempdir().unwrap();
    // A shared child: every caller on one connection, which declares no roots.
    let mut entry = asker(dir.path());
    entry["shared"] = json!(true);
    let gateway = Gateway::start(json!({ "asker": entry }));
    let callers = vec![
        caller(&gateway.url, "erin", true, true, &[]).await,
        caller(&gateway.url, "frank", false, true, &[]).await,
        caller(&gateway.url, "grace", true, true, &[]).await,
    ];
    let answers = all_at_once(&callers, "asker__whoami").await;
    for (caller, (failed, answer)) in callers.iter().zip(&answers) {
        let me = &caller.name;
        assert_eq!(answer["roots"], Value::Null, "{me}: a shared connection is told nobody's roots: {answer}");
        if let Some(got) = answer.get("answer").filter(|a| !a.is_null()) {
            assert_eq!(got, &json!({"name": me}), "{me} got another's answer");
        } else {
            assert!(*failed, "{me}: a question that could not be placed fails the call: {answer}");
            let why = answer["error"].as_str().unwrap_or_default();
            assert!(why.contains("several callers") || why.contains("no longer waiting"), "{me}: {why}");
        }
    }
    assert!(
        answers.iter().any(|(failed, _)| *failed),
        "three callers waiting at once: some question was placed by guess"
    );
    each_saw_only_its_own(&callers);
    // One caller alone on the shared connection is asked (its request is the only one waiting).
    let (failed, answer) = whoami(&callers[1], "asker__whoami").await;
    assert!(!failed, "{answer}");
    assert_eq!(answer["answer"], json!({"name": "frank"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_gives_each_session_its_own_child() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("asker.py");
    std::fs::write(&script, ASKER).unwrap();
    let child = std::process::Command::new(mcp())
        .args(["bridge", "--http", "127.0.0.1:0", "--", "python3"])
        .arg(&script)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let bridge = Gateway::serving(child, tempfile::tempdir().unwrap()).unwrap();
    let callers = vec![
        caller(&bridge.url, "heidi", true, true, &[]).await,
        caller(&bridge.url, "ivan", true, true, &[]).await,
        caller(&bridge.url, "judy", true, true, &[]).await,
    ];
    for (caller, (failed, answer)) in callers.iter().zip(all_at_once(&callers, "whoami").await) {
        let me = &caller.name;
        assert!(!failed, "{me}: {answer}");
        assert_eq!(answer["answer"], json!({"name": me}), "{me}: {answer}");
        assert_eq!(answer["roots"], json!([format!("file:///{me}")]), "{me}: {answer}");
    }
    each_saw_only_its_own(&callers);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_callers_task_is_invisible_and_unreachable() {
    let gateway = Gateway::launch(
        json!({"example": {"command": example()}}),
        "127.0.0.1:0",
        &["--account-header", "x-account"],
        &[],
    )
    .unwrap();
    let connect = |account: &'static str, legacy: bool| {
        let url = gateway.url.clone();
        async move {
            let headers = vec![("x-account".to_owned(), account.to_owned())];
            let options = ClientOptions { headers, legacy_only: legacy, ..ClientOptions::default() };
            Client::connect_http(&url, options).await.unwrap()
        }
    };
    let (alice, bob) = (connect("alice", false).await, connect("bob", false).await);
    let call = alice.start_tool("example__countdown", json!({"ms": 30_000})).await.unwrap();
    let mcp::client::ToolCall::Task(task) = call else { panic!("countdown runs as a task: {call:?}") };
    assert!(alice.get_task(&task.id).await.is_ok(), "its owner sees it");
    let refused = bob.get_task(&task.id).await.expect_err("bob may not see alice's task");
    assert!(refused.to_string().contains("Unknown task"), "{refused}");
    assert!(bob.cancel_task(&task.id).await.is_err(), "bob may not cancel alice's task");
    let still = alice.get_task(&task.id).await.unwrap();
    assert_eq!(format!("{:?}", still.status), "Working", "bob's cancel did nothing: {still:?}");
    let anonymous = Client::connect_http(&gateway.url, ClientOptions::default()).await.unwrap();
    assert!(anonymous.get_task(&task.id).await.is_err(), "an anonymous caller may not see it");
    // Listings (a 2025-11-25 session of each account): each sees its own alone.
    let listed = |tasks: Vec<mcp::client::TaskInfo>| tasks.into_iter().map(|t| t.id).collect::<Vec<_>>();
    let (alice_session, bob_session) = (connect("alice", true).await, connect("bob", true).await);
    assert!(!listed(bob_session.list_tasks().await.unwrap()).contains(&task.id), "bob's listing shows alice's task");
    assert!(listed(alice_session.list_tasks().await.unwrap()).contains(&task.id), "alice's listing lacks her task");
    alice.cancel_task(&task.id).await.unwrap();
}
