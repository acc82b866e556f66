//! Benchmarks `mcp-example --http` against `http-floor` (hyper + serde_json, no framework) in
//! one run: `echo` tool calls (2026-07-28, stateless) over keep-alive connections at 1, 16 and
//! 64 connections, printed as ratios. Exits 1 if a target is missed (`--no-fail`: always 0).
//!
//! Run: `cargo build --release -p mcp-example -p mcp-bench && target/release/bench-http`
#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use std::time::Duration;

use mcp_bench::http::{load, post_request, HttpProcess};
use mcp_bench::{report, sibling_binary};

const BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    let ours = HttpProcess::start(&sibling_binary("mcp-example"), &["--http", "{addr}"]);
    let floor = HttpProcess::start(&sibling_binary("http-floor"), &["{addr}"]);
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")];
    let ours_req = post_request(ours.port, &headers, BODY);
    let floor_req = post_request(floor.port, &headers, BODY);
    load(ours.port, &ours_req, 4, Duration::from_millis(500)).await; // warm-up
    load(floor.port, &floor_req, 4, Duration::from_millis(500)).await;
    let mut ok = true;
    for (conns, target) in [(1, 0.60), (16, 0.50), (64, 0.50)] {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            a.push(load(ours.port, &ours_req, conns, Duration::from_secs(1)).await);
            b.push(load(floor.port, &floor_req, conns, Duration::from_secs(1)).await);
        }
        a.sort_by(f64::total_cmp);
        b.sort_by(f64::total_cmp);
        let ratio = a[1] / b[1];
        ok &= ratio >= target;
        let name = format!("echo over HTTP, {conns} connection(s) (req/s)");
        report(&name, a[1], b[1], "req/s", ratio, &format!(">= {target:.2}"), ratio >= target);
    }
    if !ok && !no_fail {
        std::process::exit(1);
    }
}
