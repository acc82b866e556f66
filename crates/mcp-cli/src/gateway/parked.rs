//! Upstream requests in flight, and those waiting for a 2026-07-28 client's answer.
//!
//! A legacy upstream asks its question (an elicitation, say) in the middle of a call and waits.
//! A 2025-era downstream client is asked at once, on its session. A 2026-07-28 client has no
//! session: the gateway ends the client's request with `input_required`, and the upstream call
//! stays open, parked here under an unguessable id carried in the question's key, until the
//! client's retry brings the answer (or ten minutes pass, and it is cancelled).

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mcp::client::Client;
use mcp::server::{BoxFuture, RequestContext, ToolError};
use mcp::types::utilities::ProgressParams;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// How long a parked call waits for the client's retry.
const PARK_TTL: Duration = Duration::from_secs(600);
/// The most calls parked per upstream (the oldest is cancelled to make room).
const MAX_PARKED: usize = 1024;
/// The start of the keys the gateway gives its questions.
const KEY_PREFIX: &str = "gateway-";

/// A question from the upstream, for the downstream client.
pub struct Question {
    pub method: &'static str,
    pub params: Value,
    pub reply: oneshot::Sender<Result<Value, String>>,
}

/// Where an upstream request's questions go.
pub type Asker = mpsc::UnboundedSender<Question>;

/// One upstream request in flight: it runs in a task of its own, so that it outlives a
/// downstream request that ended with `input_required`. Dropped unfinished, it is cancelled.
pub struct Running<T> {
    pub id: u64,
    pub generation: u64,
    pub started: Instant,
    pub handle: JoinHandle<Result<T, mcp::Error>>,
    pub progress: mpsc::UnboundedReceiver<ProgressParams>,
    pub questions: mpsc::UnboundedReceiver<Question>,
    pub asker: Asker,
    /// How many questions it asked.
    pub asked: u32,
    /// The question whose answer the client's retry brings: its key and where the answer goes.
    pub waiting: Option<(String, oneshot::Sender<Result<Value, String>>)>,
    parked_at: Option<Instant>,
}

impl<T: Send + 'static> Running<T> {
    /// Sends `request` on `client` (connection `generation`).
    pub fn start(
        generation: u64,
        client: Client,
        request: impl FnOnce(Client, mpsc::UnboundedSender<ProgressParams>) -> BoxFuture<Result<T, mcp::Error>>,
    ) -> Running<T> {
        let (progress_tx, progress) = mpsc::unbounded_channel();
        let (asker, questions) = mpsc::unbounded_channel();
        Running {
            id: RandomState::new().hash_one(Instant::now()),
            generation,
            started: Instant::now(),
            handle: tokio::spawn(request(client, progress_tx)),
            progress,
            questions,
            asker,
            asked: 0,
            waiting: None,
            parked_at: None,
        }
    }
}

impl<T> Running<T> {
    /// The key of its latest question.
    pub fn key(&self) -> String {
        format!("{KEY_PREFIX}{}-{}", self.id, self.asked)
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
    calls: Mutex<HashMap<u64, Running<T>>>,
}

impl<T> Default for ParkedCalls<T> {
    fn default() -> Self {
        ParkedCalls { calls: Mutex::new(HashMap::new()) }
    }
}

impl<T> ParkedCalls<T> {
    /// Keeps `running` until its client's retry; calls parked too long are cancelled.
    pub fn park(&self, mut running: Running<T>) {
        running.parked_at = Some(Instant::now());
        let mut calls = self.calls.lock().unwrap();
        calls.retain(|_, r| r.parked_at.is_some_and(|t| t.elapsed() < PARK_TTL));
        if calls.len() >= MAX_PARKED {
            if let Some(oldest) = calls.iter().min_by_key(|(_, r)| r.parked_at).map(|(id, _)| *id) {
                calls.remove(&oldest);
            }
        }
        calls.insert(running.id, running);
    }

    /// The call `cx`'s answers belong to, given its answer; `None` when they name no call of
    /// the gateway's (a first request).
    pub fn resume(&self, cx: &RequestContext) -> Result<Option<Running<T>>, ToolError> {
        let answers = cx.input_responses();
        let Some(id) = answers.keys().find_map(|key| parked_id(key)) else { return Ok(None) };
        let Some(mut running) = self.calls.lock().unwrap().remove(&id) else {
            return Err(ToolError::new(
                "the call these answers belong to is no longer waiting (it took too long, or the gateway \
                 restarted): call the tool again, without inputResponses",
            ));
        };
        if let Some((key, reply)) = running.waiting.take() {
            let answer = answers.get(&key).cloned().ok_or_else(|| format!("the client sent no answer for {key}"));
            let _ = reply.send(answer);
        }
        Ok(Some(running))
    }
}

/// The call id in a key `gateway-ID-N`.
fn parked_id(key: &str) -> Option<u64> {
    let rest = key.strip_prefix(KEY_PREFIX)?;
    let (id, n) = rest.split_once('-')?;
    n.parse::<u32>().ok()?;
    id.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_call() {
        assert_eq!(parked_id("gateway-123-1"), Some(123));
        assert_eq!(parked_id("gateway-123"), None);
        assert_eq!(parked_id("elicitation-0"), None);
        assert_eq!(parked_id("gateway-x-1"), None);
    }
}
