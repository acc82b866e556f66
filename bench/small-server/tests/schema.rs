//! The small server as a process: arguments of a nested schema are checked before the handler
//! runs. `cargo test -p mcp-bench-small-server` alone builds it as users do, without the
//! `jsonschema` feature (the structural checks); inside `cargo test --workspace` cargo unifies
//! features and the full validator answers. Both must give the same verdicts and paths.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

#[test]
fn nested_arguments_are_checked_and_the_mistake_is_named() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_small-server"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start small-server");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |message: Value| -> Value {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    assert_eq!(ask(init)["result"]["serverInfo"]["name"], "small-server");
    let call = |id: u64, arguments: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "plot", "arguments": arguments}});

    let good = ask(call(1, json!({"points": [{"x": 0, "y": 0}, {"x": 3, "y": 4}]})));
    assert_eq!(good["result"]["isError"], Value::Null, "{good}");
    assert_eq!(good["result"]["content"][0]["text"], "2 points, 5 long");

    for (id, arguments, named) in [
        (2, json!({"points": [{"x": 0, "y": 0}, {"x": 3, "y": "4"}]}), "/points/1/y"),
        (3, json!({"points": [{"x": 0}]}), "\"y\""),
        (4, json!({"points": [{"x": 0, "y": 0, "z": 1}]}), "'z'"),
        (5, json!({"points": {"x": 0, "y": 0}}), "/points"),
    ] {
        let bad = ask(call(id, arguments));
        assert_eq!(bad["result"]["isError"], true, "{bad}");
        let text = bad["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains(named), "{named} not named in {text:?}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
