//! One trace from a person's question to the last server (feature `otel`), four processes of
//! three makers: `mcp chat` (a scripted Anthropic provider on loopback) asks `mcp gateway
//! --http`, which calls a tool on an upstream HTTP server of ours (this test binary in that
//! role) and a tool on a stdio server of the Python SDK v2 (PyPI `mcp` 2.3.0,
//! `tests/fixtures/py-sdk/traced_stdio.py`, which emits its own spans once given a tracer
//! provider). Every process exports to a real OTLP receiver (`crates/mcp/tests/otel/receiver.py`,
//! decoding with PyPI `opentelemetry-proto`), and the test checks that every span is in the
//! question's trace with the parent it should have, the conventions' attributes present with the
//! right types, and no secret (the API key, the tool's arguments) in any of them. Also: the HTTP
//! request's own `traceparent` header becomes a link of the server's span; the gateway's
//! `/metrics` counts what it served.
//!
//! Pythons: the receiver's from `MCP_TEST_OTEL_PY`, the SDK server's from
//! `MCP_TEST_PY_SDK2_OTEL` (`scripts/python-sdks.sh` sets both), else from `$INTEROP_CACHE`.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcp::server::{RequestContext, Router, ToolError};
use mcp_host::scripted::{Flavor, ScriptedProvider, Step};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

/// The OTLP receiver, shared with the other packages' telemetry tests.
#[path = "../../mcp/tests/otel/receiver.rs"]
mod receiver;
use receiver::{int, string, Receiver};

const ROLE: &str = "MCP_OTEL_TEST_ROLE";
const SPAN_KIND_INTERNAL: u64 = 1;
const SPAN_KIND_SERVER: u64 = 2;
const SPAN_KIND_CLIENT: u64 = 3;
/// The API key, and a tool's argument: on no span.
const SECRET: &str = "sk-ant-live-7e57-never-in-a-span";
/// A trace context of a caller's own, for the link test.
const HEADER_PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const META_PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

fn main() {
    if let Ok(role) = std::env::var(ROLE) {
        serve(&role);
        return;
    }
    let started = Instant::now();
    a_question_through_the_gateway_to_two_upstreams_is_one_trace();
    eprintln!("otel: one trace from the question to both upstreams: ok ({:?})", started.elapsed());
}

/// This binary as the upstream HTTP server: `echo`, served as `mcp::serve` serves.
fn serve(role: &str) {
    assert_eq!(role, "web", "unknown role {role}");
    let router =
        Router::new().info("otel-web", "1").tool("echo", "Echoes text.", |a: Text, _cx: RequestContext| async move {
            Ok::<_, ToolError>(format!("echo: {}", a.text))
        });
    let addr = std::env::var("MCP_OTEL_TEST_ADDR").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(mcp::serve_with_args(router, ["--http".to_owned(), addr])).unwrap();
}

fn a_question_through_the_gateway_to_two_upstreams_is_one_trace() {
    let receiver = Receiver::start();
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let dir = tempfile::tempdir().unwrap();

    let web_port = free_port();
    let mut web = Command::new(std::env::current_exe().unwrap());
    web.env(ROLE, "web").env("MCP_OTEL_TEST_ADDR", format!("127.0.0.1:{web_port}")).stderr(Stdio::null());
    otel_env(&mut web, &endpoint, "otel-web");
    let _web = Killed(web.spawn().unwrap());
    wait_until(|| get(web_port, "/mcp").is_some(), "the web upstream never listened");

    let config = dir.path().join("gateway.json");
    let servers = json!({"mcpServers": {
        "web": {"url": format!("http://127.0.0.1:{web_port}/mcp")},
        "py": {"command": python_sdk2(), "args": [fixture("traced_stdio.py")], "env": {
            "OTEL_SERVICE_NAME": "py-traced",
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        }},
    }});
    std::fs::write(&config, servers.to_string()).unwrap();
    let port = free_port();
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_mcp"));
    gateway
        .args(["--config", config.to_str().unwrap(), "gateway", "--http", &format!("127.0.0.1:{port}")])
        .stderr(Stdio::null());
    otel_env(&mut gateway, &endpoint, "mcp gateway");
    let gateway = Killed(gateway.spawn().unwrap());
    wait_until(
        || get(port, "/readyz").is_some_and(|(status, _)| status == 200),
        "the gateway never got ready (both upstreams listed)",
    );

    let (answer, model_requests) = ask(dir.path(), port, &endpoint);
    assert!(answer.contains("They said:"), "the model answered after both calls: {answer}");
    assert_eq!(model_requests, 2, "the tool choice, then the answer");
    let (_, metrics) = get(port, "/metrics").unwrap();
    for tool in ["web__echo", "py__shout"] {
        assert!(
            metrics.lines().any(|l| l.starts_with("mcp_server_operation_duration_seconds_count")
                && l.contains(&format!("gen_ai_tool_name=\"{tool}\""))),
            "{tool} counted on the gateway's /metrics: {metrics}"
        );
    }
    call_with_both_contexts(web_port);

    let spans = receiver.wait_for(Duration::from_secs(30), |spans| {
        let count = |service: &str, name: &str, kind: u64| {
            spans.iter().filter(|s| s["service"] == service && s["span"] == name && s["kind"] == kind).count()
        };
        // Every span the checks below name: each process exports on its own schedule.
        count("mcp chat", "invoke_agent mcp chat", SPAN_KIND_INTERNAL) == 1
            && count("mcp chat", "chat claude-test", SPAN_KIND_CLIENT) == 2
            && count("otel-web", "tools/call echo", SPAN_KIND_SERVER) == 2
            && count("py-traced", "tools/call shout", SPAN_KIND_SERVER) == 1
            && [("web__echo", "echo"), ("py__shout", "shout")].iter().all(|(tool, upstream_tool)| {
                count("mcp chat", &format!("tools/call {tool}"), SPAN_KIND_CLIENT) == 1
                    && count("mcp gateway", &format!("tools/call {tool}"), SPAN_KIND_SERVER) == 1
                    && count("mcp gateway", &format!("tools/call {upstream_tool}"), SPAN_KIND_CLIENT) == 1
            })
    });
    drop(gateway);
    let text = serde_json::to_string(&spans).unwrap();
    assert!(!text.contains(SECRET), "a secret reached a span: {text}");

    let question = one(&spans, "mcp chat", "invoke_agent mcp chat", SPAN_KIND_INTERNAL);
    assert_eq!(question["parentSpanId"], "", "the question is the trace's root");
    let trace = question["traceId"].as_str().unwrap();
    let in_trace: Vec<&Value> = spans.iter().filter(|s| s["traceId"] == trace).collect();
    let parent_of = |span: &Value| -> &Value {
        in_trace
            .iter()
            .find(|s| s["spanId"] == span["parentSpanId"])
            .unwrap_or_else(|| panic!("the parent of {span:#} is not in the question's trace"))
    };
    for chat in spans.iter().filter(|s| s["span"] == "chat claude-test") {
        assert_eq!(chat["traceId"], trace);
        assert_eq!(parent_of(chat)["spanId"], question["spanId"], "a model request under the question");
    }

    // chat → gateway → each upstream, one hop at a time, every span in the question's trace.
    for (tool, upstream_service, upstream_tool) in
        [("web__echo", "otel-web", "echo"), ("py__shout", "py-traced", "shout")]
    {
        let asked = one(&spans, "mcp chat", &format!("tools/call {tool}"), SPAN_KIND_CLIENT);
        assert_eq!(asked["traceId"], trace, "{asked:#}");
        assert_eq!(parent_of(asked)["spanId"], question["spanId"], "the tool call under the question");
        attributes_of_a_call(asked, tool, "tcp");
        assert_eq!(string(asked, "server.address"), "127.0.0.1");
        assert_eq!(int(asked, "server.port"), i64::from(port));

        let served = one(&spans, "mcp gateway", &format!("tools/call {tool}"), SPAN_KIND_SERVER);
        assert_eq!(served["parentSpanId"], asked["spanId"], "the gateway serves the host's call");
        attributes_of_a_call(served, tool, "tcp");
        assert_eq!(string(served, "client.address"), "127.0.0.1");

        let forwarded = one(&spans, "mcp gateway", &format!("tools/call {upstream_tool}"), SPAN_KIND_CLIENT);
        assert_eq!(forwarded["parentSpanId"], served["spanId"], "the gateway's upstream call under it");
        attributes_of_a_call(forwarded, upstream_tool, if upstream_service == "py-traced" { "pipe" } else { "tcp" });

        let upstream: Vec<&Value> = in_trace
            .iter()
            .copied()
            .filter(|s| s["service"] == upstream_service && s["kind"] == SPAN_KIND_SERVER)
            .filter(|s| s["span"] == format!("tools/call {upstream_tool}").as_str())
            .collect();
        assert_eq!(upstream.len(), 1, "one span of {upstream_service} in the trace: {spans:#?}");
        assert_eq!(upstream[0]["parentSpanId"], forwarded["spanId"], "the upstream serves the gateway's call");
        assert_eq!(string(upstream[0], "mcp.method.name"), "tools/call");
        assert_eq!(string(upstream[0], "gen_ai.tool.name"), upstream_tool);
    }
    let python = one(&spans, "py-traced", "tools/call shout", SPAN_KIND_SERVER);
    assert_eq!(python["scope"], "mcp-python-sdk", "the Python SDK's own span");
    assert_eq!(string(python, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(
        string(python, "jsonrpc.request.id"),
        string(one(&spans, "mcp gateway", "tools/call shout", SPAN_KIND_CLIENT), "jsonrpc.request.id")
    );

    // A request whose header and `_meta` carry different contexts: `_meta` is the parent, the
    // header a link.
    let linked_span = spans
        .iter()
        .find(|s| s["service"] == "otel-web" && s["traceId"] == META_PARENT[3..35])
        .unwrap_or_else(|| panic!("the linked call's span: {spans:#?}"));
    assert_eq!(linked_span["parentSpanId"], META_PARENT[36..52], "the `_meta` context is the parent");
    assert_eq!(
        linked_span["links"],
        json!([{"traceId": HEADER_PARENT[3..35], "spanId": HEADER_PARENT[36..52]}]),
        "the HTTP request's own traceparent is a link"
    );
}

/// The attributes every `tools/call` span of ours carries, with their types.
fn attributes_of_a_call(span: &Value, tool: &str, transport: &str) {
    assert_eq!(span["scope"], "mcp-stack", "{span:#}");
    assert_eq!(string(span, "mcp.method.name"), "tools/call");
    assert_eq!(string(span, "gen_ai.tool.name"), tool);
    assert_eq!(string(span, "gen_ai.operation.name"), "execute_tool");
    assert!(!string(span, "jsonrpc.request.id").is_empty());
    assert!(string(span, "mcp.protocol.version").starts_with("20"), "{span:#}");
    assert_eq!(string(span, "network.transport"), transport);
    assert!(span["attributes"].get("error.type").is_none(), "{span:#}");
}

/// `mcp chat -p`: the scripted model calls both tools in one turn, then answers with what they
/// said. Returns the answer and how many requests the model got.
fn ask(dir: &std::path::Path, gateway_port: u16, endpoint: &str) -> (String, usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let script = vec![
        Step::Turn(
            "Both, then.".into(),
            vec![
                ("gw__web__echo".into(), json!({"text": SECRET})),
                ("gw__py__shout".into(), json!({"text": "echo: quiet"})),
            ],
        ),
        Step::say("They said: {last_result}"),
    ];
    let provider = runtime.block_on(ScriptedProvider::start(Flavor::Anthropic, script));
    let config = dir.join("chat.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"gw": {"url": format!("http://127.0.0.1:{gateway_port}/mcp")}}}).to_string(),
    )
    .unwrap();
    let mut chat = Command::new(env!("CARGO_BIN_EXE_mcp"));
    chat.args(["chat", "--base-url", &provider.url, "--model", "claude-test", "--config", config.to_str().unwrap()])
        .args(["--allow", "gw/web__echo", "--allow", "gw/py__shout", "-p", "Echo my key and shout"])
        .env("ANTHROPIC_API_KEY", SECRET)
        .env("MCP_HOST_STATE", dir.join("state"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .stdin(Stdio::null());
    otel_env(&mut chat, endpoint, "mcp chat");
    let out = chat.output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    (stdout.into_owned(), provider.requests().len())
}

/// Calls `echo` on the web upstream (2026-07-28, no session) with one trace context in the
/// `traceparent` header and another in `_meta`.
fn call_with_both_contexts(port: u16) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "linked"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}, "traceparent": META_PARENT}}})
    .to_string();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: echo\r\ntraceparent: {HEADER_PARENT}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("echo: linked"), "{answer}");
}

fn one<'a>(spans: &'a [Value], service: &str, name: &str, kind: u64) -> &'a Value {
    let found: Vec<&Value> =
        spans.iter().filter(|s| s["service"] == service && s["span"] == name && s["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "one {name:?} of {service}, kind {kind}: {spans:#?}");
    found[0]
}

/// Where every process exports: the receiver, at once, as `service`.
fn otel_env(command: &mut Command, endpoint: &str, service: &str) {
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .env("OTEL_SERVICE_NAME", service)
        .env_remove("OTEL_SDK_DISABLED")
        .env_remove("OTEL_TRACES_SAMPLER");
}

/// The Python of the SDK v2 server's virtual environment.
fn python_sdk2() -> String {
    std::env::var("MCP_TEST_PY_SDK2_OTEL").unwrap_or_else(|_| {
        let cache = std::env::var("INTEROP_CACHE").unwrap_or_else(|_| "/tmp/mcp-interop-cache".into());
        format!("{cache}/py-mcp-2.3.0-otel/bin/python")
    })
}

fn fixture(name: &str) -> String {
    format!("{}/../../tests/fixtures/py-sdk/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn wait_until(ready: impl Fn() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `GET path` on `port`: status and body.
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
