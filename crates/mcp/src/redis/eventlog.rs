//! The shared log of response streams, so that a client cut off from one node resumes on
//! another with `Last-Event-ID` and gets every event it missed, once.
//!
//! `{prefix}ev:{session}:{stream}` is a list of `seq|json` entries (the last 256 kept);
//! `{prefix}evh:{session}:{stream}` says which node produces it, for which request, and whether
//! it ended. Both expire [`LOG_TTL`] after the stream's last write (each event pushes both
//! back). Writes go through one queue per process, drained in pipelines, so they keep their
//! order and never hold up a response; a full queue (Redis far behind) drops an entry rather
//! than grow, and the stream is marked as having a gap as soon as Redis is reached again, so a
//! client resuming it elsewhere is told it cannot be resumed whole instead of missing events
//! unawares.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use super::{describe, Redis};
use crate::transport::http::directory::StreamLog;

/// Entries kept per stream (as many as a node keeps in memory).
const KEEP: isize = 256;
/// How long a log outlives its last write.
const LOG_TTL: Duration = Duration::from_secs(600);
/// Writes waiting for Redis before new ones are dropped.
const QUEUE: usize = 8192;

/// A log's head: the producing node, the request (JSON), whether it ended, whether it has a gap.
type Head = (Option<String>, Option<String>, Option<String>, Option<String>);

/// The heads of streams some of whose entries were dropped, to be marked.
type Gaps = Arc<Mutex<HashSet<String>>>;

/// The writer of the logs.
pub(crate) struct EventLog {
    redis: Redis,
    queue: mpsc::Sender<redis::Cmd>,
    gaps: Gaps,
}

impl EventLog {
    /// Starts the writer on the current runtime.
    pub fn start(redis: Redis) -> EventLog {
        let (queue, rx) = mpsc::channel(QUEUE);
        let gaps = Gaps::default();
        tokio::spawn(write(redis.clone(), rx, gaps.clone()));
        EventLog { redis, queue, gaps }
    }

    fn keys(&self, session: &str, stream: u64) -> (String, String) {
        (self.redis.key(&format!("ev:{session}:{stream}")), self.redis.key(&format!("evh:{session}:{stream}")))
    }

    /// Queues `cmd`; `false` when it was dropped (the queue is full).
    fn send(&self, cmd: redis::Cmd) -> bool {
        let sent = self.queue.try_send(cmd).is_ok();
        if !sent {
            tracing::warn!("the shared event log is behind: an entry was dropped");
        }
        sent
    }

    /// Notes that a write to the stream whose head is `head` was dropped.
    fn gap(&self, head: String) {
        self.gaps.lock().unwrap_or_else(|e| e.into_inner()).insert(head);
    }

    /// See [`crate::transport::http::directory::SessionDirectory::log_open`].
    pub fn open(&self, session: &str, stream: u64, request: &mcp_types::RequestId) {
        let (_, head) = self.keys(session, stream);
        let request = serde_json::to_string(request).unwrap_or_default();
        let mut hset = redis::cmd("HSET");
        hset.arg(&head).arg("node").arg(&self.redis.node).arg("request").arg(request);
        let mut expire = redis::cmd("PEXPIRE");
        expire.arg(&head).arg(LOG_TTL.as_millis() as u64);
        if !(self.send(hset) && self.send(expire)) {
            self.gap(head);
        }
    }

    /// See [`crate::transport::http::directory::SessionDirectory::log_event`].
    pub fn event(&self, session: &str, stream: u64, seq: u64, data: &[u8]) {
        let (list, head) = self.keys(session, stream);
        let mut entry = format!("{seq}|").into_bytes();
        entry.extend_from_slice(data);
        let mut push = redis::cmd("RPUSH");
        push.arg(&list).arg(entry);
        if !self.send(push) {
            self.gap(head);
            return;
        }
        let mut trim = redis::cmd("LTRIM");
        trim.arg(&list).arg(-KEEP).arg(-1);
        self.send(trim);
        // The list and its head live as long as the stream writes.
        for key in [&list, &head] {
            let mut expire = redis::cmd("PEXPIRE");
            expire.arg(key).arg(LOG_TTL.as_millis() as u64);
            self.send(expire);
        }
    }

    /// See [`crate::transport::http::directory::SessionDirectory::log_end`].
    pub fn end(&self, session: &str, stream: u64) {
        let (_, head) = self.keys(session, stream);
        let mut hset = redis::cmd("HSET");
        hset.arg(&head).arg("ended").arg(1);
        if !self.send(hset) {
            self.gap(head);
        }
    }

    /// See [`crate::transport::http::directory::SessionDirectory::log_read`].
    pub async fn read(&self, session: &str, stream: u64, after: u64) -> Result<StreamLog, String> {
        let (list, head) = self.keys(session, stream);
        let mut conn = self.redis.conn();
        let mut pipe = redis::pipe();
        pipe.cmd("LRANGE")
            .arg(&list)
            .arg(0)
            .arg(-1)
            .cmd("HMGET")
            .arg(&head)
            .arg("node")
            .arg("request")
            .arg("ended")
            .arg("gap");
        let (entries, (node, request, ended, gap)): (Vec<Vec<u8>>, Head) =
            pipe.query_async(&mut conn).await.map_err(|e| describe(&e))?;
        let producer_alive = match &node {
            Some(node) => {
                let n: i64 = redis::cmd("EXISTS")
                    .arg(self.redis.node_key(node))
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| describe(&e))?;
                n == 1
            }
            None => false,
        };
        let events = entries
            .into_iter()
            .filter_map(|entry| {
                let at = entry.iter().position(|b| *b == b'|')?;
                let seq: u64 = std::str::from_utf8(&entry[..at]).ok()?.parse().ok()?;
                (seq > after).then(|| (seq, entry[at + 1..].to_vec()))
            })
            .collect();
        Ok(StreamLog {
            events,
            ended: ended.is_some(),
            producer_alive,
            request: request.and_then(|r| serde_json::from_str(&r).ok()),
            gap: gap.is_some() || self.gaps.lock().unwrap_or_else(|e| e.into_inner()).contains(&head),
        })
    }
}

async fn write(redis: Redis, mut rx: mpsc::Receiver<redis::Cmd>, gaps: Gaps) {
    let mut conn = redis.conn();
    while let Some(first) = rx.recv().await {
        let mut pipe = redis::pipe();
        pipe.add_command(first).ignore();
        // Streams that lost an entry are marked first, once the queue moves again.
        let marked: Vec<String> = gaps.lock().unwrap_or_else(|e| e.into_inner()).drain().collect();
        for head in &marked {
            pipe.cmd("HSET").arg(head).arg("gap").arg(1).ignore();
            pipe.cmd("PEXPIRE").arg(head).arg(LOG_TTL.as_millis() as u64).ignore();
        }
        while let Ok(next) = rx.try_recv() {
            pipe.add_command(next).ignore();
            if pipe.len() >= 256 {
                break;
            }
        }
        if let Err(e) = pipe.query_async::<()>(&mut conn).await {
            tracing::warn!("the shared event log: {}", describe(&e));
        }
    }
}
