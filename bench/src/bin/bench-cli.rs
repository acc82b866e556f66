//! Benchmarks the `mcp` command's overhead: `mcp call echo text=hi -- mcp-example`, whole
//! process start to exit, against spawning `mcp-example` and reading its initialize response
//! (the least any client must do). Target: at most twice. Exits 1 if missed (`--no-fail`: 0).
//!
//! `mcp` remembers the server's era after its first run (its memory lives in a temporary
//! directory here); the run with `--reprobe` shows what a first contact costs (the
//! `server/discover` probe answered before the call goes out).
//!
//! Run: `cargo build --profile dist -p mcp-stack-cli -p mcp-example -p mcp-bench && target/dist/bench-cli`
//! (`--mcp PATH` measures another build of `mcp`, e.g. the static one of
//! `scripts/build-static-mcp.sh`).
#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use mcp_bench::{median, report, sibling_binary, time, StdioProcess};

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const ROUNDS: usize = 100;

/// `mcp [extra] call echo text=hi -- mcp-example`, timed from spawn to reaped.
fn mcp_call(mcp: &Path, example: &Path, cache: &Path, extra: &[&str]) -> Duration {
    let (d, out) = time(|| {
        Command::new(mcp)
            .args(extra)
            .args(["call", "echo", "text=hi", "--"])
            .arg(example)
            .env("XDG_CACHE_HOME", cache)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    });
    assert!(out.status.success() && out.stdout == b"hi\n", "{out:?}");
    d
}

fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    let pinned = std::env::args().any(|a| a == "--pinned");
    let args: Vec<String> = std::env::args().collect();
    let mcp = match args.iter().position(|a| a == "--mcp") {
        Some(i) => std::path::PathBuf::from(args.get(i + 1).expect("--mcp PATH")),
        None => sibling_binary("mcp"),
    };
    let example = sibling_binary("mcp-example");
    if pinned {
        mcp_bench::pin_to_one_cpu();
    }
    let cache = std::env::temp_dir().join(format!("bench-cli-{}", std::process::id()));
    mcp_call(&mcp, &example, &cache, &[]); // learns the era
    let (mut ours, mut first_contact, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    // The least any separate client process can cost: starting and reaping a process that does
    // nothing, plus the server's exit (which a stdio client should wait for, per the spec).
    let (mut empty_process, mut server_exit, mut version) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        ours.push(mcp_call(&mcp, &example, &cache, &[]));
        let (d, p) = time(|| {
            let mut p = StdioProcess::spawn(&example, &[]);
            p.send(INIT);
            p.recv();
            p
        });
        floor.push(d);
        server_exit.push(time(|| p.finish()).0);
        first_contact.push(mcp_call(&mcp, &example, &cache, &["--reprobe"]));
        empty_process.push(time(|| Command::new("true").status().unwrap()).0);
        version.push(time(|| Command::new(&mcp).arg("--version").output().unwrap()).0);
    }
    let _ = std::fs::remove_dir_all(&cache);
    let floor = median(floor);
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let ratio = |d: Duration| d.as_secs_f64() / floor.as_secs_f64();
    let ours = median(ours);
    report(
        if pinned { "mcp call, start to exit, one core (us)" } else { "mcp call, start to exit (us)" },
        us(ours),
        us(floor),
        "us",
        ratio(ours),
        "<= 2.00 x spawn+initialize",
        ratio(ours) <= 2.0,
    );
    let (empty_process, server_exit) = (median(empty_process), median(server_exit));
    println!("  first contact (--reprobe)                  {:.2} x", ratio(median(first_contact)));
    println!(
        "  least possible for a separate process      {:.2} x (floor + an empty process + the server's exit)",
        ratio(floor + empty_process + server_exit)
    );
    println!(
        "  parts (us): empty process {:.0}, server exit {:.0}, `mcp --version` {:.0}",
        us(empty_process),
        us(server_exit),
        us(median(version))
    );
    if ratio(ours) > 2.0 && !no_fail {
        std::process::exit(1);
    }
}
