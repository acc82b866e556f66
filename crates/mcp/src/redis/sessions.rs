//! Legacy session records on Redis: `{prefix}session:{id}`, a hash of the record (JSON) and its
//! revision, expiring after the session's idle time (pushed back by every request, on any node).

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::broadcast;

use super::bus::Bus;
use super::eventlog::EventLog;
use super::{describe, Redis};
use crate::transport::http::directory::{ClusterEvent, SessionDirectory, SessionRecord, StreamLog};

/// Stores a record if its revision is still the expected one: the new revision, `-1` when
/// another node changed it first, `-2` when the session is gone.
const PUT_IF: &str = r#"
local rev = redis.call('HGET', KEYS[1], 'rev')
if not rev then return -2 end
if tonumber(rev) ~= tonumber(ARGV[2]) then return -1 end
redis.call('HSET', KEYS[1], 'record', ARGV[1])
local new = redis.call('HINCRBY', KEYS[1], 'rev', 1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return new
"#;

/// Legacy sessions on Redis, and the channel between the nodes that serve them.
pub struct RedisSessions {
    redis: Redis,
    bus: Arc<Bus>,
    log: EventLog,
    put_if: redis::Script,
}

impl RedisSessions {
    /// Session records in `redis`; starts listening to the other nodes (call within a tokio
    /// runtime).
    pub fn new(redis: Redis) -> Self {
        let bus = Bus::start(redis.clone());
        let log = EventLog::start(redis.clone());
        RedisSessions { redis, bus, log, put_if: redis::Script::new(PUT_IF) }
    }

    fn key(&self, id: &str) -> String {
        self.redis.key(&format!("session:{id}"))
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis().max(1) as u64
}

impl SessionDirectory for RedisSessions {
    fn publish(&self, event: ClusterEvent) {
        self.bus.publish(&event);
    }

    fn subscribe(&self) -> broadcast::Receiver<ClusterEvent> {
        self.bus.subscribe()
    }

    fn log_open<'a>(&'a self, session: &'a str, stream: u64, request: &'a mcp_types::RequestId) -> BoxFuture<'a, ()> {
        Box::pin(self.log.open(session, stream, request))
    }

    fn log_event<'a>(&'a self, session: &'a str, stream: u64, seq: u64, data: &'a [u8]) -> BoxFuture<'a, ()> {
        Box::pin(self.log.event(session, stream, seq, data))
    }

    fn log_end<'a>(&'a self, session: &'a str, stream: u64, last: u64) -> BoxFuture<'a, ()> {
        Box::pin(self.log.end(session, stream, last))
    }

    fn log_read<'a>(&'a self, session: &'a str, stream: u64, after: u64) -> BoxFuture<'a, Result<StreamLog, String>> {
        Box::pin(self.log.read(session, stream, after))
    }

    fn put<'a>(&'a self, id: &'a str, record: &'a SessionRecord, idle: Duration) -> BoxFuture<'a, Result<u64, String>> {
        Box::pin(async move {
            let json = serde_json::to_string(record).map_err(|e| e.to_string())?;
            let key = self.key(id);
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("HSET")
                .arg(&key)
                .arg("record")
                .arg(json)
                .ignore()
                .cmd("HINCRBY")
                .arg(&key)
                .arg("rev")
                .arg(1)
                .cmd("PEXPIRE")
                .arg(&key)
                .arg(ms(idle))
                .ignore();
            let mut conn = self.redis.conn();
            let (rev,): (u64,) = pipe.query_async(&mut conn).await.map_err(|e| describe(&e))?;
            Ok(rev)
        })
    }

    fn put_if<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        idle: Duration,
        expected: u64,
    ) -> BoxFuture<'a, Result<Option<u64>, String>> {
        Box::pin(async move {
            let json = serde_json::to_string(record).map_err(|e| e.to_string())?;
            let mut conn = self.redis.conn();
            let outcome: i64 = self
                .put_if
                .key(self.key(id))
                .arg(json)
                .arg(expected)
                .arg(ms(idle))
                .invoke_async(&mut conn)
                .await
                .map_err(|e| describe(&e))?;
            match outcome {
                -2 => Err("the session ended".into()),
                -1 => Ok(None),
                rev => Ok(Some(rev as u64)),
            }
        })
    }

    fn touch<'a>(&'a self, id: &'a str, idle: Duration) -> BoxFuture<'a, Result<Option<u64>, String>> {
        Box::pin(async move {
            let key = self.key(id);
            let mut pipe = redis::pipe();
            pipe.cmd("PEXPIRE").arg(&key).arg(ms(idle)).cmd("HGET").arg(&key).arg("rev");
            let mut conn = self.redis.conn();
            let (alive, rev): (i64, Option<u64>) = pipe.query_async(&mut conn).await.map_err(|e| describe(&e))?;
            Ok(if alive == 1 { rev } else { None })
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<(u64, SessionRecord)>, String>> {
        Box::pin(async move {
            let mut conn = self.redis.conn();
            let (json, rev): (Option<String>, Option<u64>) = redis::cmd("HMGET")
                .arg(self.key(id))
                .arg("record")
                .arg("rev")
                .query_async(&mut conn)
                .await
                .map_err(|e| describe(&e))?;
            match (json, rev) {
                (Some(json), Some(rev)) => {
                    let record =
                        serde_json::from_str(&json).map_err(|e| format!("a stored session is damaged: {e}"))?;
                    Ok(Some((rev, record)))
                }
                _ => Ok(None),
            }
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let mut conn = self.redis.conn();
            let n: i64 = redis::cmd("DEL").arg(self.key(id)).query_async(&mut conn).await.map_err(|e| describe(&e))?;
            Ok(n > 0)
        })
    }
}
