//! The stdio server as a host meets it, on raw pipes: how long it takes to answer, whether
//! anything but JSON-RPC reaches stdout, and which legacy revisions its `initialize` accepts
//! (one process per revision, as a host of that revision would start it).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp::client::StdioCommand;
use mcp::types::ProtocolVersion;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

use super::{id_of, rules, Level, Report};

/// The longest line read; a longer one is noise and ends the probe.
const MAX_LINE: u64 = 16 * 1024 * 1024;
/// Samples of noise kept for the report.
const SAMPLES: usize = 3;
/// Past this, a slow start is an error: hosts give up (Codex waits 10 s by default).
const TOO_SLOW: Duration = Duration::from_secs(10);

/// What one process did.
#[derive(Default)]
struct Session {
    /// Time from spawning to the first answer.
    first_answer: Option<Duration>,
    /// The `initialize` result or error.
    initialize: Option<Value>,
    /// Lines on stdout that are not JSON-RPC messages.
    noise: Vec<String>,
    noise_lines: usize,
    /// Why the probe ended early (the process exited, a timeout).
    ended: Option<String>,
}

/// Runs the stdio checks into `report`.
pub async fn probe(command: &StdioCommand, timeout: Duration, slow_ms: u64, report: &mut Report) {
    let mut accepted = Vec::new();
    let mut noise: Vec<String> = Vec::new();
    let mut noise_lines = 0;
    for (i, revision) in ProtocolVersion::LEGACY.iter().enumerate() {
        let session = match run(command, revision, i == 0, timeout).await {
            Ok(session) => session,
            Err(e) => {
                report.find(
                    &rules::CONNECT,
                    Level::Error,
                    None,
                    e,
                    "check the command: it must be a program on PATH (or a path) that can run here",
                );
                return;
            }
        };
        noise_lines += session.noise_lines;
        for line in &session.noise {
            if noise.len() < SAMPLES && !noise.contains(line) {
                noise.push(line.clone());
            }
        }
        if i == 0 {
            first_answer(&session, slow_ms, report);
        }
        match session.initialize.as_ref().map(|a| (a.get("result"), a.get("error"))) {
            Some((Some(result), _)) => {
                let answered = result["protocolVersion"].as_str().unwrap_or_default().to_owned();
                if !ProtocolVersion::ALL.contains(&answered.as_str()) {
                    report.find(
                        &rules::HANDSHAKE,
                        Level::Error,
                        Some(format!("initialize {revision}")),
                        format!("asked for {revision}, the server answered protocolVersion {answered:?}, which is no MCP revision"),
                        "answer with the requested revision when supported, else the latest one the server supports (a dated string such as 2025-11-25)",
                    );
                } else if answered == *revision {
                    accepted.push(revision.to_string());
                } else {
                    accepted.push(format!("{revision}→{answered}"));
                }
            }
            Some((None, Some(error))) => {
                accepted.push(format!("{revision}: refused ({})", error["message"].as_str().unwrap_or("error")))
            }
            _ => {
                let why = session.ended.unwrap_or_else(|| "no answer".into());
                if i == 0 {
                    report.find(&rules::CONNECT, Level::Error, Some("initialize".into()), format!("initialize {revision}: {why}"), "the server must answer initialize on stdout; run it by hand and send an initialize line to see what happens");
                    return;
                }
                accepted.push(format!("{revision}: {why}"));
            }
        }
    }
    if noise_lines > 0 {
        report.find(
            &rules::STDOUT_NOISE,
            Level::Error,
            None,
            format!("{noise_lines} line(s) on stdout are not JSON-RPC messages, e.g. {}", noise.iter().map(|l| format!("{l:?}")).collect::<Vec<_>>().join(", ")),
            "stdout carries only JSON-RPC, one message per line: write logs and banners to stderr (console.error in Node, print(..., file=sys.stderr) in Python, eprintln! in Rust)",
        );
    } else {
        report.pass("stdout: only JSON-RPC messages");
    }
    report.pass(format!("initialize: {}", accepted.join(", ")));
}

fn first_answer(session: &Session, slow_ms: u64, report: &mut Report) {
    let Some(took) = session.first_answer else { return };
    let ms = took.as_millis();
    if took >= TOO_SLOW || ms > u128::from(slow_ms) {
        let level = if took >= TOO_SLOW { Level::Error } else { Level::Warning };
        report.find(
            &rules::SLOW_START,
            level,
            None,
            format!("the first answer came {ms} ms after the process started"),
            "do heavy set-up after the handshake (lazily, on first use), and start a built program rather than a package manager that resolves packages on every start (npx, uvx)",
        );
    } else {
        report.pass(format!("started and answered in {ms} ms"));
    }
}

/// One process: `initialize` with `revision`; when `full`, then `initialized` and `tools/list`,
/// so that noise printed on the first use shows too.
async fn run(command: &StdioCommand, revision: &str, full: bool, timeout: Duration) -> Result<Session, String> {
    let started = Instant::now();
    let (mut child, _kept) = spawn(command)?;
    let stderr = keep_stderr(&mut child);
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout);
    let mut session = Session::default();
    let deadline = tokio::time::Instant::now() + timeout;
    let _ = send(&mut stdin, &super::initialize(revision)).await;
    session.initialize = read_answer(&mut lines, &mut stdin, 1, deadline, &mut session_noise(&mut session)).await;
    session.first_answer = session.initialize.as_ref().map(|_| started.elapsed());
    if session.initialize.is_some() && full {
        let _ = send(&mut stdin, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        let _ = send(&mut stdin, &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
        let _ = read_answer(&mut lines, &mut stdin, 2, deadline, &mut session_noise(&mut session)).await;
    }
    if session.initialize.is_none() {
        session.ended = Some(match child.try_wait() {
            Ok(Some(status)) => {
                format!("the process exited ({status}) before answering; its stderr: {}", tail(&stderr))
            }
            _ => format!("no answer within {} s", timeout.as_secs()),
        });
    }
    drop(stdin);
    end(child).await;
    Ok(session)
}

/// Where `read_answer` puts what is not a message.
struct Noise<'a> {
    samples: &'a mut Vec<String>,
    count: &'a mut usize,
}

fn session_noise(session: &mut Session) -> Noise<'_> {
    Noise { samples: &mut session.noise, count: &mut session.noise_lines }
}

/// Reads stdout until the answer to `id` (requests from the server are refused politely).
async fn read_answer(
    lines: &mut BufReader<tokio::process::ChildStdout>,
    stdin: &mut ChildStdin,
    id: i64,
    deadline: tokio::time::Instant,
    noise: &mut Noise<'_>,
) -> Option<Value> {
    loop {
        let mut line = Vec::new();
        let read = tokio::time::timeout_at(deadline, (&mut *lines).take(MAX_LINE).read_until(b'\n', &mut line)).await;
        match read {
            Ok(Ok(0)) | Err(_) | Ok(Err(_)) => return None,
            Ok(Ok(_)) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        let message = serde_json::from_str::<Value>(text).ok().filter(|m| m.get("jsonrpc") == Some(&json!("2.0")));
        let Some(message) = message else {
            *noise.count += 1;
            if noise.samples.len() < SAMPLES {
                noise.samples.push(text.chars().take(80).collect());
            }
            if line.len() as u64 >= MAX_LINE {
                return None;
            }
            continue;
        };
        if message.get("method").is_some() {
            if let Some(request_id) = message.get("id") {
                let refusal = json!({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "the doctor answers no requests"}});
                let _ = send(stdin, &refusal).await;
            }
            continue;
        }
        if id_of(&message) == Some(id) {
            return Some(message);
        }
    }
}

/// What a confined process's sandbox keeps while it runs.
type Kept = Option<Box<dyn std::any::Any + Send + Sync>>;

fn spawn(command: &StdioCommand) -> Result<(Child, Kept), String> {
    let mut cmd = std::process::Command::new(&command.program);
    cmd.args(&command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(cwd) = &command.cwd {
        cmd.current_dir(cwd);
    }
    let cannot = |e: std::io::Error| format!("cannot start {}: {e}", command.program);
    let kept = match &command.confine {
        Some(confine) => Some(confine.0.prepare(&mut cmd).map_err(cannot)?),
        None => None,
    };
    let mut cmd = Command::from(cmd);
    cmd.kill_on_drop(true);
    match (cmd.spawn(), &command.confine, &kept) {
        (Ok(child), ..) => Ok((child, kept)),
        (Err(e), Some(confine), Some(k)) => Err(cannot(confine.0.explain(k.as_ref(), e))),
        (Err(e), ..) => Err(cannot(e)),
    }
}

/// The last few KiB of the process's stderr, kept as it runs.
fn keep_stderr(child: &mut Child) -> Arc<Mutex<Vec<u8>>> {
    let kept = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut stderr) = child.stderr.take() {
        let sink = kept.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut buf).await {
                let mut kept = sink.lock().unwrap();
                kept.extend_from_slice(&buf[..n]);
                let excess = kept.len().saturating_sub(4096);
                kept.drain(..excess);
            }
        });
    }
    kept
}

fn tail(stderr: &Mutex<Vec<u8>>) -> String {
    let text = String::from_utf8_lossy(&stderr.lock().unwrap()).trim().to_owned();
    let start = text.char_indices().rev().nth(400).map(|(i, _)| i).unwrap_or(0);
    if text.is_empty() {
        "(empty)".into()
    } else {
        text[start..].to_owned()
    }
}

async fn send(stdin: &mut ChildStdin, message: &Value) -> std::io::Result<()> {
    let mut line = message.to_string();
    line.push('\n');
    stdin.write_all(line.as_bytes()).await?;
    stdin.flush().await
}

/// Closes the process: a second to exit after stdin closed, then killed; always reaped.
async fn end(mut child: Child) {
    if tokio::time::timeout(Duration::from_secs(1), child.wait()).await.is_err() {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}
