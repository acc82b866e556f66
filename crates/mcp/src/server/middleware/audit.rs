//! The audit log: one JSON line per request, `initialize` included (time, request id, account
//! and subject, method, name, the client of an `initialize`, duration, outcome, error code, and
//! with telemetry the `traceId` and `spanId` of the request's span), to stderr or a file. Never
//! the token; the arguments only when asked.
//!
//! Requests never wait for the log: a line goes into a bounded queue that a thread of its own
//! writes out in batches (woken by a line, it lets more gather for 2 ms, so that under load it
//! wakes once per batch, not once per request), flushed whenever the queue runs dry. When the
//! destination stalls (a full disk, a pipe nobody reads) and the queue is full, lines are dropped
//! and counted: the count is [`AuditLog::dropped`] (and [`dropped_lines`] for the whole process,
//! what `/metrics` pages show), and it is said on stderr when the log is closed
//! ([`AuditLog::close`], at a server's exit).

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};

use super::{Call, Middleware, Next, Outcome};
use crate::server::tasks::record::{iso8601, now_ms};

/// Lines waiting for the writer, at most.
const QUEUE_LINES: usize = 4096;
/// Bytes waiting for the writer, at most (a line with arguments may be large).
const QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// How long the writer lets lines gather after it is woken, before it writes them.
const GATHER: Duration = Duration::from_millis(2);
/// How long closing a log waits for its writer to write out what is queued.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Lines every audit log of this process dropped (see [`dropped_lines`]).
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Every open log's queue, for [`close_all`].
static OPEN: Mutex<Vec<Weak<Queue>>> = Mutex::new(Vec::new());

/// Audit lines dropped so far by every audit log of this process, because their writers could not
/// keep up (the counter a `/metrics` page shows as `mcp_audit_lines_dropped_total`).
pub fn dropped_lines() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Closes every audit log of this process (see [`AuditLog::close`]): what the command line of a
/// server does before it exits.
pub fn close_all() {
    let open: Vec<Arc<Queue>> =
        OPEN.lock().unwrap_or_else(|e| e.into_inner()).iter().filter_map(Weak::upgrade).collect();
    let deadline = Instant::now() + CLOSE_WAIT;
    for queue in open {
        queue.close(deadline);
    }
}

/// Writes one JSON line per request.
#[derive(Clone)]
pub struct AuditLog {
    queue: Arc<Queue>,
    arguments: bool,
}

/// A log's side of its writer thread.
struct Queue {
    lines: SyncSender<Message>,
    /// Bytes queued and not yet written.
    queued: Arc<AtomicUsize>,
    dropped: AtomicU64,
    /// Where the lines go, as the drop report names it.
    destination: String,
    closed: AtomicBool,
}

enum Message {
    Line(Vec<u8>),
    /// Answered once every line queued before it is written and flushed.
    Flush(mpsc::Sender<()>),
}

impl AuditLog {
    /// Lines to stderr.
    pub fn to_stderr() -> Self {
        AuditLog::to_destination(std::io::stderr(), "stderr".into())
    }

    /// Lines appended to the file at `path` (created with mode 0600).
    pub fn to_file(path: &std::path::Path) -> std::io::Result<Self> {
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options
            .open(path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("audit log {}: {e}", path.display())))?;
        Ok(AuditLog::to_destination(file, path.display().to_string()))
    }

    /// Lines to `out`.
    pub fn to_writer(out: impl Write + Send + 'static) -> Self {
        AuditLog::to_destination(out, "its writer".into())
    }

    fn to_destination(out: impl Write + Send + 'static, destination: String) -> Self {
        let (lines, rx) = mpsc::sync_channel(QUEUE_LINES);
        let queued = Arc::new(AtomicUsize::new(0));
        let writer_queued = queued.clone();
        let spawned = std::thread::Builder::new()
            .name("mcp-audit-log".into())
            .spawn(move || write_out(Box::new(out), rx, &writer_queued));
        if let Err(e) = spawned {
            tracing::warn!("the audit log's writer thread could not start ({e}): every line will be dropped");
        }
        let queue =
            Arc::new(Queue { lines, queued, dropped: AtomicU64::new(0), destination, closed: AtomicBool::new(false) });
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|q| q.strong_count() > 0);
        open.push(Arc::downgrade(&queue));
        AuditLog { queue, arguments: false }
    }

    /// Also records each request's params (tool arguments included). Off by default: arguments
    /// may hold personal data.
    pub fn with_arguments(mut self, on: bool) -> Self {
        self.arguments = on;
        self
    }

    /// Lines this log dropped so far because its writer could not keep up.
    pub fn dropped(&self) -> u64 {
        self.queue.dropped.load(Ordering::Relaxed)
    }

    /// Waits (up to `timeout`) until every line queued so far is written and flushed; `false`
    /// when the writer did not get there in time.
    pub fn flush(&self, timeout: Duration) -> bool {
        self.queue.flush(Instant::now() + timeout)
    }

    /// Writes out what is queued (waiting up to 2 s for a stalled destination), then says on
    /// stderr how many lines were dropped, if any. Lines logged afterwards are still written;
    /// the count is said once per log.
    pub fn close(&self) {
        self.queue.close(Instant::now() + CLOSE_WAIT);
    }

    /// Writes one line of the caller's own: `event` with `fields`, timestamped (a gateway logs
    /// what its upstreams list this way).
    pub fn note(&self, event: &str, fields: Map<String, Value>) {
        let mut entry = Map::new();
        entry.insert("time".into(), json!(iso8601(now_ms())));
        entry.insert("event".into(), json!(event));
        entry.extend(fields);
        self.write(&entry);
    }

    fn write(&self, entry: &impl serde::Serialize) {
        let mut line = serde_json::to_vec(entry).unwrap_or_default();
        line.push(b'\n');
        self.write_line(line);
    }

    /// Queues `line` (ending in a newline), or drops and counts it when the queue is full.
    fn write_line(&self, line: Vec<u8>) {
        self.queue.push(line);
    }
}

impl Queue {
    fn push(&self, line: Vec<u8>) {
        let len = line.len();
        let before = self.queued.fetch_add(len, Ordering::Relaxed);
        let full = before + len > QUEUE_BYTES && before > 0;
        let sent = !full && self.lines.try_send(Message::Line(line)).is_ok();
        if !sent {
            self.queued.fetch_sub(len, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn flush(&self, deadline: Instant) -> bool {
        let (done, flushed) = mpsc::channel();
        let mut message = Message::Flush(done);
        // A full queue is waited on (its writer may be slow, not stalled) until the deadline.
        loop {
            match self.lines.try_send(message) {
                Ok(()) => break,
                Err(TrySendError::Disconnected(_)) => return false,
                Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                    message = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(TrySendError::Full(_)) => return false,
            }
        }
        flushed.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_ok()
    }

    fn close(&self, deadline: Instant) {
        let written = self.flush(deadline);
        if !self.closed.swap(true, Ordering::Relaxed) {
            self.say_dropped(!written);
        }
    }

    /// Says on stderr how many lines were dropped (and whether queued ones are lost), if any.
    fn say_dropped(&self, queued_lost: bool) {
        let dropped = self.dropped.load(Ordering::Relaxed);
        if dropped == 0 && !queued_lost {
            return;
        }
        let lost = if queued_lost { ", and the lines still queued are lost" } else { "" };
        eprintln!(
            "audit log {}: {dropped} lines dropped, because it could not be written as fast as requests came{lost}",
            self.destination
        );
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // The last handle is gone (a server whose router goes when its transport ends): what is
        // queued is written out before it goes, as `close_all` would have (which no longer finds
        // it), so a process that exits next loses no line.
        if !self.closed.load(Ordering::Relaxed) {
            self.close(Instant::now() + CLOSE_WAIT);
        }
    }
}

/// The writer thread: writes lines in batches (buffered), flushing whenever none is waiting,
/// until every log handle is gone.
fn write_out(out: Box<dyn Write + Send>, rx: Receiver<Message>, queued: &AtomicUsize) {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    let mut failed = false;
    let mut unflushed = false;
    loop {
        let message = match rx.try_recv() {
            Ok(message) => message,
            Err(mpsc::TryRecvError::Disconnected) => break,
            Err(mpsc::TryRecvError::Empty) => {
                // Nothing waiting: what was written goes out now.
                if unflushed {
                    report(&mut failed, out.flush());
                }
                match rx.recv() {
                    // The first line after a quiet spell: the writer lets the lines that follow
                    // it gather for a moment, so that under load it wakes (and writes) once per
                    // batch rather than once per request; sending to a writer that is not
                    // waiting costs a request no system call.
                    Ok(message @ Message::Line(_)) => {
                        std::thread::sleep(GATHER);
                        message
                    }
                    Ok(message) => message,
                    Err(_) => break,
                }
            }
        };
        unflushed = match message {
            Message::Line(line) => {
                report(&mut failed, out.write_all(&line));
                queued.fetch_sub(line.len(), Ordering::Relaxed);
                true
            }
            Message::Flush(done) => {
                report(&mut failed, out.flush());
                let _ = done.send(());
                false
            }
        };
    }
    let _ = out.flush();
}

/// Says the first failure to write (and the first success after failures).
fn report(failed: &mut bool, result: std::io::Result<()>) {
    match result {
        Err(e) if !*failed => {
            *failed = true;
            tracing::warn!("could not write the audit log: {e}");
        }
        Ok(()) if *failed => {
            *failed = false;
            tracing::warn!("the audit log is written again");
        }
        _ => {}
    }
}

/// One request's line, its fields written as soon as they are known, in the sorted order lines
/// have always had: those known before the request runs are written first, around the two
/// places where `durationMs` (and `errorCode`) and `outcome` go when it ends. No map, and no
/// copy of each field, is made per request.
struct Line {
    text: Vec<u8>,
    /// Where the value of `durationMs` goes.
    duration_at: usize,
    /// Where the value of `outcome` goes.
    outcome_at: usize,
}

/// `,"key":` (or `{"key":` for the first).
fn key(text: &mut Vec<u8>, first: bool, key: &str) {
    text.push(if first { b'{' } else { b',' });
    text.push(b'"');
    text.extend_from_slice(key.as_bytes());
    text.extend_from_slice(b"\":");
}

/// `,"key":value`.
fn field(text: &mut Vec<u8>, name: &str, json: &(impl serde::Serialize + ?Sized)) {
    key(text, false, name);
    value(text, json);
}

/// A value as JSON (a string escaped).
fn value(text: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) {
    if serde_json::to_writer(&mut *text, value).is_err() {
        text.extend_from_slice(b"null");
    }
}

/// The fields known before the request runs.
#[derive(Clone)]
struct Known<'a> {
    account: &'a str,
    client: Option<Value>,
    client_id: Option<&'a str>,
    method: &'a str,
    name: Option<&'a str>,
    params: Option<Value>,
    protocol_version: &'a str,
    request_id: &'a mcp_types::RequestId,
    subject: Option<&'a str>,
    time: String,
    /// The trace and span ids of the request's span (with telemetry).
    trace: Option<(String, String)>,
}

fn start_line(call: &Call<'_>, arguments: bool) -> Line {
    let caller = call.caller();
    let client = match call.method {
        "initialize" => initialize_client(call.params_json()),
        _ => None,
    };
    let params = match call.params_json() {
        // Parsed within the default budget (the line shows the params sorted, as they always were).
        Some(params) if arguments => {
            Some(crate::server::bounded::parse(params, crate::server::bounded::DEFAULT_BUDGET).unwrap_or(Value::Null))
        }
        _ => None,
    };
    Line::start(&Known {
        account: call.account_str(),
        client,
        client_id: caller.as_ref().and_then(|c| c.client_id()),
        method: call.method,
        name: call.name(),
        params,
        protocol_version: call.cx.protocol_version(),
        request_id: call.request_id(),
        subject: caller.as_ref().map(|c| c.subject()),
        time: iso8601(now_ms()),
        trace: trace_ids(),
    })
}

/// The ids of the span the request runs in, so that its line and its trace can be joined.
#[cfg(feature = "otel")]
fn trace_ids() -> Option<(String, String)> {
    crate::telemetry::current_ids()
}

/// Without telemetry, no span.
#[cfg(not(feature = "otel"))]
fn trace_ids() -> Option<(String, String)> {
    None
}

impl Line {
    /// The line with `known` written, and places left for how the request ends.
    fn start(known: &Known<'_>) -> Line {
        let mut text = Vec::with_capacity(320);
        key(&mut text, true, "account");
        value(&mut text, known.account);
        if let Some(client) = &known.client {
            field(&mut text, "client", client);
        }
        if let Some(client_id) = known.client_id {
            field(&mut text, "clientId", client_id);
        }
        key(&mut text, false, "durationMs");
        let duration_at = text.len();
        field(&mut text, "method", known.method);
        if let Some(name) = known.name {
            field(&mut text, "name", name);
        }
        key(&mut text, false, "outcome");
        let outcome_at = text.len();
        if let Some(params) = &known.params {
            field(&mut text, "params", params);
        }
        field(&mut text, "protocolVersion", known.protocol_version);
        field(&mut text, "requestId", known.request_id);
        if let Some((_, span_id)) = &known.trace {
            field(&mut text, "spanId", span_id);
        }
        if let Some(subject) = known.subject {
            field(&mut text, "subject", subject);
        }
        field(&mut text, "time", &known.time);
        if let Some((trace_id, _)) = &known.trace {
            field(&mut text, "traceId", trace_id);
        }
        text.extend_from_slice(b"}\n");
        Line { text, duration_at, outcome_at }
    }

    /// The whole line, with how the request ended.
    fn finish(mut self, duration_ms: f64, error_code: Option<i32>, outcome: &str) -> Vec<u8> {
        // The later place first, so the earlier one's offset still holds.
        let quoted = [b"\"", outcome.as_bytes(), b"\""].concat();
        self.text.splice(self.outcome_at..self.outcome_at, quoted);
        let mut ended = Vec::with_capacity(40);
        value(&mut ended, &duration_ms);
        if let Some(code) = error_code {
            field(&mut ended, "errorCode", &code);
        }
        self.text.splice(self.duration_at..self.duration_at, ended);
        self.text
    }
}

/// The `clientInfo` an `initialize` names: `{"name", "version"}`, nothing else of it.
fn initialize_client(params: Option<&str>) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Info {
        name: String,
        #[serde(default)]
        version: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "clientInfo")]
        client_info: Info,
    }
    let info = serde_json::from_str::<Params>(params?).ok()?.client_info;
    Some(json!({"name": info.name, "version": info.version}))
}

/// How a request ended, as the log names it: the outcome, and the error code of an error.
fn outcome_fields(outcome: &Outcome) -> (&'static str, Option<i32>) {
    match outcome {
        Ok(result) if result.is_tool_error() => ("tool_error", None),
        Ok(result) => match result.result_type() {
            Some("input_required") => ("input_required", None),
            Some("task") => ("task", None),
            _ if result.has_task() => ("task", None),
            _ => ("ok", None),
        },
        Err(e) => ("error", Some(e.code.0)),
    }
}

/// Logs a request whose future was dropped (the client cancelled it, or the connection ended).
struct Pending<'a> {
    log: &'a AuditLog,
    line: Option<Line>,
    start: Instant,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if let Some(line) = self.line.take() {
            let ms = self.start.elapsed().as_secs_f64() * 1000.0;
            self.log.write_line(line.finish(ms, None, "cancelled"));
        }
    }
}

impl Middleware for AuditLog {
    fn handle<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let mut pending =
                Pending { log: self, line: Some(start_line(&call, self.arguments)), start: Instant::now() };
            let outcome = next.run(call).await;
            if let Some(line) = pending.line.take() {
                let ms = (pending.start.elapsed().as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0;
                let (name, code) = outcome_fields(&outcome);
                self.write_line(line.finish(ms, code, name));
            }
            outcome
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A destination that takes nothing until it is let go (a pipe nobody reads).
    struct Stalled(std::sync::mpsc::Receiver<()>);

    impl Write for Stalled {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _ = self.0.recv();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Logging never waits for the destination: past the queue, lines are dropped and counted.
    #[test]
    fn a_stalled_destination_drops_and_counts_without_waiting() {
        let (release, stalled) = std::sync::mpsc::channel();
        let log = AuditLog::to_writer(Stalled(stalled));
        let before = dropped_lines();
        let started = Instant::now();
        for i in 0..QUEUE_LINES + 1000 {
            // The first line is larger than the writer's 64 KiB buffer, so it reaches the stalled
            // destination at once. Small lines alone could all fit in that buffer when the writer
            // keeps pace with this loop, and then none was dropped (a flaky test).
            let padding = if i == 0 { "x".repeat(64 * 1024) } else { String::new() };
            log.write_line(format!("{{\"n\":{i}{padding}}}\n").into_bytes());
        }
        assert!(started.elapsed() < Duration::from_secs(2), "logging waited: {:?}", started.elapsed());
        // The writer holds one line; the queue the next QUEUE_LINES; the rest are dropped.
        let dropped = log.dropped();
        assert!((999..=1000).contains(&dropped), "{dropped} dropped");
        assert!(dropped_lines() - before >= dropped, "the process-wide count includes them");
        assert!(!log.flush(Duration::from_millis(100)), "a stalled writer is not waited on past the deadline");
        drop(release); // the destination takes everything again
        assert!(log.flush(Duration::from_secs(5)));
        log.write_line(b"{}\n".to_vec());
        assert_eq!(log.dropped(), dropped, "an empty queue takes lines again");
    }

    /// The line is the JSON of a sorted map of its fields, byte for byte, as it always was.
    #[test]
    fn a_line_is_its_fields_sorted() {
        let id = mcp_types::RequestId::Number(7);
        let full = Known {
            account: "sub:https://as#\"a\"",
            client: Some(json!({"name": "c", "version": null})),
            client_id: Some("client-1"),
            method: "tools/call",
            name: Some("echo\n"),
            params: Some(json!({"b": [1, {"z": 1, "a": 2}], "a": "é"})),
            protocol_version: "2026-07-28",
            request_id: &id,
            subject: Some("alice"),
            time: "2026-12-03T19:31:22.152Z".into(),
            trace: Some(("4bf92f3577b34da6a3ce929d0e0e4736".into(), "00f067aa0ba902b7".into())),
        };
        let bare = Known {
            client: None,
            client_id: None,
            name: None,
            params: None,
            subject: None,
            trace: None,
            ..full.clone()
        };
        for known in [full, bare] {
            for (ms, code, outcome) in [(0.001, None, "ok"), (12.5, Some(-32602), "error"), (3.0, None, "cancelled")] {
                let mut map = Map::new();
                map.insert("account".into(), json!(known.account));
                if let Some(client) = &known.client {
                    map.insert("client".into(), client.clone());
                }
                if let Some(client_id) = known.client_id {
                    map.insert("clientId".into(), json!(client_id));
                }
                map.insert("durationMs".into(), json!(ms));
                if let Some(code) = code {
                    map.insert("errorCode".into(), json!(code));
                }
                map.insert("method".into(), json!(known.method));
                if let Some(name) = known.name {
                    map.insert("name".into(), json!(name));
                }
                map.insert("outcome".into(), json!(outcome));
                if let Some(params) = &known.params {
                    map.insert("params".into(), params.clone());
                }
                map.insert("protocolVersion".into(), json!(known.protocol_version));
                map.insert("requestId".into(), json!(known.request_id));
                if let Some((trace_id, span_id)) = &known.trace {
                    map.insert("spanId".into(), json!(span_id));
                    map.insert("traceId".into(), json!(trace_id));
                }
                if let Some(subject) = known.subject {
                    map.insert("subject".into(), json!(subject));
                }
                map.insert("time".into(), json!(known.time));
                let mut expected = serde_json::to_vec(&map).unwrap();
                expected.push(b'\n');
                let line = Line::start(&known).finish(ms, code, outcome);
                assert_eq!(String::from_utf8(line).unwrap(), String::from_utf8(expected).unwrap());
            }
        }
    }
}
