//! Legacy sessions that every node of a cluster can serve: the session's record (what
//! `initialize` negotiated, its owner, its log level and subscriptions) kept in a shared
//! directory (Redis, with `--store`), with a revision number and an idle deadline.
//!
//! A node serving a request for a session it does not hold rebuilds it from the record; a node
//! holding a copy checks, in the same round trip that pushes the idle deadline back, that the
//! session still exists (a DELETE on any node, or the deadline, ends it everywhere) and that its
//! copy is current (a `logging/setLevel` or a subscription made on another node bumps the
//! revision). The nodes also tell each other ([`ClusterEvent`]) what another must act on: list
//! changes and resource updates (for the GET streams they hold), answers POSTed to the wrong
//! node, cancellations, deletions.

use std::time::Duration;

use futures_util::future::BoxFuture;
use mcp_types::lifecycle::{ClientCapabilities, Implementation};
use mcp_types::logging::LoggingLevel;
use mcp_types::{ErrorCode, ErrorObject, RequestId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::server::Change;

/// The JSON-RPC code of "a store this request needs is unreachable" (server-defined range).
pub const STORE_UNAVAILABLE: ErrorCode = ErrorCode(-32011);

/// What a node needs to serve a session it did not create.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// The negotiated protocol version.
    pub version: String,
    /// The client's capabilities.
    pub capabilities: ClientCapabilities,
    /// The client's name and version.
    pub client_info: Implementation,
    /// The account that created it (with authentication on).
    pub owner: Option<String>,
    /// The level set by `logging/setLevel`.
    pub log_level: Option<LoggingLevel>,
    /// The resources it subscribed to.
    pub subscriptions: Vec<String>,
}

/// A change a request makes to its session's shared record, applied to the newest revision so
/// that two nodes changing one session at once lose neither change.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordChange {
    /// `logging/setLevel`.
    Level(LoggingLevel),
    /// `resources/subscribe`.
    Subscribe(String),
    /// `resources/unsubscribe`.
    Unsubscribe(String),
}

impl RecordChange {
    /// The change `method` with `params` makes, if any.
    pub fn of(method: &str, params: Option<&str>) -> Option<RecordChange> {
        if !matches!(method, "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe") {
            return None; // most requests: no parse
        }
        // Only the two fields: the rest of the params is skipped, never a tree.
        #[derive(serde::Deserialize)]
        struct Fields {
            level: Option<LoggingLevel>,
            uri: Option<String>,
        }
        let params: Fields = serde_json::from_str(params?).ok()?;
        match method {
            "logging/setLevel" => Some(RecordChange::Level(params.level?)),
            "resources/subscribe" => Some(RecordChange::Subscribe(params.uri?)),
            "resources/unsubscribe" => Some(RecordChange::Unsubscribe(params.uri?)),
            _ => None,
        }
    }

    /// Whether the request made it on this node's copy (a refused one is not shared).
    pub fn made_on(&self, session: &crate::engine::session::Session) -> bool {
        match self {
            RecordChange::Level(level) => session.log_level() == Some(*level),
            RecordChange::Subscribe(uri) => session.is_subscribed(uri),
            RecordChange::Unsubscribe(uri) => !session.is_subscribed(uri),
        }
    }

    /// Applies it to `record`.
    pub fn apply(&self, record: &mut SessionRecord) {
        match self {
            RecordChange::Level(level) => record.log_level = Some(*level),
            RecordChange::Subscribe(uri) => {
                if !record.subscriptions.contains(uri) {
                    record.subscriptions.push(uri.clone());
                }
            }
            RecordChange::Unsubscribe(uri) => record.subscriptions.retain(|u| u != uri),
        }
    }
}

/// What one node tells the others.
#[derive(Debug, Clone)]
pub enum ClusterEvent {
    /// A list changed, or a resource was updated, on the sending node: every node tells the
    /// sessions whose GET stream it holds.
    Change(Change),
    /// A session's record changed (log level, subscriptions): copies refresh.
    SessionChanged(String),
    /// A client's answer to a request some node sent it, POSTed to the sending node.
    Response {
        /// The session.
        session: String,
        /// The server's request id.
        id: RequestId,
        /// The answer.
        outcome: Result<Value, ErrorObject>,
    },
    /// `notifications/cancelled` for a request some node runs.
    Cancel {
        /// The session.
        session: String,
        /// The client's request id.
        request: RequestId,
    },
    /// The session was deleted: copies go.
    Ended(String),
    /// A message POSTed for a 2024-11-05 HTTP+SSE connection to a node that does not hold its
    /// stream: the holder runs it.
    LegacyPost {
        /// The connection's `sessionId`.
        connection: String,
        /// The account that posted it (with authentication on, it must have opened it).
        caller: Option<String>,
        /// The message, one line of JSON.
        message: String,
    },
    /// A message for a session's GET stream, from a node that does not hold it: the node that
    /// holds it writes it there (task statuses, log messages, the server's requests).
    Deliver {
        /// The session.
        session: String,
        /// One serialized JSON-RPC message.
        message: Vec<u8>,
    },
}

/// What the shared log holds of one response stream.
#[derive(Debug, Default)]
pub struct StreamLog {
    /// Its events after the asked sequence number, in order.
    pub events: Vec<(u64, Vec<u8>)>,
    /// Whether the response was written (the stream is complete).
    pub ended: bool,
    /// Whether the node producing it is alive.
    pub producer_alive: bool,
    /// The request it answers.
    pub request: Option<RequestId>,
    /// Some of the events after the asked number are not in the log (never written, the store
    /// being too far behind, or no longer kept): a client resuming it would miss them, so it is
    /// told instead.
    pub gap: bool,
}

/// The shared table of legacy sessions, and the channel between the nodes that serve them.
pub trait SessionDirectory: Send + Sync + 'static {
    /// Starts the shared log of response stream `stream` of `session`, answering `request`.
    /// The log calls keep their order; they wait (bounded) only when the store is far behind.
    fn log_open<'a>(&'a self, session: &'a str, stream: u64, request: &'a RequestId) -> BoxFuture<'a, ()>;
    /// Appends event `seq` to the log.
    fn log_event<'a>(&'a self, session: &'a str, stream: u64, seq: u64, data: &'a [u8]) -> BoxFuture<'a, ()>;
    /// Marks the stream complete, `last` being its last event's number.
    fn log_end<'a>(&'a self, session: &'a str, stream: u64, last: u64) -> BoxFuture<'a, ()>;
    /// The log's events after `after`, and its state.
    fn log_read<'a>(&'a self, session: &'a str, stream: u64, after: u64) -> BoxFuture<'a, Result<StreamLog, String>>;
    /// Tells the other nodes (fire and forget).
    fn publish(&self, event: ClusterEvent);
    /// What the other nodes tell this one.
    fn subscribe(&self) -> broadcast::Receiver<ClusterEvent>;
    /// Stores a new or changed record, due to end after `idle` without activity; returns its
    /// new revision.
    fn put<'a>(&'a self, id: &'a str, record: &'a SessionRecord, idle: Duration) -> BoxFuture<'a, Result<u64, String>>;
    /// Stores `record` only if the stored revision is still `expected`: `Ok(Some(new revision))`,
    /// or `Ok(None)` when another node changed it first (read it again and re-apply).
    fn put_if<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        idle: Duration,
        expected: u64,
    ) -> BoxFuture<'a, Result<Option<u64>, String>>;
    /// Pushes the idle deadline back and returns the revision; `None` if the session ended.
    fn touch<'a>(&'a self, id: &'a str, idle: Duration) -> BoxFuture<'a, Result<Option<u64>, String>>;
    /// The record and its revision.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<(u64, SessionRecord)>, String>>;
    /// Ends the session everywhere; `false` if there was none.
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, String>>;
}
