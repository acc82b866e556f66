//! Three instances of `mcp-example` on one real Redis (`--store redis://...`), requests spread
//! across them by the test: a task created on A is polled on B, read on C and cancelled through
//! another node; an `input_required` round begun on A is finished on B (the `requestState` key
//! is shared); one rate limit counts across all three; with Redis gone, what needs it fails
//! clearly, the rest keeps working, and everything recovers when Redis is back.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use mcp::testing::HttpServer;
use mcp_test_services::RedisServer;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-example");
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// POSTs `body` to the node on `port` with `headers` (each line ending in CRLF); the status,
/// the lower-cased head and the last JSON-RPC message (of a JSON or an SSE body).
fn post_raw(port: u16, headers: &str, body: &str) -> (u16, String, Value) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = String::new();
    let _ = stream.read_to_string(&mut raw);
    let status = raw.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (head, payload) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let message = payload
        .lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data: ").or(Some(l)))
        .find_map(|l| serde_json::from_str::<Value>(l.trim()).ok().filter(|v| v.get("jsonrpc").is_some()))
        .unwrap_or(Value::Null);
    (status, head.to_ascii_lowercase(), message)
}

/// POSTs a 2026-07-28 request to the node on `port`; the HTTP status and the JSON-RPC message.
fn post(port: u16, method: &str, mut params: Value, caps: Value) -> (u16, Value) {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "cluster-test", "version": "1"}});
    let named = params["name"].as_str().or(params["taskId"].as_str());
    let name = named.map(|n| format!("Mcp-Name: {n}\r\n")).unwrap_or_default();
    let headers = format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n{name}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let (status, _, message) = post_raw(port, &headers, &body);
    (status, message)
}

fn tasks_caps() -> Value {
    json!({"extensions": {TASKS: {}}})
}

fn task_status(port: u16, id: &str) -> Value {
    post(port, "tasks/get", json!({"taskId": id}), tasks_caps()).1
}

fn nodes(store: &str, extra: &[&str]) -> Vec<HttpServer> {
    (0..3)
        .map(|_| {
            let mut args = vec!["--store", store];
            args.extend_from_slice(extra);
            HttpServer::start(BIN, &args).expect("mcp-example with --store")
        })
        .collect()
}

#[test]
fn a_task_created_on_one_node_is_polled_and_cancelled_through_the_others() {
    let redis = RedisServer::start().expect("redis-server");
    let n = nodes(&redis.url(), &[]);
    let (a, b, c) = (n[0].port(), n[1].port(), n[2].port());

    let (_, created) = post(a, "tools/call", json!({"name": "countdown", "arguments": {"ms": 1500}}), tasks_caps());
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let on_b = task_status(b, &id);
    assert_eq!(on_b["result"]["status"], "working", "B sees A's task: {on_b}");
    let deadline = Instant::now() + Duration::from_secs(15);
    let done = loop {
        let r = task_status(c, &id);
        if r["result"]["status"] == "completed" {
            break r;
        }
        assert!(Instant::now() < deadline, "the task never completed as seen from C: {r}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(done["result"]["result"]["content"][0]["text"], "countdown over: waited 1500 ms");

    // Cancelled through B while A runs it: C reads cancelled, and A's work does not overwrite it.
    let (_, created) = post(a, "tools/call", json!({"name": "countdown", "arguments": {"ms": 3000}}), tasks_caps());
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let (_, cancelled) = post(b, "tasks/cancel", json!({"taskId": id}), tasks_caps());
    assert!(cancelled["error"].is_null(), "{cancelled}");
    assert_eq!(task_status(c, &id)["result"]["status"], "cancelled");
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(task_status(a, &id)["result"]["status"], "cancelled", "the end another node wrote stands");
    // Unknown ids are unknown everywhere.
    assert!(task_status(c, "no-such-task")["error"].is_object());
}

/// `--max-jobs-per-account` holds across the nodes, not per node; the places of a node that
/// died stop counting once its heartbeat lapses.
#[test]
fn the_per_account_cap_counts_across_nodes() {
    let redis = RedisServer::start().expect("redis-server");
    let mut n = nodes(&redis.url(), &["--max-jobs-per-account", "2"]);
    let (a, b, c) = (n[0].port(), n[1].port(), n[2].port());
    let start = |port: u16, ms: u64| {
        post(port, "tools/call", json!({"name": "countdown", "arguments": {"ms": ms}}), tasks_caps()).1
    };
    assert_eq!(start(a, 30000)["result"]["resultType"], "task");
    assert_eq!(start(b, 2000)["result"]["resultType"], "task");
    let refused = start(c, 2000);
    let text = refused["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(refused["result"]["isError"] == true && text.contains("the limit is 2"), "C counts A's and B's: {refused}");

    std::thread::sleep(Duration::from_millis(2500)); // B's task is over: its place is free again
    assert_eq!(start(c, 30000)["result"]["resultType"], "task", "a place freed on B is free on C");
    assert_eq!(start(b, 2000)["result"]["isError"], true, "A and C hold both places");

    drop(n.remove(0)); // A dies with its place
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let answer = start(b, 300);
        if answer["result"]["resultType"] == "task" {
            break;
        }
        assert!(Instant::now() < deadline, "A's place never lapsed: {answer}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// A node killed while it runs a task: read through another node, the task is failed, saying
/// why, instead of `working` for ever; while its node lives, a long task is left alone.
#[test]
fn a_task_whose_node_dies_fails_instead_of_working_for_ever() {
    let redis = RedisServer::start().expect("redis-server");
    let mut n = nodes(&redis.url(), &[]);
    let (a, b, c) = (n[0].port(), n[1].port(), n[2].port());
    let (_, created) = post(a, "tools/call", json!({"name": "countdown", "arguments": {"ms": 30000}}), tasks_caps());
    let id = created["result"]["taskId"].as_str().expect("a task").to_owned();
    std::thread::sleep(Duration::from_secs(4)); // longer than a heartbeat lasts
    assert_eq!(task_status(b, &id)["result"]["status"], "working", "A lives: its task is left alone");

    drop(n.remove(0)); // SIGKILL
    let deadline = Instant::now() + Duration::from_secs(15);
    let failed = loop {
        let r = task_status(b, &id);
        if r["result"]["status"] == "failed" {
            break r;
        }
        assert!(r["result"]["status"] == "working" && Instant::now() < deadline, "{r}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let message = failed["result"]["statusMessage"].as_str().unwrap_or_default();
    assert!(message.contains("stopped"), "{failed}");
    assert_eq!(task_status(c, &id)["result"]["status"], "failed", "and so it reads everywhere");
}

#[test]
fn an_input_round_begun_on_one_node_is_finished_on_another() {
    let redis = RedisServer::start().expect("redis-server");
    let n = nodes(&redis.url(), &[]);
    let caps = json!({"elicitation": {}});
    let call = json!({"name": "confirm", "arguments": {"question": "Ship it?"}});
    let (_, asked) = post(n[0].port(), "tools/call", call.clone(), caps.clone());
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let (key, _) = asked["result"]["inputRequests"].as_object().unwrap().iter().next().unwrap();
    let mut retry = call.clone();
    retry["inputResponses"] = json!({key: {"action": "accept", "content": {"yes": true}}});
    retry["requestState"] = asked["result"]["requestState"].clone();
    let (_, answered) = post(n[1].port(), "tools/call", retry, caps.clone());
    assert_eq!(answered["result"]["content"][0]["text"], "the user said yes", "B opens A's sealed state: {answered}");

    // Without the shared key (a node on its own), the same state is refused.
    let alone = HttpServer::start(BIN, &[]).unwrap();
    let mut retry = call;
    retry["inputResponses"] = json!({key: {"action": "accept", "content": {"yes": true}}});
    retry["requestState"] = asked["result"]["requestState"].clone();
    let (_, refused) = post(alone.port(), "tools/call", retry, caps);
    assert!(refused["error"].is_object(), "{refused}");
}

#[test]
fn one_rate_limit_counts_across_nodes_and_redis_going_away_is_survived() {
    let mut redis = RedisServer::start().expect("redis-server");
    let n = nodes(&redis.url(), &["--rate-limit", "0.2/s", "--rate-burst", "3"]);
    let unlimited = HttpServer::start(BIN, &["--store", &redis.url()]).unwrap();
    let echo = json!({"name": "echo", "arguments": {"text": "hi"}});
    for node in &n {
        let (status, r) = post(node.port(), "tools/call", echo.clone(), json!({}));
        assert_eq!((status, r["result"]["content"][0]["text"].clone()), (200, json!("hi")), "{r}");
    }
    let (status, refused) = post(n[1].port(), "tools/call", echo.clone(), json!({}));
    assert_eq!(status, 429, "the fourth call anywhere is over the shared burst of 3: {refused}");
    assert_eq!(refused["error"]["code"], 429);

    // Redis gone: the rate-limited call fails fast and says why, so does a legacy session's
    // request (503); a node without Redis still serves.
    std::thread::sleep(Duration::from_millis(5200)); // the bucket refills (one token per 5 s)
    let session = open_session(n[2].port());
    redis.kill();
    let (status, r) = echo_in(n[2].port(), &session, "x");
    assert_eq!((status, r["error"]["code"].clone()), (503, json!(-32011)), "{r}");
    let plain = HttpServer::start(BIN, &[]).unwrap();
    let started = Instant::now();
    let (_, r) = post(n[0].port(), "tools/call", echo.clone(), json!({}));
    assert!(started.elapsed() < Duration::from_secs(10), "fails fast: {:?}", started.elapsed());
    assert_eq!(r["error"]["code"], -32011, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("unreachable"), "{r}");
    assert_eq!(post(plain.port(), "tools/call", echo.clone(), json!({})).1["result"]["content"][0]["text"], "hi");
    let (_, r) = post(unlimited.port(), "tools/call", echo.clone(), json!({}));
    assert_eq!(
        r["result"]["content"][0]["text"], "hi",
        "a stateless call needs no Redis, even on a node of the cluster: {r}"
    );

    // Back: every node recovers by itself.
    redis.restart().unwrap();
    for node in &n {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let (_, r) = post(node.port(), "tools/call", echo.clone(), json!({}));
            if r["result"]["content"][0]["text"] == "hi" {
                break;
            }
            assert!(Instant::now() < deadline, "the node did not recover: {r}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

#[test]
fn a_node_told_to_use_an_unreachable_redis_refuses_to_start() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = std::process::Command::new(BIN)
        .args(["--http", "127.0.0.1:0", "--store", &format!("redis://:hunter2-secret@127.0.0.1:{port}")])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unreachable") && !stderr.contains("hunter2"), "{stderr}");
    let out = std::process::Command::new(BIN).args(["--store", "memcached://x"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--store"));

    // A Redis that wants a password: the right one in the URL works, a wrong one is refused in
    // words that do not repeat it.
    let redis = RedisServer::start_with_password(Some("s3cret-Pass")).expect("redis-server");
    let node = HttpServer::start(BIN, &["--store", &redis.url()]).expect("a node with the password");
    let (_, created) =
        post(node.port(), "tools/call", json!({"name": "countdown", "arguments": {"ms": 300}}), tasks_caps());
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let wrong = redis.url().replace("s3cret-Pass", "wrong-Pass-77");
    let out = std::process::Command::new(BIN).args(["--http", "127.0.0.1:0", "--store", &wrong]).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("wrong-Pass-77") && !stderr.contains("s3cret"), "{stderr}");
}

/// `rediss://`: two nodes share a Redis that speaks only TLS, trusting its private CA through
/// `SSL_CERT_FILE`; a node that does not trust it refuses to start and says why.
#[test]
fn nodes_share_a_redis_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "cluster test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &rcgen::Issuer::new(ca_params, ca_key))
        .unwrap();
    let (ca_path, cert_path, key_path) =
        (dir.path().join("ca.pem"), dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&ca_path, ca.pem()).unwrap();
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();

    let redis = RedisServer::start_tls(&cert_path, &key_path).expect("redis-server with TLS");
    let url = redis.url();
    assert!(url.starts_with("rediss://"), "{url}");
    let node = || {
        let mut command = std::process::Command::new(BIN);
        command.args(["--http", "127.0.0.1:0", "--store", &url]).env("SSL_CERT_FILE", &ca_path);
        HttpServer::start_command(&mut command).expect("a node on rediss://")
    };
    let (a, b) = (node(), node());
    let (_, created) =
        post(a.port(), "tools/call", json!({"name": "countdown", "arguments": {"ms": 300}}), tasks_caps());
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap();
    assert!(task_status(b.port(), id)["result"]["status"].is_string(), "B reads A's task through TLS");

    let out = std::process::Command::new(BIN)
        .args(["--http", "127.0.0.1:0", "--store", &url])
        .env_remove("SSL_CERT_FILE")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unreachable") && stderr.contains("certificate"), "{stderr}");
}

/// POSTs a legacy-session message; the status, the lower-cased head and the JSON-RPC message.
fn legacy(port: u16, session: Option<&str>, message: Value) -> (u16, String, Value) {
    let headers =
        session.map(|s| format!("Mcp-Session-Id: {s}\r\nMCP-Protocol-Version: 2025-11-25\r\n")).unwrap_or_default();
    post_raw(port, &headers, &message.to_string())
}

fn open_session(port: u16) -> String {
    session_with(port, json!({}))
}

fn echo_in(port: u16, session: &str, text: &str) -> (u16, Value) {
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}});
    let (status, _, r) = legacy(port, Some(session), call);
    (status, r)
}

fn get_stream_status(port: u16, session: &str) -> u16 {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         MCP-Protocol-Version: 2025-11-25\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap_or(0)
}

#[test]
fn a_legacy_session_begun_on_one_node_is_served_by_all_and_ended_by_any() {
    let redis = RedisServer::start().expect("redis-server");
    let n = nodes(&redis.url(), &["--session-idle", "3"]);
    let (a, b, c) = (n[0].port(), n[1].port(), n[2].port());
    let session = open_session(a);
    for (node, text) in [(b, "on B"), (c, "on C"), (a, "on A"), (b, "on B again")] {
        let (status, r) = echo_in(node, &session, text);
        assert_eq!((status, r["result"]["content"][0]["text"].clone()), (200, json!(text)), "{r}");
    }
    let set_level = json!({"jsonrpc": "2.0", "id": 6, "method": "logging/setLevel", "params": {"level": "debug"}});
    assert!(legacy(c, Some(&session), set_level).2["result"].is_object());
    assert_eq!(get_stream_status(c, &session), 200, "C opens the GET stream of A's session");
    // DELETE on B ends it for A and C too.
    let mut stream = TcpStream::connect(("127.0.0.1", b)).unwrap();
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:{b}\r\nConnection: close\r\nMcp-Session-Id: {session}\r\n\r\n"
    );
    stream.write_all(delete.as_bytes()).unwrap();
    let mut raw = String::new();
    let _ = stream.read_to_string(&mut raw);
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    for node in [a, b, c] {
        assert_eq!(echo_in(node, &session, "gone?").0, 404, "ended everywhere");
    }
    // Idle everywhere for longer than --session-idle: ended on every node.
    let session = open_session(b);
    assert_eq!(echo_in(a, &session, "x").0, 200);
    std::thread::sleep(Duration::from_millis(3500));
    for node in [a, b, c] {
        assert_eq!(echo_in(node, &session, "late").0, 404, "the idle deadline is cluster-wide");
    }
    // A forged id is unknown everywhere.
    assert_eq!(echo_in(c, "00000000000000000000000000000000", "x").0, 404);
}

/// A streamed response or GET stream, read as it comes: the JSON-RPC messages of its events.
struct Stream {
    reader: std::io::BufReader<TcpStream>,
}

impl Stream {
    fn open(port: u16, method: &str, session: &str, body: Option<Value>) -> Stream {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = format!(
            "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
             MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        Stream { reader: std::io::BufReader::new(stream) }
    }

    /// The next JSON-RPC message on the stream.
    fn next(&mut self) -> Value {
        self.next_event().expect("the stream goes on").1
    }

    /// The next event: its id and its JSON-RPC message; `None` when the stream ends or breaks.
    fn next_event(&mut self) -> Option<(Option<String>, Value)> {
        use std::io::BufRead;
        let mut id = None;
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            let line = line.trim();
            if let Some(event_id) = line.strip_prefix("id: ") {
                id = Some(event_id.to_owned());
            } else if let Some(data) = line.strip_prefix("data: ") {
                if let Ok(v) = serde_json::from_str::<Value>(data) {
                    return Some((id, v));
                }
            }
        }
    }

    /// Reads until the server's `: stream open` comment (a GET stream is then listening).
    fn wait_open(&mut self) {
        use std::io::BufRead;
        loop {
            let mut line = String::new();
            assert!(self.reader.read_line(&mut line).unwrap_or(0) > 0, "the GET stream did not open");
            if line.starts_with(": stream open") {
                return;
            }
        }
    }

    /// A GET resuming a stream after `last` (`Last-Event-ID`).
    fn resume(port: u16, session: &str, last: &str) -> Stream {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let request = format!(
            "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nAccept: text/event-stream\r\n\
             Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\nLast-Event-ID: {last}\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).unwrap();
        Stream { reader: std::io::BufReader::new(stream) }
    }
}

/// A legacy session opened on `port` with `capabilities`: its id.
fn session_with(port: u16, capabilities: Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": capabilities, "clientInfo": {"name": "cluster-test", "version": "1"}}});
    let (status, head, r) = legacy(port, None, init);
    assert_eq!(status, 200, "{r}");
    let id = head.lines().find_map(|l| l.strip_prefix("mcp-session-id: ")).expect("a session id").trim().to_owned();
    let (status, _, _) = legacy(port, Some(&id), json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(status, 202);
    id
}

#[test]
fn notifications_and_answers_reach_the_node_that_needs_them() {
    let redis = RedisServer::start().expect("redis-server");
    let n = nodes(&redis.url(), &[]);
    let (a, b, c) = (n[0].port(), n[1].port(), n[2].port());

    // Subscribed through B, GET stream held by C, the resource changed on A.
    let session = session_with(a, json!({}));
    let subscribe =
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "example://about"}});
    assert!(legacy(b, Some(&session), subscribe).2["result"].is_object());
    let mut get = Stream::open(c, "GET", &session, None);
    get.wait_open();
    let announce = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "announce", "arguments": {"uri": "example://about"}}});
    assert!(legacy(a, Some(&session), announce).2["result"].is_object());
    let note = get.next();
    assert_eq!(note["method"], "notifications/resources/updated", "{note}");
    assert_eq!(note["params"]["uri"], "example://about");

    // An elicitation asked on A (on the call's stream), answered by a POST that lands on B.
    let session = session_with(a, json!({"elicitation": {}}));
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "confirm", "arguments": {"question": "Ship it?"}}});
    let mut stream = Stream::open(a, "POST", &session, Some(call));
    let ask = stream.next();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"yes": true}}});
    assert_eq!(legacy(b, Some(&session), answer).0, 202);
    let result = stream.next();
    assert_eq!(result["id"], 4);
    assert_eq!(result["result"]["content"][0]["text"], "the user said yes", "{result}");

    // A cancellation POSTed to C stops the call A runs.
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "wait", "arguments": {"ms": 20000}}});
    let started = Instant::now();
    let in_thread = session.clone();
    let waiting = std::thread::spawn(move || {
        let mut stream = Stream::open(a, "POST", &in_thread, Some(call));
        let mut seen = Vec::new();
        use std::io::BufRead;
        let mut line = String::new();
        while stream.reader.read_line(&mut line).unwrap_or(0) > 0 {
            seen.push(line.clone());
            line.clear();
        }
        seen
    });
    std::thread::sleep(Duration::from_millis(500));
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9, "reason": "changed my mind"}});
    assert_eq!(legacy(c, Some(&session), cancel).0, 202);
    let seen = waiting.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "the call on A stopped: {:?}", started.elapsed());
    assert!(!seen.iter().any(|l| l.contains("waited 20000 ms")), "{seen:?}");
}

#[test]
fn a_node_killed_mid_stream_the_client_resumes_on_another_and_misses_nothing() {
    let redis = RedisServer::start().expect("redis-server");
    let mut n = nodes(&redis.url(), &[]);
    let (b, c) = (n[1].port(), n[2].port());
    let a = n[0].port();
    let session = session_with(a, json!({}));
    let call = json!({"jsonrpc": "2.0", "id": 21, "method": "tools/call",
        "params": {"name": "wait", "arguments": {"ms": 6000}, "_meta": {"progressToken": "p"}}});
    let mut stream = Stream::open(a, "POST", &session, Some(call));
    let mut progress = Vec::new();
    let mut last = None;
    while progress.len() < 8 {
        let (id, message) = stream.next_event().expect("events before the kill");
        if let Some(id) = id {
            last = Some(id);
        }
        if message["method"] == "notifications/progress" {
            progress.push(message["params"]["progress"].as_f64().unwrap());
        }
    }
    drop(n.remove(0)); // SIGKILL, mid-call
    while let Some((id, message)) = stream.next_event() {
        if let Some(id) = id {
            last = Some(id);
        }
        if message["method"] == "notifications/progress" {
            progress.push(message["params"]["progress"].as_f64().unwrap());
        }
    }
    let last = last.expect("events carry ids");
    // The client reconnects to another node with the last id it saw.
    let mut resumed = Stream::resume(b, &session, &last);
    let mut end = None;
    while let Some((_, message)) = resumed.next_event() {
        if message["method"] == "notifications/progress" {
            progress.push(message["params"]["progress"].as_f64().unwrap());
        } else if message["id"] == 21 {
            end = Some(message);
            break;
        }
    }
    let expected: Vec<f64> = (0..progress.len()).map(|i| i as f64).collect();
    assert_eq!(progress, expected, "every event once, in order");
    let end = end.expect("the call ends in words, not in a stream that never closes");
    assert!(end["error"]["message"].as_str().unwrap().contains("stopped"), "{end}");
    // The session itself lives on: the other nodes serve it.
    assert_eq!(echo_in(c, &session, "still here").1["result"]["content"][0]["text"], "still here");
}

#[test]
fn a_stream_resumes_on_another_node_while_its_node_still_produces_it() {
    let redis = RedisServer::start().expect("redis-server");
    let n = nodes(&redis.url(), &[]);
    let (a, b) = (n[0].port(), n[1].port());
    let session = session_with(a, json!({}));
    let call = json!({"jsonrpc": "2.0", "id": 22, "method": "tools/call",
        "params": {"name": "wait", "arguments": {"ms": 1500}, "_meta": {"progressToken": "q"}}});
    let mut stream = Stream::open(a, "POST", &session, Some(call));
    let mut progress = Vec::new();
    let mut last = None;
    while progress.len() < 3 {
        let (id, message) = stream.next_event().unwrap();
        last = id.or(last);
        if message["method"] == "notifications/progress" {
            progress.push(message["params"]["progress"].as_f64().unwrap());
        }
    }
    drop(stream); // the connection breaks; the node goes on
    let mut resumed = Stream::resume(b, &session, &last.unwrap());
    let result = loop {
        let (_, message) = resumed.next_event().expect("the rest of the stream");
        if message["method"] == "notifications/progress" {
            progress.push(message["params"]["progress"].as_f64().unwrap());
        } else if message["id"] == 22 {
            break message;
        }
    };
    assert_eq!(result["result"]["content"][0]["text"], "waited 1500 ms");
    let expected: Vec<f64> = (0..progress.len()).map(|i| i as f64).collect();
    assert_eq!(progress, expected, "every event once, in order, across two nodes");
}

/// Reads `stream` until the answer to request `id`: the progress numbers seen (appended to
/// `progress`), the last event id, and the answer (`None` if the stream ended without one).
fn read_until_answer(
    stream: &mut Stream,
    id: i64,
    progress: &mut Vec<f64>,
    last: &mut Option<String>,
) -> Option<Value> {
    while let Some((event, message)) = stream.next_event() {
        *last = event.or(last.take());
        if message["method"] == "notifications/progress" {
            progress.push(message["params"]["progress"].as_f64().unwrap());
        } else if message["id"] == id {
            return Some(message);
        }
    }
    None
}

/// A `wait` call with progress on `port` in `session`: the open stream, after `before` events.
fn call_wait(
    port: u16,
    session: &str,
    id: i64,
    ms: u64,
    every_ms: u64,
    before: usize,
) -> (Stream, Vec<f64>, Option<String>) {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "wait", "arguments": {"ms": ms, "every_ms": every_ms}, "_meta": {"progressToken": "w"}}});
    let mut stream = Stream::open(port, "POST", session, Some(call));
    let (mut progress, mut last) = (Vec::new(), None);
    read_progress(&mut stream, before, &mut progress, &mut last);
    (stream, progress, last)
}

/// Reads `stream` until `progress` holds `count` progress numbers, noting the last event id.
fn read_progress(stream: &mut Stream, count: usize, progress: &mut Vec<f64>, last: &mut Option<String>) {
    while progress.len() < count {
        let (event, message) = stream.next_event().expect("the stream goes on");
        *last = event.or(last.take());
        if message["method"] == "notifications/progress" {
            progress.push(message["params"]["progress"].as_f64().unwrap());
        }
    }
}

#[test]
fn a_stream_resumed_on_another_node_after_its_producer_was_slowed_down_shows_no_gap() {
    let redis = RedisServer::start().expect("redis-server");
    let n = nodes(&redis.url(), &[]);
    let (a, b) = (n[0].port(), n[1].port());
    let session = session_with(a, json!({}));
    let (mut stream, mut progress, mut last) = call_wait(a, &session, 31, 2000, 20, 3);
    // Redis stops taking writes for a while: the node's log falls behind, then catches up.
    assert_eq!(redis.command(&["CLIENT", "PAUSE", "1500", "WRITE"]).unwrap(), "+OK");
    read_progress(&mut stream, 40, &mut progress, &mut last); // the live stream goes on
    drop(stream);
    let mut resumed = Stream::resume(b, &session, last.as_deref().unwrap());
    let answer = read_until_answer(&mut resumed, 31, &mut progress, &mut last).expect("the answer, on node B");
    assert_eq!(answer["result"]["content"][0]["text"], "waited 2000 ms", "{answer}");
    let expected: Vec<f64> = (0..100).map(f64::from).collect();
    assert_eq!(progress, expected, "every event once, in order, across the slow spell and two nodes");
}

#[test]
fn a_client_further_behind_than_the_log_keeps_is_told_instead_of_skipping_events() {
    let redis = RedisServer::start().expect("redis-server");
    let n = nodes(&redis.url(), &[]);
    let (a, b) = (n[0].port(), n[1].port());
    let session = session_with(a, json!({}));
    // 600 events, of which the log and the node keep the last 256; the client saw 2.
    for (id, resume_on) in [(32, b), (33, a)] {
        let (stream, mut progress, mut last) = call_wait(a, &session, id, 600, 1, 2);
        drop(stream);
        std::thread::sleep(Duration::from_millis(3000)); // the call ends meanwhile
        let mut resumed = Stream::resume(resume_on, &session, last.as_deref().unwrap());
        let answer = read_until_answer(&mut resumed, id, &mut progress, &mut last).expect("an answer");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("whole"), "resumed on {resume_on}: a hole is named, not hidden: {answer}");
        assert!(progress.len() < 100, "no events handed on past the hole: {}", progress.len());
    }
}

#[test]
fn a_stream_whose_log_redis_could_not_take_is_refused_whole_on_another_node() {
    let redis = RedisServer::start().expect("redis-server");
    let n = nodes(&redis.url(), &[]);
    let (a, b) = (n[0].port(), n[1].port());
    let session = session_with(a, json!({}));
    let (mut stream, mut progress, mut last) = call_wait(a, &session, 34, 8000, 100, 2);
    // Writes wait longer than the node sends them again: it gives them up and marks the stream.
    assert_eq!(redis.command(&["CLIENT", "PAUSE", "7000", "WRITE"]).unwrap(), "+OK");
    let live = read_until_answer(&mut stream, 34, &mut progress, &mut last).expect("the live stream is whole");
    assert_eq!(live["result"]["content"][0]["text"], "waited 8000 ms", "{live}");
    let expected: Vec<f64> = (0..80).map(f64::from).collect();
    assert_eq!(progress, expected, "the client on the producing node misses nothing");
    let mut elsewhere = Vec::new();
    let mut resumed = Stream::resume(b, &session, &format!("{}-1", last.unwrap().split('-').next().unwrap()));
    let answer = read_until_answer(&mut resumed, 34, &mut elsewhere, &mut None).expect("an answer on node B");
    assert!(
        answer["error"]["message"].as_str().unwrap_or_default().contains("cannot be resumed whole"),
        "a log that lost entries is not replayed as if whole: {answer}"
    );
}

/// `deploy/cluster/run.sh`: three nodes on one Redis behind nginx, stopped when dropped.
struct Deployment {
    dir: tempfile::TempDir,
    url: String,
}

impl Deployment {
    fn start() -> Deployment {
        let dir = tempfile::tempdir().unwrap();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/cluster/run.sh");
        // Port 0: the script picks five free ports in a row (one free port says nothing of
        // the next four).
        let out = std::process::Command::new("bash")
            .args([script, "start", dir.path().to_str().unwrap(), BIN, "0"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Deployment { dir, url }
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/cluster/run.sh");
        let _ = std::process::Command::new("bash").args([script, "stop", self.dir.path().to_str().unwrap()]).status();
    }
}

#[test]
fn our_client_keeps_one_legacy_session_across_nodes_behind_nginx() {
    use mcp::client::{Client, ClientOptions, Handlers};
    use mcp::types::elicitation::{ElicitAction, ElicitResult};
    let deployment = Deployment::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let handlers = Handlers {
            elicitation: Some(std::sync::Arc::new(|_| {
                Box::pin(async {
                    let content = serde_json::from_value(json!({"yes": true})).unwrap();
                    Ok(ElicitResult {
                        result_type: None,
                        action: ElicitAction::Accept,
                        content: Some(content),
                        meta: None,
                    })
                })
            })),
            ..Handlers::default()
        };
        let options = ClientOptions { legacy_only: true, handlers, ..ClientOptions::default() };
        let client = Client::connect_http(&deployment.url, options).await.expect("a session through nginx");
        for i in 0..50 {
            let r = client.call_tool("echo", json!({"text": format!("call {i}")})).await.unwrap();
            assert_eq!(mcp::testing::assert_tool_ok(&r), format!("call {i}"));
        }
        let r = client.call_tool("confirm", json!({"question": "Ship it?"})).await.unwrap();
        assert_eq!(mcp::testing::assert_tool_ok(&r), "the user said yes");
        let steps = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let seen = steps.clone();
        let r = client
            .call_tool_with_progress("wait", json!({"ms": 600}), move |_| {
                seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            })
            .await
            .unwrap();
        assert_eq!(mcp::testing::assert_tool_ok(&r), "waited 600 ms");
        assert!(steps.load(std::sync::atomic::Ordering::Relaxed) >= 3);
        client.close().await;
    });
}

#[test]
fn a_legacy_task_status_produced_on_one_node_reaches_the_get_stream_held_by_another() {
    let redis = RedisServer::start().expect("redis-server");
    let n = nodes(&redis.url(), &[]);
    let (a, c) = (n[0].port(), n[2].port());
    let session = session_with(a, json!({}));
    // The GET stream is held by C (which takes it over from its relay at once).
    let mut get = Stream::open(c, "GET", &session, None);
    get.wait_open();
    // A task made and run on A: its status changes are A's to tell, and C's stream has them.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "countdown", "arguments": {"ms": 300}, "task": {"ttl": 60000}}});
    let (status, _, created) = legacy(a, Some(&session), call);
    assert_eq!(status, 200, "{created}");
    let task = created["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {created}")).to_owned();
    loop {
        let (_, message) = get.next_event().expect("the task's statuses reach C's GET stream");
        let this_task =
            message["method"] == "notifications/tasks/status" && message["params"]["taskId"] == task.as_str();
        if this_task && message["params"]["status"] == "completed" {
            break;
        }
    }
}

#[test]
fn changes_to_one_session_made_at_once_on_two_nodes_are_all_kept() {
    let redis = RedisServer::start().expect("redis-server");
    let n = nodes(&redis.url(), &[]);
    let (a, b, c) = (n[0].port(), n[1].port(), n[2].port());
    let session = session_with(a, json!({}));
    // Both other nodes hold a copy of the same revision before the race.
    for port in [b, c] {
        assert_eq!(echo_in(port, &session, "warm").0, 200);
    }
    let threads: Vec<_> = (0..12)
        .map(|i| {
            let session = session.clone();
            let port = if i % 2 == 0 { b } else { c };
            std::thread::spawn(move || {
                let uri = format!("example://greeting/n{i}");
                let subscribe =
                    json!({"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": uri}});
                let (status, _, r) = legacy(port, Some(&session), subscribe);
                assert!(status == 200 && r["result"].is_object(), "{status} {r}");
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // The shared record holds all twelve, whichever node wrote last.
    let port = redis.url().rsplit(':').next().unwrap().trim_end_matches('/').to_owned();
    let cli = |args: &[&str]| {
        let out = std::process::Command::new("redis-cli").args(["-p", &port]).args(args).output().expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let key = cli(&["--scan", "--pattern", &format!("*session:{session}")]).trim().to_owned();
    let record: Value = serde_json::from_str(cli(&["HGET", &key, "record"]).trim()).unwrap();
    let subscribed: Vec<&str> = record["subscriptions"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for i in 0..12 {
        assert!(subscribed.contains(&format!("example://greeting/n{i}").as_str()), "lost n{i}: {subscribed:?}");
    }
}

#[test]
fn a_2024_11_05_connection_is_served_whichever_node_its_posts_reach() {
    use std::io::BufRead;
    let redis = RedisServer::start().expect("redis-server");
    let n = nodes(&redis.url(), &[]);
    let (a, b, c) = (n[0].port(), n[1].port(), n[2].port());
    // The stream, on A.
    let mut stream = TcpStream::connect(("127.0.0.1", a)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let open = format!("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{a}\r\nAccept: text/event-stream\r\n\r\n");
    stream.write_all(open.as_bytes()).unwrap();
    let mut reader = std::io::BufReader::new(stream);
    let endpoint = loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream closed before its endpoint");
        if let Some(path) = line.trim().strip_prefix("data: ") {
            break path.to_owned();
        }
    };
    assert!(endpoint.contains("sessionId="), "{endpoint}");
    // Its messages POSTed to B and C, as a round-robin balancer would send them.
    let post = |port: u16, body: Value| {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let body = body.to_string();
        let request = format!(
            "POST {endpoint} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        answer.split_whitespace().nth(1).and_then(|s| s.parse::<u16>().ok()).unwrap_or(0)
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05",
        "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}});
    assert_eq!(post(b, init), 202);
    let mut answers = Vec::new();
    let next = |reader: &mut std::io::BufReader<TcpStream>| loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream closed");
        if let Some(data) = line.trim().strip_prefix("data: ") {
            if let Ok(v) = serde_json::from_str::<Value>(data) {
                return v;
            }
        }
    };
    answers.push(next(&mut reader));
    assert_eq!(answers[0]["result"]["protocolVersion"], "2024-11-05", "{}", answers[0]);
    assert_eq!(post(c, json!({"jsonrpc": "2.0", "method": "notifications/initialized"})), 202);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "via C"}}});
    assert_eq!(post(c, call), 202);
    let answer = next(&mut reader);
    assert_eq!(answer["result"]["content"][0]["text"], "via C", "{answer}");
}
