//! `mcp-example` as a real child process on real pipes: every era, and the walkthrough's rules.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Server {
    fn spawn() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-example"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp-example");
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Server { child, stdin, lines }
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: Value) {
        self.send_line(&message.to_string());
    }

    fn recv(&mut self) -> Value {
        let line = self.lines.recv_timeout(Duration::from_secs(10)).expect("a line within 10 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"))
    }

    fn silent_for(&mut self, ms: u64) {
        if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(ms)) {
            panic!("expected silence, got {line}");
        }
    }

    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let r = self.recv();
        assert_eq!(r["id"], id, "{r}");
        r
    }

    fn initialize(&mut self, version: &str) -> Value {
        let params =
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}});
        let r = self.request(1, "initialize", params);
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    /// Closes stdin and waits for a clean exit.
    fn finish(mut self) {
        drop(self.stdin.take());
        for _ in 0..100 {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "exit status {status}");
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.kill().ok();
        panic!("the server did not exit within 5 s of end of input");
    }
}

fn modern(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}
    });
    params
}

#[test]
fn serves_each_legacy_version_initialize_list_call() {
    for version in ["2024-11-05", "2025-06-18", "2025-11-25"] {
        let mut server = Server::spawn();
        let init = server.initialize(version);
        assert_eq!(init["result"]["protocolVersion"], version);
        assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example");
        let list = server.request(2, "tools/list", json!({}));
        let names: Vec<&str> =
            list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert!(names.contains(&"echo") && names.contains(&"sum"), "{names:?}");
        let call = server.request(3, "tools/call", json!({"name": "sum", "arguments": {"a": 2, "b": 3}}));
        assert_eq!(call["result"]["content"][0]["text"], "2 + 3 = 5", "{version}");
        let call = server.request(4, "tools/call", json!({"name": "echo", "arguments": {"text": "héllo"}}));
        assert_eq!(call["result"]["content"][0]["text"], "héllo");
        server.finish();
    }
}

#[test]
fn serves_a_2026_client_without_initialize() {
    let mut server = Server::spawn();
    let discover = server.request(1, "server/discover", modern(json!({})));
    assert_eq!(discover["result"]["resultType"], "complete");
    assert!(discover["result"]["supportedVersions"].as_array().unwrap().contains(&json!("2026-07-28")));
    let call = server.request(2, "tools/call", modern(json!({"name": "sum", "arguments": {"a": 1.5, "b": 2}})));
    assert_eq!(call["result"]["content"][0]["text"], "1.5 + 2 = 3.5");
    assert_eq!(call["result"]["resultType"], "complete");
    assert_eq!(call["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-example");
    server.finish();
}

#[test]
fn the_walkthrough_rules_hold_on_a_real_pipe() {
    let mut server = Server::spawn();
    // Invalid JSON: -32700 with id null, and the connection goes on.
    server.send_line("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
    let e = server.recv();
    assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (Value::Null, json!(-32700)));
    // null and other non-objects never crash it.
    for line in ["null", "[]", "17", "\"x\""] {
        server.send_line(line);
        assert!(server.recv()["error"]["code"].is_i64());
    }
    server.initialize("2025-11-25");
    // A notification gets no response.
    server.send(
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}),
    );
    server.silent_for(200);
    // Unknown method: -32601.
    assert_eq!(server.request(5, "does/not/exist", json!({}))["error"]["code"], -32601);
    // Unknown tool: JSON-RPC -32602.
    assert_eq!(server.request(6, "tools/call", json!({"name": "nope", "arguments": {}}))["error"]["code"], -32602);
    // A failing tool: a normal result with isError: true.
    let r = server.request(7, "tools/call", json!({"name": "sum", "arguments": {"a": 1e308, "b": 1e308}}));
    assert_eq!(r["result"]["isError"], true);
    let r = server.request(8, "tools/call", json!({"name": "sum", "arguments": {"a": "one"}}));
    assert_eq!(r["result"]["isError"], true);
    server.finish();
}

#[test]
fn many_calls_in_a_row_keep_the_stream_clean() {
    let mut server = Server::spawn();
    server.initialize("2025-11-25");
    for id in 10..60 {
        let r = server.request(id, "tools/call", json!({"name": "echo", "arguments": {"text": format!("m{id}")}}));
        assert_eq!(r["result"]["content"][0]["text"], format!("m{id}"));
    }
    server.finish();
}

#[test]
fn end_of_input_ends_the_server_cleanly() {
    let mut server = Server::spawn();
    server.initialize("2025-06-18");
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "last"}}}));
    drop(server.stdin.take());
    assert_eq!(server.recv()["result"]["content"][0]["text"], "last");
    server.finish();
}
