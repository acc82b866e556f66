//! The Model Context Protocol in Rust: one engine for every protocol revision from 2024-11-05 to
//! 2026-07-28, a server [`Router`](server::Router), and transports.
//!
//! Write a server as a [`server::Router`] of plain async functions, then serve it:
//! [`serve`] picks stdio, or Streamable HTTP when the command line says `--http ADDR`.
//!
//! # Cancel safety
//! Cancelling a request drops its handler's future at its next `.await`; no response is sent for
//! it. Handlers that must not stop half-way should finish their critical section without awaiting
//! or spawn it.

pub mod client;
pub mod engine;
pub mod error;
pub mod server;
pub mod transport;

pub use error::{Error, ToolError};
pub use mcp_types as types;
pub use server::{RequestContext, Router};

/// Serves `router` as the command line asks: stdio by default, Streamable HTTP with
/// `--http ADDR` (served at path `/mcp`).
pub async fn serve(router: Router) -> std::io::Result<()> {
    serve_with_args(router, std::env::args().skip(1)).await
}

/// [`serve`] with explicit arguments (what a binary left after taking its own options):
///
/// ```text
/// --http ADDR            serve Streamable HTTP at http://ADDR/mcp instead of stdio
/// --allow-host HOST      also accept this Host (repeatable; `*` for any)
/// --allow-origin ORIGIN  also accept this Origin (repeatable; `*` for any)
/// --trust-proxy          take the host from X-Forwarded-Host (behind a reverse proxy)
/// --json-response        answer every request with one JSON body, never a stream
/// --session-idle SECS    end legacy sessions idle this long (default 600)
/// --max-sessions N       the most live legacy sessions (default 10000)
/// ```
pub async fn serve_with_args(router: Router, args: impl IntoIterator<Item = String>) -> std::io::Result<()> {
    let mut args = args.into_iter();
    let mut http = None;
    let mut config = transport::http::HttpConfig::default();
    while let Some(arg) = args.next() {
        let mut value = |what: &str| args.next().ok_or_else(|| bad_args(&format!("{arg} needs {what}")));
        match arg.as_str() {
            "--http" => http = Some(value("an address, e.g. 127.0.0.1:8080")?),
            "--stdio" => http = None,
            "--allow-host" => config.allowed_hosts.push(value("a host")?),
            "--allow-origin" => config.allowed_origins.push(value("an origin")?),
            "--trust-proxy" => config.trust_proxy = true,
            "--json-response" => config.json_only = true,
            "--session-idle" => config.session_idle = std::time::Duration::from_secs(number(&value("seconds")?)?),
            "--max-sessions" => config.max_sessions = number(&value("a count")?)? as usize,
            other => {
                return Err(bad_args(&format!("unknown argument {other:?} (see the docs of mcp::serve_with_args)")))
            }
        }
    }
    match http {
        None => transport::stdio::serve(router).await,
        Some(addr) => transport::http::serve_with_config(router, &addr, config).await,
    }
}

fn number(text: &str) -> std::io::Result<u64> {
    text.parse().map_err(|_| bad_args(&format!("{text:?} is not a number")))
}

fn bad_args(message: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, message.to_owned())
}
