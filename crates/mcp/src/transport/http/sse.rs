//! Server-sent events: encoding, and response bodies that follow an [`EventStream`] or a queue.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use tokio_util::sync::CancellationToken;

use futures_util::stream::{self, BoxStream, StreamExt};

use super::events::{EventStream, Next};
use crate::engine::outbox::OutboxReceiver;
use crate::engine::splice::{self, Expanded};

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

/// A body made of `pieces` (a message whose text is streamed).
pub fn pieces(pieces: BoxStream<'static, Bytes>) -> Body {
    StreamBody::new(pieces.map(|piece| Ok::<_, Infallible>(Frame::data(piece)))).boxed_unsync()
}

/// One SSE event whose data may have a streamed text in it: its pieces, and, when it had one,
/// what to keep of it in its place for a later reader ([`splice::spent`]).
fn event_pieces(id: Option<&str>, data: Vec<u8>) -> (BoxStream<'static, Bytes>, Option<Vec<u8>>) {
    let spent = splice::spent(&data);
    match splice::expand(data) {
        Expanded::Whole(data) => (stream::once(std::future::ready(event(id, &data))).boxed(), None),
        Expanded::Streamed(pieces) => {
            let head = match id {
                Some(id) => Bytes::from(format!("id: {id}\ndata: ")),
                None => Bytes::from_static(b"data: "),
            };
            let pieces = stream::iter([head]).chain(pieces).chain(stream::iter([Bytes::from_static(b"\n\n")]));
            (pieces.boxed(), spent)
        }
    }
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
    let events = stream::unfold(state, move |(stream, prefix, after, first, guard)| async move {
        if let Some(first) = first {
            return Some((stream::once(std::future::ready(first)).boxed(), (stream, prefix, after, None, guard)));
        }
        let events = stream.as_ref()?;
        match events.next(after, generation).await {
            Next::Event(seq, data) => {
                let id = prefix.as_ref().map(|p| format!("{p}-{seq}"));
                let (pieces, spent) = event_pieces(id.as_deref(), data);
                if let Some(spent) = spent {
                    events.replace(seq, spent); // its text can be streamed once
                }
                Some((pieces, (stream, prefix, seq, None, guard)))
            }
            Next::Lost(error) => {
                let error = stream::once(std::future::ready(event(None, &error?))).boxed();
                Some((error, (None, prefix, after, None, guard)))
            }
            Next::End | Next::Wait => {
                if let Some(guard) = guard {
                    guard.disarm(); // ended normally: nothing to cancel
                }
                None
            }
        }
    });
    let frames = events.flatten().map(|piece| Ok::<_, Infallible>(Frame::data(piece)));
    StreamBody::new(frames).boxed_unsync()
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
    let events = stream::unfold(state, |(mut rx, ender, first)| async move {
        if let Some(first) = first {
            return Some((stream::once(std::future::ready(first)).boxed(), (rx, ender, None)));
        }
        let message = rx.recv().await?;
        if message.is_empty() {
            return Some((stream::once(std::future::ready(Bytes::from_static(b": \n\n"))).boxed(), (rx, ender, None)));
        }
        Some((event_pieces(None, message).0, (rx, ender, None)))
    });
    let frames = events.flatten().map(|piece| Ok::<_, Infallible>(Frame::data(piece)));
    StreamBody::new(frames).boxed_unsync()
}
