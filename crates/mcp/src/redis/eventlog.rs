//! The shared log of response streams, so that a client cut off from one node resumes on
//! another with `Last-Event-ID` and gets every event it missed, once — or, when that cannot be,
//! an error saying so, never a stream with a hole in it.
//!
//! `{prefix}ev:{session}:{stream}` is a list of `seq|json` entries (the last [`KEEP`] kept);
//! `{prefix}evh:{session}:{stream}` says which node produces it, for which request, the last
//! event's number once it ended, and whether it has a gap. Both expire [`LOG_TTL`] after the
//! stream's last write (each event pushes both back).
//!
//! Writes go through one queue per process, drained in pipelines, so they keep their order.
//! The queue is bounded in bytes: when Redis is slow a stream waits for room (at most
//! [`ROOM_WAIT`]); a batch Redis refuses is sent again for up to [`RETRY_FOR`]. Only past those
//! bounds is an entry given up, and then its stream is marked as having a gap (as soon as Redis
//! is reached again), so a client resuming it elsewhere is told instead of missing events
//! unawares. A reader also checks that the numbers it is given follow on from where the client
//! was, with none missing (a log trimmed past the client's place, an entry lost on the way).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Semaphore};

use super::{describe, Redis};
use crate::transport::http::directory::StreamLog;

/// Entries kept per stream (as many as a node keeps in memory).
const KEEP: isize = 256;
/// How long a log outlives its last write.
const LOG_TTL: Duration = Duration::from_secs(600);
/// Bytes of entries waiting for Redis, at most.
const QUEUE_BYTES: usize = 16 << 20;
/// How long a stream waits for room in the queue before its entry is given up.
const ROOM_WAIT: Duration = Duration::from_secs(2);
/// How long a batch of writes is sent again while Redis fails before it is given up.
const RETRY_FOR: Duration = Duration::from_secs(5);
/// Writes sent in one pipeline, at most.
const BATCH: usize = 256;

/// A log's head: the producing node, the request (JSON), the last event once it ended, the gap.
type Head = (Option<String>, Option<String>, Option<String>, Option<String>);

/// The heads of streams some of whose entries were given up, to be marked.
type Gaps = Arc<Mutex<HashSet<String>>>;

/// The commands of one log call, and the head of the stream they belong to.
struct Write {
    commands: Vec<redis::Cmd>,
    head: String,
    /// Its share of [`QUEUE_BYTES`].
    cost: u32,
}

/// The writer of the logs.
pub(crate) struct EventLog {
    redis: Redis,
    queue: mpsc::UnboundedSender<Write>,
    room: Arc<Semaphore>,
    gaps: Gaps,
}

impl EventLog {
    /// Starts the writer on the current runtime.
    pub fn start(redis: Redis) -> EventLog {
        let (queue, rx) = mpsc::unbounded_channel();
        let room = Arc::new(Semaphore::new(QUEUE_BYTES));
        let gaps = Gaps::default();
        tokio::spawn(write(redis.clone(), rx, room.clone(), gaps.clone()));
        EventLog { redis, queue, room, gaps }
    }

    fn keys(&self, session: &str, stream: u64) -> (String, String) {
        (self.redis.key(&format!("ev:{session}:{stream}")), self.redis.key(&format!("evh:{session}:{stream}")))
    }

    /// Queues `commands` for the stream whose head is `head`, waiting (bounded) for room.
    async fn enqueue(&self, head: String, commands: Vec<redis::Cmd>, bytes: usize) {
        let cost = (bytes + 128).min(QUEUE_BYTES) as u32;
        let room = tokio::time::timeout(ROOM_WAIT, self.room.acquire_many(cost)).await;
        let write = Write { commands, head, cost };
        match room {
            Ok(Ok(permit)) => {
                permit.forget(); // given back by the writer once written
                if let Err(refused) = self.queue.send(write) {
                    self.gap(refused.0.head);
                }
            }
            _ => {
                tracing::warn!("the shared event log is behind: an entry was given up, its stream marked");
                self.gap(write.head);
            }
        }
    }

    /// Notes that a write to the stream whose head is `head` was given up.
    fn gap(&self, head: String) {
        self.gaps.lock().unwrap_or_else(|e| e.into_inner()).insert(head);
    }

    /// See [`crate::transport::http::directory::SessionDirectory::log_open`].
    pub async fn open(&self, session: &str, stream: u64, request: &mcp_types::RequestId) {
        let (_, head) = self.keys(session, stream);
        let request = serde_json::to_string(request).unwrap_or_default();
        let mut hset = redis::cmd("HSET");
        hset.arg(&head).arg("node").arg(&self.redis.node).arg("request").arg(&request);
        let mut expire = redis::cmd("PEXPIRE");
        expire.arg(&head).arg(LOG_TTL.as_millis() as u64);
        self.enqueue(head, vec![hset, expire], request.len()).await;
    }

    /// See [`crate::transport::http::directory::SessionDirectory::log_event`].
    pub async fn event(&self, session: &str, stream: u64, seq: u64, data: &[u8]) {
        let (list, head) = self.keys(session, stream);
        let mut entry = format!("{seq}|").into_bytes();
        entry.extend_from_slice(data);
        let mut push = redis::cmd("RPUSH");
        push.arg(&list).arg(entry);
        let mut trim = redis::cmd("LTRIM");
        trim.arg(&list).arg(-KEEP).arg(-1);
        let mut commands = vec![push, trim];
        // The list and its head live as long as the stream writes.
        for key in [&list, &head] {
            let mut expire = redis::cmd("PEXPIRE");
            expire.arg(key).arg(LOG_TTL.as_millis() as u64);
            commands.push(expire);
        }
        self.enqueue(head, commands, data.len()).await;
    }

    /// See [`crate::transport::http::directory::SessionDirectory::log_end`].
    pub async fn end(&self, session: &str, stream: u64, last: u64) {
        let (_, head) = self.keys(session, stream);
        let mut hset = redis::cmd("HSET");
        hset.arg(&head).arg("ended").arg(last);
        self.enqueue(head, vec![hset], 0).await;
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
        let last = ended.as_deref().map(|n| n.parse::<u64>().unwrap_or(u64::MAX));
        let (events, whole) = following(after, &entries, last);
        let marked = gap.is_some() || self.gaps.lock().unwrap_or_else(|e| e.into_inner()).contains(&head);
        Ok(StreamLog {
            events,
            ended: last.is_some(),
            producer_alive,
            request: request.and_then(|r| serde_json::from_str(&r).ok()),
            gap: marked || !whole,
        })
    }
}

/// The events after `after` among the log's `entries` (`seq|json`, in the order written, maybe
/// with repeats of a batch sent again), and whether they follow on from `after` with none
/// missing, up to `last` when the stream ended.
fn following(after: u64, entries: &[Vec<u8>], last: Option<u64>) -> (Vec<(u64, Vec<u8>)>, bool) {
    let mut events = Vec::new();
    let mut next = after + 1;
    let mut whole = true;
    for entry in entries {
        let Some(at) = entry.iter().position(|b| *b == b'|') else { continue };
        let Some(seq) = std::str::from_utf8(&entry[..at]).ok().and_then(|n| n.parse::<u64>().ok()) else {
            continue;
        };
        if seq < next {
            continue; // seen already, or sent twice
        }
        whole &= seq == next;
        events.push((seq, entry[at + 1..].to_vec()));
        next = seq + 1;
    }
    if let Some(last) = last {
        whole &= next > last;
    }
    (events, whole)
}

/// Writes the queued log calls in order, in pipelines, until every [`EventLog`] is gone.
async fn write(redis: Redis, mut rx: mpsc::UnboundedReceiver<Write>, room: Arc<Semaphore>, gaps: Gaps) {
    let mut conn = redis.conn();
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        // While gaps wait to be marked, come back for them even if nothing else is written.
        let waiting = !gaps.lock().unwrap_or_else(|e| e.into_inner()).is_empty();
        let first = if waiting {
            match tokio::time::timeout(Duration::from_secs(1), rx.recv()).await {
                Ok(None) => return,
                Ok(Some(write)) => Some(write),
                Err(_) => None,
            }
        } else {
            match rx.recv().await {
                None => return,
                Some(write) => Some(write),
            }
        };
        batch.extend(first);
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(write) => batch.push(write),
                Err(_) => break,
            }
        }
        let marks: Vec<String> = gaps.lock().unwrap_or_else(|e| e.into_inner()).drain().collect();
        if !send(&mut conn, &marks, &batch).await {
            let mut gaps = gaps.lock().unwrap_or_else(|e| e.into_inner());
            gaps.extend(marks);
            gaps.extend(batch.iter().map(|w| w.head.clone()));
        }
        let written: usize = batch.drain(..).map(|w| w.cost as usize).sum();
        room.add_permits(written);
    }
}

/// Sends the gap `marks` first, then `batch`, again while Redis fails, for up to [`RETRY_FOR`];
/// `false` when it was given up.
async fn send(conn: &mut redis::aio::ConnectionManager, marks: &[String], batch: &[Write]) -> bool {
    let mut pipe = redis::pipe();
    for head in marks {
        pipe.cmd("HSET").arg(head).arg("gap").arg(1).ignore();
        pipe.cmd("PEXPIRE").arg(head).arg(LOG_TTL.as_millis() as u64).ignore();
    }
    for command in batch.iter().flat_map(|w| &w.commands) {
        pipe.add_command(command.clone()).ignore();
    }
    let started = Instant::now();
    let mut delay = Duration::from_millis(50);
    loop {
        match pipe.query_async::<()>(conn).await {
            Ok(()) => return true,
            Err(e) if started.elapsed() >= RETRY_FOR => {
                tracing::warn!("the shared event log: {}; its streams are marked as having a gap", describe(&e));
                return false;
            }
            Err(e) => {
                tracing::debug!("the shared event log: {}; sending again", describe(&e));
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::following;

    fn entries(seqs: &[u64]) -> Vec<Vec<u8>> {
        seqs.iter().map(|n| format!("{n}|{{}}").into_bytes()).collect()
    }

    fn seqs(events: &[(u64, Vec<u8>)]) -> Vec<u64> {
        events.iter().map(|(n, _)| *n).collect()
    }

    #[test]
    fn events_that_follow_on_are_whole() {
        let (events, whole) = following(2, &entries(&[1, 2, 3, 4]), None);
        assert_eq!((seqs(&events), whole), (vec![3, 4], true));
        let (events, whole) = following(0, &entries(&[1, 2]), Some(2));
        assert_eq!((seqs(&events), whole), (vec![1, 2], true));
        // A batch sent twice repeats entries: each is given once.
        let (events, whole) = following(0, &entries(&[1, 2, 3, 2, 3, 4]), Some(4));
        assert_eq!((seqs(&events), whole), (vec![1, 2, 3, 4], true));
    }

    #[test]
    fn a_missing_event_is_a_gap_wherever_it_is() {
        // Trimmed past the reader's place.
        assert!(!following(1, &entries(&[5, 6]), None).1);
        // Lost in the middle.
        assert!(!following(0, &entries(&[1, 2, 4]), None).1);
        // Lost at the end: the stream says where it ended.
        assert!(!following(0, &entries(&[1, 2]), Some(3)).1);
        // Nothing logged yet, nothing missing yet.
        assert!(following(7, &entries(&[]), None).1);
    }
}
