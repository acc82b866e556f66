//! One server behind the gateway: its connection (restarted with backoff when it ends), the
//! connections of its own that each caller gets, the downstream requests waiting on each (which
//! its questions and log messages are routed to: see [`super::callers`]), and its counters.
//!
//! Where an upstream can ask questions that belong to one caller (a legacy server: elicitation,
//! sampling, roots, all kept per connection), each caller gets a connection of its own: a child
//! process on stdio, a session on HTTP, keyed by the caller's legacy session or account, at
//! most [`MAX_CHILDREN`] per upstream (past it the least recently used idle one is ended, else
//! the caller shares the connection that lists, where questions are placed only when exact).
//! Children of sessions end with the session; an account's child after [`CHILD_IDLE`] unused.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use mcp::client::{Client, ClientOptions, Handler, Handlers, NotificationFn, Stderr};
use mcp::proxy::ProxyContext as _;
use mcp::server::{BoxFuture, RequestContext, ToolError};
use mcp::types::logging::LoggingLevel;
use mcp::types::ErrorObject;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, Notify};

pub use super::parked::{ParkedCalls, ProgressSink, Question, Starting};

/// The requests of an upstream waiting for a client's answer to the upstream's question.
type Parked = ParkedCalls<Value>;

use super::callers::{Callers, Owner};
use super::config::UpstreamConfig;
use super::metrics::Metrics;
use crate::target::Target;

/// The most connections of their own one upstream keeps for callers.
pub const MAX_CHILDREN: usize = 256;
/// An account's own connection ends after this long unused (a session's ends with the session).
pub const CHILD_IDLE: Duration = Duration::from_secs(600);

/// A caller's own connection.
struct Child {
    owner: Owner,
    upstream: Arc<Upstream>,
    last_used: Instant,
}

/// Ends, every second for as long as `upstream` lives, the children of sessions that ended and
/// of accounts idle too long.
async fn reap_children(upstream: Weak<Upstream>) {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let Some(upstream) = upstream.upgrade() else { return };
        let mut children = upstream.children.lock().unwrap();
        children.retain(|child| {
            let idle = child.upstream.callers.len() == 0 && child.last_used.elapsed() > CHILD_IDLE;
            let keep = child.owner.is_alive() && !idle;
            if !keep {
                child.upstream.stop();
            }
            keep
        });
        upstream.metrics.session_children.store(children.len() as u64, Ordering::Relaxed);
    }
}

/// What an upstream tells the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// It is connected (again): list everything anew.
    Connected(usize),
    /// Its tools, prompts or resources changed.
    Changed(usize),
    /// A connection attempt failed (it is tried again after a backoff).
    Failed(usize),
}

/// How the gateway reaches its upstreams: the client settings every connection starts from,
/// and the OAuth authorizer of each HTTP upstream.
#[derive(Clone)]
pub struct Connector {
    pub options: ClientOptions,
    pub authorize: Arc<Authorize>,
    /// The gateway serves one client (on stdio): every connection is that client's own.
    pub one_client: bool,
}

/// Makes the OAuth authorizer of an HTTP upstream from its entry's `oauth` settings.
pub type Authorize =
    dyn Fn(&crate::target::OAuthEntry) -> Result<Arc<dyn mcp::client::auth::Authorizer>, String> + Send + Sync;

/// One upstream.
pub struct Upstream {
    pub index: usize,
    pub config: UpstreamConfig,
    pub metrics: Arc<Metrics>,
    connector: Connector,
    /// For a caller's own connection: that caller.
    owner: Option<Owner>,
    /// The callers' own connections (on the connection that lists, which serves the callers
    /// that have none: anonymous 2026-07-28 requests, and those beyond the cap).
    children: Mutex<Vec<Child>>,
    /// Set when its session ended: it connects no more.
    stopped: AtomicBool,
    /// Woken after each connection attempt.
    attempted: Notify,
    /// The live connection and its generation (which failure reports name).
    client: RwLock<Option<(u64, Client)>>,
    generation: AtomicU64,
    last_error: Mutex<String>,
    /// Woken when the connection failed and the supervisor should connect again.
    broken: Notify,
    /// Downstream requests waiting on this connection, which its questions are for.
    callers: Callers,
    /// Tool calls waiting for a 2026-07-28 client's answer (it comes with the client's retry).
    parked: Parked,
    /// The URIs downstream clients are subscribed to (a 2026-07-28 upstream is told them in its
    /// `subscriptions/listen`, which starts again when they change).
    watched: Mutex<std::collections::BTreeSet<String>>,
    relisten: Notify,
    events: mpsc::UnboundedSender<Event>,
    /// The gateway's lists, told when a resource changes upstream.
    lists: mcp::server::Lists,
}

impl Upstream {
    pub fn new(
        index: usize,
        config: UpstreamConfig,
        connector: Connector,
        events: mpsc::UnboundedSender<Event>,
        lists: mcp::server::Lists,
    ) -> Arc<Upstream> {
        let upstream = Upstream::build(index, config, connector, events, lists, None, Arc::default());
        if upstream.splits() {
            tokio::spawn(reap_children(Arc::downgrade(&upstream)));
        }
        upstream
    }

    fn build(
        index: usize,
        config: UpstreamConfig,
        connector: Connector,
        events: mpsc::UnboundedSender<Event>,
        lists: mcp::server::Lists,
        owner: Option<Owner>,
        metrics: Arc<Metrics>,
    ) -> Arc<Upstream> {
        Arc::new(Upstream {
            index,
            config,
            metrics,
            connector,
            owner,
            children: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
            attempted: Notify::new(),
            client: RwLock::new(None),
            generation: AtomicU64::new(0),
            last_error: Mutex::new("not connected yet".into()),
            broken: Notify::new(),
            callers: Callers::default(),
            parked: Parked::default(),
            watched: Mutex::new(Default::default()),
            relisten: Notify::new(),
            events,
            lists,
        })
    }

    /// Whether callers get connections of their own: unless the entry says `shared`, the gateway
    /// has one client, or the upstream speaks 2026-07-28 over HTTP (its questions come back in
    /// the answer to the request they belong to, its log lines on that request's stream, and it
    /// keeps no state between requests). A stdio server of either era has one channel for every
    /// caller's log lines: each caller's own child tells them apart.
    fn splits(&self) -> bool {
        let modern = self.client.read().unwrap().as_ref().is_some_and(|(_, c)| c.description().modern);
        let modern_http = modern && matches!(self.config.target, Target::Http(..));
        self.owner.is_none() && !self.config.shared && !self.connector.one_client && !modern_http
    }

    /// Whether this connection serves one caller alone (its questions are that caller's).
    fn owned(&self) -> bool {
        self.owner.is_some() || self.connector.one_client
    }

    /// The connection that serves `cx`: its caller's own (made now for its first request),
    /// else this one.
    pub fn for_caller(self: &Arc<Self>, cx: &RequestContext) -> Arc<Upstream> {
        // Once stopped (the gateway is stopping), no caller gets a process of its own.
        if !self.splits() || self.stopped.load(Ordering::Relaxed) {
            return self.clone();
        }
        let Some(owner) = Owner::of(cx) else { return self.clone() };
        let mut children = self.children.lock().unwrap();
        if let Some(child) = children.iter_mut().find(|c| c.owner.same(&owner)) {
            child.last_used = Instant::now();
            return child.upstream.clone();
        }
        if children.len() >= MAX_CHILDREN {
            let idle = children
                .iter()
                .enumerate()
                .filter(|(_, c)| c.upstream.callers.len() == 0)
                .min_by_key(|(_, c)| c.last_used)
                .map(|(i, _)| i);
            let Some(idle) = idle else {
                tracing::warn!(
                    "upstream {:?}: {MAX_CHILDREN} callers have connections of their own, all busy; this one \
                     shares the gateway's",
                    self.config.key
                );
                return self.clone();
            };
            children.swap_remove(idle).upstream.stop();
        }
        let child = Upstream::build(
            self.index,
            self.config.clone(),
            self.connector.clone(),
            self.events.clone(),
            self.lists.clone(),
            Some(owner.clone()),
            self.metrics.clone(),
        );
        tokio::spawn(child.clone().supervise());
        children.push(Child { owner, upstream: child.clone(), last_used: Instant::now() });
        self.metrics.session_children.store(children.len() as u64, Ordering::Relaxed);
        child
    }

    /// Ends a caller's own connection: it is not connected again, and its process ends with its
    /// last request.
    fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        *self.client.write().unwrap() = None;
        self.broken.notify_one();
        self.relisten.notify_one(); // the listen request holds the connection: it ends too
    }

    /// Ends every connection of this upstream (the callers' own too) as the stdio lifecycle says:
    /// stdin closed, a moment for the process to exit on its own (and send what it still holds:
    /// its last spans, its logs), then killed. Nothing is connected again.
    pub fn shut_down(&self) -> futures_util::future::BoxFuture<'_, ()> {
        let children: Vec<Arc<Upstream>> =
            self.children.lock().unwrap().drain(..).map(|child| child.upstream).collect();
        let client = {
            let mut slot = self.client.write().unwrap();
            self.stopped.store(true, Ordering::Relaxed);
            slot.take().map(|(_, client)| client)
        };
        self.broken.notify_one();
        self.relisten.notify_one();
        // A caller's own connection is an upstream too: the future is boxed, as it recurses.
        Box::pin(async move {
            let closing = futures_util::future::join_all(client.into_iter().map(Client::close));
            let children = futures_util::future::join_all(children.iter().map(|child| child.shut_down()));
            futures_util::future::join(closing, children).await;
        })
    }

    /// The live connection; when there is none, the next connection attempt is waited for (a
    /// session's child being started: up to 30 s; an upstream being started again: up to 5 s),
    /// so that a restart is all but invisible to the calls that follow it.
    pub async fn ready_client(&self) -> Result<(u64, Client), String> {
        if !self.is_up() && !self.stopped.load(Ordering::Relaxed) {
            let wait = if self.owner.is_some() { Duration::from_secs(30) } else { Duration::from_secs(5) };
            let deadline = tokio::time::Instant::now() + wait;
            while !self.is_up() && tokio::time::Instant::now() < deadline {
                let attempted = self.attempted.notified();
                if self.is_up() {
                    break;
                }
                let _ = tokio::time::timeout_at(deadline, attempted).await;
            }
        }
        self.client()
    }

    /// The name the gateway's messages use for it.
    pub fn key(&self) -> &str {
        &self.config.key
    }

    /// Its requests waiting for a 2026-07-28 client's answer to its question.
    pub fn parked(&self) -> &Parked {
        &self.parked
    }

    /// Whether it is connected now.
    pub fn is_up(&self) -> bool {
        self.client.read().unwrap().as_ref().is_some_and(|(_, c)| !c.is_closed())
    }

    /// The live connection, or why there is none (for a tool result the model reads).
    pub fn client(&self) -> Result<(u64, Client), String> {
        if let Some((generation, client)) = self.client.read().unwrap().clone() {
            if !client.is_closed() {
                return Ok((generation, client));
            }
        }
        let why = self.last_error.lock().unwrap().clone();
        Err(format!(
            "the server {:?} behind the gateway is not connected ({why}); it is being started again: try again in a moment",
            self.config.key
        ))
    }

    /// Reports that connection `generation` failed: it is dropped and the supervisor connects again.
    pub fn failed(&self, generation: u64, why: &str) {
        let mut client = self.client.write().unwrap();
        if client.as_ref().is_some_and(|(g, _)| *g == generation) {
            *client = None;
            *self.last_error.lock().unwrap() = why.to_owned();
            if self.owner.is_none() {
                self.metrics.up.store(false, Ordering::Relaxed);
            }
            drop(client);
            tracing::warn!("upstream {:?} failed: {why}", self.config.key);
            self.broken.notify_one();
            self.relisten.notify_one();
        }
    }

    /// Keeps the upstream connected for as long as the gateway runs: connects, waits until the
    /// connection ends, and connects again after a backoff (250 ms doubling to 30 s, reset by a
    /// connection that lived a minute).
    pub async fn supervise(self: Arc<Self>) {
        let mut backoff = Duration::from_millis(250);
        let mut first = true;
        let listing = self.owner.is_none();
        while !self.stopped.load(Ordering::Relaxed) {
            let connected = self.connect().await;
            if self.stopped.load(Ordering::Relaxed) {
                return;
            }
            match connected {
                Ok(client) => {
                    let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
                    {
                        // Checked under the lock `shut_down` stops under: a connection made
                        // while the gateway stops is let go, not left running.
                        let mut slot = self.client.write().unwrap();
                        if self.stopped.load(Ordering::Relaxed) {
                            drop(slot);
                            client.close().await;
                            return;
                        }
                        *slot = Some((generation, client.clone()));
                    }
                    self.attempted.notify_waiters();
                    if listing {
                        self.metrics.up.store(true, Ordering::Relaxed);
                    }
                    if !first {
                        self.metrics.restarts.fetch_add(1, Ordering::Relaxed);
                    }
                    first = false;
                    if listing {
                        let _ = self.events.send(Event::Connected(self.index));
                    }
                    if client.description().modern {
                        tokio::spawn(self.clone().listen(generation, client.clone()));
                    }
                    let since = Instant::now();
                    self.watch(generation, &client).await;
                    drop(client);
                    if since.elapsed() > Duration::from_secs(60) {
                        backoff = Duration::from_millis(250);
                    }
                }
                Err(e) => {
                    let why = e.to_string();
                    tracing::warn!("upstream {:?}: cannot connect: {why}", self.config.key);
                    *self.last_error.lock().unwrap() = why;
                    self.attempted.notify_waiters();
                    if listing {
                        let _ = self.events.send(Event::Failed(self.index));
                    }
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(30));
        }
    }

    /// Returns when connection `generation` is over: reported failed, or closed (a child that
    /// exited is seen within 200 ms).
    async fn watch(&self, generation: u64, client: &Client) {
        loop {
            let current = self.client.read().unwrap().as_ref().map(|(g, _)| *g);
            if current != Some(generation) || self.stopped.load(Ordering::Relaxed) {
                return;
            }
            if client.is_closed() {
                self.failed(generation, "the connection closed");
                return;
            }
            let _ = tokio::time::timeout(Duration::from_millis(200), self.broken.notified()).await;
        }
    }

    /// A 2026-07-28 upstream sends list changes and resource updates only on a
    /// `subscriptions/listen` request: one stays open for as long as connection `generation`
    /// lives (sent again when it ends, or when the watched URIs change).
    async fn listen(self: Arc<Self>, generation: u64, client: Client) {
        loop {
            let current = self.client.read().unwrap().as_ref().map(|(g, _)| *g);
            if current != Some(generation) || client.is_closed() {
                return;
            }
            let uris: Vec<String> = self.watched.lock().unwrap().iter().cloned().collect();
            let params = serde_json::json!({"notifications": {
                "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
                "resourceSubscriptions": uris,
            }});
            tokio::select! {
                outcome = client.request("subscriptions/listen", params) => {
                    if let Err(e) = outcome {
                        tracing::debug!("upstream {:?}: subscriptions/listen ended: {e}", self.config.key);
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
                () = self.relisten.notified() => {}
            }
        }
    }

    /// Starts or stops passing on updates of `uri`: `resources/subscribe` to a legacy upstream,
    /// the URI added to the listen request of a 2026-07-28 one.
    pub fn watch_resource(&self, uri: &str, on: bool) {
        let Ok((_, client)) = self.client() else { return };
        if client.description().modern {
            let mut watched = self.watched.lock().unwrap();
            let changed = if on { watched.insert(uri.to_owned()) } else { watched.remove(uri) };
            drop(watched);
            if changed {
                self.relisten.notify_one();
            }
            return;
        }
        let method = if on { "resources/subscribe" } else { "resources/unsubscribe" };
        let (uri, key) = (uri.to_owned(), self.config.key.clone());
        tokio::spawn(async move {
            if let Err(e) = client.request(method, serde_json::json!({"uri": uri})).await {
                tracing::warn!("upstream {key:?}: {method} {uri:?}: {e}");
            }
        });
    }

    /// Connects, speaking the era remembered for this server (one probe per server, not per
    /// caller's child), and remembers the era it finds (forgotten when a connection with a
    /// remembered one fails).
    async fn connect(self: &Arc<Self>) -> Result<Client, mcp::Error> {
        let target = &self.config.target;
        let remembered = crate::eras::recall(target);
        let connected = self.connect_as(remembered.clone()).await;
        match &connected {
            Ok(client) => {
                let (client, target) = (client.clone(), target.clone());
                tokio::spawn(async move {
                    if let Ok(era) = client.era().await {
                        crate::eras::record(&target, &era);
                    }
                });
            }
            Err(_) if remembered.is_some() => crate::eras::forget(target),
            Err(_) => {}
        }
        connected
    }

    async fn connect_as(self: &Arc<Self>, era: Option<mcp::client::KnownEra>) -> Result<Client, mcp::Error> {
        let mut options = self.connector.options.clone();
        options.handlers = self.handlers();
        options.on_notification = Some(self.notification_handler());
        options.known_era = era;
        match &self.config.target {
            Target::Stdio(command) => {
                let mut command = command.clone();
                command.stderr = Stderr::Inherit;
                command.die_with_parent = true;
                Client::connect_stdio(command, options).await
            }
            Target::Http(url, headers, entry) => {
                options.headers.extend(headers.iter().cloned());
                let has_authorization = headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
                if !has_authorization {
                    options.auth = Some(
                        (self.connector.authorize)(entry).map_err(|e| mcp::Error::from(std::io::Error::other(e)))?,
                    );
                }
                Client::connect_http(url, options).await
            }
        }
    }

    /// Answers the upstream's questions by asking the downstream caller they are for (see
    /// [`Callers::find`]); roots only on a connection that is one caller's own.
    fn handlers(self: &Arc<Self>) -> Handlers {
        fn ask<P, R>(upstream: Weak<Upstream>, method: &'static str) -> Handler<P, R>
        where
            P: serde::Serialize + Send + 'static,
            R: serde::de::DeserializeOwned + Send + 'static,
        {
            Arc::new(move |params: P| {
                // Read now: the tag is the client's while it calls this handler.
                let tag = mcp::client::question_tag();
                let caller = upstream.upgrade().ok_or_else(|| "the gateway is stopping".to_owned()).and_then(|u| {
                    u.callers.find(tag, u.owned(), method).inspect_err(|why| {
                        tracing::warn!("upstream {:?}: its {method} went to nobody: {why}", u.config.key)
                    })
                });
                Box::pin(async move {
                    let (_, asker) = caller?;
                    let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
                    let (reply, answer) = oneshot::channel();
                    asker.try_send(Question { method, params, reply }).map_err(|e| match e {
                        mpsc::error::TrySendError::Full(_) => "too many questions are waiting for an answer",
                        mpsc::error::TrySendError::Closed(_) => "the client's request ended",
                    })?;
                    let answer = answer.await.map_err(|_| "the client's request ended before it answered")??;
                    serde_json::from_value(answer)
                        .map_err(|e| format!("the client's answer to {method} is malformed: {e}"))
                })
            })
        }
        let weak = Arc::downgrade(self);
        Handlers {
            elicitation: Some(ask(weak.clone(), "elicitation/create")),
            sampling: Some(ask(weak.clone(), "sampling/createMessage")),
            // A connection several callers share is not told anyone's roots.
            roots: self.owned().then(|| ask(weak, "roots/list")),
        }
    }

    /// List changes go to the catalog, resource updates to subscribed clients, log messages to
    /// the client waiting on the upstream (or the gateway's log).
    fn notification_handler(self: &Arc<Self>) -> NotificationFn {
        let weak = Arc::downgrade(self);
        Arc::new(move |method: &str, params: &Value| {
            let Some(upstream) = weak.upgrade() else { return };
            match method {
                // A session's child changes as the child that lists does: that one tells.
                "notifications/tools/list_changed"
                | "notifications/prompts/list_changed"
                | "notifications/resources/list_changed"
                    if upstream.owner.is_none() =>
                {
                    let _ = upstream.events.send(Event::Changed(upstream.index));
                }
                "notifications/resources/updated" => {
                    if let Some(uri) = params.get("uri").and_then(Value::as_str) {
                        upstream.lists.notify_resource_updated(uri);
                    }
                }
                "notifications/message" => upstream.forward_log(params),
                _ => {}
            }
        })
    }

    /// A log message goes to the caller whose request it came with, else to the gateway's log.
    fn forward_log(&self, params: &Value) {
        let level: LoggingLevel =
            params.get("level").and_then(|l| serde_json::from_value(l.clone()).ok()).unwrap_or(LoggingLevel::Info);
        let logger = params.get("logger").and_then(Value::as_str).map(str::to_owned);
        let data = params.get("data").cloned().unwrap_or(Value::Null);
        match self.callers.find_for_log(mcp::client::question_tag(), self.owned()) {
            Ok((cx, hold)) => {
                // Passed on in a task of its own (the client's reader must not wait on a
                // downstream client); the hold keeps the call's answer behind it.
                tokio::spawn(async move {
                    cx.log(level, logger.as_deref(), data).await;
                    drop(hold);
                });
            }
            Err(_) => tracing::info!("upstream {:?} logged ({level:?}): {data}", self.config.key),
        }
    }

    /// Forwards one request for downstream `cx`: its progress reported to `cx`, its
    /// cancellation passed on, its time counted, and the upstream's questions asked of `cx`'s
    /// client (a 2026-07-28 client answers with a retry: with `parked`, the upstream request
    /// waits for it there). A broken connection is reported so it is made again.
    pub async fn forward<T: Send + 'static>(
        &self,
        cx: &RequestContext,
        parked: Option<&ParkedCalls<T>>,
        request: impl FnOnce(Client, ProgressSink) -> BoxFuture<Result<T, mcp::Error>>,
    ) -> Result<T, ToolError> {
        let mut running = match parked.map(|p| p.resume(cx)).transpose()?.flatten() {
            Some(mut running) => {
                running.waiter = Some(self.callers.wait(cx, running.tag, running.asker.clone()));
                running
            }
            None => {
                // On the waiting list before anything is sent: a question may come at once (or
                // while a caller's own connection is being made).
                let starting = Starting::new();
                let waiting = self.callers.wait(cx, starting.tag, starting.asker.clone());
                let (generation, client) = self.ready_client().await.map_err(ToolError::new)?;
                let mut running = starting.start(generation, client, request);
                running.waiter = Some(waiting);
                running
            }
        };
        loop {
            tokio::select! {
                // Progress first: the upstream sent it before its answer.
                biased;
                Ok(()) = running.progress.changed() => {
                    let latest = running.progress.borrow_and_update().clone();
                    if let Some(p) = latest {
                        cx.progress(p.progress, p.total, p.message.as_deref()).await;
                    }
                }
                joined = &mut running.handle => {
                    // What came just before the answer is still passed on, before it.
                    if let Some(p) = running.fresh_progress() {
                        cx.progress(p.progress, p.total, p.message.as_deref()).await;
                    }
                    if let Some(waiter) = &running.waiter {
                        waiter.delivered().await;
                    }
                    let outcome = joined.unwrap_or_else(|e| Err(mcp::Error::from(std::io::Error::other(e))));
                    self.metrics.record(running.started.elapsed(), outcome.is_err());
                    return outcome.map_err(|e| self.error(running.generation, e));
                }
                Some(question) = running.questions.recv() => {
                    running.asked += 1;
                    let key = match running.key() {
                        Ok(key) => key,
                        Err(e) => {
                            let _ = question.reply.send(Err(e.to_string()));
                            continue;
                        }
                    };
                    match cx.ask_keyed(&key, question.method, question.params).await {
                        Err(e) if e.is_input_required() && parked.is_some() => {
                            running.waiting = Some((key, question.reply));
                            if let Some(waiter) = &running.waiter {
                                waiter.park();
                            }
                            if let Some(parked) = parked {
                                parked.park(running, cx);
                            }
                            return Err(e);
                        }
                        answer => {
                            let _ = question.reply.send(answer.map_err(|e| e.to_string()));
                        }
                    }
                }
                () = cx.cancelled() => {
                    running.handle.abort();
                    self.metrics.record(running.started.elapsed(), true);
                    return Err(ToolError::new("cancelled by the client"));
                }
            }
        }
    }

    /// Passes one request on as it is (a task's `tasks/get`, say), with a 2026-07-28 client's
    /// capabilities; the upstream's JSON-RPC error comes back as it is.
    pub async fn pass(&self, method: &str, mut params: Value, cx: &RequestContext) -> Result<Value, ErrorObject> {
        let (generation, client) = self.client().map_err(ErrorObject::internal)?;
        if let Some(capabilities) = super::rounds::client_capabilities(cx).filter(|_| client.description().modern) {
            super::rounds::insert_meta(&mut params, mcp::types::meta::CLIENT_CAPABILITIES, capabilities);
        }
        let started = Instant::now();
        let outcome = client.request_round(method, params, |_| {}).await;
        self.metrics.record(started.elapsed(), outcome.is_err());
        outcome.map_err(|e| match e.rpc() {
            Some(error) => error.clone(),
            None => {
                self.failed(generation, &e.to_string());
                ErrorObject::internal(format!(
                    "the server {:?} behind the gateway stopped answering ({e})",
                    self.config.key
                ))
            }
        })
    }

    /// An upstream's failure as the downstream client should see it: its JSON-RPC error as
    /// it is, else a message saying what happened and what to do.
    fn error(&self, generation: u64, e: mcp::Error) -> ToolError {
        if let Some(error) = e.rpc() {
            return ToolError::protocol(error.clone());
        }
        if e.is_auth_required() || e.is_auth_failed() {
            return ToolError::new(format!(
                "the gateway is not authorized to the server {:?} ({e}); its operator should run `mcp login` for it",
                self.config.key
            ));
        }
        self.failed(generation, &e.to_string());
        ToolError::new(format!(
            "the server {:?} behind the gateway stopped answering ({e}); it is being started again: try again in a moment",
            self.config.key
        ))
    }
}
