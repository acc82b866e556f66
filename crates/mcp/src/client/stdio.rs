//! The stdio transport of the client: a child process, newline-delimited JSON on its stdin and
//! stdout, its stderr kept apart (captured and capped, passed through, or discarded). The child is
//! ended when the client is dropped.
//!
//! Starting the process ([`StdioCommand::spawn`]) and connecting to it
//! ([`Client::connect_process`](super::Client::connect_process)) are separate steps, so a caller
//! can start the server first and let its start-up overlap its own (the `mcp` command does).

use std::any::Any;
use std::fmt;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use mcp_types::RequestId;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::engine::fd::{reader_for, writer_for};
use crate::engine::lines::{Frame, LineReader};

use super::core::{Core, Sender};
use super::process::{Process, Started};
use crate::error::Error;
use crate::util::BoxFuture;

/// Kept of a child's stderr, at most.
const STDERR_CAP: usize = 64 * 1024;

/// What becomes of a server process's stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stderr {
    /// Kept (the first 64 KiB) for [`Client::stderr`](super::Client::stderr).
    #[default]
    Capture,
    /// Written to this process's stderr as the server writes it.
    Inherit,
    /// Thrown away.
    Discard,
}

/// Something done to a server process as it starts: a sandbox (the `mcp` command's is the
/// `mcp-stack-sandbox` crate). [`StdioCommand::spawn`] hands it the command just before the
/// process is started: it starts the process itself ([`Confine::start`]), or changes the
/// environment and adds what the child does before exec ([`Confine::prepare`]); what it returns
/// lives as long as the process (a private directory, a proxy).
pub trait Confine: Send + Sync + fmt::Debug {
    /// Prepares `command`; an error stops the start, its text said as the reason.
    fn prepare(&self, command: &mut Command) -> std::io::Result<Box<dyn Any + Send + Sync>>;
    /// What it does, in a line (two commands are the same server only if these are equal too).
    fn describe(&self) -> String;
    /// The error of a start that failed after [`Confine::prepare`], told with what `kept` knows
    /// (which step of the confinement failed). [`Confine::start`] tells its own errors so.
    fn explain(&self, kept: &(dyn Any + Send + Sync), error: std::io::Error) -> std::io::Error {
        let _ = kept;
        error
    }
    /// What it refused the processes started with it so far, one line each (for diagnostics).
    fn refused(&self) -> Vec<String> {
        Vec::new()
    }
    /// Starts the process itself instead of [`Confine::prepare`] and `Command::spawn` (a sandbox
    /// on Linux: without the `fork` that `Command` makes when it has a hook to run, which copies
    /// this whole process first): `command`'s program, arguments, working directory and
    /// explicit environment, stdin and stdout piped, the rest as `options` say (the command's
    /// own stdio, hooks, `arg0` and ids are not looked at); with what lives as long as the
    /// process, which the caller drops only once it has reaped the process. `None` (the
    /// default): it does not.
    fn start(&self, command: &Command, options: StartOptions) -> Option<StartResult> {
        let _ = (command, options);
        None
    }
}

/// What [`Confine::start`] returns: the process, and what lives as long as it.
pub type StartResult = std::io::Result<(Started, Box<dyn Any + Send + Sync>)>;

/// How a [`Confine`] that starts processes itself ([`Confine::start`]) starts one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartOptions {
    /// Where its stderr goes.
    pub stderr: Stderr,
    /// In a process group of its own ([`StdioCommand::own_process_group`]).
    pub own_process_group: bool,
    /// Killed when the thread that started it ends ([`StdioCommand::die_with_parent`]).
    pub die_with_parent: bool,
}

/// A [`Confine`] shared by every copy of a command.
#[derive(Clone)]
pub struct Confinement(pub Arc<dyn Confine>);

impl fmt::Debug for Confinement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.describe())
    }
}

impl PartialEq for Confinement {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.describe() == other.0.describe()
    }
}

impl Eq for Confinement {}

/// How to start a server process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioCommand {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Where its stderr goes.
    pub stderr: Stderr,
    /// Start it in a process group of its own, so a Ctrl-C at the terminal reaches this process
    /// (which can then cancel what the server runs and close it) and not the server directly.
    pub own_process_group: bool,
    /// Linux: the process is killed when the thread that started it ends (`PR_SET_PDEATHSIG`),
    /// so that it never outlives a parent killed with SIGKILL. Start it from a thread that lives
    /// as long as the parent (a runtime's worker, not a blocking-pool thread).
    pub die_with_parent: bool,
    /// What the process is confined to (a sandbox), applied as it starts.
    pub confine: Option<Confinement>,
}

impl StdioCommand {
    /// `program` with no arguments.
    pub fn new(program: impl Into<String>) -> Self {
        StdioCommand {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            stderr: Stderr::Capture,
            own_process_group: false,
            die_with_parent: false,
            confine: None,
        }
    }

    /// Sets where the server's stderr goes.
    pub fn stderr(mut self, stderr: Stderr) -> Self {
        self.stderr = stderr;
        self
    }

    /// Starts the process, with piped stdin and stdout. Needs no runtime: a caller can start the
    /// server before anything else and connect later with
    /// [`Client::connect_process`](super::Client::connect_process).
    pub fn spawn(&self) -> Result<ServerProcess, Error> {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(match self.stderr {
            Stderr::Capture => Stdio::piped(),
            Stderr::Inherit => Stdio::inherit(),
            Stderr::Discard => Stdio::null(),
        });
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        if self.own_process_group {
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        }
        #[cfg(target_os = "linux")]
        #[allow(unsafe_code)]
        if self.die_with_parent {
            // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let cannot = |e: std::io::Error| {
            Error::from(std::io::Error::new(e.kind(), format!("cannot start {:?}: {e}", self.program)))
        };
        if let Some(confine) = &self.confine {
            let options = StartOptions {
                stderr: self.stderr,
                own_process_group: self.own_process_group,
                die_with_parent: self.die_with_parent,
            };
            if let Some(started) = confine.0.start(&cmd, options) {
                let (started, guard) = started.map_err(cannot)?;
                return Ok(ServerProcess { command: self.clone(), child: Some(started.into()), guard: Some(guard) });
            }
        }
        let guard = match &self.confine {
            Some(confine) => Some(confine.0.prepare(&mut cmd).map_err(cannot)?),
            None => None,
        };
        let child = match (cmd.spawn(), &self.confine, &guard) {
            (Ok(child), ..) => child,
            (Err(e), Some(confine), Some(kept)) => return Err(cannot(confine.0.explain(kept.as_ref(), e))),
            (Err(e), ..) => return Err(cannot(e)),
        };
        Ok(ServerProcess { command: self.clone(), child: Some(Process::Std(child)), guard })
    }

    /// Adds arguments.
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds an environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
}

/// A child process and what its [`Confine`] keeps while it runs (dropped after the child ends).
pub(crate) struct Running {
    /// Before `_guard`: dropped first.
    child: Process,
    _guard: Option<Box<dyn Any + Send + Sync>>,
}

struct StdioSender {
    /// Set when the child's stdout ends (it exited, or is about to).
    stdout_closed: tokio::sync::watch::Receiver<bool>,
    /// Taken on close, which closes the child's stdin.
    tx: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    child: Mutex<Option<Running>>,
    stderr: Arc<Mutex<String>>,
}

impl Sender for StdioSender {
    fn send(&self, message: Value) -> BoxFuture<Result<(), Error>> {
        let tx = self.tx.lock().unwrap().clone();
        Box::pin(async move {
            let tx = tx.ok_or_else(Error::closed)?;
            let mut line = serde_json::to_vec(&message).map_err(|e| Error::protocol(e.to_string()))?;
            line.push(b'\n');
            tx.send(line).await.map_err(|_| Error::closed())
        })
    }

    fn abandon(&self, _id: &RequestId) {}

    fn close(&self) -> BoxFuture<()> {
        let child = self.child.lock().unwrap().take();
        let tx = self.tx.lock().unwrap().take();
        let mut closed = self.stdout_closed.clone();
        Box::pin(async move {
            drop(tx); // the writer task ends, closing the child's stdin
                      // Kept whole: dropped (this future ending or cancelled), the process goes before
                      // what its Confine kept.
            let Some(mut running) = child else { return };
            let child = &mut running.child;
            // As the spec's stdio lifecycle says: up to 2 s for the child to exit on its own,
            // then SIGTERM and up to 1 s more, then kill it. A pidfd says the moment it exits;
            // without one, its stdout closing says when to start looking.
            let deadline = Instant::now() + Duration::from_secs(2);
            if !exit_watch(child, Duration::from_secs(2)).await {
                let _ = tokio::time::timeout(Duration::from_secs(2), closed.wait_for(|c| *c)).await;
            }
            if exited_by(child, deadline).await {
                return;
            }
            terminate(child);
            if exited_by(child, Instant::now() + Duration::from_secs(1)).await {
                return;
            }
            child.end();
        })
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// Waits (up to `limit`) until `child` exits, through a Linux pidfd; `false` if none is available.
#[allow(unsafe_code)]
async fn exit_watch(child: &Process, limit: Duration) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id() as libc::c_long, 0 as libc::c_long) };
        if fd < 0 {
            return false;
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(fd as std::os::fd::RawFd) };
        // SAFETY: the OwnedFd stays open for as long as the AsyncFd holds it.
        let Ok(watch) = (unsafe { tokio::io::unix::AsyncFd::register(owned) }) else { return false };
        let _ = tokio::time::timeout(limit, watch.readable()).await;
        true
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (child, limit);
        false
    }
}

/// Keeps the first [`STDERR_CAP`] bytes of the child's stderr in `sink`, and reads (and drops) the
/// rest so the child never blocks on a full pipe.
fn capture_stderr(mut stderr: impl tokio::io::AsyncRead + Unpin + Send + 'static, sink: Arc<Mutex<String>>) {
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let mut s = sink.lock().unwrap();
            if s.len() < STDERR_CAP {
                s.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        }
    });
}

/// Says "stdout closed" when the reader task ends, however it ends.
struct CloseSignal(tokio::sync::watch::Sender<bool>);

impl Drop for CloseSignal {
    fn drop(&mut self) {
        let _ = self.0.send(true);
    }
}

impl Drop for StdioSender {
    /// A client dropped without `close()` ends its child: no orphans, no zombies.
    fn drop(&mut self) {
        if let Some(mut running) = self.child.lock().unwrap().take() {
            running.child.end();
        }
    }
}

/// Whether `child` exits by `deadline` (looked at every millisecond).
async fn exited_by(child: &mut Process, deadline: Instant) -> bool {
    loop {
        if child.has_exited() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Asks `child` to stop (SIGTERM).
fn terminate(child: &Process) {
    #[cfg(unix)]
    super::process::signal(child.id(), libc::SIGTERM);
    #[cfg(not(unix))]
    let _ = child;
}

/// A started server process, not yet connected. Dropped unconnected, it is killed and reaped.
pub struct ServerProcess {
    command: StdioCommand,
    /// Taken by [`start`].
    child: Option<Process>,
    /// What the command's [`Confine`] keeps for as long as the process runs.
    guard: Option<Box<dyn Any + Send + Sync>>,
}

impl fmt::Debug for ServerProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerProcess").field("command", &self.command).field("child", &self.child).finish()
    }
}

impl ServerProcess {
    /// The command it was started from.
    pub fn command(&self) -> &StdioCommand {
        &self.command
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.end();
        }
    }
}

/// Wires a started process to `core`: its pipes are driven by the reactor (no blocking threads).
pub(crate) fn start(core: &Arc<Core>, mut process: ServerProcess) -> Result<(), Error> {
    let mut child = process.child.take().ok_or_else(Error::closed)?;
    let (stdin, stdout, stderr) = child.take_pipes().ok_or_else(Error::closed)?;
    let (stdin, stdout) = (writer_for(stdin)?, reader_for(stdout)?);
    let captured = Arc::new(Mutex::new(String::new()));
    if let Some(stderr) = stderr {
        capture_stderr(reader_for(stderr)?, captured.clone());
    }
    start_streams(core, stdout, stdin, Some(Running { child, _guard: process.guard.take() }), captured);
    Ok(())
}

/// Wires any byte stream pair to `core`: newline-delimited JSON read from `reader`, written to
/// `writer` (a child's pipes, an in-process pipe, a socket).
pub(crate) fn start_streams(
    core: &Arc<Core>,
    reader: impl AsyncRead + Unpin + Send + 'static,
    mut writer: impl AsyncWrite + Unpin + Send + 'static,
    child: Option<Running>,
    stderr: Arc<Mutex<String>>,
) {
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(256);
    tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            if writer.write_all(&line).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
        let _ = writer.shutdown().await;
    });
    let weak: Weak<Core> = Arc::downgrade(core);
    let (closed_tx, stdout_closed) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let _closed = CloseSignal(closed_tx);
        // Bounded lines of bytes: an endless or non-UTF-8 line from the server is skipped, and
        // the connection goes on.
        let max_line = weak.upgrade().map_or(0, |core| core.options.max_message_bytes);
        let mut lines = LineReader::new(reader, max_line);
        while let Ok(Some(frame)) = lines.next().await {
            let Some(core) = weak.upgrade() else { return };
            match frame {
                Frame::Line(line) => match std::str::from_utf8(&line) {
                    Ok(text) if core.on_text(text) => {}
                    _ => tracing::warn!(
                        "the server wrote a non-JSON line on stdout: {:?}",
                        String::from_utf8_lossy(&line[..line.len().min(200)])
                    ),
                },
                Frame::TooLong => {
                    let (head, tail) = lines.dropped_line_ends();
                    match super::core::answered_id(head, tail) {
                        Some(id) => core.fail_oversized(&id),
                        None => tracing::warn!("the server wrote a line over {max_line} bytes; skipped"),
                    }
                }
            }
        }
        if let Some(core) = weak.upgrade() {
            core.closed();
        }
    });
    core.set_sender(Arc::new(StdioSender {
        stdout_closed,
        tx: Mutex::new(Some(tx)),
        child: Mutex::new(child),
        stderr,
    }));
}
