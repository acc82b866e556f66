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

/// Why a request body could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// It is longer than the limit.
    TooLarge,
    /// The connection failed while it was read.
    Failed(String),
}

/// Reads a request body of at most `max` bytes into one buffer, sized from its `Content-Length`
/// when it gives one (`length`, trusted no further than `max`), each chunk copied in and dropped
/// as it comes: a body is held
/// once, not as its chunks and then again whole (4 MiB of body take 4 MiB, not 8).
pub async fn read_limited<B>(body: B, max: usize, length: Option<usize>) -> Result<Bytes, ReadError>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if length.is_some_and(|n| n > max) {
        return Err(ReadError::TooLarge);
    }
    let mut body = std::pin::pin!(body);
    let mut whole: Option<Bytes> = None;
    let mut buffer = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ReadError::Failed(e.into().to_string()))?;
        let Ok(chunk) = frame.into_data() else { continue }; // trailers
        let held = whole.as_ref().map_or(0, Bytes::len) + buffer.len();
        if held + chunk.len() > max {
            return Err(ReadError::TooLarge);
        }
        match whole.take() {
            // The first chunk is kept as it is: a body in one chunk is never copied.
            None if buffer.is_empty() => whole = Some(chunk),
            first => {
                if buffer.is_empty() {
                    buffer.reserve(length.unwrap_or(0).max(held + chunk.len()));
                }
                if let Some(first) = first {
                    buffer.extend_from_slice(&first);
                }
                buffer.extend_from_slice(&chunk);
            }
        }
    }
    Ok(whole.unwrap_or_else(|| buffer.freeze()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunked(chunks: &[&'static [u8]]) -> impl http_body::Body<Data = Bytes, Error = Infallible> {
        let frames: Vec<Result<http_body::Frame<Bytes>, Infallible>> =
            chunks.iter().map(|c| Ok(http_body::Frame::data(Bytes::from_static(c)))).collect();
        http_body_util::StreamBody::new(futures_util::stream::iter(frames))
    }

    #[tokio::test]
    async fn a_body_is_read_whole_once_within_its_limit() {
        let body = read_limited(chunked(&[b"ab", b"cd", b"e"]), 5, Some(5)).await.unwrap();
        assert_eq!(&body[..], b"abcde");
        let body = read_limited(chunked(&[b"ab", b"cd"]), 5, None).await.unwrap();
        assert_eq!(&body[..], b"abcd");
        assert!(matches!(read_limited(chunked(&[b"ab", b"cd"]), 3, None).await, Err(ReadError::TooLarge)));
        assert!(matches!(read_limited(chunked(&[b"a"]), 3, Some(4)).await, Err(ReadError::TooLarge)));
        // A body in one chunk is that chunk, not a copy.
        let one: &'static [u8] = b"only";
        let body = read_limited(chunked(&[one]), 10, Some(4)).await.unwrap();
        assert_eq!(body.as_ptr(), one.as_ptr());
        assert!(read_limited(chunked(&[]), 10, None).await.unwrap().is_empty());
    }
}
