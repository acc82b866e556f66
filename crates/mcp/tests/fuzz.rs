//! Fuzzing the envelope decoder and the router with proptest (cargo-fuzz needs a nightly
//! toolchain, which this project does not assume).
//!
//! Properties: no input panics the decoder; no sequence of lines panics or hangs the engine;
//! every line the server writes is a JSON-RPC message; every request with a usable id gets
//! exactly one answer (or none if it was cancelled), and the server answers a probe afterwards.
//!
//! By default each property runs a few hundred cases. `MCP_FUZZ_SECONDS=N` keeps generating
//! new cases for N seconds per property instead (`.ci/run` does this).

use std::time::{Duration, Instant};

use mcp::server::{NoArgs, RequestContext, Router, ToolError};
use mcp::transport::memory::connect;
use mcp::types::jsonrpc::Envelope;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "notifications/initialized",
    "notifications/cancelled",
    "tasks/get",
    "nope",
    "",
];

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "[a-z/_.{}0-9 é\\x00-\\x1f]{0,12}".prop_map(Value::String),
        prop::sample::select(METHODS).prop_map(|m| Value::String(m.into())),
        Just(json!("2026-07-28")),
        Just(json!("2025-03-26")),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    "[a-zA-Z_]{1,8}",
                    prop::sample::select(
                        &[
                            "_meta",
                            "name",
                            "arguments",
                            "uri",
                            "cursor",
                            "level",
                            "requestId",
                            "protocolVersion",
                            "capabilities",
                            "clientInfo",
                            "io.modelcontextprotocol/protocolVersion",
                            "io.modelcontextprotocol/clientCapabilities",
                            "progressToken",
                            "text",
                            "ms",
                            "notifications",
                            "inputResponses",
                            "requestState",
                            "ref",
                            "argument"
                        ][..]
                    )
                    .prop_map(String::from),
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn id() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        (0i64..20).prop_map(|n| Some(json!(n))),
        "[a-c]{1,2}".prop_map(|s| Some(json!(s))),
        Just(Some(Value::Null)),
        Just(Some(json!(1.5))),
        Just(Some(json!({"x": 1}))),
    ]
}

fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})
}

/// A line: a plausible message with random parts, or garbage.
fn line() -> impl Strategy<Value = String> {
    let message = (id(), prop::sample::select(METHODS), json_value(), any::<bool>(), any::<bool>()).prop_map(
        |(id, method, params, with_meta, with_version)| {
            let mut m = serde_json::Map::new();
            if with_version {
                m.insert("jsonrpc".into(), json!("2.0"));
            }
            if let Some(id) = id {
                m.insert("id".into(), id);
            }
            m.insert("method".into(), json!(method));
            let mut params = params;
            if with_meta {
                if let Value::Object(p) = &mut params {
                    p.insert("_meta".into(), modern_meta());
                }
            }
            m.insert("params".into(), params);
            Value::Object(m).to_string()
        },
    );
    prop_oneof![
        6 => message,
        1 => json_value().prop_map(|v| v.to_string()),
        1 => "[ -~]{0,40}",
        1 => prop::collection::vec(any::<u8>(), 0..40).prop_map(|b| String::from_utf8_lossy(&b).replace('\n', " ")),
    ]
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Sleep {
    ms: u64,
}

fn router() -> Router {
    Router::new()
        .tool("echo", "Echo.", |a: Value, _cx: RequestContext| async move { Ok::<_, ToolError>(a.to_string()) })
        .tool("sleep", "Sleeps.", |a: Sleep, _cx: RequestContext| async move {
            tokio::time::sleep(Duration::from_millis(a.ms.min(20))).await;
            Ok::<_, ToolError>("ok".to_owned())
        })
        .tool("ask", "Asks.", |_: NoArgs, cx: RequestContext| async move {
            let answer = cx.elicit::<Sleep>("How long?").await?;
            Ok::<_, ToolError>(format!("{answer:?}"))
        })
}

fn budget() -> Option<Duration> {
    std::env::var("MCP_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).map(Duration::from_secs)
}

/// Runs `property` on fresh cases: a fixed number, or until the time budget is spent.
fn run<S: Strategy>(strategy: S, cases: u32, property: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let deadline = budget().map(|b| Instant::now() + b);
    let mut rounds = 0u64;
    loop {
        let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
        if let Err(e) = runner.run(&strategy, &property) {
            panic!("{e}");
        }
        rounds += 1;
        match deadline {
            Some(d) if Instant::now() < d => continue,
            _ => break,
        }
    }
    eprintln!("fuzz: {} rounds of {cases} cases", rounds);
}

#[test]
fn the_envelope_decoder_never_panics() {
    run(
        prop_oneof![
            line(),
            prop::collection::vec(any::<u8>(), 0..64).prop_map(|b| String::from_utf8_lossy(&b).into_owned())
        ],
        2000,
        |input| {
            if let Ok(envelope) = serde_json::from_str::<Envelope>(&input) {
                let _ = envelope.kind();
            }
            Ok(())
        },
    );
}

#[test]
fn no_sequence_of_lines_panics_or_hangs_the_server() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    run(prop::collection::vec(line(), 1..12), 64, |lines| {
        runtime.block_on(async {
            let mut peer = connect(router());
            for l in &lines {
                peer.send_line(l).await.unwrap();
            }
            // A probe that must be answered: the server is alive and not stuck.
            let probe = json!({"jsonrpc": "2.0", "id": "probe", "method": "server/discover", "params": {"_meta": modern_meta()}});
            peer.send(&probe).await.unwrap();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
            loop {
                let msg = tokio::time::timeout_at(deadline, peer.recv()).await;
                let msg = msg.map_err(|_| TestCaseError::fail(format!("no answer to the probe after {lines:?}")))?;
                let msg = msg.map_err(|e| TestCaseError::fail(format!("invalid output: {e}")))?;
                let Some(msg) = msg else { return Err(TestCaseError::fail("the server closed the connection")) };
                let items = match &msg {
                    Value::Array(items) => items.clone(),
                    other => vec![other.clone()],
                };
                for item in &items {
                    prop_assert_eq!(&item["jsonrpc"], "2.0", "not JSON-RPC: {}", item);
                }
                if msg["id"] == "probe" {
                    prop_assert_eq!(&msg["result"]["resultType"], "complete");
                    return Ok(());
                }
            }
        })
    });
}

/// An id as raw JSON text: valid ones from a small pool (so they repeat), ids of every other type
/// and size, and the ids of the server's own requests to the client (`s-0`, `s-1`).
fn raw_id() -> impl Strategy<Value = &'static str> {
    prop::sample::select(
        &[
            "1",
            "2",
            "3",
            "\"a\"",
            "\"1\"",
            "\"s-0\"",
            "\"s-1\"",
            "null",
            "1.5",
            "{\"x\":1}",
            "[1]",
            "true",
            "123456789012345678901234567890",
            "1e400",
        ][..],
    )
}

/// One message of a session: a request (sometimes with a reused id), a cancellation, or a
/// response (well formed or not) that must never be answered.
fn session_line() -> impl Strategy<Value = String> {
    let request = (raw_id(), prop::sample::select(&["ping", "tools/list", "sleep", "ask", "echo"][..])).prop_map(
        |(id, what)| match what {
            "sleep" => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"sleep","arguments":{{"ms":15}}}}}}"#
            ),
            "ask" => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"ask","arguments":{{}}}}}}"#
            ),
            "echo" => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"x":1}}}}}}"#
            ),
            method => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#),
        },
    );
    let cancel = raw_id().prop_map(|id| {
        format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#)
    });
    let response = (raw_id(), 0usize..8).prop_map(|(id, shape)| match shape {
        0 => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"action":"accept","content":{{"ms":1}}}}}}"#),
        1 => format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-1,"message":"no"}}}}"#),
        2 => format!(r#"{{"jsonrpc":"1.0","id":{id},"result":{{}}}}"#),
        3 => format!(r#"{{"jsonrpc":"2.0","id":{id},"error":"not an object"}}"#),
        4 => format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":"x"}}}}"#),
        5 => format!(r#"{{"id":{id},"result":null}}"#),
        6 => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":1,"error":{{"code":1,"message":"m"}}}}"#),
        _ => format!(r#"[{{"jsonrpc":"2.0","id":{id},"result":{{}}}}]"#),
    });
    prop_oneof![4 => request, 1 => cancel, 4 => response]
}

/// The id a line carries, as the server would echo it (`None` when it is not a usable id), and
/// whether the line is request-shaped (has a method, or neither result nor error).
fn id_and_shape(line: &str) -> Option<(String, bool)> {
    let value: Value = serde_json::from_str(line).ok()?;
    let id = value.get("id")?;
    let id: mcp::types::RequestId = serde_json::from_value(id.clone()).ok()?;
    let request_shaped =
        value.get("method").is_some() || (value.get("result").is_none() && value.get("error").is_none());
    Some((serde_json::to_string(&id).ok()?, request_shaped))
}

#[test]
fn answers_never_outnumber_requests_and_responses_are_never_answered() {
    use std::collections::HashMap;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let options = mcp::server::ServeOptions { shutdown_grace: Duration::from_millis(50), ..Default::default() };
    run((any::<bool>(), prop::collection::vec(session_line(), 1..16)), 64, |(legacy, lines)| {
        runtime.block_on(async {
            let mut peer = mcp::transport::memory::connect_with(router(), options.clone());
            let mut requests: HashMap<String, usize> = HashMap::new();
            if legacy {
                let init = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}"#;
                peer.send_line(init).await.unwrap();
                *requests.entry("\"init\"".into()).or_default() += 1;
            }
            for l in &lines {
                // Outside a session a modern request needs _meta; add it to half of them.
                let l = if !legacy && l.contains("\"method\":\"tools/") {
                    l.replacen("\"params\":{", &format!("\"params\":{{\"_meta\":{},", modern_meta()), 1)
                } else {
                    l.clone()
                };
                if let Some((id, true)) = id_and_shape(&l) {
                    *requests.entry(id).or_default() += 1;
                }
                peer.send_line(&l).await.unwrap();
            }
            peer.close().await.unwrap();
            let mut answers: HashMap<String, usize> = HashMap::new();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
            loop {
                let msg = tokio::time::timeout_at(deadline, peer.recv()).await;
                let msg = msg.map_err(|_| TestCaseError::fail(format!("the server did not finish after {lines:?}")))?;
                let msg = msg.map_err(|e| TestCaseError::fail(format!("invalid output: {e}")))?;
                let Some(msg) = msg else { break };
                for item in msg.as_array().cloned().unwrap_or_else(|| vec![msg.clone()]) {
                    prop_assert_eq!(&item["jsonrpc"], "2.0", "not JSON-RPC: {}", item);
                    if item.get("method").is_none() && !item["id"].is_null() {
                        *answers.entry(item["id"].to_string()).or_default() += 1;
                    }
                }
            }
            for (id, n) in &answers {
                let asked = requests.get(id).copied().unwrap_or(0);
                prop_assert!(*n <= asked, "{n} answers to id {id}, asked {asked} times, after {lines:?}");
            }
            Ok(())
        })
    });
}
