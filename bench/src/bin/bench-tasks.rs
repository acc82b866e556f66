//! Tasks, measured on the real binaries over stdio (2026-07-28, tasks extension declared):
//!
//! - `iban_check_batch` in `paypedia` over 1,000,000 generated IBANs (of several countries, in a
//!   file): time from the call to the completed task, and the server's peak RSS. Targets: under
//!   2 s and under 200 MiB.
//! - what running a trivial tool as a task costs (create, poll, result) against a plain call of a
//!   trivial tool, in `mcp-server-conformance`: medians over many rounds, as a ratio.
//!
//! Exits 1 if a target is missed (`--no-fail`: always 0).
//! Run: `cargo build --profile dist --workspace && target/dist/bench-tasks`

#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use std::io::Write;
use std::time::{Duration, Instant};

use mcp_bench::{median, sibling_binary, StdioProcess};
use serde_json::{json, Value};

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "bench-tasks", "version": "1"}
    })
}

fn request(server: &mut StdioProcess, id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    server.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
    loop {
        let message: Value = serde_json::from_str(&server.recv()).expect("JSON");
        if message["id"] == id {
            return message["result"].clone();
        }
    }
}

/// Polls `tasks/get` every `every` until the task ends.
fn wait(server: &mut StdioProcess, id: &mut u64, task: &str, every: Duration) -> Value {
    loop {
        *id += 1;
        let got = request(server, *id, "tasks/get", json!({"taskId": task}));
        if ["completed", "failed", "cancelled"].contains(&got["status"].as_str().unwrap_or_default()) {
            return got;
        }
        std::thread::sleep(every);
    }
}

/// 1,000,000 IBANs of several countries with valid ISO check digits, one per line.
fn generate(path: &std::path::Path) {
    let shapes = [
        ("DE", "37040044", 10),
        ("FR", "3000600001", 13),
        ("GB", "NWBK601613", 8),
        ("ES", "21000418", 12),
        ("NL", "ABNA", 10),
    ];
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut seed: u64 = 2026;
    for n in 0..1_000_000 {
        let (cc, bank, digits) = shapes[n % shapes.len()];
        let mut bban = String::from(bank);
        for _ in 0..digits {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            bban.push((b'0' + ((seed >> 33) % 10) as u8) as char);
        }
        let rearranged: String = format!("{bban}{cc}00");
        let remainder = rearranged.chars().fold(0u32, |r, c| {
            let v = c.to_digit(36).unwrap();
            if v < 10 {
                (r * 10 + v) % 97
            } else {
                (r * 100 + v) % 97
            }
        });
        writeln!(out, "{cc}{:02}{bban}", 98 - remainder).unwrap();
    }
    out.flush().unwrap();
}

fn batch(no_fail: &mut bool) {
    let dir = std::env::temp_dir().join(format!("bench-tasks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ibans.txt");
    generate(&file);
    let input_dir = dir.to_str().unwrap();
    let mut server =
        StdioProcess::spawn(&sibling_binary("paypedia"), &["--input-dir", input_dir, "--report-dir", input_dir]);
    let uri = format!("file://{}", file.display());
    let started = Instant::now();
    let created = request(&mut server, 1, "tools/call", json!({"name": "iban_check_batch", "arguments": {"uri": uri}}));
    let first = started.elapsed();
    let task = created["taskId"].as_str().expect("a task").to_owned();
    let mut id = 1;
    let done = wait(&mut server, &mut id, &task, Duration::from_millis(10));
    let elapsed = started.elapsed();
    let peak = server.peak_rss_kib() as f64 / 1024.0;
    server.finish();
    let summary = &done["result"]["structuredContent"];
    assert_eq!(summary["total"], 1_000_000, "{done}");
    let _ = std::fs::remove_dir_all(&dir);
    let time_ok = elapsed < Duration::from_secs(2);
    let rss_ok = peak < 200.0;
    *no_fail &= time_ok && rss_ok;
    println!(
        "iban_check_batch, 1,000,000 IBANs ({} valid): first answer {:.0} ms",
        summary["valid"],
        first.as_secs_f64() * 1e3
    );
    println!(
        "    completed after {:.2} s (target < 2 s) {}, server peak RSS {peak:.1} MiB (target < 200 MiB) {}",
        elapsed.as_secs_f64(),
        verdict(time_ok),
        verdict(rss_ok)
    );
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "OK"
    } else {
        "MISSED"
    }
}

fn overhead() {
    let mut server = StdioProcess::spawn(&sibling_binary("mcp-server-conformance"), &[]);
    let (mut plain, mut tasks) = (Vec::new(), Vec::new());
    let mut id = 10;
    for round in 0..400 {
        id += 1;
        let start = Instant::now();
        let r = request(&mut server, id, "tools/call", json!({"name": "greet", "arguments": {"name": "bench"}}));
        assert_eq!(r["content"][0]["text"], "Hello, bench!");
        let plain_time = start.elapsed();
        id += 1;
        let start = Instant::now();
        let created = request(&mut server, id, "tools/call", json!({"name": "trivial_task", "arguments": {}}));
        let task = created["taskId"].as_str().expect("a task").to_owned();
        let done = wait(&mut server, &mut id, &task, Duration::ZERO);
        assert_eq!(done["status"], "completed");
        let task_time = start.elapsed();
        if round >= 50 {
            plain.push(plain_time);
            tasks.push(task_time);
        }
    }
    server.finish();
    let (p, t) = (median(plain), median(tasks));
    println!(
        "trivial tool as a task (create + poll to completed) {:.1} us vs a plain call {:.1} us: {:.1}x",
        t.as_secs_f64() * 1e6,
        p.as_secs_f64() * 1e6,
        t.as_secs_f64() / p.as_secs_f64()
    );
}

fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    let mut ok = true;
    batch(&mut ok);
    overhead();
    if !ok && !no_fail {
        std::process::exit(1);
    }
}
