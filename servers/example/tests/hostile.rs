//! The real binary under hostile input and a hostile environment: a body built to make a tree 50
//! times its size is refused without one; an audit log nobody reads stalls no request (its
//! dropped lines are counted on `/metrics` and said at exit); the side pages on `--metrics-addr`
//! answer only loopback names; without a random source the server refuses to start, and a
//! request that needs one later gets an error, never a guessable id.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use mcp::testing::HttpServer;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-example");

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}"#;

/// One HTTP exchange on a fresh connection: the status and the body.
fn exchange(port: u16, head: &str, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request =
        format!("{head}Host: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n", body.len());
    stream.write_all(request.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    if let Err(e) = stream.read_to_end(&mut raw) {
        panic!("no answer within 10 s ({e}); so far: {}", String::from_utf8_lossy(&raw));
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default())
}

/// A 2026-07-28 `tools/call` of `name` with the params `params` (JSON text).
fn call_text(port: u16, name: &str, params: &str) -> (u16, String) {
    let body = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{params}}}"#);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\n"
    );
    exchange(port, &head, body.as_bytes())
}

fn echo(port: u16, text: &str) -> (u16, String) {
    let params =
        json!({"name": "echo", "arguments": {"text": text}, "_meta": serde_json::from_str::<Value>(META).unwrap()});
    call_text(port, "echo", &params.to_string())
}

fn get(port: u16, path: &str, host: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default())
}

/// The peak resident memory of process `pid` so far, in bytes (`VmHWM`).
fn peak_memory(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM in /proc/PID/status");
    line.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 1024
}

/// The port of the `--metrics-addr` listener, from the server's stderr.
fn metrics_port(server: &HttpServer) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stderr = server.stderr();
        let said = stderr.lines().find_map(|l| l.strip_prefix("serving /healthz and /metrics on http://127.0.0.1:"));
        if let Some(port) = said {
            return port.trim().parse().unwrap();
        }
        assert!(Instant::now() < deadline, "no metrics address on stderr: {stderr}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The issue's body: 3.9 MiB of nested arrays in the arguments and `name` given twice. Read as a
/// tree it takes some 200 MiB; the server refuses it from its head, with no tree at all.
#[test]
fn a_body_with_a_key_given_twice_is_refused_without_a_tree() {
    let server = HttpServer::start(BIN, &[]).unwrap();
    let (status, _) = echo(server.port(), "warm");
    assert_eq!(status, 200);
    let nested = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    let mut deep = String::from("[");
    while deep.len() < 3_900_000 {
        deep.push_str(&nested);
        deep.push(',');
    }
    deep.push_str("1]");
    let params = format!(r#"{{"name":"echo","arguments":{{"text":"x","deep":{deep}}},"name":"echo","_meta":{META}}}"#);
    let before = peak_memory(server.pid());
    let (status, body) = call_text(server.port(), "echo", &params);
    let after = peak_memory(server.pid());
    assert_eq!(status, 400, "{body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["error"]["code"], -32602, "{body}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("duplicate field `name`"), "{body}");
    let grown = after.saturating_sub(before);
    let size = params.len();
    eprintln!("a {size}-byte body: peak memory {before} -> {after} bytes (+{grown})");
    assert!(grown < 2 * size, "the peak grew by {grown} bytes for a body of {size}");
}

/// An audit log written to a pipe nobody reads: requests are answered as usual; the lines that
/// do not fit in its queue are dropped and counted, on `/metrics` and at exit.
#[test]
fn a_stalled_audit_log_stalls_no_request() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("audit.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // Held open for reading (so the server's open does not wait), never read.
    let _never_read = std::fs::OpenOptions::new().read(true).write(true).open(&fifo).unwrap();
    let server = HttpServer::start(
        BIN,
        &["--audit-log", fifo.to_str().unwrap(), "--audit-arguments", "--metrics-addr", "127.0.0.1:0"],
    )
    .unwrap();
    let metrics = metrics_port(&server);
    let text = "x".repeat(64 * 1024);
    let started = Instant::now();
    for i in 0..400 {
        let asked = Instant::now();
        let (status, body) = echo(server.port(), &text);
        assert_eq!(status, 200, "request {i}: {body}");
        assert!(asked.elapsed() < Duration::from_secs(5), "request {i} took {:?}", asked.elapsed());
    }
    eprintln!("400 requests with a stalled audit log in {:?}", started.elapsed());
    let (status, page) = get(metrics, "/metrics", "127.0.0.1");
    assert_eq!(status, 200, "{page}");
    let dropped: u64 = page
        .lines()
        .find_map(|l| l.strip_prefix("mcp_audit_lines_dropped_total "))
        .unwrap_or_else(|| panic!("no counter: {page}"))
        .trim()
        .parse()
        .unwrap();
    assert!(dropped > 0, "{page}");
    // Told to stop, the server says how many lines its log dropped.
    assert!(Command::new("kill").args(["-TERM", &server.pid().to_string()]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server.stderr().contains("lines dropped") {
        assert!(Instant::now() < deadline, "nothing said at exit: {}", server.stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
    let said = server.stderr();
    assert!(said.contains(&format!("audit log {}", fifo.display())), "{said}");
}

/// `--metrics-addr`: `/healthz` and `/metrics` there (for loopback names only, as the endpoint
/// itself), and not beside the endpoint; the process's counters on it (a rate-limit refusal).
#[test]
fn the_metrics_address_serves_the_side_pages_to_loopback_names_only() {
    let server =
        HttpServer::start(BIN, &["--metrics-addr", "127.0.0.1:0", "--rate-limit", "0.1/s", "--rate-burst", "1"])
            .unwrap();
    let port = metrics_port(&server);
    assert_eq!(get(port, "/healthz", "127.0.0.1"), (200, "ok\n".into()));
    assert_eq!(echo(server.port(), "first").0, 200);
    assert_eq!(echo(server.port(), "refused").0, 429);
    let (status, page) = get(port, "/metrics", &format!("localhost:{port}"));
    assert_eq!(status, 200);
    for line in [
        "mcp_audit_lines_dropped_total 0",
        "mcp_http_sessions 0",
        "mcp_rate_limit_refusals_total 1",
        "mcp_tasks_created_total 0",
        "# TYPE mcp_rate_limit_refusals_total counter",
    ] {
        assert!(page.lines().any(|l| l == line), "{line:?} on the page: {page}");
    }
    let (status, page) = get(port, "/metrics", &format!("rebind.example:{port}"));
    assert_eq!(status, 421, "{page}");
    assert!(!page.contains("mcp_"), "{page}");
    assert_eq!(get(port, "/mcp", "127.0.0.1").0, 404, "the endpoint is not on the metrics address");
    assert_eq!(get(server.port(), "/metrics", "127.0.0.1").0, 404, "nor the pages beside the endpoint");
}

/// A shared object that makes `getrandom(2)` with no flags (what the `getrandom` crate asks
/// for) fail with EIO, as a kernel or sandbox without a random source would; with
/// `FAIL_RANDOM_WHEN` set, only once the file it names exists.
fn failing_random_source(dir: &std::path::Path) -> std::path::PathBuf {
    let source = dir.join("norandom.c");
    std::fs::write(
        &source,
        r#"#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
ssize_t getrandom(void *buf, size_t len, unsigned int flags) {
    const char *when = getenv("FAIL_RANDOM_WHEN");
    if (flags == 0 && (when == NULL || access(when, F_OK) == 0)) {
        errno = EIO;
        return -1;
    }
    return syscall(SYS_getrandom, buf, len, flags);
}
"#,
    )
    .unwrap();
    let library = dir.join("libnorandom.so");
    let built = Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(&library).arg(&source).status().unwrap();
    assert!(built.success(), "cc could not build the test's random-source shim");
    library
}

#[test]
fn without_a_random_source_it_refuses_to_start_and_later_requests_get_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let shim = failing_random_source(dir.path());
    // At start: a clear refusal, on both transports.
    for args in [&["--http", "127.0.0.1:0"][..], &[][..]] {
        let out =
            Command::new(BIN).args(args).env("LD_PRELOAD", &shim).stdin(std::process::Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started without a random source: {stderr}");
        assert!(stderr.contains("random source failed"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // Later: a session id cannot be made, so `initialize` is refused with a JSON-RPC error.
    let flag = dir.path().join("now");
    let mut command = Command::new(BIN);
    command.args(["--http", "127.0.0.1:0"]).env("LD_PRELOAD", &shim).env("FAIL_RANDOM_WHEN", &flag);
    let server = HttpServer::start_command(&mut command).unwrap();
    std::fs::write(&flag, "").unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let head =
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";
    let (status, body) = exchange(server.port(), head, init.to_string().as_bytes());
    assert_eq!(status, 500, "{body}");
    let reply: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body:?}"));
    assert_eq!(reply["error"]["code"], -32603, "{body}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("random source failed"), "{body}");
    // Whatever needs no random bytes still works.
    assert_eq!(echo(server.port(), "still here").0, 200);
}
