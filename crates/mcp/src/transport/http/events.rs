//! One SSE response stream's events, kept so a client can resume it (2025-11-25 SSE polling):
//! the producer appends; readers (the POST response, or a GET with `Last-Event-ID`) follow.
//!
//! Bounded: at most `MAX_EVENTS` events are kept; older ones are dropped. A reader that still
//! needed a dropped event (a slow client, a resume from before them) is not handed what is left
//! as if it were whole: it gets [`Next::Lost`], and the request's error in words.

use std::collections::VecDeque;
use std::sync::Mutex;

use mcp_types::{ErrorObject, RequestId};
use tokio::sync::Notify;

const MAX_EVENTS: usize = 256;

/// The events of one stream.
#[derive(Default)]
pub(crate) struct EventStream {
    state: Mutex<State>,
    notify: Notify,
}

#[derive(Default)]
struct State {
    events: VecDeque<(u64, Vec<u8>)>,
    next_seq: u64,
    done: bool,
    /// Bumped when the server closes the current connection (readers then end).
    cut: u64,
    /// The highest sequence number dropped to keep the bound (0: none).
    dropped: u64,
    /// The request the stream answers, for the error a reader gets when it lost events.
    request: Option<RequestId>,
}

/// What a reader gets next.
pub(crate) enum Next {
    /// An event: its sequence number and JSON payload.
    Event(u64, Vec<u8>),
    /// The stream is complete, or the server closed this connection.
    End,
    /// Nothing yet.
    Wait,
    /// Events this reader had not read yet were dropped: the stream cannot be given whole.
    /// Carries the request's error response (JSON), when the request is known.
    Lost(Option<Vec<u8>>),
}

impl EventStream {
    /// An empty stream answering `request`.
    pub fn answering(request: RequestId) -> EventStream {
        let stream = EventStream::default();
        stream.state.lock().unwrap().request = Some(request);
        stream
    }

    /// Names the request the stream answers (a replayed stream learns it from the shared log).
    pub fn set_request(&self, request: RequestId) {
        self.state.lock().unwrap().request.get_or_insert(request);
    }

    /// Appends an event; returns its sequence number.
    pub fn push(&self, data: Vec<u8>) -> u64 {
        let seq = {
            let mut s = self.state.lock().unwrap();
            s.next_seq += 1;
            let seq = s.next_seq;
            s.keep(seq, data);
            seq
        };
        self.notify.notify_waiters();
        seq
    }

    /// Appends an event under a sequence number given elsewhere (a stream replayed from the
    /// shared log keeps its producer's numbers); numbers not above the last are ignored.
    pub fn push_at(&self, seq: u64, data: Vec<u8>) {
        {
            let mut s = self.state.lock().unwrap();
            if seq <= s.next_seq {
                return;
            }
            s.next_seq = seq;
            s.keep(seq, data);
        }
        self.notify.notify_waiters();
    }

    /// Puts `data` in place of event `seq`, if it is still kept.
    pub fn replace(&self, seq: u64, data: Vec<u8>) {
        let mut s = self.state.lock().unwrap();
        if let Some(event) = s.events.iter_mut().find(|(n, _)| *n == seq) {
            event.1 = data;
        }
    }

    /// The sequence number the next [`EventStream::push`] will get.
    pub fn next_seq(&self) -> u64 {
        self.state.lock().unwrap().next_seq + 1
    }

    /// Marks the stream complete.
    pub fn finish(&self) {
        self.state.lock().unwrap().done = true;
        self.notify.notify_waiters();
    }

    /// Ends the current connections; the stream goes on for resumers.
    pub fn cut(&self) {
        self.state.lock().unwrap().cut += 1;
        self.notify.notify_waiters();
    }

    /// The current cut generation, for a new reader.
    pub fn generation(&self) -> u64 {
        self.state.lock().unwrap().cut
    }

    fn poll_next(&self, after: u64, generation: u64) -> Next {
        let s = self.state.lock().unwrap();
        if after < s.dropped {
            return Next::Lost(s.request.as_ref().map(lost_events));
        }
        if let Some((seq, data)) = s.events.iter().find(|(seq, _)| *seq > after) {
            return Next::Event(*seq, data.clone());
        }
        if s.done || s.cut != generation {
            return Next::End;
        }
        Next::Wait
    }

    /// Waits for the next event after `after`.
    pub async fn next(&self, after: u64, generation: u64) -> Next {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.poll_next(after, generation) {
                Next::Wait => notified.await,
                other => return other,
            }
        }
    }
}

impl State {
    /// Keeps event `seq`, dropping the oldest beyond the bound.
    fn keep(&mut self, seq: u64, data: Vec<u8>) {
        self.events.push_back((seq, data));
        if self.events.len() > MAX_EVENTS {
            if let Some((old, _)) = self.events.pop_front() {
                self.dropped = old;
            }
        }
    }
}

/// The error a reader gets instead of a stream with a hole in it.
fn lost_events(request: &RequestId) -> Vec<u8> {
    let error = ErrorObject::internal(format!(
        "this response stream cannot be given whole: more than {MAX_EVENTS} of its events were not read in time \
         and are no longer kept; call again"
    ));
    crate::server::connection::response_bytes(request, Err(error))
}

#[cfg(test)]
mod tests {
    use super::{EventStream, Next, MAX_EVENTS};
    use mcp_types::RequestId;

    #[test]
    fn a_reader_behind_the_kept_events_is_told_it_lost_some() {
        let stream = EventStream::answering(RequestId::Number(7));
        for n in 0..MAX_EVENTS as u64 + 3 {
            stream.push(n.to_string().into_bytes());
        }
        // Events 1 to 3 were dropped: a reader after 3 still gets every event it needs.
        assert!(matches!(stream.poll_next(3, 0), Next::Event(4, _)));
        match stream.poll_next(2, 0) {
            Next::Lost(Some(error)) => {
                let error: serde_json::Value = serde_json::from_slice(&error).unwrap();
                assert_eq!(error["id"], 7);
                assert!(error["error"]["message"].as_str().unwrap().contains("cannot be given whole"));
            }
            _ => panic!("a reader after event 2 has lost event 3"),
        }
    }
}
