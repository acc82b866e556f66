//! The task manager: running tasks, their questions and cancellation, the per-account caps, and
//! the store their records go to.
//!
//! A running task has a [`LiveTask`] here (the freshest record, the token that cancels its work,
//! the answers it waits for); the store keeps the record for `tasks/get` from anywhere and after
//! the work is gone. Writes of one task's record are serialized, so the store never ends up
//! with an older state than the last one written.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use mcp_types::tasks::TaskStatus;
use mcp_types::{ErrorObject, JsonObject};
use serde_json::Value;
use tokio::sync::{broadcast, Notify};
// Tokio's clock, the one the work's timers run on (the same as std's, unless a test pauses it).
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::record::{now_ms, Outcome, TaskForm, TaskRecord};
use super::store::{Place, StoreError, TaskStore};
use super::TaskConfig;
use crate::engine::session::Session;

/// How often a running task's progress is written to the store (it is always fresh in memory).
const SAVE_PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// Running tasks, caps, and the store.
pub(crate) struct TaskManager {
    store: Arc<dyn TaskStore>,
    pub config: TaskConfig,
    live: Mutex<HashMap<String, Arc<LiveTask>>>,
    slots: Mutex<HashMap<String, usize>>,
    changes: broadcast::Sender<TaskRecord>,
}

/// A task whose work runs in this process.
pub(crate) struct LiveTask {
    pub id: String,
    pub owner: String,
    pub form: TaskForm,
    /// Cancels the work.
    pub cancel: CancellationToken,
    /// Legacy tasks: the session to tell of status changes.
    pub session: Option<Arc<Session>>,
    state: Mutex<LiveState>,
    answered: Notify,
    /// Serializes this task's store writes.
    saving: tokio::sync::Mutex<()>,
    manager: Weak<TaskManager>,
}

struct LiveState {
    record: TaskRecord,
    /// Answers received for the questions asked, by key.
    answers: JsonObject,
    slot: Option<Slot>,
    last_saved: Instant,
    started: Instant,
}

/// A reserved place under an account's cap; given back when dropped.
pub(crate) struct Slot {
    account: String,
    manager: Weak<TaskManager>,
    /// On a shared store: the place taken there, given back in the background.
    shared: Option<String>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let Some(manager) = self.manager.upgrade() else { return };
        {
            let mut slots = manager.slots.lock().unwrap();
            if let Some(n) = slots.get_mut(&self.account) {
                *n -= 1;
                if *n == 0 {
                    slots.remove(&self.account);
                }
            }
        }
        let (Some(place), Ok(runtime)) = (self.shared.take(), tokio::runtime::Handle::try_current()) else { return };
        let account = std::mem::take(&mut self.account);
        runtime.spawn(async move {
            if let Err(e) = manager.store.give_back(&account, &place).await {
                tracing::warn!("a task place was not given back (it lapses with this node): {e}");
            }
        });
    }
}

/// Why an account may not start another task now.
pub(crate) struct Busy {
    /// Tasks it has running.
    pub running: usize,
    /// Its cap.
    pub limit: usize,
    /// When one of them is expected to end.
    pub retry_after: Duration,
}

impl TaskManager {
    pub fn new(store: Arc<dyn TaskStore>, config: TaskConfig) -> Arc<Self> {
        let (changes, _) = broadcast::channel(256);
        let manager = Arc::new(TaskManager {
            store,
            config,
            live: Mutex::new(HashMap::new()),
            slots: Mutex::new(HashMap::new()),
            changes,
        });
        manager.spawn_sweeper();
        manager
    }

    /// Status changes of every task (for `notifications/tasks`).
    pub fn changes(&self) -> broadcast::Receiver<TaskRecord> {
        self.changes.subscribe()
    }

    /// Takes a place under `account`'s cap, or says why not: counted here, and on a shared
    /// store across every process. A shared store that cannot be reached does not stop the
    /// call (a task it would become reports the store's failure itself).
    pub async fn reserve(self: &Arc<Self>, account: &str) -> Result<Slot, Busy> {
        let limit = self.config.max_per_account;
        let mut slot = {
            let mut slots = self.slots.lock().unwrap();
            let running = slots.get(account).copied().unwrap_or(0);
            if running >= limit {
                drop(slots);
                return Err(Busy { running, limit, retry_after: self.soonest_end(account) });
            }
            slots.insert(account.to_owned(), running + 1);
            Slot { account: account.to_owned(), manager: Arc::downgrade(self), shared: None }
        };
        if !self.store.is_shared() {
            return Ok(slot);
        }
        let place = crate::server::tasks::record::new_id();
        match self.store.take_place(account, &place, limit).await {
            Ok(Place::Granted) => slot.shared = Some(place),
            Ok(Place::Full(running)) => {
                drop(slot);
                return Err(Busy { running, limit, retry_after: self.soonest_end(account) });
            }
            Err(e) => tracing::warn!("the account's cap is counted on this node only for now: {e}"),
        }
        Ok(slot)
    }

    /// When the first of `account`'s running tasks is expected to end, from their progress.
    fn soonest_end(&self, account: &str) -> Duration {
        let live: Vec<Arc<LiveTask>> =
            self.live.lock().unwrap().values().filter(|t| t.owner == account).cloned().collect();
        live.iter()
            .filter_map(|t| t.remaining())
            .min()
            .unwrap_or(Duration::from_millis(self.config.poll_interval.as_millis() as u64 * 5))
            .clamp(Duration::from_secs(1), Duration::from_secs(600))
    }

    /// A new live task (not yet in the store: see [`TaskManager::persist`]).
    #[allow(clippy::too_many_arguments)]
    pub fn prepare(
        self: &Arc<Self>,
        owner: &str,
        tool: &str,
        form: TaskForm,
        ttl: Option<Duration>,
        cancel: CancellationToken,
        slot: Slot,
        session: Option<Arc<Session>>,
    ) -> Arc<LiveTask> {
        let now = now_ms();
        let ttl = ttl.unwrap_or(self.config.ttl).min(self.config.max_ttl);
        let record = TaskRecord {
            id: super::record::new_id(),
            owner: owner.to_owned(),
            tool: tool.to_owned(),
            form,
            status: TaskStatus::Working,
            status_message: Some("started".into()),
            created_ms: now,
            updated_ms: now,
            ttl_ms: Some(ttl.as_millis() as u64),
            poll_interval_ms: self.config.poll_interval.as_millis() as u64,
            progress: None,
            input_requests: None,
            outcome: None,
        };
        Arc::new(LiveTask {
            id: record.id.clone(),
            owner: owner.to_owned(),
            form,
            cancel,
            session,
            state: Mutex::new(LiveState {
                record,
                answers: JsonObject::new(),
                slot: Some(slot),
                last_saved: Instant::now(),
                started: Instant::now(),
            }),
            answered: Notify::new(),
            saving: tokio::sync::Mutex::new(()),
            manager: Arc::downgrade(self),
        })
    }

    /// Stores a task that is over before it starts (a 2025-11-25 client asked for a task the
    /// cap did not allow: it gets one, failed, whose result is the explanation).
    pub async fn store_finished(
        &self,
        owner: &str,
        tool: &str,
        ttl: Option<Duration>,
        status: TaskStatus,
        outcome: Outcome,
    ) -> Result<TaskRecord, StoreError> {
        let now = now_ms();
        let ttl = ttl.unwrap_or(self.config.ttl).min(self.config.max_ttl);
        let record = TaskRecord {
            id: super::record::new_id(),
            owner: owner.to_owned(),
            tool: tool.to_owned(),
            form: TaskForm::Legacy,
            status,
            status_message: Some("not started: too many tasks running".into()),
            created_ms: now,
            updated_ms: now,
            ttl_ms: Some(ttl.as_millis() as u64),
            poll_interval_ms: 0,
            progress: None,
            input_requests: None,
            outcome: Some(outcome),
        };
        self.store.insert(record.clone()).await?;
        Ok(record)
    }

    /// Writes a prepared task to the store (durably) and starts tracking it.
    pub async fn persist(&self, task: &Arc<LiveTask>) -> Result<(), StoreError> {
        let record = task.snapshot();
        self.store.insert(record.clone()).await?;
        self.live.lock().unwrap().insert(task.id.clone(), task.clone());
        let _ = self.changes.send(record);
        Ok(())
    }

    /// The task `id` of `owner`: the live record when it runs here, else the stored one.
    pub async fn get(&self, id: &str, owner: &str) -> Result<Option<TaskRecord>, StoreError> {
        let live = self.live.lock().unwrap().get(id).cloned();
        let record = match live {
            Some(task) => Some(task.snapshot()),
            None => self.store.get(id).await?,
        };
        Ok(record.filter(|r| r.owner == owner))
    }

    /// The live task `id` of `owner`, if it runs here.
    pub fn live(&self, id: &str, owner: &str) -> Option<Arc<LiveTask>> {
        self.live.lock().unwrap().get(id).filter(|t| t.owner == owner).cloned()
    }

    /// `owner`'s tasks (of one tool), oldest first, after `cursor`.
    pub async fn list(
        &self,
        owner: &str,
        tool: Option<&str>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let mut records = self.store.list(owner, tool, cursor, limit).await?;
        let live = self.live.lock().unwrap();
        for record in &mut records {
            if let Some(task) = live.get(&record.id) {
                *record = task.snapshot();
            }
        }
        Ok(records)
    }

    /// Cancels `owner`'s task `id`: its slot is free at once, its work is told to stop, and it
    /// reads `cancelled` from now on. `Ok(None)` when there is no such task.
    pub async fn cancel(&self, id: &str, owner: &str) -> Result<Option<TaskRecord>, StoreError> {
        if let Some(task) = self.live(id, owner) {
            task.end(TaskStatus::Cancelled, Some("cancelled at the client's request".into()), None).await;
            return Ok(Some(task.snapshot()));
        }
        let Some(mut record) = self.store.get(id).await?.filter(|r| r.owner == owner) else { return Ok(None) };
        if !record.status.is_terminal() {
            // Its work runs elsewhere (or its process is gone): the record says cancelled.
            record.status = TaskStatus::Cancelled;
            record.status_message = Some("cancelled at the client's request".into());
            record.input_requests = None;
            record.updated_ms = now_ms();
            self.store.put(record.clone()).await?;
            let _ = self.changes.send(record.clone());
        }
        Ok(Some(record))
    }

    /// Marks tasks left unfinished by an earlier process as failed (durable stores).
    pub async fn recover(&self) -> Result<usize, StoreError> {
        self.store.recover("the server stopped while this task was running; its work is lost: start it again").await
    }

    fn forget(&self, id: &str) {
        self.live.lock().unwrap().remove(id);
    }

    /// Deletes expired tasks now and then, while the manager lives.
    fn spawn_sweeper(self: &Arc<Self>) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
        let weak = Arc::downgrade(self);
        let period = (self.config.ttl / 10).clamp(Duration::from_secs(1), Duration::from_secs(60));
        handle.spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                let Some(manager) = weak.upgrade() else { return };
                if let Err(e) = manager.store.sweep(now_ms(), manager.config.keep).await {
                    tracing::warn!("{e}");
                }
            }
        });
    }
}

impl LiveTask {
    /// The current record.
    pub fn snapshot(&self) -> TaskRecord {
        self.state.lock().unwrap().record.clone()
    }

    /// When the task should end, from its progress rate so far.
    fn remaining(&self) -> Option<Duration> {
        let state = self.state.lock().unwrap();
        let (done, total) = state.record.progress?;
        let total = total?;
        if done <= 0.0 || total <= done {
            return None;
        }
        let elapsed = state.started.elapsed().as_secs_f64();
        Some(Duration::from_secs_f64(elapsed * (total - done) / done))
    }

    fn manager(&self) -> Option<Arc<TaskManager>> {
        self.manager.upgrade()
    }

    /// Writes the current record to the store (serialized with this task's other writes), and
    /// tells listeners when `announce`.
    async fn save(&self, announce: bool) {
        let Some(manager) = self.manager() else { return };
        let _turn = self.saving.lock().await;
        if manager.store.is_shared() && self.ended_elsewhere(&manager).await {
            return;
        }
        let record = {
            let mut state = self.state.lock().unwrap();
            state.last_saved = Instant::now();
            state.record.clone()
        };
        if let Err(e) = manager.store.put(record.clone()).await {
            tracing::warn!("task {}: {e}", self.id);
        }
        if announce {
            let _ = manager.changes.send(record.clone());
            self.tell_session(&record).await;
        }
    }

    /// On a shared store: whether another node ended this task (cancelled it); if so the work
    /// here stops and the stored end stands.
    async fn ended_elsewhere(&self, manager: &Arc<TaskManager>) -> bool {
        let Ok(Some(stored)) = manager.store.get(&self.id).await else { return false };
        let slot = {
            let mut state = self.state.lock().unwrap();
            let ours = state.record.status;
            let theirs_wins =
                stored.status.is_terminal() && (!ours.is_terminal() || stored.status == TaskStatus::Cancelled);
            if !theirs_wins || stored.status == ours {
                return false;
            }
            state.record = stored.clone();
            state.slot.take()
        };
        drop(slot);
        self.cancel.cancel();
        self.answered.notify_waiters();
        let _ = manager.changes.send(stored);
        manager.forget(&self.id);
        true
    }

    /// Legacy tasks: `notifications/tasks/status` on the session.
    async fn tell_session(&self, record: &TaskRecord) {
        let Some(session) = &self.session else { return };
        let params = super::wire::legacy_task(record);
        let message = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": params});
        session.outbox.send(&message).await;
    }

    /// Progress reported by the work: the status message, the wait hint, and (now and then) the
    /// store.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let (changed, due) = {
            let mut state = self.state.lock().unwrap();
            if state.record.status.is_terminal() {
                return;
            }
            let text = match (message, total) {
                (Some(m), _) => m.to_owned(),
                (None, Some(t)) => format!("{progress} of {t}"),
                (None, None) => format!("{progress} done"),
            };
            let changed = state.record.status_message.as_deref() != Some(text.as_str());
            state.record.status_message = Some(text);
            state.record.progress = Some((progress, total));
            state.record.updated_ms = now_ms();
            let hint = wait_hint(&state, self.manager().map(|m| m.config.poll_interval));
            state.record.poll_interval_ms = hint.as_millis() as u64;
            (changed, state.last_saved.elapsed() >= SAVE_PROGRESS_EVERY)
        };
        if due {
            self.save(changed).await;
        }
    }

    /// Asks the client `questions` (key → request) and waits until every one is answered or the
    /// task ends. The task reads `input_required` meanwhile, with the unanswered questions.
    pub async fn ask(&self, questions: JsonObject) -> Result<JsonObject, ErrorObject> {
        {
            let mut state = self.state.lock().unwrap();
            if state.record.status.is_terminal() {
                return Err(ErrorObject::internal("the task has ended"));
            }
            let pending: JsonObject = questions
                .iter()
                .filter(|(k, _)| !state.answers.contains_key(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if !pending.is_empty() {
                state.record.status = TaskStatus::InputRequired;
                state.record.status_message = Some("waiting for input from the client".into());
                state.record.input_requests = Some(pending);
                state.record.updated_ms = now_ms();
            }
        }
        self.save(true).await;
        loop {
            let notified = self.answered.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(answers) = self.collect(&questions)? {
                self.save(true).await;
                return Ok(answers);
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = self.cancel.cancelled() => return Err(ErrorObject::internal("the task was cancelled")),
            }
        }
    }

    /// The work waits for (or got) an answer to a request sent on the session: the task reads
    /// `input_required` meanwhile.
    pub async fn waiting_on_client(&self, waiting: bool) {
        {
            let mut state = self.state.lock().unwrap();
            if state.record.status.is_terminal() {
                return;
            }
            state.record.status = if waiting { TaskStatus::InputRequired } else { TaskStatus::Working };
            state.record.status_message =
                Some(if waiting { "waiting for input from the client" } else { "working" }.into());
            state.record.updated_ms = now_ms();
        }
        self.save(true).await;
    }

    /// The answers to `questions` once all are in (the task then works again); `Err` once the
    /// task has ended.
    fn collect(&self, questions: &JsonObject) -> Result<Option<JsonObject>, ErrorObject> {
        let mut state = self.state.lock().unwrap();
        if state.record.status.is_terminal() {
            return Err(ErrorObject::internal("the task has ended"));
        }
        if !questions.keys().all(|k| state.answers.contains_key(k)) {
            return Ok(None);
        }
        let answers = questions.keys().map(|k| (k.clone(), state.answers[k].clone())).collect();
        state.record.status = TaskStatus::Working;
        state.record.status_message = Some("working".into());
        state.record.input_requests = None;
        state.record.updated_ms = now_ms();
        Ok(Some(answers))
    }

    /// Answers from `tasks/update`: those for pending questions are kept (others ignored), and
    /// the answered questions leave `inputRequests`.
    pub async fn answer(&self, responses: JsonObject) {
        let changed = {
            let mut state = self.state.lock().unwrap();
            let pending = state.record.input_requests.take().unwrap_or_default();
            let mut still = JsonObject::new();
            let mut changed = false;
            for (key, request) in pending {
                match responses.get(&key) {
                    Some(answer) => {
                        state.answers.insert(key, answer.clone());
                        changed = true;
                    }
                    None => {
                        still.insert(key, request);
                    }
                }
            }
            if !still.is_empty() {
                state.record.input_requests = Some(still);
            }
            state.record.updated_ms = now_ms();
            changed
        };
        if changed {
            self.answered.notify_waiters();
            self.save(true).await;
        }
    }

    /// Ends the task: `status`, a message, the outcome. A task already ended (cancelled while
    /// its work finished, say) keeps its first end. The slot is given back at once.
    pub async fn end(&self, status: TaskStatus, message: Option<String>, outcome: Option<Outcome>) {
        let slot = {
            let mut state = self.state.lock().unwrap();
            if state.record.status.is_terminal() {
                return;
            }
            state.record.status = status;
            state.record.status_message = message;
            state.record.input_requests = None;
            state.record.outcome = outcome;
            state.record.updated_ms = now_ms();
            if status == TaskStatus::Completed || status == TaskStatus::Failed {
                state.record.poll_interval_ms = 0;
            }
            state.slot.take()
        };
        drop(slot);
        if status == TaskStatus::Cancelled {
            self.cancel.cancel();
        }
        self.answered.notify_waiters();
        self.save(true).await;
        if let Some(manager) = self.manager() {
            manager.forget(&self.id);
        }
    }

    /// Records how the work ended: its result, or its protocol error.
    pub async fn finish(&self, outcome: Result<Value, ErrorObject>) {
        match outcome {
            Ok(result) => {
                let tool_error = result.get("isError") == Some(&Value::Bool(true));
                let legacy = self.state.lock().unwrap().record.form == TaskForm::Legacy;
                // 2025-11-25 (tasks.mdx, "Task Execution Errors"): a tool result with isError
                // makes the task failed; tasks/result still answers the result itself. The
                // 2026-07-28 extension keeps failed for JSON-RPC errors.
                let (status, message) = match (tool_error, legacy) {
                    (true, true) => {
                        (TaskStatus::Failed, format!("failed: the tool reported an error: {}", first_text(&result)))
                    }
                    (true, false) => (TaskStatus::Completed, "completed: the tool reported an error".to_owned()),
                    _ => (TaskStatus::Completed, "completed".to_owned()),
                };
                self.end(status, Some(message), Some(Outcome::Result(result))).await
            }
            Err(error) => {
                let message = format!("failed: {}", error.message);
                self.end(TaskStatus::Failed, Some(message), Some(Outcome::Error(error))).await
            }
        }
    }
}

/// The first text block of a tool result, cut short, for a status message.
fn first_text(result: &Value) -> String {
    let text = result["content"].as_array().into_iter().flatten().find_map(|b| b["text"].as_str()).unwrap_or("");
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// How long to wait before looking again: the time to the next progress step at the rate so
/// far, within the configured interval and a minute.
fn wait_hint(state: &LiveState, base: Option<Duration>) -> Duration {
    let base = base.unwrap_or(Duration::from_secs(1));
    let Some((done, total)) = state.record.progress else { return base };
    let Some(total) = total.filter(|t| *t > done && done > 0.0) else { return base };
    let elapsed = state.started.elapsed().as_secs_f64();
    let remaining = elapsed * (total - done) / done;
    Duration::from_secs_f64((remaining / 4.0).clamp(base.as_secs_f64() / 2.0, 60.0))
}
