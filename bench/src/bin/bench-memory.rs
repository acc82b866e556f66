//! The stdio server's peak memory under huge messages: `mcp-example` is sent a session of 8 MiB
//! lines (an 8 MiB text echoed back, wide and deep argument values, an 8 MiB resource URI, 8 MiB
//! of invalid JSON, and the echo again), and its peak resident set (VmHWM) is read after each.
//! Target: under 40 MiB for the whole session. Exits 1 if missed (`--no-fail`: always 0).
//!
//! Run: `cargo build --profile dist -p mcp-example -p mcp-bench && target/dist/bench-memory`

#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use mcp_bench::{sibling_binary, StdioProcess};

const MIB: usize = 1024 * 1024;
const LINE: usize = 8 * MIB;

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;

fn call(id: u32, arguments: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{arguments}}}}}"#)
}

/// An 8 MiB text with characters that must be escaped on the way back.
fn big_text() -> String {
    let unit = "lorem \"ipsum\" dolor\\sit amet, é ✓\n";
    unit.repeat(LINE / unit.len())
}

/// An argument object padded with `extra` to about 8 MiB: many small numbers (wide).
fn wide() -> String {
    let numbers = vec!["12345"; LINE / 6].join(",");
    format!(r#"{{"text":"w","extra":[{numbers}]}}"#)
}

/// Nested objects, 60 levels deep, repeated until about 8 MiB (deep and wide).
fn deep() -> String {
    let mut one = String::from("1");
    for level in 0..60 {
        one = format!(r#"{{"k{level}":[{one},"v"]}}"#);
    }
    let many = vec![one.as_str(); LINE / one.len()].join(",");
    format!(r#"{{"text":"d","extra":[{many}]}}"#)
}

fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    let mut server = StdioProcess::spawn(&sibling_binary("mcp-example"), &[]);
    server.send(INIT);
    server.recv();
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let start = server.peak_rss_kib();
    println!("{:<52} {:>8.1} MiB", "peak RSS after initialize", start as f64 / 1024.0);

    let text = big_text();
    let echo = call(1, &serde_json::json!({ "text": text }).to_string());
    let uri = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{{"uri":"example://{}"}}}}"#,
        "u".repeat(LINE)
    );
    let steps: Vec<(&str, String)> = vec![
        ("an 8 MiB text echoed back", echo.clone()),
        ("8 MiB of numbers in the arguments (wide)", call(2, &wide())),
        ("8 MiB of nested objects in the arguments (deep)", call(3, &deep())),
        ("an 8 MiB resource URI", uri),
        ("8 MiB of invalid JSON", format!("{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x{}", "y".repeat(LINE))),
        ("the 8 MiB echo again", echo),
    ];
    let mut peak = start;
    for (name, line) in &steps {
        server.send(line);
        let answer = server.recv();
        assert!(answer.starts_with('{'), "{name}: not a JSON answer");
        if name.contains("echo") {
            assert!(answer.len() > LINE, "{name}: the text did not come back whole");
        }
        peak = server.peak_rss_kib();
        println!(
            "{:<52} {:>8.1} MiB  (answer {} KiB)",
            format!("peak RSS after {name}"),
            peak as f64 / 1024.0,
            answer.len() / 1024
        );
    }
    let now = server.rss_kib();
    server.finish();
    let mib = peak as f64 / 1024.0;
    let ok = mib < 40.0;
    println!(
        "{:<52} {:>8.1} MiB  (RSS at the end {:.1} MiB)",
        "session of 8 MiB lines: peak RSS",
        mib,
        now as f64 / 1024.0
    );
    println!("target: peak under 40 MiB {}", if ok { "OK" } else { "MISSED" });
    if !ok && !no_fail {
        std::process::exit(1);
    }
}
