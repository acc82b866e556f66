//! The connection engine: reads messages from one peer, runs requests concurrently, routes
//! responses and cancellations, and writes everything back through one outbox.
//!
//! Used by every byte-stream transport (stdio, in-memory, child process). HTTP runs the same
//! router per POST instead (see `transport::http`).

pub mod connection;
pub(crate) mod inflight;
pub mod lines;
pub(crate) mod memory;
pub mod outbox;
pub(crate) mod raw;
pub mod session;

pub use connection::{serve_connection, ServeOptions};
