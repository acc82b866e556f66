//! The audit log: one JSON line per request, `initialize` included (time, request id, account
//! and subject, method, name, the client of an `initialize`, duration, outcome, error code), to
//! stderr or a file. Never the token; the arguments
//! only when asked.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};

use super::{Call, Middleware, Next, Outcome};
use crate::server::tasks::record::{iso8601, now_ms};

/// Writes one JSON line per request.
pub struct AuditLog {
    out: Arc<Mutex<Box<dyn Write + Send>>>,
    arguments: bool,
}

impl AuditLog {
    /// Lines to stderr.
    pub fn to_stderr() -> Self {
        AuditLog::to_writer(std::io::stderr())
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
        Ok(AuditLog::to_writer(file))
    }

    /// Lines to `out`.
    pub fn to_writer(out: impl Write + Send + 'static) -> Self {
        AuditLog { out: Arc::new(Mutex::new(Box::new(out))), arguments: false }
    }

    /// Also records each request's params (tool arguments included). Off by default: arguments
    /// may hold personal data.
    pub fn with_arguments(mut self, on: bool) -> Self {
        self.arguments = on;
        self
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
        self.write_line(&line);
    }

    /// Writes `line` (ending in a newline) in one write.
    fn write_line(&self, line: &[u8]) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if out.write_all(line).and_then(|()| out.flush()).is_err() {
            tracing::warn!("could not write the audit log");
        }
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
}

fn start_line(call: &Call<'_>, arguments: bool) -> Line {
    let caller = call.caller();
    let client = match call.method {
        "initialize" => initialize_client(call.params_json()),
        _ => None,
    };
    let params = match call.params_json() {
        Some(params) if arguments => Some(serde_json::from_str(params).unwrap_or(Value::Null)),
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
    })
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
        if let Some(subject) = known.subject {
            field(&mut text, "subject", subject);
        }
        field(&mut text, "time", &known.time);
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
            self.log.write_line(&line.finish(ms, None, "cancelled"));
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
                self.write_line(&line.finish(ms, code, name));
            }
            outcome
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        };
        let bare = Known { client: None, client_id: None, name: None, params: None, subject: None, ..full.clone() };
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
