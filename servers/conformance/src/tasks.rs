//! The fixtures of the suite's tasks scenarios (SEP-2663): a sync tool, tools that may run long,
//! tools that ask inside their task, and one that asks before it becomes one.

use std::time::Duration;

use mcp::proxy::ProxyContext as _;
use mcp::server::{NoArgs, RequestContext, Router, ToolDef, ToolError};
use mcp::tasks::TaskSupport;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

/// Arguments of `greet`.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

/// Arguments of `slow_compute`.
#[derive(Deserialize, JsonSchema)]
struct SlowCompute {
    /// How long to work, in seconds (0: answer at once).
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

/// Arguments of `confirm_delete`.
#[derive(Deserialize, JsonSchema)]
struct ConfirmDelete {
    /// The file to delete.
    filename: String,
}

async fn greet(args: Greet, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(format!("Hello, {}!", args.name))
}

/// Works for `seconds`, reporting progress every tenth of a second; cancellation drops it.
async fn slow_compute(args: SlowCompute, cx: RequestContext) -> Result<String, ToolError> {
    let steps = (args.seconds.clamp(0.0, 3600.0) * 10.0).round() as u64;
    for step in 0..steps {
        cx.progress(step as f64, Some(steps as f64), Some(&format!("step {step} of {steps}"))).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(format!("computed {} in {} s", args.label.unwrap_or_default(), args.seconds))
}

async fn failing_job(_: NoArgs, _cx: RequestContext) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::new("the job failed, as this fixture always does"))
}

async fn protocol_error_job(_: NoArgs, _cx: RequestContext) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(500)).await;
    panic!("protocol_error_job fails with a protocol error, on purpose");
}

fn confirm(message: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
    })
}

/// Becomes a task, then asks the user to confirm.
async fn confirm_delete(args: ConfirmDelete, cx: RequestContext) -> Result<String, ToolError> {
    cx.become_task().await;
    let answer =
        cx.ask_keyed("confirm_delete", "elicitation/create", confirm(&format!("Delete {}?", args.filename))).await?;
    let yes = answer["action"] == "accept" && answer["content"]["confirm"] == true;
    Ok(if yes { format!("deleted {}", args.filename) } else { format!("kept {}", args.filename) })
}

/// Becomes a task, then asks two questions at once.
async fn multi_input(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    cx.become_task().await;
    let name = json!({
        "message": "Your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    });
    let questions = vec![
        ("name".to_owned(), "elicitation/create".to_owned(), name),
        ("confirm".to_owned(), "elicitation/create".to_owned(), confirm("Go ahead?")),
    ];
    let answers = cx.ask_all(questions).await?;
    Ok(format!("got {} answers: {} and {}", answers.len(), answers[0]["content"], answers[1]["content"]))
}

/// Asks for a name before it becomes a task (an input_required round), then works as one.
async fn tool_with_task(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let question = json!({
        "message": "What is your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    });
    let answer = cx.ask_keyed("user_name", "elicitation/create", question).await?;
    let name = answer["content"]["name"].as_str().unwrap_or("stranger").to_owned();
    cx.become_task().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    Ok(format!("Hello, {name}! Your task is done."))
}

/// Becomes a task at once and ends: what running anything as a task costs (bench-tasks).
async fn trivial_task(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    cx.become_task().await;
    Ok("done".into())
}

fn def(name: &str, description: &str, support: Option<TaskSupport>) -> ToolDef {
    let def = ToolDef::new(name).description(description);
    match support {
        Some(support) => def.task_support(support),
        None => def,
    }
}

/// Adds the fixtures.
pub fn add(router: Router) -> Router {
    use TaskSupport::{Optional, Required};
    router
        .tool_def(def("greet", "Returns Hello, {name}! at once.", None), greet)
        .tool_def(def("slow_compute", "Works for `seconds` seconds, then answers.", Some(Optional)), slow_compute)
        .tool_def(def("failing_job", "Fails with a tool error after about a second.", Some(Required)), failing_job)
        .tool_def(def("protocol_error_job", "Fails with a protocol error.", Some(Optional)), protocol_error_job)
        .tool_def(def("confirm_delete", "Asks to confirm a deletion, inside its task.", Some(Optional)), confirm_delete)
        .tool_def(def("multi_input", "Asks two questions at once, inside its task.", Some(Optional)), multi_input)
        .tool_def(
            def("test_tool_with_task", "Asks a name before it becomes a task, then greets.", Some(Required)),
            tool_with_task,
        )
        .tool_def(def("trivial_task", "Becomes a task and ends at once.", Some(Optional)), trivial_task)
}
