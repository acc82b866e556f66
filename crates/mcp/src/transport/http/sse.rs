//! Server-sent events: encoding, and response bodies that follow an [`EventStream`] or a queue.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use tokio_util::sync::CancellationToken;

use super::events::{EventStream, Next};
use crate::engine::outbox::OutboxReceiver;

pub use crate::net::body::{full, Body};

/// An empty body.
pub fn empty() -> Body {
    full(Bytes::new())
}

/// One SSE event: optional id, data lines.
pub fn event(id: Option<&str>, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 32);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// A priming event: an id and empty data, and how long to wait before reconnecting.
pub fn priming(id: &str, retry_ms: u64) -> Bytes {
    Bytes::from(format!("id: {id}\nretry: {retry_ms}\ndata: \n\n"))
}

/// A body that follows `stream` from after `after`, ids prefixed `prefix-`; `first` is sent
/// before anything else. When dropped before the stream ended, `on_drop` is cancelled (a client
/// that goes away cancels its 2026-07-28 request). A reader that lost events gets the request's
/// error as the last event (and its request is cancelled: the client has its answer).
pub fn follow(
    stream: Arc<EventStream>,
    prefix: Option<String>,
    after: u64,
    first: Option<Bytes>,
    on_drop: Option<CancellationToken>,
) -> Body {
    let generation = stream.generation();
    let guard = on_drop.map(|t| t.drop_guard());
    let state = (Some(stream), prefix, after, first, guard);
    let body = futures_util::stream::unfold(state, move |(stream, prefix, after, first, guard)| async move {
        if let Some(first) = first {
            return Some((Ok::<_, Infallible>(Frame::data(first)), (stream, prefix, after, None, guard)));
        }
        match stream.as_ref()?.next(after, generation).await {
            Next::Event(seq, data) => {
                let id = prefix.as_ref().map(|p| format!("{p}-{seq}"));
                let frame = Frame::data(event(id.as_deref(), &data));
                Some((Ok(frame), (stream, prefix, seq, None, guard)))
            }
            Next::Lost(error) => Some((Ok(Frame::data(event(None, &error?))), (None, prefix, after, None, guard))),
            Next::End | Next::Wait => {
                if let Some(guard) = guard {
                    guard.disarm(); // ended normally: nothing to cancel
                }
                None
            }
        }
    });
    StreamBody::new(body).boxed_unsync()
}

/// A body that streams a queue of messages as SSE events (a legacy GET stream).
pub fn from_queue(
    rx: tokio::sync::OwnedMutexGuard<OutboxReceiver>,
    on_end: impl FnOnce() + Send + 'static,
    first: Option<Bytes>,
) -> Body {
    struct Ender<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Ender<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f()
            }
        }
    }
    let state = (rx, Ender(Some(on_end)), first);
    let body = futures_util::stream::unfold(state, |(mut rx, ender, first)| async move {
        if let Some(first) = first {
            return Some((Ok::<_, Infallible>(Frame::data(first)), (rx, ender, None)));
        }
        let message = rx.recv().await?;
        if message.is_empty() {
            return Some((Ok(Frame::data(Bytes::from_static(b": \n\n"))), (rx, ender, None)));
        }
        Some((Ok(Frame::data(event(None, &message))), (rx, ender, None)))
    });
    StreamBody::new(body).boxed_unsync()
}
