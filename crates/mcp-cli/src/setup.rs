//! What the commands share before they talk to a server: the server named on the command line
//! (`--`, `--url`, `--config` and `--server`, with `--header` and `--env`), the client's options
//! (its answers to elicitation, the `--root` directories as roots, `--trace`, limits), and the
//! connector through which the gateway and the bridge reach their upstreams.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mcp::client::{ClientOptions, Direction, Handlers, Stderr, StdioCommand};
use serde_json::Value;

use crate::cli::Cli;
use crate::failure::Failure;
use crate::target::{self, Target};
use crate::{bridge, elicit, gateway, sandbox};

/// `key=value`, split at its first `=`.
pub(crate) fn split_pair(pair: &str) -> Result<(String, String), Failure> {
    pair.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| Failure::Usage(format!("{pair:?} is not key=value")))
}

/// The one server the command line names, with `--header`, `--env` and `--quiet` applied.
pub(crate) fn target(cli: &Cli) -> Result<Target, Failure> {
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
pub(crate) fn roots(paths: &[PathBuf]) -> Result<Vec<mcp::types::roots::Root>, Failure> {
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

/// The client's options from the command line.
pub(crate) fn options(cli: &Cli) -> Result<ClientOptions, Failure> {
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

/// How the gateway and the bridge reach upstreams: `interactive` lets an authorization open a
/// browser (the bridge, started by a host on someone's desktop); the gateway uses stored
/// tokens and client credentials only.
pub(crate) fn connector(cli: &Cli, interactive: bool, name: &str) -> Result<gateway::upstream::Connector, Failure> {
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
