//! The body type of HTTP responses we make (the Streamable HTTP endpoint and the resource
//! server's own answers): boxed, so a complete body and an event stream are one type.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};

/// The response body type of the HTTP transport.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A body holding `bytes`.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}
