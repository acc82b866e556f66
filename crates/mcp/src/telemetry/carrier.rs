//! The trace context in `params._meta`, as the conventions' "Context propagation" asks: a
//! request's or notification's sender injects W3C `traceparent` and `tracestate` (and `baggage`,
//! when there is any) into its `_meta`; the receiver takes them as the remote parent of its span.
//! The values are W3C Trace Context and Baggage as the OpenTelemetry propagators read and write
//! them; a value too long for its format is ignored, so a peer cannot make us keep more.

use std::sync::LazyLock;

use opentelemetry::propagation::{Extractor, Injector, TextMapCompositePropagator, TextMapPropagator};
use opentelemetry::Context;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// `traceparent` is 55 characters in version 00; later versions may add fields.
const MAX_TRACEPARENT: usize = 256;
/// W3C: at most 32 list members of at most 256 characters each; 512 is what must be propagated.
const MAX_TRACESTATE: usize = 1024;
/// W3C Baggage: at most 8192 bytes.
const MAX_BAGGAGE: usize = 8192;

/// W3C Trace Context, then W3C Baggage.
pub(crate) fn propagator() -> TextMapCompositePropagator {
    TextMapCompositePropagator::new(vec![Box::new(TraceContextPropagator::new()), Box::new(BaggagePropagator::new())])
}

static PROPAGATOR: LazyLock<TextMapCompositePropagator> = LazyLock::new(propagator);

/// The trace context one message carried.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Carrier {
    traceparent: String,
    tracestate: Option<String>,
    baggage: Option<String>,
}

/// A JSON string of at most `max` bytes, as text.
fn string_within(raw: Option<&RawValue>, max: usize) -> Option<String> {
    let raw = raw?;
    if raw.get().len() > max + 2 {
        return None;
    }
    serde_json::from_str::<String>(raw.get()).ok()
}

impl Carrier {
    /// From the three `_meta` fields as they were written (JSON values); `None` without a
    /// `traceparent` string.
    pub fn from_fields(
        traceparent: Option<&RawValue>,
        tracestate: Option<&RawValue>,
        baggage: Option<&RawValue>,
    ) -> Option<Carrier> {
        Some(Carrier {
            traceparent: string_within(traceparent, MAX_TRACEPARENT)?,
            tracestate: string_within(tracestate, MAX_TRACESTATE),
            baggage: string_within(baggage, MAX_BAGGAGE),
        })
    }

    /// The carrier of an HTTP request's own headers (`traceparent`, `tracestate`, `baggage`).
    pub fn from_headers(headers: &http::HeaderMap) -> Option<Carrier> {
        // Names made once, not parsed again for every request.
        const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");
        const TRACESTATE: http::HeaderName = http::HeaderName::from_static("tracestate");
        const BAGGAGE: http::HeaderName = http::HeaderName::from_static("baggage");
        let header = |name: &http::HeaderName, max: usize| {
            headers.get(name).and_then(|v| v.to_str().ok()).filter(|v| v.len() <= max).map(str::to_owned)
        };
        Some(Carrier {
            traceparent: header(&TRACEPARENT, MAX_TRACEPARENT)?,
            tracestate: header(&TRACESTATE, MAX_TRACESTATE),
            baggage: header(&BAGGAGE, MAX_BAGGAGE),
        })
    }

    /// The carrier in the `_meta` of `params` (JSON text), read only when the text mentions
    /// `traceparent` at all (a search, not a parse, for the messages that carry none).
    pub fn read(params: &str) -> Option<Carrier> {
        static FINDER: LazyLock<memchr::memmem::Finder<'static>> =
            LazyLock::new(|| memchr::memmem::Finder::new("\"traceparent\""));
        FINDER.find(params.as_bytes())?;
        #[derive(serde::Deserialize)]
        struct Params<'a> {
            #[serde(rename = "_meta", borrow, default)]
            meta: Option<Fields<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Fields<'a> {
            #[serde(borrow, default)]
            traceparent: Option<&'a RawValue>,
            #[serde(borrow, default)]
            tracestate: Option<&'a RawValue>,
            #[serde(borrow, default)]
            baggage: Option<&'a RawValue>,
        }
        let fields = serde_json::from_str::<Params<'_>>(params).ok()?.meta?;
        Carrier::from_fields(fields.traceparent, fields.tracestate, fields.baggage)
    }

    /// The context it names: a remote parent span (when the `traceparent` is valid) and its
    /// baggage, on top of `base`.
    pub fn context_on(&self, base: &Context) -> Context {
        PROPAGATOR.extract_with_context(base, self)
    }

    /// [`Carrier::context_on`] an empty context.
    pub fn context(&self) -> Context {
        self.context_on(&Context::new())
    }

    /// The span context it names, when it names a valid one.
    pub fn span_context(&self) -> Option<opentelemetry::trace::SpanContext> {
        use opentelemetry::trace::TraceContextExt as _;
        let cx = self.context();
        let span = cx.span().span_context().clone();
        span.is_valid().then_some(span)
    }
}

impl Extractor for Carrier {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(&self.traceparent),
            "tracestate" => self.tracestate.as_deref(),
            "baggage" => self.baggage.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        let mut keys = vec!["traceparent"];
        keys.extend(self.tracestate.as_ref().map(|_| "tracestate"));
        keys.extend(self.baggage.as_ref().map(|_| "baggage"));
        keys
    }
}

/// Writes `cx`'s trace context into a message's `_meta`: `traceparent` (and `tracestate`,
/// `baggage` when there are any); nothing when `cx` names no valid span.
pub fn inject(cx: &Context, meta: &mut Map<String, Value>) {
    struct Meta<'a>(&'a mut Map<String, Value>);
    impl Injector for Meta<'_> {
        fn set(&mut self, key: &str, value: String) {
            self.0.insert(key.to_owned(), Value::String(value));
        }
    }
    PROPAGATOR.inject_context(cx, &mut Meta(meta));
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TraceContextExt as _;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_carrier_is_read_from_meta_and_written_back() {
        let params = format!(
            r#"{{"name":"echo","arguments":{{"traceparent":"not this one"}},"_meta":{{"traceparent":"{PARENT}","tracestate":"rojo=00f067aa0ba902b7","baggage":"userId=alice"}}}}"#
        );
        let carrier = Carrier::read(&params).expect("read");
        let cx = carrier.context();
        let span = cx.span().span_context().clone();
        assert!(span.is_valid() && span.is_remote() && span.is_sampled());
        assert_eq!(span.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        let mut meta = Map::new();
        inject(&cx, &mut meta);
        assert_eq!(meta["traceparent"], PARENT);
        assert_eq!(meta["tracestate"], "rojo=00f067aa0ba902b7");
        assert_eq!(meta["baggage"], "userId=alice");
    }

    #[test]
    fn what_is_not_a_trace_context_is_none() {
        assert_eq!(Carrier::read(r#"{"name":"echo"}"#), None);
        assert_eq!(Carrier::read(r#"{"arguments":{"traceparent":"x"}}"#), None, "only _meta counts");
        assert_eq!(Carrier::read(r#"{"_meta":{"traceparent":7}}"#), None);
        let long = format!(r#"{{"_meta":{{"traceparent":"{}"}}}}"#, "0".repeat(300));
        assert_eq!(Carrier::read(&long), None);
        let invalid = Carrier::read(r#"{"_meta":{"traceparent":"00-zz-yy-01"}}"#).expect("a string is kept");
        assert_eq!(invalid.span_context(), None, "but names no span");
        let mut meta = Map::new();
        inject(&Context::new(), &mut meta);
        assert!(meta.is_empty(), "no span, nothing written: {meta:?}");
    }
}
