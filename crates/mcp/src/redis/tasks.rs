//! Task records on Redis: any node finds, polls and lists a task another node created.
//!
//! `{prefix}task:{id}` holds the record (JSON), expiring with the task's lifetime;
//! `{prefix}tasks:{owner}` is a sorted set of the owner's task ids by creation time, pruned of
//! expired ids as it is read; `{prefix}task-node:{id}` names the node running an unfinished
//! task. A node that dies leaves its tasks unfinished: the first read of one on another node
//! (whose heartbeat has lapsed: [`super::ALIVE`]) marks it failed, so that no client polls it
//! for ever. `{prefix}places:{account}` holds the places an account's running tasks take under
//! its cap, as `node|id`, so that the cap holds across nodes; places of dead nodes are dropped
//! as the set is counted. Nothing is recovered at start-up: a node that restarts gets a new id.

use redis::AsyncCommands;

use super::{describe, Redis, ALIVE};
use crate::server::tasks::record::now_ms;
use crate::server::tasks::store::failed_by_restart;
use crate::server::tasks::{Place, StoreError, StoreFuture, TaskRecord, TaskStore};

/// What a task whose node died says.
const ORPHANED: &str = "the server instance running this task stopped; start the work again";

/// The record, and 1 when its unfinished task's node is not alive (one round trip).
/// KEYS: record, runner. ARGV: this node's id, the prefix of node keys.
const READ: &str = r"
local record = redis.call('GET', KEYS[1])
if not record then return nil end
local runner = redis.call('GET', KEYS[2])
if runner and runner ~= ARGV[1] and redis.call('EXISTS', ARGV[2] .. runner) == 0 then
  return {record, 1}
end
return {record, 0}
";

/// Replaces the record if it is still what was read, keeping its expiry, and forgets its
/// runner. KEYS: record, runner. ARGV: the record as read, the new record.
const REPLACE: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
redis.call('DEL', KEYS[2])
return 1
";

/// Takes a place under an account's cap, counting only places of live nodes (the others are
/// dropped), and renews this node's heartbeat. Returns -1 when granted, else how many run.
/// KEYS: the account's places. ARGV: limit, the place (`node|id`), the prefix of node keys,
/// this node's id, how long a heartbeat lasts (ms).
const TAKE_PLACE: &str = r"
redis.call('SET', ARGV[3] .. ARGV[4], 1, 'PX', ARGV[5])
local live = 0
for _, place in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local node = string.match(place, '^(.-)|')
  if node and redis.call('EXISTS', ARGV[3] .. node) == 1 then
    live = live + 1
  else
    redis.call('SREM', KEYS[1], place)
  end
end
if live >= tonumber(ARGV[1]) then return live end
redis.call('SADD', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], 86400000) -- an account gone quiet leaves nothing behind
return -1
";

/// The most ids of one owner read for one listing.
const LIST_SCAN: isize = 1_000;

/// Task records on Redis.
pub struct RedisTaskStore {
    redis: Redis,
    read: redis::Script,
    replace: redis::Script,
    take_place: redis::Script,
}

impl RedisTaskStore {
    /// Task records in `redis`; keeps this node's heartbeat going (call within a tokio runtime).
    pub fn new(redis: Redis) -> Self {
        redis.keep_alive();
        RedisTaskStore {
            redis,
            read: redis::Script::new(READ),
            replace: redis::Script::new(REPLACE),
            take_place: redis::Script::new(TAKE_PLACE),
        }
    }

    fn places_key(&self, account: &str) -> String {
        self.redis.key(&format!("places:{account}"))
    }

    fn place_member(&self, place: &str) -> String {
        format!("{}|{place}", self.redis.node())
    }

    fn runner_key(&self, id: &str) -> String {
        self.redis.key(&format!("task-node:{id}"))
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
        let runner = self.runner_key(&task.id);
        if insert {
            pipe.cmd("ZADD").arg(self.owner_key(&task.owner)).arg(task.created_ms).arg(&task.id).ignore();
        }
        if insert && !task.status.is_terminal() {
            // The runner. Its heartbeat is fresh: taking the task's place renewed it.
            pipe.cmd("SET").arg(&runner).arg(self.redis.node()).ignore();
            if let Some(ttl) = task.ttl_ms {
                pipe.cmd("PEXPIREAT").arg(&runner).arg(task.created_ms.saturating_add(ttl)).ignore();
            }
        } else if !insert && task.status.is_terminal() {
            pipe.cmd("DEL").arg(&runner).ignore();
        }
        let mut conn = self.redis.conn();
        pipe.query_async::<()>(&mut conn).await.map_err(|e| StoreError::new(describe(&e)))
    }

    /// The record of task `id`; an unfinished one whose node died is failed first.
    async fn read(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let (key, runner) = (self.record_key(id), self.runner_key(id));
        let mut conn = self.redis.conn();
        let found: Option<(String, i64)> = self
            .read
            .key(&key)
            .key(&runner)
            .arg(self.redis.node())
            .arg(self.redis.node_key(""))
            .invoke_async(&mut conn)
            .await
            .map_err(|e| StoreError::new(describe(&e)))?;
        let Some((json, orphaned)) = found else { return Ok(None) };
        let record = parse(&json)?;
        if orphaned == 0 || record.status.is_terminal() {
            return Ok(Some(record));
        }
        let failed = failed_by_restart(record, ORPHANED, now_ms());
        let new = serde_json::to_string(&failed).map_err(|e| StoreError::new(e.to_string()))?;
        let replaced: i64 = self
            .replace
            .key(&key)
            .key(&runner)
            .arg(&json)
            .arg(&new)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| StoreError::new(describe(&e)))?;
        if replaced == 1 {
            return Ok(Some(failed));
        }
        // Written meanwhile (by another reader, or by its node after all): what is there now.
        let json: Option<String> = conn.get(&key).await.map_err(|e| StoreError::new(describe(&e)))?;
        json.as_deref().map(parse).transpose()
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
        let id = id.to_owned();
        Box::pin(async move { self.read(&id).await })
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
                        let mut record = parse(&json)?;
                        if tool.is_none_or(|t| t == record.tool) && out.len() < limit {
                            if !record.status.is_terminal() {
                                // Its node may have died: read it the way tasks/get does.
                                record = self.read(id).await?.unwrap_or(record);
                            }
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

    fn take_place(&self, account: &str, place: &str, limit: usize) -> StoreFuture<'_, Place> {
        let (key, member) = (self.places_key(account), self.place_member(place));
        Box::pin(async move {
            let mut conn = self.redis.conn();
            let running: i64 = self
                .take_place
                .key(&key)
                .arg(limit)
                .arg(&member)
                .arg(self.redis.node_key(""))
                .arg(self.redis.node())
                .arg(ALIVE.as_millis() as u64)
                .invoke_async(&mut conn)
                .await
                .map_err(|e| StoreError::new(describe(&e)))?;
            Ok(if running < 0 { Place::Granted } else { Place::Full(running as usize) })
        })
    }

    fn give_back(&self, account: &str, place: &str) -> StoreFuture<'_, ()> {
        let (key, member) = (self.places_key(account), self.place_member(place));
        Box::pin(async move {
            let mut conn = self.redis.conn();
            conn.srem::<_, _, i64>(&key, &member).await.map(drop).map_err(|e| StoreError::new(describe(&e)))
        })
    }
}
