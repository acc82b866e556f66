//! Where task records live: a small trait, and the in-memory store that is the default.
//!
//! A store keeps records; running work, its cancellation and its waiting questions stay in
//! the process that runs it (the task manager). The SQLite store (feature `sqlite`) keeps records
//! across restarts; a store shared by several instances (Redis) implements the same trait, and
//! also counts the places under each account's cap across them.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use mcp_types::tasks::TaskStatus;

use super::record::{Outcome, TaskRecord};

/// A boxed future borrowing the store.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a store could not do what it was asked.
#[derive(Debug, Clone)]
pub struct StoreError {
    message: String,
}

impl StoreError {
    /// An error with a message (no secrets: it may reach a client).
    pub fn new(message: impl Into<String>) -> Self {
        StoreError { message: message.into() }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the task store failed: {}", self.message)
    }
}

impl std::error::Error for StoreError {}

/// Whether a place under an account's cap was free (see [`TaskStore::take_place`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// It is taken, for this process.
    Granted,
    /// The account already has this many running, across every process.
    Full(usize),
}

/// Task records, by id.
pub trait TaskStore: Send + Sync + 'static {
    /// Adds a new task; when this returns, a `get` of its id anywhere finds it.
    fn insert(&self, task: TaskRecord) -> StoreFuture<'_, ()>;
    /// The task `id`, unless it does not exist or has expired.
    fn get(&self, id: &str) -> StoreFuture<'_, Option<TaskRecord>>;
    /// Replaces an existing task's record.
    fn put(&self, task: TaskRecord) -> StoreFuture<'_, ()>;
    /// The tasks of `owner` (of one tool, if given), oldest first, after the task `after`, at most
    /// `limit`.
    fn list<'a>(
        &'a self,
        owner: &'a str,
        tool: Option<&'a str>,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<TaskRecord>>;
    /// Deletes expired tasks and then, while more than `keep` remain, the oldest finished ones;
    /// returns how many went.
    fn sweep(&self, now_ms: u64, keep: usize) -> StoreFuture<'_, usize>;
    /// At start-up: every task still `working` or `input_required` (its process is gone) becomes
    /// `failed` with `reason`. Returns how many.
    fn recover(&self, reason: &str) -> StoreFuture<'_, usize>;
    /// Whether other processes write to the same records (Redis): a running task then reads its
    /// record back before each write, and stops if another node ended it (a `tasks/cancel`
    /// that landed there).
    fn is_shared(&self) -> bool {
        false
    }
    /// On a shared store: takes place `place` among the `limit` that `account` may hold across
    /// every process sharing the store (places of processes that died do not count). A store
    /// of one process grants it: the task manager counts its own places.
    fn take_place(&self, _account: &str, _place: &str, _limit: usize) -> StoreFuture<'_, Place> {
        ready(Ok(Place::Granted))
    }
    /// Gives back a place that [`TaskStore::take_place`] granted.
    fn give_back(&self, _account: &str, _place: &str) -> StoreFuture<'_, ()> {
        ready(Ok(()))
    }
}

/// The record of an unfinished task whose process ended: failed, with the reason.
#[cfg_attr(not(any(feature = "sqlite", feature = "redis")), allow(dead_code))]
pub(crate) fn failed_by_restart(mut task: TaskRecord, reason: &str, now_ms: u64) -> TaskRecord {
    task.status = TaskStatus::Failed;
    task.status_message = Some(reason.to_owned());
    task.input_requests = None;
    task.updated_ms = now_ms;
    task.outcome = Some(Outcome::Error(mcp_types::ErrorObject::internal(reason)));
    task
}

/// Records in memory: the default; nothing survives the process.
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Memory>,
}

#[derive(Default)]
struct Memory {
    tasks: HashMap<String, TaskRecord>,
    /// Ids in creation order.
    order: Vec<String>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }
}

fn ready<T: Send + 'static>(value: Result<T, StoreError>) -> StoreFuture<'static, T> {
    Box::pin(std::future::ready(value))
}

impl TaskStore for MemoryStore {
    fn insert(&self, task: TaskRecord) -> StoreFuture<'_, ()> {
        let mut m = self.inner.lock().unwrap();
        m.order.push(task.id.clone());
        m.tasks.insert(task.id.clone(), task);
        ready(Ok(()))
    }

    fn get(&self, id: &str) -> StoreFuture<'_, Option<TaskRecord>> {
        let now = super::record::now_ms();
        let found = self.inner.lock().unwrap().tasks.get(id).filter(|t| !t.expired(now)).cloned();
        ready(Ok(found))
    }

    fn put(&self, task: TaskRecord) -> StoreFuture<'_, ()> {
        let mut m = self.inner.lock().unwrap();
        if let Some(slot) = m.tasks.get_mut(&task.id) {
            *slot = task;
        }
        ready(Ok(()))
    }

    fn list<'a>(
        &'a self,
        owner: &'a str,
        tool: Option<&'a str>,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<TaskRecord>> {
        let now = super::record::now_ms();
        let m = self.inner.lock().unwrap();
        let start = after.and_then(|a| m.order.iter().position(|id| id == a)).map_or(0, |i| i + 1);
        let found = m.order[start.min(m.order.len())..]
            .iter()
            .filter_map(|id| m.tasks.get(id))
            .filter(|t| t.owner == owner && tool.is_none_or(|tool| t.tool == tool) && !t.expired(now))
            .take(limit)
            .cloned()
            .collect();
        ready(Ok(found))
    }

    fn sweep(&self, now_ms: u64, keep: usize) -> StoreFuture<'_, usize> {
        let mut m = self.inner.lock().unwrap();
        let before = m.tasks.len();
        m.tasks.retain(|_, t| !t.expired(now_ms));
        let mut excess = m.tasks.len().saturating_sub(keep);
        if excess > 0 {
            let order = m.order.clone();
            for id in order {
                if excess == 0 {
                    break;
                }
                if m.tasks.get(&id).is_some_and(|t| t.status.is_terminal()) {
                    m.tasks.remove(&id);
                    excess -= 1;
                }
            }
        }
        let Memory { tasks, order } = &mut *m;
        order.retain(|id| tasks.contains_key(id));
        if tasks.capacity() > 64 && tasks.len() < tasks.capacity() / 4 {
            tasks.shrink_to_fit();
            order.shrink_to_fit();
        }
        ready(Ok(before - tasks.len()))
    }

    fn recover(&self, _reason: &str) -> StoreFuture<'_, usize> {
        ready(Ok(0)) // a new process starts with an empty memory: nothing was cut short
    }
}
