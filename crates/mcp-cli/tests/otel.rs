//! One trace through `mcp gateway` (feature `otel`): `mcp call` → `mcp gateway --http` → a stdio
//! upstream (this test binary in the role of a server of ours), every process exporting to a
//! real OTLP receiver (the library's `crates/mcp/tests/otel/receiver.py`, decoding with PyPI
//! `opentelemetry-proto`): the client's CLIENT span, the gateway's SERVER span under it, the
//! gateway's own CLIENT span to the upstream under that (the call runs on a task of its own), the
//! upstream's SERVER span under that, all one trace; and the gateway's `/metrics` carries the
//! conventions' histogram of what it served.
//!
//! The receiver's Python comes from `MCP_TEST_OTEL_PY` (`scripts/python-sdks.sh` sets it), else
//! from `$INTEROP_CACHE/py-otel-proto-1.45.2`.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcp::server::{RequestContext, Router, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// The OTLP receiver, shared with the other packages' telemetry tests.
#[path = "../../mcp/tests/otel/receiver.rs"]
mod receiver;
use receiver::Receiver;

const ROLE: &str = "MCP_OTEL_TEST_ROLE";
const SPAN_KIND_SERVER: u64 = 2;
const SPAN_KIND_CLIENT: u64 = 3;

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

fn main() {
    if std::env::var(ROLE).as_deref() == Ok("upstream") {
        let router = Router::new().info("otel-upstream", "1").tool(
            "echo",
            "Echoes text.",
            |a: Text, _cx: RequestContext| async move { Ok::<_, ToolError>(format!("echo: {}", a.text)) },
        );
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(mcp::serve(router)).unwrap();
        return;
    }
    let started = Instant::now();
    a_call_through_the_gateway_is_one_trace();
    eprintln!("gateway otel: one trace from the client to the upstream: ok ({:?})", started.elapsed());
}

fn a_call_through_the_gateway_is_one_trace() {
    let receiver = Receiver::start();
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("servers.json");
    let me = std::env::current_exe().unwrap();
    let servers = serde_json::json!({"mcpServers": {"up": {
        "command": me, "env": {"MCP_OTEL_TEST_ROLE": "upstream", "OTEL_SERVICE_NAME": "otel-upstream"}
    }}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mcp = env!("CARGO_BIN_EXE_mcp");
    let mut gateway = Command::new(mcp);
    gateway
        .args(["--config", config.to_str().unwrap(), "gateway", "--http", &format!("127.0.0.1:{port}")])
        .stderr(Stdio::null());
    otel_env(&mut gateway, &endpoint);
    let gateway = Killed(gateway.spawn().unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    while get(port, "/readyz").is_none_or(|(status, _)| status != 200) {
        assert!(Instant::now() < deadline, "the gateway never got ready");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut call = Command::new(mcp);
    call.args(["--url", &format!("http://127.0.0.1:{port}/mcp"), "call", "up__echo", "text=hello"]);
    otel_env(&mut call, &endpoint);
    let out = call.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("echo: hello"));
    let (_, metrics) = get(port, "/metrics").unwrap();
    assert!(
        metrics.lines().any(|l| l.starts_with("mcp_server_operation_duration_seconds_count")
            && l.contains("mcp_method_name=\"tools/call\"")
            && l.contains("gen_ai_tool_name=\"up__echo\"")),
        "{metrics}"
    );

    let spans = receiver.wait_for(Duration::from_secs(30), |spans| {
        let calls = spans.iter().filter(|s| s["span"].as_str().is_some_and(|n| n.starts_with("tools/call"))).count();
        calls >= 4
    });
    drop(gateway);
    let one = |service: &str, kind: u64| -> &Value {
        let found: Vec<&Value> = spans
            .iter()
            .filter(|s| s["service"] == service && s["kind"] == kind)
            .filter(|s| s["span"].as_str().is_some_and(|n| n.starts_with("tools/call")))
            .collect();
        assert_eq!(found.len(), 1, "one tools/call span of {service}, kind {kind}: {spans:#?}");
        found[0]
    };
    let client = one("mcp call", SPAN_KIND_CLIENT);
    let served = one("mcp gateway", SPAN_KIND_SERVER);
    let forwarded = one("mcp gateway", SPAN_KIND_CLIENT);
    let upstream = one("otel-upstream", SPAN_KIND_SERVER);
    assert_eq!(client["span"], "tools/call up__echo");
    assert_eq!(upstream["span"], "tools/call echo");
    assert_eq!(served["parentSpanId"], client["spanId"], "the gateway serves the client's call");
    assert_eq!(forwarded["parentSpanId"], served["spanId"], "the gateway's upstream call under it");
    assert_eq!(upstream["parentSpanId"], forwarded["spanId"], "the upstream serves the gateway's call");
    for span in [served, forwarded, upstream] {
        assert_eq!(span["traceId"], client["traceId"], "one trace: {span:#}");
    }
}

/// Where every process exports: the receiver, at once.
fn otel_env(command: &mut Command, endpoint: &str) {
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .env_remove("OTEL_SDK_DISABLED")
        .env_remove("OTEL_SERVICE_NAME");
}

/// `GET path` of the gateway: status and body.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

/// A child process, killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
