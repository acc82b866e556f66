//! Transports: how bytes reach the engine.
//!
//! - [`stdio`]: newline-delimited JSON on stdin and stdout (the process owns fd 1 for the
//!   protocol; anything else printed goes to stderr);
//! - [`memory`]: an in-process pipe, for tests;
//! - [`http`]: Streamable HTTP (every era on one endpoint) and the 2024-11-05 HTTP+SSE transport.

#[cfg(feature = "http")]
pub mod http;
pub mod memory;
pub mod stdio;
