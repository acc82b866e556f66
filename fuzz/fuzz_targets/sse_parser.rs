//! The client's SSE parser: however the stream is cut into chunks, the same events come out, and
//! none is larger than the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp::client::sse::Parser;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, stream)) = data.split_first() else { return };
    let limit = 64 + usize::from(cut) * 4;
    let mut whole = Parser::with_limit(limit);
    let expected = whole.feed(stream);
    let mut pieces = Parser::with_limit(limit);
    let step = usize::from(cut % 7) + 1;
    let mut got = Vec::new();
    for chunk in stream.chunks(step) {
        got.extend(pieces.feed(chunk));
    }
    assert_eq!(got, expected, "the events depend on where the stream was cut");
    assert_eq!(whole.dropped_any(), pieces.dropped_any());
    for event in &expected {
        assert!(event.data.len() <= limit, "an event of {} bytes past a limit of {limit}", event.data.len());
    }
});
