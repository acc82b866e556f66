//! What a store keeps of one task: who owns it, which tool, its status, and its outcome.
//!
//! Times are milliseconds since the Unix epoch, written on the wire as ISO 8601 (RFC 3339) UTC.

use std::time::{SystemTime, UNIX_EPOCH};

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
    /// The account it belongs to (see [`crate::tasks::Account`]).
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

/// Now, in ms since the epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// `ms` since the epoch as RFC 3339 UTC with milliseconds: `2026-12-01T08:30:00.123Z`.
pub fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        ms % 1000
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A new task id: 128 random bits, hex.
pub fn new_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source is unavailable");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_times_as_rfc3339() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_796_113_800_123), "2026-12-01T08:30:00.123Z");
        assert_eq!(new_id().len(), 32);
    }
}
