//! Benchmarks `mcp-example` over stdio against the `stdio-floor` program, in one run:
//! pipelined echo calls (64 in flight), sequential call latency, spawn-to-initialize, and the
//! server's peak memory after 100,000 calls. Prints ratios and exits 1 if a target is missed
//! (with `--no-fail`, always 0).
//!
//! Run: `cargo build --profile dist -p mcp-example -p mcp-bench && target/dist/bench-stdio`

#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use mcp_bench::{median, report, sibling_binary, time, StdioProcess};

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn echo(id: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}}}}}}"#
    )
}

fn start(path: &Path) -> StdioProcess {
    let mut p = StdioProcess::spawn(path, &[]);
    p.send(INIT);
    p.recv();
    p.send(INITIALIZED);
    p
}

/// Calls per second with `window` requests in flight.
fn pipelined(path: &Path, calls: usize, window: usize) -> (f64, StdioProcess) {
    let mut p = start(path);
    let mut stdout = std::mem::replace(&mut p.stdout, std::io::BufReader::new(empty_stdout()));
    let (tx, rx) = mpsc::sync_channel::<()>(window);
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut line = String::new();
        for _ in 0..calls {
            line.clear();
            stdout.read_line(&mut line).unwrap();
            assert!(line.contains("hello"), "unexpected response {line}");
            let _ = tx.send(());
        }
        stdout
    });
    let (elapsed, ()) = time(|| {
        use std::io::Write;
        let mut in_flight = 0;
        for id in 1..=calls {
            while in_flight >= window {
                rx.recv().unwrap();
                in_flight -= 1;
            }
            p.stdin.write_all(echo(id).as_bytes()).unwrap();
            p.stdin.write_all(b"\n").unwrap();
            in_flight += 1;
            if in_flight >= window || id == calls {
                p.stdin.flush().unwrap();
            }
            while let Ok(()) = rx.try_recv() {
                in_flight -= 1;
            }
        }
        p.stdin.flush().unwrap();
        while in_flight > 0 {
            rx.recv().unwrap();
            in_flight -= 1;
        }
    });
    p.stdout = reader.join().unwrap();
    (calls as f64 / elapsed.as_secs_f64(), p)
}

/// A placeholder reader while the real stdout is on the reader thread.
fn empty_stdout() -> std::process::ChildStdout {
    let mut child = std::process::Command::new("true").stdout(std::process::Stdio::piped()).spawn().unwrap();
    let out = child.stdout.take().unwrap();
    let _ = child.wait();
    out
}

/// Median round trip of one call at a time, for both servers, measured in alternating rounds so
/// that drift in the machine's load hits both alike.
fn sequential(ours: &Path, floor: &Path, rounds: usize, calls_per_round: usize) -> (Duration, Duration) {
    let mut servers = [start(ours), start(floor)];
    let mut samples = [Vec::new(), Vec::new()];
    let mut id = 0;
    for _ in 0..rounds {
        for (server, samples) in servers.iter_mut().zip(samples.iter_mut()) {
            for _ in 0..calls_per_round {
                id += 1;
                let line = echo(id);
                let (d, _) = time(|| {
                    server.send(&line);
                    server.recv()
                });
                samples.push(d);
            }
        }
    }
    for server in servers {
        server.finish();
    }
    let [a, b] = samples;
    (median(a), median(b))
}

/// Median time from spawn to the initialize response, alternating between the two servers.
fn spawn_to_init(ours: &Path, floor: &Path, runs: usize) -> (Duration, Duration) {
    let mut samples = [Vec::new(), Vec::new()];
    for _ in 0..runs {
        for (path, samples) in [ours, floor].into_iter().zip(samples.iter_mut()) {
            let (d, p) = time(|| {
                let mut p = StdioProcess::spawn(path, &[]);
                p.send(INIT);
                p.recv();
                p
            });
            p.finish();
            samples.push(d);
        }
    }
    let [a, b] = samples;
    (median(a), median(b))
}

fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    let ours = sibling_binary("mcp-example");
    let floor = sibling_binary("stdio-floor");
    let mut ok = true;

    // Warm up both (page cache, CPU frequency).
    pipelined(&ours, 5_000, 64).1.finish();
    pipelined(&floor, 5_000, 64).1.finish();

    // Throughput: three alternating rounds each, the median of each side. The memory reading is
    // the server's peak after its first round of 100,000 calls.
    let calls = 100_000;
    let mut ours_runs = Vec::new();
    let mut floor_runs = Vec::new();
    let mut peak_kib = 0;
    for round in 0..3 {
        let (tput, server) = pipelined(&ours, calls, 64);
        if round == 0 {
            peak_kib = server.peak_rss_kib();
        }
        server.finish();
        ours_runs.push(tput);
        let (tput, f) = pipelined(&floor, calls, 64);
        f.finish();
        floor_runs.push(tput);
    }
    ours_runs.sort_by(f64::total_cmp);
    floor_runs.sort_by(f64::total_cmp);
    let (ours_tput, floor_tput) = (ours_runs[1], floor_runs[1]);
    let ratio = ours_tput / floor_tput;
    ok &= ratio >= 0.40;
    report("pipelined echo, 64 in flight (calls/s)", ours_tput, floor_tput, "calls/s", ratio, ">= 0.40", ratio >= 0.40);

    mcp_bench::pin_to_one_cpu(); // from here on: latency, measured on one core (see the function)
    let (ours_p50, floor_p50) = sequential(&ours, &floor, 20, 200);
    let ratio = ours_p50.as_secs_f64() / floor_p50.as_secs_f64();
    ok &= ratio <= 1.5;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    report("sequential echo, p50 latency (us)", us(ours_p50), us(floor_p50), "us", ratio, "<= 1.50", ratio <= 1.5);

    let (ours_init, floor_init) = spawn_to_init(&ours, &floor, 60);
    let ratio = ours_init.as_secs_f64() / floor_init.as_secs_f64();
    ok &= ratio <= 1.5;
    report("spawn to initialize response (us)", us(ours_init), us(floor_init), "us", ratio, "<= 1.50", ratio <= 1.5);

    let mib = peak_kib as f64 / 1024.0;
    let within = mib <= 8.0;
    ok &= within;
    println!(
        "{:<44} ours {mib:>12.2} MiB peak RSS after {calls} calls (target <= 8 MiB) {}",
        "memory",
        if within { "OK" } else { "MISSED" }
    );

    if !ok && !no_fail {
        std::process::exit(1);
    }
}
