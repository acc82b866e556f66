//! `mcp`: list and call what any MCP server offers, from the shell.
//!
//! ```text
//! mcp tools -- ./server --flag                 # a stdio server
//! mcp --url http://127.0.0.1:8080/mcp tools    # a Streamable HTTP server
//! mcp --config ~/.claude.json --server paypedia call iban_check input="FR76 3000 6000 0112 3456 7890 189"
//! ```
//!
//! This file holds `main` (the runtime, the exit code) and the dispatch of each command to its
//! file under `commands/`; the command line is `cli.rs`, what the commands share before they
//! connect `setup.rs`, how a run ends and is reported `failure.rs`.
#![allow(clippy::print_stdout)] // a command-line tool: stdout is its output

mod bridge;
mod chat;
mod cli;
mod commands;
mod digest;
mod doctor;
mod early;
mod elicit;
mod eras;
mod failure;
mod gateway;
mod inspect;
mod login;
mod output;
mod sandbox;
mod setup;
mod skills;
mod target;
mod term;

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use mcp::client::{Client, ServerProcess};
use serde_json::{json, Value};

use cli::{Cli, Command};
use failure::{outcome, protocol, report, reported_at_exit, Failure};
use target::Target;

/// Runs the command: those that need no client connection first, then the connection (the era
/// remembered or probed) and the command given the client.
async fn run(cli: &Cli, early: Option<ServerProcess>) -> Result<Value, Failure> {
    if let Command::Servers = cli.command {
        drop(early);
        let result = commands::servers::list_servers(cli);
        report(cli, &result);
        return result;
    }
    if let Command::Chat(args) = &cli.command {
        drop(early);
        let result = commands::chat::chat_command(cli, args).await;
        if result.is_err() && !reported_at_exit(&result) {
            report(cli, &result); // the provider's refusal, in words (or the JSON document)
        }
        return result;
    }
    if let Command::Gateway(args) = &cli.command {
        drop(early);
        return commands::gateway::gateway_command(cli, args).await;
    }
    if let Command::Bridge(args) = &cli.command {
        drop(early);
        return commands::bridge::bridge_command(cli, args).await;
    }
    if let Command::Doctor(args) = &cli.command {
        drop(early);
        return commands::doctor::doctor_command(cli, args).await;
    }
    if let Command::Inspect(args) = &cli.command {
        drop(early);
        return commands::inspect::inspect_command(cli, args).await;
    }
    if let Some(result) = commands::auth::auth_command(cli).await {
        if !reported_at_exit(&result) {
            report(cli, &result);
        }
        return result;
    }
    let target = setup::target(cli)?;
    let mut options = setup::options(cli)?;
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

/// Runs a command that talks to the connected `client`.
async fn execute(cli: &Cli, client: &Client) -> Result<Value, Failure> {
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
        Command::Discover => Ok(commands::discover::discover(client)),
        Command::Ping => client.ping().await.map(|()| json!({"ok": true})).map_err(protocol),
        Command::Tools | Command::Resources | Command::Templates | Command::Prompts => {
            commands::list::list(client, &cli.command).await
        }
        Command::Call { name, pairs, args, detach } => {
            commands::call::call(cli, client, name, pairs, args.as_deref(), *detach).await
        }
        Command::Task { action } => commands::task::task(client, action).await,
        Command::Read { uri } => client.request("resources/read", json!({"uri": uri})).await.map_err(protocol),
        Command::Skills { name, out } => skills::run(client, name.as_deref(), out.as_deref()).await,
        Command::Prompt { name, pairs } => commands::prompt::prompt(client, name, pairs).await,
        Command::Complete { reference, argument, value, resource } => {
            commands::complete::complete(client, reference, argument, value, *resource).await
        }
    }
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
