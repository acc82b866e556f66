//! Every example of `crates/mcp/examples/` run as a host runs it: its binary started as a child
//! process, spoken to over real pipes, in both eras where the example is about them.
//!
//! The binaries are the ones `cargo test` builds beside this test
//! (`target/debug/examples/NAME`); with `--test examples` alone, build them first
//! (`cargo build -p mcp-stack --examples`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::client::{Client, ClientOptions, Handlers, StdioCommand};
use mcp::testing::{assert_tool_error, assert_tool_ok};
use mcp::types::completion::{CompletionArgument, CompletionRef};
use mcp::types::elicitation::{ElicitAction, ElicitResult};
use serde_json::{json, Value};

/// The path of example `name`'s binary, which must exist.
fn example(name: &str) -> String {
    let exe = std::env::current_exe().expect("the test's path");
    let dir: PathBuf = exe.parent().and_then(|deps| deps.parent()).expect("target/debug").join("examples");
    let path = dir.join(name);
    assert!(path.exists(), "{} is not built: run `cargo build -p mcp-stack --examples` first", path.display());
    path.to_string_lossy().into_owned()
}

/// A client of example `name`, in the 2026-07-28 era or (`legacy`) after `initialize`.
async fn connect(name: &str, legacy: bool, handlers: Handlers) -> Client {
    let options = ClientOptions { legacy_only: legacy, handlers, ..ClientOptions::default() };
    Client::connect_stdio(StdioCommand::new(example(name)), options).await.expect("the example starts and answers")
}

fn text_of_read(result: &Value) -> &str {
    result["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("a text resource: {result}"))
}

#[tokio::test]
async fn calculator_adds_in_both_eras() {
    for legacy in [false, true] {
        let client = connect("calculator", legacy, Handlers::default()).await;
        let tools = client.list_tools().await.unwrap();
        assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["sum"]);
        assert_eq!(assert_tool_ok(&client.call_tool("sum", json!({"a": 2, "b": 3})).await.unwrap()), "2 + 3 = 5");
        assert_tool_error(&client.call_tool("sum", json!({"a": 2})).await.unwrap(), "\"b\" is a required property");
        client.close().await;
    }
}

#[tokio::test]
async fn notes_keeps_its_state_across_calls_and_tells_subscribers() {
    let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let sink = seen.clone();
    let options = ClientOptions {
        legacy_only: true, // resources/subscribe is a session's
        on_notification: Some(Arc::new(move |method: &str, params: &Value| {
            sink.lock().unwrap().push((method.to_owned(), params.clone()))
        })),
        ..ClientOptions::default()
    };
    let client = Client::connect_stdio(StdioCommand::new(example("notes")), options).await.unwrap();
    assert!(assert_tool_ok(&client.call_tool("list_notes", json!({})).await.unwrap()).contains("empty"));
    client.request("resources/subscribe", json!({"uri": "notes://all"})).await.unwrap();
    for (text, count) in [("milk", 1), ("eggs", 2)] {
        let answer = assert_tool_ok(&client.call_tool("add_note", json!({"text": text})).await.unwrap());
        assert_eq!(answer, format!("noted; the notebook holds {count} notes"));
    }
    assert_eq!(assert_tool_ok(&client.call_tool("list_notes", json!({})).await.unwrap()), "1. milk\n2. eggs");
    let read = client.request("resources/read", json!({"uri": "notes://all"})).await.unwrap();
    assert_eq!(text_of_read(&read), "milk\neggs");
    assert_tool_error(&client.call_tool("add_note", json!({"text": "a\nb"})).await.unwrap(), "one line");
    let updated = |seen: &[(String, Value)]| {
        seen.iter().filter(|(m, p)| m == "notifications/resources/updated" && p["uri"] == "notes://all").count()
    };
    for _ in 0..100 {
        if updated(&seen.lock().unwrap()) >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(updated(&seen.lock().unwrap()), 2, "one update per note added: {:?}", seen.lock().unwrap());
    client.close().await;
}

#[tokio::test]
async fn structured_declares_its_output_schema_and_answers_with_it() {
    let client = connect("structured", false, Handlers::default()).await;
    let tools = client.list_tools().await.unwrap();
    let schema = tools[0].output_schema.as_ref().expect("an outputSchema derived from Stats");
    assert!(schema["properties"]["words"].is_object(), "{schema:?}");
    let result = client.call_tool("word_stats", json!({"text": "the quick brownish fox"})).await.unwrap();
    assert_eq!(result.structured_content, Some(json!({"words": 4, "characters": 22, "longest": "brownish"})));
    client.close().await;
}

/// A client that answers the booking question with `answer` (an `accept` with these values), or
/// declines when it is `None`.
fn answering(answer: Option<Value>) -> Handlers {
    Handlers {
        elicitation: Some(Arc::new(move |params| {
            let answer = answer.clone();
            Box::pin(async move {
                let asked = serde_json::to_value(&params).unwrap();
                assert!(asked["message"].as_str().unwrap().contains("Chez Nous"), "{asked}");
                Ok(match answer {
                    Some(Value::Object(values)) => ElicitResult {
                        result_type: None,
                        action: ElicitAction::Accept,
                        content: Some(values),
                        meta: None,
                    },
                    _ => ElicitResult { result_type: None, action: ElicitAction::Decline, content: None, meta: None },
                })
            })
        })),
        ..Handlers::default()
    }
}

#[tokio::test]
async fn elicitation_asks_the_user_in_both_eras() {
    for legacy in [false, true] {
        let client = connect("elicitation", legacy, answering(Some(json!({"guests": 4, "name": "Ada"})))).await;
        let result = client.call_tool("book_table", json!({"restaurant": "Chez Nous"})).await.unwrap();
        assert_eq!(assert_tool_ok(&result), "booked: Ada at Chez Nous for 4 guests", "legacy: {legacy}");
        client.close().await;
        let client = connect("elicitation", legacy, answering(None)).await;
        let result = client.call_tool("book_table", json!({"restaurant": "Chez Nous"})).await.unwrap();
        assert_eq!(assert_tool_ok(&result), "the user declined: nothing was booked", "legacy: {legacy}");
        client.close().await;
    }
}

#[tokio::test]
async fn progress_is_reported_and_a_cancelled_call_stops() {
    let client = connect("progress", false, Handlers::default()).await;
    let steps: Arc<Mutex<Vec<f64>>> = Arc::default();
    let sink = steps.clone();
    let result = client
        .call_tool_with_progress("count_to", json!({"to": 5, "every_ms": 1}), move |p| {
            sink.lock().unwrap().push(p.progress)
        })
        .await
        .unwrap();
    assert_eq!(assert_tool_ok(&result), "counted to 5");
    assert_eq!(*steps.lock().unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0]);
    // Stop waiting for a long count: the client sends notifications/cancelled, the tool stops.
    let long = client.call_tool("count_to", json!({"to": 10000, "every_ms": 10}));
    assert!(tokio::time::timeout(Duration::from_millis(300), long).await.is_err(), "10000 steps take 100 s");
    let mut said = String::new();
    for _ in 0..250 {
        said = client.stderr();
        if said.contains("count_to: cancelled at") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(said.contains("count_to: cancelled at") && said.contains("of 10000"), "stderr: {said}");
    assert_eq!(assert_tool_ok(&client.call_tool("count_to", json!({"to": 1})).await.unwrap()), "counted to 1");
    client.close().await;
}

#[tokio::test]
async fn completion_offers_the_template_variables_values() {
    let client = connect("completion", false, Handlers::default()).await;
    let templates = client.list_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "weather://{city}");
    let reference = CompletionRef::Resource { uri: "weather://{city}".into() };
    let offered =
        client.complete(reference, CompletionArgument { name: "city".into(), value: "Pa".into() }).await.unwrap();
    assert_eq!(offered.completion.values, ["paris", "parma"]);
    let read = client.request("resources/read", json!({"uri": "weather://porto"})).await.unwrap();
    assert_eq!(text_of_read(&read), "porto: windy, 17 °C");
    let unknown = client.request("resources/read", json!({"uri": "weather://oslo"})).await;
    let message = unknown.expect_err("no forecast for oslo").to_string();
    assert!(message.contains("no forecast for \"oslo\""), "{message}");
    client.close().await;
}

#[test]
fn client_calls_a_server_it_starts() {
    let out = std::process::Command::new(example("client"))
        .args([example("calculator").as_str(), "sum", r#"{"a": 2, "b": 3}"#])
        .output()
        .expect("the client example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout, "tool sum: Adds two numbers. Call this for any addition.\nsum answered: 2 + 3 = 5\n");
    let out = std::process::Command::new(example("client")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: client SERVER"));
}
