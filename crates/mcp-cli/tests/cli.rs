//! `mcp` end to end: real processes and sockets against `mcp-example`, over stdio and HTTP in
//! both eras, `--json`, `--config`, and each exit code from a real failure.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

fn mcp() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcp"))
}

/// The `mcp-example` binary next to `mcp`, brought up to date once per test run (cargo does not
/// rebuild another package's binary for this package's tests).
fn example() -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut args = vec!["build", "-q", "-p", "mcp-example"];
        if mcp().parent().is_some_and(|d| d.ends_with("release")) {
            args.push("--release");
        }
        let status = Command::new(cargo).args(&args).status().unwrap();
        assert!(status.success(), "building mcp-example");
    });
    mcp().with_file_name("mcp-example")
}

fn run(args: &[&str]) -> Output {
    Command::new(mcp()).args(args).stdin(Stdio::null()).output().unwrap()
}

fn stdio(args: &[&str]) -> Output {
    let example = example();
    let mut all: Vec<&str> = args.to_vec();
    all.push("--");
    all.push(example.to_str().unwrap());
    run(&all)
}

struct Http(Child, String);

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `mcp-example --http` on a port the OS picks, read from its "serving MCP on URL" line.
fn http_server() -> Http {
    let mut child = Command::new(example()).args(["--http", "127.0.0.1:0"]).stderr(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    Http(child, url)
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn lists_and_calls_over_stdio_in_both_eras() {
    for era in [&[][..], &["--legacy"][..]] {
        let out = stdio(&[era, &["--json", "tools"]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let names: Vec<String> =
            json(&out)["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
        assert!(names.contains(&"echo".to_owned()) && names.contains(&"sum".to_owned()));
        let out = stdio(&[era, &["call", "sum", "a=2", "b=3"]].concat());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "2 + 3 = 5\n");
        let out = stdio(&[era, &["--json", "discover"]].concat());
        let era_text = json(&out)["era"].as_str().unwrap().to_owned();
        assert_eq!(era_text.starts_with("legacy"), !era.is_empty(), "{era_text}");
    }
}

#[test]
fn lists_and_calls_over_http_in_both_eras() {
    let server = http_server();
    for era in [&[][..], &["--legacy"][..]] {
        let out = run(&[era, &["--url", &server.1, "--json", "call", "echo", "text=hello there"]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(json(&out)["content"][0]["text"], "hello there");
        let out = run(&[era, &["--url", &server.1, "read", "example://greeting/Ada"]].concat());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "Hello, Ada!\n");
    }
}

#[test]
fn a_server_from_an_mcp_servers_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let body = serde_json::json!({"mcpServers": {"example": {"command": example(), "args": [], "env": {"X": "1"}}}});
    std::fs::write(&config, body.to_string()).unwrap();
    let out = run(&["--config", config.to_str().unwrap(), "--server", "example", "prompt", "greet", "name=Ada"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Ada"));
    let out = run(&["--config", config.to_str().unwrap(), "--server", "missing", "tools"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("example"), "lists the names it has");
}

#[test]
fn each_exit_code_comes_from_a_real_failure() {
    assert_eq!(run(&["tools", "--", "/nonexistent/server"]).status.code(), Some(3), "cannot start");
    assert_eq!(run(&["--url", "http://127.0.0.1:1/mcp", "tools"]).status.code(), Some(3), "nothing listens");
    let out = stdio(&["call", "no_such_tool"]);
    assert_eq!(out.status.code(), Some(4), "a JSON-RPC error");
    let out = stdio(&["--json", "call", "sum", "a=1e308", "b=1e308"]);
    assert_eq!(out.status.code(), Some(5), "isError: true");
    assert_eq!(json(&out)["isError"], true);
    assert_eq!(run(&["tools"]).status.code(), Some(2), "no server named");
    let help = run(&["--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("5  the tool ran and reported an error"));
}

#[test]
fn trace_shows_every_message_on_stderr_and_json_keeps_stdout_clean() {
    let out = stdio(&["--trace", "--json", "call", "echo", "text=x"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("→ {") && stderr.contains("← {"), "{stderr}");
    assert_eq!(json(&out)["content"][0]["text"], "x");
}

#[test]
fn falls_back_to_the_2024_11_05_http_sse_transport() {
    let server = http_server();
    let old = server.1.replace("/mcp", "/sse");
    let out = run(&["--url", &old, "--json", "call", "echo", "text=old transport"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json(&out)["content"][0]["text"], "old transport");
    let out = run(&["--url", &old, "--trace", "tools"]);
    let trace = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && trace.contains("\"initialize\""), "{trace}");
}

#[test]
fn junk_on_the_servers_stdout_is_skipped() {
    // Invalid UTF-8 and a non-JSON line before the server proper starts writing.
    let script = format!("printf '\\377\\376 not json\\n{{oops\\n'; exec '{}'", example().display());
    let out = run(&["call", "echo", "text=hi", "--", "sh", "-c", &script]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
}

#[test]
fn a_server_that_exits_without_answering_fails_at_once() {
    // It reads the first request and leaves: the client must not wait out its 60 s timeout.
    let out = run(&["ping", "--", "sh", "-c", "read line; exit 0"]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the connection closed"), "{stderr}");
}
