//! `mcp gateway` and `mcp bridge` end to end, with real processes and sockets: our servers and
//! small legacy-only and 2026-07-28-only ones behind the gateway, our client in front; names
//! prefixed and filtered, health and metrics, a clash refused, a child killed mid-call, a
//! gateway killed with SIGKILL, 100 sessions on one child, a question from an upstream, and
//! the bridge in both directions.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcp::client::{Client, ClientOptions, Handlers, StdioCommand};
use mcp::types::elicitation::{ElicitAction, ElicitParams, ElicitResult};
use serde_json::{json, Value};

mod common;
use common::gateway::Gateway;
use common::oidc::http;
use common::{example, mcp, paypedia, running, unique_sleep};

const IBAN: &str = "FR76 3000 6000 0112 3456 7890 189";

fn stdio(path: PathBuf) -> Value {
    json!({"command": path})
}

async fn connect(url: &str, legacy: bool) -> Client {
    let options = ClientOptions { legacy_only: legacy, ..ClientOptions::default() };
    Client::connect_http(url, options).await.unwrap()
}

fn text(result: &mcp::types::tools::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap_or_default().to_owned()
}

/// The pids of `parent`'s children whose command line contains `name`.
fn children(parent: u32, name: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let ppid: u32 = stat.rsplit(')').next()?.split_whitespace().nth(1)?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            (ppid == parent && String::from_utf8_lossy(&cmdline).contains(name)).then_some(pid)
        })
        .collect()
}

/// A legacy-only stdio server in shell (answers `server/discover` with "method not found"); on
/// the end of its input it becomes `sleep MARKER`, which ignores it: only the gateway's death
/// signal ends it.
fn legacy_server(dir: &Path, marker: &str) -> Value {
    let script = r#"while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p')
  [ -n "$id" ] || continue
  case "$line" in
    *'"method":"initialize"'*) r='{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"old","version":"1"}}' ;;
    *'"method":"ping"'*) r='{}' ;;
    *'"method":"tools/list"'*) r='{"tools":[{"name":"antique","inputSchema":{"type":"object"}}]}' ;;
    *'"method":"tools/call"'*) r='{"content":[{"type":"text","text":"from 2025-06-18"}]}' ;;
    *) printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}\n' "$id"; continue ;;
  esac
  printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$r"
done
exec sleep MARKER"#
        .replace("MARKER", marker);
    let path = dir.join("legacy.sh");
    std::fs::write(&path, script).unwrap();
    json!({"command": "sh", "args": [path]})
}

/// A legacy stdio server in shell whose `slow` tool never answers, and that writes every line
/// it receives to `log`.
fn recording_server(dir: &Path, log: &Path) -> Value {
    let script = r#"while IFS= read -r line; do
  printf '%s\n' "$line" >> 'LOG'
  id=$(printf '%s' "$line" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p')
  [ -n "$id" ] || continue
  case "$line" in
    *'"method":"initialize"'*) r='{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"rec","version":"1"}}' ;;
    *'"method":"tools/list"'*) r='{"tools":[{"name":"slow","inputSchema":{"type":"object"}}]}' ;;
    *'"method":"tools/call"'*) continue ;;
    *) printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}\n' "$id"; continue ;;
  esac
  printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$r"
done"#
        .replace("LOG", log.to_str().unwrap());
    let path = dir.join("recording.sh");
    std::fs::write(&path, script).unwrap();
    json!({"command": "sh", "args": [path], "shared": true})
}

/// A 2026-07-28-only stdio server in Python: `server/discover`, `tools/list` and `tools/call`,
/// and -32022 for `initialize`.
fn modern_server(dir: &Path) -> Value {
    let script = r#"
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if "id" not in m:
        continue
    method, p = m.get("method"), m.get("params") or {}
    meta = {"io.modelcontextprotocol/serverInfo": {"name": "new", "version": "1"}}
    r = None
    if method == "server/discover":
        r = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "serverInfo": {"name": "new", "version": "1"}}
    elif p.get("_meta", {}).get("io.modelcontextprotocol/protocolVersion") != "2026-07-28":
        e = {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28"]}}
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": e}), flush=True)
        continue
    elif method == "tools/list":
        r = {"resultType": "complete", "tools": [{"name": "shout", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}
    elif method == "tools/call":
        r = {"resultType": "complete", "content": [{"type": "text", "text": p["arguments"]["text"].upper()}]}
    if r is None:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "Method not found"}}), flush=True)
    else:
        r.setdefault("_meta", meta)
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"#;
    let path = dir.join("modern.py");
    std::fs::write(&path, script).unwrap();
    json!({"command": "python3", "args": [path]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_are_prefixed_and_filtered_and_health_and_metrics_are_served() {
    let gateway = Gateway::start(json!({
        "example": {"command": example(), "denyTools": ["now", "count*"]},
        "pay": {"command": paypedia(), "allowTools": ["iban_*"]},
    }));
    for legacy in [false, true] {
        let client = connect(&gateway.url, legacy).await;
        let names: BTreeSet<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
        assert!(names.contains("example__echo") && names.contains("example__wait"), "{names:?}");
        assert!(!names.iter().any(|n| n.starts_with("example__now") || n.starts_with("example__count")), "{names:?}");
        let pay: Vec<&String> = names.iter().filter(|n| n.starts_with("pay__")).collect();
        assert!(!pay.is_empty() && pay.iter().all(|n| n.starts_with("pay__iban_")), "{names:?}");
        assert!(names.iter().all(|n| n.len() <= 64));
        let echoed = client.call_tool("example__echo", json!({"text": "through"})).await.unwrap();
        assert_eq!(text(&echoed), "through");
        let checked = client.call_tool("pay__iban_check", json!({"input": IBAN})).await.unwrap();
        assert_ne!(checked.is_error, Some(true), "{checked:?}");
        let filtered = client.call_tool("example__now", json!({})).await;
        assert!(filtered.is_err(), "a filtered tool is not served");
    }
    assert_eq!(gateway.page("/healthz"), (200, "ok\n".into()));
    assert_eq!(gateway.page("/readyz").0, 200);
    let (status, metrics) = gateway.page("/metrics");
    assert_eq!(status, 200);
    let calls = metrics
        .lines()
        .find_map(|l| l.strip_prefix("mcp_gateway_requests_total{upstream=\"pay\"} "))
        .and_then(|n| n.parse::<u64>().ok());
    assert!(calls >= Some(2), "{metrics}");
    assert!(metrics.contains("mcp_gateway_up{upstream=\"example\"} 1"), "{metrics}");
    assert!(metrics.contains("\nmcp_audit_lines_dropped_total 0\n"), "{metrics}");
}

#[test]
fn each_listing_of_an_upstreams_tools_is_audited_with_their_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let gateway =
        Gateway::try_start_with(json!({"example": stdio(example())}), &["--audit-log", log.to_str().unwrap()]).unwrap();
    gateway.wait_ready();
    // The log's own thread writes the line (requests never wait for it): a moment after the start.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let listing: Value = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let found = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["event"] == "upstream_tools_listed");
        match found {
            Some(listing) => break listing,
            None if std::time::Instant::now() < deadline => std::thread::sleep(std::time::Duration::from_millis(20)),
            None => panic!("no listing in the audit log: {text}"),
        }
    };
    assert_eq!(listing["upstream"], "example");
    let echo = listing["tools"].as_array().unwrap().iter().find(|t| t["name"] == "echo").expect("echo listed");
    let hash = echo["sha256"].as_str().unwrap();
    assert!(hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()), "{hash}");
    assert_eq!(listing["changed"], json!([]));
    drop(gateway);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_clash_are_served_from_the_first_upstream_and_reported_by_readyz() {
    let gateway = Gateway::try_start(json!({
        "one": {"command": example(), "prefix": ""},
        "two": {"command": example(), "prefix": ""},
    }))
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let page = loop {
        let (status, page) = gateway.page("/readyz");
        if status == 503 && page.contains("two: ") && page.contains("\"echo\"") {
            break page;
        }
        assert!(Instant::now() < deadline, "the clash is not reported: {status} {page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(page.contains("give it a \"prefix\""), "{page}");
    assert!(!page.contains("one: "), "the first upstream keeps its names: {page}");
    let client = connect(&gateway.url, false).await;
    assert_eq!(text(&client.call_tool("echo", json!({"text": "first"})).await.unwrap()), "first");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_upstream_stalls_no_other() {
    let dir = tempfile::tempdir().unwrap();
    // Reads everything, answers nothing: not even `initialize`.
    let deaf = dir.path().join("deaf.sh");
    std::fs::write(&deaf, "exec cat > /dev/null\n").unwrap();
    let started = Instant::now();
    let gateway = Gateway::try_start(json!({
        "deaf": {"command": "sh", "args": [deaf]},
        "example": stdio(example()),
    }))
    .unwrap();
    let listening = started.elapsed();
    let client = connect(&gateway.url, false).await;
    let echoed = client.call_tool("example__echo", json!({"text": "not held"})).await.unwrap();
    let answered = started.elapsed();
    assert_eq!(text(&echoed), "not held");
    eprintln!("listening after {listening:?}, the other upstream's tool answered after {answered:?}");
    assert!(answered < Duration::from_secs(10), "a hung upstream held the others: {answered:?}");
    let (status, page) = gateway.page("/readyz");
    assert_eq!(status, 503, "{page}");
    assert!(page.contains("deaf: not connected") && !page.contains("example:"), "{page}");
}

#[test]
fn a_misspelt_key_stops_the_start_naming_both() {
    let error = Gateway::try_start(json!({"ex": {"command": example(), "denyTool": ["echo"]}}))
        .err()
        .expect("a misspelt filter is refused");
    assert!(error.contains("\"denyTool\"") && error.contains("\"denyTools\""), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_copies_of_one_server_are_served_side_by_side_with_their_uris_from_the_first() {
    let gateway = Gateway::start(json!({
        "a": {"command": example()},
        "b": {"command": example()},
    }));
    let client = connect(&gateway.url, false).await;
    let names: BTreeSet<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert!(names.contains("a__echo") && names.contains("b__echo"), "{names:?}");
    assert_eq!(text(&client.call_tool("b__echo", json!({"text": "two"})).await.unwrap()), "two");
    let resources = client.list_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    let unique: BTreeSet<&str> = uris.iter().copied().collect();
    assert_eq!(uris.len(), unique.len(), "each URI once: {uris:?}");
    assert!(!uris.is_empty());
    assert!(client.read_resource(uris[0]).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_killed_mid_call_fails_its_call_at_once_and_is_started_again() {
    let gateway = Gateway::start(json!({"example": stdio(example()), "pay": stdio(paypedia())}));
    let client = connect(&gateway.url, false).await;
    let waiting = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("example__wait", json!({"ms": 60_000})).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pids = children(gateway.pid(), "mcp-example");
    assert_eq!(pids.len(), 1, "one mcp-example child");
    let killed = Instant::now();
    Command::new("kill").args(["-9", &pids[0].to_string()]).status().unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("no hang").unwrap();
    let took = killed.elapsed();
    eprintln!("the call in flight ended {took:?} after its server was killed");
    let result = outcome.expect("a tool result saying what happened");
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains("stopped answering") || text(&result).contains("not connected"), "{result:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // The other upstream is unaffected, and the killed one comes back.
    let checked = client.call_tool("pay__iban_check", json!({"input": IBAN})).await.unwrap();
    assert_ne!(checked.is_error, Some(true));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let echoed = client.call_tool("example__echo", json!({"text": "back"})).await.unwrap();
        if echoed.is_error != Some(true) {
            assert_eq!(text(&echoed), "back");
            break;
        }
        assert!(Instant::now() < deadline, "not restarted: {echoed:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (_, metrics) = gateway.page("/metrics");
    assert!(metrics.contains("mcp_gateway_restarts_total{upstream=\"example\"} 1"), "{metrics}");
}

#[test]
fn no_child_outlives_a_gateway_killed_with_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let marker = unique_sleep();
    let gateway = Gateway::start(json!({"old": legacy_server(dir.path(), &marker), "example": stdio(example())}));
    assert_eq!(children(gateway.pid(), "mcp-example").len(), 1);
    assert_eq!(children(gateway.pid(), "legacy.sh").len(), 1);
    let mut gateway = gateway;
    gateway.child.kill().unwrap(); // SIGKILL: no clean-up code runs
    gateway.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while (running(&marker) || running(&format!("{}", example().display()))) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!running(&marker), "the legacy server (now `sleep {marker}`, deaf to its input) outlived the gateway");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_sessions_on_one_child_get_their_own_answers() {
    let gateway = Gateway::start(json!({"example": {"command": example(), "shared": true}}));
    let mut calls = Vec::new();
    for i in 0..100 {
        let url = gateway.url.clone();
        calls.push(tokio::spawn(async move {
            let client = connect(&url, i % 2 == 0).await;
            let mine = format!("session {i}");
            let result = client.call_tool("example__echo", json!({"text": mine})).await.unwrap();
            (mine, text(&result))
        }));
    }
    for call in calls {
        let (mine, got) = call.await.unwrap();
        assert_eq!(got, mine);
    }
    assert_eq!(children(gateway.pid(), "mcp-example").len(), 1, "one shared child");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_legacy_session_has_its_own_child_ended_with_the_session() {
    let dir = tempfile::tempdir().unwrap();
    // A server may ask a session something, or log for it on the one channel stdio has: each
    // session gets its own child.
    let gateway =
        Gateway::start(json!({"old": legacy_server(dir.path(), &unique_sleep()), "example": stdio(example())}));
    assert_eq!(children(gateway.pid(), "legacy.sh").len(), 1, "the child that lists");
    let mut sessions = Vec::new();
    for i in 0..3 {
        let client = connect(&gateway.url, true).await;
        let result = client.call_tool("old__antique", json!({})).await.unwrap();
        assert_eq!(text(&result), "from 2025-06-18");
        assert_eq!(
            text(&client.call_tool("example__echo", json!({"text": format!("s{i}")})).await.unwrap()),
            format!("s{i}")
        );
        sessions.push(client);
    }
    let modern = connect(&gateway.url, false).await;
    assert_eq!(text(&modern.call_tool("old__antique", json!({})).await.unwrap()), "from 2025-06-18");
    assert_eq!(children(gateway.pid(), "legacy.sh").len(), 4, "one more per legacy session");
    assert_eq!(children(gateway.pid(), "mcp-example").len(), 4, "in either era");
    assert!(gateway.page("/metrics").1.contains("mcp_gateway_session_children{upstream=\"old\"} 3"));
    for client in sessions {
        client.close().await; // DELETE: the session ends
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while children(gateway.pid(), "legacy.sh").len() > 1 {
        assert!(Instant::now() < deadline, "the sessions' children outlived them: {}", gateway.page("/metrics").1);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eras_are_bridged_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(json!({
        "old": legacy_server(dir.path(), &unique_sleep()),
        "new": modern_server(dir.path()),
    }));
    for legacy in [true, false] {
        let client = connect(&gateway.url, legacy).await;
        assert_eq!(client.description().modern, !legacy);
        let shouted = client.call_tool("new__shout", json!({"text": "hello"})).await.unwrap();
        assert_eq!(
            text(&shouted),
            "HELLO",
            "a {} client to a 2026-07-28-only server",
            if legacy { "2025" } else { "2026" }
        );
        let old = client.call_tool("old__antique", json!({})).await.unwrap();
        assert_eq!(text(&old), "from 2025-06-18");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_cancelled_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let gateway = Gateway::start(json!({"rec": recording_server(dir.path(), &log)}));
    for legacy in [true, false] {
        let client = connect(&gateway.url, legacy).await;
        let call = client.call_tool("rec__slow", json!({}));
        assert!(tokio::time::timeout(Duration::from_millis(1500), call).await.is_err(), "slow never answers");
        // The dropped call told the gateway, which tells the upstream.
        let deadline = Instant::now() + Duration::from_secs(10);
        let calls = || std::fs::read_to_string(&log).unwrap_or_default();
        let wanted = if legacy { 1 } else { 2 };
        while calls().matches("notifications/cancelled").count() < wanted {
            assert!(Instant::now() < deadline, "no cancellation reached the upstream: {}", calls());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_question_is_answered_by_the_client_in_either_era() {
    let gateway = Gateway::start(json!({"example": stdio(example())}));
    for legacy in [true, false] {
        let elicitation: mcp::client::Handler<ElicitParams, ElicitResult> = std::sync::Arc::new(|params| {
            Box::pin(async move {
                let message = serde_json::to_value(&params).unwrap()["message"].as_str().unwrap_or_default().to_owned();
                assert!(message.contains("Proceed?"), "{message}");
                let content = json!({"yes": true}).as_object().cloned();
                Ok(ElicitResult { result_type: None, action: ElicitAction::Accept, content, meta: None })
            })
        });
        let handlers = Handlers { elicitation: Some(elicitation), ..Handlers::default() };
        let options = ClientOptions { legacy_only: legacy, handlers, ..ClientOptions::default() };
        let client = Client::connect_http(&gateway.url, options).await.unwrap();
        let result = client.call_tool("example__confirm", json!({"question": "Proceed?"})).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{result:?}");
        assert_eq!(text(&result), "the user said yes", "legacy: {legacy}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_serves_a_stdio_server_over_http_and_a_url_over_stdio() {
    // mcp bridge --http ADDR -- paypedia
    let child = Command::new(mcp())
        .args(["bridge", "--http", "127.0.0.1:0", "--"])
        .arg(paypedia())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let bridge = Gateway::serving(child, tempfile::tempdir().unwrap()).unwrap();
    let client = connect(&bridge.url, false).await;
    let names: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert!(names.iter().any(|n| n == "iban_check"), "names are kept: {names:?}");
    // mcp bridge --url URL, as a host starts it: a stdio server, its tools filtered.
    let command =
        StdioCommand::new(mcp().to_string_lossy()).args(["bridge", "--url", &bridge.url, "--ignore-tool", "iban_*"]);
    let stdio = Client::connect_stdio(command, ClientOptions::default()).await.unwrap();
    let names: Vec<String> = stdio.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert!(!names.is_empty() && !names.iter().any(|n| n.starts_with("iban_")), "{names:?}");
    let first = names[0].clone();
    let tools = stdio.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == first));
    stdio.close().await;
}

#[test]
fn bad_command_lines_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.json");
    std::fs::write(&config, r#"{"mcpServers": {"x": {"command": "srv", "prefix": "a b"}}}"#).unwrap();
    for (args, expected) in [
        (vec!["gateway", "--http", "127.0.0.1:0"], "needs --config"),
        (vec!["--config", config.to_str().unwrap(), "gateway"], "prefix"),
        (vec!["bridge", "--", "srv"], "add --http"),
        (vec!["bridge", "--url", "http://127.0.0.1:1/mcp", "--http", "127.0.0.1:0"], "serves stdio"),
        (
            vec!["--header", "X: ${MCP_GATEWAY_TEST_UNSET}", "bridge", "--url", "http://127.0.0.1:1/mcp"],
            "MCP_GATEWAY_TEST_UNSET",
        ),
    ] {
        let out = Command::new(mcp()).args(&args).stdin(Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// `mcp-example --http 127.0.0.1:PORT`, waited for until it listens.
fn example_http(port: u16) -> Child {
    let child = Command::new(example())
        .args(["--http", &format!("127.0.0.1:{port}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "mcp-example did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridged_server_that_restarts_is_reached_again_in_either_era() {
    let port = common::oidc::free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut server = example_http(port);
    for legacy in [true, false] {
        let mut args = vec!["bridge", "--url", url.as_str()];
        if legacy {
            args.insert(0, "--legacy"); // the bridge speaks to the server in the 2025 era: a session
        }
        let command = StdioCommand::new(mcp().to_string_lossy()).args(args);
        let client = Client::connect_stdio(command, ClientOptions::default()).await.unwrap();
        let before = client.call_tool("echo", json!({"text": "before"})).await.unwrap();
        assert_eq!(text(&before), "before");
        let _ = server.kill();
        let _ = server.wait();
        server = example_http(port); // a new process: the old session is gone
        let after = client.call_tool("echo", json!({"text": "after"})).await.unwrap();
        assert_eq!(text(&after), "after", "legacy: {legacy}: {after:?}");
        client.close().await;
    }
    let _ = server.kill();
    let _ = server.wait();
}

/// POSTs a legacy-session `message` to `url`: the status, the session id it names, the body.
fn legacy_post(url: &str, session: Option<&str>, message: Value) -> (u16, Option<String>, String) {
    let mut headers = vec![("accept", "application/json, text/event-stream"), ("content-type", "application/json")];
    if let Some(session) = session {
        headers.extend([("mcp-session-id", session), ("mcp-protocol-version", "2025-11-25")]);
    }
    let (status, head, body) = common::oidc::http_with_head("POST", url, &headers, &message.to_string());
    let id = head.lines().find_map(|l| l.strip_prefix("mcp-session-id:")).map(|v| v.trim().to_owned());
    (status, id, body)
}

/// Two gateways in front of mcp-example on one Redis, started with `args`.
fn two_gateways(redis: &mcp_test_services::RedisServer, args: &[&str]) -> (Gateway, Gateway) {
    let store = redis.url();
    let mut args: Vec<&str> = args.to_vec();
    args.extend(["--store", store.as_str()]);
    let servers = json!({"ex": {"command": example()}});
    let a = Gateway::try_start_with(servers.clone(), &args).unwrap_or_else(|e| panic!("gateway A: {e}"));
    let b = Gateway::try_start_with(servers, &args).unwrap_or_else(|e| panic!("gateway B: {e}"));
    (a, b)
}

#[test]
fn a_session_begun_on_one_gateway_is_served_and_ended_by_another_on_the_same_redis() {
    let redis = mcp_test_services::RedisServer::start().expect("redis-server (scripts/test.sh installs it)");
    let (a, b) = two_gateways(&redis, &[]);
    // A session begun on A is served by B (its child there is B's own), and ended on B.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, session, body) = legacy_post(&a.url, None, init);
    assert_eq!(status, 200, "{body}");
    let session = session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(legacy_post(&a.url, Some(&session), initialized).0, 202);
    let echo = |text: &str| json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ex__echo", "arguments": {"text": text}}});
    let (status, _, body) = legacy_post(&b.url, Some(&session), echo("on B"));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("on B"), "{body}");
    let (status, _, body) = legacy_post(&a.url, Some(&session), echo("on A"));
    assert!(status == 200 && body.contains("on A"), "{status} {body}");
    let (status, _) =
        http("DELETE", &b.url, &[("mcp-session-id", &session), ("mcp-protocol-version", "2025-11-25")], "");
    assert!(status == 200 || status == 204, "DELETE on B: {status}");
    let (status, _, _) = legacy_post(&a.url, Some(&session), echo("gone"));
    assert_eq!(status, 404, "a session ended on B is gone on A");
}

#[test]
fn two_gateways_on_one_redis_count_one_rate_limit() {
    let redis = mcp_test_services::RedisServer::start().expect("redis-server (scripts/test.sh installs it)");
    let (a, b) = two_gateways(&redis, &["--rate-limit", "0.2/s", "--rate-burst", "3"]);
    let call = |url: &str, i: usize| {
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "ex__echo", "arguments": {"text": "x"}, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}});
        let headers = [
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "ex__echo"),
        ];
        http("POST", url, &headers, &body.to_string())
    };
    for (i, url) in [&a.url, &b.url, &a.url].into_iter().enumerate() {
        let (status, body) = call(url, i);
        assert_eq!(status, 200, "call {i} within the burst: {body}");
    }
    let (status, body) = call(&b.url, 9);
    assert_eq!(status, 429, "the fourth call on either gateway is over the shared burst of 3: {body}");
    assert!(body.contains("Rate limit exceeded"), "{body}");
    let (_, page) = b.page("/metrics");
    assert!(page.lines().any(|l| l == "mcp_rate_limit_refusals_total 1"), "counted on /metrics: {page}");
}

/// A stdio server of a few lines (legacy, no tools) that writes `stdin closed` to the file named
/// by its argument when its stdin ends, as a server flushing what it holds would.
const EXIT_RECORDING_UPSTREAM: &str = r#"
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "exit-recorder", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": []}
    elif method == "ping":
        result = {}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                          "error": {"code": -32601, "message": "method not found"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
with open(sys.argv[1], "w") as out:
    out.write("stdin closed")
"#;

/// Told to stop (SIGTERM), the gateway lets its stdio upstreams go as the spec's lifecycle says:
/// their stdin closed and a moment to exit on their own (what a server sends last, its spans and
/// logs, goes out then), rather than killed with it.
#[test]
fn a_stopped_gateway_closes_its_upstreams_stdin_and_lets_them_exit() {
    let dir = tempfile::tempdir().unwrap();
    let (script, marker) = (dir.path().join("upstream.py"), dir.path().join("exited"));
    std::fs::write(&script, EXIT_RECORDING_UPSTREAM).unwrap();
    let mut gateway = Gateway::start(json!({"up": {"command": "python3", "args": [script, marker]}}));
    let stopped = Command::new("kill").args(["-TERM", &gateway.child.id().to_string()]).status().unwrap();
    assert!(stopped.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while gateway.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the gateway did not exit within 10 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    let said = std::fs::read_to_string(&marker).unwrap_or_default();
    assert_eq!(said, "stdin closed", "the upstream was killed before its stdin was closed");
}
