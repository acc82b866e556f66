//! Legacy Streamable HTTP sessions (2025-03-26 to 2025-11-25): the table, bounded, with an idle
//! reaper, and what each session keeps (its GET stream, its in-flight requests, its resumable
//! streams).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::events::EventStream;
use crate::engine::inflight::InFlight;
use crate::engine::outbox::OutboxReceiver;
use crate::engine::session::Session;

/// Streams kept for resumption per session.
const MAX_STREAMS: usize = 32;

/// One session.
pub(crate) struct HttpSession {
    /// Shared with the table's key.
    pub id: Arc<str>,
    pub session: Arc<Session>,
    /// Messages for the GET stream; a GET holds the lock while open (in a cluster, the relay
    /// to other nodes holds it otherwise).
    pub get_rx: Arc<tokio::sync::Mutex<OutboxReceiver>>,
    /// Tells the relay to give the queue up: a GET stream opens here (clusters only: made when
    /// the relay starts).
    pub get_wanted: std::sync::OnceLock<Arc<tokio::sync::Notify>>,
    pub inflight: Mutex<InFlight>,
    pub streams: Mutex<Vec<(u64, Arc<EventStream>)>>,
    next_stream: AtomicU64,
    last_active: AtomicU64,
    pub get_open: AtomicBool,
    /// The account of the caller that created it (with authentication on): only it may use it.
    owner: Option<String>,
    /// The revision of the shared record this copy matches (clusters only).
    pub rev: AtomicU64,
    /// Its lifetime, recorded (`mcp.server.session.duration`) when it ends.
    #[cfg(feature = "otel")]
    _clock: crate::telemetry::Session,
}

impl Drop for HttpSession {
    fn drop(&mut self) {
        self.inflight.lock().unwrap().cancel_all();
        self.session.fail_pending();
    }
}

impl HttpSession {
    /// Nothing in flight and no open GET stream: ending it interrupts nothing.
    fn is_idle(&self) -> bool {
        !self.get_open.load(Ordering::Relaxed) && self.inflight.lock().unwrap().is_empty()
    }

    /// Registers a new resumable stream; returns its number.
    pub fn add_stream(&self, stream: Arc<EventStream>) -> u64 {
        let n = self.next_stream.fetch_add(1, Ordering::Relaxed) + 1;
        self.add_stream_numbered(n, stream);
        n
    }

    /// Registers a resumable stream under a number chosen elsewhere (unique in a cluster).
    pub fn add_stream_numbered(&self, n: u64, stream: Arc<EventStream>) {
        let mut streams = self.streams.lock().unwrap();
        if streams.len() >= MAX_STREAMS {
            streams.remove(0);
        }
        streams.push((n, stream));
    }

    /// The record other nodes rebuild this session from.
    pub fn record(&self) -> super::directory::SessionRecord {
        super::directory::SessionRecord {
            version: self.session.version.to_string(),
            capabilities: (*self.session.client_capabilities).clone(),
            client_info: (*self.session.client_info).clone(),
            owner: self.owner.clone(),
            log_level: self.session.log_level(),
            subscriptions: self.session.subscriptions(),
        }
    }

    /// Brings this copy in line with the shared `record` of revision `rev` (clusters).
    pub fn adopt(&self, rev: u64, record: super::directory::SessionRecord) {
        if let Some(level) = record.log_level {
            self.session.set_log_level(level);
        }
        self.session.set_subscriptions(record.subscriptions);
        self.rev.store(rev, Ordering::Relaxed);
    }

    /// A stream by number, for `Last-Event-ID`.
    pub fn stream(&self, n: u64) -> Option<Arc<EventStream>> {
        self.streams.lock().unwrap().iter().find(|(k, _)| *k == n).map(|(_, s)| s.clone())
    }
}

/// The session table.
pub(crate) struct SessionTable {
    map: Mutex<HashMap<Arc<str>, Arc<HttpSession>>>,
    max: usize,
    idle: Duration,
    epoch: Instant,
}

impl SessionTable {
    pub fn new(max: usize, idle: Duration) -> Self {
        SessionTable { map: Mutex::new(HashMap::new()), max, idle, epoch: Instant::now() }
    }

    /// Microseconds since the table was made: fine enough that sessions touched one request
    /// apart never tie when the least recently active is chosen.
    fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    /// Adds a session. When the table is full, the least recently active idle session (nothing
    /// in flight, no open GET stream) is ended to make room: its client gets 404 on its next
    /// request and initializes again, as the spec says. `Ok(None)` only when every session is
    /// busy; `Err` when no unguessable id can be made.
    pub fn insert(
        &self,
        session: Arc<Session>,
        get_rx: OutboxReceiver,
        owner: Option<String>,
    ) -> Result<Option<Arc<HttpSession>>, crate::util::random::Unavailable> {
        Ok(self.insert_with_id(new_session_id()?, session, get_rx, owner))
    }

    /// Adds a session under a known id (a copy of one another node created).
    pub fn insert_with_id(
        &self,
        id: String,
        session: Arc<Session>,
        get_rx: OutboxReceiver,
        owner: Option<String>,
    ) -> Option<Arc<HttpSession>> {
        let id: Arc<str> = id.into();
        let mut map = self.map.lock().unwrap();
        if map.len() >= self.max && !map.contains_key(&id) {
            let victim = map
                .values()
                .filter(|s| s.is_idle())
                .min_by_key(|s| s.last_active.load(Ordering::Relaxed))
                .map(|s| s.id.clone())?;
            tracing::debug!("session table full: ended the least recently active idle session");
            map.remove(&victim);
        }
        #[cfg(feature = "otel")]
        let clock =
            crate::telemetry::Session::server(&session.version, &crate::telemetry::Transport::http("1.1", None));
        let entry = Arc::new(HttpSession {
            id: id.clone(),
            session,
            get_rx: Arc::new(tokio::sync::Mutex::new(get_rx)),
            get_wanted: std::sync::OnceLock::new(),
            inflight: Mutex::new(InFlight::default()),
            streams: Mutex::new(Vec::new()),
            next_stream: AtomicU64::new(0),
            last_active: AtomicU64::new(self.now_us()),
            get_open: AtomicBool::new(false),
            #[cfg(feature = "otel")]
            _clock: clock,
            owner,
            rev: AtomicU64::new(0),
        });
        map.insert(id, entry.clone());
        Some(entry)
    }

    /// This node's copy of `id`, if any, untouched (for messages from other nodes).
    pub fn peek(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.map.lock().unwrap().get(id).cloned()
    }

    /// Drops this node's copy of a session that ended elsewhere.
    pub fn forget(&self, id: &str) {
        self.map.lock().unwrap().remove(id);
    }

    /// The session `id`, marked active, if `caller` (an account, with authentication on) is the
    /// one that created it: a session is never a credential, and another caller holding its id
    /// is told it does not exist.
    pub fn get(&self, id: &str, caller: Option<&str>) -> Option<Arc<HttpSession>> {
        let entry = self.map.lock().unwrap().get(id).cloned()?;
        if entry.owner.as_deref() != caller {
            tracing::warn!("refused a request on a session that another caller created");
            return None;
        }
        entry.last_active.store(self.now_us(), Ordering::Relaxed);
        Some(entry)
    }

    /// Ends a session (if `caller` created it); `false` if there was none.
    pub fn remove(&self, id: &str, caller: Option<&str>) -> bool {
        let mut map = self.map.lock().unwrap();
        if map.get(id).is_none_or(|s| s.owner.as_deref() != caller) {
            return false;
        }
        map.remove(id).is_some()
    }

    /// How many sessions are live.
    pub fn len(&self) -> usize {
        self.map.lock().unwrap().len()
    }

    /// Drops sessions idle for longer than the timeout (an open GET stream counts as activity).
    pub fn reap(&self) -> usize {
        let now = self.now_us();
        let idle = self.idle.as_micros() as u64;
        let mut map = self.map.lock().unwrap();
        let before = map.len();
        map.retain(|_, s| {
            s.get_open.load(Ordering::Relaxed) || now.saturating_sub(s.last_active.load(Ordering::Relaxed)) < idle
        });
        let reaped = before - map.len();
        if map.capacity() > 64 && map.len() < map.capacity() / 4 {
            map.shrink_to_fit();
        }
        reaped
    }

    /// Runs the reaper until the table is dropped.
    pub fn spawn_reaper(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let period = (self.idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                let Some(table) = weak.upgrade() else { return };
                let n = table.reap();
                if n > 0 {
                    tracing::debug!("reaped {n} idle sessions");
                    crate::engine::memory::release_freed_memory();
                }
            }
        });
    }
}

/// 128 random bits, hex: unguessable and visible ASCII.
fn new_session_id() -> Result<String, crate::util::random::Unavailable> {
    crate::util::random::hex(16)
}
