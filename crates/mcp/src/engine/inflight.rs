//! The requests of one connection or session that are running, by id, each with the token that
//! cancels it.
//!
//! Every entry carries a generation, so a request that ends never removes a later request that
//! reused its id (a client may reuse an id once its request is answered or cancelled).

use std::collections::HashMap;

use mcp_types::RequestId;
use tokio_util::sync::CancellationToken;

/// The running requests.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    running: HashMap<RequestId, (u64, CancellationToken)>,
    next: u64,
}

/// What identifies one request's entry: its id and generation.
#[derive(Debug, Clone)]
pub(crate) struct Ticket {
    pub id: RequestId,
    generation: u64,
}

impl InFlight {
    /// Whether a request with this id is running.
    pub fn contains(&self, id: &RequestId) -> bool {
        self.running.contains_key(id)
    }

    /// Whether nothing is running.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // HTTP sessions ask
    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Records a running request; the ticket removes exactly this entry later.
    pub fn insert(&mut self, id: RequestId, token: CancellationToken) -> Ticket {
        self.next += 1;
        self.running.insert(id.clone(), (self.next, token));
        Ticket { id, generation: self.next }
    }

    /// Forgets a request that ended, unless its id now belongs to a later request.
    pub fn finish(&mut self, ticket: &Ticket) {
        if self.running.get(&ticket.id).is_some_and(|(g, _)| *g == ticket.generation) {
            self.running.remove(&ticket.id);
        }
    }

    /// Cancels the request `id` (a `notifications/cancelled`); `false` if none was running.
    pub fn cancel(&mut self, id: &RequestId) -> bool {
        match self.running.remove(id) {
            Some((_, token)) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels every running request.
    pub fn cancel_all(&mut self) {
        for (_, (_, token)) in self.running.drain() {
            token.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ended_request_does_not_remove_a_later_one_with_its_id() {
        let mut inflight = InFlight::default();
        let first = inflight.insert(RequestId::Number(1), CancellationToken::new());
        assert!(inflight.cancel(&RequestId::Number(1)));
        let second_token = CancellationToken::new();
        let _second = inflight.insert(RequestId::Number(1), second_token.clone());
        inflight.finish(&first); // the cancelled first request's task ends late
        assert!(inflight.contains(&RequestId::Number(1)));
        assert!(inflight.cancel(&RequestId::Number(1)));
        assert!(second_token.is_cancelled());
    }
}
