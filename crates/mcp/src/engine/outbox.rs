//! Where outgoing messages go: a bounded queue of serialized JSON-RPC messages.
//!
//! On stdio every message of a connection shares one outbox (the writer task drains it into
//! stdout); on HTTP each request has its own (its SSE stream) and a legacy session one more (its
//! GET stream). A full queue makes senders wait: a peer that stops reading slows the server down
//! instead of growing its memory.
//!
//! The queue is ours rather than tokio's `mpsc`: a legacy HTTP session keeps one for its GET
//! stream for as long as it lives, mostly empty, and an `mpsc` channel allocates about 1.2 KiB
//! up front (a block of 32 slots and cache-padded counters). This one is a `VecDeque` that
//! allocates only while messages wait, a semaphore counting the free places, and a `Notify` for
//! the single receiver: about 200 bytes when idle.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::sync::{Notify, Semaphore};

/// What the senders and the receiver share.
#[derive(Debug)]
struct Shared {
    queue: Mutex<VecDeque<Vec<u8>>>,
    /// Free places; closed when the receiver is gone.
    space: Semaphore,
    /// Wakes the receiver: a message was queued, or the last sender left.
    ready: Notify,
    /// Wakes senders waiting in [`Outbox::closed`].
    receiver_gone: Notify,
    senders: AtomicUsize,
}

impl Shared {
    fn push(&self, bytes: Vec<u8>) {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).push_back(bytes);
        self.ready.notify_one();
    }
}

/// The sending half of a message queue. Cheap to clone.
#[derive(Debug)]
pub struct Outbox {
    shared: Arc<Shared>,
}

impl Clone for Outbox {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::Relaxed);
        Outbox { shared: self.shared.clone() }
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.ready.notify_one();
        }
    }
}

/// The receiving half: one serialized message (no trailing newline) per item.
#[derive(Debug)]
pub struct OutboxReceiver {
    shared: Arc<Shared>,
}

/// Why [`OutboxReceiver::try_recv`] returned nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing is queued now.
    Empty,
    /// Nothing is queued and every sender is gone.
    Disconnected,
}

impl Outbox {
    /// A queue holding at most `capacity` messages.
    pub fn channel(capacity: usize) -> (Outbox, OutboxReceiver) {
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            space: Semaphore::new(capacity.max(1)),
            ready: Notify::new(),
            receiver_gone: Notify::new(),
            senders: AtomicUsize::new(1),
        });
        (Outbox { shared: shared.clone() }, OutboxReceiver { shared })
    }

    /// Queues one message; `false` when the other side is gone.
    pub async fn send<T: Serialize + ?Sized>(&self, message: &T) -> bool {
        match serde_json::to_vec(message) {
            Ok(bytes) => self.send_raw(bytes).await,
            Err(e) => {
                tracing::error!("could not serialize an outgoing message: {e}");
                false
            }
        }
    }

    /// Queues bytes that are already one serialized message.
    pub async fn send_raw(&self, bytes: Vec<u8>) -> bool {
        match self.shared.space.acquire().await {
            Ok(permit) => {
                permit.forget();
                self.shared.push(bytes);
                true
            }
            Err(_) => false,
        }
    }

    /// Queues bytes that are already one serialized message if there is room now; `false` when
    /// the queue is full or the other side is gone.
    pub fn try_send_raw(&self, bytes: Vec<u8>) -> bool {
        match self.shared.space.try_acquire() {
            Ok(permit) => {
                permit.forget();
                self.shared.push(bytes);
                true
            }
            Err(_) => false,
        }
    }

    /// Whether the receiving side is gone.
    pub fn is_closed(&self) -> bool {
        self.shared.space.is_closed()
    }

    /// Resolves when the receiving side is gone.
    pub async fn closed(&self) {
        loop {
            let gone = self.shared.receiver_gone.notified();
            if self.is_closed() {
                return;
            }
            gone.await;
        }
    }
}

impl OutboxReceiver {
    /// The next message; `None` once every sender is gone and the queue is empty. Cancel-safe:
    /// a message is taken only when this returns it.
    pub async fn recv(&mut self) -> Option<Vec<u8>> {
        loop {
            match self.try_recv() {
                Ok(message) => return Some(message),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => self.shared.ready.notified().await,
            }
        }
    }

    /// Whether no message is queued now.
    pub fn is_empty(&self) -> bool {
        self.shared.queue.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// The next message if one is queued now.
    pub fn try_recv(&mut self) -> Result<Vec<u8>, TryRecvError> {
        // Read the count first: a sender that queued and then left is seen in the queue.
        let senders = self.shared.senders.load(Ordering::Acquire);
        let message = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
        match message {
            Some(message) => {
                self.shared.space.add_permits(1);
                Ok(message)
            }
            None if senders == 0 => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }
}

impl Drop for OutboxReceiver {
    fn drop(&mut self) {
        self.shared.space.close();
        self.shared.queue.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.shared.receiver_gone.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn messages_arrive_in_order_and_the_end_is_seen() {
        let (tx, mut rx) = Outbox::channel(4);
        let tx2 = tx.clone();
        assert!(tx.send_raw(b"1".to_vec()).await);
        assert!(tx2.send(&serde_json::json!(2)).await);
        assert_eq!(rx.recv().await.unwrap(), b"1");
        assert_eq!(rx.try_recv().unwrap(), b"2");
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        drop(tx);
        assert!(tx2.try_send_raw(b"3".to_vec()));
        drop(tx2);
        assert_eq!(rx.recv().await.unwrap(), b"3", "queued before the last sender left");
        assert_eq!(rx.recv().await, None);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    }

    // On the paused clock, the sleeps below end only once the spawned tasks are parked.
    #[tokio::test(start_paused = true)]
    async fn a_full_queue_makes_senders_wait() {
        let (tx, mut rx) = Outbox::channel(2);
        assert!(tx.try_send_raw(vec![1]) && tx.try_send_raw(vec![2]));
        assert!(!tx.try_send_raw(vec![3]), "full");
        let waiting = tokio::spawn({
            let tx = tx.clone();
            async move { tx.send_raw(vec![3]).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "a full queue holds the sender");
        assert_eq!(rx.recv().await.unwrap(), vec![1]);
        assert!(waiting.await.unwrap(), "room made, the message went in");
        assert_eq!(rx.recv().await.unwrap(), vec![2]);
        assert_eq!(rx.recv().await.unwrap(), vec![3]);
    }

    #[tokio::test(start_paused = true)]
    async fn senders_learn_the_receiver_is_gone() {
        let (tx, rx) = Outbox::channel(1);
        assert!(tx.try_send_raw(vec![1]));
        let blocked = tokio::spawn({
            let tx = tx.clone();
            async move { tx.send_raw(vec![2]).await }
        });
        let closed = tokio::spawn({
            let tx = tx.clone();
            async move { tx.closed().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!tx.is_closed());
        drop(rx);
        assert!(!blocked.await.unwrap(), "a waiting send fails when the receiver leaves");
        tokio::time::timeout(Duration::from_secs(5), closed).await.unwrap().unwrap();
        assert!(tx.is_closed() && !tx.send_raw(vec![3]).await && !tx.try_send_raw(vec![4]));
    }

    #[tokio::test]
    async fn a_receiver_waiting_wakes_for_a_message_and_for_the_end() {
        let (tx, mut rx) = Outbox::channel(8);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(m) = rx.recv().await {
                got.push(m);
            }
            got
        });
        for i in 0..100u8 {
            assert!(tx.send_raw(vec![i]).await);
            if i % 10 == 0 {
                tokio::task::yield_now().await;
            }
        }
        drop(tx);
        let got = tokio::time::timeout(Duration::from_secs(5), reader).await.unwrap().unwrap();
        assert_eq!(got, (0..100u8).map(|i| vec![i]).collect::<Vec<_>>());
    }
}
