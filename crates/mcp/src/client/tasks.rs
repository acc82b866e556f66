//! Tasks from the client's side, in both wire forms: start a tool call that may become a task,
//! follow it (polling at the server's hint, woken early by its status notifications), answer
//! what it asks, cancel it, fetch its result.
//!
//! On a 2026-07-28 connection the client declares the tasks extension (unless
//! [`ClientOptions::tasks`](super::ClientOptions::tasks) is off) and the server decides; on a
//! 2025-11-25 one it asks for a task (`params.task`) when the server offers tasks for tool calls
//! and the tool supports them. [`Client::call_tool`](super::Client::call_tool) follows a task to
//! its end, so a caller that does not care sees a plain result.

use std::time::Duration;

use mcp_types::tasks::TaskStatus;
use mcp_types::tools::CallToolResult;
use mcp_types::{ErrorObject, JsonObject};
use serde_json::{json, Value};

use super::Client;
use crate::error::Error;

/// A task as the server last described it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskInfo {
    /// Its id.
    pub id: String,
    /// Its status.
    pub status: TaskStatus,
    /// What it is doing.
    pub message: Option<String>,
    /// When to look again.
    pub poll_interval: Option<Duration>,
    /// Created (ISO 8601).
    pub created_at: String,
    /// Last changed (ISO 8601).
    pub last_updated_at: String,
    /// How long it is kept after it was created (`None`: no limit).
    pub ttl: Option<Duration>,
    /// 2026-07-28, `input_required`: the questions waiting for an answer.
    pub input_requests: Option<JsonObject>,
    /// 2026-07-28, `completed`: the result.
    pub result: Option<Value>,
    /// 2026-07-28, `failed`: the error.
    pub error: Option<ErrorObject>,
}

impl TaskInfo {
    /// Reads a task of either form (`ttlMs`/`pollIntervalMs` or `ttl`/`pollInterval`).
    pub fn from_value(v: &Value) -> Result<TaskInfo, Error> {
        let text = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        let ms = |a: &str, b: &str| v.get(a).or_else(|| v.get(b)).and_then(Value::as_u64).map(Duration::from_millis);
        let status = v
            .get("status")
            .cloned()
            .and_then(|s| serde_json::from_value(s).ok())
            .ok_or_else(|| Error::protocol(format!("a task without a valid status: {v}")))?;
        Ok(TaskInfo {
            id: text("taskId").ok_or_else(|| Error::protocol(format!("a task without taskId: {v}")))?,
            status,
            message: text("statusMessage"),
            poll_interval: ms("pollIntervalMs", "pollInterval"),
            created_at: text("createdAt").unwrap_or_default(),
            last_updated_at: text("lastUpdatedAt").unwrap_or_default(),
            ttl: ms("ttlMs", "ttl"),
            input_requests: v.get("inputRequests").and_then(Value::as_object).cloned(),
            result: v.get("result").cloned(),
            error: v.get("error").cloned().and_then(|e| serde_json::from_value(e).ok()),
        })
    }
}

/// What starting a tool call gave.
#[derive(Debug, Clone)]
pub enum ToolCall {
    /// The tool answered.
    Done(CallToolResult),
    /// The call became a task.
    Task(TaskInfo),
}

fn result_of(value: Value) -> Result<CallToolResult, Error> {
    serde_json::from_value(value).map_err(|e| Error::protocol(format!("malformed tools/call result: {e}")))
}

/// Cancels a task whose follower was dropped before it ended.
struct CancelOnDrop {
    client: Option<Client>,
    id: String,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let (Some(client), Ok(runtime)) = (self.client.take(), tokio::runtime::Handle::try_current()) else { return };
        let id = std::mem::take(&mut self.id);
        runtime.spawn(async move {
            if let Err(e) = client.cancel_task(&id).await {
                tracing::debug!("tasks/cancel of an abandoned task {id}: {e}");
            }
        });
    }
}

impl Client {
    /// Calls a tool and lets it become a task when the server wants (2026-07-28) or offers one
    /// for this tool (2025-11-25).
    pub async fn start_tool(&self, name: &str, arguments: Value) -> Result<ToolCall, Error> {
        self.start_tool_with_progress(name, arguments, |_| {}).await
    }

    /// [`Client::start_tool`], reporting progress until the call answers.
    pub async fn start_tool_with_progress(
        &self,
        name: &str,
        arguments: Value,
        on_progress: impl Fn(mcp_types::utilities::ProgressParams) + Send + Sync + 'static,
    ) -> Result<ToolCall, Error> {
        let mut params = json!({"name": name, "arguments": arguments});
        if !self.core.description().modern && self.offers_task(name).await? {
            params["task"] = json!({});
        }
        let answer = self.request_with_progress("tools/call", params, on_progress).await?;
        self.started(answer)
    }

    /// Reads what a `tools/call` answered: a result, or a task in either form.
    pub(crate) fn started(&self, answer: Value) -> Result<ToolCall, Error> {
        if answer.get("resultType").and_then(Value::as_str) == Some("task") {
            return Ok(ToolCall::Task(TaskInfo::from_value(&answer)?));
        }
        if let Some(task) = answer.get("task").filter(|t| t.get("taskId").is_some()) {
            return Ok(ToolCall::Task(TaskInfo::from_value(task)?));
        }
        Ok(ToolCall::Done(result_of(answer)?))
    }

    /// 2025-11-25: whether the server runs `name` as a task when asked.
    async fn offers_task(&self, name: &str) -> Result<bool, Error> {
        let caps = self.core.description().capabilities;
        let offered = caps.tasks.as_ref().is_some_and(|t| t["requests"]["tools"]["call"].is_object());
        if !offered {
            return Ok(false);
        }
        let known = self.core.task_support.read().unwrap().get(name).cloned();
        let support = match known {
            Some(support) => support,
            None => {
                self.list_tools().await?;
                self.core.task_support.read().unwrap().get(name).cloned().unwrap_or_default()
            }
        };
        Ok(support == "optional" || support == "required")
    }

    /// The task `id` now.
    pub async fn get_task(&self, id: &str) -> Result<TaskInfo, Error> {
        TaskInfo::from_value(&self.request("tasks/get", json!({"taskId": id})).await?)
    }

    /// Asks the server to cancel the task `id` (cooperative: it may still end otherwise).
    pub async fn cancel_task(&self, id: &str) -> Result<(), Error> {
        self.request("tasks/cancel", json!({"taskId": id})).await.map(drop)
    }

    /// 2025-11-25: the tasks of this client, every page.
    pub async fn list_tasks(&self) -> Result<Vec<TaskInfo>, Error> {
        let mut tasks = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1000 {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let page = self.request("tasks/list", params).await?;
            for task in page["tasks"].as_array().into_iter().flatten() {
                tasks.push(TaskInfo::from_value(task)?);
            }
            cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        Ok(tasks)
    }

    /// Follows the task `id` to its end and returns its result (a failed task is its error):
    /// polls at the server's hint, wakes early on its status notifications, answers its
    /// questions with the client's handlers, and tells `on_change` each new state.
    ///
    /// Dropped before the task ends (the caller gave up: Ctrl-C, a timeout), it asks the
    /// server to cancel the task, so that work nobody waits for stops.
    pub async fn wait_task(&self, id: &str, on_change: impl FnMut(&TaskInfo)) -> Result<CallToolResult, Error> {
        let mut guard = CancelOnDrop { client: Some(self.clone()), id: id.to_owned() };
        let outcome = self.follow_task(id, on_change).await;
        guard.client = None;
        outcome
    }

    async fn follow_task(&self, id: &str, mut on_change: impl FnMut(&TaskInfo)) -> Result<CallToolResult, Error> {
        let modern = self.core.description().modern;
        let mut events = self.core.task_events.subscribe();
        let mut last: Option<(TaskStatus, Option<String>)> = None;
        loop {
            let task = self.get_task(id).await?;
            let now = (task.status, task.message.clone());
            if last.as_ref() != Some(&now) {
                on_change(&task);
                last = Some(now);
            }
            if task.status.is_terminal() {
                return self.finished(task, modern).await;
            }
            if task.status == TaskStatus::InputRequired && modern {
                self.answer_task(&task).await?;
                continue;
            }
            let wait = task
                .poll_interval
                .unwrap_or(Duration::from_secs(1))
                .clamp(Duration::from_millis(50), Duration::from_secs(30));
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = async {
                    while let Ok(event) = events.recv().await {
                        if event["taskId"] == id {
                            return;
                        }
                    }
                    std::future::pending::<()>().await
                } => {}
            }
        }
    }

    /// The result of an ended task.
    async fn finished(&self, task: TaskInfo, modern: bool) -> Result<CallToolResult, Error> {
        if !modern {
            return result_of(self.request("tasks/result", json!({"taskId": task.id})).await?);
        }
        match (task.status, task.result, task.error) {
            (TaskStatus::Completed, Some(result), _) => result_of(result),
            (TaskStatus::Failed, _, Some(error)) => Err(Error::from(error)),
            (TaskStatus::Cancelled, _, _) => Err(Error::protocol(format!("task {} was cancelled", task.id))),
            (status, _, _) => Err(Error::protocol(format!("task {} ended ({status:?}) without a result", task.id))),
        }
    }

    /// 2026-07-28: answers an `input_required` task's questions through `tasks/update`.
    async fn answer_task(&self, task: &TaskInfo) -> Result<(), Error> {
        let mut responses = JsonObject::new();
        for (key, request) in task.input_requests.iter().flatten() {
            let method = request["method"].as_str().unwrap_or_default();
            let params = request.get("params").cloned().unwrap_or(json!({}));
            let answer = self.core.answer(method, params).await.map_err(Error::from)?;
            responses.insert(key.clone(), answer);
        }
        self.request("tasks/update", json!({"taskId": task.id, "inputResponses": responses})).await.map(drop)
    }
}
