//! The bottom layer: small pieces that every other layer may use and that use nothing of the
//! crate: a boxed future and a first poll of one, percent-decoding, wall-clock time, random
//! bytes.

pub mod percent;
pub mod random;
pub mod time;

use std::future::Future;
use std::pin::Pin;

/// A boxed future, as stored handlers and transports return.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Polls `work` once, where it stands, with a waker that does nothing: `Ok(Some(output))` when it
/// finished, `Ok(None)` when it waits (spawn it then: its first poll in the task registers the
/// real waker), `Err(())` when that poll panicked (the caller lives on, as it would beside a task
/// that panicked). Most requests finish here, without a task of their own.
pub(crate) fn poll_once<F: Future + Unpin>(work: &mut F) -> Result<Option<F::Output>, ()> {
    let first_poll = std::panic::AssertUnwindSafe(|| futures_util::FutureExt::now_or_never(work));
    std::panic::catch_unwind(first_poll).map_err(|_| ())
}
