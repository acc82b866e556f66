//! One server behind the gateway: its connection (restarted with backoff when it ends), the
//! downstream requests waiting on it (which its questions and log messages are routed to), and
//! its counters.
//!
//! A server's questions (elicitation, sampling, roots) and log messages carry no link to the
//! request they belong to on stdio, so they go to the most recent downstream request still
//! waiting on that server: exact for one client at a time, a best guess when a `shared` child
//! serves several at once.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use mcp::client::{Client, ClientOptions, Handler, Handlers, NotificationFn, Stderr};
use mcp::server::{BoxFuture, RequestContext, SessionRef, ToolError};
use mcp::types::logging::LoggingLevel;
use mcp::types::utilities::ProgressParams;
use mcp::types::ErrorObject;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, Notify};

pub use super::parked::{Asker, ParkedCalls, Question, Running};

/// The requests of an upstream waiting for a client's answer to the upstream's question.
type Parked = ParkedCalls<Value>;

use super::config::UpstreamConfig;
use super::metrics::Metrics;
use crate::target::Target;

/// The most children one stdio upstream runs for sessions (past it, sessions share one).
const MAX_SESSION_CHILDREN: usize = 256;

/// Ends the children of sessions that ended, every second, for as long as `upstream` lives.
async fn reap_sessions(upstream: Weak<Upstream>) {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let Some(upstream) = upstream.upgrade() else { return };
        let mut sessions = upstream.sessions.lock().unwrap();
        sessions.retain(|(session, child)| {
            let alive = session.is_alive();
            if !alive {
                child.stop();
            }
            alive
        });
        upstream.metrics.session_children.store(sessions.len() as u64, Ordering::Relaxed);
    }
}

/// What an upstream tells the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// It is connected (again): list everything anew.
    Connected(usize),
    /// Its tools, prompts or resources changed.
    Changed(usize),
}

/// How the gateway reaches its upstreams: the client settings every connection starts from,
/// and the OAuth authorizer of each HTTP upstream.
#[derive(Clone)]
pub struct Connector {
    pub options: ClientOptions,
    pub authorize: Arc<Authorize>,
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
    /// For a child of one downstream session (a stdio upstream not `shared`): that session.
    session: Option<SessionRef>,
    /// The children of the sessions (on the upstream that lists, which serves 2026-07-28
    /// requests and those beyond the cap itself).
    sessions: Mutex<Vec<(SessionRef, Arc<Upstream>)>>,
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
    /// Downstream requests waiting on this upstream, oldest first, with where the upstream's
    /// questions for them go.
    callers: Mutex<Vec<(u64, RequestContext, Asker)>>,
    /// Tool calls waiting for a 2026-07-28 client's answer (it comes with the client's retry).
    parked: Parked,
    next_caller: AtomicU64,
    /// The URIs downstream clients are subscribed to (a 2026-07-28 upstream is told them in its
    /// `subscriptions/listen`, which starts again when they change).
    watched: Mutex<std::collections::BTreeSet<String>>,
    relisten: Notify,
    events: mpsc::UnboundedSender<Event>,
    router: mcp::Router,
}

/// Removes a caller from the waiting list when its request ends.
struct Waiting<'a> {
    upstream: &'a Upstream,
    id: u64,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.upstream.callers.lock().unwrap().retain(|(id, _, _)| *id != self.id);
    }
}

impl Upstream {
    pub fn new(
        index: usize,
        config: UpstreamConfig,
        connector: Connector,
        events: mpsc::UnboundedSender<Event>,
        router: mcp::Router,
    ) -> Arc<Upstream> {
        let upstream = Upstream::build(index, config, connector, events, router, None, Arc::default());
        if !upstream.config.shared && matches!(upstream.config.target, Target::Stdio(_)) {
            tokio::spawn(reap_sessions(Arc::downgrade(&upstream)));
        }
        upstream
    }

    fn build(
        index: usize,
        config: UpstreamConfig,
        connector: Connector,
        events: mpsc::UnboundedSender<Event>,
        router: mcp::Router,
        session: Option<SessionRef>,
        metrics: Arc<Metrics>,
    ) -> Arc<Upstream> {
        Arc::new(Upstream {
            index,
            config,
            metrics,
            connector,
            session,
            sessions: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
            attempted: Notify::new(),
            client: RwLock::new(None),
            generation: AtomicU64::new(0),
            last_error: Mutex::new("not connected yet".into()),
            broken: Notify::new(),
            callers: Mutex::new(Vec::new()),
            parked: Parked::default(),
            next_caller: AtomicU64::new(0),
            watched: Mutex::new(Default::default()),
            relisten: Notify::new(),
            events,
            router,
        })
    }

    /// The upstream that serves `cx`: for a legacy session's request to a stdio upstream that
    /// is not `shared`, the session's own child (started now for its first request, ended with
    /// the session); otherwise this one.
    pub fn for_caller(self: &Arc<Self>, cx: &RequestContext) -> Arc<Upstream> {
        let Some(session) = cx.session_ref() else { return self.clone() };
        if self.session.is_some() || self.config.shared || !matches!(self.config.target, Target::Stdio(_)) {
            return self.clone();
        }
        let mut sessions = self.sessions.lock().unwrap();
        if let Some((_, child)) = sessions.iter().find(|(s, _)| s.same(&session)) {
            return child.clone();
        }
        if sessions.len() >= MAX_SESSION_CHILDREN {
            tracing::warn!(
                "upstream {:?}: {MAX_SESSION_CHILDREN} session children already; sharing one",
                self.config.key
            );
            return self.clone();
        }
        let child = Upstream::build(
            self.index,
            self.config.clone(),
            self.connector.clone(),
            self.events.clone(),
            self.router.clone(),
            Some(session.clone()),
            self.metrics.clone(),
        );
        tokio::spawn(child.clone().supervise());
        sessions.push((session, child.clone()));
        self.metrics.session_children.store(sessions.len() as u64, Ordering::Relaxed);
        child
    }

    /// Ends a session's child: it is not connected again, and its process ends with its last
    /// request.
    fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        *self.client.write().unwrap() = None;
        self.broken.notify_one();
        self.relisten.notify_one(); // the listen request holds the connection: it ends too
    }

    /// The live connection; when there is none, the next connection attempt is waited for (a
    /// session's child being started: up to 30 s; an upstream being started again: up to 5 s),
    /// so that a restart is all but invisible to the calls that follow it.
    pub async fn ready_client(&self) -> Result<(u64, Client), String> {
        if !self.is_up() && !self.stopped.load(Ordering::Relaxed) {
            let wait = if self.session.is_some() { Duration::from_secs(30) } else { Duration::from_secs(5) };
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
            if self.session.is_none() {
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
        let listing = self.session.is_none();
        while !self.stopped.load(Ordering::Relaxed) {
            let connected = self.connect().await;
            if self.stopped.load(Ordering::Relaxed) {
                return;
            }
            match connected {
                Ok(client) => {
                    let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
                    *self.client.write().unwrap() = Some((generation, client.clone()));
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

    async fn connect(self: &Arc<Self>) -> Result<Client, mcp::Error> {
        let mut options = self.connector.options.clone();
        options.handlers = self.handlers();
        options.on_notification = Some(self.notification_handler());
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

    /// Marks `cx` as waiting on this upstream until the guard drops; the upstream's questions
    /// meanwhile go to `asker`.
    fn waiting(&self, cx: &RequestContext, asker: Asker) -> Waiting<'_> {
        let id = self.next_caller.fetch_add(1, Ordering::Relaxed);
        self.callers.lock().unwrap().push((id, cx.clone(), asker));
        Waiting { upstream: self, id }
    }

    /// The most recent downstream request still waiting on this upstream.
    fn current_caller(&self) -> Option<(RequestContext, Asker)> {
        self.callers.lock().unwrap().last().map(|(_, cx, asker)| (cx.clone(), asker.clone()))
    }

    /// Answers the upstream's questions by asking the downstream client that waits on it.
    fn handlers(self: &Arc<Self>) -> Handlers {
        fn ask<P, R>(upstream: Weak<Upstream>, method: &'static str) -> Handler<P, R>
        where
            P: serde::Serialize + Send + 'static,
            R: serde::de::DeserializeOwned + Send + 'static,
        {
            Arc::new(move |params: P| {
                let caller = upstream.upgrade().and_then(|u| u.current_caller());
                Box::pin(async move {
                    let (_, asker) = caller.ok_or("no client of the gateway is waiting on this server to answer it")?;
                    let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
                    let (reply, answer) = oneshot::channel();
                    asker.send(Question { method, params, reply }).map_err(|_| "the client's request ended")?;
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
            roots: Some(ask(weak, "roots/list")),
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
                    if upstream.session.is_none() =>
                {
                    let _ = upstream.events.send(Event::Changed(upstream.index));
                }
                "notifications/resources/updated" => {
                    if let Some(uri) = params.get("uri").and_then(Value::as_str) {
                        upstream.router.notify_resource_updated(uri);
                    }
                }
                "notifications/message" => upstream.forward_log(params),
                _ => {}
            }
        })
    }

    fn forward_log(&self, params: &Value) {
        let level: LoggingLevel =
            params.get("level").and_then(|l| serde_json::from_value(l.clone()).ok()).unwrap_or(LoggingLevel::Info);
        let logger = params.get("logger").and_then(Value::as_str).map(str::to_owned);
        let data = params.get("data").cloned().unwrap_or(Value::Null);
        match self.current_caller() {
            Some((cx, _)) => {
                tokio::spawn(async move { cx.log(level, logger.as_deref(), data).await });
            }
            None => tracing::info!("upstream {:?} logged ({level:?}): {data}", self.config.key),
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
        request: impl FnOnce(Client, mpsc::UnboundedSender<ProgressParams>) -> BoxFuture<Result<T, mcp::Error>>,
    ) -> Result<T, ToolError> {
        let mut running = match parked.map(|p| p.resume(cx)).transpose()?.flatten() {
            Some(running) => running,
            None => {
                let (generation, client) = self.ready_client().await.map_err(ToolError::new)?;
                Running::start(generation, client, request)
            }
        };
        let _waiting = self.waiting(cx, running.asker.clone());
        loop {
            tokio::select! {
                // Progress first: the upstream sent it before its answer.
                biased;
                Some(p) = running.progress.recv() => cx.progress(p.progress, p.total, p.message.as_deref()).await,
                joined = &mut running.handle => {
                    // What came just before the answer is still passed on, in order.
                    while let Ok(p) = running.progress.try_recv() {
                        cx.progress(p.progress, p.total, p.message.as_deref()).await;
                    }
                    let outcome = joined.unwrap_or_else(|e| Err(mcp::Error::from(std::io::Error::other(e))));
                    self.metrics.record(running.started.elapsed(), outcome.is_err());
                    return outcome.map_err(|e| self.error(running.generation, e));
                }
                Some(question) = running.questions.recv() => {
                    running.asked += 1;
                    let key = running.key();
                    match cx.ask_keyed(&key, question.method, question.params).await {
                        Err(e) if e.is_input_required() && parked.is_some() => {
                            running.waiting = Some((key, question.reply));
                            if let Some(parked) = parked {
                                parked.park(running);
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
