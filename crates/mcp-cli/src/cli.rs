//! The command line: the global options (which server, how to reach it, how to print) and every
//! command with its arguments, as clap reads them.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::failure::EXIT_HELP;
use crate::{bridge, chat, doctor, gateway, inspect, login, sandbox};

/// Calls any MCP server: a command after `--` (stdio), `--url` (Streamable HTTP), or
/// `--config FILE --server NAME` (an `mcpServers` entry as Claude Desktop and Claude Code use).
#[derive(Parser)]
#[command(name = "mcp", version, after_help = EXIT_HELP)]
pub(crate) struct Cli {
    /// A Streamable HTTP endpoint, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long, global = true)]
    pub(crate) url: Option<String>,
    /// An mcpServers JSON file (Claude Desktop's or Claude Code's format).
    #[arg(long, global = true)]
    pub(crate) config: Option<PathBuf>,
    /// The server's name in --config (not needed when it holds one server).
    #[arg(long, global = true)]
    pub(crate) server: Option<String>,
    /// A directory the server may work in, offered as a root (repeatable). Without it, no roots
    /// are offered at all.
    #[arg(long = "root", global = true, value_name = "PATH")]
    pub(crate) roots: Vec<PathBuf>,
    /// A CA certificate (PEM) to trust for https besides the system's (repeatable; SSL_CERT_FILE
    /// replaces the system's).
    #[arg(long = "cacert", global = true, value_name = "FILE")]
    pub(crate) cacerts: Vec<PathBuf>,
    /// An HTTP header, "Name: value" (repeatable).
    #[arg(long = "header", global = true)]
    pub(crate) headers: Vec<String>,
    /// An environment variable for a stdio server, KEY=VALUE (repeatable).
    #[arg(long = "env", global = true)]
    pub(crate) envs: Vec<String>,
    /// Print every JSON-RPC message, both ways, to stderr.
    #[arg(long, global = true)]
    pub(crate) trace: bool,
    /// Output one JSON document on stdout, nothing else.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Seconds a request may go without an answer or progress.
    #[arg(long, global = true, default_value_t = 60)]
    pub(crate) timeout: u64,
    /// The largest message accepted from the server, in MiB (a whole large resource needs
    /// more than the 16 of the default).
    #[arg(long, global = true, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub(crate) max_message_mib: u64,
    /// Speak only the legacy handshake (skip the 2026-07-28 probe).
    #[arg(long, global = true)]
    pub(crate) legacy: bool,
    /// Hide the stdio server's stderr (shown by default).
    #[arg(long, global = true)]
    pub(crate) quiet: bool,
    /// Probe the server's protocol era again instead of using the one remembered from an
    /// earlier run.
    #[arg(long, global = true)]
    pub(crate) reprobe: bool,
    /// Start every stdio server in the strict sandbox (Landlock, seccomp, limits): the system's
    /// libraries, its own install, the directories named as its arguments or roots, a private
    /// temporary directory, no network, a scrubbed environment. An entry's "sandbox" key wins.
    #[arg(long, global = true)]
    pub(crate) sandbox: bool,
    #[command(flatten)]
    pub(crate) auth: login::AuthOptions,
    #[command(subcommand)]
    pub(crate) command: Command,
    /// The stdio server's command line, after `--`.
    #[arg(last = true, global = true)]
    pub(crate) server_command: Vec<String>,
}

#[derive(Subcommand)]
pub(crate) enum Command {
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
pub(crate) enum AuthAction {
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
pub(crate) enum TaskAction {
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

impl Cli {
    pub(crate) fn command_name(&self) -> String {
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
