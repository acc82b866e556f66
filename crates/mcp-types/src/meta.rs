//! `_meta`: the open metadata object on params, results and notifications, and its reserved keys.
//!
//! Spec: `basic/index` §`_meta` (2025-06-18 and later). In 2026-07-28 every request carries the
//! protocol version and the client's capabilities here, since there is no `initialize`.

use serde::{Deserialize, Serialize};

/// A `_meta` object.
pub type Meta = serde_json::Map<String, serde_json::Value>;

/// `_meta` key: the protocol version of this request (2026-07-28, required on requests).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request (2026-07-28, required on requests).
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version (2026-07-28, optional).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the lowest log level the client wants for this request (2026-07-28).
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key on results: the server's name and version (2026-07-28).
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key on `subscriptions/listen` notifications and result (2026-07-28).
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key: the progress token of a request.
pub const PROGRESS_TOKEN: &str = "progressToken";
/// `_meta` key (legacy tasks, 2025-11-25): the task a message belongs to.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A progress token: a string or an integer chosen by the client.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(String),
}
