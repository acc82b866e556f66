//! Wire types of the Model Context Protocol (MCP), every revision from `2024-11-05` to
//! `2026-07-28`.
//!
//! This crate is plain data: serde types and a few constants, no IO, no async. The engine in
//! the `mcp` crate decodes a message in two steps: first the JSON-RPC [`jsonrpc::Envelope`]
//! (request, notification or response, by the keys present, with `params` kept raw), then the
//! params of the one method it names, through that method's marker type in [`methods`].
//!
//! Conventions, the same in every module:
//! - field names follow the spec (`camelCase` on the wire);
//! - optional fields are skipped when `None`; unknown fields are tolerated on input;
//! - `_meta` is an open JSON object ([`Meta`]); reserved keys are in [`meta`];
//! - shapes that exist only in legacy revisions (`initialize`, `ping`, `logging/setLevel`, ...)
//!   live in [`legacy`]; each type's doc names the revisions it belongs to.

pub mod completion;
pub mod content;
pub mod elicitation;
pub mod jsonrpc;
pub mod legacy;
pub mod lifecycle;
pub mod logging;
pub mod meta;
pub mod methods;
pub mod mrtr;
pub mod prompts;
pub mod resources;
pub mod result;
pub mod roots;
pub mod sampling;
pub mod skills;
pub mod subscriptions;
pub mod tasks;
pub mod tools;
pub mod utilities;
pub mod version;

pub use jsonrpc::{ErrorCode, ErrorObject, RequestId};
pub use meta::Meta;
pub use methods::{Notification, Request};
pub use version::ProtocolVersion;

/// An arbitrary JSON value, as the spec's `JSONValue`.
pub type JsonValue = serde_json::Value;
/// An arbitrary JSON object, as the spec's `JSONObject`.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;
