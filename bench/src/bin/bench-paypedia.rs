//! Benchmarks paypedia: IBAN validation throughput on one core (bank lookup included), and
//! spawn-to-first-`tools/call`-answer against `mcp-example` measured in the same run.
//! Exits 1 if a target is missed (with `--no-fail`, always 0).
//!
//! Run: `cargo build --profile dist -p paypedia -p mcp-example -p mcp-bench && target/dist/bench-paypedia`
#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use mcp_bench::{median, report, sibling_binary, time, StdioProcess};
use paypedia::{iban, Data};

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The valid IBANs of the test vectors, plus a few invalid ones, as the workload.
fn workload() -> Vec<Vec<u8>> {
    let text = include_str!("../../../servers/paypedia/data/iban_test_vectors.csv");
    text.lines()
        .skip(1)
        .filter_map(|l| l.split(',').next())
        .filter(|s| !s.is_empty())
        .map(|s| s.as_bytes().to_vec())
        .collect()
}

fn throughput() -> f64 {
    let data = Data::embedded();
    let ibans = workload();
    // Warm up: the formats are parsed on first use.
    for iban in &ibans {
        black_box(iban::check(data, iban));
    }
    let mut checked = 0u64;
    let mut banks = 0u64;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        for iban in &ibans {
            let check = iban::check(data, black_box(iban));
            banks += check.bank.is_some() as u64;
            checked += 1;
        }
    }
    black_box(banks);
    checked as f64 / start.elapsed().as_secs_f64()
}

fn first_call(path: &Path, args: &[&str], call: &str, runs: usize) -> Vec<Duration> {
    (0..runs)
        .map(|_| {
            let (d, p) = time(|| {
                let mut p = StdioProcess::spawn(path, args);
                p.send(INIT);
                p.recv();
                p.send(INITIALIZED);
                p.send(call);
                let answer = p.recv();
                assert!(answer.contains("\"id\":1") && !answer.contains("isError\":true"), "{answer}");
                p
            });
            p.finish();
            d
        })
        .collect()
}

fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    let mut ok = true;

    mcp_bench::pin_to_one_cpu();
    let rate = throughput();
    let hit = rate >= 2_000_000.0;
    ok &= hit;
    println!(
        "{:<44} ours {:>12.0} IBANs/s on one core, bank lookup included (target >= 2,000,000) {}",
        "IBAN validation",
        rate,
        if hit { "OK" } else { "MISSED" }
    );

    let paypedia = sibling_binary("paypedia");
    let example = sibling_binary("mcp-example");
    let check = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"iban_check","arguments":{"input":"FR7630006000011234567890189"}}}"#;
    let echo =
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#;
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    for _ in 0..30 {
        ours.extend(first_call(&paypedia, &[], check, 1));
        floor.extend(first_call(&example, &[], echo, 1));
    }
    let (ours, floor) = (median(ours), median(floor));
    let ratio = ours.as_secs_f64() / floor.as_secs_f64();
    ok &= ratio <= 1.5;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    report(
        "spawn to first tools/call answer (us)",
        us(ours),
        us(floor),
        "us",
        ratio,
        "<= 1.50 x mcp-example",
        ratio <= 1.5,
    );

    if !ok && !no_fail {
        std::process::exit(1);
    }
}
