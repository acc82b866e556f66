//! `mcp doctor`: what is wrong with a server, and how to fix it.
//!
//! The checks run in the order a host meets the server: the process starts (stdout noise, start
//! time), the handshake of each revision, then over one client connection the listings (names,
//! schemas, descriptions, annotations, sizes, pagination), the resources read, the round-trip
//! latency, and on HTTP the transport's guards (Origin, Host, sessions, the 401 challenge and its
//! protected-resource metadata, TLS). Each problem is a [`Finding`] of a [`rules`] rule with its
//! fix; the report is text for a person, or JSON or SARIF for CI (exit code 1 on an error).

mod http;
mod lint;
mod pin;
mod render;
pub mod rules;
mod stdio;
mod text;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mcp::client::{Client, ClientOptions, StdioCommand};
use serde_json::Value;

use crate::target::Target;
use rules::Rule;

/// `mcp doctor`'s options.
#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    /// How the report is written: text for a person, json, or sarif (SARIF 2.1.0, for code
    /// scanning in CI).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// A pin file of the tools' definitions: written when missing, compared when present (a
    /// changed description or schema is an error). Commit it.
    #[arg(long, value_name = "FILE")]
    pub pin: Option<PathBuf>,
    /// Rewrites the pin file with the definitions served now (after reviewing the change).
    #[arg(long, requires = "pin")]
    pub update_pin: bool,
    /// Also calls the tools marked readOnlyHint that need no arguments, and checks their
    /// results (size, text aimed at the model, structuredContent against outputSchema). Off by
    /// default: the hint is the server's word, and the doctor calls nothing it was not asked to.
    #[arg(long)]
    pub call_read_only: bool,
    /// Milliseconds a stdio server may take to answer its first request before it is reported
    /// slow.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    pub slow_start: u64,
}

/// The report's format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Lines for a person.
    Text,
    /// One JSON document.
    Json,
    /// SARIF 2.1.0.
    Sarif,
}

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Hosts or models fail, or users are at risk: exit code 1.
    Error,
    /// Works, but badly somewhere.
    Warning,
    /// Worth knowing.
    Note,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "note",
        }
    }
}

/// One problem found.
#[derive(Debug, Clone)]
pub struct Finding {
    /// Which rule it breaks.
    pub rule: &'static Rule,
    /// How bad.
    pub level: Level,
    /// What it is about: `tool read_notes`, `resource file:///a`, `POST /mcp`.
    pub subject: Option<String>,
    /// What is wrong, with the evidence.
    pub message: String,
    /// What to do about it.
    pub fix: String,
}

/// Everything the doctor learned.
#[derive(Debug, Default)]
pub struct Report {
    /// The server as named on the command line.
    pub target: String,
    /// What passed, one line per step, for the person reading.
    pub passed: Vec<String>,
    /// The problems.
    pub findings: Vec<Finding>,
}

impl Report {
    fn find(&mut self, rule: &'static Rule, level: Level, subject: Option<String>, message: String, fix: &str) {
        self.findings.push(Finding { rule, level, subject, message, fix: fix.to_owned() });
    }

    fn pass(&mut self, line: impl Into<String>) {
        self.passed.push(line.into());
    }

    /// Whether an error was found (exit code 1).
    pub fn failed(&self) -> bool {
        self.findings.iter().any(|f| f.level == Level::Error)
    }
}

/// What the doctor examines and how it connects.
pub struct Patient {
    /// The server.
    pub target: Target,
    /// Client options for the connection the listings are read over (stored tokens, no browser).
    pub options: ClientOptions,
    /// Seconds a single probe may wait.
    pub timeout: Duration,
}

/// Runs every check and returns the report.
pub async fn examine(patient: Patient, args: &DoctorArgs) -> Report {
    let mut report = Report { target: patient.target.describe(), ..Report::default() };
    match &patient.target {
        Target::Stdio(command) => stdio::probe(command, patient.timeout, args.slow_start, &mut report).await,
        Target::Http(url, headers, _) => {
            http::probe(url, headers, &patient.options, patient.timeout, &mut report).await
        }
    }
    let started = Instant::now();
    let client = match connect(&patient).await {
        Ok(client) => client,
        Err(e) => {
            let (level, fix) = if e.is_auth_required() {
                (
                    Level::Warning,
                    "authorize first with `mcp login URL` (the doctor uses stored tokens), then run it again",
                )
            } else {
                (Level::Error, "start the server by hand with the same command and read its stderr; `mcp --trace ping` shows the messages")
            };
            let rule = if e.is_auth_required() { &rules::NOT_CHECKED } else { &rules::CONNECT };
            report.find(rule, level, None, format!("the client could not connect: {e}"), fix);
            return report;
        }
    };
    let d = client.description();
    let (name, version) = d.server_info.as_ref().map(|i| (i.name.as_str(), i.version.as_str())).unwrap_or(("?", "?"));
    report.pass(format!(
        "connected in {} ms: {name} {version} ({})",
        started.elapsed().as_millis(),
        if d.modern {
            format!("2026-07-28, server/discover lists {}", d.supported_versions.join(" "))
        } else {
            format!("legacy {}", d.protocol_version)
        }
    ));
    negotiation(&client.negotiation(), matches!(patient.target, Target::Http(..)), &mut report);
    if let Some(instructions) = &d.instructions {
        lint::text_for_model(&mut report, "the server's instructions", instructions);
    }
    let tools = lint::listings(&client, &mut report).await;
    if let (true, Some(tools)) = (args.call_read_only, &tools) {
        lint::call_read_only(&client, tools, &mut report).await;
    }
    let local = match &patient.target {
        Target::Stdio(_) => true,
        Target::Http(url, ..) => http::is_loopback_url(url),
    };
    if local {
        lint::latency(&client, &mut report).await; // elsewhere the network's round trip decides
    }
    if let (Some(path), Some(tools)) = (&args.pin, &tools) {
        pin::check(path, tools, args.update_pin, &mut report);
    }
    client.close().await;
    report
}

/// Over HTTP, a negotiation longer than this is slow (a stdio server's start is judged apart).
const SLOW_NEGOTIATION: Duration = Duration::from_secs(1);

/// Flags a probe that was waited out (every client that probes waits as long, at every start)
/// or, over HTTP, a negotiation slower than [`SLOW_NEGOTIATION`].
fn negotiation(negotiation: &mcp::client::Negotiation, http: bool, report: &mut Report) {
    let steps = negotiation.steps.join("; ");
    let ms = negotiation.elapsed.as_millis();
    if negotiation.waited_out {
        report.find(
            &rules::NEGOTIATION,
            Level::Warning,
            None,
            format!("deciding the protocol era took {ms} ms because a probe went unanswered: {steps}"),
            "answer every request: a method the server does not know gets a JSON-RPC error (-32601), \
             before initialize too, so that clients probing for 2026-07-28 fall back at once",
        );
    } else if http && negotiation.elapsed > SLOW_NEGOTIATION {
        report.find(
            &rules::NEGOTIATION,
            Level::Warning,
            None,
            format!("deciding the protocol era took {ms} ms: {steps}"),
            "answer a request the server cannot serve at once (an HTTP 4xx with a JSON-RPC error), \
             without waiting",
        );
    } else if !steps.is_empty() {
        report.pass(format!("protocol era decided in {ms} ms: {steps}"));
    }
}

async fn connect(patient: &Patient) -> Result<Client, mcp::Error> {
    let options = patient.options.clone();
    match &patient.target {
        Target::Stdio(command) => {
            let mut command: StdioCommand = command.clone();
            command.stderr = mcp::client::Stderr::Discard;
            Client::connect_stdio(command, options).await
        }
        Target::Http(url, ..) => Client::connect_http(url, options).await,
    }
}

/// The report written as `format` asks.
pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Text => render::text(report),
        Format::Json => render::json(report),
        Format::Sarif => render::sarif(report),
    }
}

/// The `initialize` request (id 1) the probes send, asking for `revision`.
fn initialize(revision: &str) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": revision,
        "capabilities": {},
        "clientInfo": {"name": "mcp-doctor", "version": env!("CARGO_PKG_VERSION")}
    }})
}

/// A JSON-RPC message's `id` as a number, if it has one.
fn id_of(message: &Value) -> Option<i64> {
    message.get("id").and_then(Value::as_i64)
}
