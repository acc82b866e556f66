//! A `println!` inside a handler must not reach the protocol stream.
//!
//! This test binary is its own server: run with `MCP_STRAY_PRINT_SERVER=1` it serves a tool that
//! prints to stdout; run normally it spawns itself that way, calls the tool over real pipes, and
//! checks that stdout carried only JSON-RPC while the stray text landed on stderr.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use mcp::server::{NoArgs, RequestContext, Router, ToolError};

#[allow(clippy::print_stdout)] // the point of the test
async fn noisy(_: NoArgs, _cx: RequestContext) -> Result<String, ToolError> {
    println!("STRAY PRINT FROM A HANDLER");
    Ok("done".into())
}

fn serve() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let router = Router::new().tool("noisy", "Prints to stdout.", noisy);
    runtime.block_on(mcp::serve(router)).unwrap();
}

fn main() {
    if std::env::var_os("MCP_STRAY_PRINT_SERVER").is_some() {
        return serve();
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("MCP_STRAY_PRINT_SERVER", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"noisy","arguments":{}}}"#;
    writeln!(stdin, "{init}\n{call}").unwrap();
    drop(stdin);
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        lines.push(line.unwrap());
    }
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(lines.len(), 2, "stdout: {lines:?}");
    for line in &lines {
        let value: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON on stdout: {line:?}: {e}"));
        assert_eq!(value["jsonrpc"], "2.0");
    }
    assert!(lines[1].contains("\"done\""), "{}", lines[1]);
    assert!(stderr.contains("STRAY PRINT FROM A HANDLER"), "stderr: {stderr:?}");
    eprintln!("stray_print: 1 passed, 0 failed");
}
