//! How a run ends: the failures, the exit code of each (and the help text that lists them), and
//! how an outcome is reported: one JSON document with `--json`, else text for a person.

use std::io::Write;

use serde_json::{json, Value};

use crate::cli::Cli;
use crate::output;

pub(crate) const EXIT_HELP: &str = "Exit codes:
  0  success
  2  bad command line
  3  cannot connect (the process did not start, the URL did not answer, no MCP handshake),
     or the server needs an authorization that was not allowed to start (run mcp login)
  4  protocol error (the server answered with a JSON-RPC error, or broke the protocol)
  5  the tool ran and reported an error (a result with isError: true)
  130  interrupted by Ctrl-C (a task being waited for is cancelled first)";

/// How a run ended.
pub(crate) enum Failure {
    Interrupted(String),
    /// `mcp chat` could not finish: the provider refused (a wrong key, a bad parameter), or
    /// the loop gave up; its words and what to do.
    Chat(String),
    Connect(String),
    AuthRequired(String),
    Protocol(String),
    ToolError(Value),
    Usage(String),
    /// `mcp doctor` found an error (its report is printed already).
    Findings,
}

/// A client error as a failure: an authorization the server requires, else a protocol error.
pub(crate) fn protocol(e: mcp::Error) -> Failure {
    if e.is_auth_required() {
        return Failure::AuthRequired(e.to_string());
    }
    let text = e.to_string();
    Failure::Protocol(text.strip_prefix("protocol error: ").map(str::to_owned).unwrap_or(text))
}

/// The exit code and the document of an outcome.
pub(crate) fn outcome(result: &Result<Value, Failure>) -> (u8, Value) {
    match result {
        Ok(value) => (0, value.clone()),
        Err(Failure::Usage(m)) => (2, json!({"error": "usage", "message": m})),
        Err(Failure::Connect(m)) => (3, json!({"error": "cannot connect", "message": m})),
        Err(Failure::AuthRequired(m)) => (3, json!({"error": "authorization required", "message": m})),
        Err(Failure::Protocol(m)) => (4, json!({"error": "protocol error", "message": m})),
        Err(Failure::Chat(m)) => (4, json!({"error": "chat failed", "message": m})),
        Err(Failure::ToolError(v)) => (5, v.clone()),
        Err(Failure::Interrupted(m)) => (130, json!({"error": "interrupted", "message": m})),
        Err(Failure::Findings) => (1, json!({"error": "problems found"})),
    }
}

/// Prints an outcome: one JSON document with --json, else text for a person.
pub(crate) fn report(cli: &Cli, result: &Result<Value, Failure>) {
    let (code, value) = outcome(result);
    if code == 2 {
        eprintln!("mcp: {}", value["message"].as_str().unwrap_or(""));
        return;
    }
    // A closed stdout (`mcp ... | head`) is not an error worth a panic.
    let mut stdout = std::io::stdout();
    if cli.json {
        let _ = writeln!(stdout, "{}", serde_json::to_string_pretty(&value).unwrap_or_default());
    } else if code == 3 || code == 4 || code == 130 {
        eprintln!("mcp: {}: {}", value["error"].as_str().unwrap_or(""), value["message"].as_str().unwrap_or(""));
    } else {
        let _ = write!(stdout, "{}", output::human(&cli.command_name(), &value));
    }
}

/// Failures before a connection, which `main` reports.
pub(crate) fn reported_at_exit(result: &Result<Value, Failure>) -> bool {
    matches!(result, Err(Failure::Usage(_) | Failure::Connect(_) | Failure::AuthRequired(_)))
}
