//! Long-running tools: one handler, run as whatever the client can follow.
//!
//! A tool declared with [`TaskSupport`] (`ToolDef::task_support`) is written like any other:
//! progress and cancellation through its context. The engine starts it and, if it has not
//! finished within the grace period (250 ms by default, or as soon as it calls
//! [`RequestContext::become_task`](crate::RequestContext::become_task)), answers the call at once
//! and lets the work go on in the background, as:
//!
//! - a **2026-07-28 extension task** (`io.modelcontextprotocol/tasks`) when the request declares the
//!   extension: `resultType: "task"`, then `tasks/get`, `tasks/update` (questions the work asks
//!   become `inputRequests`), `tasks/cancel`, and `notifications/tasks` through
//!   `subscriptions/listen`;
//! - a **2025-11-25 task** when the request asks for one (`params.task`): `tasks/get`,
//!   `tasks/result`, `tasks/list`, `tasks/cancel`, `notifications/tasks/status`;
//! - a **job** for every other client: the result names a job id and when to look again, and the
//!   generated tools `<tool>_status`, `<tool>_cancel` and `<tool>_list` follow it.
//!
//! Questions asked before the call becomes a task are answered as in any call (an
//! `input_required` round on 2026-07-28). Progress becomes the task's status message and its
//! wait hint. Each account may run [`TaskConfig::max_per_account`] tasks at once (5 by default);
//! past that the call gets a result saying how many run and when to retry, and nothing queues.
//! Records live in a [`TaskStore`]: in memory by default, in SQLite with the `sqlite` feature
//! (results survive a restart; work cut short by one reads as failed).

pub(crate) mod manager;
pub mod record;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod store;
pub(crate) mod wire;

use std::time::Duration;

pub use record::{Outcome, TaskForm, TaskRecord};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
pub use store::{MemoryStore, Place, StoreError, StoreFuture, TaskStore};

/// Whether a tool may run as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// It may run long: a task when the client can follow one, a job otherwise, and a plain
    /// answer when it finishes within the grace period.
    Optional,
    /// It only runs as a task (or a job): a 2026-07-28 request that does not declare the tasks
    /// extension gets -32021, a 2025-11-25 client that knows tasks but does not ask for one gets
    /// -32601.
    Required,
}

impl TaskSupport {
    /// The 2025-11-25 `execution.taskSupport` value.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// Which generated job tool (see `server/task_calls/jobs.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobAction {
    Status,
    Cancel,
    List,
}

/// A generated job tool: which tool's jobs it follows, and what it does.
#[derive(Debug, Clone)]
pub(crate) struct JobTool {
    pub of: String,
    pub action: JobAction,
}

/// How the engine runs tasks.
#[derive(Debug, Clone)]
pub struct TaskConfig {
    /// Tasks one account may run at once (default 5).
    pub max_per_account: usize,
    /// How long a task is kept after it was created (default 1 hour).
    pub ttl: Duration,
    /// The longest a client may ask a task to be kept (default 24 hours).
    pub max_ttl: Duration,
    /// The wait hint when progress says nothing better (default 1 s).
    pub poll_interval: Duration,
    /// How long a call may run before it becomes a task (default 250 ms).
    pub grace: Duration,
    /// The most task records kept; past it, the oldest finished ones go (default 10,000).
    pub keep: usize,
    /// Offer job tools to clients that follow no task form (default on). Off, such clients get
    /// a plain answer when the tool finishes (optional tools) or an error (required ones).
    pub job_tools: bool,
}

impl Default for TaskConfig {
    fn default() -> Self {
        TaskConfig {
            max_per_account: 5,
            ttl: Duration::from_secs(3600),
            max_ttl: Duration::from_secs(24 * 3600),
            poll_interval: Duration::from_secs(1),
            grace: Duration::from_millis(250),
            keep: 10_000,
            job_tools: true,
        }
    }
}

/// The account a request counts against, for the task cap and for who may see a task: the
/// authenticated caller's ([`Identity::account`](crate::server::Identity::account)), else what
/// the transport sets as this request extension: an `--account-header` value, or a legacy HTTP
/// session. A 2026-07-28 HTTP request with none of these is anonymous: it counts as its source
/// address ([`ANONYMOUS`] then the IP) for the cap, reaches its tasks by their ids alone (128
/// random bits each), and may not list tasks.
/// Without any extension (stdio: one client per process) every request shares one account.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Account(pub String);

/// The prefix of an anonymous caller's account: callers that cannot be told apart from others
/// behind the same address, so no listing of tasks is offered to them.
pub const ANONYMOUS: &str = "anonymous:";

/// Whether the account's tasks may be listed (it is not anonymous).
pub(crate) fn can_list(account: &str) -> bool {
    !account.starts_with(ANONYMOUS)
}

/// Why an anonymous caller gets no listing.
pub(crate) const NO_LISTING: &str = "tasks are not listed for anonymous callers: this server cannot tell them apart (no authentication, no --account-header, no session); keep the id each call answered with and ask for that task";

/// The source address of an anonymous HTTP request, from which its account is made when tasks
/// need it (`anonymous:` and the address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnonymousPeer(pub std::net::IpAddr);

/// Tasks this process created (see [`tasks_created`]).
pub(crate) static CREATED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Tasks created so far by every task manager of this process (what `/metrics` pages show as
/// `mcp_tasks_created_total`).
pub fn tasks_created() -> u64 {
    CREATED.load(std::sync::atomic::Ordering::Relaxed)
}
