//! Task records on Redis: any node finds, polls and lists a task another node created.
//!
//! `{prefix}task:{id}` holds the record (JSON), expiring with the task's lifetime;
//! `{prefix}tasks:{owner}` is a sorted set of the owner's task ids by creation time, pruned of
//! expired ids as it is read. Nothing is recovered at start-up: on several nodes a restarting
//! one cannot tell another's running tasks from its own lost ones.

use redis::AsyncCommands;

use super::{describe, Redis};
use crate::tasks::{StoreError, StoreFuture, TaskRecord, TaskStore};

/// The most ids of one owner read for one listing.
const LIST_SCAN: isize = 1_000;

/// Task records on Redis.
pub struct RedisTaskStore {
    redis: Redis,
}

impl RedisTaskStore {
    /// Task records in `redis`.
    pub fn new(redis: Redis) -> Self {
        RedisTaskStore { redis }
    }

    fn record_key(&self, id: &str) -> String {
        self.redis.key(&format!("task:{id}"))
    }

    fn owner_key(&self, owner: &str) -> String {
        self.redis.key(&format!("tasks:{owner}"))
    }

    async fn write(&self, task: &TaskRecord, insert: bool) -> Result<(), StoreError> {
        let json = serde_json::to_string(task).map_err(|e| StoreError::new(e.to_string()))?;
        let key = self.record_key(&task.id);
        let mut pipe = redis::pipe();
        pipe.atomic();
        match task.ttl_ms {
            Some(ttl) => {
                pipe.cmd("SET").arg(&key).arg(json).arg("PXAT").arg(task.created_ms.saturating_add(ttl)).ignore()
            }
            None => pipe.cmd("SET").arg(&key).arg(json).ignore(),
        };
        if insert {
            pipe.cmd("ZADD").arg(self.owner_key(&task.owner)).arg(task.created_ms).arg(&task.id).ignore();
        }
        let mut conn = self.redis.conn();
        pipe.query_async::<()>(&mut conn).await.map_err(|e| StoreError::new(describe(&e)))
    }
}

fn parse(json: &str) -> Result<TaskRecord, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::new(format!("a stored task is damaged: {e}")))
}

impl TaskStore for RedisTaskStore {
    fn insert(&self, task: TaskRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move { self.write(&task, true).await })
    }

    fn get(&self, id: &str) -> StoreFuture<'_, Option<TaskRecord>> {
        let key = self.record_key(id);
        Box::pin(async move {
            let mut conn = self.redis.conn();
            let json: Option<String> = conn.get(&key).await.map_err(|e| StoreError::new(describe(&e)))?;
            json.as_deref().map(parse).transpose()
        })
    }

    fn put(&self, task: TaskRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move { self.write(&task, false).await })
    }

    fn list<'a>(
        &'a self,
        owner: &'a str,
        tool: Option<&'a str>,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<TaskRecord>> {
        Box::pin(async move {
            let error = |e: redis::RedisError| StoreError::new(describe(&e));
            let set = self.owner_key(owner);
            let mut conn = self.redis.conn();
            // Members with equal scores sort by id: the (created, id) order of every store.
            let ids: Vec<String> = conn.zrange(&set, 0, LIST_SCAN - 1).await.map_err(error)?;
            let start = match after {
                Some(after) => ids.iter().position(|id| id == after).map_or(0, |i| i + 1),
                None => 0,
            };
            let ids = &ids[start.min(ids.len())..];
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let keys: Vec<String> = ids.iter().map(|id| self.record_key(id)).collect();
            let records: Vec<Option<String>> =
                redis::cmd("MGET").arg(&keys).query_async(&mut conn).await.map_err(error)?;
            let mut out = Vec::new();
            let mut gone = Vec::new();
            for (id, json) in ids.iter().zip(records) {
                match json {
                    None => gone.push(id.clone()),
                    Some(json) => {
                        let record = parse(&json)?;
                        if tool.is_none_or(|t| t == record.tool) && out.len() < limit {
                            out.push(record);
                        }
                    }
                }
            }
            if !gone.is_empty() {
                let _: Result<i64, _> = conn.zrem(&set, gone).await;
            }
            Ok(out)
        })
    }

    fn sweep(&self, _now_ms: u64, _keep: usize) -> StoreFuture<'_, usize> {
        // Records expire in Redis itself; owners' sets are pruned as they are read.
        Box::pin(async { Ok(0) })
    }

    fn recover(&self, _reason: &str) -> StoreFuture<'_, usize> {
        Box::pin(async { Ok(0) })
    }

    fn is_shared(&self) -> bool {
        true
    }
}
