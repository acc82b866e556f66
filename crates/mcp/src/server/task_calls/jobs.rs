//! The portable job pattern, for clients that follow no task form: a long call answers with a
//! job id and when to look again, and three generated tools, named after the tool, follow the
//! job: `<tool>_status`, `<tool>_cancel` and `<tool>_list`. Every text is written for the model:
//! what to call next, when, and what each status means.

use mcp_types::content::ContentBlock;
use mcp_types::tasks::TaskStatus;
use mcp_types::tools::CallToolResult;
use mcp_types::ErrorObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::server::tasks::manager::TaskManager;
use crate::server::tasks::record::{iso8601, Outcome, TaskRecord};
use crate::server::tasks::{can_list, JobAction, JobTool, TaskConfig, NO_LISTING};
use crate::server::tool::ToolDef;
use crate::server::RequestContext;

/// The arguments of `<tool>_status` and `<tool>_cancel`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobId {
    /// The job id the tool returned when it started the job.
    pub job_id: String,
}

/// The three generated tools of `tool`, with their definitions.
pub(crate) fn definitions(tool: &str, config: &TaskConfig) -> [(ToolDef, JobTool); 3] {
    let kept = humanize(config.ttl.as_secs());
    let status = ToolDef::new(format!("{tool}_status")).read_only().description(format!(
        "Checks a job started by {tool}, which answers at once with a job id and runs in the background. \
         Call it after the wait the previous answer suggested, not sooner. Statuses: working (still running: the \
         answer says how far it got and when to look again), input_required (waiting for the user to answer a \
         question), completed (done: its result is included), failed (final: the reason says why; start a new job \
         to try again), cancelled. Jobs are kept for {kept} after they start."
    ));
    let cancel = ToolDef::new(format!("{tool}_cancel")).description(format!(
        "Cancels a job started by {tool} that is still running: its work stops and its place under the limit of \
         running jobs is free at once. Call it when the user changes their mind or the job is no longer needed."
    ));
    let list = ToolDef::new(format!("{tool}_list")).read_only().description(format!(
        "Lists the jobs started by {tool} for this account, oldest first, with their status. Call it to find a job \
         id you no longer have, or to see how many jobs are running."
    ));
    let job = |action| JobTool { of: tool.to_owned(), action };
    [(status, job(JobAction::Status)), (cancel, job(JobAction::Cancel)), (list, job(JobAction::List))]
}

fn humanize(secs: u64) -> String {
    match secs {
        s if s >= 3600 && s % 3600 == 0 => format!("{} hour{}", s / 3600, if s == 3600 { "" } else { "s" }),
        s if s >= 60 => format!("{} minutes", s / 60),
        s => format!("{s} seconds"),
    }
}

fn wait_secs(record: &TaskRecord) -> u64 {
    record.poll_interval_ms.max(1000).div_ceil(1000)
}

/// The answer of a call that became a job.
pub(crate) fn started(record: &TaskRecord) -> Value {
    let tool = &record.tool;
    let text = format!(
        "Started job {id} ({tool}). It runs in the background: call {tool}_status with {{\"job_id\": \"{id}\"}} in \
         about {secs} s to see how far it got and, once it is done, its result. {tool}_cancel stops it.",
        id = record.id,
        secs = wait_secs(record),
    );
    text_result(text, false)
}

fn text_result(text: String, is_error: bool) -> Value {
    let result = CallToolResult {
        content: vec![ContentBlock::text(text)],
        is_error: is_error.then_some(true),
        ..Default::default()
    };
    serde_json::to_value(result).unwrap_or(Value::Null)
}

/// Runs a generated job tool.
pub(crate) async fn call(
    manager: &TaskManager,
    job: &JobTool,
    arguments: &str,
    cx: &RequestContext,
) -> Result<Value, ErrorObject> {
    let account = cx.account();
    if job.action == JobAction::List {
        if !can_list(&account) {
            return Ok(text_result(format!("{}: call {}_status with a job_id", NO_LISTING, job.of), true));
        }
        let jobs = manager.list(&account, Some(&job.of), None, 100).await.map_err(store_error)?;
        return Ok(list(&job.of, &jobs));
    }
    let JobId { job_id } =
        serde_json::from_str(arguments).map_err(|e| ErrorObject::invalid_params(format!("invalid arguments: {e}")))?;
    let record = match job.action {
        JobAction::Cancel => manager.cancel(&job_id, &account).await,
        _ => manager.get(&job_id, &account).await,
    }
    .map_err(store_error)?
    .filter(|r| r.tool == job.of);
    Ok(match record {
        None => text_result(
            format!(
                "No job {job_id} of {}: check the id (it is the job_id {} answered with), or call {}_list. Jobs are \
                 removed some time after they start.",
                job.of, job.of, job.of
            ),
            true,
        ),
        Some(record) => status(&record),
    })
}

fn store_error(e: crate::server::tasks::StoreError) -> ErrorObject {
    ErrorObject::internal(e.to_string())
}

/// What `<tool>_status` says of a job: its state, what to do next, and its result when done.
pub(crate) fn status(record: &TaskRecord) -> Value {
    let id = &record.id;
    let tool = &record.tool;
    let message = record.status_message.clone().unwrap_or_default();
    match (record.status, &record.outcome) {
        (TaskStatus::Working, _) => text_result(
            format!("Job {id} is working: {message}. Call {tool}_status again in about {} s.", wait_secs(record)),
            false,
        ),
        (TaskStatus::InputRequired, _) => text_result(
            format!(
                "Job {id} is waiting for the user to answer a question in their application. Call {tool}_status \
                 again in about {} s.",
                wait_secs(record)
            ),
            false,
        ),
        (TaskStatus::Completed, Some(Outcome::Result(result))) => completed(id, result),
        (TaskStatus::Failed, Some(Outcome::Error(error))) => text_result(
            format!("Job {id} failed: {}. This is final; start a new job with {tool} to try again.", error.message),
            true,
        ),
        (TaskStatus::Cancelled, _) => text_result(format!("Job {id} was cancelled: {message}."), false),
        _ => text_result(format!("Job {id}: {message}."), false),
    }
}

/// A completed job: a line, then the tool's own result (its content, structured content and
/// error flag).
fn completed(id: &str, result: &Value) -> Value {
    let mut answer = result.clone();
    let is_error = result.get("isError") == Some(&Value::Bool(true));
    let line = if is_error {
        format!("Job {id} completed, and the tool reported an error:")
    } else {
        format!("Job {id} completed:")
    };
    if let Some(Value::Array(content)) = answer.get_mut("content") {
        content.insert(0, json!({"type": "text", "text": line}));
    }
    if let Some(Value::Object(object)) = answer.as_object_mut().and_then(|o| o.get_mut("_meta")) {
        object.remove(crate::server::tasks::wire::RELATED_TASK);
    }
    answer
}

/// What `<tool>_list` says.
fn list(tool: &str, jobs: &[TaskRecord]) -> Value {
    if jobs.is_empty() {
        return text_result(format!("No jobs of {tool} for this account."), false);
    }
    let lines: Vec<String> = jobs
        .iter()
        .map(|j| {
            let status =
                serde_json::to_value(j.status).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
            format!(
                "{} {status} (started {}): {}",
                j.id,
                iso8601(j.created_ms),
                j.status_message.clone().unwrap_or_default()
            )
        })
        .collect();
    let running = jobs.iter().filter(|j| !j.status.is_terminal()).count();
    text_result(format!("{} jobs of {tool}, {running} running:\n{}", jobs.len(), lines.join("\n")), false)
}
