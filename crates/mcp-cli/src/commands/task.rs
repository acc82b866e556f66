//! `mcp task get|result|cancel|list`, and following a task to its end (its status shown as it
//! changes, Ctrl-C cancelling it), which `mcp call` does too.

use std::io::IsTerminal;

use mcp::client::Client;
use serde_json::{json, Value};

use crate::cli::TaskAction;
use crate::failure::{protocol, Failure};

/// Waits for a task to end, showing its status as it changes; Ctrl-C cancels it.
pub(crate) async fn follow_task(
    client: &Client,
    id: &str,
    show: bool,
) -> Result<mcp::types::tools::CallToolResult, Failure> {
    let wait = client.wait_task(id, |task| {
        if show {
            let status = json!(task.status);
            let message = task.message.as_deref().unwrap_or_default();
            eprint!("\r\x1b[2Ktask {}: {message}", status.as_str().unwrap_or_default());
        }
    });
    tokio::select! {
        result = wait => result.map_err(protocol),
        _ = tokio::signal::ctrl_c() => {
            if show {
                eprint!("\r\x1b[2K");
            }
            let cancelled = client.cancel_task(id).await;
            let what = match cancelled {
                Ok(()) => format!("interrupted: asked the server to cancel task {id}"),
                Err(e) => format!("interrupted; cancelling task {id} failed: {e}"),
            };
            Err(Failure::Interrupted(what))
        }
    }
}

/// A task as `mcp` prints it.
pub(crate) fn task_json(task: &mcp::client::TaskInfo) -> Value {
    json!({
        "taskId": task.id,
        "status": task.status,
        "statusMessage": task.message,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.last_updated_at,
        "pollIntervalMs": task.poll_interval.map(|d| d.as_millis() as u64),
        "inputRequests": task.input_requests,
        "result": task.result,
        "error": task.error,
    })
}

/// `mcp task ...`.
pub(crate) async fn task(client: &Client, action: &TaskAction) -> Result<Value, Failure> {
    match action {
        TaskAction::Get { id } => client.get_task(id).await.map(|t| task_json(&t)).map_err(protocol),
        TaskAction::Cancel { id } => client.cancel_task(id).await.map(|()| json!({"cancelled": id})).map_err(protocol),
        TaskAction::List => {
            let tasks = client.list_tasks().await.map_err(protocol)?;
            Ok(json!({"tasks": tasks.iter().map(task_json).collect::<Vec<_>>()}))
        }
        TaskAction::Result { id } => {
            let result =
                follow_task(client, id, !std::io::stdout().is_terminal() && std::io::stderr().is_terminal()).await?;
            let value = json!(result);
            if result.is_error() {
                Err(Failure::ToolError(value))
            } else {
                Ok(value)
            }
        }
    }
}
