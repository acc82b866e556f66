//! One SSE response stream's events, kept so a client can resume it (2025-11-25 SSE polling):
//! the producer appends; readers (the POST response, or a GET with `Last-Event-ID`) follow.
//!
//! Bounded: at most `MAX_EVENTS` events are kept; older ones are dropped (a resume from before
//! them gets what is left).

use std::collections::VecDeque;
use std::sync::Mutex;

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
}

/// What a reader gets next.
pub(crate) enum Next {
    /// An event: its sequence number and JSON payload.
    Event(u64, Vec<u8>),
    /// The stream is complete, or the server closed this connection.
    End,
    /// Nothing yet.
    Wait,
}

impl EventStream {
    /// Appends an event; returns its sequence number.
    pub fn push(&self, data: Vec<u8>) -> u64 {
        let seq = {
            let mut s = self.state.lock().unwrap();
            s.next_seq += 1;
            let seq = s.next_seq;
            s.events.push_back((seq, data));
            if s.events.len() > MAX_EVENTS {
                s.events.pop_front();
            }
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
            s.events.push_back((seq, data));
            if s.events.len() > MAX_EVENTS {
                s.events.pop_front();
            }
        }
        self.notify.notify_waiters();
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
