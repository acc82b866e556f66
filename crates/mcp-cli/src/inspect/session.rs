//! The inspector's connection to the server, and what the page learns from it: one bounded
//! journal of events (every JSON-RPC message both ways, notifications, progress, questions the
//! server asks), read by the page with long polls; the questions parked until the person answers
//! them on the page; the calls in flight, which the page can cancel.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcp::client::{Client, ClientOptions, Direction, Handler, Handlers};
use mcp::types::elicitation::{ElicitParams, ElicitResult};
use mcp::types::roots::{ListRootsResult, Root};
use mcp::types::sampling::{CreateMessageParams, CreateMessageResult};
use serde_json::{json, Value};
use tokio::sync::{oneshot, Notify};

use crate::target::Target;

/// Events kept for the page; older ones are dropped (the page is told how many it missed).
const JOURNAL_CAP: usize = 5000;
/// A message larger than this is journaled cut, with its size (a 50 MB blob would otherwise be
/// kept 5000 times over).
const MESSAGE_CAP: usize = 256 * 1024;
/// How long a question waits for the person before it is declined.
const QUESTION_TIMEOUT: Duration = Duration::from_secs(600);

/// The journal: numbered events, the newest `JOURNAL_CAP`.
#[derive(Default)]
struct Journal {
    next: u64,
    events: VecDeque<Value>,
}

/// Everything the web server shares.
pub struct Session {
    target: Target,
    options: Mutex<ClientOptions>,
    client: tokio::sync::RwLock<Option<Client>>,
    journal: Mutex<Journal>,
    wake: Notify,
    questions: Mutex<HashMap<u64, oneshot::Sender<Value>>>,
    calls: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    roots: Mutex<Vec<Root>>,
    started: Instant,
    next_question: std::sync::atomic::AtomicU64,
    /// The resources the page subscribed to (sent again on each `subscriptions/listen`).
    watched: Mutex<BTreeSet<String>>,
    relisten: Notify,
    listener: Mutex<Option<tokio::task::AbortHandle>>,
    /// An HTTP server's authorization (the OAuth tab), if the target is HTTP.
    pub auth: Option<super::auth::Authorization>,
    /// Frames handed out for `ui://` apps: a one-time id to the HTML and its CSP.
    pub frames: Mutex<HashMap<String, (String, String)>>,
}

impl Session {
    /// A session for `target`; call [`Session::connect`] next.
    pub fn new(
        target: Target,
        options: ClientOptions,
        roots: Vec<Root>,
        auth: Option<super::auth::Authorization>,
    ) -> Arc<Session> {
        Arc::new(Session {
            auth,
            target,
            options: Mutex::new(options),
            client: tokio::sync::RwLock::new(None),
            journal: Mutex::new(Journal::default()),
            wake: Notify::new(),
            questions: Mutex::new(HashMap::new()),
            calls: Mutex::new(HashMap::new()),
            roots: Mutex::new(roots),
            started: Instant::now(),
            next_question: std::sync::atomic::AtomicU64::new(1),
            frames: Mutex::new(HashMap::new()),
            watched: Mutex::new(BTreeSet::new()),
            relisten: Notify::new(),
            listener: Mutex::new(None),
        })
    }

    /// Milliseconds since the inspector started (the traffic's clock).
    fn now_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }

    /// Adds an event to the journal and wakes the page's poll.
    pub fn record(&self, kind: &str, mut event: Value) {
        if let Value::Object(map) = &mut event {
            map.insert("kind".into(), kind.into());
            map.insert("at".into(), json!(self.now_ms()));
        }
        let mut journal = self.journal.lock().unwrap();
        if let Value::Object(map) = &mut event {
            map.insert("seq".into(), json!(journal.next));
        }
        journal.next += 1;
        journal.events.push_back(event);
        while journal.events.len() > JOURNAL_CAP {
            journal.events.pop_front();
        }
        drop(journal);
        self.wake.notify_waiters();
    }

    /// The events after `after` (all kept ones for `None`), waiting up to `wait` for one.
    pub async fn events(&self, after: Option<u64>, wait: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.wake.notified();
            {
                let journal = self.journal.lock().unwrap();
                let first = journal.events.front().and_then(|e| e["seq"].as_u64()).unwrap_or(journal.next);
                let from = after.map_or(first, |a| a + 1);
                if from < journal.next || tokio::time::Instant::now() >= deadline {
                    let events: Vec<&Value> =
                        journal.events.iter().filter(|e| e["seq"].as_u64().is_some_and(|s| s >= from)).collect();
                    return json!({"events": events, "missed": first.saturating_sub(from), "next": journal.next});
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                continue; // one last look, then the (empty) answer
            }
        }
    }

    /// Every journaled message, and each HTTP exchange's head, one JSON object per line (the
    /// traffic export).
    pub fn traffic_lines(&self) -> String {
        let journal = self.journal.lock().unwrap();
        let mut out = String::new();
        for event in journal.events.iter().filter(|e| e["kind"] == "traffic" || e["kind"] == "http") {
            out.push_str(&event.to_string());
            out.push('\n');
        }
        out
    }

    /// (Re)connects, replacing the connection there was.
    pub async fn connect(self: &Arc<Session>) -> Result<Value, String> {
        if let Some(old) = self.client.write().await.take() {
            old.close().await;
        }
        let options = self.client_options();
        self.record("status", json!({"text": format!("connecting to {}", self.target.describe())}));
        let started = Instant::now();
        match self.target.connect(options, None).await {
            Ok(client) => {
                let ms = started.elapsed().as_millis();
                if client.description().modern {
                    let listening = tokio::spawn(listen(Arc::downgrade(self), client.clone()));
                    if let Some(old) = self.listener.lock().unwrap().replace(listening.abort_handle()) {
                        old.abort();
                    }
                }
                *self.client.write().await = Some(client);
                let server = self.server().await?;
                self.record("status", json!({"text": format!("connected in {ms} ms"), "connected": true}));
                Ok(server)
            }
            Err(e) => {
                let text = e.to_string();
                self.record("status", json!({"text": format!("could not connect: {text}"), "connected": false}));
                Err(text)
            }
        }
    }

    /// The client options with this session's tracer, notification sink and handlers.
    fn client_options(self: &Arc<Session>) -> ClientOptions {
        let mut options = self.options.lock().unwrap().clone();
        let me = Arc::downgrade(self);
        options.tracer = Some(Arc::new(move |direction: Direction, message: &Value| {
            if let Some(session) = me.upgrade() {
                let dir = if direction == Direction::Out { "out" } else { "in" };
                session.record("traffic", json!({"dir": dir, "message": capped(message)}));
            }
        }));
        let me = Arc::downgrade(self);
        options.http_tracer = Some(Arc::new(move |x: &mcp::client::HttpExchange| {
            if let Some(session) = me.upgrade() {
                let message = x.message.as_ref();
                session.record(
                    "http",
                    json!({
                        "dir": "http", "method": x.method, "url": x.url, "status": x.status,
                        "id": message.and_then(|m| m.get("id")).cloned(),
                        "rpcMethod": message.and_then(|m| m.get("method")).cloned(),
                        "requestHeaders": x.request_headers, "responseHeaders": x.response_headers,
                    }),
                );
            }
        }));
        let me = Arc::downgrade(self);
        options.on_notification = Some(Arc::new(move |method: &str, params: &Value| {
            if let Some(session) = me.upgrade() {
                session.record("notification", json!({"method": method, "params": capped(params)}));
            }
        }));
        options.handlers = self.handlers();
        options
    }

    /// Elicitation and sampling asked of the person on the page; roots as the page chose them.
    fn handlers(self: &Arc<Session>) -> Handlers {
        let me = Arc::downgrade(self);
        let elicitation: Handler<ElicitParams, ElicitResult> = Arc::new(move |params: ElicitParams| {
            let me = me.clone();
            Box::pin(async move {
                let session = me.upgrade().ok_or("the inspector closed")?;
                let answer = session.ask("elicitation", serde_json::to_value(&params).unwrap_or_default()).await;
                serde_json::from_value(answer)
                    .map_err(|e| format!("the page's answer is not an elicitation result: {e}"))
            }) as mcp::server::BoxFuture<_>
        });
        let me = Arc::downgrade(self);
        let sampling: Handler<CreateMessageParams, CreateMessageResult> =
            Arc::new(move |params: CreateMessageParams| {
                let me = me.clone();
                Box::pin(async move {
                    let session = me.upgrade().ok_or("the inspector closed")?;
                    let answer = session.ask("sampling", serde_json::to_value(&params).unwrap_or_default()).await;
                    if answer.get("action").and_then(Value::as_str) == Some("decline") {
                        return Err("the person declined the sampling request".into());
                    }
                    serde_json::from_value(answer)
                        .map_err(|e| format!("the page's answer is not a sampling result: {e}"))
                }) as mcp::server::BoxFuture<_>
            });
        let me = Arc::downgrade(self);
        let roots: Handler<(), ListRootsResult> = Arc::new(move |()| {
            let roots = me.upgrade().map(|s| s.roots.lock().unwrap().clone()).unwrap_or_default();
            Box::pin(async move { Ok(ListRootsResult { roots, ..Default::default() }) }) as mcp::server::BoxFuture<_>
        });
        Handlers { elicitation: Some(elicitation), sampling: Some(sampling), roots: Some(roots) }
    }

    /// Puts a question on the page and waits for the answer (declined after ten minutes).
    async fn ask(&self, kind: &str, params: Value) -> Value {
        let id = self.next_question.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.questions.lock().unwrap().insert(id, tx);
        self.record("question", json!({"id": id, "type": kind, "params": params}));
        let answer = match tokio::time::timeout(QUESTION_TIMEOUT, rx).await {
            Ok(Ok(answer)) => answer,
            _ => json!({"action": "decline"}),
        };
        self.questions.lock().unwrap().remove(&id);
        self.record("answered", json!({"id": id}));
        answer
    }

    /// The person's answer to question `id`; false if no such question waits.
    pub fn answer(&self, id: u64, answer: Value) -> bool {
        match self.questions.lock().unwrap().remove(&id) {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// The current connection.
    async fn client(&self) -> Result<Client, String> {
        self.client.read().await.clone().ok_or_else(|| "not connected: press Reconnect".to_owned())
    }

    /// What the server said about itself, and its `server/discover` on a 2026-07-28 server.
    pub async fn server(&self) -> Result<Value, String> {
        let client = self.client().await?;
        let d = client.description();
        let discover = if d.modern { client.request("server/discover", json!({})).await.ok() } else { None };
        Ok(json!({
            "target": self.target.describe(),
            "transport": match self.target { Target::Stdio(_) => "stdio", Target::Http(..) => "http" },
            "era": if d.modern { "2026-07-28 (stateless)" } else { "legacy (initialize)" },
            "protocolVersion": d.protocol_version,
            "supportedVersions": d.supported_versions,
            "serverInfo": d.server_info,
            "capabilities": d.capabilities,
            "instructions": d.instructions,
            "discover": discover,
            "stderr": client.stderr(),
            "roots": *self.roots.lock().unwrap(),
        }))
    }

    /// One request from the page. `tools/call` is followed to its end when it becomes a task;
    /// progress goes to the journal under `call`; the page may cancel it by that name.
    pub async fn request(self: &Arc<Session>, method: String, params: Value, call: String) -> Value {
        let client = match self.client().await {
            Ok(client) => client,
            Err(e) => return json!({"error": {"message": e}}),
        };
        let me = Arc::downgrade(self);
        let tag = call.clone();
        let on_progress = move |p: mcp::types::utilities::ProgressParams| {
            if let Some(session) = me.upgrade() {
                session.record(
                    "progress",
                    json!({"call": tag, "progress": p.progress, "total": p.total, "message": p.message}),
                );
            }
        };
        let started = Instant::now();
        let work = tokio::spawn(async move {
            let answer = client.request_with_progress(&method, params, on_progress.clone()).await;
            match (method.as_str(), answer) {
                ("tools/call", Ok(answer)) => client
                    .finish_tool_call(answer, on_progress)
                    .await
                    .map(|r| serde_json::to_value(r).unwrap_or_default()),
                (_, answer) => answer,
            }
        });
        if !call.is_empty() {
            self.calls.lock().unwrap().insert(call.clone(), work.abort_handle());
        }
        let outcome = work.await;
        self.calls.lock().unwrap().remove(&call);
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        match outcome {
            Ok(Ok(result)) => json!({"result": result, "ms": ms}),
            Ok(Err(e)) => json!({"error": error_json(&e), "ms": ms}),
            Err(_) => {
                json!({"error": {"message": "cancelled: the server was sent notifications/cancelled"}, "cancelled": true, "ms": ms})
            }
        }
    }

    /// Cancels the call the page named `call` (dropping it sends `notifications/cancelled`).
    pub fn cancel(&self, call: &str) -> bool {
        match self.calls.lock().unwrap().remove(call) {
            Some(handle) => {
                handle.abort();
                true
            }
            None => false,
        }
    }

    /// The level from which the server's log messages come: `logging/setLevel` on a legacy
    /// connection; on a 2026-07-28 one the level rides in each request's `_meta`, so the
    /// connection is made again with it.
    pub async fn set_log_level(self: &Arc<Session>, level: mcp::types::logging::LoggingLevel) -> Result<(), String> {
        self.options.lock().unwrap().log_level = Some(level);
        let client = self.client().await?;
        if client.description().modern {
            return self.connect().await.map(|_| ());
        }
        client.request("logging/setLevel", json!({"level": level})).await.map(|_| ()).map_err(|e| e.to_string())
    }

    /// Replaces the roots offered to the server, and tells it they changed.
    pub async fn set_roots(&self, roots: Vec<Root>) -> Result<(), String> {
        *self.roots.lock().unwrap() = roots;
        let client = self.client().await?;
        if !client.description().modern {
            client.notify("notifications/roots/list_changed", json!({})).await.map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Follows the updates of `uri`: `resources/subscribe` on a legacy server, the URI added
    /// to the `subscriptions/listen` request of a 2026-07-28 one.
    pub async fn subscribe(&self, uri: String) -> Result<(), String> {
        let client = self.client().await?;
        if client.description().modern {
            self.watched.lock().unwrap().insert(uri);
            self.relisten.notify_one();
            return Ok(());
        }
        client.request("resources/subscribe", json!({"uri": uri})).await.map(|_| ()).map_err(|e| e.to_string())
    }

    /// Ends the connection (the child process is stopped).
    pub async fn close(&self) {
        if let Some(listening) = self.listener.lock().unwrap().take() {
            listening.abort();
        }
        for (_, tx) in self.questions.lock().unwrap().drain() {
            drop(tx);
        }
        if let Some(client) = self.client.write().await.take() {
            client.close().await;
        }
    }
}

/// A 2026-07-28 server sends list changes and resource updates only on an open
/// `subscriptions/listen` request: one stays open (sent again when it ends, or when the page
/// subscribes to another resource) for as long as the session and this connection live.
async fn listen(session: std::sync::Weak<Session>, client: Client) {
    loop {
        let Some(me) = session.upgrade() else { return };
        if client.is_closed() {
            return;
        }
        let uris: Vec<String> = me.watched.lock().unwrap().iter().cloned().collect();
        let params = json!({"notifications": {
            "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
            "resourceSubscriptions": uris,
        }});
        let listening = client.request("subscriptions/listen", params);
        tokio::select! {
            outcome = listening => {
                if outcome.is_err() {
                    drop(me);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            () = me.relisten.notified() => {}
        }
    }
}

/// A JSON-RPC error as the page shows it: code, message, data when the server sent them.
fn error_json(e: &mcp::Error) -> Value {
    match e.rpc() {
        Some(rpc) => serde_json::to_value(rpc).unwrap_or_else(|_| json!({"message": e.to_string()})),
        None => json!({"message": e.to_string()}),
    }
}

/// A message as journaled: whole, or cut to its first bytes when it is huge.
fn capped(message: &Value) -> Value {
    let text = message.to_string();
    if text.len() <= MESSAGE_CAP {
        return message.clone();
    }
    let mut end = MESSAGE_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    json!({"truncated": true, "bytes": text.len(), "start": &text[..end]})
}

/// Seconds since the epoch, for names of exported files.
pub fn epoch_seconds() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
