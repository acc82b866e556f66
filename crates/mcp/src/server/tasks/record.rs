//! What a store keeps of one task: who owns it, which tool, its status, and its outcome.
//!
//! Times are milliseconds since the Unix epoch, written on the wire as ISO 8601 (RFC 3339) UTC.

use mcp_types::tasks::TaskStatus;
use mcp_types::{ErrorObject, JsonObject};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which wire form a task was created in, which decides how it answers and asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskForm {
    /// The 2026-07-28 extension `io.modelcontextprotocol/tasks`.
    Extension,
    /// The experimental tasks of 2025-11-25 (`params.task`).
    Legacy,
    /// The portable job-tool pattern: an id in a tool result, generated status tools.
    Job,
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The request's result (a `CallToolResult` for `tools/call`, `isError` included).
    Result(Value),
    /// The request's JSON-RPC error.
    Error(ErrorObject),
}

/// One task as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// High-entropy id.
    pub id: String,
    /// The account it belongs to (see [`crate::server::tasks::Account`]).
    pub owner: String,
    /// The tool it runs.
    pub tool: String,
    /// Its wire form.
    pub form: TaskForm,
    /// Its status.
    pub status: TaskStatus,
    /// What it is doing, for people and models.
    pub status_message: Option<String>,
    /// Created, ms since the epoch.
    pub created_ms: u64,
    /// Last changed, ms since the epoch.
    pub updated_ms: u64,
    /// Kept this long after creation; `None` for no limit.
    pub ttl_ms: Option<u64>,
    /// When to look again, in ms.
    pub poll_interval_ms: u64,
    /// Progress so far and its total, when the tool reports them.
    pub progress: Option<(f64, Option<f64>)>,
    /// `input_required`: the questions still waiting for an answer, by key.
    pub input_requests: Option<JsonObject>,
    /// Terminal tasks: how it ended.
    pub outcome: Option<Outcome>,
}

impl TaskRecord {
    /// Whether the task's lifetime has passed at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.ttl_ms.is_some_and(|ttl| now_ms >= self.created_ms.saturating_add(ttl))
    }
}

pub use crate::util::time::{iso8601, now_ms};

/// A new task id: 128 random bits, hex. Never zeros: without a random source this panics,
/// saying so (the request that started the task is answered with an error).
pub fn new_id() -> String {
    let mut bytes = [0u8; 16];
    crate::util::random::fill_or_panic(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_128_bits_of_hex() {
        assert_eq!(new_id().len(), 32);
    }
}
