//! Benchmarks two servers over stdio against the `stdio-floor` program, in one run: pipelined
//! echo calls (64 in flight), sequential call latency, spawn-to-initialize, and each server's
//! peak memory after 100,000 calls. The servers are `small-server` (the README's stdio server:
//! the library with default features off) and `mcp-example` (every transport, OAuth, Redis and
//! the command line in one binary); the targets apply to both. Prints ratios and exits 1 if a
//! target is missed (with `--no-fail`, always 0).
//!
//! Run (each server on its own, so that cargo does not give it the features of the packages built
//! beside it; the benchmark refuses a server that has them):
//!
//! ```text
//! cargo build --profile dist -p mcp-bench-small-server
//! cargo build --profile dist -p mcp-example
//! cargo build --profile dist -p mcp-bench && target/dist/bench-stdio
//! ```

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

/// Median round trip of one call at a time for each server, measured in alternating rounds so
/// that drift in the machine's load hits all alike.
fn sequential(paths: &[&Path], rounds: usize, calls_per_round: usize) -> Vec<Duration> {
    let mut servers: Vec<StdioProcess> = paths.iter().map(|p| start(p)).collect();
    let mut samples = vec![Vec::new(); paths.len()];
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
    samples.into_iter().map(median).collect()
}

/// Median time from spawn to the initialize response for each server, in alternating runs.
fn spawn_to_init(paths: &[&Path], runs: usize) -> Vec<Duration> {
    let mut samples = vec![Vec::new(); paths.len()];
    for _ in 0..runs {
        for (path, samples) in paths.iter().zip(samples.iter_mut()) {
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
    samples.into_iter().map(median).collect()
}

/// One server measured: its name, where it is, and its figures.
struct Subject {
    name: &'static str,
    path: std::path::PathBuf,
    throughput: Vec<f64>,
    peak_kib: u64,
}

/// Ends the run when `small-server` was built together with other packages, whose features
/// cargo then gave it too: it would no longer be the small server it stands for.
fn refuse_a_unified_build(path: &Path) {
    let out = std::process::Command::new(path).arg("--library-features").output().expect("run small-server");
    let features = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    if !features.is_empty() {
        eprintln!(
            "small-server was built with the library's features {features}, given by the packages built beside it;\n\
             build it alone first: cargo build --profile dist -p mcp-bench-small-server"
        );
        std::process::exit(2);
    }
}

/// Ends the run when `mcp-example` carries library features it does not ask for, which cargo
/// gives it when it is built together with `mcp-bench` (the client, SQLite) or the whole
/// workspace (`jsonschema` too): its start-up and memory would be another binary's.
fn refuse_a_unified_example(path: &Path) {
    let out = std::process::Command::new(path).arg("--version").output().expect("run mcp-example --version");
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(features) = text.lines().find_map(|l| l.split_once("features: ")).map(|(_, f)| f.trim()) else {
        eprintln!("mcp-example --version names no library features: build it from this checkout");
        std::process::exit(2);
    };
    let foreign: Vec<&str> = features.split(", ").filter(|f| ["client", "sqlite", "jsonschema"].contains(f)).collect();
    if !foreign.is_empty() {
        eprintln!(
            "mcp-example was built with the library's features {}, given by the packages built beside it;\n\
             build it alone first: cargo build --profile dist -p mcp-example",
            foreign.join(", ")
        );
        std::process::exit(2);
    }
}

fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    // Both servers are built with the features they use: the README's small server, and
    // `mcp-example` with the command line, every transport, OAuth and Redis.
    let mut subjects = [
        Subject { name: "small-server", path: sibling_binary("small-server"), throughput: vec![], peak_kib: 0 },
        Subject { name: "mcp-example", path: sibling_binary("mcp-example"), throughput: vec![], peak_kib: 0 },
    ];
    let floor = sibling_binary("stdio-floor");
    refuse_a_unified_build(&subjects[0].path);
    refuse_a_unified_example(&subjects[1].path);
    let mut ok = true;

    // Warm up every server (page cache, CPU frequency).
    for subject in &subjects {
        pipelined(&subject.path, 5_000, 64).1.finish();
    }
    pipelined(&floor, 5_000, 64).1.finish();

    // Throughput: three alternating rounds each, the median of each. The memory reading is each
    // server's peak after its first round of 100,000 calls.
    let calls = 100_000;
    let mut floor_runs = Vec::new();
    for round in 0..3 {
        for subject in subjects.iter_mut() {
            let (tput, server) = pipelined(&subject.path, calls, 64);
            if round == 0 {
                subject.peak_kib = server.peak_rss_kib();
            }
            server.finish();
            subject.throughput.push(tput);
        }
        let (tput, f) = pipelined(&floor, calls, 64);
        f.finish();
        floor_runs.push(tput);
    }
    let middle = |runs: &mut Vec<f64>| {
        runs.sort_by(f64::total_cmp);
        runs[runs.len() / 2]
    };
    let floor_tput = middle(&mut floor_runs);
    for subject in subjects.iter_mut() {
        let tput = middle(&mut subject.throughput);
        let ratio = tput / floor_tput;
        ok &= ratio >= 0.40;
        let name = format!("{}: pipelined echo, 64 in flight (calls/s)", subject.name);
        report(&name, tput, floor_tput, "calls/s", ratio, ">= 0.40", ratio >= 0.40);
    }

    mcp_bench::pin_to_one_cpu(); // from here on: latency, measured on one core (see the function)
    let mut paths: Vec<&Path> = subjects.iter().map(|s| s.path.as_path()).collect();
    paths.push(&floor);
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let p50 = sequential(&paths, 20, 200);
    let init = spawn_to_init(&paths, 60);
    let floor_at = paths.len() - 1;
    for (i, subject) in subjects.iter().enumerate() {
        let ratio = p50[i].as_secs_f64() / p50[floor_at].as_secs_f64();
        ok &= ratio <= 1.5;
        let name = format!("{}: sequential echo, p50 latency (us)", subject.name);
        report(&name, us(p50[i]), us(p50[floor_at]), "us", ratio, "<= 1.50", ratio <= 1.5);
    }
    for (i, subject) in subjects.iter().enumerate() {
        let ratio = init[i].as_secs_f64() / init[floor_at].as_secs_f64();
        ok &= ratio <= 1.5;
        let name = format!("{}: spawn to initialize response (us)", subject.name);
        report(&name, us(init[i]), us(init[floor_at]), "us", ratio, "<= 1.50", ratio <= 1.5);
    }
    for subject in &subjects {
        let mib = subject.peak_kib as f64 / 1024.0;
        let within = mib <= 5.0;
        ok &= within;
        println!(
            "{:<44} ours {mib:>12.2} MiB peak RSS after {calls} calls (target <= 5 MiB) {}",
            format!("{}: memory", subject.name),
            if within { "OK" } else { "MISSED" }
        );
    }

    if !ok && !no_fail {
        std::process::exit(1);
    }
}
