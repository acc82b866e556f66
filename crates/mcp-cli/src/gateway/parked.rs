//! Upstream requests in flight, and those waiting for a 2026-07-28 client's answer.
//!
//! A legacy upstream asks its question (an elicitation, say) in the middle of a call and waits.
//! A 2025-era downstream client is asked at once, on its session. A 2026-07-28 client has no
//! session: the gateway ends the client's request with `input_required`, and the upstream call
//! stays open, parked here under an unguessable id (128 bits from the operating system) carried
//! in the question's key, until the client's retry brings the answer (or ten minutes pass, and
//! it is cancelled). Only the account that parked a call may resume it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mcp::client::Client;
use mcp::proxy::ProxyContext as _;
use mcp::server::{BoxFuture, RequestContext, ToolError};
use mcp::types::utilities::ProgressParams;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

/// How long a parked call waits for the client's retry.
const PARK_TTL: Duration = Duration::from_secs(600);
/// The most calls parked per upstream (the oldest is cancelled to make room).
const MAX_PARKED: usize = 1024;
/// The most questions one upstream request may have waiting for an answer at once.
const MAX_QUESTIONS: usize = 8;
/// The start of the keys the gateway gives its questions.
const KEY_PREFIX: &str = "gateway-";

/// A question from the upstream, for the downstream client.
pub struct Question {
    pub method: &'static str,
    pub params: Value,
    pub reply: oneshot::Sender<Result<Value, String>>,
}

/// Where an upstream request's questions go (bounded: an upstream that asks faster than its
/// client answers is refused).
pub type Asker = mpsc::Sender<Question>;

/// The latest progress of an upstream request: a newer report replaces one not yet passed on,
/// so a chatty upstream costs one slot, not a queue.
pub type ProgressSink = watch::Sender<Option<ProgressParams>>;

/// Tags the upstream requests sent for one downstream request (see [`mcp::client::tagged`]).
static NEXT_TAG: AtomicU64 = AtomicU64::new(1);

/// A parked call's id: 128 bits from the operating system's generator, in hex.
fn random_id() -> Result<String, ToolError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| {
        ToolError::new(format!("the gateway cannot draw a random id ({e}): the question is not passed on"))
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// One upstream request in flight: it runs in a task of its own, so that it outlives a
/// downstream request that ended with `input_required`. Dropped unfinished, it is cancelled.
pub struct Running<T> {
    /// The tag its upstream requests carry.
    pub tag: u64,
    pub generation: u64,
    pub started: Instant,
    pub handle: JoinHandle<Result<T, mcp::Error>>,
    pub progress: watch::Receiver<Option<ProgressParams>>,
    pub questions: mpsc::Receiver<Question>,
    pub asker: Asker,
    /// How many questions it asked.
    pub asked: u32,
    /// The question whose answer the client's retry brings: its key and where the answer goes.
    pub waiting: Option<(String, oneshot::Sender<Result<Value, String>>)>,
    /// Its id in its questions' keys, drawn at its first question.
    id: Option<String>,
    /// While parked: the account that may resume it, and since when.
    parked_by: Option<(String, Instant)>,
    /// Its place on its connection's waiting list (kept while parked: the upstream's next
    /// question waits in `questions` for the client's retry).
    pub waiter: Option<super::callers::Waiting>,
}

/// What a request about to be sent upstream has before it is sent: its tag, and the channel its
/// questions come on (so that the waiting list knows it first).
pub struct Starting {
    pub tag: u64,
    pub asker: Asker,
    questions: mpsc::Receiver<Question>,
}

impl Starting {
    pub fn new() -> Starting {
        let (asker, questions) = mpsc::channel(MAX_QUESTIONS);
        Starting { tag: NEXT_TAG.fetch_add(1, Ordering::Relaxed), asker, questions }
    }

    /// Sends `request` on `client` (connection `generation`), every request of it tagged.
    pub fn start<T: Send + 'static>(
        self,
        generation: u64,
        client: Client,
        request: impl FnOnce(Client, ProgressSink) -> BoxFuture<Result<T, mcp::Error>>,
    ) -> Running<T> {
        let (progress_tx, progress) = watch::channel(None);
        Running {
            tag: self.tag,
            generation,
            started: Instant::now(),
            handle: tokio::spawn(mcp::client::tagged(self.tag, request(client, progress_tx))),
            progress,
            questions: self.questions,
            asker: self.asker,
            asked: 0,
            waiting: None,
            id: None,
            parked_by: None,
            waiter: None,
        }
    }
}

impl<T> Running<T> {
    /// The key of its latest question, which names the call.
    pub fn key(&mut self) -> Result<String, ToolError> {
        if self.id.is_none() {
            self.id = Some(random_id()?);
        }
        Ok(format!("{KEY_PREFIX}{}-{}", self.id.as_deref().unwrap_or_default(), self.asked))
    }

    fn parked_at(&self) -> Option<Instant> {
        self.parked_by.as_ref().map(|(_, at)| *at)
    }

    /// The latest progress not yet passed on.
    pub fn fresh_progress(&mut self) -> Option<ProgressParams> {
        if !self.progress.has_changed().unwrap_or(false) {
            return None;
        }
        self.progress.borrow_and_update().clone()
    }
}

impl<T> Drop for Running<T> {
    fn drop(&mut self) {
        // Dropping the request's future tells the upstream it is cancelled.
        self.handle.abort();
    }
}

/// The calls waiting for their client's retry.
pub struct ParkedCalls<T> {
    calls: Mutex<HashMap<String, Running<T>>>,
}

impl<T> Default for ParkedCalls<T> {
    fn default() -> Self {
        ParkedCalls { calls: Mutex::new(HashMap::new()) }
    }
}

impl<T> ParkedCalls<T> {
    /// Keeps `running` until the retry of `cx`'s caller; calls parked too long are cancelled.
    pub fn park(&self, mut running: Running<T>, cx: &RequestContext) {
        let Some(id) = running.id.clone() else { return }; // it asked nothing: nothing to resume
        running.parked_by = Some((cx.account(), Instant::now()));
        let mut calls = self.calls.lock().unwrap();
        calls.retain(|_, r| r.parked_at().is_some_and(|at| at.elapsed() < PARK_TTL));
        if calls.len() >= MAX_PARKED {
            if let Some(oldest) = calls.iter().min_by_key(|(_, r)| r.parked_at()).map(|(id, _)| id.clone()) {
                calls.remove(&oldest);
            }
        }
        calls.insert(id, running);
    }

    /// The call `cx`'s answers belong to, given its answer; `None` when they name no call of
    /// the gateway's (a first request). A call parked by another account is not found.
    pub fn resume(&self, cx: &RequestContext) -> Result<Option<Running<T>>, ToolError> {
        let answers = cx.input_responses();
        let Some(id) = answers.keys().find_map(|key| parked_id(key)) else { return Ok(None) };
        let gone = || {
            ToolError::new(
                "the call these answers belong to is no longer waiting (it took too long, or the gateway \
                 restarted): call the tool again, without inputResponses",
            )
        };
        let mut calls = self.calls.lock().unwrap();
        let owner = calls.get(id).and_then(|r| r.parked_by.as_ref()).map(|(owner, _)| owner.clone());
        if owner.is_none_or(|owner| owner != cx.account()) {
            return Err(gone()); // another account's call is as good as gone
        }
        let mut running = calls.remove(id).ok_or_else(gone)?;
        drop(calls);
        if let Some((key, reply)) = running.waiting.take() {
            let answer = answers.get(&key).cloned().ok_or_else(|| format!("the client sent no answer for {key}"));
            let _ = reply.send(answer);
        }
        Ok(Some(running))
    }
}

/// The call id in a key `gateway-ID-N`.
fn parked_id(key: &str) -> Option<&str> {
    let rest = key.strip_prefix(KEY_PREFIX)?;
    let (id, n) = rest.rsplit_once('-')?;
    n.parse::<u32>().ok()?;
    (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_call() {
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(parked_id(&format!("gateway-{id}-1")), Some(id));
        assert_eq!(parked_id(&format!("gateway-{id}")), None);
        assert_eq!(parked_id("gateway-123-1"), None, "short ids are not the gateway's");
        assert_eq!(parked_id("elicitation-0"), None);
        assert_eq!(parked_id("gateway-x-1"), None);
    }

    #[test]
    fn ids_are_random_and_128_bits() {
        let (a, b) = (random_id().unwrap(), random_id().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
