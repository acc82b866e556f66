//! The bottom layer: small pieces that every other layer may use and that use nothing of the
//! crate: a boxed future, percent-decoding, wall-clock time.

pub mod percent;
pub mod time;

use std::future::Future;
use std::pin::Pin;

/// A boxed future, as stored handlers and transports return.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
