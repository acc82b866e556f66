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

/// [`serve`] with explicit arguments (what a binary left after taking its own options).
pub async fn serve_with_args(router: Router, args: impl IntoIterator<Item = String>) -> std::io::Result<()> {
    let mut args = args.into_iter();
    let mut http = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => {
                http = Some(args.next().ok_or_else(|| bad_args("--http needs an address, e.g. 127.0.0.1:8080"))?)
            }
            "--stdio" => http = None,
            other => return Err(bad_args(&format!("unknown argument {other:?} (expected --http ADDR or --stdio)"))),
        }
    }
    match http {
        None => transport::stdio::serve(router).await,
        Some(addr) => transport::http::serve(router, &addr).await,
    }
}

fn bad_args(message: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, message.to_owned())
}
