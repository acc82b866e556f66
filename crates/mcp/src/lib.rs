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

/// Serves `router` on stdio (the default), as every server binary of this project does.
pub async fn serve(router: Router) -> std::io::Result<()> {
    transport::stdio::serve(router).await
}
