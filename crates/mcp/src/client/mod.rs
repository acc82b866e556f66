//! The client side: connect to any MCP server (a child process on stdio, or a Streamable HTTP
//! URL), in either era, and call it with typed methods.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcp::Error> {
//! use mcp::client::{Client, ClientOptions, StdioCommand};
//! let client = Client::connect_stdio(StdioCommand::new("mcp-example"), ClientOptions::default()).await?;
//! let tools = client.list_tools().await?;
//! let result = client.call_tool("echo", serde_json::json!({"text": "hi"})).await?;
//! # Ok(()) }
//! ```
//!
//! The era is negotiated on connect: a `server/discover` probe (2026-07-28), falling back to
//! `initialize` (2025-11-25 and earlier) when the server does not answer it as a modern server.
//! Handlers answer what servers ask of clients (elicitation, sampling, roots), as requests on a
//! legacy connection and as `input_required` retries on a modern one.

#[cfg(feature = "client-http")]
pub mod auth;
pub mod cache;
mod core;
mod headers;
#[cfg(feature = "client-http")]
pub(crate) mod http;
mod process;
pub mod skills;
#[cfg(feature = "client-http")]
pub mod sse;
mod stdio;
pub mod tasks;
#[cfg(feature = "otel")]
mod traced;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_types::completion::{CompleteResult, CompletionArgument, CompletionRef};
use mcp_types::elicitation::{ElicitParams, ElicitResult};
use mcp_types::lifecycle::{ClientCapabilities, Implementation, ServerCapabilities};
use mcp_types::prompts::{GetPromptResult, Prompt};
use mcp_types::resources::{ReadResourceResult, Resource, ResourceTemplate};
use mcp_types::roots::ListRootsResult;
use mcp_types::sampling::{CreateMessageParams, CreateMessageResult};
use mcp_types::tools::{CallToolResult, Tool};
use mcp_types::utilities::ProgressParams;
use serde_json::{json, Value};

use self::core::Core;
pub use self::core::{question_tag, tagged, Direction};
pub use process::Started;
pub use stdio::{Confine, Confinement, ServerProcess, StartOptions, StartResult, Stderr, StdioCommand};
pub use tasks::{TaskInfo, ToolCall};

use crate::error::Error;
use crate::util::BoxFuture;

/// A callback that answers one kind of server question.
pub type Handler<P, R> = Arc<dyn Fn(P) -> BoxFuture<Result<R, String>> + Send + Sync>;

/// How to answer what servers ask of the client. A `None` handler means the capability is not
/// declared.
#[derive(Clone, Default)]
pub struct Handlers {
    /// `elicitation/create`.
    pub elicitation: Option<Handler<ElicitParams, ElicitResult>>,
    /// `sampling/createMessage`.
    pub sampling: Option<Handler<CreateMessageParams, CreateMessageResult>>,
    /// `roots/list`.
    pub roots: Option<Handler<(), ListRootsResult>>,
}

/// Told of each notification the server sends besides progress and task status (list changes,
/// log messages, resource updates): its method and params.
pub type NotificationFn = Arc<dyn Fn(&str, &Value) + Send + Sync>;

/// Watches every message both ways (for `--trace`).
pub type Tracer = Arc<dyn Fn(Direction, &Value) + Send + Sync>;

/// One HTTP request and its answer's head, for tools that show the wire (the inspector). Secret
/// headers (`Authorization`, `Proxy-Authorization`, `DPoP`, cookies) are replaced by
/// `(hidden)`.
#[derive(Debug, Clone)]
pub struct HttpExchange {
    /// `POST`, `GET`, `DELETE`.
    pub method: String,
    /// The URL.
    pub url: String,
    /// The JSON-RPC message sent, if any (its `id` and `method` tie the exchange to it).
    pub message: Option<Value>,
    /// The answer's status.
    pub status: u16,
    /// The headers sent.
    pub request_headers: Vec<(String, String)>,
    /// The headers received.
    pub response_headers: Vec<(String, String)>,
}

/// Watches every HTTP exchange of an HTTP connection.
pub type HttpTracer = Arc<dyn Fn(&HttpExchange) + Send + Sync>;

/// Connection settings.
#[derive(Clone)]
pub struct ClientOptions {
    /// Who the client is.
    pub client_info: Implementation,
    /// Answers to server questions; they also decide the declared capabilities.
    pub handlers: Handlers,
    /// A request fails when no answer or progress comes for this long (default 60 s).
    pub timeout: Duration,
    /// A request fails after this long whatever its progress (default 10 minutes).
    pub max_timeout: Duration,
    /// Extra HTTP headers (e.g. `Authorization`).
    pub headers: Vec<(String, String)>,
    /// Sees every message.
    pub tracer: Option<Tracer>,
    /// Sees every HTTP request and its answer's status and headers (HTTP connections).
    pub http_tracer: Option<HttpTracer>,
    /// Skip the `server/discover` probe and speak the legacy handshake directly.
    pub legacy_only: bool,
    /// The server's era as remembered from an earlier connection, if any.
    pub known_era: Option<KnownEra>,
    /// Declare the tasks extension on 2026-07-28 requests (default on): a tool call may then
    /// become a task, which [`Client::call_tool`] follows to its end.
    pub tasks: bool,
    /// CA certificates (PEM files) to trust for `https` besides the system's.
    pub ca_files: Vec<std::path::PathBuf>,
    /// Authorization for HTTP servers (OAuth: `auth::OAuth`, feature `client-oauth`); ignored
    /// when `headers` already carry an `Authorization`.
    #[cfg(feature = "client-http")]
    pub auth: Option<Arc<dyn auth::Authorizer>>,
    /// Told of the server's other notifications (`notifications/tools/list_changed`,
    /// `notifications/message`, `notifications/resources/updated`, ...).
    pub on_notification: Option<NotificationFn>,
    /// Ask for log messages from this level up: in `_meta` on 2026-07-28 requests, with
    /// `logging/setLevel` after a legacy handshake (when the server declares logging).
    pub log_level: Option<mcp_types::logging::LoggingLevel>,
    /// Where 2026-07-28 results that say they stay fresh (`ttlMs`) are kept: each client has
    /// its own unless several are given one to share (only `cacheScope: "public"` results are
    /// then shared, between clients of the same server URL).
    pub cache: Option<Arc<cache::ResultCache>>,
    /// The largest message accepted from the server, in bytes (16 MiB unless set): a line on
    /// stdio, a JSON body or an SSE event on HTTP. A larger response fails its request at once,
    /// saying so; raise this to read, say, a whole report of a hundred megabytes.
    pub max_message_bytes: usize,
}

/// [`ClientOptions::max_message_bytes`] unless set.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// A server's era as remembered from an earlier connection (see [`Client::era`]). The spec lets
/// a client persist the era it detected per server, re-probing when the assumption fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnownEra {
    /// A 2026-07-28 server, spoken to in this version. Requests go out at once, alongside a
    /// `server/discover` that confirms the era; their answers count only once it has. If it does
    /// not, the client falls back to `initialize` and sends them again. `tools/call` alone waits
    /// for the confirmation: a legacy server might run a tool it gets before `initialize`, and a
    /// second time after.
    Modern(String),
    /// A legacy server: `initialize` straight away, without the probe (which a legacy server that
    /// ignores unknown methods answers only by a timeout). If `initialize` fails, the client
    /// probes after all.
    Legacy,
}

/// How a connection's era was decided (see [`Client::negotiation`]): what `mcp doctor` shows.
#[derive(Debug, Clone, Default)]
pub struct Negotiation {
    /// Each question asked and what its answer showed, in words, in order.
    pub steps: Vec<String>,
    /// From the first question to the era decided, the `initialize` handshake included (a
    /// remembered modern era: until the first request could go out).
    pub elapsed: Duration,
    /// A probe went unanswered until its time limit (a server that ignores what it does not
    /// know, or one still starting).
    pub waited_out: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            client_info: Implementation::new("mcp-rs", env!("CARGO_PKG_VERSION")),
            handlers: Handlers::default(),
            timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(600),
            headers: Vec::new(),
            tracer: None,
            http_tracer: None,
            legacy_only: false,
            known_era: None,
            tasks: true,
            ca_files: Vec::new(),
            #[cfg(feature = "client-http")]
            auth: None,
            on_notification: None,
            log_level: None,
            cache: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

impl ClientOptions {
    /// The capabilities the handlers imply.
    pub fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if self.handlers.elicitation.is_some() {
            caps.elicitation = Some(mcp_types::lifecycle::ElicitationCapability {
                form: Some(Default::default()),
                url: Some(Default::default()),
            });
        }
        if self.handlers.sampling.is_some() {
            caps.sampling = Some(Default::default());
        }
        if self.handlers.roots.is_some() {
            caps.roots = Some(Default::default());
        }
        caps
    }
}

/// A connection to one server. Cheap to clone; the connection closes when the last clone drops
/// (a child process is ended).
#[derive(Clone)]
pub struct Client {
    core: Arc<Core>,
}

/// What the server said about itself.
#[derive(Debug, Clone)]
pub struct ServerDescription {
    /// The protocol version in use.
    pub protocol_version: String,
    /// Whether the connection is 2026-07-28 (stateless).
    pub modern: bool,
    /// The versions the server listed (modern), or the negotiated one.
    pub supported_versions: Vec<String>,
    /// Who the server is.
    pub server_info: Option<Implementation>,
    /// What it offers.
    pub capabilities: ServerCapabilities,
    /// Its guidance for models.
    pub instructions: Option<String>,
}

impl Client {
    /// Spawns a server process and connects over its stdin and stdout.
    pub async fn connect_stdio(command: StdioCommand, options: ClientOptions) -> Result<Client, Error> {
        Client::connect_process(command.spawn()?, options).await
    }

    /// Connects to a server process started earlier with [`StdioCommand::spawn`].
    pub async fn connect_process(process: ServerProcess, options: ClientOptions) -> Result<Client, Error> {
        let core = Core::new(options);
        stdio::start(&core, process)?;
        core.negotiate(false).await?;
        Ok(Client { core })
    }

    /// Connects over any byte stream carrying newline-delimited JSON-RPC, as stdio does: an
    /// in-process pipe, a socket. The connection ends when the client is dropped or closed.
    pub async fn connect_streams<R, W>(reader: R, writer: W, options: ClientOptions) -> Result<Client, Error>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let core = Core::new(options);
        stdio::start_streams(&core, reader, writer, None, Default::default());
        core.negotiate(false).await?;
        Ok(Client { core })
    }

    /// Connects to a Streamable HTTP endpoint (or a 2024-11-05 HTTP+SSE one).
    #[cfg(feature = "client-http")]
    pub async fn connect_http(url: &str, options: ClientOptions) -> Result<Client, Error> {
        let preflight = options
            .auth
            .clone()
            .filter(|_| !options.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")));
        let core = Core::new(options);
        http::start(&core, url)?;
        if let Some(auth) = preflight {
            auth.preflight().await.map_err(|e| Error::from(http::auth_error(&e)))?;
        }
        core.negotiate(true).await?;
        Ok(Client { core })
    }

    /// What the server said about itself when connecting. With a remembered modern era, it is
    /// complete once the first answer has come (or after [`Client::era`]).
    pub fn description(&self) -> ServerDescription {
        self.core.description()
    }

    /// The era this connection settled on, to remember for the next one (waits for the
    /// confirmation of a remembered modern era).
    pub async fn era(&self) -> Result<KnownEra, Error> {
        self.core.settled().await.map_err(Error::from)?;
        let d = self.core.description();
        Ok(if d.modern { KnownEra::Modern(d.protocol_version) } else { KnownEra::Legacy })
    }

    /// How the era was decided: the questions asked, how long it took, whether a probe was
    /// waited out.
    pub fn negotiation(&self) -> Negotiation {
        self.core.negotiation()
    }

    /// Whether the connection ended: the child process exited or closed its stdout, or the
    /// stream closed. Requests then fail at once.
    pub fn is_closed(&self) -> bool {
        self.core.is_ended()
    }

    /// The stderr the child process wrote so far (stdio only).
    pub fn stderr(&self) -> String {
        self.core.stderr()
    }

    /// Sends any request and returns its raw result (after `input_required` rounds).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, Error> {
        self.core.request(method, params, None).await
    }

    /// Like [`Client::request`], reporting `notifications/progress` to `on_progress`.
    pub async fn request_with_progress(
        &self,
        method: &str,
        params: Value,
        on_progress: impl Fn(ProgressParams) + Send + Sync + 'static,
    ) -> Result<Value, Error> {
        self.core.request(method, params, Some(Arc::new(on_progress))).await
    }

    async fn typed<T: serde::de::DeserializeOwned>(&self, method: &str, params: Value) -> Result<T, Error> {
        let value = self.request(method, params).await?;
        serde_json::from_value(value).map_err(|e| Error::protocol(format!("malformed {method} result: {e}")))
    }

    async fn all_pages<T: serde::de::DeserializeOwned>(&self, method: &str, field: &str) -> Result<Vec<T>, Error> {
        match self.pages(method, field).await {
            // A cursor the server no longer accepts: every cached page of the list goes, and
            // the list is read again from the start.
            Err(e)
                if e.rpc().is_some_and(|r| r.code == mcp_types::jsonrpc::ErrorCode::INVALID_PARAMS)
                    && self.core.forget_cached(method) =>
            {
                self.pages(method, field).await
            }
            outcome => outcome,
        }
    }

    async fn pages<T: serde::de::DeserializeOwned>(&self, method: &str, field: &str) -> Result<Vec<T>, Error> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1000 {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let page = self.core.cached_request(method, cursor.as_deref().unwrap_or(""), params).await?;
            let list = page.get(field).cloned().unwrap_or(Value::Array(Vec::new()));
            let list: Vec<T> =
                serde_json::from_value(list).map_err(|e| Error::protocol(format!("malformed {method} result: {e}")))?;
            items.extend(list);
            cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        Ok(items)
    }

    /// Every tool (all pages). On HTTP, tools whose `x-mcp-header` annotations break the rules
    /// are left out (the spec says a client must not call them), and the others' annotated
    /// arguments are mirrored into `Mcp-Param-*` headers on calls.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        let mut tools: Vec<Tool> = self.all_pages("tools/list", "tools").await?;
        if self.core.http.load(std::sync::atomic::Ordering::Relaxed) {
            tools.retain(|t| match headers::header_params(t) {
                Ok(_) => true,
                Err(why) => {
                    tracing::warn!("leaving out tool {:?}: {why}", t.name);
                    false
                }
            });
        }
        let params = tools.iter().filter_map(|t| Some((t.name.clone(), headers::header_params(t).ok()?))).collect();
        *self.core.header_params.write().unwrap() = params;
        let support = tools
            .iter()
            .filter_map(|t| Some((t.name.clone(), t.execution.as_ref()?.get("taskSupport")?.as_str()?.to_owned())))
            .collect();
        *self.core.task_support.write().unwrap() = support;
        Ok(tools)
    }

    /// Calls a tool. A tool failure is `Ok` with `isError: true`. A call the server turns into a
    /// task (2026-07-28) is followed to its end.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
        self.call_tool_with_progress(name, arguments, |_| {}).await
    }

    /// Calls a tool, reporting progress (and, if it becomes a task, each new status as progress
    /// with the status in its message).
    pub async fn call_tool_with_progress(
        &self,
        name: &str,
        arguments: Value,
        on_progress: impl Fn(ProgressParams) + Send + Sync + 'static,
    ) -> Result<CallToolResult, Error> {
        let on_progress = Arc::new(on_progress);
        let report = on_progress.clone();
        let value = self
            .request_with_progress("tools/call", json!({"name": name, "arguments": arguments}), move |p| report(p))
            .await?;
        self.finish_tool_call(value, move |p| on_progress(p)).await
    }

    /// Every resource (all pages).
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        self.all_pages("resources/list", "resources").await
    }

    /// Every resource template (all pages).
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.all_pages("resources/templates/list", "resourceTemplates").await
    }

    /// Reads a resource.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        let value = self.core.cached_request("resources/read", uri, json!({"uri": uri})).await?;
        serde_json::from_value(value).map_err(|e| Error::protocol(format!("malformed resources/read result: {e}")))
    }

    /// Every prompt (all pages).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.all_pages("prompts/list", "prompts").await
    }

    /// Renders a prompt.
    pub async fn get_prompt(&self, name: &str, arguments: BTreeMap<String, String>) -> Result<GetPromptResult, Error> {
        self.typed("prompts/get", json!({"name": name, "arguments": arguments})).await
    }

    /// Completes an argument.
    pub async fn complete(
        &self,
        reference: CompletionRef,
        argument: CompletionArgument,
    ) -> Result<CompleteResult, Error> {
        self.typed("completion/complete", json!({"ref": reference, "argument": argument})).await
    }

    /// One round of a request, for a gateway: an `input_required` result comes back as it is
    /// (its questions are the gateway's client's to answer), progress goes to `on_progress`,
    /// and what `params._meta` holds is kept over this client's own entries (the gateway's
    /// client's capabilities, say).
    pub async fn request_round(
        &self,
        method: &str,
        params: Value,
        on_progress: impl Fn(ProgressParams) + Send + Sync + 'static,
    ) -> Result<Value, Error> {
        self.core.request_rounds(method, params, Some(Arc::new(on_progress)), false).await
    }

    /// What a `tools/call` answered, followed to its end when the server made it a task (each
    /// new status reported as progress).
    pub async fn finish_tool_call(
        &self,
        answer: Value,
        on_progress: impl Fn(ProgressParams) + Send + Sync + 'static,
    ) -> Result<CallToolResult, Error> {
        match self.started(answer)? {
            ToolCall::Done(result) => Ok(result),
            ToolCall::Task(task) => {
                let mut step = 0.0;
                self.wait_task(&task.id, |t| {
                    step += 1.0;
                    on_progress(task_progress(t, step));
                })
                .await
            }
        }
    }

    /// Sends a notification, e.g. `notifications/roots/list_changed` after the roots changed.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), Error> {
        self.core.notify(method, Some(params)).await
    }

    /// `ping` (legacy servers; a modern server answers `server/discover` instead).
    pub async fn ping(&self) -> Result<(), Error> {
        let method = if self.core.description().modern { "server/discover" } else { "ping" };
        self.request(method, json!({})).await.map(|_| ())
    }

    /// Ends the connection: closes stdin and waits briefly for the child (stdio), deletes the
    /// session (HTTP).
    pub async fn close(self) {
        self.core.close().await;
    }
}

/// A task's new state as a progress report.
fn task_progress(task: &TaskInfo, step: f64) -> ProgressParams {
    let status = serde_json::to_value(task.status).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    let message = match &task.message {
        Some(m) => format!("task {status}: {m}"),
        None => format!("task {status}"),
    };
    ProgressParams {
        progress_token: mcp_types::meta::ProgressToken::String(task.id.clone()),
        progress: step,
        total: None,
        message: Some(message),
        meta: None,
    }
}
