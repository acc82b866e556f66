//! Where outgoing messages go: a bounded queue of serialized JSON-RPC messages.
//!
//! On stdio every message of a connection shares one outbox (the writer task drains it into
//! stdout); on HTTP each request has its own (its SSE stream) and a legacy session one more (its
//! GET stream). A full queue makes senders wait: a peer that stops reading slows the server down
//! instead of growing its memory.

use serde::Serialize;
use tokio::sync::mpsc;

/// The sending half of a message queue. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Vec<u8>>,
}

/// The receiving half: one serialized message (no trailing newline) per item.
pub type OutboxReceiver = mpsc::Receiver<Vec<u8>>;

impl Outbox {
    /// A queue holding at most `capacity` messages.
    pub fn channel(capacity: usize) -> (Outbox, OutboxReceiver) {
        let (tx, rx) = mpsc::channel(capacity);
        (Outbox { tx }, rx)
    }

    /// Queues one message; `false` when the other side is gone.
    pub async fn send<T: Serialize + ?Sized>(&self, message: &T) -> bool {
        match serde_json::to_vec(message) {
            Ok(bytes) => self.tx.send(bytes).await.is_ok(),
            Err(e) => {
                tracing::error!("could not serialize an outgoing message: {e}");
                false
            }
        }
    }

    /// Queues bytes that are already one serialized message.
    pub async fn send_raw(&self, bytes: Vec<u8>) -> bool {
        self.tx.send(bytes).await.is_ok()
    }

    /// Queues bytes that are already one serialized message if there is room now; `false` when
    /// the queue is full or the other side is gone.
    pub fn try_send_raw(&self, bytes: Vec<u8>) -> bool {
        self.tx.try_send(bytes).is_ok()
    }

    /// Whether the receiving side is gone.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Resolves when the receiving side is gone.
    pub async fn closed(&self) {
        self.tx.closed().await
    }
}
