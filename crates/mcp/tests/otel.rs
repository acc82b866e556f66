//! Telemetry end to end (feature `otel`): spans by the MCP semantic conventions exported over
//! OTLP/HTTP to a real receiver (`tests/otel/receiver.py`, decoding with PyPI
//! `opentelemetry-proto`), from three processes: this test's client, a stdio server and an HTTP
//! server (this binary again, in other roles); the HTTP server's `/metrics` read by PyPI
//! `prometheus-client`'s parser. And a collector that stalls or is absent: requests go on
//! unaffected, the spans that do not fit are dropped and counted.
//!
//! The receiver's Python comes from `MCP_TEST_OTEL_PY`, else from a virtual environment made
//! under `$INTEROP_CACHE` (`/tmp/mcp-interop-cache`) as `scripts/python-sdks.sh` makes it.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mcp::client::{Client, ClientOptions, StdioCommand};
use mcp::server::{NoArgs, RequestContext, ResourceRequest, Router, ToolError};
use mcp::telemetry::opentelemetry::trace::{FutureExt as _, TraceContextExt as _, Tracer as _};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

const ROLE: &str = "MCP_OTEL_TEST_ROLE";
/// A secret the client sends as a tool argument and the tool returns: it must be in no span.
const SECRET: &str = "sk-live-7f3a9c2e-never-in-a-span";

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

fn router() -> Router {
    Router::new()
        .info("otel-test-server", "1.0.0")
        .tool("echo", "Echo.", |a: Echo, _cx: RequestContext| async move { Ok::<_, ToolError>(a.text) })
        .tool("fail", "Fails.", |_: NoArgs, _cx: RequestContext| async move {
            Err::<String, _>(ToolError::new("the backend is down; try again later"))
        })
        .resource("test://static", "static", |_r: ResourceRequest, _cx: RequestContext| async move {
            Ok::<_, ToolError>("static text".to_owned())
        })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("stdio-server") => runtime().block_on(mcp::serve(router())).unwrap(),
        Ok("one-thread-stdio-server") => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(mcp::serve(router())).unwrap()
        }
        Ok("http-server") => {
            let args: Vec<String> = std::env::args().skip(1).collect();
            runtime().block_on(mcp::serve_with_args(router(), args)).unwrap()
        }
        Ok("client") => runtime().block_on(client_role()),
        Ok("stalled-client") => runtime().block_on(stalled_client_role()),
        _ => {
            let tests: [(&str, fn()); 5] = [
                ("one trace across three processes", one_trace_across_three_processes),
                ("a stalled or absent collector", a_stalled_or_absent_collector_costs_spans_not_requests),
                (
                    "nothing configured, a trace context passed on",
                    with_nothing_configured_a_stdio_server_still_passes_a_trace_context_on,
                ),
                ("metrics pushed as a stdio server ends", a_stdio_server_pushing_only_metrics_pushes_them_as_it_ends),
                ("metrics pushed from the server's runtime", metrics_pushed_from_the_servers_runtime),
            ];
            for (name, test) in tests {
                let started = Instant::now();
                test();
                eprintln!("otel: {name}: ok ({:?})", started.elapsed());
            }
            eprintln!("otel: {} passed, 0 failed", tests.len());
        }
    }
}

// ---- the roles --------------------------------------------------------------------------------

/// The calls every server gets: a tool that answers, one that fails (`isError`), a resource, a
/// tool that does not exist (a JSON-RPC error).
async fn calls(client: &Client) {
    let echoed = client.call_tool("echo", json!({"text": SECRET})).await.unwrap();
    assert_ne!(echoed.is_error, Some(true));
    let failed = client.call_tool("fail", json!({})).await.unwrap();
    assert_eq!(failed.is_error, Some(true));
    client.read_resource("test://static").await.unwrap();
    let missing = client.request("tools/call", json!({"name": "nope", "arguments": {}})).await;
    assert!(missing.is_err(), "{missing:?}");
}

fn self_command(role: &str, service: &str) -> StdioCommand {
    let mut command = StdioCommand::new(std::env::current_exe().unwrap().to_string_lossy());
    command.env = vec![(ROLE.into(), role.into()), ("OTEL_SERVICE_NAME".into(), service.into())];
    command
}

/// This test's client: one root span (a person's turn), inside it a stdio server's calls and an
/// HTTP server's (a legacy session), then its spans flushed.
async fn client_role() {
    mcp::telemetry::init("otel-test-client");
    assert!(mcp::telemetry::is_tracing(), "an endpoint is configured: spans are made");
    let tracer = mcp::telemetry::opentelemetry::global::tracer("otel-test");
    let turn = tracer.start("turn");
    let cx = mcp::telemetry::opentelemetry::Context::current_with_span(turn);
    let work = async {
        let stdio = Client::connect_stdio(self_command("stdio-server", "otel-test-stdio"), ClientOptions::default())
            .await
            .unwrap();
        calls(&stdio).await;
        stdio.close().await;
        let url = std::env::var("MCP_OTEL_TEST_URL").unwrap();
        let options = ClientOptions { legacy_only: true, ..ClientOptions::default() };
        let http = Client::connect_http(&url, options).await.unwrap();
        calls(&http).await;
        http.close().await;
    };
    work.with_context(cx.clone()).await;
    cx.span().end();
    mcp::telemetry::flush(Duration::from_secs(5));
    eprintln!("client: exported {}", mcp::telemetry::export::exported_spans());
}

/// A client whose collector stalls (or is absent): 300 calls, timed, then the counts said on
/// stdout as JSON.
#[allow(clippy::print_stdout)] // the summary is this role's answer to the test
async fn stalled_client_role() {
    mcp::telemetry::init("otel-test-stalled");
    let command = self_command("stdio-server", "otel-test-stalled-server");
    let client = Client::connect_stdio(command, ClientOptions::default()).await.unwrap();
    let started = Instant::now();
    for i in 0..300 {
        let result = client.call_tool("echo", json!({"text": format!("call {i}")})).await.unwrap();
        assert_ne!(result.is_error, Some(true));
    }
    let calls_ms = started.elapsed().as_millis();
    let started = Instant::now();
    mcp::telemetry::flush(Duration::from_millis(500));
    let flush_ms = started.elapsed().as_millis();
    let started = Instant::now();
    client.close().await;
    let close_ms = started.elapsed().as_millis();
    let summary = json!({
        "callsMs": calls_ms,
        "flushMs": flush_ms,
        "closeMs": close_ms,
        "dropped": mcp::telemetry::export::dropped_spans(),
        "exported": mcp::telemetry::export::exported_spans(),
    });
    println!("{summary}");
}

// ---- the receiver -----------------------------------------------------------------------------

/// The Python with `opentelemetry-proto`: `MCP_TEST_OTEL_PY`, else a venv made once in the cache.
fn receiver_python() -> String {
    if let Ok(python) = std::env::var("MCP_TEST_OTEL_PY") {
        return python;
    }
    let cache = std::env::var("INTEROP_CACHE").unwrap_or_else(|_| "/tmp/mcp-interop-cache".into());
    let venv = format!("{cache}/py-otel-proto-1.45.2");
    let python = format!("{venv}/bin/python");
    let ready = |python: &str| {
        Command::new(python)
            .args(["-c", "import opentelemetry.proto.collector.trace.v1.trace_service_pb2, prometheus_client.parser"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !ready(&python) {
        let made = Command::new("python3").args(["-m", "venv", &venv]).status().unwrap();
        assert!(made.success(), "python3 -m venv {venv}");
        let pip = format!("{venv}/bin/pip");
        let installed = Command::new(pip)
            .args([
                "install",
                "-q",
                "--disable-pip-version-check",
                "opentelemetry-proto==1.45.2",
                "prometheus-client==0.26.0",
            ])
            .status()
            .unwrap();
        assert!(installed.success(), "pip install opentelemetry-proto into {venv}");
    }
    assert!(ready(&python), "{python} cannot import opentelemetry.proto and prometheus_client");
    python
}

/// A running receiver: its port, and what it printed, line by line.
struct Receiver {
    child: Child,
    port: u16,
    lines: mpsc::Receiver<Value>,
    seen: Vec<Value>,
}

impl Receiver {
    fn start(mode: &str) -> Receiver {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otel/receiver.py");
        let mut child = Command::new(receiver_python())
            .args([script, mode])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let first = lines.recv_timeout(Duration::from_secs(30)).expect("the receiver's port");
        let port = first["port"].as_u64().expect("port first") as u16;
        Receiver { child, port, lines, seen: Vec::new() }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Waits until `done` holds of what was received (at most `limit`).
    fn wait_for(&mut self, limit: Duration, done: impl Fn(&[Value]) -> bool) -> &[Value] {
        let deadline = Instant::now() + limit;
        while !done(&self.seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(value) => self.seen.push(value),
                Err(_) => panic!("not received within {limit:?}; received: {:#?}", self.seen),
            }
        }
        &self.seen
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A child process, killed (by its pid) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the HTTP server never listened on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The environment every process of the first test gets: export to the receiver, at once.
fn otel_env(command: &mut Command, endpoint: &str) {
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .env_remove("OTEL_SDK_DISABLED")
        .env_remove("OTEL_TRACES_EXPORTER")
        .env_remove("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .env_remove("OTEL_RESOURCE_ATTRIBUTES");
    for proxy in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"] {
        command.env_remove(proxy).env_remove(proxy.to_lowercase()); // the collector is on loopback
    }
}

// ---- the tests --------------------------------------------------------------------------------

/// The most `tools/call` durations any push of `service`'s metrics counted.
fn pushed_calls(seen: &[Value], service: &str) -> Option<u64> {
    seen.iter()
        .filter(|r| r["service"] == service)
        .filter_map(|r| r["metrics"]["mcp.server.operation.duration"]["tools/call"].as_u64())
        .max()
}

fn spans_of<'a>(seen: &'a [Value], service: &str) -> Vec<&'a Value> {
    seen.iter().filter(|v| v.get("span").is_some() && v["service"] == service).collect()
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"].get(key)
}

fn string_attr<'a>(span: &'a Value, key: &str) -> &'a str {
    let value = attr(span, key).unwrap_or_else(|| panic!("{key} missing on {span:#}"));
    assert_eq!(value["type"], "string_value", "{key} on {span:#}");
    value["value"].as_str().unwrap()
}

fn int_attr(span: &Value, key: &str) -> i64 {
    let value = attr(span, key).unwrap_or_else(|| panic!("{key} missing on {span:#}"));
    assert_eq!(value["type"], "int_value", "{key} on {span:#}");
    value["value"].as_i64().unwrap()
}

/// The span named `name` of `service` (exactly one).
fn one<'a>(seen: &'a [Value], service: &str, name: &str) -> &'a Value {
    let found: Vec<_> = spans_of(seen, service).into_iter().filter(|s| s["span"] == name).collect();
    assert_eq!(found.len(), 1, "{service} {name}: {found:#?}");
    found[0]
}

const SPAN_KIND_SERVER: u64 = 2;
const SPAN_KIND_CLIENT: u64 = 3;
const STATUS_ERROR: u64 = 2;

/// `time` in nanoseconds since the Unix epoch, as OTLP writes a span's times.
fn unix_nanos(time: std::time::SystemTime) -> u64 {
    u64::try_from(time.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()).unwrap()
}

fn one_trace_across_three_processes() {
    let began = unix_nanos(std::time::SystemTime::now());
    let mut receiver = Receiver::start("ok");
    let endpoint = receiver.endpoint();
    let audit = std::env::temp_dir().join(format!("mcp-otel-audit-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&audit);
    let (port, metrics_port) = (free_port(), free_port());
    let mut http = Command::new(std::env::current_exe().unwrap());
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    http.args(["--http", &format!("127.0.0.1:{port}"), "--audit-log", audit.to_str().unwrap()])
        .args(["--metrics-addr", &metrics_addr])
        .env(ROLE, "http-server")
        .env("OTEL_SERVICE_NAME", "otel-test-http")
        // The exporter's headers, percent-encoded as the specification writes them.
        .env("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-otel-test=http%20server");
    otel_env(&mut http, &endpoint);
    let http_server = Killed(http.spawn().unwrap());
    wait_for_port(port);
    let mut client = Command::new(std::env::current_exe().unwrap());
    client.env(ROLE, "client").env("MCP_OTEL_TEST_URL", format!("http://127.0.0.1:{port}/mcp"));
    otel_env(&mut client, &endpoint);
    let status = client.status().unwrap();
    assert!(status.success(), "the client role failed");
    legacy_batch(port, &format!("00-{BATCH_TRACE}-{BATCH_PARENT}-01"));
    // The client flushed; each server exports within the schedule delay.
    let tools_calls = |seen: &[Value], service: &str| {
        spans_of(seen, service).iter().filter(|s| s["attributes"]["mcp.method.name"]["value"] == "tools/call").count()
    };
    // The stdio server pushed its histograms as it exited (its client closed it): serving stdio,
    // it records them because an exporter pushes them.
    let seen = receiver
        .wait_for(Duration::from_secs(30), |seen| {
            pushed_calls(seen, "otel-test-stdio") == Some(3)
                && tools_calls(seen, "otel-test-stdio") >= 3
                && tools_calls(seen, "otel-test-http") >= 3
                && spans_of(seen, "otel-test-client").iter().any(|s| s["span"] == "turn")
                && spans_of(seen, "otel-test-http").iter().any(|s| s["traceId"] == BATCH_TRACE && s["span"] == "ping")
        })
        .to_vec();
    let metrics = page(metrics_port, "/metrics");
    drop(http_server);
    the_histograms_count_what_was_served(&metrics);
    let text = serde_json::to_string(&seen).unwrap();
    assert!(!text.contains(SECRET), "a tool argument or result reached a span");
    for request in seen.iter().filter(|v| v.get("request").is_some()) {
        assert_eq!(request["contentType"], "application/x-protobuf", "{request}");
    }
    let with_header = seen.iter().filter(|v| v["request"] == "/v1/traces" && v["testHeader"] == "http server");
    assert!(
        with_header.count() >= 1,
        "the HTTP server's OTEL_EXPORTER_OTLP_TRACES_HEADERS never reached the collector"
    );

    // One trace: the turn, the client's spans under it, each server's under the client's.
    let turn = one(&seen, "otel-test-client", "turn");
    let trace = turn["traceId"].as_str().unwrap();
    // The legacy session's batch is a trace of its own (its requests' `traceparent` header).
    let in_batch = |span: &Value| span["traceId"] == BATCH_TRACE;
    a_batch_is_spans_of_its_session(seen.iter().filter(|s| s.get("span").is_some() && in_batch(s)));
    let spans: Vec<&Value> = seen.iter().filter(|v| v.get("span").is_some() && !in_batch(v)).collect();
    for span in &spans {
        assert_eq!(span["traceId"], trace, "not in the turn's trace: {span:#}");
    }
    let ended = unix_nanos(std::time::SystemTime::now());
    for span in &spans {
        let (start, end) = (span["start"].as_u64().unwrap(), span["end"].as_u64().unwrap());
        assert!(began <= start && start < end && end <= ended, "a span's times out of the test's: {span:#}");
    }
    let by_id: HashMap<&str, &Value> = spans.iter().map(|s| (s["spanId"].as_str().unwrap(), *s)).collect();
    let client_spans = spans_of(&seen, "otel-test-client");
    for span in client_spans.iter().filter(|s| s["span"] != "turn") {
        assert_eq!(span["kind"], SPAN_KIND_CLIENT, "{span:#}");
        assert_eq!(span["parentSpanId"], turn["spanId"], "a client span under the turn: {span:#}");
        assert_eq!(span["scope"], "mcp-stack");
    }
    for (service, transport) in [("otel-test-stdio", "pipe"), ("otel-test-http", "tcp")] {
        let server_spans: Vec<&Value> = spans_of(&seen, service).into_iter().filter(|s| !in_batch(s)).collect();
        assert!(!server_spans.is_empty());
        for span in &server_spans {
            assert_eq!(span["kind"], SPAN_KIND_SERVER, "{span:#}");
            let parent =
                by_id.get(span["parentSpanId"].as_str().unwrap()).unwrap_or_else(|| panic!("orphan: {span:#}"));
            assert_eq!(parent["service"], "otel-test-client", "{span:#}");
            assert_eq!(parent["kind"], SPAN_KIND_CLIENT);
            assert_eq!(parent["span"], span["span"], "named alike on both sides");
            // A request's server span within its client's, which waits for the answer; a
            // notification's after its client's began (its client's ends as it is sent). One
            // machine's clock, a millisecond's leeway.
            let nanos = |span: &Value, at: &str| span[at].as_u64().unwrap();
            let leeway = 1_000_000;
            assert!(
                nanos(parent, "start") <= nanos(span, "start") + leeway,
                "began before its client's: {span:#} {parent:#}"
            );
            if attr(span, "jsonrpc.request.id").is_some() {
                assert!(
                    nanos(span, "end") <= nanos(parent, "end") + leeway,
                    "ended after its client's: {span:#} {parent:#}"
                );
            }
            if attr(span, "jsonrpc.request.id").is_some() {
                assert_eq!(string_attr(parent, "jsonrpc.request.id"), string_attr(span, "jsonrpc.request.id"));
            } else {
                assert!(string_attr(span, "mcp.method.name").starts_with("notifications/"), "{span:#}");
            }
            assert_eq!(string_attr(span, "network.transport"), transport);
            assert!(!string_attr(span, "mcp.method.name").is_empty());
        }
        let echo = one(&seen, service, "tools/call echo");
        assert_eq!(string_attr(echo, "gen_ai.tool.name"), "echo");
        assert_eq!(string_attr(echo, "gen_ai.operation.name"), "execute_tool");
        assert!(attr(echo, "error.type").is_none(), "{echo:#}");
        let version = string_attr(echo, "mcp.protocol.version");
        let fail = one(&seen, service, "tools/call fail");
        assert_eq!(string_attr(fail, "error.type"), "tool_error");
        assert_eq!(fail["statusCode"], STATUS_ERROR);
        let missing = one(&seen, service, "tools/call nope");
        let code = string_attr(missing, "rpc.response.status_code");
        assert!(code.parse::<i64>().unwrap() < 0, "{missing:#}");
        assert_eq!(string_attr(missing, "error.type"), code);
        assert_eq!(missing["statusCode"], STATUS_ERROR);
        let read =
            spans_of(&seen, service).into_iter().find(|s| s["span"] == "resources/read").expect("resources/read");
        assert_eq!(string_attr(read, "mcp.resource.uri"), "test://static");
        match service {
            "otel-test-stdio" => {
                assert_eq!(version, "2026-07-28", "the stdio server speaks the newest era");
                assert!(attr(echo, "mcp.session.id").is_none(), "no session after 2026-07-28");
                assert!(attr(echo, "client.address").is_none());
            }
            _ => {
                assert!(version < "2026-07-28", "a legacy session: {version}");
                let session = string_attr(echo, "mcp.session.id");
                assert_eq!(session.len(), 32, "a digest of the session id, not the id");
                assert_eq!(string_attr(echo, "client.address"), "127.0.0.1");
                assert!(int_attr(echo, "client.port") > 0);
                assert_eq!(string_attr(echo, "network.protocol.name"), "http");
            }
        }
    }
    let client_echoes: Vec<_> = client_spans.iter().filter(|s| s["span"] == "tools/call echo").collect();
    assert_eq!(client_echoes.len(), 2);

    // The audit line of each request names its span.
    let audit_text = std::fs::read_to_string(&audit).unwrap();
    let _ = std::fs::remove_file(&audit);
    let http_echo = one(&seen, "otel-test-http", "tools/call echo");
    let line = audit_text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["name"] == "echo")
        .unwrap_or_else(|| panic!("no audit line for echo: {audit_text}"));
    assert_eq!(line["traceId"], trace, "{line}");
    assert_eq!(line["spanId"], http_echo["spanId"], "{line}");
    assert!(!audit_text.contains(SECRET));
}

/// The trace and parent span every request of [`legacy_batch`] carries in its `traceparent`.
const BATCH_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const BATCH_PARENT: &str = "00f067aa0ba902b7";

/// Opens a 2025-03-26 session on the HTTP server at `port` and sends it a JSON-RPC batch of one
/// `ping`, each request with `traceparent` as a header.
fn legacy_batch(port: u16, traceparent: &str) {
    use std::io::{Read, Write};
    let post = |session: Option<&str>, body: &str| -> (String, String) {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let session =
            session.map(|s| format!("Mcp-Session-Id: {s}\r\nMCP-Protocol-Version: 2025-03-26\r\n")).unwrap_or_default();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\ntraceparent: {traceparent}\r\n{session}\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("{answer}"));
        (head.to_owned(), body.to_owned())
    };
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"batch","version":"1"}}}"#;
    let (head, _) = post(None, initialize);
    let session = head
        .lines()
        .find_map(|line| line.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("mcp-session-id")))
        .map(|(_, id)| id.trim().to_owned())
        .unwrap_or_else(|| panic!("no session: {head}"));
    let (head, _) = post(Some(&session), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
    let (head, body) = post(Some(&session), r#"[{"jsonrpc":"2.0","id":"batch-ping","method":"ping"}]"#);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains("batch-ping"), "{body}");
}

/// The spans of [`legacy_batch`]: each a child of its request's `traceparent` header, and the
/// batch's `ping` a span of its legacy session like any other (the session's digest, the
/// client's address, HTTP's version).
fn a_batch_is_spans_of_its_session<'a>(spans: impl Iterator<Item = &'a Value>) {
    let spans: Vec<&Value> = spans.collect();
    for span in &spans {
        assert_eq!(span["service"], "otel-test-http", "{span:#}");
        assert_eq!(span["parentSpanId"], BATCH_PARENT, "{span:#}");
    }
    let ping = spans.iter().find(|s| s["span"] == "ping").expect("the batch's ping");
    assert_eq!(string_attr(ping, "jsonrpc.request.id"), "batch-ping");
    assert_eq!(string_attr(ping, "mcp.protocol.version"), "2025-03-26");
    assert_eq!(string_attr(ping, "mcp.session.id").len(), 32, "{ping:#}");
    assert_eq!(string_attr(ping, "client.address"), "127.0.0.1");
    assert!(int_attr(ping, "client.port") > 0);
    assert_eq!(string_attr(ping, "network.protocol.version"), "1.1");
    let initialize = spans.iter().find(|s| s["span"] == "initialize").expect("the session's initialize");
    assert_eq!(string_attr(initialize, "mcp.protocol.version"), "2025-03-26");
}

/// `GET path` of the server on `port`: the body (the status must be 200).
fn page(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("{answer}"));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(!head.to_ascii_lowercase().contains("transfer-encoding: chunked"), "{head}");
    body.to_owned()
}

/// `/metrics` read by the Prometheus project's own parser (PyPI `prometheus-client`): the
/// conventions' server histogram counts the HTTP server's three `tools/call` and one
/// `resources/read`, its buckets rise to the count, only the tools the server has name a series,
/// and no secret is in it.
fn the_histograms_count_what_was_served(metrics: &str) {
    use std::io::Write;
    const PARSE: &str = "import sys, json\n\
from prometheus_client.parser import text_string_to_metric_families\n\
out = [{'family': f.name, 'type': f.type, 'name': s.name, 'labels': s.labels, 'value': s.value}\n\
       for f in text_string_to_metric_families(sys.stdin.read()) for s in f.samples]\n\
print(json.dumps(out))\n";
    let mut parser = Command::new(receiver_python())
        .args(["-c", PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    parser.stdin.take().unwrap().write_all(metrics.as_bytes()).unwrap();
    let parsed = parser.wait_with_output().unwrap();
    assert!(parsed.status.success(), "prometheus-client could not parse /metrics:\n{metrics}");
    let samples: Vec<Value> = serde_json::from_slice(&parsed.stdout).unwrap();
    assert!(!metrics.contains(SECRET));
    const HISTOGRAM: &str = "mcp_server_operation_duration_seconds";
    let of = |suffix: &str, method: &str| -> Vec<&Value> {
        samples
            .iter()
            .filter(|s| s["family"] == HISTOGRAM && s["type"] == "histogram")
            .filter(|s| s["name"] == format!("{HISTOGRAM}{suffix}") && s["labels"]["mcp_method_name"] == method)
            .collect()
    };
    let total =
        |suffix: &str, method: &str| of(suffix, method).iter().map(|s| s["value"].as_f64().unwrap()).sum::<f64>();
    assert_eq!(total("_count", "tools/call"), 3.0, "echo, fail and nope: {metrics}");
    assert_eq!(total("_count", "resources/read"), 1.0, "{metrics}");
    assert!(total("_sum", "tools/call") > 0.0);
    let errors: Vec<_> =
        of("_count", "tools/call").into_iter().filter(|s| s["labels"].get("error_type").is_some()).collect();
    assert_eq!(errors.len(), 2, "a tool error and a JSON-RPC error, each its own series: {errors:?}");
    let labelled = |tool: &str| of("_count", "tools/call").iter().any(|s| s["labels"]["gen_ai_tool_name"] == tool);
    assert!(labelled("echo") && labelled("fail"), "the server's tools label their series: {metrics}");
    assert!(!labelled("nope"), "a tool the server lacks does not: {metrics}");
    // Each series' buckets: cumulative, ending at its count.
    for count in of("_count", "tools/call") {
        let mut buckets: Vec<(f64, f64)> = of("_bucket", "tools/call")
            .into_iter()
            .filter(|b| {
                let mut labels = b["labels"].as_object().unwrap().clone();
                labels.remove("le");
                Value::Object(labels) == count["labels"]
            })
            .map(|b| {
                let le = b["labels"]["le"].as_str().unwrap();
                (if le == "+Inf" { f64::INFINITY } else { le.parse().unwrap() }, b["value"].as_f64().unwrap())
            })
            .collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(buckets.len() > 2, "{count}");
        assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "not cumulative: {buckets:?}");
        assert_eq!(buckets.last().unwrap(), &(f64::INFINITY, count["value"].as_f64().unwrap()));
    }
    let dropped = samples.iter().find(|s| s["name"] == "mcp_audit_lines_dropped_total").expect("our counter too");
    assert_eq!(dropped["value"], 0.0);
}

fn a_stalled_or_absent_collector_costs_spans_not_requests() {
    let stalled = Receiver::start("stall");
    let absent = format!("http://127.0.0.1:{}", free_port());
    for (endpoint, stalls) in [(stalled.endpoint(), true), (absent, false)] {
        let mut client = Command::new(std::env::current_exe().unwrap());
        client
            .env(ROLE, "stalled-client")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            .env("OTEL_BSP_MAX_QUEUE_SIZE", "16")
            .env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "8")
            .env("OTEL_BSP_SCHEDULE_DELAY", "50")
            .env("OTEL_EXPORTER_OTLP_TIMEOUT", "30000")
            .env("OTEL_BSP_EXPORT_TIMEOUT", "30000")
            .env_remove("OTEL_SDK_DISABLED")
            .stdout(Stdio::piped());
        let started = Instant::now();
        let output = client.output().unwrap();
        let elapsed = started.elapsed();
        assert!(output.status.success(), "the stalled client role failed ({endpoint})");
        let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
        eprintln!("otel: collector {endpoint}: {summary} in {elapsed:?}");
        // 300 calls make 300 client spans (and the negotiation's): a queue of 16 behind an
        // export that never ends keeps at most 16 + 8, the rest dropped and counted. An absent
        // collector refuses at once: its batches fail (counted), none is exported.
        if stalls {
            assert!(summary["dropped"].as_u64().unwrap() >= 250, "{summary}");
        }
        assert_eq!(summary["exported"], 0, "{summary}");
        assert!(summary["callsMs"].as_u64().unwrap() < 20_000, "requests were held up: {summary}");
        assert!(summary["flushMs"].as_u64().unwrap() < 2_000, "a flush waits at most its timeout: {summary}");
        assert!(elapsed < Duration::from_secs(40), "the process took {elapsed:?} to end");
    }
}

/// Starts `server` (this binary as a stdio server), initializes it, sends it `calls` (requests
/// numbered from 1), checks that each is answered in turn, then closes its input and waits for
/// it to end, which it must do cleanly.
fn stdio_session(server: Command, calls: &[Value]) {
    stdio_session_checking(server, calls, |_| {});
}

/// [`stdio_session`], with `check` given the server's pid once every call was answered.
fn stdio_session_checking(mut server: Command, calls: &[Value], check: impl FnOnce(u32)) {
    use std::io::Write as _;
    let mut server = Killed(server.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap());
    let mut stdin = server.0.stdin.take().unwrap();
    let mut lines = BufReader::new(server.0.stdout.take().unwrap()).lines();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "otel-test", "version": "1"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    for message in [&initialize, &initialized].into_iter().chain(calls) {
        writeln!(stdin, "{message}").unwrap();
    }
    for id in 0..=calls.len() {
        let line = lines.next().unwrap().unwrap();
        assert!(line.contains(&format!("\"id\":{id}")), "answer {id}: {line}");
    }
    check(server.0.id());
    drop(stdin); // the server ends as its input does
    let status = server.0.wait().unwrap();
    assert!(status.success(), "{status}");
}

/// A stdio server with no `OTEL_` variable records nothing (no exporter, and no page to serve its
/// histograms on), yet a trace context a request carries is still the one its handling runs in:
/// the audit line of that request carries its trace id, that of a request without one none.
fn with_nothing_configured_a_stdio_server_still_passes_a_trace_context_on() {
    const TRACE: &str = "5b8efff798038103d269b633813fc60c";
    let audit = std::env::temp_dir().join(format!("mcp-otel-quiet-audit-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&audit);
    let mut server = Command::new(std::env::current_exe().unwrap());
    server.args(["--audit-log", audit.to_str().unwrap()]).env(ROLE, "stdio-server");
    for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("OTEL_")) {
        server.env_remove(name);
    }
    let call = |id: u32, meta: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}})
    };
    let traced = call(1, json!({"traceparent": format!("00-{TRACE}-00f067aa0ba902b7-01")}));
    stdio_session(server, &[traced, call(2, json!({}))]); // its audit log written out as it ends
    let text = std::fs::read_to_string(&audit).unwrap();
    let _ = std::fs::remove_file(&audit);
    let calls: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2, "{text}");
    assert_eq!(calls[0]["traceId"], TRACE, "the context that came is the handling's: {text}");
    assert!(calls[1].get("traceId").is_none(), "none came, none is made: {text}");
}

/// A stdio server the command line serves (`--stdio`) with spans off but metrics pushed pushes
/// what it measured as it ends, well before the push interval: its one call's duration.
fn a_stdio_server_pushing_only_metrics_pushes_them_as_it_ends() {
    let mut receiver = Receiver::start("ok");
    let mut server = Command::new(std::env::current_exe().unwrap());
    server.arg("--stdio").env(ROLE, "stdio-server").env("OTEL_SERVICE_NAME", "otel-test-metrics-only");
    otel_env(&mut server, &receiver.endpoint());
    server.env("OTEL_TRACES_SAMPLER", "always_off").env_remove("OTEL_METRICS_EXPORTER");
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}});
    stdio_session(server, &[call]);
    receiver.wait_for(Duration::from_secs(10), |seen| pushed_calls(seen, "otel-test-metrics-only") == Some(1));
}

/// Such a server pushing to an IP address over plain HTTP pushes from its own runtime: served on
/// one thread, it has one thread once it pushed. Pushing to a host name, it has an export thread
/// (a resolver's lookups would bring a thread anyway).
fn metrics_pushed_from_the_servers_runtime() {
    let mut receiver = Receiver::start("ok");
    for (host, service, export_thread) in
        [("127.0.0.1", "otel-test-pushed-here", false), ("localhost", "otel-test-pushed-by-name", true)]
    {
        let endpoint = receiver.endpoint().replace("127.0.0.1", host);
        let mut server = Command::new(std::env::current_exe().unwrap());
        server.arg("--stdio").env(ROLE, "one-thread-stdio-server").env("OTEL_SERVICE_NAME", service);
        otel_env(&mut server, &endpoint);
        server.env("OTEL_TRACES_SAMPLER", "always_off").env_remove("OTEL_METRICS_EXPORTER");
        server.env("OTEL_METRIC_EXPORT_INTERVAL", "100");
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}});
        stdio_session_checking(server, &[call], |pid| {
            // A push while it serves (the interval's, not the exit's), then its threads.
            receiver.wait_for(Duration::from_secs(10), |seen| pushed_calls(seen, service) == Some(1));
            let pushed = thread_names(pid);
            if export_thread {
                assert!(pushed.iter().any(|t| t == "mcp-telemetry"), "{host}: no export thread: {pushed:?}");
            } else {
                assert_eq!(pushed.len(), 1, "{host}: more than the thread it serves on, once it pushed: {pushed:?}");
            }
        });
    }
}

/// The names of a process's threads (Linux's `/proc`), sorted.
fn thread_names(pid: u32) -> Vec<String> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("/proc");
    let names = tasks.flatten().filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok());
    let mut names: Vec<String> = names.map(|name| name.trim().to_owned()).collect();
    names.sort();
    names
}
