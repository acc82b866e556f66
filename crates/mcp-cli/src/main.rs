//! `mcp`: list and call what any MCP server offers, from the shell.
//!
//! ```text
//! mcp tools -- ./server --flag                 # a stdio server
//! mcp --url http://127.0.0.1:8080/mcp tools    # a Streamable HTTP server
//! mcp --config ~/.claude.json --server paypedia call iban_check input="FR76 3000 6000 0112 3456 7890 189"
//! ```
#![allow(clippy::print_stdout)] // a command-line tool: stdout is its output

mod bridge;
mod chat;
mod digest;
mod doctor;
mod early;
mod elicit;
mod eras;
mod gateway;
mod inspect;
mod login;
mod output;
mod sandbox;
mod skills;
mod target;
mod term;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use mcp::client::{Client, ClientOptions, Direction, Handlers, ServerProcess, Stderr, StdioCommand, ToolCall};
use mcp::types::completion::{CompletionArgument, CompletionRef};
use serde_json::{json, Map, Value};

use target::Target;

const EXIT_HELP: &str = "Exit codes:
  0  success
  2  bad command line
  3  cannot connect (the process did not start, the URL did not answer, no MCP handshake),
     or the server needs an authorization that was not allowed to start (run mcp login)
  4  protocol error (the server answered with a JSON-RPC error, or broke the protocol)
  5  the tool ran and reported an error (a result with isError: true)
  130  interrupted by Ctrl-C (a task being waited for is cancelled first)";

/// Calls any MCP server: a command after `--` (stdio), `--url` (Streamable HTTP), or
/// `--config FILE --server NAME` (an `mcpServers` entry as Claude Desktop and Claude Code use).
#[derive(Parser)]
#[command(name = "mcp", version, after_help = EXIT_HELP)]
struct Cli {
    /// A Streamable HTTP endpoint, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long, global = true)]
    url: Option<String>,
    /// An mcpServers JSON file (Claude Desktop's or Claude Code's format).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// The server's name in --config (not needed when it holds one server).
    #[arg(long, global = true)]
    server: Option<String>,
    /// A directory the server may work in, offered as a root (repeatable). Without it, no roots
    /// are offered at all.
    #[arg(long = "root", global = true, value_name = "PATH")]
    roots: Vec<PathBuf>,
    /// A CA certificate (PEM) to trust for https besides the system's (repeatable; SSL_CERT_FILE
    /// replaces the system's).
    #[arg(long = "cacert", global = true, value_name = "FILE")]
    cacerts: Vec<PathBuf>,
    /// An HTTP header, "Name: value" (repeatable).
    #[arg(long = "header", global = true)]
    headers: Vec<String>,
    /// An environment variable for a stdio server, KEY=VALUE (repeatable).
    #[arg(long = "env", global = true)]
    envs: Vec<String>,
    /// Print every JSON-RPC message, both ways, to stderr.
    #[arg(long, global = true)]
    trace: bool,
    /// Output one JSON document on stdout, nothing else.
    #[arg(long, global = true)]
    json: bool,
    /// Seconds a request may go without an answer or progress.
    #[arg(long, global = true, default_value_t = 60)]
    timeout: u64,
    /// The largest message accepted from the server, in MiB (a whole large resource needs
    /// more than the 16 of the default).
    #[arg(long, global = true, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=4096))]
    max_message_mib: u64,
    /// Speak only the legacy handshake (skip the 2026-07-28 probe).
    #[arg(long, global = true)]
    legacy: bool,
    /// Hide the stdio server's stderr (shown by default).
    #[arg(long, global = true)]
    quiet: bool,
    /// Probe the server's protocol era again instead of using the one remembered from an
    /// earlier run.
    #[arg(long, global = true)]
    reprobe: bool,
    /// Start every stdio server in the strict sandbox (Landlock, seccomp, limits): the system's
    /// libraries, its own install, the directories named as its arguments or roots, a private
    /// temporary directory, no network, a scrubbed environment. An entry's "sandbox" key wins.
    #[arg(long, global = true)]
    sandbox: bool,
    #[command(flatten)]
    auth: login::AuthOptions,
    #[command(subcommand)]
    command: Command,
    /// The stdio server's command line, after `--`.
    #[arg(last = true, global = true)]
    server_command: Vec<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Lists the servers of --config, with their transport.
    Servers,
    /// Talks with a model that uses the servers of the project's .mcp.json (or --config):
    /// consent before side effects, tool results fenced, schemas loaded on demand.
    Chat(chat::ChatArgs),
    /// Serves every server of --config behind one endpoint (--http ADDR, else stdio): names
    /// prefixed, tools filtered, both eras, TLS, OAuth, limits, /healthz, /readyz, /metrics.
    Gateway(gateway::GatewayArgs),
    /// One server across transports: --url URL served on stdio (for hosts that only start
    /// processes), or `--http ADDR -- CMD` (a stdio server served over Streamable HTTP).
    Bridge(bridge::BridgeArgs),
    /// Checks a server the way hosts and models will meet it, and says what is wrong and how
    /// to fix it: stdout noise, start time, the handshake of each revision, names, schemas,
    /// poisoned descriptions, annotations, sizes, pagination, HTTP guards, OAuth metadata, TLS.
    /// Exit code 1 when an error is found (--format json|sarif for CI).
    Doctor(doctor::DoctorArgs),
    /// Opens the server in the browser: its description, tools as forms, resources, prompts,
    /// the questions it asks, the raw traffic (exportable, replayable), `ui://` apps. Serves on
    /// 127.0.0.1 behind a random token in the URL it prints; Ctrl-C stops it.
    Inspect(inspect::InspectArgs),
    /// Runs a command in the sandbox, with this process's stdin and stdout (for hosts that only
    /// take a command line): `mcp sandbox --read /srv/docs -- npx -y @modelcontextprotocol/server-filesystem /srv/docs`.
    /// The strict default plus what the flags add; the exit code is the command's.
    Sandbox(sandbox::SandboxArgs),
    /// Authorizes to an HTTP server behind OAuth now (a browser opens), and keeps the tokens.
    Login {
        /// The server's URL (or name it with --url, or --config and --server).
        url: Option<String>,
    },
    /// Forgets the stored tokens of a server (or of every server, with --all).
    Logout {
        /// The server's URL (or name it with --url, or --config and --server).
        url: Option<String>,
        /// Every server's tokens and registrations.
        #[arg(long)]
        all: bool,
    },
    /// Stored authorizations: `status` (no secrets shown), `token` (prints an access token).
    Auth {
        #[command(subcommand)]
        action: AuthAction,
    },
    /// What the server is and speaks.
    Discover,
    /// Checks the server answers.
    Ping,
    /// Lists the tools.
    Tools,
    /// Calls a tool: `mcp call NAME key=value ...` (values follow the tool's schema) or --args.
    /// A call that becomes a task is followed to its end, its status shown as it changes.
    Call {
        /// The tool.
        name: String,
        /// Arguments as key=value.
        pairs: Vec<String>,
        /// Arguments as one JSON object.
        #[arg(long)]
        args: Option<String>,
        /// If the call becomes a task, print its id and exit instead of waiting (follow it with
        /// `mcp task`).
        #[arg(long)]
        detach: bool,
    },
    /// Follows a task: `get`, `result`, `cancel`, `list`.
    Task {
        #[command(subcommand)]
        action: TaskAction,
    },
    /// Lists the resources.
    Resources,
    /// Lists the resource templates.
    Templates,
    /// Reads a resource.
    Read {
        /// The URI.
        uri: String,
    },
    /// Lists the server's skills (SEP-2640): name, description, its SKILL.md's URI, its files and
    /// one digest of the whole skill. No skill file is read. With NAME, loads that skill: every
    /// file read and verified (size, SHA-256 digest, SKILL.md's frontmatter against the entry),
    /// SKILL.md printed, or every file written under --out DIR/NAME.
    Skills {
        /// The skill to load: its name, or the URI of its SKILL.md.
        name: Option<String>,
        /// Write the loaded skill's files under DIR/NAME/ (their paths as the URIs give them).
        #[arg(long, value_name = "DIR", requires = "name")]
        out: Option<std::path::PathBuf>,
    },
    /// Lists the prompts.
    Prompts,
    /// Renders a prompt: `mcp prompt NAME key=value ...`.
    Prompt {
        /// The prompt.
        name: String,
        /// Arguments as key=value.
        pairs: Vec<String>,
    },
    /// Completes an argument of a prompt (or a resource template, with --resource).
    Complete {
        /// The prompt's name, or the resource template.
        reference: String,
        /// The argument.
        argument: String,
        /// What is typed so far.
        #[arg(default_value = "")]
        value: String,
        /// The reference is a resource template URI.
        #[arg(long)]
        resource: bool,
    },
}

/// What `mcp auth` does.
#[derive(Subcommand)]
enum AuthAction {
    /// Lists the servers with stored tokens: issuer, client, scopes, expiry.
    Status,
    /// Prints a server's access token (refreshed if due) for another program: it is a secret.
    Token {
        /// The server's URL (or name it with --url, or --config and --server).
        url: Option<String>,
    },
}

/// What `mcp task` does.
#[derive(Subcommand)]
enum TaskAction {
    /// The task's status now.
    Get {
        /// The task id.
        id: String,
    },
    /// Waits for the task to end and prints its result.
    Result {
        /// The task id.
        id: String,
    },
    /// Asks the server to cancel the task.
    Cancel {
        /// The task id.
        id: String,
    },
    /// Lists this client's tasks (2025-11-25 servers).
    List,
}

/// How a run ended.
enum Failure {
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

fn split_pair(pair: &str) -> Result<(String, String), Failure> {
    pair.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| Failure::Usage(format!("{pair:?} is not key=value")))
}

fn target(cli: &Cli) -> Result<Target, Failure> {
    let headers = cli
        .headers
        .iter()
        .map(|h| bridge::header(h).map_err(|e| Failure::Usage(format!("--header {h:?}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let envs = cli.envs.iter().map(|e| split_pair(e)).collect::<Result<Vec<_>, _>>()?;
    let target = match (&cli.url, &cli.config, cli.server_command.split_first()) {
        (Some(url), None, None) => Target::Http(url.clone(), headers, Default::default()),
        (None, Some(path), None) => match target::from_config(path, cli.server.as_deref()).map_err(Failure::Usage)? {
            Target::Http(url, mut h, oauth) => {
                h.extend(headers);
                Target::Http(url, h, oauth)
            }
            stdio => stdio,
        },
        (None, None, Some((program, args))) => {
            let mut command = StdioCommand::new(program.clone()).args(args.iter().cloned());
            sandbox::confine_by_default(&mut command);
            Target::Stdio(command)
        }
        _ => {
            return Err(Failure::Usage(
                "name exactly one server: `-- COMMAND ARGS...`, --url URL, or --config FILE --server NAME".into(),
            ))
        }
    };
    Ok(match target {
        Target::Stdio(mut cmd) => {
            cmd.env.extend(envs);
            cmd.stderr = if cli.quiet { Stderr::Discard } else { Stderr::Inherit };
            cmd.own_process_group = true;
            Target::Stdio(cmd)
        }
        http => http,
    })
}

/// What the client answers servers: elicitation asked of the person at a terminal (else a form
/// is accepted with its defaults, or declined), and roots only when `--root` names some.
fn handlers(cli: &Cli) -> Result<Handlers, Failure> {
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let elicitation: mcp::client::Handler<_, _> = Arc::new(move |params: mcp::types::elicitation::ElicitParams| {
        Box::pin(async move {
            if !interactive {
                return Ok(elicit::accept_with_defaults(&params));
            }
            tokio::task::spawn_blocking(move || {
                elicit::ask(&params, &mut std::io::stdin().lock(), &mut std::io::stderr().lock())
            })
            .await
            .map_err(|e| e.to_string())
        }) as mcp::server::BoxFuture<_>
    });
    let roots = roots(&cli.roots)?;
    let roots: Option<mcp::client::Handler<(), _>> = (!roots.is_empty()).then(|| {
        Arc::new(move |()| {
            let roots = roots.clone();
            Box::pin(async move { Ok(mcp::types::roots::ListRootsResult { roots, ..Default::default() }) })
                as mcp::server::BoxFuture<_>
        }) as mcp::client::Handler<(), _>
    });
    Ok(Handlers { elicitation: Some(elicitation), sampling: None, roots })
}

/// `--root` directories as `file://` roots (each must exist).
fn roots(paths: &[PathBuf]) -> Result<Vec<mcp::types::roots::Root>, Failure> {
    paths
        .iter()
        .map(|path| {
            let full =
                std::fs::canonicalize(path).map_err(|e| Failure::Usage(format!("--root {}: {e}", path.display())))?;
            let name = full.file_name().map(|n| n.to_string_lossy().into_owned());
            Ok(mcp::types::roots::Root { uri: file_uri(&full), name, meta: None })
        })
        .collect()
}

/// A `file://` URI for an absolute path, its bytes percent-encoded where URIs need it.
fn file_uri(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

fn options(cli: &Cli) -> Result<ClientOptions, Failure> {
    let tracer: Option<mcp::client::Tracer> = cli.trace.then(|| {
        Arc::new(|direction: Direction, message: &Value| {
            let arrow = if direction == Direction::Out { "→" } else { "←" };
            eprintln!("{arrow} {message}");
        }) as mcp::client::Tracer
    });
    Ok(ClientOptions {
        client_info: mcp::types::lifecycle::Implementation::new("mcp-cli", env!("CARGO_PKG_VERSION")),
        handlers: handlers(cli)?,
        timeout: Duration::from_secs(cli.timeout.max(1)),
        tracer,
        legacy_only: cli.legacy,
        ca_files: cli.cacerts.clone(),
        max_message_bytes: (cli.max_message_mib as usize) << 20,
        ..ClientOptions::default()
    })
}

fn protocol(e: mcp::Error) -> Failure {
    if e.is_auth_required() {
        return Failure::AuthRequired(e.to_string());
    }
    let text = e.to_string();
    Failure::Protocol(text.strip_prefix("protocol error: ").map(str::to_owned).unwrap_or(text))
}

async fn run(cli: &Cli, early: Option<ServerProcess>) -> Result<Value, Failure> {
    if let Command::Servers = cli.command {
        drop(early);
        let result = list_servers(cli);
        report(cli, &result);
        return result;
    }
    if let Command::Chat(args) = &cli.command {
        drop(early);
        let result = chat_command(cli, args).await;
        if result.is_err() && !reported_at_exit(&result) {
            report(cli, &result); // the provider's refusal, in words (or the JSON document)
        }
        return result;
    }
    if let Command::Gateway(args) = &cli.command {
        drop(early);
        return gateway_command(cli, args).await;
    }
    if let Command::Bridge(args) = &cli.command {
        drop(early);
        return bridge_command(cli, args).await;
    }
    if let Command::Doctor(args) = &cli.command {
        drop(early);
        return doctor_command(cli, args).await;
    }
    if let Command::Inspect(args) = &cli.command {
        drop(early);
        return inspect_command(cli, args).await;
    }
    if let Some(result) = auth_command(cli).await {
        if !reported_at_exit(&result) {
            report(cli, &result);
        }
        return result;
    }
    let target = target(cli)?;
    let mut options = options(cli)?;
    if let Target::Http(_, _, entry) = &target {
        let oauth = cli.auth.authorizer(entry, &cli.cacerts).map_err(Failure::Usage)?;
        options.auth = Some(Arc::new(oauth));
    }
    // The era of a server is remembered between runs (`mcp discover` always probes).
    let use_memory = !cli.legacy && !cli.reprobe && !matches!(cli.command, Command::Discover);
    if use_memory {
        options.known_era = eras::recall(&target);
    }
    let remembered = options.known_era.is_some();
    let client = target.connect(options, early).await.map_err(|e| {
        if remembered {
            eras::forget(&target); // the next run probes afresh
        }
        if e.is_auth_required() {
            Failure::AuthRequired(e.to_string())
        } else {
            Failure::Connect(format!("{e}"))
        }
    })?;
    let mut result = execute(cli, &client).await;
    match client.era().await {
        Ok(era) if !cli.legacy => eras::record(&target, &era),
        Ok(_) => {}
        Err(e) => {
            // A remembered era could not be confirmed: the server is not (or no longer) there.
            eras::forget(&target);
            if matches!(result, Err(Failure::Protocol(_))) {
                result = Err(Failure::Connect(e.to_string()));
            }
        }
    }
    // The polite shutdown (stdin closed, the server's exit awaited) starts first, so the server
    // exits while the answer is printed.
    let closing = tokio::spawn(client.close());
    tokio::task::yield_now().await;
    if !reported_at_exit(&result) {
        report(cli, &result); // a usage error is reported once, at exit
    }
    let _ = closing.await;
    result
}

/// How the gateway and the bridge reach upstreams: `interactive` lets an authorization open a
/// browser (the bridge, started by a host on someone's desktop); the gateway uses stored
/// tokens and client credentials only.
fn connector(cli: &Cli, interactive: bool, name: &str) -> Result<gateway::upstream::Connector, Failure> {
    let mut options = options(cli)?;
    options.client_info = mcp::types::lifecycle::Implementation::new(name, env!("CARGO_PKG_VERSION"));
    options.timeout = Duration::from_secs(cli.timeout.max(1)).max(Duration::from_secs(300));
    options.max_timeout = Duration::from_secs(3600);
    // Every message the upstream logs comes: each downstream client's own level filters them.
    options.log_level = Some(mcp::types::logging::LoggingLevel::Debug);
    let auth = cli.auth.clone();
    let cacerts = cli.cacerts.clone();
    Ok(gateway::upstream::Connector {
        options,
        authorize: Arc::new(move |entry: &target::OAuthEntry| {
            let oauth = match interactive {
                true => auth.authorizer(entry, &cacerts)?,
                // No browser: client credentials work, a person's authorization must come
                // from `mcp login` (its stored tokens are used and refreshed).
                false => {
                    let config = auth.config(entry, &cacerts, true)?;
                    mcp::client::auth::OAuth::new(config, None).map_err(|e| e.to_string())?
                }
            };
            Ok(Arc::new(oauth) as Arc<dyn mcp::client::auth::Authorizer>)
        }),
        one_client: false,
    })
}

/// `mcp gateway`.
async fn gateway_command(cli: &Cli, args: &gateway::GatewayArgs) -> Result<Value, Failure> {
    let path = cli.config.as_ref().ok_or_else(|| Failure::Usage("mcp gateway needs --config FILE".into()))?;
    let upstreams = gateway::config::load(path).map_err(Failure::Usage)?;
    let connector = connector(cli, false, "mcp-gateway")?;
    gateway::serve(upstreams, &args.serve, connector, "mcp-gateway").await.map_err(Failure::Usage)?;
    Ok(Value::Null)
}

/// `mcp doctor`: the report on stdout, exit code 1 when it holds an error.
async fn doctor_command(cli: &Cli, args: &doctor::DoctorArgs) -> Result<Value, Failure> {
    let target = match target(cli)? {
        Target::Stdio(mut command) => {
            command.own_process_group = true;
            Target::Stdio(command)
        }
        http => http,
    };
    let mut options = options(cli)?;
    options.client_info = mcp::types::lifecycle::Implementation::new("mcp-doctor", env!("CARGO_PKG_VERSION"));
    options.handlers = Default::default();
    if let Target::Http(_, headers, entry) = &target {
        options.headers = headers.clone();
        // Stored tokens and client credentials only: a doctor in CI opens no browser.
        let config = cli.auth.config(entry, &cli.cacerts, true).map_err(Failure::Usage)?;
        let oauth = mcp::client::auth::OAuth::new(config, None).map_err(|e| Failure::Usage(e.to_string()))?;
        options.auth = Some(Arc::new(oauth));
    }
    let timeout = Duration::from_secs(cli.timeout.clamp(1, 30));
    let format = if cli.json { doctor::Format::Json } else { args.format };
    let report = doctor::examine(doctor::Patient { target, options, timeout }, args).await;
    let _ = write!(std::io::stdout(), "{}", doctor::render(&report, format));
    if report.failed() {
        Err(Failure::Findings)
    } else {
        Ok(Value::Null)
    }
}

/// `mcp inspect`: the page's questions replace the terminal's, every root is chosen on the
/// page (starting from --root), and an HTTP server's authorization may open a browser.
async fn inspect_command(cli: &Cli, args: &inspect::InspectArgs) -> Result<Value, Failure> {
    let target = match target(cli)? {
        Target::Stdio(mut command) => {
            command.stderr = Stderr::Capture; // shown on the page
            Target::Stdio(command)
        }
        http => http,
    };
    let mut options = options(cli)?;
    options.client_info = mcp::types::lifecycle::Implementation::new("mcp-inspect", env!("CARGO_PKG_VERSION"));
    options.tracer = None;
    options.log_level = Some(mcp::types::logging::LoggingLevel::Debug);
    let sink = inspect::UrlSink::default();
    let mut auth = None;
    if let Target::Http(url, _, entry) = &target {
        let shown = sink.clone();
        let oauth =
            cli.auth.authorizer_showing(entry, &cli.cacerts, move |url| shown.show(url)).map_err(Failure::Usage)?;
        let oauth = Arc::new(oauth);
        options.auth = Some(oauth.clone());
        let config = cli.auth.config(entry, &cli.cacerts, true).map_err(Failure::Usage)?;
        auth = Some(inspect::Authorization {
            url: url.clone(),
            fetcher: mcp::fetch::Fetcher::new(&cli.cacerts).map_err(|e| Failure::Usage(format!("--cacert: {e}")))?,
            registration: inspect::Registration {
                client_id: config.client_id,
                metadata_url: config.client_metadata_url,
            },
            oauth,
        });
    }
    let setup = inspect::Setup { target, options, roots: roots(&cli.roots)?, auth, sink };
    inspect::run(setup, args).await.map_err(Failure::Connect)?;
    Ok(Value::Null)
}

/// `mcp bridge`.
async fn bridge_command(cli: &Cli, args: &bridge::BridgeArgs) -> Result<Value, Failure> {
    let target = match target(cli)? {
        Target::Http(url, mut headers, oauth) => {
            if let Some(path) = &args.header_file {
                headers.extend(bridge::header_file(path).map_err(Failure::Usage)?);
            }
            if args.serve.http.is_some() {
                return Err(Failure::Usage("mcp bridge --url serves stdio; --http is for `-- COMMAND`".into()));
            }
            Target::Http(url, headers, oauth)
        }
        Target::Stdio(command) if args.serve.http.is_none() => {
            return Err(Failure::Usage(format!(
                "mcp bridge -- {}: add --http ADDR to serve it over HTTP (it already speaks stdio)",
                command.program
            )))
        }
        stdio => stdio,
    };
    let upstream = bridge::upstream(args, target);
    let connector = connector(cli, true, "mcp-bridge")?;
    gateway::serve(vec![upstream], &args.serve, connector, "mcp-bridge").await.map_err(Failure::Usage)?;
    Ok(Value::Null)
}

/// `mcp chat`.
async fn chat_command(cli: &Cli, args: &chat::ChatArgs) -> Result<Value, Failure> {
    let mut offered = roots(&cli.roots)?;
    if offered.is_empty() {
        offered = roots(&[std::env::current_dir().unwrap_or_default()])?;
    }
    let common = chat::Common {
        config: cli.config.as_ref(),
        roots: offered,
        cacerts: &cli.cacerts,
        auth: &cli.auth,
        json: cli.json,
        quiet: cli.quiet,
        timeout: Duration::from_secs(cli.timeout.max(1)),
    };
    match chat::run(common, args).await {
        chat::Outcome::Done => Ok(Value::Null),
        chat::Outcome::Usage(m) => Err(Failure::Usage(m)),
        chat::Outcome::Failed(m) => Err(Failure::Chat(m)),
        chat::Outcome::Interrupted => Err(Failure::Interrupted("interrupted".into())),
    }
}

/// The server a login, logout or token command is about: its URL and its entry's settings.
fn http_target(cli: &Cli, url: Option<&String>) -> Result<(String, target::OAuthEntry), Failure> {
    if let Some(url) = url {
        return Ok((url.clone(), Default::default()));
    }
    match target(cli)? {
        Target::Http(url, _, entry) => Ok((url, entry)),
        Target::Stdio(_) => Err(Failure::Usage(
            "authorization is for HTTP servers: a stdio server takes its credentials from its environment".into(),
        )),
    }
}

/// `mcp login`, `mcp logout`, `mcp auth ...` (none of them connects as a client).
async fn auth_command(cli: &Cli) -> Option<Result<Value, Failure>> {
    let failed = |e: String| Failure::Connect(e);
    let result = match &cli.command {
        Command::Login { url } => match http_target(cli, url.as_ref()) {
            Ok((url, entry)) => login::login(&cli.auth, &url, &entry, &cli.cacerts).await.map_err(failed),
            Err(e) => Err(e),
        },
        Command::Logout { url, all } => {
            let url = if *all { Ok(None) } else { http_target(cli, url.as_ref()).map(|(u, _)| Some(u)) };
            url.and_then(|url| login::logout(&cli.auth, url.as_deref(), *all).map_err(Failure::Usage))
        }
        Command::Auth { action: AuthAction::Status } => login::status(&cli.auth).map_err(Failure::Usage),
        Command::Auth { action: AuthAction::Token { url } } => match http_target(cli, url.as_ref()) {
            Ok((url, entry)) => {
                login::token(&cli.auth, &url, &entry, &cli.cacerts).await.map_err(Failure::AuthRequired)
            }
            Err(e) => Err(e),
        },
        _ => return None,
    };
    Some(result)
}

/// `mcp --config FILE servers`.
fn list_servers(cli: &Cli) -> Result<Value, Failure> {
    let Some(path) = &cli.config else {
        return Err(Failure::Usage("servers lists the entries of an mcpServers file: pass --config FILE".into()));
    };
    let servers = target::list(path).map_err(Failure::Usage)?;
    Ok(json!({"servers": servers}))
}

async fn execute(cli: &Cli, client: &Client) -> Result<Value, Failure> {
    let json = |v: Result<Value, mcp::Error>| v.map_err(protocol);
    match &cli.command {
        Command::Servers
        | Command::Chat(_)
        | Command::Gateway(_)
        | Command::Bridge(_)
        | Command::Doctor(_)
        | Command::Inspect(_)
        | Command::Sandbox(_)
        | Command::Login { .. }
        | Command::Logout { .. }
        | Command::Auth { .. } => {
            unreachable!("answered before connecting")
        }
        Command::Discover => {
            let d = client.description();
            Ok(json!({
                "protocolVersion": d.protocol_version,
                "era": if d.modern { "2026-07-28 (stateless)" } else { "legacy (initialize)" },
                "supportedVersions": d.supported_versions,
                "serverInfo": d.server_info,
                "capabilities": d.capabilities,
                "instructions": d.instructions,
            }))
        }
        Command::Ping => client.ping().await.map(|()| json!({"ok": true})).map_err(protocol),
        Command::Tools => Ok(json!({"tools": client.list_tools().await.map_err(protocol)?})),
        Command::Call { name, pairs, args, detach } => call(cli, client, name, pairs, args.as_deref(), *detach).await,
        Command::Task { action } => task(client, action).await,
        Command::Resources | Command::Templates | Command::Prompts if !declared(client, &cli.command).await => {
            let (key, capability) = match cli.command {
                Command::Prompts => ("prompts", "prompts"),
                Command::Templates => ("resourceTemplates", "resources"),
                _ => ("resources", "resources"),
            };
            let note = format!("the server offers no {capability}: it did not declare the {capability} capability");
            Ok(json!({key: [], "note": note}))
        }
        Command::Resources => Ok(json!({"resources": client.list_resources().await.map_err(protocol)?})),
        Command::Templates => {
            Ok(json!({"resourceTemplates": client.list_resource_templates().await.map_err(protocol)?}))
        }
        Command::Read { uri } => json(client.request("resources/read", json!({"uri": uri})).await),
        Command::Prompts => Ok(json!({"prompts": client.list_prompts().await.map_err(protocol)?})),
        Command::Skills { name, out } => skills::run(client, name.as_deref(), out.as_deref()).await,
        Command::Prompt { name, pairs } => {
            let args: BTreeMap<String, String> = pairs.iter().map(|p| split_pair(p)).collect::<Result<_, _>>()?;
            json(client.request("prompts/get", json!({"name": name, "arguments": args})).await)
        }
        Command::Complete { reference, argument, value, resource } => {
            let reference = if *resource {
                CompletionRef::Resource { uri: reference.clone() }
            } else {
                CompletionRef::Prompt { name: reference.clone(), title: None }
            };
            let argument = CompletionArgument { name: argument.clone(), value: value.clone() };
            client.complete(reference, argument).await.map(|r| json!(r)).map_err(protocol)
        }
    }
}

/// Whether the server declared the capability a listing command needs (the lifecycle: use only
/// what was negotiated). A remembered modern era is confirmed first.
async fn declared(client: &Client, command: &Command) -> bool {
    let _ = client.era().await;
    let capabilities = client.description().capabilities;
    match command {
        Command::Prompts => capabilities.prompts.is_some(),
        _ => capabilities.resources.is_some(),
    }
}

async fn call(
    cli: &Cli,
    client: &Client,
    name: &str,
    pairs: &[String],
    args: Option<&str>,
    detach: bool,
) -> Result<Value, Failure> {
    let mut arguments: Map<String, Value> = match args {
        Some(text) => match serde_json::from_str(text) {
            Ok(Value::Object(m)) => m,
            _ => return Err(Failure::Usage("--args must be a JSON object".into())),
        },
        None => Map::new(),
    };
    // Values that can only be strings need no schema; anything else is read by the tool's schema.
    let ambiguous =
        pairs.iter().any(|p| p.split_once('=').is_some_and(|(_, v)| serde_json::from_str::<Value>(v).is_ok()));
    if ambiguous {
        let tools = client.list_tools().await.map_err(protocol)?;
        let schema =
            tools.iter().find(|t| t.name == name).map(|t| Value::Object(t.input_schema.clone())).unwrap_or(Value::Null);
        for pair in pairs {
            let (k, v) = split_pair(pair)?;
            let kind = schema["properties"][&k]["type"].clone();
            arguments.insert(k, output::coerce(&v, &kind));
        }
    } else {
        for pair in pairs {
            let (k, v) = split_pair(pair)?;
            arguments.insert(k, Value::String(v));
        }
    }
    let show_progress = !cli.json && std::io::stderr().is_terminal();
    let started = client
        .start_tool_with_progress(name, Value::Object(arguments), move |p| {
            if show_progress {
                let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
                eprint!("\r\x1b[2K{}{total} {}", p.progress, p.message.unwrap_or_default());
            }
        })
        .await
        .map_err(protocol)?;
    let result = match started {
        ToolCall::Done(result) => result,
        ToolCall::Task(task) if detach => return Ok(task_json(&task)),
        ToolCall::Task(task) => follow_task(client, &task.id, show_progress).await?,
    };
    if show_progress {
        eprint!("\r\x1b[2K");
    }
    let value = json!(result);
    if result.is_error() {
        Err(Failure::ToolError(value))
    } else {
        Ok(value)
    }
}

/// Waits for a task to end, showing its status as it changes; Ctrl-C cancels it.
async fn follow_task(client: &Client, id: &str, show: bool) -> Result<mcp::types::tools::CallToolResult, Failure> {
    let wait = client.wait_task(id, |task| {
        if show {
            let status = json!(task.status);
            let message = task.message.as_deref().unwrap_or_default();
            eprint!("\r\x1b[2Ktask {}: {message}", status.as_str().unwrap_or_default());
        }
    });
    tokio::select! {
        result = wait => result.map_err(protocol),
        _ = tokio::signal::ctrl_c() => {
            if show {
                eprint!("\r\x1b[2K");
            }
            let cancelled = client.cancel_task(id).await;
            let what = match cancelled {
                Ok(()) => format!("interrupted: asked the server to cancel task {id}"),
                Err(e) => format!("interrupted; cancelling task {id} failed: {e}"),
            };
            Err(Failure::Interrupted(what))
        }
    }
}

fn task_json(task: &mcp::client::TaskInfo) -> Value {
    json!({
        "taskId": task.id,
        "status": task.status,
        "statusMessage": task.message,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.last_updated_at,
        "pollIntervalMs": task.poll_interval.map(|d| d.as_millis() as u64),
        "inputRequests": task.input_requests,
        "result": task.result,
        "error": task.error,
    })
}

/// `mcp task ...`.
async fn task(client: &Client, action: &TaskAction) -> Result<Value, Failure> {
    match action {
        TaskAction::Get { id } => client.get_task(id).await.map(|t| task_json(&t)).map_err(protocol),
        TaskAction::Cancel { id } => client.cancel_task(id).await.map(|()| json!({"cancelled": id})).map_err(protocol),
        TaskAction::List => {
            let tasks = client.list_tasks().await.map_err(protocol)?;
            Ok(json!({"tasks": tasks.iter().map(task_json).collect::<Vec<_>>()}))
        }
        TaskAction::Result { id } => {
            let result =
                follow_task(client, id, !std::io::stdout().is_terminal() && std::io::stderr().is_terminal()).await?;
            let value = json!(result);
            if result.is_error() {
                Err(Failure::ToolError(value))
            } else {
                Ok(value)
            }
        }
    }
}

/// The exit code and the document of an outcome.
fn outcome(result: &Result<Value, Failure>) -> (u8, Value) {
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
fn report(cli: &Cli, result: &Result<Value, Failure>) {
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
fn reported_at_exit(result: &Result<Value, Failure>) -> bool {
    matches!(result, Err(Failure::Usage(_) | Failure::Connect(_) | Failure::AuthRequired(_)))
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let early = early::start(&args);
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            drop(early); // killed and reaped before clap exits
            e.exit()
        }
    };
    let mut roots = cli.roots.clone();
    if roots.is_empty() && matches!(cli.command, Command::Chat(_)) {
        roots.extend(std::env::current_dir()); // what chat offers as its root
    }
    sandbox::set_defaults(cli.sandbox, roots, matches!(cli.command, Command::Doctor(_)));
    #[cfg(feature = "otel")]
    mcp::telemetry::init(&format!("mcp {}", cli.command_name()));
    if let Command::Sandbox(args) = &cli.command {
        drop(early);
        return match sandbox::run(args, &cli.server_command) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("mcp: {e}");
                ExitCode::from(2)
            }
        };
    }
    // Client commands run on one thread; the gateway and the bridge on as many as they serve
    // (see `gateway::worker_threads`).
    let threads = match &cli.command {
        Command::Gateway(args) => gateway::worker_threads(args.threads, &args.serve),
        Command::Bridge(args) => gateway::worker_threads(args.threads, &args.serve),
        _ => 1,
    };
    let runtime = match threads {
        1 => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        n => tokio::runtime::Builder::new_multi_thread().worker_threads(n).enable_all().build(),
    }
    .expect("a tokio runtime");
    let result = runtime.block_on(run(&cli, early));
    if reported_at_exit(&result) {
        report(&cli, &result); // failures before a connection are reported here
    }
    mcp::cli::flush_telemetry(); // spans still queued go out (2 s at most), with the feature
    ExitCode::from(outcome(&result).0)
}

impl Cli {
    fn command_name(&self) -> String {
        match &self.command {
            Command::Servers => "servers",
            Command::Gateway(_) => "gateway",
            Command::Bridge(_) => "bridge",
            Command::Doctor(_) => "doctor",
            Command::Inspect(_) => "inspect",
            Command::Sandbox(_) => "sandbox",
            Command::Chat(_) => "chat",
            Command::Login { .. } => "login",
            Command::Logout { .. } => "logout",
            Command::Auth { .. } => "auth",
            Command::Discover => "discover",
            Command::Ping => "ping",
            Command::Tools => "tools",
            Command::Call { .. } => "call",
            Command::Task { action: TaskAction::Result { .. } } => "call",
            Command::Task { .. } => "task",
            Command::Resources => "resources",
            Command::Templates => "templates",
            Command::Read { .. } => "read",
            Command::Prompts => "prompts",
            Command::Skills { .. } => "skills",
            Command::Prompt { .. } => "prompt",
            Command::Complete { .. } => "complete",
        }
        .to_owned()
    }
}
