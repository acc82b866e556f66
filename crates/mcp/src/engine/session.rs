//! A legacy session: what `initialize` established, and the requests the server sends the client.
//!
//! One per stdio connection that opened with `initialize`, one per `Mcp-Session-Id` on HTTP.
//! 2026-07-28 requests have no session: everything they need is in their own `_meta`.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use mcp_types::lifecycle::{ClientCapabilities, Implementation};
use mcp_types::logging::LoggingLevel;
use mcp_types::roots::ListRootsResult;
use mcp_types::{ErrorObject, RequestId};
use serde_json::Value;
use tokio::sync::oneshot;

use super::outbox::Outbox;

/// The most requests to the client that may wait for an answer at once, per session.
const MAX_PENDING: usize = 1024;
const NO_LEVEL: u8 = u8::MAX;

/// The capabilities and names of live sessions' clients, each kept once.
static CAPABILITIES: Mutex<Vec<Weak<ClientCapabilities>>> = Mutex::new(Vec::new());
static IMPLEMENTATIONS: Mutex<Vec<Weak<Implementation>>> = Mutex::new(Vec::new());
/// Distinct values shared at most (others are kept by their session alone).
const MAX_SHARED: usize = 256;

/// `value`, shared with the live sessions that hold an equal one.
fn shared<T: PartialEq>(table: &Mutex<Vec<Weak<T>>>, value: T) -> Arc<T> {
    let mut table = table.lock().unwrap_or_else(|e| e.into_inner());
    table.retain(|known| known.strong_count() > 0);
    if let Some(known) = table.iter().filter_map(Weak::upgrade).find(|known| **known == value) {
        return known;
    }
    let value = Arc::new(value);
    if table.len() < MAX_SHARED {
        table.push(Arc::downgrade(&value));
    }
    value
}

/// The state of one legacy session.
#[derive(Debug)]
pub struct Session {
    /// The negotiated protocol version (one of ours, so not copied per session).
    pub version: Cow<'static, str>,
    /// What the client declared in `initialize` (shared by the sessions of clients that
    /// declared the same: a server holding thousands of sessions keeps a few copies).
    pub client_capabilities: Arc<ClientCapabilities>,
    /// Who the client said it is (shared likewise).
    pub client_info: Arc<Implementation>,
    /// The session-wide stream for messages unrelated to a request (stdio: stdout).
    pub outbox: Outbox,
    log_level: AtomicU8,
    next_id: AtomicI64,
    /// Bumped by every `notifications/roots/list_changed`.
    roots_generation: AtomicU64,
    /// Made on first use: most sessions never subscribe, ask the client or list its roots, and
    /// a server may hold thousands of them idle.
    extras: OnceLock<Box<Extras>>,
}

/// What few sessions use.
#[derive(Debug, Default)]
struct Extras {
    subscriptions: Mutex<HashSet<String>>,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, ErrorObject>>>>,
    /// The client's roots as last listed, with the generation they were asked in.
    roots: Mutex<Option<(u64, Arc<ListRootsResult>)>>,
}

impl Session {
    /// A session after a successful `initialize`.
    pub fn new(version: String, caps: ClientCapabilities, info: Implementation, outbox: Outbox) -> Self {
        let known = mcp_types::ProtocolVersion::ALL.into_iter().find(|known| *known == version);
        Session {
            version: known.map_or(Cow::Owned(version), Cow::Borrowed),
            client_capabilities: shared(&CAPABILITIES, caps),
            client_info: shared(&IMPLEMENTATIONS, info),
            outbox,
            log_level: AtomicU8::new(NO_LEVEL),
            next_id: AtomicI64::new(0),
            roots_generation: AtomicU64::new(0),
            extras: OnceLock::new(),
        }
    }

    /// The extras, made now if they were not yet.
    fn extras(&self) -> &Extras {
        self.extras.get_or_init(Box::default)
    }

    /// The level set by `logging/setLevel`, if any.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        level_from_u8(self.log_level.load(Ordering::Relaxed))
    }

    /// Sets the session's log level.
    pub fn set_log_level(&self, level: LoggingLevel) {
        self.log_level.store(level as u8, Ordering::Relaxed);
    }

    /// Subscribes to updates of `uri`; at most `limit` subscriptions are kept.
    pub fn subscribe(&self, uri: String, limit: usize) -> bool {
        let mut subs = self.extras().subscriptions.lock().unwrap();
        if subs.len() >= limit && !subs.contains(&uri) {
            return false;
        }
        subs.insert(uri);
        true
    }

    /// Ends a subscription.
    pub fn unsubscribe(&self, uri: &str) {
        if let Some(extras) = self.extras.get() {
            extras.subscriptions.lock().unwrap().remove(uri);
        }
    }

    /// Starts this copy's request ids at `base` (a cluster node's copy of a session picks a
    /// random base, so that two nodes never send the client the same id).
    pub fn set_request_id_base(&self, base: i64) {
        self.next_id.store(base, Ordering::Relaxed);
    }

    /// Whether a request this session sent to the client awaits answer `id`.
    pub fn is_pending(&self, id: &RequestId) -> bool {
        self.extras.get().is_some_and(|e| e.pending.lock().unwrap().contains_key(id))
    }

    /// The client said its roots changed: the listed ones are stale.
    pub fn roots_changed(&self) {
        self.roots_generation.fetch_add(1, Ordering::AcqRel);
        if let Some(extras) = self.extras.get() {
            *extras.roots.lock().unwrap() = None;
        }
    }

    /// The roots listed since the last change, if any, and the generation to ask in otherwise.
    pub(crate) fn cached_roots(&self) -> Result<Arc<ListRootsResult>, u64> {
        let generation = self.roots_generation.load(Ordering::Acquire);
        let Some(extras) = self.extras.get() else { return Err(generation) };
        match &*extras.roots.lock().unwrap() {
            Some((asked_in, roots)) if *asked_in == generation => Ok(roots.clone()),
            _ => Err(generation),
        }
    }

    /// Keeps roots listed in `generation`, unless a change came in since.
    pub(crate) fn keep_roots(&self, generation: u64, roots: Arc<ListRootsResult>) {
        let mut cached = self.extras().roots.lock().unwrap();
        if self.roots_generation.load(Ordering::Acquire) == generation {
            *cached = Some((generation, roots));
        }
    }

    /// Every subscribed URI.
    pub fn subscriptions(&self) -> Vec<String> {
        self.extras.get().map_or_else(Vec::new, |e| e.subscriptions.lock().unwrap().iter().cloned().collect())
    }

    /// Replaces the subscriptions (a copy of a session brought up to date by another node's).
    pub fn set_subscriptions(&self, uris: impl IntoIterator<Item = String>) {
        let uris: HashSet<String> = uris.into_iter().collect();
        if !uris.is_empty() || self.extras.get().is_some() {
            *self.extras().subscriptions.lock().unwrap() = uris;
        }
    }

    /// Whether the client subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.extras.get().is_some_and(|e| e.subscriptions.lock().unwrap().contains(uri))
    }

    /// Sends a request to the client on `outbox` and waits for its answer.
    pub async fn request(&self, outbox: &Outbox, method: &str, params: Value) -> Result<Value, ErrorObject> {
        let id = RequestId::String(format!("s-{}", self.next_id.fetch_add(1, Ordering::Relaxed)));
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.extras().pending.lock().unwrap();
            if pending.len() >= MAX_PENDING {
                return Err(ErrorObject::internal("too many requests to the client are waiting for an answer"));
            }
            pending.insert(id.clone(), tx);
        }
        let guard = PendingGuard { session: self, id: id.clone() };
        let message = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if !outbox.send(&message).await {
            return Err(ErrorObject::internal("the connection to the client is closed"));
        }
        let answer = rx.await.unwrap_or_else(|_| Err(ErrorObject::internal("the connection to the client closed")));
        drop(guard);
        answer
    }

    /// Routes a response from the client to the request waiting for it; `false` if none was.
    pub fn resolve(&self, id: &RequestId, answer: Result<Value, ErrorObject>) -> bool {
        let waiter = self.extras.get().and_then(|e| e.pending.lock().unwrap().remove(id));
        match waiter {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// Fails every request still waiting for the client (the connection ended).
    pub fn fail_pending(&self) {
        if let Some(extras) = self.extras.get() {
            extras.pending.lock().unwrap().clear();
        }
    }
}

/// Removes a pending entry when its request is dropped (cancelled) before an answer came.
struct PendingGuard<'a> {
    session: &'a Session,
    id: RequestId,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.session.extras().pending.lock().unwrap().remove(&self.id);
    }
}

fn level_from_u8(n: u8) -> Option<LoggingLevel> {
    use LoggingLevel::*;
    [Debug, Info, Notice, Warning, Error, Critical, Alert, Emergency].get(n as usize).copied()
}
