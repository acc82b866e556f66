//! Task records in each wire form: the 2026-07-28 extension's flat `Task` / `DetailedTask`, and
//! the 2025-11-25 `Task` and `CreateTaskResult`.

use mcp_types::tasks::TaskStatus;
use serde_json::{json, Map, Value};

use super::record::{iso8601, Outcome, TaskRecord};

/// The `_meta` key that ties 2025-11-25 messages to a task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

fn status(status: TaskStatus) -> Value {
    serde_json::to_value(status).unwrap_or(Value::Null)
}

/// The fields every form shares.
fn base(record: &TaskRecord) -> Map<String, Value> {
    let mut task = Map::new();
    task.insert("taskId".into(), record.id.clone().into());
    task.insert("status".into(), status(record.status));
    if let Some(message) = &record.status_message {
        task.insert("statusMessage".into(), message.clone().into());
    }
    task.insert("createdAt".into(), iso8601(record.created_ms).into());
    task.insert("lastUpdatedAt".into(), iso8601(record.updated_ms).into());
    task
}

/// 2026-07-28: a `CreateTaskResult` (`resultType: "task"`, the task's fields at the top level).
pub fn created(record: &TaskRecord) -> Value {
    let mut task = base(record);
    task.insert("resultType".into(), "task".into());
    task.insert("ttlMs".into(), json!(record.ttl_ms));
    if record.poll_interval_ms > 0 {
        task.insert("pollIntervalMs".into(), json!(record.poll_interval_ms));
    }
    Value::Object(task)
}

/// 2026-07-28: the `DetailedTask` of `tasks/get` and `notifications/tasks`: the task, and by
/// status its questions, result or error.
pub fn detailed(record: &TaskRecord) -> Value {
    let mut task = base(record);
    task.insert("ttlMs".into(), json!(record.ttl_ms));
    if record.poll_interval_ms > 0 {
        task.insert("pollIntervalMs".into(), json!(record.poll_interval_ms));
    }
    match (&record.status, &record.outcome) {
        (TaskStatus::InputRequired, _) => {
            let requests = record.input_requests.clone().unwrap_or_default();
            task.insert("inputRequests".into(), Value::Object(requests));
        }
        (TaskStatus::Completed, Some(Outcome::Result(result))) => {
            task.insert("result".into(), result.clone());
        }
        (TaskStatus::Failed, Some(Outcome::Error(error))) => {
            task.insert("error".into(), serde_json::to_value(error).unwrap_or(Value::Null));
        }
        _ => {}
    }
    Value::Object(task)
}

/// 2025-11-25: a `Task`.
pub fn legacy_task(record: &TaskRecord) -> Value {
    let mut task = base(record);
    task.insert("ttl".into(), json!(record.ttl_ms));
    if record.poll_interval_ms > 0 {
        task.insert("pollInterval".into(), json!(record.poll_interval_ms));
    }
    Value::Object(task)
}

/// 2025-11-25: the `CreateTaskResult` of a task-augmented request, with a line for the model
/// while it runs.
pub fn legacy_created(record: &TaskRecord) -> Value {
    let immediate = format!(
        "Started task {} ({}): it runs in the background; its result arrives when it completes.",
        record.id, record.tool
    );
    json!({
        "task": legacy_task(record),
        "_meta": {"io.modelcontextprotocol/model-immediate-response": immediate},
    })
}
