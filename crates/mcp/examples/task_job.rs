//! A task-backed job: `report` writes a report section by section, which takes a while. Declared
//! with `TaskSupport::Optional`, it is written like any other tool (progress through
//! `cx.progress`; a cancel drops it at its next `.await`). When a call has not finished after the
//! grace period (250 ms) the library answers it at once and lets the work go on as a task: a
//! 2026-07-28 client that declares the tasks extension gets `resultType: "task"` and polls
//! `tasks/get`, a 2025-11-25 client that asks for a task gets one too (`tasks/list`,
//! `tasks/result`), and any other client gets a job id and the generated tools `report_status`,
//! `report_cancel` and `report_list`. `Client::call_tool` follows a task to its end. Progress
//! becomes the task's status message.
//!
//! Each account (on stdio, the one client) runs at most two reports at once here
//! (`TaskConfig::max_per_account`; `--max-jobs-per-account N` on the command line): a third call
//! is answered at once with a result saying how many run and when to retry, and a cancel frees a
//! place at once.
//!
//! `cargo run -p mcp-stack --example task_job`.

use std::time::Duration;

use mcp::server::{RequestContext, Router, ToolDef, ToolError};
use mcp::tasks::{TaskConfig, TaskSupport};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `report`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Report {
    /// What the report is about.
    topic: String,
    /// How many sections to write, 1 to 100.
    sections: u32,
    /// Milliseconds each section takes (default 500).
    ms_per_section: Option<u64>,
}

async fn report(args: Report, cx: RequestContext) -> Result<String, ToolError> {
    if !(1..=100).contains(&args.sections) {
        return Err(ToolError::new(format!("sections is {}: ask for 1 to 100 sections", args.sections)));
    }
    let pause = Duration::from_millis(args.ms_per_section.unwrap_or(500).min(10_000));
    let mut lines = vec![format!("Report on {}", args.topic)];
    for n in 1..=args.sections {
        tokio::time::sleep(pause).await; // the work; a cancelled job stops here
        lines.push(format!("{n}. {} (section {n})", args.topic));
        let message = format!("wrote section {n} of {}", args.sections);
        cx.progress(f64::from(n), Some(f64::from(args.sections)), Some(&message)).await;
    }
    Ok(lines.join("\n"))
}

fn router() -> Router {
    Router::new()
        .info("task-job", "1.0.0")
        .task_config(TaskConfig { max_per_account: 2, ..TaskConfig::default() })
        .tool_def(
            ToolDef::new("report")
                .description(
                    "Writes a report on a topic, one section at a time; it takes ms_per_section per section and \
                     runs in the background.",
                )
                .task_support(TaskSupport::Optional),
            report,
        )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    mcp::serve(router()).await
}
