//! Newline-delimited framing with a bounded line length.
//!
//! A line longer than the limit is not buffered: its bytes are skipped up to the next newline
//! and the reader reports [`Frame::TooLong`], so one oversized message cannot grow memory and the
//! connection goes on with the next line. Reading is cancel safe: partial input stays buffered.

use tokio::io::{AsyncRead, AsyncReadExt};

/// One unit of input.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A line, without its `\n` (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line that exceeded the limit; its bytes were dropped.
    TooLong,
}

/// Reads newline-delimited frames from an async byte stream.
#[derive(Debug)]
pub struct LineReader<R> {
    reader: R,
    buffer: Vec<u8>,
    /// Where the unread part of `buffer` starts.
    start: usize,
    /// Bytes of `buffer` already searched for a newline (an index into `buffer`).
    scanned: usize,
    max_line: usize,
    /// Inside an oversized line: skip until its newline.
    skipping: bool,
    eof: bool,
    /// The first and last bytes of the oversized line being skipped (or last skipped), so that a
    /// reader can tell which request it answered.
    dropped_head: Vec<u8>,
    dropped_tail: Vec<u8>,
}

/// Bytes kept of each end of a dropped line.
const DROPPED_ENDS: usize = 256;

const CHUNK: usize = 64 * 1024;
/// A line at least this long is handed over in the reader's own buffer instead of copied out.
const LARGE_LINE: usize = 64 * 1024;

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader whose lines may be at most `max_line` bytes.
    pub fn new(reader: R, max_line: usize) -> Self {
        LineReader {
            reader,
            buffer: Vec::with_capacity(CHUNK.min(max_line + 1)),
            start: 0,
            scanned: 0,
            max_line,
            skipping: false,
            eof: false,
            dropped_head: Vec::new(),
            dropped_tail: Vec::new(),
        }
    }

    /// The first and the last bytes (up to 256 of each) of the last line reported as
    /// [`Frame::TooLong`].
    pub fn dropped_line_ends(&self) -> (&[u8], &[u8]) {
        (&self.dropped_head, &self.dropped_tail)
    }

    /// Notes `bytes`, the next part of a line being dropped.
    fn note_dropped(&mut self, bytes: &[u8], first: bool) {
        if first {
            self.dropped_head = bytes[..bytes.len().min(DROPPED_ENDS)].to_vec();
            self.dropped_tail.clear();
        }
        self.dropped_tail.extend_from_slice(&bytes[bytes.len().saturating_sub(DROPPED_ENDS)..]);
        let excess = self.dropped_tail.len().saturating_sub(DROPPED_ENDS);
        self.dropped_tail.drain(..excess);
    }

    /// The next frame, or `None` at end of input. A last line without a newline still counts.
    pub async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            if let Some(frame) = self.take_frame() {
                return Ok(Some(frame));
            }
            if self.eof {
                return Ok(self.take_rest());
            }
            self.compact();
            if self.buffer.capacity() - self.buffer.len() < CHUNK / 4 {
                self.buffer.reserve(CHUNK);
            }
            let n = self.reader.read_buf(&mut self.buffer).await?;
            if n == 0 {
                self.eof = true;
            }
        }
    }

    /// Moves the unread bytes to the front, so the buffer does not grow with consumed lines.
    fn compact(&mut self) {
        if self.start > 0 {
            self.buffer.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
    }

    /// Whether a whole line is already buffered, so the next [`LineReader::next`] needs no read.
    pub fn has_buffered_line(&self) -> bool {
        memchr(&self.buffer[self.scanned..]).is_some()
    }

    fn take_frame(&mut self) -> Option<Frame> {
        let Some(end) = memchr(&self.buffer[self.scanned..]).map(|i| i + self.scanned) else {
            if self.buffer.len() - self.start > self.max_line {
                // Too long already: drop what we have and skip to the newline.
                let dropped = std::mem::take(&mut self.buffer);
                self.note_dropped(&dropped[self.start..], !self.skipping);
                self.buffer = dropped;
                self.buffer.clear();
                self.buffer.shrink_to(CHUNK);
                self.start = 0;
                self.skipping = true;
            }
            self.scanned = self.buffer.len();
            return None;
        };
        let mut line = if end - self.start >= LARGE_LINE {
            self.take_large(end)
        } else {
            let line = self.buffer[self.start..end].to_vec();
            self.start = end + 1;
            self.scanned = self.start;
            line
        };
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        let skipped = std::mem::take(&mut self.skipping);
        if skipped || line.len() > self.max_line {
            self.note_dropped(&line, !skipped);
            return Some(Frame::TooLong);
        }
        Some(Frame::Line(line))
    }

    /// A large line ending at `end` leaves in the buffer that holds it, not in a copy: the bytes
    /// read after it move to a new, small buffer instead.
    fn take_large(&mut self, end: usize) -> Vec<u8> {
        let start = self.start;
        self.compact(); // in place: shifts the line to the front
        let end = end - start;
        let mut rest = Vec::with_capacity(CHUNK.max(self.buffer.len() - end - 1));
        rest.extend_from_slice(&self.buffer[end + 1..]);
        let mut line = std::mem::replace(&mut self.buffer, rest);
        line.truncate(end);
        self.start = 0;
        self.scanned = 0;
        line
    }

    fn take_rest(&mut self) -> Option<Frame> {
        if std::mem::take(&mut self.skipping) {
            let rest = std::mem::take(&mut self.buffer);
            self.note_dropped(&rest[self.start.min(rest.len())..], false);
            return Some(Frame::TooLong);
        }
        self.compact();
        if self.buffer.is_empty() {
            return None;
        }
        self.scanned = 0;
        Some(Frame::Line(std::mem::take(&mut self.buffer)))
    }
}

/// Where the first newline of `haystack` is. On x86_64 the SSE2 search is called directly (every
/// x86_64 processor has SSE2, known when compiling): `memchr::memchr` would first ask the processor
/// for AVX2 with `cpuid`, which a virtual machine traps to its hypervisor (about 40 µs of every
/// server's start-up measured here, the first line's read). A line ends as soon either way.
fn memchr(haystack: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(newline) = memchr::arch::x86_64::sse2::memchr::One::new(b'\n') {
        return newline.find(haystack);
    }
    memchr::memchr(b'\n', haystack)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(f) = reader.next().await.unwrap() {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn a_dropped_line_leaves_its_two_ends() {
        for (middle, max) in [(200_000, 100_000), (500, 300)] {
            let mut line = br#"{"jsonrpc":"2.0","id":7,"result":{"text":""#.to_vec();
            line.extend(std::iter::repeat_n(b'x', middle));
            line.extend_from_slice(br#""},"jsonrpc":"2.0","id":7}"#);
            let mut input = line.clone();
            input.extend_from_slice(b"\nnext\n");
            let mut reader = LineReader::new(&input[..], max);
            assert_eq!(reader.next().await.unwrap(), Some(Frame::TooLong));
            let (head, tail) = reader.dropped_line_ends();
            assert_eq!(head, &line[..DROPPED_ENDS]);
            assert_eq!(tail, &line[line.len() - DROPPED_ENDS..]);
            assert_eq!(reader.next().await.unwrap(), Some(Frame::Line(b"next".to_vec())));
        }
    }

    #[tokio::test]
    async fn splits_lines_and_keeps_a_last_unterminated_one() {
        let f = frames(b"a\r\nbb\n\nccc", 10).await;
        assert_eq!(
            f,
            [
                Frame::Line(b"a".to_vec()),
                Frame::Line(b"bb".to_vec()),
                Frame::Line(vec![]),
                Frame::Line(b"ccc".to_vec())
            ]
        );
    }

    #[tokio::test]
    async fn large_lines_leave_whole_and_what_follows_is_kept() {
        let big = vec![b'x'; 300_000];
        let mut input = b"a\n".to_vec();
        input.extend_from_slice(&big);
        input.extend_from_slice(b"\nbb\n");
        input.extend_from_slice(&big);
        input.extend_from_slice(b"\nc");
        let f = frames(&input, 1_000_000).await;
        assert_eq!(
            f,
            [
                Frame::Line(b"a".to_vec()),
                Frame::Line(big.clone()),
                Frame::Line(b"bb".to_vec()),
                Frame::Line(big),
                Frame::Line(b"c".to_vec())
            ]
        );
    }

    #[tokio::test]
    async fn drops_an_oversized_line_and_goes_on() {
        let mut input = vec![b'x'; 300_000];
        input.extend_from_slice(b"\nok\n");
        let f = frames(&input, 1000).await;
        assert_eq!(f, [Frame::TooLong, Frame::Line(b"ok".to_vec())]);
    }
}
