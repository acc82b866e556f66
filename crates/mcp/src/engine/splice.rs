//! Text sent as it is read. A resource too large to hold in memory (a report of a hundred
//! megabytes) is answered with a placeholder where its text goes; the writer that sends the
//! message (the stdio loop, an HTTP body, an SSE event) streams the text into that place,
//! escaped as JSON, chunk by chunk. The message is still one JSON-RPC response, byte for byte
//! what it would have been had the text been held whole.
//!
//! [`register`] keeps the reader under a random id and gives the placeholder text,
//! `"\0mcp-splice:ID"` (JSON writes it `\u0000mcp-splice:ID`). Writers look for placeholders
//! only while some are waiting: one atomic load otherwise. A placeholder is sent once; what may
//! send a message again (an SSE stream a client resumes, the cluster's shared log) keeps
//! `spent`'s error response instead. At most `MAX_WAITING` readers wait; past that the oldest
//! is dropped, and its message becomes an error response when it is sent.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt};

/// A placeholder as JSON writes it, before its id.
const MARK: &[u8] = b"\\u0000mcp-splice:";
/// The length of an id: 128 random bits in hex.
const ID_LEN: usize = 32;
/// Readers waiting to be sent, at most.
const MAX_WAITING: usize = 64;
/// Bytes read from a reader at a time.
const CHUNK: usize = 64 * 1024;

/// Where streamed text comes from.
pub type Reader = Box<dyn AsyncRead + Send + Unpin>;

/// What a placeholder stands for.
enum Entry {
    Waiting(Reader),
    /// Dropped to make room: its message is sent as an error.
    Dropped,
}

/// The waiting readers by id, oldest first (a handful at most: a list is enough).
static TABLE: Mutex<VecDeque<(String, Entry)>> = Mutex::new(VecDeque::new());
/// How many entries [`TABLE`] holds, read without its lock.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Keeps `reader` until the message holding the returned placeholder text is sent.
pub fn register(reader: Reader) -> String {
    let mut bytes = [0u8; ID_LEN / 2];
    // Never zeros: two readers under one id would swap their texts. (A handler's panic is
    // answered with an error.)
    crate::util::random::fill_or_panic(&mut bytes);
    let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut table = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    table.push_back((id.clone(), Entry::Waiting(reader)));
    let waiting = table.iter().filter(|(_, e)| matches!(e, Entry::Waiting(_))).count();
    if waiting > MAX_WAITING {
        if let Some((_, oldest)) = table.iter_mut().find(|(_, e)| matches!(e, Entry::Waiting(_))) {
            *oldest = Entry::Dropped; // closes its file
        }
    }
    while table.len() > 4 * MAX_WAITING {
        table.pop_front();
    }
    LIVE.store(table.len(), Ordering::Release);
    format!("\0mcp-splice:{id}")
}

/// A message ready to write: whole, or streamed in pieces.
pub(crate) enum Expanded {
    /// The message as it was (no placeholder in it), or an error response in its place.
    Whole(Vec<u8>),
    /// The message's bytes up to the placeholder, the text, then the rest.
    Streamed(BoxStream<'static, Bytes>),
}

/// `message`, with the text of its placeholder streamed in, if it has one of this process's.
pub(crate) fn expand(message: Vec<u8>) -> Expanded {
    let Some((at, end, id)) = placeholder(&message) else {
        return Expanded::Whole(message);
    };
    match take(&id) {
        None => Expanded::Whole(message),
        Some(Entry::Dropped) => Expanded::Whole(error_for(
            &message,
            "the server had too many large reads waiting to be sent and dropped this one; read the resource again",
        )),
        Some(Entry::Waiting(reader)) => {
            let message = Bytes::from(message);
            let (head, tail) = (message.slice(..at), message.slice(end..));
            let pieces = stream::iter([head]).chain(escaped(reader)).chain(stream::iter([tail]));
            Expanded::Streamed(pieces.boxed())
        }
    }
}

/// What to keep of a message that may be sent again: an error response in place of one whose
/// text is streamed (it can be streamed once), else `None` (keep the message).
#[cfg_attr(not(feature = "http"), allow(dead_code))] // only HTTP streams are sent again
pub(crate) fn spent(message: &[u8]) -> Option<Vec<u8>> {
    placeholder(message)?;
    Some(error_for(
        message,
        "this response streamed a large text once and cannot send it again; read the resource again",
    ))
}

/// Where a placeholder of this process's is in `message`: its start, its end and its id.
fn placeholder(message: &[u8]) -> Option<(usize, usize, String)> {
    if LIVE.load(Ordering::Acquire) == 0 {
        return None;
    }
    let at = memchr::memmem::find(message, MARK)?;
    let end = at + MARK.len() + ID_LEN;
    let id = std::str::from_utf8(message.get(at + MARK.len()..end)?).ok()?;
    (message.get(end) == Some(&b'"')).then(|| (at, end, id.to_owned()))
}

/// Takes the entry for `id` out of the table.
fn take(id: &str) -> Option<Entry> {
    let mut table = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    let index = table.iter().position(|(known, _)| known == id)?;
    let entry = table.remove(index).map(|(_, entry)| entry);
    LIVE.store(table.len(), Ordering::Release);
    entry
}

/// The error response to the request `message` answers, saying `why`.
fn error_for(message: &[u8], why: &str) -> Vec<u8> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: serde_json::Value,
    }
    let id = serde_json::from_slice::<Id>(message).map(|m| m.id).unwrap_or(serde_json::Value::Null);
    let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": why}});
    serde_json::to_vec(&error).unwrap_or_default()
}

/// The text `reader` gives, as the inside of a JSON string, piece by piece. Bytes that are not
/// UTF-8 become U+FFFD; a read that fails ends the text with a line saying so (the message has
/// begun: it can only be finished).
fn escaped(reader: Reader) -> impl futures_util::Stream<Item = Bytes> + Send {
    stream::unfold(Some((reader, Vec::new())), |state| async move {
        let (mut reader, mut carry) = state?;
        let mut chunk = carry.split_off(0);
        let start = chunk.len();
        chunk.resize(start + CHUNK, 0);
        match reader.read(&mut chunk[start..]).await {
            Ok(0) if start == 0 => None,
            Ok(0) => Some((json_inside(&String::from_utf8_lossy(&chunk[..start])), None)),
            Ok(n) => {
                chunk.truncate(start + n);
                let valid = match std::str::from_utf8(&chunk) {
                    Ok(_) => chunk.len(),
                    // An incomplete character at the end waits for the next read.
                    Err(e) if e.error_len().is_none() => e.valid_up_to(),
                    Err(_) => chunk.len(),
                };
                carry = chunk.split_off(valid);
                Some((json_inside(&String::from_utf8_lossy(&chunk)), Some((reader, carry))))
            }
            Err(e) => Some((json_inside(&format!("\n[the rest could not be read: {e}]")), None)),
        }
    })
}

/// `text` escaped as the inside of a JSON string.
fn json_inside(text: &str) -> Bytes {
    let quoted = serde_json::to_vec(text).unwrap_or_default();
    Bytes::copy_from_slice(&quoted[1..quoted.len().saturating_sub(1).max(1)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message_with(text: &str) -> Vec<u8> {
        let value =
            serde_json::json!({"jsonrpc": "2.0", "id": 4, "result": {"contents": [{"uri": "x:", "text": text}]}});
        serde_json::to_vec(&value).unwrap()
    }

    async fn written(expanded: Expanded) -> Vec<u8> {
        match expanded {
            Expanded::Whole(bytes) => bytes,
            Expanded::Streamed(pieces) => pieces.collect::<Vec<_>>().await.concat(),
        }
    }

    #[tokio::test]
    async fn streamed_text_is_what_the_whole_text_would_have_been() {
        // Quotes, controls, non-ASCII split across reads, and more than one chunk.
        let text = format!("a\"b\\c\n\t\u{1}é漢字😀{}", "x".repeat(CHUNK * 2 + 5));
        let placeholder = register(Box::new(std::io::Cursor::new(text.clone().into_bytes())));
        let sent = written(expand(message_with(&placeholder))).await;
        assert_eq!(sent, message_with(&text));
        // Sent once: the same message again is not this process's any more.
        assert_eq!(written(expand(message_with(&placeholder))).await, message_with(&placeholder));
    }

    #[tokio::test]
    async fn what_may_be_sent_again_keeps_an_error_and_bad_bytes_are_replaced() {
        let placeholder = register(Box::new(std::io::Cursor::new(b"ok \xff\xfe end".to_vec())));
        let message = message_with(&placeholder);
        let kept: serde_json::Value = serde_json::from_slice(&spent(&message).unwrap()).unwrap();
        assert_eq!(kept["id"], 4);
        assert!(kept["error"]["message"].as_str().unwrap().contains("cannot send it again"));
        let sent: serde_json::Value = serde_json::from_slice(&written(expand(message)).await).unwrap();
        assert_eq!(sent["result"]["contents"][0]["text"], "ok \u{fffd}\u{fffd} end");
        assert_eq!(spent(&message_with("plain")), None);
    }
}
