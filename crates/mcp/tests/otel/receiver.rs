//! The OTLP receiver (`receiver.py` beside this file) as the telemetry tests of other packages
//! start it: its port, and the spans it printed; and reading a span's attributes with their type. Included by `crates/mcp-host/tests/otel.rs` and
//! `crates/mcp-cli/tests/otel.rs` with `#[path]`.
//!
//! Its Python comes from `MCP_TEST_OTEL_PY` (`scripts/python-sdks.sh` sets it), else from
//! `$INTEROP_CACHE/py-otel-proto-1.45.2`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The OTLP receiver: its port, and the spans it printed.
pub struct Receiver {
    child: Child,
    /// Where it listens (OTLP/HTTP).
    pub port: u16,
    lines: mpsc::Receiver<Value>,
}

impl Receiver {
    pub fn start() -> Receiver {
        let python = std::env::var("MCP_TEST_OTEL_PY").unwrap_or_else(|_| {
            let cache = std::env::var("INTEROP_CACHE").unwrap_or_else(|_| "/tmp/mcp-interop-cache".into());
            format!("{cache}/py-otel-proto-1.45.2/bin/python")
        });
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../mcp/tests/otel/receiver.py");
        let mut child = Command::new(&python)
            .args([script, "ok"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{python}: {e} (source scripts/python-sdks.sh to make it)"));
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let Ok(value) = serde_json::from_str::<Value>(&line) else { break };
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let first = lines.recv_timeout(Duration::from_secs(30)).expect("the receiver's port");
        let port = first["port"].as_u64().expect("port first") as u16;
        Receiver { child, port, lines }
    }

    /// The spans received once `done` holds of them (at most `limit`).
    pub fn wait_for(&self, limit: Duration, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + limit;
        let mut spans = Vec::new();
        while !done(&spans) {
            match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(value) if value.get("span").is_some() => spans.push(value),
                Ok(_) => {}
                Err(_) => panic!("not received within {limit:?}; received: {spans:#?}"),
            }
        }
        spans
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The string attribute `key` of `span` (it must be one).
pub fn string<'a>(span: &'a Value, key: &str) -> &'a str {
    let value = &span["attributes"][key];
    assert_eq!(value["type"], "string_value", "{key} of {span:#}");
    value["value"].as_str().unwrap()
}

/// The integer attribute `key` of `span` (it must be one; JSON may carry it as a string).
pub fn int(span: &Value, key: &str) -> i64 {
    let value = &span["attributes"][key];
    assert_eq!(value["type"], "int_value", "{key} of {span:#}");
    value["value"].as_i64().or_else(|| value["value"].as_str().and_then(|v| v.parse().ok())).unwrap()
}
