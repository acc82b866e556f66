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
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if out.write_all(&line).and_then(|()| out.flush()).is_err() {
            tracing::warn!("could not write the audit log");
        }
    }
}

/// One request's line, written straight from its fields (no map is built). The fields are in
/// the sorted order lines have always had.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct RequestLine<'a> {
    account: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    client: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_id: Option<String>,
    duration_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_code: Option<i32>,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<Value>,
    protocol_version: &'a str,
    request_id: mcp_types::RequestId,
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<String>,
    time: String,
}

/// The fields known before the request runs.
fn start_entry<'a>(call: &Call<'a>, arguments: bool) -> RequestLine<'a> {
    let caller = call.caller();
    let client = match call.method() {
        "initialize" => initialize_client(call.params_json()),
        _ => None,
    };
    let params = match call.params_json() {
        Some(params) if arguments => Some(serde_json::from_str(params).unwrap_or(Value::Null)),
        _ => None,
    };
    RequestLine {
        account: call.account_str().to_owned(),
        client,
        client_id: caller.as_ref().and_then(|c| c.client_id().map(str::to_owned)),
        duration_ms: 0.0,
        error_code: None,
        method: call.method,
        name: call.name().map(str::to_owned),
        outcome: "cancelled",
        params,
        protocol_version: call.cx.protocol_version(),
        request_id: call.request_id().clone(),
        subject: caller.as_ref().map(|c| c.subject().to_owned()),
        time: iso8601(now_ms()),
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

/// How a request ended, as the log names it.
fn outcome_fields(entry: &mut RequestLine<'_>, outcome: &Outcome) {
    let (name, code) = match outcome {
        Ok(result) if result.is_tool_error() => ("tool_error", None),
        Ok(result) => match result.result_type() {
            Some("input_required") => ("input_required", None),
            Some("task") => ("task", None),
            _ if result.has_task() => ("task", None),
            _ => ("ok", None),
        },
        Err(e) => ("error", Some(e.code.0)),
    };
    entry.outcome = name;
    entry.error_code = code;
}

/// Logs a request whose future was dropped (the client cancelled it, or the connection ended).
struct Pending<'a> {
    log: &'a AuditLog,
    entry: Option<RequestLine<'a>>,
    start: Instant,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if let Some(mut entry) = self.entry.take() {
            entry.duration_ms = self.start.elapsed().as_secs_f64() * 1000.0;
            entry.outcome = "cancelled";
            self.log.write(&entry);
        }
    }
}

impl Middleware for AuditLog {
    fn handle<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let mut pending =
                Pending { log: self, entry: Some(start_entry(&call, self.arguments)), start: Instant::now() };
            let outcome = next.run(call).await;
            if let Some(mut entry) = pending.entry.take() {
                let ms = (pending.start.elapsed().as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0;
                entry.duration_ms = ms;
                outcome_fields(&mut entry, &outcome);
                self.write(&entry);
            }
            outcome
        })
    }
}
