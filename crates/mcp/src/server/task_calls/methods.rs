//! The `tasks/*` methods, in both wire forms.
//!
//! 2026-07-28 (the request must declare the extension, else -32021): `tasks/get` (the
//! `DetailedTask`), `tasks/update` and `tasks/cancel` (empty acknowledgements). 2025-11-25
//! sessions: `tasks/get` and `tasks/cancel` (the `Task`), `tasks/result` (waits for the end, then
//! answers exactly what the call would have), `tasks/list`. A task belongs to an account; one
//! of another account's is unknown (-32602), as is an expired one.

use std::time::Duration;

use mcp_types::tasks::{TaskIdParams, TaskUpdateParams, EXTENSION_ID};
use mcp_types::version::ProtocolVersion;
use mcp_types::ErrorObject;
use serde_json::{json, Value};

use super::run::missing_extension;
use crate::server::tasks::manager::TaskManager;
use crate::server::tasks::record::{Outcome, TaskRecord};
use crate::server::tasks::{can_list, wire, NO_LISTING};
use crate::server::RequestContext;

/// Checks the request may use the tasks methods in its era (also before a router that forwards
/// them, a gateway, passes them on).
pub(crate) fn gate(method: &str, cx: &RequestContext, modern: bool) -> Result<(), ErrorObject> {
    if modern {
        if !cx.client_capabilities().has_extension(EXTENSION_ID) {
            return Err(missing_extension(method));
        }
    } else if cx.protocol_version() != ProtocolVersion::V2025_11_25 {
        return Err(ErrorObject::method_not_found(method));
    }
    Ok(())
}

fn unknown(id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("Unknown task: {id} (it never existed, belongs to someone else, or expired)"))
        .with_data(json!({"taskId": id}))
}

fn store_error(e: crate::server::tasks::StoreError) -> ErrorObject {
    ErrorObject::internal(e.to_string())
}

async fn find(manager: &TaskManager, id: &str, cx: &RequestContext) -> Result<TaskRecord, ErrorObject> {
    manager.get(id, &cx.account()).await.map_err(store_error)?.ok_or_else(|| unknown(id))
}

/// `tasks/get`.
pub(crate) async fn get(
    manager: &TaskManager,
    p: TaskIdParams,
    cx: &RequestContext,
    modern: bool,
) -> Result<Value, ErrorObject> {
    gate("tasks/get", cx, modern)?;
    let record = find(manager, &p.task_id, cx).await?;
    Ok(if modern { wire::detailed(&record) } else { wire::legacy_task(&record) })
}

/// `tasks/update` (2026-07-28): answers to the task's questions; unknown or answered keys are
/// ignored.
pub(crate) async fn update(
    manager: &TaskManager,
    p: TaskUpdateParams,
    cx: &RequestContext,
    modern: bool,
) -> Result<Value, ErrorObject> {
    gate("tasks/update", cx, modern)?;
    let account = cx.account();
    match manager.live(&p.task_id, &account) {
        Some(task) => task.answer(p.input_responses).await,
        None => {
            find(manager, &p.task_id, cx).await?; // known but not running here: nothing waits for answers
        }
    }
    Ok(json!({}))
}

/// `tasks/cancel`: an empty acknowledgement (2026-07-28); the cancelled `Task` (2025-11-25), where
/// a task that already ended is -32602.
pub(crate) async fn cancel(
    manager: &TaskManager,
    p: TaskIdParams,
    cx: &RequestContext,
    modern: bool,
) -> Result<Value, ErrorObject> {
    gate("tasks/cancel", cx, modern)?;
    let account = cx.account();
    if !modern {
        let record = find(manager, &p.task_id, cx).await?;
        if record.status.is_terminal() {
            let status = serde_json::to_value(record.status).unwrap_or(Value::Null);
            return Err(ErrorObject::invalid_params(format!("task {} has already ended ({status})", p.task_id)));
        }
    }
    let record = manager.cancel(&p.task_id, &account).await.map_err(store_error)?.ok_or_else(|| unknown(&p.task_id))?;
    Ok(if modern { json!({}) } else { wire::legacy_task(&record) })
}

/// `tasks/result` (2025-11-25): waits until the task ends, then answers what the call would have.
pub(crate) async fn result(manager: &TaskManager, p: TaskIdParams, cx: &RequestContext) -> Result<Value, ErrorObject> {
    gate("tasks/result", cx, false)?;
    let mut changes = manager.changes();
    loop {
        let record = find(manager, &p.task_id, cx).await?;
        if record.status.is_terminal() {
            return match record.outcome {
                Some(Outcome::Result(mut result)) => {
                    if let Value::Object(object) = &mut result {
                        let meta = object.entry("_meta").or_insert_with(|| json!({}));
                        if let Value::Object(meta) = meta {
                            meta.insert(wire::RELATED_TASK.into(), json!({"taskId": record.id}));
                        }
                    }
                    Ok(result)
                }
                Some(Outcome::Error(error)) => Err(error),
                None => Err(ErrorObject::internal(format!("task {} was cancelled before it finished", record.id))),
            };
        }
        // Wake on this task's next change, or look again in a while (its work may run elsewhere).
        let wait = async {
            loop {
                match changes.recv().await {
                    Ok(changed) if changed.id == record.id => return,
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
                    Err(_) => std::future::pending::<()>().await,
                }
            }
        };
        tokio::select! {
            _ = wait => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = cx.cancelled() => return Err(ErrorObject::internal("cancelled")),
        }
    }
}

/// `tasks/list` (2025-11-25): the account's tasks, a page at a time.
pub(crate) async fn list(
    manager: &TaskManager,
    cursor: Option<String>,
    page: usize,
    cx: &RequestContext,
) -> Result<Value, ErrorObject> {
    gate("tasks/list", cx, false)?;
    let account = cx.account();
    if !can_list(&account) {
        return Err(ErrorObject::invalid_request(NO_LISTING));
    }
    let tasks = manager.list(&account, None, cursor.as_deref(), page + 1).await.map_err(store_error)?;
    let more = tasks.len() > page;
    let shown: Vec<Value> = tasks.iter().take(page).map(wire::legacy_task).collect();
    let mut result = json!({"tasks": shown});
    if more {
        result["nextCursor"] = json!(tasks[page - 1].id);
    }
    Ok(result)
}

/// Whether a task change is one a listener asked for, and its notification's params.
pub(crate) fn notification(record: &TaskRecord, ids: &[String], account: &str) -> Option<Value> {
    (record.owner == account && ids.contains(&record.id)).then(|| wire::detailed(record))
}
