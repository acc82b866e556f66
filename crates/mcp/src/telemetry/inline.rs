//! An ended span as it waits for export: copied, on the thread that ended it, into one value
//! that owns no heap memory ([`Compact`]), so that the span's own allocations are freed where
//! they were made.
//!
//! A span freed on the export thread makes that thread free memory the request threads
//! allocated: with glibc, every such `free` takes the lock of the other thread's arena, and the
//! two threads wait on each other (`futex`) a few times per batch. Copying the span's few short
//! strings into a buffer of the queue's slot costs less. A span that does not fit (long text,
//! events, links, a `tracestate`, another instrumentation scope, many attributes) is queued as it
//! is ([`Queued::Full`]).

use std::time::SystemTime;

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceState};
use opentelemetry::{InstrumentationScope, Value};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_sdk::trace::SpanData;

/// Bytes of text a compact span holds at most (its name, attribute keys and text values, its
/// status message).
const TEXT: usize = 512;
/// Attributes a compact span holds at most.
const ATTRIBUTES: usize = 16;

/// A span waiting in the export queue.
#[allow(clippy::large_enum_variant)] // inline on purpose: the point of this module
pub(crate) enum Queued {
    /// Copied into the slot (the common case).
    Compact(Compact),
    /// As the SDK ended it.
    Full(SpanData),
}

impl Queued {
    /// `span` as it waits: compact when it fits and was made under `scope`.
    pub fn new(span: SpanData, scope: &InstrumentationScope) -> Queued {
        match Compact::of(&span, scope) {
            Some(compact) => Queued::Compact(compact),
            None => Queued::Full(span),
        }
    }
}

/// Where a piece of text lies in [`Compact::all_text`].
#[derive(Clone, Copy, Default)]
pub(crate) struct Text {
    start: u16,
    end: u16,
}

/// An attribute's value.
#[derive(Clone, Copy)]
pub(crate) enum Inline {
    /// Text, in [`Compact::all_text`].
    Text(Text),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A float.
    Float(f64),
}

/// A span of this library's scope, without events, links or `tracestate`, whose text fits.
pub(crate) struct Compact {
    pub span_context: SpanContext,
    pub parent_span_id: SpanId,
    pub parent_span_is_remote: bool,
    pub span_kind: SpanKind,
    pub start_time: SystemTime,
    pub end_time: SystemTime,
    /// Unset, Ok or Error (with [`Compact::status_message`]), as the protocol writes it.
    pub status: StatusCode,
    pub status_message: Text,
    pub name: Text,
    pub dropped_attributes_count: u32,
    attributes: [(Text, Inline); ATTRIBUTES],
    attribute_count: u8,
    text: [u8; TEXT],
    text_len: u16,
}

impl Compact {
    fn of(span: &SpanData, scope: &InstrumentationScope) -> Option<Compact> {
        let plain = span.events.is_empty()
            && span.links.is_empty()
            && span.attributes.len() <= ATTRIBUTES
            && *span.span_context.trace_state() == TraceState::NONE
            && span.instrumentation_scope == *scope;
        if !plain {
            return None;
        }
        let mut compact = Compact {
            span_context: span.span_context.clone(),
            parent_span_id: span.parent_span_id,
            parent_span_is_remote: span.parent_span_is_remote,
            span_kind: span.span_kind.clone(),
            start_time: span.start_time,
            end_time: span.end_time,
            status: StatusCode::from(&span.status),
            status_message: Text::default(),
            name: Text::default(),
            dropped_attributes_count: span.dropped_attributes_count,
            attributes: [(Text::default(), Inline::Int(0)); ATTRIBUTES],
            attribute_count: 0,
            text: [0; TEXT],
            text_len: 0,
        };
        compact.name = compact.push(&span.name)?;
        if let Status::Error { description } = &span.status {
            compact.status_message = compact.push(description)?;
        }
        for (i, attribute) in span.attributes.iter().enumerate() {
            let key = compact.push(attribute.key.as_str())?;
            let value = match &attribute.value {
                Value::String(text) => Inline::Text(compact.push(text.as_str())?),
                Value::I64(n) => Inline::Int(*n),
                Value::Bool(b) => Inline::Bool(*b),
                Value::F64(f) => Inline::Float(*f),
                _ => return None,
            };
            compact.attributes[i] = (key, value);
            compact.attribute_count = i as u8 + 1;
        }
        Some(compact)
    }

    /// Copies `text` in; `None` when it does not fit.
    fn push(&mut self, text: &str) -> Option<Text> {
        let start = usize::from(self.text_len);
        let end = start.checked_add(text.len()).filter(|end| *end <= TEXT)?;
        self.text[start..end].copy_from_slice(text.as_bytes());
        self.text_len = end as u16;
        Some(Text { start: start as u16, end: end as u16 })
    }

    /// All the span's text, to take pieces of with [`Compact::piece`] (checked as UTF-8 once,
    /// not once a piece).
    pub fn all_text(&self) -> &str {
        // Copied from `&str`s whole: always UTF-8.
        std::str::from_utf8(&self.text[..usize::from(self.text_len)]).unwrap_or_default()
    }

    /// The text at `at` of [`Compact::all_text`].
    pub fn piece(all: &str, at: Text) -> &str {
        all.get(usize::from(at.start)..usize::from(at.end)).unwrap_or_default()
    }

    /// The text at `at`.
    #[cfg(test)]
    pub fn text(&self, at: Text) -> &str {
        Compact::piece(self.all_text(), at)
    }

    /// The attributes: where each key's text is, and the value.
    pub fn attributes(&self) -> &[(Text, Inline)] {
        &self.attributes[..usize::from(self.attribute_count)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{TraceFlags, TraceId};
    use opentelemetry::KeyValue;

    fn span(scope: &InstrumentationScope, attributes: Vec<KeyValue>) -> SpanData {
        SpanData {
            span_context: SpanContext::new(
                TraceId::from(1),
                SpanId::from(2),
                TraceFlags::SAMPLED,
                false,
                TraceState::NONE,
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Client,
            name: "tools/call é".into(),
            start_time: SystemTime::UNIX_EPOCH,
            end_time: SystemTime::UNIX_EPOCH,
            attributes,
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: Status::error("went wrong"),
            instrumentation_scope: scope.clone(),
        }
    }

    #[test]
    fn short_spans_of_the_scope_are_copied_and_others_kept_whole() {
        let ours = InstrumentationScope::builder("mcp-stack").build();
        let attributes = vec![KeyValue::new("a", "text"), KeyValue::new("b", 7_i64), KeyValue::new("c", true)];
        let Queued::Compact(compact) = Queued::new(span(&ours, attributes), &ours) else { panic!("not compact") };
        assert_eq!(compact.text(compact.name), "tools/call é");
        assert_eq!(compact.text(compact.status_message), "went wrong");
        let seen: Vec<String> = compact
            .attributes()
            .iter()
            .map(|(key, value)| (compact.text(*key), *value))
            .map(|(key, value)| match value {
                Inline::Text(t) => format!("{key}={}", compact.text(t)),
                Inline::Int(n) => format!("{key}={n}"),
                Inline::Bool(b) => format!("{key}={b}"),
                Inline::Float(f) => format!("{key}={f}"),
            })
            .collect();
        assert_eq!(seen, ["a=text", "b=7", "c=true"]);
        let other = InstrumentationScope::builder("someone-else").build();
        assert!(matches!(Queued::new(span(&other, vec![]), &ours), Queued::Full(_)));
        let long = vec![KeyValue::new("long", "x".repeat(TEXT))];
        assert!(matches!(Queued::new(span(&ours, long), &ours), Queued::Full(_)));
        let many = (0..=ATTRIBUTES).map(|i| KeyValue::new(format!("k{i}"), 1_i64)).collect();
        assert!(matches!(Queued::new(span(&ours, many), &ours), Queued::Full(_)));
    }
}
