//! The params of one request, kept in the buffer they arrived in (a stdio line, an HTTP body)
//! until the method's own type reads them, so a huge request is never copied on its way in.
//!
//! The buffer moves with the request into its task and is dropped as soon as the method has
//! parsed what it needs.

use std::ops::Range;

use bytes::Bytes;
use serde_json::value::RawValue;

/// A request's raw params.
#[derive(Debug, Default)]
pub(crate) struct RawParams {
    buffer: Buffer,
    /// Where the params are in the buffer; `None` when the request had none.
    range: Option<Range<usize>>,
    /// Where the item the request names (a tool, a URI, a task) is in the params, when the
    /// transport already read it there: the middleware asks for it without a second parse.
    named: Option<Range<usize>>,
}

#[derive(Debug, Default)]
enum Buffer {
    #[default]
    Empty,
    Line(Vec<u8>),
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // HTTP bodies
    Body(Bytes),
    Copied(Box<str>),
}

impl RawParams {
    /// Where the params (borrowed from `line` by the envelope's parse) are in it, so the line can
    /// move into [`RawParams::in_line`] once the borrow ends.
    pub fn span(line: &[u8], params: Option<&RawValue>) -> Span {
        match params {
            None => Span::None,
            Some(p) => match range_within(line, p.get().as_bytes()) {
                Some(range) => Span::At(range),
                None => Span::Copied(RawParams::copied(Some(p))),
            },
        }
    }

    /// The params at `span` in `line`; the line moves in.
    pub fn in_line(line: Vec<u8>, span: Span) -> RawParams {
        match span {
            Span::None => RawParams::default(),
            Span::At(range) => RawParams { buffer: Buffer::Line(line), range: Some(range), named: None },
            Span::Copied(copy) => copy,
        }
    }

    /// Params found in an HTTP body; the body is shared, not copied.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // HTTP bodies
    pub fn in_body(body: &Bytes, params: Option<&RawValue>) -> RawParams {
        match params.and_then(|p| range_within(body, p.get().as_bytes())) {
            Some(range) => RawParams { buffer: Buffer::Body(body.clone()), range: Some(range), named: None },
            None => RawParams::copied(params),
        }
    }

    /// A copy of `params` (batch items: small, and parsed out of a shared array).
    pub fn copied(params: Option<&RawValue>) -> RawParams {
        match params {
            Some(p) => {
                let text: Box<str> = p.get().into();
                let range = 0..text.len();
                RawParams { buffer: Buffer::Copied(text), range: Some(range), named: None }
            }
            None => RawParams::default(),
        }
    }

    /// The params' JSON text, or `None` when the request had none.
    pub fn text(&self) -> Option<&str> {
        let range = self.range.clone()?;
        let bytes = match &self.buffer {
            Buffer::Empty => return None,
            Buffer::Line(line) => &line[range],
            Buffer::Body(body) => &body[range],
            Buffer::Copied(text) => return text.get(range),
        };
        // The envelope's parse already checked this text; the second look is a fast scan.
        std::str::from_utf8(bytes).ok()
    }

    /// Records that `name`, a string the transport read in place from these params (the
    /// contents of a JSON string without escapes), is the item the request names. Ignored
    /// unless it lies within the params.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // read by the HTTP transport
    pub fn with_named(mut self, name: &str) -> RawParams {
        self.named = match (self.whole(), &self.range) {
            (Some(whole), Some(params)) => range_within(whole, name.as_bytes())
                .filter(|named| named.start >= params.start && named.end <= params.end),
            _ => None,
        };
        self
    }

    /// Where `name` (a string a transport read in place from `line`'s params) is in `line`, to
    /// be given to [`RawParams::with_named_at`] once the line has moved into the params.
    pub fn named_span(line: &[u8], name: &str) -> Option<Range<usize>> {
        range_within(line, name.as_bytes())
    }

    /// [`RawParams::with_named`] with the item's place in the buffer, from
    /// [`RawParams::named_span`]. Ignored unless it lies within the params.
    pub fn with_named_at(mut self, named: Option<Range<usize>>) -> RawParams {
        self.named = match (named, &self.range) {
            (Some(named), Some(params)) if named.start >= params.start && named.end <= params.end => Some(named),
            _ => None,
        };
        self
    }

    /// The named item recorded by [`RawParams::with_named`].
    pub fn named(&self) -> Option<&str> {
        let range = self.named.clone()?;
        std::str::from_utf8(self.whole()?.get(range)?).ok()
    }

    /// The whole buffer the params are in.
    fn whole(&self) -> Option<&[u8]> {
        match &self.buffer {
            Buffer::Empty => None,
            Buffer::Line(line) => Some(line),
            Buffer::Body(body) => Some(body),
            Buffer::Copied(text) => Some(text.as_bytes()),
        }
    }
}

/// Where a request's params are in its line.
#[derive(Debug)]
pub(crate) enum Span {
    None,
    At(Range<usize>),
    Copied(RawParams),
}

/// Where `inner` (borrowed from `outer` by a parse) lies in `outer`.
fn range_within(outer: &[u8], inner: &[u8]) -> Option<Range<usize>> {
    let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    let end = start.checked_add(inner.len())?;
    (end <= outer.len()).then_some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_found_in_place_and_copied_otherwise() {
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[1,2]}}"#.to_vec();
        let envelope: mcp_types::jsonrpc::Envelope = serde_json::from_slice(&line).unwrap();
        let Ok(mcp_types::jsonrpc::MessageKind::Request { params, .. }) = envelope.kind() else { panic!() };
        let span = RawParams::span(&line, params);
        assert!(matches!(span, Span::At(_)));
        let in_place = RawParams::in_line(line.clone(), span);
        assert_eq!(in_place.text(), Some(r#"{"a":[1,2]}"#));
        let elsewhere: Box<RawValue> = RawValue::from_string(r#"{"b":1}"#.into()).unwrap();
        let span = RawParams::span(&line, Some(&elsewhere));
        assert_eq!(RawParams::in_line(line, span).text(), Some(r#"{"b":1}"#));
        assert_eq!(RawParams::copied(None).text(), None);
    }

    #[test]
    fn a_named_item_is_kept_only_when_it_lies_in_the_params() {
        let body = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#);
        let envelope: mcp_types::jsonrpc::Envelope = serde_json::from_slice(&body).unwrap();
        let Ok(mcp_types::jsonrpc::MessageKind::Request { params, .. }) = envelope.kind() else { panic!() };
        let text = params.unwrap().get();
        let at = text.find("echo").unwrap();
        let name = &text[at..at + 4];
        assert_eq!(RawParams::in_body(&body, params).with_named(name).named(), Some("echo"));
        let whole = std::str::from_utf8(&body).unwrap();
        let at = whole.find("tools/call").unwrap();
        let method = &whole[at..at + 10]; // in the body, outside the params
        assert_eq!(RawParams::in_body(&body, params).with_named(method).named(), None);
        assert_eq!(RawParams::in_body(&body, params).with_named("echo").named(), None, "not in the buffer");
        assert_eq!(RawParams::in_body(&body, params).named(), None);
    }

    #[test]
    fn a_named_item_found_in_a_line_is_kept_once_the_line_moves_in() {
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#.to_vec();
        let envelope: mcp_types::jsonrpc::Envelope = serde_json::from_slice(&line).unwrap();
        let Ok(mcp_types::jsonrpc::MessageKind::Request { params, .. }) = envelope.kind() else { panic!() };
        let text = params.unwrap().get();
        let at = text.find("echo").unwrap();
        let named = RawParams::named_span(&line, &text[at..at + 4]);
        let method = RawParams::named_span(&line, envelope_method(&line));
        let span = RawParams::span(&line, params);
        let raw = RawParams::in_line(line.clone(), span).with_named_at(named);
        assert_eq!(raw.named(), Some("echo"));
        let span = RawParams::span(&line, params);
        assert_eq!(RawParams::in_line(line, span).with_named_at(method).named(), None, "outside the params");
    }

    /// The method's text, borrowed from `line`.
    fn envelope_method(line: &[u8]) -> &str {
        let whole = std::str::from_utf8(line).unwrap();
        let at = whole.find("tools/call").unwrap();
        &whole[at..at + 10]
    }
}
