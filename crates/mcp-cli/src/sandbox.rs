//! The sandbox on the command line: an `mcpServers` entry's `"sandbox"` key and `--sandbox` made
//! into the stdio command's confinement (so every command that starts a server from an entry or
//! after `--` starts it sandboxed: `call` and the other client commands, `gateway`, `bridge`,
//! `chat`, `inspect`, `doctor`), and `mcp sandbox [POLICY FLAGS] -- CMD`, which runs any command
//! so, for hosts that only take a command line.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use mcp::client::StdioCommand;
use mcp_sandbox::{HostPattern, Limits, Network, Policy, Sandbox};
use serde_json::Value;

/// Set once from the command line: `--sandbox` (the strict default for servers whose entry says
/// nothing) and the roots offered to servers.
struct Defaults {
    sandbox: bool,
    roots: Vec<PathBuf>,
    /// What sandboxed servers open and connect to is watched (`mcp doctor` reports refusals).
    watch: bool,
}

static DEFAULTS: OnceLock<Defaults> = OnceLock::new();

/// Records `--sandbox`, the roots, and whether sandboxes are watched (call once, before any
/// server is started).
pub fn set_defaults(sandbox: bool, roots: Vec<PathBuf>, watch: bool) {
    let roots = roots.iter().filter_map(|r| std::fs::canonicalize(r).ok()).collect();
    let _ = DEFAULTS.set(Defaults { sandbox, roots, watch });
}

fn defaults() -> (bool, Vec<PathBuf>) {
    DEFAULTS.get().map(|d| (d.sandbox, d.roots.clone())).unwrap_or_default()
}

fn watching() -> bool {
    DEFAULTS.get().is_some_and(|d| d.watch)
}

/// The policy of an `mcpServers` entry: its `"sandbox"` key (`${VAR}` expanded, paths relative
/// to its `cwd`), else the strict default under `--sandbox`; `None` when it runs unsandboxed
/// (`"sandbox": false` opts out even under `--sandbox`).
pub fn policy_from_entry(entry: &Value) -> Result<Option<Policy>, String> {
    let expand = |text: &str| mcp_host::servers::expand(text, &|var| std::env::var(var).ok());
    let base = match entry.get("cwd").and_then(Value::as_str) {
        Some(cwd) => PathBuf::from(expand(cwd)?),
        None => std::env::current_dir().unwrap_or_else(|_| "/".into()),
    };
    match entry.get("sandbox") {
        None => Ok(defaults().0.then(Policy::strict)),
        Some(_) => Policy::from_entry(entry, &base, &expand),
    }
}

/// Confines `command` to `policy` (named `name` in messages), with the roots of the command line.
pub fn confine(command: &mut StdioCommand, name: &str, policy: Option<Policy>) {
    if let Some(policy) = policy {
        let mut sandbox = Sandbox::new(policy).roots(defaults().1).named(name);
        if watching() {
            sandbox = sandbox.watched();
        }
        command.confine = Some(sandbox.into_confinement());
    }
}

/// `--sandbox` for a server named after `--`.
pub fn confine_by_default(command: &mut StdioCommand) {
    if defaults().0 {
        let name = Path::new(&command.program).file_name().map(|n| n.to_string_lossy().into_owned());
        confine(command, &name.unwrap_or_default(), Some(Policy::strict()));
    }
}

/// `mcp sandbox`'s flags: the policy of the command after `--`.
#[derive(clap::Args, Debug, Default)]
pub struct SandboxArgs {
    /// A file or directory it may read (repeatable).
    #[arg(long = "read", value_name = "PATH")]
    pub read: Vec<String>,
    /// A file or directory it may read and write (repeatable).
    #[arg(long = "write", value_name = "PATH")]
    pub write: Vec<String>,
    /// A file or directory whose programs it may run (repeatable).
    #[arg(long = "exec", value_name = "PATH")]
    pub exec: Vec<String>,
    /// A host it may reach through the filtering proxy: `api.github.com`, `*.example.com:443`
    /// (repeatable). Without any, it has no network.
    #[arg(long = "network", value_name = "HOST")]
    pub network: Vec<String>,
    /// The network is not sandboxed at all.
    #[arg(long, conflicts_with = "network")]
    pub any_network: bool,
    /// An environment variable passed through from ours, or a glob such as `NODE_*` (repeatable).
    #[arg(long = "pass-env", value_name = "NAME")]
    pub pass_env: Vec<String>,
    /// Writable private memory, MiB (default 4096).
    #[arg(long, value_name = "MIB")]
    pub memory_mib: Option<u64>,
    /// Processes and threads (default 256).
    #[arg(long, value_name = "N")]
    pub processes: Option<u64>,
    /// Open file descriptors (default 4096).
    #[arg(long, value_name = "N")]
    pub open_files: Option<u64>,
    /// CPU seconds (default: no limit).
    #[arg(long, value_name = "S")]
    pub cpu_seconds: Option<u64>,
    /// Directories named as its arguments are only readable (default: readable and writable).
    #[arg(long)]
    pub read_only_args: bool,
    /// Run with what the kernel can enforce when it cannot enforce everything, saying what is
    /// missing on stderr.
    #[arg(long)]
    pub best_effort: bool,
    /// Learn instead of refusing: run it once with the file system open and every host reached
    /// through the proxy, watching what it opens and connects to, and print on stderr at its
    /// exit a starting policy of what it used beyond the default (never applied by itself).
    #[arg(long)]
    pub learn: bool,
}

impl SandboxArgs {
    /// The policy these flags describe.
    pub fn policy(&self) -> Result<Policy, String> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
        let paths = |list: &[String]| list.iter().map(|p| mcp_sandbox::policy::absolute(p, &cwd)).collect();
        let defaults = Limits::default();
        Ok(Policy {
            read: paths(&self.read),
            write: paths(&self.write),
            execute: paths(&self.exec),
            network: if self.any_network {
                Network::Any
            } else if self.network.is_empty() {
                Network::None
            } else {
                Network::Allow(self.network.iter().map(|h| HostPattern::parse(h)).collect::<Result<_, _>>()?)
            },
            env: self.pass_env.clone(),
            limits: Limits {
                memory_mib: self.memory_mib.or(defaults.memory_mib),
                processes: self.processes.or(defaults.processes),
                open_files: self.open_files.or(defaults.open_files),
                cpu_seconds: self.cpu_seconds,
                file_size_mib: None,
            },
            best_effort: self.best_effort,
            arguments_writable: !self.read_only_args,
        })
    }
}

/// `mcp sandbox [FLAGS] -- CMD ARGS`: the exit code is the command's (128 + N when a signal N
/// ended it); 3 when it could not start, with the reason on stderr.
pub fn run(args: &SandboxArgs, command: &[String]) -> Result<u8, String> {
    let Some((program, rest)) = command.split_first() else {
        return Err("mcp sandbox needs a command after --: mcp sandbox [FLAGS] -- CMD ARGS...".into());
    };
    let policy = args.policy()?;
    let name = Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut sandbox = Sandbox::new(policy).roots(defaults().1).named(name);
    if args.learn {
        sandbox = sandbox.learning();
    }
    let rest: Vec<OsString> = rest.iter().map(OsString::from).collect();
    match mcp_sandbox::run(&sandbox, program.as_ref(), &rest) {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            if args.learn {
                let (policy, notes) = sandbox.learned();
                eprintln!(
                    "mcp sandbox --learn: what {program} used beyond the default, as a starting policy for its mcpServers entry (review it: it is not applied):\n{}",
                    serde_json::to_string_pretty(&policy).unwrap_or_default()
                );
                for note in notes {
                    eprintln!("note: {note}");
                }
            }
            Ok(status.code().map(|c| c as u8).or(status.signal().map(|s| 128 + s as u8)).unwrap_or(1))
        }
        Err(e) => {
            eprintln!("mcp sandbox: {e}");
            Ok(3)
        }
    }
}

/// A host's entry (`mcp chat`) confined as its `"sandbox"` key (or `--sandbox`) says.
pub fn confine_entry(mut entry: mcp_host::servers::ServerEntry) -> Result<mcp_host::servers::ServerEntry, String> {
    if let mcp_host::servers::Transport::Stdio(command) = &mut entry.transport {
        let policy = policy_from_entry(&entry.raw)
            .map_err(|e| format!("server {:?} ({}): {e}", entry.name, entry.source.display()))?;
        confine(command, &entry.name, policy);
    }
    Ok(entry)
}
