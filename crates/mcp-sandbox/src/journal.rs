//! What a sandboxed server tried, as seen from outside it: every connection it asked the proxy
//! for, allowed or refused. `mcp doctor` reads it to tell a person what the policy refused.

use std::sync::{Arc, Mutex};

/// Events kept at most; later ones are counted, not kept.
const MAX_EVENTS: usize = 1000;

/// One attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// What it was: `connect`.
    pub kind: &'static str,
    /// What it was for: `host:port`.
    pub target: String,
    /// Whether the policy allowed it.
    pub allowed: bool,
}

/// A shared, bounded list of events.
#[derive(Debug, Clone, Default)]
pub struct Journal(Arc<Mutex<(Vec<Event>, usize)>>);

impl Journal {
    /// Notes an attempt.
    pub fn record(&self, kind: &'static str, target: &str, allowed: bool) {
        let mut inner = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if inner.0.len() < MAX_EVENTS {
            inner.0.push(Event { kind, target: target.to_owned(), allowed });
        } else {
            inner.1 += 1;
        }
    }

    /// The events so far, and how many more were not kept.
    pub fn events(&self) -> (Vec<Event>, usize) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The refused ones, each once, in order.
    pub fn refused(&self) -> Vec<Event> {
        let mut seen = Vec::<Event>::new();
        for event in self.events().0.into_iter().filter(|e| !e.allowed) {
            if !seen.contains(&event) {
                seen.push(event);
            }
        }
        seen
    }
}
