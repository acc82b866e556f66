//! The Model Context Protocol in Rust: one engine for every protocol revision from 2024-11-05 to
//! 2026-07-28, a server [`Router`], and transports.
//!
//! Write a server as a [`server::Router`] of plain async functions, then serve it:
//! [`serve`] picks stdio, or Streamable HTTP when the command line says `--http ADDR`.
//!
//! # Cancel safety
//! Cancelling a request drops its handler's future at its next `.await`; no response is sent for
//! it. Handlers that must not stop half-way should finish their critical section without awaiting
//! or spawn it.
//!
//! # Features
//! `default` is everything the README shows: `cli`, `auth`, `client`, `client-http`,
//! `client-oauth` and `jsonschema`. A stdio server needs none of them (`default-features =
//! false`: the fewest crates, no C); a host that only starts stdio servers needs `client` alone (no TLS,
//! no *ring*). The others: `http` (Streamable HTTP), `tls` (HTTPS), `sqlite`, `redis`, `otel`.
//! Each item's documentation names the feature it needs.

#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "auth")]
pub mod auth;
#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "client")]
pub mod client;
// The parts the transports, the server and the client share (JSON lines, outbox, sessions):
// public for the workspace's own crates and benches, not an API (it changes with any release).
#[doc(hidden)]
pub mod engine;
pub mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "http")]
pub mod net;
pub mod proxy;
#[cfg(feature = "redis")]
pub mod redis;
pub mod server;
#[cfg(feature = "otel")]
pub mod telemetry;
#[cfg(feature = "client")]
pub mod testing;
pub mod transport;
// Helpers of the crate's own (percent-decoding, random ids, clocks) that the workspace's servers
// reuse: not an API (it changes with any release).
#[doc(hidden)]
pub mod util;

#[cfg(feature = "http")]
pub use net::fetch;
#[cfg(feature = "tls")]
pub use net::tls;
pub use server::{middleware, tasks};

pub use error::{Error, ToolError};
pub use mcp_types as types;
pub use server::{RequestContext, Router};

// Every Rust snippet of the README compiles (and runs, unless it says `no_run`) as a doc test:
// those not made from an example file or a test are checked here.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeSnippets;

/// The cargo features this build of the library has, in the order its manifest lists them
/// (cargo unifies features across a workspace build: this says what a binary really got).
pub const FEATURES: &[&str] = &[
    #[cfg(feature = "jsonschema")]
    "jsonschema",
    #[cfg(feature = "http")]
    "http",
    #[cfg(feature = "tls")]
    "tls",
    #[cfg(feature = "auth")]
    "auth",
    #[cfg(feature = "client")]
    "client",
    #[cfg(feature = "client-http")]
    "client-http",
    #[cfg(feature = "client-oauth")]
    "client-oauth",
    #[cfg(feature = "cli")]
    "cli",
    #[cfg(feature = "sqlite")]
    "sqlite",
    #[cfg(feature = "redis")]
    "redis",
    #[cfg(feature = "otel")]
    "otel",
];

/// Serves `router` as the command line asks: stdio by default, Streamable HTTP with
/// `--http ADDR` (served at path `/mcp`), and every option of [`cli::ServeArgs`]. Without
/// arguments (how hosts start stdio servers) no parser runs. `--help` names the server by its
/// router's name; a usage error prints the problem and exits with code 2.
///
/// A server with options of its own flattens [`cli::ServeArgs`] into its own clap parser and
/// calls [`cli::serve`] instead.
#[cfg(feature = "cli")]
pub async fn serve(router: Router) -> std::io::Result<()> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args.is_empty() {
        cli::init_logging();
        cli::init_telemetry_serving();
        cli::serving_stdio_only();
        util::random::check()?; // ids and keys need it: refused at start, not on a request
        let served = transport::stdio::serve(router).await;
        cli::flush_telemetry_serving().await;
        return served;
    }
    match cli::parse_plain(&router, args) {
        Ok(serve) => cli::serve(router, &serve).await,
        Err(e) => e.exit(),
    }
}

/// Serves `router` on stdio (built without the `cli` feature, there is no command line).
#[cfg(not(feature = "cli"))]
pub async fn serve(router: Router) -> std::io::Result<()> {
    transport::stdio::serve(router).await
}

/// [`serve`] with explicit arguments (without the program name): a usage error is returned as an
/// [`std::io::ErrorKind::InvalidInput`] error instead of ending the process.
#[cfg(feature = "cli")]
pub async fn serve_with_args(router: Router, args: impl IntoIterator<Item = String>) -> std::io::Result<()> {
    let args = args.into_iter().map(std::ffi::OsString::from).collect();
    let serve = cli::parse_plain(&router, args)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    cli::serve(router, &serve).await
}
