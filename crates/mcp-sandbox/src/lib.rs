//! Local MCP servers in a kernel sandbox: a server started by the client library (and so by every
//! `mcp` command) gets only what its policy grants.
//!
//! The sandbox is applied in the child before it calls `execve` (a child made without `fork` when
//! the client starts it, [`launch`]; after a `fork` through a `pre_exec` hook otherwise), so the
//! parent (the `mcp` process, the gateway, the host) stays unconfined and pays no extra process: a user namespace of the
//! server's own (its processes counted apart, every capability dropped), resource limits,
//! Landlock for the file system (read, write, execute, truncate, device ioctl), TCP (bind,
//! connect) and the scoping of signals and abstract UNIX sockets, `no_new_privs`, and seccomp
//! filters for what an MCP server never needs ([`filter`]). A network limited to named hosts runs
//! the server in a network namespace of its own whose only way out is our filtering [`proxy`].
//!
//! ```no_run
//! use mcp::client::StdioCommand;
//! use mcp_sandbox::{Policy, Sandbox};
//!
//! let mut command = StdioCommand::new("paypedia");
//! command.confine = Some(Sandbox::new(Policy::strict()).into_confinement());
//! ```
//!
//! A kernel that cannot enforce what a policy asks is a refusal to start that names the missing
//! part, unless the policy says `bestEffort` (then what is missing is said on stderr).

#[cfg(target_os = "linux")]
mod cgroup;
#[cfg(target_os = "linux")]
mod filter;
pub mod journal;
#[cfg(target_os = "linux")]
mod kernel;
#[cfg(target_os = "linux")]
mod launch;
#[cfg(target_os = "linux")]
pub mod learn;
#[cfg(target_os = "linux")]
pub mod observe;
pub mod plan;
pub mod policy;
#[cfg(target_os = "linux")]
mod proxy;
#[cfg(target_os = "linux")]
mod rules;
#[cfg(target_os = "linux")]
mod spare;
#[cfg(target_os = "linux")]
mod spawn;

use std::any::Any;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use mcp::client::{Confine, Confinement};

pub use journal::{Event, Journal};
pub use plan::{Launch, Plan};
pub use policy::{HostPattern, Limits, Network, Policy};

/// A policy with what it is applied with: the roots offered to the server, and where its
/// attempts are noted.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// The policy.
    pub policy: Policy,
    /// Directories offered to the server as roots: readable and writable like its arguments.
    pub roots: Vec<PathBuf>,
    /// Names the proxy resolves from this file first (`/etc/hosts` format).
    pub hosts_file: Option<PathBuf>,
    /// The server, as messages name it.
    pub name: String,
    /// What its processes open and connect to is watched (`mcp doctor`, `--learn`).
    pub watch: bool,
    /// Learning: nothing of the file system is refused and every host is reached through the
    /// proxy, so that one run shows what the server uses (`mcp sandbox --learn`).
    pub learning: bool,
    journal: Journal,
    #[cfg(target_os = "linux")]
    seen: observe::Record,
    /// The plan of the last process started, and its private temporary directory: what was seen
    /// is checked against them.
    last_plan: Arc<std::sync::Mutex<Option<LastStart>>>,
    /// What the last start made, kept for the next start of the same command.
    #[cfg(target_os = "linux")]
    prepared: Arc<std::sync::Mutex<Option<spawn::Prepared>>>,
}

/// The plan of a start, and its private temporary directory.
type LastStart = (Arc<Plan>, PathBuf);

impl Sandbox {
    /// `policy`, with no roots.
    pub fn new(policy: Policy) -> Sandbox {
        Sandbox {
            policy,
            roots: Vec::new(),
            hosts_file: std::env::var_os("MCP_SANDBOX_HOSTS").map(PathBuf::from),
            name: "server".into(),
            watch: false,
            learning: false,
            journal: Journal::default(),
            #[cfg(target_os = "linux")]
            seen: Default::default(),
            last_plan: Default::default(),
            #[cfg(target_os = "linux")]
            prepared: Default::default(),
        }
    }

    /// Watches what its processes open and connect to (see [`Sandbox::refused`]).
    pub fn watched(mut self) -> Sandbox {
        self.watch = true;
        self
    }

    /// Runs it to learn what it uses: watched, nothing of the file system refused, every host
    /// reached (through the proxy, which notes the names).
    pub fn learning(mut self) -> Sandbox {
        self.watch = true;
        self.learning = true;
        self
    }

    /// What it was refused so far, one line each (`read /root/.ssh/id_ed25519`, `connect
    /// evil.example:443`): connections the proxy refused, and, when watched, the paths it opened
    /// that its plan does not grant.
    pub fn refused(&self) -> Vec<String> {
        let mut lines: Vec<String> =
            self.journal.refused().iter().map(|e| format!("{} {}", e.kind, e.target)).collect();
        #[cfg(target_os = "linux")]
        if let Some((plan, own_tmp)) = self.last_plan.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
            lines.extend(learn::refused(plan, own_tmp, &seen));
        }
        lines
    }

    /// What a learning run saw, as a starting policy (`{"sandbox": {...}}`) and notes.
    #[cfg(target_os = "linux")]
    pub fn learned(&self) -> (serde_json::Value, Vec<String>) {
        let last = self.last_plan.lock().unwrap_or_else(|e| e.into_inner());
        let plan = last.as_ref().map(|(plan, _)| Plan::clone(plan)).unwrap_or_default();
        drop(last);
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
        learn::policy(&plan, &seen, &self.journal)
    }

    /// Sets the roots.
    pub fn roots(mut self, roots: Vec<PathBuf>) -> Sandbox {
        self.roots = roots;
        self
    }

    /// Sets the name messages use.
    pub fn named(mut self, name: impl Into<String>) -> Sandbox {
        self.name = name.into();
        self
    }

    /// Where what the server tried is noted (shared by every process started with this sandbox).
    pub fn journal(&self) -> Journal {
        self.journal.clone()
    }

    /// For [`mcp::client::StdioCommand::confine`].
    pub fn into_confinement(self) -> Confinement {
        Confinement(Arc::new(self))
    }

    /// What the policy asks that this kernel cannot enforce (empty: everything holds).
    pub fn missing(&self) -> Vec<String> {
        #[cfg(target_os = "linux")]
        {
            rules::missing(&self.policy, rules::Support::current())
        }
        #[cfg(not(target_os = "linux"))]
        {
            vec!["everything: the sandbox needs Linux (Landlock and seccomp)".into()]
        }
    }
}

/// The kernel's Landlock ABI version (0 without Landlock).
pub fn landlock_abi() -> i32 {
    #[cfg(target_os = "linux")]
    {
        rules::Support::current().abi
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

impl Confine for Sandbox {
    fn prepare(&self, command: &mut Command) -> std::io::Result<Box<dyn Any + Send + Sync>> {
        #[cfg(target_os = "linux")]
        {
            spawn::prepare(self, command)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = command;
            Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "the sandbox needs Linux"))
        }
    }

    #[cfg(target_os = "linux")]
    fn start(&self, command: &Command, options: mcp::client::StartOptions) -> Option<mcp::client::StartResult> {
        Some(spawn::start(self, command, options))
    }

    fn describe(&self) -> String {
        let roots = self.roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>();
        let roots = if roots.is_empty() { String::new() } else { format!("; roots {}", roots.join(", ")) };
        format!("{} (Landlock ABI {}){roots}", self.policy.summary(), landlock_abi())
    }

    fn refused(&self) -> Vec<String> {
        Sandbox::refused(self)
    }

    fn explain(&self, kept: &(dyn Any + Send + Sync), error: std::io::Error) -> std::io::Error {
        #[cfg(target_os = "linux")]
        {
            spawn::explain(kept, error)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = kept;
            error
        }
    }
}

#[cfg(target_os = "linux")]
pub use spawn::run;
