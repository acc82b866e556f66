//! A server-sent events parser: bytes in, events out (`id`, `event`, `data`, `retry`).

use std::time::Duration;

/// One event.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Event {
    /// `id:`, if any.
    pub id: Option<String>,
    /// `event:`, if any.
    pub event: Option<String>,
    /// The joined `data:` lines.
    pub data: String,
    /// `retry:` in milliseconds, if any.
    pub retry: Option<u64>,
}

/// The longest line, and the largest event, the parser holds; longer ones are skipped whole, so
/// a server that never ends a line cannot grow the client's memory.
const MAX_PENDING: usize = 16 << 20;

/// The longest `retry:` delay honoured; a larger one is taken as this.
const MAX_RETRY: Duration = Duration::from_secs(60);

/// Incremental parser; feed it chunks, take whole events. Works on bytes, so a UTF-8 character
/// split between two chunks arrives whole.
#[derive(Debug, Default)]
pub struct Parser {
    buffer: Vec<u8>,
    current: Event,
    has_data: bool,
    /// Inside a line that grew past [`MAX_PENDING`]: drop bytes until its end.
    skipping_line: bool,
    /// The current event grew past [`MAX_PENDING`]: it is not delivered.
    oversized: bool,
    /// The most an event or a line may hold (0: [`MAX_PENDING`]).
    limit: usize,
    /// Some event was dropped for its size.
    dropped: bool,
}

impl Parser {
    /// A parser whose events may hold at most `limit` bytes.
    pub fn with_limit(limit: usize) -> Parser {
        Parser { limit, ..Parser::default() }
    }

    /// Whether some event was dropped because it was larger than the limit.
    pub fn dropped_any(&self) -> bool {
        self.dropped
    }

    fn limit(&self) -> usize {
        if self.limit == 0 {
            MAX_PENDING
        } else {
            self.limit
        }
    }

    /// Adds bytes; returns the events they completed. However the stream is cut into chunks, the
    /// same events come out: a line longer than the limit is skipped, whether it arrived whole
    /// or in pieces, and the event it belongs to is dropped (a comment line is only skipped).
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(n) = self.buffer[start..].iter().position(|&b| b == b'\n') {
            let end = start + n;
            if std::mem::take(&mut self.skipping_line) {
                start = end + 1;
                continue;
            }
            if end - start > self.limit() {
                self.too_long(self.buffer[start] == b':');
                start = end + 1;
                continue;
            }
            let line = String::from_utf8_lossy(&self.buffer[start..end]).into_owned();
            start = end + 1;
            self.line(line.trim_end_matches('\r'), &mut events);
        }
        self.buffer.drain(..start);
        if self.buffer.len() > self.limit() {
            // Judged once, from its start (later pieces of a line being skipped are not its start).
            if !self.skipping_line {
                self.too_long(self.buffer[0] == b':');
            }
            self.buffer.clear();
            self.skipping_line = true;
        }
        events
    }

    /// A line longer than the limit: a comment is skipped, any other line drops its event.
    fn too_long(&mut self, comment: bool) {
        if !comment {
            self.current.data = String::new();
            self.oversized = true;
            self.dropped = true;
        }
    }

    fn line(&mut self, line: &str, events: &mut Vec<Event>) {
        if line.is_empty() {
            let event = std::mem::take(&mut self.current);
            if !std::mem::take(&mut self.oversized) && (self.has_data || event.id.is_some() || event.retry.is_some()) {
                events.push(event);
            }
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = line.split_once(':').map_or((line, ""), |(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)));
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
                if self.current.data.len() > self.limit() {
                    self.current.data = String::new();
                    self.oversized = true;
                    self.dropped = true;
                }
            }
            "id" => self.current.id = Some(value.to_owned()),
            "event" => self.current.event = Some(value.to_owned()),
            "retry" => self.current.retry = value.trim().parse().ok(),
            _ => {}
        }
    }
}

/// Where to pick a cut stream up again: the last event id seen and the server's `retry:` delay.
#[derive(Debug)]
pub(crate) struct Resumption {
    pub(crate) last_id: Option<String>,
    pub(crate) retry: Duration,
    /// An event was dropped for its size (`ClientOptions::max_message_bytes`).
    pub(crate) dropped_oversized: bool,
}

impl Default for Resumption {
    fn default() -> Self {
        Resumption { last_id: None, retry: Duration::from_secs(1), dropped_oversized: false }
    }
}

impl Resumption {
    /// Notes an event's `id:` and `retry:` fields.
    pub(crate) fn note(&mut self, id: Option<String>, retry: Option<u64>) {
        if id.is_some() {
            self.last_id = id;
        }
        if let Some(ms) = retry {
            self.retry = Duration::from_millis(ms).min(MAX_RETRY);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_events_across_chunks() {
        let mut p = Parser::default();
        assert!(p.feed(b"id: 1-0\nretry: 500\nda").is_empty());
        let events = p.feed(b"ta: \n\n: comment\ndata: {\"a\":1}\n\n");
        assert_eq!(events.len(), 2);
        assert_eq!((events[0].id.as_deref(), events[0].retry), (Some("1-0"), Some(500)));
        assert_eq!(events[1].data, "{\"a\":1}");
    }

    #[test]
    fn a_character_split_between_chunks_arrives_whole() {
        let mut p = Parser::default();
        let text = "data: caf\u{e9}\n\n".as_bytes();
        let split = text.len() - 3; // inside the two bytes of the e-acute
        assert!(p.feed(&text[..split]).is_empty());
        assert_eq!(p.feed(&text[split..])[0].data, "caf\u{e9}");
    }

    #[test]
    fn an_endless_line_is_dropped_and_the_stream_goes_on() {
        let mut p = Parser::default();
        let chunk = vec![b'x'; 1 << 20];
        assert!(p.feed(b"data: ").is_empty());
        for _ in 0..20 {
            assert!(p.feed(&chunk).is_empty());
        }
        assert!(p.buffer.len() <= MAX_PENDING, "held {} bytes", p.buffer.len());
        let events = p.feed(b"\n\ndata: next\n\n");
        assert_eq!(events.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(), ["next"]);
    }

    /// Found by fuzzing (`sse_parser`): a line longer than the limit that arrived in one chunk
    /// was taken (an `id:` of any length, a data line then dropped with its event), while the same
    /// line in pieces was skipped (its event delivered without it).
    #[test]
    fn a_long_line_is_judged_alike_however_the_stream_is_cut() {
        let stream: Vec<u8> =
            [b"data: a\nid: ".as_slice(), &[b'i'; 100], b"\n\n: ", &[b'c'; 300], b"\ndata: b\n\n"].concat();
        let events = |cut: usize| {
            let mut p = Parser::with_limit(64);
            let mut out: Vec<Event> = stream.chunks(cut).flat_map(|c| p.feed(c)).collect();
            out.push(Event { data: format!("dropped: {}", p.dropped_any()), ..Event::default() });
            out
        };
        let whole = events(stream.len());
        for cut in 1..stream.len() {
            assert_eq!(events(cut), whole, "cut every {cut} bytes");
        }
        let data: Vec<&str> = whole.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, ["b", "dropped: true"], "the event with the long id is dropped; a long comment is not");
    }

    #[test]
    fn retry_is_capped() {
        let mut r = Resumption::default();
        r.note(Some("7".into()), Some(u64::MAX));
        assert_eq!((r.last_id.as_deref(), r.retry), (Some("7"), MAX_RETRY));
    }
}
