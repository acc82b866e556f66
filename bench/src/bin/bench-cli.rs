//! Benchmarks the `mcp` command's overhead: `mcp call echo text=hi -- mcp-example`, whole
//! process start to exit, against spawning `mcp-example` and reading its initialize response
//! (the least any client must do). Target: at most twice. Exits 1 if missed (`--no-fail`: 0).
//!
//! Run: `cargo build --release -p mcp-cli -p mcp-example -p mcp-bench && target/release/bench-cli`
#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use std::process::{Command, Stdio};

use mcp_bench::{median, report, sibling_binary, time, StdioProcess};

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;

fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    let mcp = sibling_binary("mcp");
    let example = sibling_binary("mcp-example");
    let pinned = std::env::args().any(|a| a == "--pinned");
    if pinned {
        mcp_bench::pin_to_one_cpu();
    }
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    // The least any separate client process can cost: starting and reaping a process that does
    // nothing, plus the server's exit (which a stdio client should wait for, per the spec).
    let (mut empty_process, mut server_exit, mut version) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..40 {
        let (d, out) = time(|| {
            Command::new(&mcp)
                .args(["call", "echo", "text=hi", "--"])
                .arg(&example)
                .stdin(Stdio::null())
                .output()
                .unwrap()
        });
        assert!(out.status.success() && out.stdout == b"hi\n", "{out:?}");
        ours.push(d);
        let (d, p) = time(|| {
            let mut p = StdioProcess::spawn(&example, &[]);
            p.send(INIT);
            p.recv();
            p
        });
        floor.push(d);
        server_exit.push(time(|| p.finish()).0);
        empty_process.push(time(|| Command::new("true").status().unwrap()).0);
        version.push(time(|| Command::new(&mcp).arg("--version").output().unwrap()).0);
    }
    let (ours, floor) = (median(ours), median(floor));
    let ratio = ours.as_secs_f64() / floor.as_secs_f64();
    let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
    report(
        if pinned { "mcp call, start to exit, one core (us)" } else { "mcp call, start to exit (us)" },
        us(ours),
        us(floor),
        "us",
        ratio,
        "<= 2.00 x spawn+initialize",
        ratio <= 2.0,
    );
    let bound = (median(empty_process.clone()) + median(server_exit.clone())).as_secs_f64() / floor.as_secs_f64() + 1.0;
    println!(
        "{:<44} {bound:.2} x (floor + an empty process + the server's exit)",
        "  least possible for a separate process"
    );
    println!(
        "  parts (us): empty process {:.0}, server exit {:.0}, `mcp --version` {:.0}",
        us(median(empty_process.clone())),
        us(median(server_exit.clone())),
        us(median(version))
    );
    if ratio > 2.0 && !no_fail {
        std::process::exit(1);
    }
}
