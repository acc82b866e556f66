//! Integration tests of the `mcp` crate over the in-memory transport: the same engine, framing
//! and router as on stdio, without a process.

mod auth;
mod auth_keys;
mod cache;
mod client_rules;
mod eras;
mod hostile;
mod http;
mod input;
mod rules;
mod state;
mod subscriptions;
mod support;
mod tasks;
