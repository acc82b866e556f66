//! The host's spans (feature `otel`) exported over OTLP/HTTP to a real receiver (the library's
//! `crates/mcp/tests/otel/receiver.py`, decoding with PyPI `opentelemetry-proto`): a question to a
//! scripted Anthropic provider on loopback that calls a tool of an MCP server is one trace, the
//! `invoke_agent` span over two `chat` spans (token usage, finish reasons) and the tool's MCP
//! `tools/call` CLIENT span, the server's SERVER span under that; nothing of the prompt, the
//! arguments or the API key on any span.
//!
//! The receiver's Python comes from `MCP_TEST_OTEL_PY` (`scripts/python-sdks.sh` sets it), else
//! from `$INTEROP_CACHE/py-otel-proto-1.45.2`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp::server::{RequestContext, Router, ToolError};
use mcp_host::consent::{Consent, NoOne, Rule};
use mcp_host::project::Project;
use mcp_host::provider::Anthropic;
use mcp_host::scripted::{Flavor, ScriptedProvider, Step};
use mcp_host::servers::{Server, ServerEntry};
use mcp_host::{Host, Settings};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

/// The OTLP receiver, shared with the other packages' telemetry tests.
#[path = "../../mcp/tests/otel/receiver.rs"]
mod receiver;
use receiver::{int, string, Receiver};

/// In the tool's arguments and result, and the API key: on no span.
const SECRET: &str = "sk-ant-live-4b1d-never-in-a-span";
const SPAN_KIND_INTERNAL: u64 = 1;
const SPAN_KIND_SERVER: u64 = 2;
const SPAN_KIND_CLIENT: u64 = 3;

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

fn main() {
    let started = Instant::now();
    a_question_its_model_requests_and_its_tool_calls_are_one_trace();
    eprintln!("host otel: one trace from the question to the server: ok ({:?})", started.elapsed());
}

fn a_question_its_model_requests_and_its_tool_calls_are_one_trace() {
    let receiver = Receiver::start();
    // Before any thread: the telemetry reads these once.
    std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://127.0.0.1:{}", receiver.port));
    std::env::set_var("OTEL_BSP_SCHEDULE_DELAY", "50");
    std::env::set_var("OTEL_SERVICE_NAME", "host-otel-test");
    std::env::remove_var("OTEL_SDK_DISABLED");
    mcp::telemetry::init("host-otel-test");
    assert!(mcp::telemetry::is_tracing(), "an endpoint is configured: spans are made");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let answer = runtime.block_on(ask());
    assert!(answer.contains("echo:"), "{answer}");
    mcp::telemetry::flush(Duration::from_secs(5));
    let spans = receiver.wait_for(Duration::from_secs(30), |spans| {
        spans.iter().any(|s| s["span"] == "invoke_agent mcp chat")
            && spans.iter().filter(|s| s["span"] == "chat claude-test").count() == 2
            && spans.iter().any(|s| s["span"] == "tools/call echo" && s["kind"] == SPAN_KIND_SERVER)
    });
    let text = serde_json::to_string(&spans).unwrap();
    assert!(!text.contains(SECRET), "a secret reached a span: {text}");
    assert!(!text.contains("Echo the word"), "the prompt reached a span");

    let question = one(&spans, "invoke_agent mcp chat", SPAN_KIND_INTERNAL);
    assert_eq!(string(question, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(string(question, "gen_ai.provider.name"), "anthropic");
    assert_eq!(string(question, "gen_ai.request.model"), "claude-test");
    assert_eq!(question["parentSpanId"], "", "the question is the trace's root");
    // The connection's own messages (its negotiation, the tools listed) came before the
    // question, in traces of their own; everything the question caused is in its trace.
    let trace = question["traceId"].as_str().unwrap();
    let caused = |s: &&Value| s["span"] == "chat claude-test" || s["span"] == "tools/call echo";
    for span in spans.iter().filter(caused) {
        assert_eq!(span["traceId"], trace, "not in the question's trace: {span:#}");
    }
    let chats: Vec<&Value> = spans.iter().filter(|s| s["span"] == "chat claude-test").collect();
    let mut reasons = HashSet::new();
    for chat in &chats {
        assert_eq!(chat["kind"], SPAN_KIND_CLIENT, "{chat:#}");
        assert_eq!(chat["parentSpanId"], question["spanId"], "a model request under the question");
        assert_eq!(string(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(chat["attributes"]["gen_ai.usage.input_tokens"]["type"], "int_value", "{chat:#}");
        assert!(int(chat, "gen_ai.usage.input_tokens") > 100, "{chat:#}");
        assert_eq!(int(chat, "gen_ai.usage.output_tokens"), 20, "{chat:#}");
        let finish = &chat["attributes"]["gen_ai.response.finish_reasons"];
        assert_eq!(finish["type"], "array_value", "{chat:#}");
        reasons.extend(finish["value"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_owned()));
    }
    assert_eq!(reasons, HashSet::from(["tool_call".to_owned(), "stop".to_owned()]));
    let call = one(&spans, "tools/call echo", SPAN_KIND_CLIENT);
    assert_eq!(call["parentSpanId"], question["spanId"], "the tool call under the question, beside the chats");
    assert_eq!(string(call, "gen_ai.tool.name"), "echo");
    let served = one(&spans, "tools/call echo", SPAN_KIND_SERVER);
    assert_eq!(served["parentSpanId"], call["spanId"], "the server's span under the client's");
}

/// The question: the model calls `demo__echo`, then answers with its result.
async fn ask() -> String {
    let script = vec![
        Step::Turn("Let me echo it.".into(), vec![("demo__echo".into(), json!({"text": SECRET}))]),
        Step::say("The tool said: {last_result}"),
    ];
    let provider = ScriptedProvider::start(Flavor::Anthropic, script).await;
    let router =
        Router::new().info("demo", "1").tool("echo", "Echoes text.", |a: Text, _cx: RequestContext| async move {
            Ok::<_, ToolError>(format!("echo: {}", a.text))
        });
    let client = mcp::testing::connect(router).await;
    let tools = client.list_tools().await.unwrap();
    let server = Server::ready(ServerEntry::named("demo", true), client, tools);
    let project = Arc::new(Mutex::new(Project::ephemeral()));
    let consent = Arc::new(Consent::new(
        vec![Rule::parse("demo/echo").unwrap()],
        Vec::new(),
        false,
        HashSet::new(),
        project,
        Arc::new(NoOne),
    ));
    let anthropic = Arc::new(Anthropic::new(Some(&provider.url), SECRET, &[]).unwrap());
    let mut host = Host::new(anthropic, Settings::new("claude-test"), vec![server], consent, Arc::new(|_| {}));
    host.run("Echo the word I gave you").await.unwrap()
}

fn one<'a>(spans: &'a [Value], name: &str, kind: u64) -> &'a Value {
    let found: Vec<&Value> = spans.iter().filter(|s| s["span"] == name && s["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "one {name} of kind {kind}: {spans:#?}");
    found[0]
}
