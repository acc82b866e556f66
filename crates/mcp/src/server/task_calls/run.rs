//! A call of a tool that may run long: started like any call, answered plainly if it finishes
//! within the grace period, else turned into a task in the form the client follows.

use std::time::Duration;

use mcp_types::tasks::{TaskStatus, EXTENSION_ID};
use mcp_types::tools::CallToolResult;
use mcp_types::version::ProtocolVersion;
use mcp_types::{ErrorCode, ErrorObject};
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::jobs;
use crate::error::{ToolError, ToolErrorKind};
use crate::server::tasks::manager::{Busy, LiveTask, TaskManager};
use crate::server::tasks::record::{Outcome, TaskForm};
use crate::server::tasks::{wire, TaskConfig, TaskSupport, CREATED};
use crate::server::tool::{self, ArgsIn, ToolEntry};
use crate::server::RequestContext;

/// How this call may run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Mode {
    /// To the end, as a plain call.
    Sync,
    /// As a 2026-07-28 extension task, if it runs long.
    Extension,
    /// As a 2025-11-25 task, at once (the client asked), kept this long if given.
    Legacy(Option<Duration>),
    /// As a job, if it runs long.
    Job,
}

/// What became of the call.
pub(crate) enum Started {
    /// It ended (or asked for input) before it became a task: an ordinary outcome.
    Done(Result<CallToolResult, ToolError>),
    /// It became a task: the answer to send now.
    Task(Value),
}

/// -32021: the request must declare the tasks extension.
pub(crate) fn missing_extension(what: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("{what} needs the tasks extension ({EXTENSION_ID}) in the request's client capabilities"),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}}))
}

/// Decides how a call of `tool` runs, from what the client declared and asked.
pub(crate) fn mode(
    config: &TaskConfig,
    tool: &str,
    support: TaskSupport,
    cx: &RequestContext,
    modern: bool,
    task_param: Option<Option<Duration>>,
) -> Result<Mode, ErrorObject> {
    let required = support == TaskSupport::Required;
    if modern {
        return match cx.client_capabilities().has_extension(EXTENSION_ID) {
            true => Ok(Mode::Extension),
            false if required => Err(missing_extension(&format!("the tool {tool}, which only runs as a task,"))),
            false if config.job_tools => Ok(Mode::Job),
            false => Ok(Mode::Sync),
        };
    }
    let knows_tasks = cx.protocol_version() == ProtocolVersion::V2025_11_25;
    if let (true, Some(ttl)) = (knows_tasks, task_param) {
        return Ok(Mode::Legacy(ttl));
    }
    let follows_tasks = knows_tasks && cx.client_capabilities().tasks.is_some();
    match (follows_tasks, required) {
        (true, true) => Err(ErrorObject::method_not_found("tools/call")
            .with_data(json!({"reason": format!("the tool {tool} only runs as a task: call it with params.task")}))),
        (true, false) => Ok(Mode::Sync),
        (false, _) if config.job_tools => Ok(Mode::Job),
        (false, true) => Err(ErrorObject::method_not_found("tools/call")
            .with_data(json!({"reason": format!("the tool {tool} only runs as a task")}))),
        (false, false) => Ok(Mode::Sync),
    }
}

/// Starts the call; see the module's documentation.
pub(crate) async fn start(
    manager: &std::sync::Arc<TaskManager>,
    tool: &ToolEntry,
    input: ArgsIn<'_>,
    cx: &RequestContext,
    mode: Mode,
) -> Result<Started, ErrorObject> {
    let account = cx.account();
    let slot = match manager.reserve(&account).await {
        Ok(slot) => slot,
        Err(busy) => return busy_answer(manager, &tool.name, &account, mode, &busy).await,
    };
    let token = CancellationToken::new();
    let (work_cx, link) = cx.for_task(token.clone());
    let work = (tool.handler)(input, work_cx);
    // The work keeps the trace of the call that started it, as a task too.
    #[cfg(feature = "otel")]
    let work = opentelemetry::trace::FutureExt::with_current_context(work);
    let mut running = tokio::spawn(work);
    let cancelled = || Started::Done(Err(ToolError::new("cancelled")));
    match mode {
        Mode::Sync => {
            link.close();
            return Ok(tokio::select! {
                joined = &mut running => Started::Done(joined_outcome(joined)),
                _ = cx.cancelled() => { running.abort(); cancelled() }
            });
        }
        Mode::Extension | Mode::Job => {
            tokio::select! {
                joined = &mut running => return Ok(Started::Done(joined_outcome(joined))),
                _ = tokio::time::sleep(manager.config.grace) => {}
                _ = link.wanted() => {}
                _ = cx.cancelled() => { running.abort(); return Ok(cancelled()); }
            }
        }
        Mode::Legacy(_) => {}
    }
    let (form, ttl) = match mode {
        Mode::Extension => (TaskForm::Extension, None),
        Mode::Legacy(ttl) => (TaskForm::Legacy, ttl),
        _ => (TaskForm::Job, None),
    };
    let session = cx.session().cloned();
    let live =
        manager.prepare(&account, &tool.name, form, ttl, token, slot, session.filter(|_| form == TaskForm::Legacy));
    link.attach(live.clone());
    if let Err(e) = manager.persist(&live).await {
        running.abort();
        link.close();
        return Err(ErrorObject::internal(e.to_string()));
    }
    let record = live.snapshot();
    CREATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    tokio::spawn(watch(live, running, cx.is_modern()));
    Ok(Started::Task(match form {
        TaskForm::Extension => wire::created(&record),
        TaskForm::Legacy => wire::legacy_created(&record),
        TaskForm::Job => jobs::started(&record),
    }))
}

/// Waits for the work of a task to end, and records how; a cancelled task's work is dropped.
async fn watch(
    live: std::sync::Arc<LiveTask>,
    mut running: JoinHandle<Result<CallToolResult, ToolError>>,
    modern: bool,
) {
    let joined = tokio::select! {
        joined = &mut running => joined,
        _ = live.cancel.cancelled() => {
            running.abort(); // dropped at its next await: the work stops
            return;
        }
    };
    let outcome = match joined_outcome(joined) {
        Ok(result) => tool::result_value(result).map_err(|e| ErrorObject::internal(e.to_string())),
        Err(ToolError { kind: ToolErrorKind::Message(m) }) => {
            tool::result_value(CallToolResult::error(m)).map_err(|e| ErrorObject::internal(e.to_string()))
        }
        Err(ToolError { kind: ToolErrorKind::InputRequired { .. } }) => {
            Err(ErrorObject::internal("the tool asked for input in a way its task cannot carry"))
        }
        Err(e) => Err(e.into_error_object(modern)),
    };
    live.finish(outcome).await;
}

/// A handler's outcome from its task; a panic is an internal error.
fn joined_outcome(
    joined: Result<Result<CallToolResult, ToolError>, tokio::task::JoinError>,
) -> Result<CallToolResult, ToolError> {
    match joined {
        Ok(outcome) => outcome,
        Err(e) if e.is_panic() => {
            Err(ToolError::protocol(ErrorObject::internal("internal error: the handler panicked")))
        }
        Err(_) => Err(ToolError::new("cancelled")),
    }
}

/// The answer when the account already runs its limit: a result the model can act on, in the
/// form of the call (a 2025-11-25 client asked for a task, so it gets one, already failed: its
/// result is the explanation, an `isError` result).
async fn busy_answer(
    manager: &std::sync::Arc<TaskManager>,
    tool: &str,
    account: &str,
    mode: Mode,
    busy: &Busy,
) -> Result<Started, ErrorObject> {
    let secs = busy.retry_after.as_secs().max(1);
    let cancel = if mode == Mode::Job { format!(" or cancel one with {tool}_cancel") } else { " or cancel one".into() };
    let jobs = if busy.running == 1 { "job" } else { "jobs" };
    let text = format!(
        "{} {jobs} running for this account (the limit is {}): retry in about {secs} s,{cancel}. Nothing was started.",
        busy.running, busy.limit
    );
    let result = CallToolResult::error(text);
    let Mode::Legacy(ttl) = mode else { return Ok(Started::Done(Ok(result))) };
    let value = tool::result_value(result).map_err(|e| ErrorObject::internal(e.to_string()))?;
    let record = manager
        .store_finished(account, tool, ttl, TaskStatus::Failed, Outcome::Result(value))
        .await
        .map_err(|e| ErrorObject::internal(e.to_string()))?;
    Ok(Started::Task(wire::legacy_created(&record)))
}
