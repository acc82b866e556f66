//! The stdio transport of the client: a child process, newline-delimited JSON on its stdin and
//! stdout, its stderr kept apart (and capped). The child is ended when the client is dropped.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use mcp_types::RequestId;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use super::core::{Core, Sender};
use crate::error::Error;
use crate::server::BoxFuture;

/// Kept of a child's stderr, at most.
const STDERR_CAP: usize = 64 * 1024;

/// How to start a server process.
#[derive(Debug, Clone)]
pub struct StdioCommand {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
}

impl StdioCommand {
    /// `program` with no arguments.
    pub fn new(program: impl Into<String>) -> Self {
        StdioCommand { program: program.into(), args: Vec::new(), env: Vec::new(), cwd: None }
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

struct StdioSender {
    /// Taken on close, which closes the child's stdin.
    tx: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    child: Mutex<Option<Child>>,
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
        Box::pin(async move {
            drop(tx);
            let Some(mut child) = child else { return };
            // Close stdin (the writer ends when every sender is gone), wait, then kill.
            if tokio::time::timeout(Duration::from_secs(2), child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
        })
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// Spawns the child and wires it to `core`.
pub(crate) fn start(core: &Arc<Core>, command: StdioCommand) -> Result<(), Error> {
    let mut cmd = Command::new(&command.program);
    cmd.args(&command.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    for (k, v) in &command.env {
        cmd.env(k, v);
    }
    if let Some(dir) = &command.cwd {
        cmd.current_dir(dir);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::from(std::io::Error::new(e.kind(), format!("cannot start {:?}: {e}", command.program))))?;
    let mut stdin = child.stdin.take().ok_or_else(Error::closed)?;
    let stdout = child.stdout.take().ok_or_else(Error::closed)?;
    let mut stderr = child.stderr.take().ok_or_else(Error::closed)?;
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(256);
    tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
                break;
            }
        }
    });
    let captured = Arc::new(Mutex::new(String::new()));
    let sink = captured.clone();
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
    let weak: Weak<Core> = Arc::downgrade(core);
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Some(core) = weak.upgrade() else { return };
            match serde_json::from_str::<Value>(&line) {
                Ok(message) => core.on_message(message),
                Err(_) => tracing::warn!("the server wrote a non-JSON line on stdout: {line:?}"),
            }
        }
        if let Some(core) = weak.upgrade() {
            core.closed();
        }
    });
    core.set_sender(Arc::new(StdioSender {
        tx: Mutex::new(Some(tx)),
        child: Mutex::new(Some(child)),
        stderr: captured,
    }));
    Ok(())
}
