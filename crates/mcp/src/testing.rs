//! Testing a server the way a host uses it: in memory, as a child process on real pipes, or over
//! HTTP on a real socket, with a typed client or raw JSON-RPC lines, and assertions that read
//! well.
//!
//! ```no_run
//! # async fn demo(router: mcp::Router) -> Result<(), mcp::Error> {
//! use mcp::testing::{self, assert_tool_ok};
//! use serde_json::json;
//!
//! let client = testing::connect(router).await; // in memory, the 2026-07-28 era
//! let result = client.call_tool("sum", json!({"a": 2, "b": 3})).await?;
//! assert_eq!(assert_tool_ok(&result), "2 + 3 = 5");
//! # Ok(()) }
//! ```
//!
//! - [`connect`] / [`connect_legacy`]: a [`Client`] on a [`Router`] served in this process;
//! - [`spawn`]: a [`Client`] on a server binary started on real pipes;
//! - [`HttpServer`]: a server binary serving `--http 127.0.0.1:0`, its URL read from its stderr;
//! - [`LinePeer`]: raw lines to and from a server binary, for protocol-level tests;
//! - [`assert_tool_ok`], [`assert_tool_error`], [`assert_rpc_error`], [`assert_error_code`].

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use mcp_types::tools::CallToolResult;
use mcp_types::ErrorCode;
use serde_json::{json, Value};

use crate::client::{Client, ClientOptions, StdioCommand};
use crate::error::Error;
use crate::server::connection::{serve_connection, ServeOptions};
use crate::server::Router;

/// A client on `router` served in this process over an in-memory pipe (the same bytes as
/// stdio), speaking the 2026-07-28 era. Panics if the connection cannot be set up.
pub async fn connect(router: Router) -> Client {
    connect_with(router, ClientOptions::default()).await.expect("an in-memory connection")
}

/// A client on `router` that speaks the legacy `initialize` handshake (2025-11-25).
pub async fn connect_legacy(router: Router) -> Client {
    let options = ClientOptions { legacy_only: true, ..ClientOptions::default() };
    connect_with(router, options).await.expect("an in-memory connection")
}

/// [`connect`] with client options (handlers for elicitation or sampling, timeouts, ...).
pub async fn connect_with(router: Router, options: ClientOptions) -> Result<Client, Error> {
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_end);
    tokio::spawn(async move {
        let _ = serve_connection(router, server_read, server_write, ServeOptions::default()).await;
    });
    let (read, write) = tokio::io::split(client_end);
    Client::connect_streams(read, write, options).await
}

/// A client on a server binary started with `args` on real pipes (its stderr captured, see
/// [`Client::stderr`]). The process ends when the client is dropped.
pub async fn spawn(program: impl Into<String>, args: &[&str]) -> Result<Client, Error> {
    Client::connect_stdio(StdioCommand::new(program).args(args.iter().copied()), ClientOptions::default()).await
}

/// The text of a successful tool result (its text blocks, joined by newlines). Panics with the
/// tool's own message when the result is an error.
#[track_caller]
pub fn assert_tool_ok(result: &CallToolResult) -> String {
    let text = result_text(result);
    assert!(!result.is_error(), "the tool failed: {text}");
    text
}

/// The text of a failed tool result (`isError: true`), which must contain `needle`. Panics when
/// the tool succeeded or said something else.
#[track_caller]
pub fn assert_tool_error(result: &CallToolResult, needle: &str) -> String {
    let text = result_text(result);
    assert!(result.is_error(), "the tool succeeded, expected an error containing {needle:?}: {text}");
    assert!(text.contains(needle), "the tool's error does not mention {needle:?}: {text}");
    text
}

/// The JSON-RPC error a client call ended with, which must have `code`.
#[track_caller]
pub fn assert_rpc_error<T: std::fmt::Debug>(outcome: &Result<T, Error>, code: ErrorCode) -> String {
    match outcome {
        Ok(value) => panic!("expected JSON-RPC error {code}, got {value:?}"),
        Err(e) => match e.rpc() {
            Some(error) => {
                assert_eq!(error.code, code, "expected JSON-RPC error {code}, got {error}");
                error.message.clone()
            }
            None => panic!("expected JSON-RPC error {code}, got {e}"),
        },
    }
}

/// The message of a raw JSON-RPC error response, which must have `code`.
#[track_caller]
pub fn assert_error_code(response: &Value, code: ErrorCode) -> String {
    assert_eq!(response["error"]["code"], json!(code.0), "expected JSON-RPC error {code}: {response}");
    response["error"]["message"].as_str().unwrap_or_default().to_owned()
}

fn result_text(result: &CallToolResult) -> String {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| match block {
            mcp_types::content::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// A server binary serving Streamable HTTP on a port the OS picked (`--http 127.0.0.1:0`); its
/// URL is read from the line it prints on stderr. Killed and reaped when dropped.
pub struct HttpServer {
    child: Child,
    url: String,
    stderr: Arc<Mutex<String>>,
}

impl HttpServer {
    /// Starts `program --http 127.0.0.1:0 ARGS...` and waits (up to 20 s) for its URL.
    pub fn start(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> std::io::Result<HttpServer> {
        HttpServer::start_command(Command::new(program).args(["--http", "127.0.0.1:0"]).args(args))
    }

    /// Starts `command` (which must listen on a free port and print its URL on stderr, as
    /// `--http 127.0.0.1:0` does) and waits (up to 20 s) for the URL: for a server that needs
    /// its own environment.
    pub fn start_command(command: &mut Command) -> std::io::Result<HttpServer> {
        let mut child = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn()?;
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http")) {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(url.to_owned());
                    }
                }
                let mut log = sink.lock().unwrap();
                if log.len() < 1 << 20 {
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(url) => Ok(HttpServer { child, url, stderr: log }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                let said = log.lock().unwrap().clone();
                Err(std::io::Error::other(format!("the server printed no URL within 20 s; its stderr: {said}")))
            }
        }
    }

    /// The endpoint, e.g. `http://127.0.0.1:40123/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().and_then(|p| p.split('/').next()).and_then(|p| p.parse().ok()).unwrap_or(0)
    }

    /// What the server wrote on stderr so far (the first MiB).
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A client connected to it.
    #[cfg(feature = "client-http")]
    pub async fn client(&self) -> Result<Client, Error> {
        Client::connect_http(&self.url, ClientOptions::default()).await
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Raw JSON-RPC lines to and from a server binary on real pipes, for tests of the protocol
/// itself. Every line the server writes on stdout must be JSON, or [`LinePeer::recv`] panics
/// saying which line broke the rule. The process is killed when dropped (see
/// [`LinePeer::finish`] for a clean end).
pub struct LinePeer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    next_id: i64,
    /// How long [`LinePeer::recv`] waits (default 10 s).
    pub timeout: Duration,
}

impl LinePeer {
    /// Starts `program ARGS...` with its stderr discarded.
    pub fn spawn(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> LinePeer {
        LinePeer::spawn_command(Command::new(program).args(args).stderr(Stdio::null()))
    }

    /// Starts a command of your own (its stdin and stdout are taken over).
    pub fn spawn_command(command: &mut Command) -> LinePeer {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("start the server");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        LinePeer { child, stdin, lines, next_id: 1, timeout: Duration::from_secs(10) }
    }

    /// Writes one line (a newline is added).
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).expect("write to the server");
        stdin.write_all(b"\n").expect("write to the server");
        stdin.flush().expect("write to the server");
    }

    /// Writes one message.
    pub fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// The next message the server writes. Panics after [`LinePeer::timeout`], or on a line that
    /// is not JSON.
    #[track_caller]
    pub fn recv(&mut self) -> Value {
        let line =
            self.lines.recv_timeout(self.timeout).unwrap_or_else(|_| panic!("no line within {:?}", self.timeout));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"))
    }

    /// The next message, or `None` if none comes within `wait` (or stdout closed).
    pub fn try_recv(&mut self, wait: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(wait).ok()?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}")))
    }

    /// Panics if the server writes anything within `ms` milliseconds.
    #[track_caller]
    pub fn silent_for(&mut self, ms: u64) {
        if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(ms)) {
            panic!("expected silence, got {line}");
        }
    }

    /// Sends a request with the next id and returns its response (skipping notifications and
    /// the server's own requests in between).
    #[track_caller]
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.recv();
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// The legacy handshake in `version`; returns the `initialize` response.
    #[track_caller]
    pub fn initialize(&mut self, version: &str) -> Value {
        let params = json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "mcp-testing", "version": "1"}});
        let response = self.request("initialize", params);
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        response
    }

    /// Params of a 2026-07-28 request: `params` plus the `_meta` every such request carries.
    pub fn modern(mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "mcp-testing", "version": "1"},
        });
        params
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes the server's stdin (end of input); what it still writes can be read.
    pub fn close_input(&mut self) {
        drop(self.stdin.take());
    }

    /// Closes stdin and waits (up to 10 s) for the server to exit; panics unless it exits 0.
    #[track_caller]
    pub fn finish(mut self) {
        drop(self.stdin.take());
        for _ in 0..1000 {
            if let Some(status) = self.child.try_wait().expect("wait for the server") {
                assert!(status.success(), "the server exited with {status}");
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the server did not exit within 10 s of end of input");
    }
}

impl Drop for LinePeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
