//! `mcp call`: a tool called with `key=value` arguments (read by the tool's schema) or `--args`;
//! a call that becomes a task is followed to its end (or, with `--detach`, its id printed).

use std::io::IsTerminal;

use mcp::client::{Client, ToolCall};
use serde_json::{json, Map, Value};

use super::task::{follow_task, task_json};
use crate::cli::Cli;
use crate::failure::{protocol, Failure};
use crate::output;
use crate::setup::split_pair;

/// Calls the tool `name`: its arguments from `--args` and the `key=value` `pairs`.
pub(crate) async fn call(
    cli: &Cli,
    client: &Client,
    name: &str,
    pairs: &[String],
    args: Option<&str>,
    detach: bool,
) -> Result<Value, Failure> {
    let mut arguments: Map<String, Value> = match args {
        Some(text) => match serde_json::from_str(text) {
            Ok(Value::Object(m)) => m,
            _ => return Err(Failure::Usage("--args must be a JSON object".into())),
        },
        None => Map::new(),
    };
    // Values that can only be strings need no schema; anything else is read by the tool's schema.
    let ambiguous =
        pairs.iter().any(|p| p.split_once('=').is_some_and(|(_, v)| serde_json::from_str::<Value>(v).is_ok()));
    if ambiguous {
        let tools = client.list_tools().await.map_err(protocol)?;
        let schema =
            tools.iter().find(|t| t.name == name).map(|t| Value::Object(t.input_schema.clone())).unwrap_or(Value::Null);
        for pair in pairs {
            let (k, v) = split_pair(pair)?;
            let kind = schema["properties"][&k]["type"].clone();
            arguments.insert(k, output::coerce(&v, &kind));
        }
    } else {
        for pair in pairs {
            let (k, v) = split_pair(pair)?;
            arguments.insert(k, Value::String(v));
        }
    }
    let show_progress = !cli.json && std::io::stderr().is_terminal();
    let started = client
        .start_tool_with_progress(name, Value::Object(arguments), move |p| {
            if show_progress {
                let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
                eprint!("\r\x1b[2K{}{total} {}", p.progress, p.message.unwrap_or_default());
            }
        })
        .await
        .map_err(protocol)?;
    let result = match started {
        ToolCall::Done(result) => result,
        ToolCall::Task(task) if detach => return Ok(task_json(&task)),
        ToolCall::Task(task) => follow_task(client, &task.id, show_progress).await?,
    };
    if show_progress {
        eprint!("\r\x1b[2K");
    }
    let value = json!(result);
    if result.is_error() {
        Err(Failure::ToolError(value))
    } else {
        Ok(value)
    }
}
