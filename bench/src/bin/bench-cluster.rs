//! Benchmarks legacy-session calls (`echo` in `Mcp-Session-Id` sessions, 16 sessions on
//! keep-alive connections) on 1 node in memory (the floor), 1 node on Redis and 3 nodes on
//! Redis (each session's calls rotate over the three nodes), and counts the Redis round trips
//! per call through a counting proxy in front of Redis. Targets: 2026-07-28 calls make no round
//! trip; legacy calls at most one (pipelined). Exits 1 if a target is missed (`--no-fail`: 0).
//!
//! Run: `cargo build --profile dist -p mcp-example -p mcp-bench && target/dist/bench-cluster`
//! (needs `redis-server`).
#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_bench::http::{post_request, Conn, HttpProcess};
use mcp_bench::{report, sibling_binary};
use mcp_test_services::RedisServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SESSIONS: usize = 16;
const RUN: Duration = Duration::from_secs(2);
const CALL: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
const MODERN: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

/// A TCP proxy in front of Redis that counts the client's write bursts (one per round trip;
/// a pipeline is one burst).
async fn counting_proxy(upstream: u16, count: Arc<AtomicU64>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let count = count.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await else { return };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = cr.read(&mut buf).await {
                        if n == 0 || sw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                };
                let down = async move {
                    let _ = tokio::io::copy(&mut sr, &mut cw).await;
                };
                tokio::join!(up, down);
            });
        }
    });
    port
}

/// Opens a legacy session on `port`: its id.
fn open_session(port: u16) -> String {
    let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let id = raw
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id: ").map(|v| v.trim().to_owned()))
        .expect("a session id");
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Content-Length: {}\r\n\r\n{note}",
        note.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let _ = s.read_to_string(&mut raw);
    id
}

/// Legacy calls per second: `sessions` sessions, each rotating its calls over `ports`.
async fn legacy_rate(ports: &[u16], sessions: usize) -> (f64, u64) {
    let mut tasks = Vec::new();
    for i in 0..sessions {
        let ports = ports.to_vec();
        let session = open_session(ports[i % ports.len()]);
        tasks.push(tokio::spawn(async move {
            let headers = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
            let mut conns = Vec::new();
            let mut requests = Vec::new();
            for port in &ports {
                conns.push(Conn::open(*port).await);
                requests.push(post_request(*port, &headers, CALL));
            }
            let (mut calls, start) = (0u64, Instant::now());
            while start.elapsed() < RUN {
                let k = calls as usize % conns.len();
                let (status, body) = conns[k].round_trip(&requests[k]).await;
                assert!(
                    status == 200 && body.windows(2).any(|w| w == b"hi"),
                    "{status} {}",
                    String::from_utf8_lossy(&body)
                );
                calls += 1;
            }
            calls
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    (total as f64 / RUN.as_secs_f64(), total)
}

/// `n` 2026-07-28 calls spread over `ports`.
async fn modern_calls(ports: &[u16], n: usize) {
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")];
    let mut conns = Vec::new();
    for port in ports {
        conns.push((Conn::open(*port).await, post_request(*port, &headers, MODERN)));
    }
    for i in 0..n {
        let (conn, request) = &mut conns[i % ports.len()];
        let (status, _) = conn.round_trip(request).await;
        assert_eq!(status, 200);
    }
}

fn node(store: Option<&str>) -> HttpProcess {
    let example = sibling_binary("mcp-example");
    match store {
        None => HttpProcess::start(&example, &["--http", "{addr}"]),
        Some(url) => HttpProcess::start(&example, &["--http", "{addr}", "--store", url]),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    let redis = RedisServer::start().expect("redis-server (apt-get install redis-server)");
    let upstream: u16 = redis.url().rsplit(':').next().unwrap().parse().unwrap();
    let count = Arc::new(AtomicU64::new(0));
    let proxy = counting_proxy(upstream, count.clone()).await;
    let store = format!("redis://127.0.0.1:{proxy}");

    let memory = node(None);
    let (floor, _) = legacy_rate(&[memory.port], SESSIONS).await;
    drop(memory);
    let one = node(Some(&store));
    let (on_redis, _) = legacy_rate(&[one.port], SESSIONS).await;
    drop(one);
    let three = [node(Some(&store)), node(Some(&store)), node(Some(&store))];
    let ports: Vec<u16> = three.iter().map(|n| n.port).collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (bursts, commands) = (count.load(Ordering::Relaxed), redis_commands(upstream));
    let (on_three, calls) = legacy_rate(&ports, SESSIONS).await;
    let concurrent_bursts = (count.load(Ordering::Relaxed) - bursts) as f64 / calls as f64;
    let concurrent_commands = (redis_commands(upstream) - commands) as f64 / calls as f64;
    // One session, one call at a time: every round trip shows.
    let before = count.load(Ordering::Relaxed);
    let (_, calls) = legacy_rate(&ports, 1).await;
    let legacy_trips = (count.load(Ordering::Relaxed) - before) as f64 / calls as f64;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = count.load(Ordering::Relaxed);
    modern_calls(&ports, 3000).await;
    let modern_trips = (count.load(Ordering::Relaxed) - before) as f64 / 3000.0;

    report("legacy calls/s, 1 node in memory (floor)", floor, floor, "calls/s", 1.0, "floor", true);
    report("legacy calls/s, 1 node on Redis", on_redis, floor, "calls/s", on_redis / floor, "reported", true);
    report("legacy calls/s, 3 nodes on Redis", on_three, floor, "calls/s", on_three / floor, "reported", true);
    // The heartbeats of three nodes (a SET per node per second) and the first visit of the
    // session to each node (one more read) are counted too.
    let legacy_ok = legacy_trips <= 1.05;
    let modern_ok = modern_trips < 0.01;
    println!(
        "16 sessions at once, 3 nodes: {concurrent_commands:.2} Redis commands and {concurrent_bursts:.3} writes to Redis per call (pipelined across requests)"
    );
    println!(
        "Redis round trips per legacy call, one at a time, 3 nodes: {legacy_trips:.3} (target <= 1) {}",
        verdict(legacy_ok)
    );
    println!("Redis round trips per 2026-07-28 call, 3 nodes: {modern_trips:.4} (target 0) {}", verdict(modern_ok));
    drop(three);
    drop(redis);
    let ok = legacy_ok && modern_ok;
    if !ok && !no_fail {
        std::process::exit(1);
    }
}

/// Redis's `total_commands_processed`.
fn redis_commands(port: u16) -> u64 {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"INFO stats\r\n").unwrap();
    let mut buf = vec![0u8; 16 * 1024];
    let n = s.read(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    text.lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "OK"
    } else {
        "MISSED"
    }
}
