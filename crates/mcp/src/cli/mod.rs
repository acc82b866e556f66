//! Command lines of server binaries: the options every server of ours takes, as a clap
//! `Args` struct a server flattens into its own parser.
//!
//! ```no_run
//! use clap::Parser;
//! use mcp::cli::ServeArgs;
//!
//! /// My server: what it does, in one line (the first line of `--help`).
//! #[derive(Parser, Default)]
//! #[command(version)]
//! struct Cli {
//!     /// A directory of data to serve.
//!     #[arg(long)]
//!     data: Option<std::path::PathBuf>,
//!     #[command(flatten)]
//!     serve: ServeArgs,
//! }
//!
//! # async fn demo(router: mcp::Router) -> std::io::Result<()> {
//! let cli: Cli = mcp::cli::parse(); // no arguments (how hosts start servers): no parser at all
//! mcp::cli::serve(router, &cli.serve).await
//! # }
//! ```
//!
//! A usage error prints what is wrong and exits with code 2; `--help` and `--version` exit 0.

use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser};

use crate::server::Router;
use crate::transport;
use crate::transport::http::HttpConfig;

mod logging;
mod protect;
pub mod store;

pub use logging::init_logging;
pub use protect::{AuthArgs, LimitArgs};

/// How to serve: stdio by default, Streamable HTTP with `--http`, and the HTTP transport's
/// settings.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
#[command(next_help_heading = "Transport")]
pub struct ServeArgs {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8080; port 0
    /// picks a free port, printed on stderr)
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Serve stdio (the default)
    #[arg(long, conflicts_with = "http")]
    pub stdio: bool,
    /// Also accept this Host header (repeatable; `*` for any). Loopback names are always
    /// accepted on a loopback address
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// Also accept this Origin (repeatable; `*` for any)
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// Behind a reverse proxy: take the host from X-Forwarded-Host
    #[arg(long)]
    pub trust_proxy: bool,
    /// Answer every request with one JSON body, never an SSE stream
    #[arg(long)]
    pub json_response: bool,
    /// End legacy sessions idle for this many seconds
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub session_idle: u64,
    /// The most live legacy sessions; when full, the least recently active idle one makes room
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions: u64,
    /// Serve HTTPS with this certificate chain (PEM; reloaded when it changes). Needs --tls-key
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM)
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Serve /healthz and /metrics on this address of their own (e.g. 127.0.0.1:9100), and not
    /// beside the MCP endpoint
    #[arg(long, value_name = "ADDR", requires = "http")]
    pub metrics_addr: Option<String>,
    /// Tasks (and jobs) one account may run at once (on all instances together with --store
    /// redis://...); past it a call is told when to retry [default: the server's own, else 5]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Tasks")]
    pub max_jobs_per_account: Option<u64>,
    // The brackets are the URL's optional parts (this text is also `--help`'s), not links.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Where the state several instances share lives: `memory` (the default: one process) or
    /// redis://[:PASSWORD@]HOST:PORT[/DB] (task records, rate-limit counters, the requestState
    /// key; rediss:// for TLS)
    #[arg(long, value_name = "URL", help_heading = "Scale")]
    pub store: Option<String>,
    /// Where task records are kept: `memory` (the default) or `sqlite:PATH` (results survive a
    /// restart; tasks cut short by one read as failed)
    #[arg(long, value_name = "STORE", help_heading = "Tasks")]
    pub task_store: Option<String>,
    /// How long a task is kept after it starts, in seconds [default: the server's own, else 3600]
    #[arg(long, value_name = "SECS", help_heading = "Tasks")]
    pub task_ttl: Option<u64>,
    /// On HTTP, the request header that names the account tasks count against (without it, and
    /// without authentication, each legacy session is an account, and 2026-07-28 requests share one)
    #[arg(long, value_name = "NAME", help_heading = "Tasks")]
    pub account_header: Option<String>,
    /// OAuth on HTTP.
    #[command(flatten)]
    pub auth: AuthArgs,
    /// Limits and the audit log.
    #[command(flatten)]
    pub limits: LimitArgs,
}

impl Default for ServeArgs {
    fn default() -> Self {
        ServeArgs {
            http: None,
            stdio: false,
            allow_hosts: Vec::new(),
            allow_origins: Vec::new(),
            trust_proxy: false,
            json_response: false,
            session_idle: 600,
            max_sessions: 10_000,
            max_jobs_per_account: None,
            task_store: None,
            store: None,
            task_ttl: None,
            account_header: None,
            tls_cert: None,
            tls_key: None,
            metrics_addr: None,
            auth: AuthArgs::default(),
            limits: LimitArgs::default(),
        }
    }
}

impl ServeArgs {
    /// The HTTP transport's settings these options describe.
    pub fn http_config(&self) -> HttpConfig {
        HttpConfig {
            allowed_hosts: self.allow_hosts.clone(),
            allowed_origins: self.allow_origins.clone(),
            trust_proxy: self.trust_proxy,
            json_only: self.json_response,
            session_idle: Duration::from_secs(self.session_idle),
            max_sessions: self.max_sessions as usize,
            account_header: self.account_header.clone(),
            tls: self.tls_cert.clone().zip(self.tls_key.clone()),
            metrics_addr: self.metrics_addr.clone(),
            ..HttpConfig::default()
        }
    }
}

/// Parses this process's command line into `C`. Without arguments (how a host starts a stdio
/// server) no parser runs at all: `C::default()` is the answer, so start-up costs nothing.
/// On a usage error, prints it and exits with code 2.
pub fn parse<C: Parser + Default>() -> C {
    if std::env::args_os().len() <= 1 {
        return C::default();
    }
    C::parse()
}

/// Serves `router` as `args` say: stdio, or Streamable HTTP at `--http ADDR`. Log messages go to
/// stderr (see [`init_logging`]).
pub async fn serve(router: Router, args: &ServeArgs) -> std::io::Result<()> {
    serve_with_routes(router, args, None).await
}

/// [`serve`], with plain pages beside the HTTP endpoint (`/healthz`, `/metrics`; see
/// [`SideRoutes`](crate::transport::http::SideRoutes)).
pub async fn serve_with_routes(
    router: Router,
    args: &ServeArgs,
    side_routes: Option<crate::transport::http::SideRoutes>,
) -> std::io::Result<()> {
    init_logging();
    init_telemetry_serving();
    // Session and task ids, keys: a server without random bytes refuses to start, saying so.
    crate::util::random::check()?;
    if args.limits.audit_log.is_none() && !exports_telemetry() && !has_stop_hooks() {
        return serve_transport(router, args, side_routes).await;
    }
    // With an audit log, its queue is written out before the process ends, and the lines it
    // dropped are counted on stderr: when the transport ends (stdin closed), or when the process
    // is told to stop. So are the spans waiting for export, after the hooks of `at_stop` ran.
    let served = serve_transport(router, args, side_routes);
    let stopped = tokio::select! {
        result = served => Some(result),
        () = stop_signal() => None,
    };
    run_stop_hooks().await;
    crate::server::middleware::close_audit_logs();
    flush_telemetry_serving().await;
    match stopped {
        Some(result) => result,
        // The transport may hold a blocking read (a terminal's stdin): nothing is left to wait for.
        None => std::process::exit(0),
    }
}

/// Work to do when a server stops, before its audit logs are closed and its spans flushed.
type StopHook = Box<dyn FnOnce() -> crate::util::BoxFuture<()> + Send>;

static STOP_HOOKS: std::sync::Mutex<Vec<StopHook>> = std::sync::Mutex::new(Vec::new());

/// How long the hooks of [`at_stop`] may take, together (a child process's close takes 3 s at
/// most: 2 s to exit on its own, 1 s after SIGTERM).
const STOP_HOOKS_WAIT: Duration = Duration::from_millis(3500);

/// Runs `hook` when the server [`serve_with_routes`] serves stops (its transport ended, or
/// SIGTERM or SIGINT came), before its audit logs are closed and its spans flushed; the hooks
/// have 3.5 s together. A gateway lets its upstream processes exit this way. The hooks are the
/// process's: a process serving one server registers them.
pub fn at_stop(hook: impl FnOnce() -> crate::util::BoxFuture<()> + Send + 'static) {
    STOP_HOOKS.lock().unwrap_or_else(|e| e.into_inner()).push(Box::new(hook));
}

fn has_stop_hooks() -> bool {
    !STOP_HOOKS.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
}

async fn run_stop_hooks() {
    let hooks: Vec<StopHook> = std::mem::take(&mut *STOP_HOOKS.lock().unwrap_or_else(|e| e.into_inner()));
    let all = futures_util::future::join_all(hooks.into_iter().map(|hook| hook()));
    let _ = tokio::time::timeout(STOP_HOOKS_WAIT, all).await;
}

/// With the `otel` feature, telemetry as the `OTEL_*` variables say (see [`crate::telemetry`]),
/// the service named after the program; without it, nothing.
pub fn init_telemetry() {
    #[cfg(feature = "otel")]
    crate::telemetry::init(&logging::program_name());
}

/// [`init_telemetry`] for a server about to serve on the runtime this is called from, which
/// flushes with [`flush_telemetry_serving`] before it ends (the metrics' push may run there).
pub(crate) fn init_telemetry_serving() {
    #[cfg(feature = "otel")]
    crate::telemetry::init_serving(&logging::program_name());
}

/// [`flush_telemetry`] from the runtime [`init_telemetry_serving`] was called on.
pub(crate) async fn flush_telemetry_serving() {
    #[cfg(feature = "otel")]
    crate::telemetry::flush_serving(Duration::from_secs(2)).await;
}

/// Tells telemetry that this process serves stdio only, after [`init_telemetry`]: nothing serves
/// `/metrics` here, so unless an exporter pushes them, nothing reads the duration histograms, and
/// they are not recorded.
pub(crate) fn serving_stdio_only() {
    #[cfg(feature = "otel")]
    crate::telemetry::metrics::unread_unless_pushed();
}

/// Whether spans or metrics are exported (and must be flushed before the process ends).
fn exports_telemetry() -> bool {
    #[cfg(feature = "otel")]
    return crate::telemetry::is_tracing() || crate::telemetry::push::pushes();
    #[cfg(not(feature = "otel"))]
    false
}

/// Sends the spans still queued, waiting at most two seconds (a collector that is gone is not
/// waited for longer).
pub fn flush_telemetry() {
    #[cfg(feature = "otel")]
    crate::telemetry::flush(Duration::from_secs(2));
}

/// SIGTERM or SIGINT (never, where they cannot be watched).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let (Ok(mut term), Ok(mut interrupt)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
            tokio::select! {
                _ = term.recv() => return,
                _ = interrupt.recv() => return,
            }
        }
    }
    std::future::pending::<()>().await
}

/// [`serve_with_routes`] once logging is set up.
async fn serve_transport(
    router: Router,
    args: &ServeArgs,
    side_routes: Option<crate::transport::http::SideRoutes>,
) -> std::io::Result<()> {
    let shared = store::open(args.store.as_deref()).await?;
    store::apply(&router, &shared, args.task_store.is_some()).await?;
    configure_tasks(&router, args).await?;
    args.limits.install(&router, &shared)?;
    match &args.http {
        None if args.auth.enabled() => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "--auth-issuer protects HTTP: add --http ADDR (a stdio server takes its credentials from its environment)",
        )),
        None => {
            serving_stdio_only();
            transport::stdio::serve(router).await
        }
        Some(addr) => {
            #[cfg_attr(not(feature = "auth"), allow(unused_mut))]
            let mut config = args.http_config();
            #[cfg(feature = "auth")]
            {
                config.auth = args.auth.resource_server(&router)?;
            }
            #[cfg(not(feature = "auth"))]
            args.auth.refuse_without_auth()?;
            config.directory = shared.session_directory();
            config.side_routes = side_routes;
            transport::http::serve_with_config(router, addr, config).await
        }
    }
}

/// Applies the task options: the cap, the lifetime, and the store (a durable one is opened,
/// and tasks an earlier process left running are marked failed).
async fn configure_tasks(router: &Router, args: &ServeArgs) -> std::io::Result<()> {
    // Each option given replaces the router's own setting; one not given leaves it.
    if args.max_jobs_per_account.is_some() || args.task_ttl.is_some() {
        let mut config = router.task_settings().clone();
        if let Some(max) = args.max_jobs_per_account {
            config.max_per_account = usize::try_from(max).unwrap_or(usize::MAX);
        }
        if let Some(secs) = args.task_ttl {
            config.ttl = Duration::from_secs(secs.max(1));
        }
        router.set_task_settings(config);
    }
    let Some(store) = args.task_store.as_deref() else { return Ok(()) };
    let invalid = |message: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, message);
    match store.split_once(':') {
        _ if store == "memory" => Ok(()),
        #[cfg(feature = "sqlite")]
        Some(("sqlite", path)) if !path.is_empty() => {
            let store = crate::server::tasks::SqliteStore::open(std::path::Path::new(path))
                .map_err(|e| invalid(e.to_string()))?;
            router.set_task_store(std::sync::Arc::new(store));
            let failed = router.recover_tasks().await.map_err(|e| invalid(e.to_string()))?;
            if failed > 0 {
                tracing::warn!("{failed} tasks were running when the server last stopped: marked failed");
            }
            Ok(())
        }
        #[cfg(not(feature = "sqlite"))]
        Some(("sqlite", _)) => Err(invalid("this server was built without SQLite support (feature `sqlite`)".into())),
        _ => Err(invalid(format!("--task-store {store:?}: use `memory` or `sqlite:PATH`"))),
    }
}

/// The command line of a server without options of its own: `--help` names the server by its
/// router's name and version.
#[derive(Parser, Debug, Default)]
struct Plain {
    #[command(flatten)]
    serve: ServeArgs,
}

/// Parses `args` (without the program name) as a server with no options of its own; what
/// [`crate::serve`] does with the process's arguments.
pub(crate) fn parse_plain(router: &Router, args: Vec<std::ffi::OsString>) -> Result<ServeArgs, clap::Error> {
    let info = router.implementation_info();
    let mut about = format!("{}: an MCP server.", info.name);
    if let Some(description) = &info.description {
        about = format!("{}: {description}", info.name);
    }
    let command = Plain::command()
        .name(info.name.clone())
        .version(info.version.clone())
        .long_version(long_version(&info.version))
        .about(about);
    let name = std::ffi::OsString::from(info.name.clone());
    let matches = command.try_get_matches_from(std::iter::once(name).chain(args))?;
    Plain::from_arg_matches(&matches).map(|p| p.serve)
}

/// What `--version` prints after the server's name: its version, then the library's with the
/// features this binary was built with (cargo unifies features across the packages of one build,
/// so a binary may carry more than its manifest asks for). `-V` prints the version alone.
fn long_version(version: &str) -> String {
    format!("{version}\nmcp-stack {}, features: {}", env!("CARGO_PKG_VERSION"), crate::FEATURES.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Parser, Default)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    /// The router's own task settings, then each task option given on the command line.
    async fn task_settings_after(args: &[&str]) -> (usize, u64) {
        let router =
            Router::new().task_config(crate::server::tasks::TaskConfig { max_per_account: 2, ..Default::default() });
        let cli = Cli::try_parse_from(std::iter::once("server").chain(args.iter().copied())).unwrap();
        configure_tasks(&router, &cli.serve).await.unwrap();
        let settings = router.task_settings();
        (settings.max_per_account, settings.ttl.as_secs())
    }

    #[tokio::test]
    async fn a_task_option_given_replaces_only_its_own_setting() {
        assert_eq!(task_settings_after(&[]).await, (2, 3600), "the router's own settings stay");
        assert_eq!(task_settings_after(&["--task-ttl", "60"]).await, (2, 60), "the limit stays the router's");
        assert_eq!(task_settings_after(&["--max-jobs-per-account", "5"]).await, (5, 3600), "5 is given, not a default");
        assert_eq!(task_settings_after(&["--max-jobs-per-account", "9", "--task-ttl", "7"]).await, (9, 7));
    }

    #[test]
    fn the_default_is_what_an_empty_command_line_parses_to() {
        let parsed = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(parsed.serve, ServeArgs::default());
    }

    #[test]
    fn options_parse_into_the_http_config() {
        let cli = Cli::try_parse_from([
            "x",
            "--http",
            "127.0.0.1:0",
            "--allow-host",
            "a.example",
            "--json-response",
            "--session-idle",
            "5",
            "--max-sessions",
            "3",
        ])
        .unwrap();
        let config = cli.serve.http_config();
        assert_eq!(cli.serve.http.as_deref(), Some("127.0.0.1:0"));
        assert_eq!(config.allowed_hosts, ["a.example"]);
        assert!(config.json_only);
        assert_eq!(config.session_idle, Duration::from_secs(5));
        assert_eq!(config.max_sessions, 3);
    }

    #[test]
    fn long_version_names_the_library_and_its_features() {
        let router = Router::new().info("demo", "1.2.3");
        let shown = parse_plain(&router, vec!["--version".into()]).unwrap_err();
        assert_eq!(shown.kind(), clap::error::ErrorKind::DisplayVersion);
        let text = shown.to_string();
        assert!(text.starts_with("demo 1.2.3\nmcp-stack "), "{text}");
        assert!(text.trim_end().ends_with(&format!("features: {}", crate::FEATURES.join(", "))), "{text}");
        let short = parse_plain(&router, vec!["-V".into()]).unwrap_err().to_string();
        assert_eq!(short.trim_end(), "demo 1.2.3");
    }

    #[test]
    fn bad_values_are_usage_errors() {
        for args in [&["x", "--bogus"][..], &["x", "--max-sessions", "0"], &["x", "--session-idle", "soon"]] {
            let e = Cli::try_parse_from(args).err().expect("an error");
            assert_eq!(e.exit_code(), 2, "{args:?}");
        }
    }
}
