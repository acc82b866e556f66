//! Soak test of legacy HTTP sessions: opens 10,000 sessions on `mcp-example --http` and abandons
//! them without DELETE, prints the memory each live session costs, then waits for the idle
//! reaper and checks the server's resident memory is back within 10% of where it started.
//! Bounded: 10,000 requests to loopback and about 15 seconds. Exits 1 if a target is missed.
#![allow(clippy::print_stdout)] // reports on stdout

use std::time::{Duration, Instant};

use mcp_bench::http::{post_request, Conn, HttpProcess};
use mcp_bench::{rss_field, sibling_binary};

const SESSIONS: usize = 10_000;
const IDLE_SECS: u64 = 4;

fn init(i: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"soak-{i}","version":"1"}}}}}}"#
    )
}

async fn open_sessions(port: u16, from: usize, count: usize) {
    let mut conns = Vec::new();
    for _ in 0..8 {
        conns.push(Conn::open(port).await);
    }
    let mut tasks = Vec::new();
    for (c, mut conn) in conns.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            for i in (from + c..from + count).step_by(8) {
                let (status, body) = conn.round_trip(&post_request(port, &[], &init(i))).await;
                assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let server = HttpProcess::start(
        &sibling_binary("mcp-example"),
        &["--http", "{addr}", "--session-idle", &IDLE_SECS.to_string()],
    );
    let pid = server.child.id();
    // Warm up: allocator arenas, code pages, one round of sessions reaped.
    open_sessions(server.port, 0, 200).await;
    tokio::time::sleep(Duration::from_secs(IDLE_SECS + 2)).await;
    let base = rss_field(pid, "VmRSS:");
    let start = Instant::now();
    open_sessions(server.port, 1_000, SESSIONS).await;
    let full = rss_field(pid, "VmRSS:");
    let per_session = (full.saturating_sub(base)) as f64 * 1024.0 / SESSIONS as f64;
    println!("opened {SESSIONS} sessions in {:.2}s", start.elapsed().as_secs_f64());
    println!(
        "RSS: {base} KiB before, {full} KiB with {SESSIONS} live sessions: {per_session:.0} bytes per session (target <= 1024) {}",
        if per_session <= 1024.0 { "OK" } else { "MISSED" }
    );
    let deadline = Instant::now() + Duration::from_secs(IDLE_SECS * 4);
    let mut after = full;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        after = rss_field(pid, "VmRSS:");
        if after as f64 <= base as f64 * 1.10 {
            break;
        }
    }
    let back = after as f64 <= base as f64 * 1.10;
    println!(
        "RSS after the idle timeout: {after} KiB ({:+.1}% of where it started; target within 10%) {}",
        (after as f64 / base as f64 - 1.0) * 100.0,
        if back { "OK" } else { "MISSED" }
    );
    let ok = per_session <= 1024.0 && back;
    println!("soak: {}", if ok { "1 passed, 0 failed" } else { "0 passed, 1 failed" });
    drop(server); // killed before exit, which runs no destructors
    if !ok {
        std::process::exit(1);
    }
}
