//! A server-sent events parser: bytes in, events out (`id`, `event`, `data`, `retry`).

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

/// Incremental parser; feed it chunks, take whole events.
#[derive(Debug, Default)]
pub struct Parser {
    buffer: String,
    current: Event,
    has_data: bool,
}

impl Parser {
    /// Adds bytes; returns the events they completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buffer.push_str(&String::from_utf8_lossy(chunk));
        let mut events = Vec::new();
        while let Some(end) = self.buffer.find('\n') {
            let line: String = self.buffer.drain(..=end).collect();
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if self.has_data || self.current.id.is_some() || self.current.retry.is_some() {
                    events.push(std::mem::take(&mut self.current));
                }
                self.has_data = false;
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) =
                line.split_once(':').map_or((line, ""), |(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)));
            match field {
                "data" => {
                    if self.has_data {
                        self.current.data.push('\n');
                    }
                    self.current.data.push_str(value);
                    self.has_data = true;
                }
                "id" => self.current.id = Some(value.to_owned()),
                "event" => self.current.event = Some(value.to_owned()),
                "retry" => self.current.retry = value.trim().parse().ok(),
                _ => {}
            }
        }
        events
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
}
