//! Tasks: long-running requests polled by id.
//!
//! Two shapes exist. The 2026-07-28 extension `io.modelcontextprotocol/tasks` (SEP-2663): a
//! `tools/call` may answer `resultType: "task"`; the client polls `tasks/get`, answers input with
//! `tasks/update`, and may `tasks/cancel`. The legacy experimental tasks of 2025-11-25
//! (`params.task`, `tasks/result`, `tasks/list`) are in [`legacy`].

use serde::{Deserialize, Serialize};

use crate::mrtr::{InputRequests, InputResponses};
use crate::result::ResultType;
use crate::{ErrorObject, Meta};

/// The extension's identifier.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/tasks";

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for `tasks/update`.
    InputRequired,
    /// Done (even with `isError: true`).
    Completed,
    /// Ended with a JSON-RPC error.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task has ended.
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

/// A task (extension shape); the body of `CreateTaskResult` and `DetailedTask`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// `resultType`: `"task"` on creation, `"complete"` from `tasks/get`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// High-entropy id.
    pub task_id: String,
    /// Status.
    pub status: TaskStatus,
    /// A human-readable status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last change.
    pub last_updated_at: String,
    /// How long the task is kept after creation, in ms; `null` for no limit.
    pub ttl_ms: Option<i64>,
    /// Suggested polling interval in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<i64>,
    /// `input_required`: what is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// `completed`: the request's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// `failed`: the request's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `tasks/get` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `tasks/update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskUpdateParams {
    /// The task.
    pub task_id: String,
    /// Answers to its `inputRequests`.
    pub input_responses: InputResponses,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

pub mod legacy {
    //! The experimental tasks of 2025-11-25.

    use serde::{Deserialize, Serialize};

    use super::TaskStatus;
    use crate::Meta;

    /// `params.task` on a task-augmented request.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    pub struct TaskMetadata {
        /// Requested lifetime in ms.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub ttl: Option<i64>,
    }

    /// A task (2025-11-25 shape).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Task {
        /// Id.
        pub task_id: String,
        /// Status.
        pub status: TaskStatus,
        /// A human-readable status.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub status_message: Option<String>,
        /// ISO 8601 creation time.
        pub created_at: String,
        /// ISO 8601 time of the last change.
        pub last_updated_at: String,
        /// Lifetime in ms, or null.
        pub ttl: Option<i64>,
        /// Suggested polling interval in ms.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub poll_interval: Option<i64>,
    }

    /// The result of a task-augmented request (2025-11-25).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct CreateTaskResult {
        /// The task.
        pub task: Task,
        /// `_meta`.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        pub meta: Option<Meta>,
    }
}
