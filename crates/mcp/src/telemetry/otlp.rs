//! The OTLP/HTTP trace request, as the OpenTelemetry project's own protobuf types
//! (`opentelemetry-proto`) describe it and `prost` encodes it: where it goes ([`Target`], from
//! the standard `OTEL_EXPORTER_OTLP_*` variables) and its body ([`Encoder`]).
//!
//! The `opentelemetry-otlp` span exporter makes a new protobuf message of every span it sends:
//! two dozen small allocations a span (every attribute's key and value copied into a new
//! `String`, every id into a new `Vec`), all freed again once the batch is sent. That was half of
//! what an exported span cost a server. The [`Encoder`] fills the same messages but keeps them
//! between batches: a span's ids, name and attributes are written over the last batch's, so that
//! a batch like the one before allocates nothing.

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::{InstrumentationScope, Value};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, status, ResourceSpans, ScopeSpans, Span, SpanFlags, Status};
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_sdk::trace::SpanData;
use prost::Message as _;

use super::inline::{Compact, Inline, Queued, StatusCode};

/// Where spans are posted: the URL, the headers and the time one request may take, as the
/// exporter specification's variables give them.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, else `OTEL_EXPORTER_OTLP_ENDPOINT` with
    /// `/v1/traces` appended, else `http://localhost:4318/v1/traces`.
    pub uri: http::Uri,
    /// `OTEL_EXPORTER_OTLP_HEADERS`, then `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (which wins):
    /// `key=value` pairs separated by commas, the values percent-decoded.
    pub headers: http::HeaderMap,
    /// `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else
    /// 10 s.
    pub timeout: std::time::Duration,
}

impl Target {
    /// Reads the environment. An error names the variable, never a header's value (it is often
    /// a credential).
    pub fn from_env() -> Result<Target, String> {
        Target::from_vars(|name| std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()))
    }

    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Target, String> {
        let (name, url) = match (var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), var("OTEL_EXPORTER_OTLP_ENDPOINT")) {
            (Some(url), _) => ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url),
            (None, Some(base)) => ("OTEL_EXPORTER_OTLP_ENDPOINT", format!("{}/v1/traces", base.trim_end_matches('/'))),
            (None, None) => ("the default endpoint", "http://localhost:4318/v1/traces".to_owned()),
        };
        let uri: http::Uri = url.parse().map_err(|e| format!("{name}={url:?} is not a URL ({e})"))?;
        if uri.scheme().is_none() || uri.authority().is_none() {
            return Err(format!("{name}={url:?} is not an http:// or https:// URL"));
        }
        let mut headers = http::HeaderMap::new();
        for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
            if let Some(list) = var(name) {
                add_headers(&mut headers, &list).map_err(|e| format!("{name}: {e}"))?;
            }
        }
        let millis = |name: &str| -> Result<Option<u64>, String> {
            var(name)
                .map(|v| v.parse().map_err(|_| format!("{name}={v:?} is not a number of milliseconds")))
                .transpose()
        };
        let timeout = match millis("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")? {
            Some(ms) => ms,
            None => millis("OTEL_EXPORTER_OTLP_TIMEOUT")?.unwrap_or(10_000),
        };
        Ok(Target { uri, headers, timeout: std::time::Duration::from_millis(timeout.max(1)) })
    }
}

/// Adds the `key=value,key=value` list `list` to `headers` (a later key replaces an earlier one).
fn add_headers(headers: &mut http::HeaderMap, list: &str) -> Result<(), String> {
    for pair in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((key, value)) = pair.split_once('=') else {
            return Err("a header without `=`".to_owned());
        };
        let key = key.trim();
        let name = http::HeaderName::from_bytes(key.as_bytes()).map_err(|_| format!("{key:?} is not a header name"))?;
        let decoded =
            percent_decode(value.trim()).ok_or_else(|| format!("the value of {key:?} is not percent-encoded text"))?;
        let value = http::HeaderValue::from_str(&decoded)
            .map_err(|_| format!("the value of {key:?} cannot be a header value"))?;
        headers.insert(name, value);
    }
    Ok(())
}

/// `%XX` sequences decoded (the W3C baggage format the variables use); `None` when one is cut or
/// the result is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Turns batches of ended spans into the protobuf body of an OTLP/HTTP trace request, keeping
/// the messages it filled for the next batch.
pub(crate) struct Encoder {
    /// The request: one resource (this process), its scopes filled in for each batch.
    request: ExportTraceServiceRequest,
    /// Every scope seen so far (this library's first: compact spans are of it), its message and
    /// how many of its span messages the batch being encoded filled.
    scopes: Vec<ScopeSlot>,
    /// Span messages of earlier batches, to be written over.
    spare_spans: Vec<Span>,
    /// Attribute messages of earlier batches, to be written over.
    spare_attributes: Vec<KeyValue>,
    /// The encoded body.
    body: Vec<u8>,
    /// How many span messages are kept at most between batches.
    keep: usize,
}

/// One instrumentation scope's spans.
struct ScopeSlot {
    scope: InstrumentationScope,
    message: ScopeSpans,
    /// How many of `message.spans` the batch being encoded has filled.
    used: usize,
}

impl Encoder {
    /// An encoder for the spans of `resource`, compact ones being of `scope`, keeping messages for
    /// `keep` spans between batches.
    pub fn new(resource: &opentelemetry_sdk::Resource, scope: &InstrumentationScope, keep: usize) -> Encoder {
        let resource = ResourceAttributesWithSchema::from(resource);
        let resource_spans = ResourceSpans {
            resource: Some(Resource {
                attributes: resource.attributes.0,
                dropped_attributes_count: 0,
                entity_refs: vec![],
            }),
            scope_spans: Vec::new(),
            schema_url: resource.schema_url.unwrap_or_default(),
        };
        let mut encoder = Encoder {
            request: ExportTraceServiceRequest { resource_spans: vec![resource_spans] },
            scopes: Vec::new(),
            spare_spans: Vec::new(),
            spare_attributes: Vec::new(),
            body: Vec::new(),
            keep,
        };
        encoder.scope_of(scope);
        encoder
    }

    /// The body of a request carrying `spans` (emptied).
    pub fn encode(&mut self, spans: &mut Vec<Queued>) -> &[u8] {
        for queued in spans.iter() {
            let scope = match queued {
                Queued::Compact(_) => 0,
                Queued::Full(data) => self.scope_of(&data.instrumentation_scope),
            };
            let slot = &mut self.scopes[scope];
            if slot.used == slot.message.spans.len() {
                slot.message.spans.push(self.spare_spans.pop().unwrap_or_default());
            }
            let message = &mut slot.message.spans[slot.used];
            slot.used += 1;
            match queued {
                Queued::Compact(compact) => fill_compact(message, compact, &mut self.spare_attributes),
                Queued::Full(data) => fill_span(message, data, &mut self.spare_attributes),
            }
        }
        spans.clear();
        let resource_spans = &mut self.request.resource_spans[0];
        for slot in &mut self.scopes {
            // Messages this batch did not need wait among the spares (as many as are kept).
            let room = self.keep.saturating_sub(self.spare_spans.len());
            let unused = slot.message.spans.drain(slot.used..);
            self.spare_spans.extend(unused.take(room));
            if slot.used > 0 {
                resource_spans.scope_spans.push(std::mem::take(&mut slot.message));
            }
        }
        self.body.clear();
        self.request.encode_raw(&mut self.body);
        // The scopes' messages go back to their places, in the order they were taken.
        let mut filled = std::mem::take(&mut self.request.resource_spans[0].scope_spans).into_iter();
        for slot in &mut self.scopes {
            if std::mem::take(&mut slot.used) > 0 {
                if let Some(message) = filled.next() {
                    slot.message = message;
                }
            }
        }
        self.spare_attributes.truncate(self.keep.saturating_mul(16));
        &self.body
    }

    /// The index in `scopes` of `scope`, added when new.
    fn scope_of(&mut self, scope: &InstrumentationScope) -> usize {
        if let Some(i) = self.scopes.iter().position(|slot| slot.scope == *scope) {
            return i;
        }
        let message = ScopeSpans {
            scope: Some((scope, None).into()),
            spans: Vec::new(),
            schema_url: scope.schema_url().unwrap_or_default().to_owned(),
        };
        self.scopes.push(ScopeSlot { scope: scope.clone(), message, used: 0 });
        self.scopes.len() - 1
    }
}

/// Writes the ids, kind, times and flags of a span over `message`.
#[allow(clippy::too_many_arguments)] // the fields a span message shares with both kinds of span
fn fill_frame(
    message: &mut Span,
    context: &opentelemetry::trace::SpanContext,
    parent: opentelemetry::trace::SpanId,
    parent_is_remote: bool,
    kind: &opentelemetry::trace::SpanKind,
    start: SystemTime,
    end: SystemTime,
    dropped_attributes: u32,
) {
    overwrite_bytes(&mut message.trace_id, &context.trace_id().to_bytes());
    overwrite_bytes(&mut message.span_id, &context.span_id().to_bytes());
    if parent == opentelemetry::trace::SpanId::INVALID {
        message.parent_span_id.clear();
    } else {
        overwrite_bytes(&mut message.parent_span_id, &parent.to_bytes());
    }
    message.flags = span_flags(parent_is_remote, context.trace_flags().to_u8());
    message.kind = span::SpanKind::from(kind.clone()) as i32;
    message.start_time_unix_nano = nanos(start);
    message.end_time_unix_nano = nanos(end);
    message.dropped_attributes_count = dropped_attributes;
}

/// Writes a compact span over `message`, reusing its buffers.
fn fill_compact(message: &mut Span, span: &Compact, spare: &mut Vec<KeyValue>) {
    fill_frame(
        message,
        &span.span_context,
        span.parent_span_id,
        span.parent_span_is_remote,
        &span.span_kind,
        span.start_time,
        span.end_time,
        span.dropped_attributes_count,
    );
    message.trace_state.clear();
    overwrite_text(&mut message.name, span.text(span.name));
    let count = span.attributes().count();
    resize_attributes(&mut message.attributes, count, spare);
    for (message, (key, value)) in message.attributes.iter_mut().zip(span.attributes()) {
        overwrite_text(&mut message.key, key);
        message.key_strindex = 0;
        let any = message.value.get_or_insert_with(AnyValue::default);
        any.value = match (value, any.value.take()) {
            (Inline::Text(at), Some(any_value::Value::StringValue(mut buffer))) => {
                overwrite_text(&mut buffer, span.text(at));
                Some(any_value::Value::StringValue(buffer))
            }
            (Inline::Text(at), _) => Some(any_value::Value::StringValue(span.text(at).to_owned())),
            (Inline::Int(n), _) => Some(any_value::Value::IntValue(n)),
            (Inline::Bool(b), _) => Some(any_value::Value::BoolValue(b)),
            (Inline::Float(f), _) => Some(any_value::Value::DoubleValue(f)),
        };
    }
    message.dropped_events_count = 0;
    message.events.clear();
    message.dropped_links_count = 0;
    message.links.clear();
    let status = message.status.get_or_insert_with(Status::default);
    status.code = match span.status {
        StatusCode::Unset => status::StatusCode::Unset,
        StatusCode::Ok => status::StatusCode::Ok,
        StatusCode::Error => status::StatusCode::Error,
    } as i32;
    overwrite_text(&mut status.message, span.text(span.status_message));
}

/// Writes `data` over `message`, reusing its buffers.
fn fill_span(message: &mut Span, data: &SpanData, spare: &mut Vec<KeyValue>) {
    fill_frame(
        message,
        &data.span_context,
        data.parent_span_id,
        data.parent_span_is_remote,
        &data.span_kind,
        data.start_time,
        data.end_time,
        data.dropped_attributes_count,
    );
    message.trace_state = data.span_context.trace_state().header();
    overwrite_text(&mut message.name, &data.name);
    resize_attributes(&mut message.attributes, data.attributes.len(), spare);
    for (message, attribute) in message.attributes.iter_mut().zip(&data.attributes) {
        overwrite_text(&mut message.key, attribute.key.as_str());
        message.key_strindex = 0;
        overwrite_value(message.value.get_or_insert_with(AnyValue::default), &attribute.value);
    }
    message.dropped_events_count = data.events.dropped_count;
    message.events.clear();
    message.events.extend(data.events.iter().map(|event| span::Event {
        time_unix_nano: nanos(event.timestamp),
        name: event.name.to_string(),
        attributes: event.attributes.iter().cloned().map(key_value).collect(),
        dropped_attributes_count: event.dropped_attributes_count,
    }));
    message.dropped_links_count = data.links.dropped_count;
    message.links.clear();
    message.links.extend(data.links.iter().cloned().map(span::Link::from));
    let status = message.status.get_or_insert_with(Status::default);
    status.code = status::StatusCode::from(&data.status) as i32;
    status.message.clear();
    if let opentelemetry::trace::Status::Error { description } = &data.status {
        status.message.push_str(description);
    }
}

/// The span's `flags`: its trace flags, and whether its parent is remote (always known here).
fn span_flags(parent_is_remote: bool, trace_flags: u8) -> u32 {
    let mut flags = u32::from(trace_flags) | SpanFlags::ContextHasIsRemoteMask as u32;
    if parent_is_remote {
        flags |= SpanFlags::ContextIsRemoteMask as u32;
    }
    flags
}

fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

fn overwrite_bytes(target: &mut Vec<u8>, bytes: &[u8]) {
    target.clear();
    target.extend_from_slice(bytes);
}

fn overwrite_text(target: &mut String, text: &str) {
    target.clear();
    target.push_str(text);
}

/// Makes `target` hold `wanted` attribute messages, taking them from `spare` when more are
/// needed and putting back those left over.
fn resize_attributes(target: &mut Vec<KeyValue>, wanted: usize, spare: &mut Vec<KeyValue>) {
    while target.len() < wanted {
        target.push(spare.pop().unwrap_or_default());
    }
    spare.extend(target.drain(wanted..));
}

/// Writes `value` over `message`; a string over a string without allocating.
fn overwrite_value(message: &mut AnyValue, value: &Value) {
    message.value = match (value, message.value.take()) {
        (Value::String(text), Some(any_value::Value::StringValue(mut buffer))) => {
            overwrite_text(&mut buffer, text.as_str());
            Some(any_value::Value::StringValue(buffer))
        }
        (Value::String(text), _) => Some(any_value::Value::StringValue(text.as_str().to_owned())),
        (Value::I64(n), _) => Some(any_value::Value::IntValue(*n)),
        (Value::Bool(b), _) => Some(any_value::Value::BoolValue(*b)),
        (Value::F64(f), _) => Some(any_value::Value::DoubleValue(*f)),
        (other, _) => AnyValue::from(other.clone()).value,
    };
}

fn key_value(attribute: opentelemetry::KeyValue) -> KeyValue {
    KeyValue { key: attribute.key.as_str().to_owned(), value: Some(attribute.value.into()), key_strindex: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanContext, SpanId, SpanKind, TraceFlags, TraceId, TraceState};

    fn vars(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn the_target_follows_the_exporter_variables() {
        let target = Target::from_vars(vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")])).unwrap();
        assert_eq!(target.uri, "http://collector:4318/v1/traces");
        assert_eq!(target.timeout, std::time::Duration::from_secs(10));
        let target = Target::from_vars(vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://traces.example/custom"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=general%20key, x-team=a"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "api-key=traces%3Dkey"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
        ]))
        .unwrap();
        assert_eq!(target.uri, "https://traces.example/custom");
        assert_eq!(target.headers["api-key"], "traces=key");
        assert_eq!(target.headers["x-team"], "a");
        assert_eq!(target.timeout, std::time::Duration::from_millis(2500));
        assert_eq!(Target::from_vars(vars(&[])).unwrap().uri, "http://localhost:4318/v1/traces");
        let bad = Target::from_vars(vars(&[("OTEL_EXPORTER_OTLP_HEADERS", "api-key=secret%zz")])).unwrap_err();
        assert!(!bad.contains("secret"), "{bad}");
        assert!(Target::from_vars(vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url")])).is_err());
        assert!(Target::from_vars(vars(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")])).is_err());
    }

    fn span(name: &'static str, attributes: Vec<opentelemetry::KeyValue>) -> SpanData {
        let context = SpanContext::new(
            TraceId::from(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10),
            SpanId::from(0x1112_1314_1516_1718),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        );
        SpanData {
            span_context: context,
            parent_span_id: SpanId::from(0x2122_2324_2526_2728),
            parent_span_is_remote: true,
            span_kind: SpanKind::Server,
            name: name.into(),
            start_time: UNIX_EPOCH + std::time::Duration::from_nanos(5),
            end_time: UNIX_EPOCH + std::time::Duration::from_nanos(9),
            attributes,
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: opentelemetry::trace::Status::error("bad"),
            instrumentation_scope: InstrumentationScope::builder("scope-a").with_version("1").build(),
        }
    }

    /// What `opentelemetry-otlp` would have sent for the same spans.
    fn reference(resource: &opentelemetry_sdk::Resource, spans: Vec<SpanData>) -> Vec<u8> {
        use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
        let resource = ResourceAttributesWithSchema::from(resource);
        ExportTraceServiceRequest { resource_spans: group_spans_by_resource_and_scope(spans, &resource) }
            .encode_to_vec()
    }

    #[test]
    fn batches_encode_as_the_otlp_exporter_would_and_reuse_their_messages() {
        let resource = opentelemetry_sdk::Resource::builder().with_service_name("svc").build();
        let ours = InstrumentationScope::builder("scope-a").with_version("1").build();
        let mut encoder = Encoder::new(&resource, &ours, 8);
        let queue = |spans: Vec<SpanData>, compact: bool| -> Vec<Queued> {
            spans
                .into_iter()
                .map(|span| {
                    let queued = if compact { Queued::new(span, &ours) } else { Queued::Full(span) };
                    assert_eq!(matches!(queued, Queued::Compact(_)), compact);
                    queued
                })
                .collect()
        };
        let first = || {
            vec![
                span(
                    "tools/call echo",
                    vec![
                        opentelemetry::KeyValue::new("mcp.method.name", "tools/call"),
                        opentelemetry::KeyValue::new("client.port", 4000_i64),
                        opentelemetry::KeyValue::new("ok", true),
                    ],
                ),
                span("ping", vec![opentelemetry::KeyValue::new("mcp.method.name", "ping")]),
            ]
        };
        // A second batch, with fewer and differently typed attributes, over the first's messages.
        let second = || {
            vec![span(
                "initialize",
                vec![
                    opentelemetry::KeyValue::new("client.port", "text now"),
                    opentelemetry::KeyValue::new("ratio", 0.5),
                ],
            )]
        };
        for compact in [true, false, true] {
            assert_eq!(encoder.encode(&mut queue(first(), compact)), reference(&resource, first()).as_slice());
            assert_eq!(encoder.encode(&mut queue(second(), compact)), reference(&resource, second()).as_slice());
            assert_eq!(encoder.spare_spans.len(), 1, "the larger batch's other message is kept");
        }
        // Spans of another scope (kept whole) beside compact ones: one scope message each.
        let mut other = span("elsewhere", vec![opentelemetry::KeyValue::new("k", "v")]);
        other.instrumentation_scope = InstrumentationScope::builder("scope-b").build();
        let mut mixed = queue(first(), true);
        mixed.push(Queued::Full(other.clone()));
        let mut expected = first();
        expected.push(other);
        assert_eq!(encoder.encode(&mut mixed), reference(&resource, expected).as_slice());
        assert_eq!(encoder.encode(&mut queue(second(), true)), reference(&resource, second()).as_slice());
    }
}

#[cfg(test)]
#[allow(clippy::print_stdout)] // measurements, printed
mod timing {
    use super::tests_support::*;
    use super::*;

    /// Prints what a span costs to encode, this way and the `opentelemetry-otlp` way (run with
    /// `--ignored --nocapture`, in release).
    #[test]
    #[ignore]
    fn encode_cost() {
        let resource = opentelemetry_sdk::Resource::builder().with_service_name("svc").build();
        let scope = opentelemetry::InstrumentationScope::builder("mcp-stack").with_version("0.1").build();
        let mut encoder = Encoder::new(&resource, &scope, 512);
        let batch = || (0..512).map(|_| typical_span()).collect::<Vec<_>>();
        let queue = |spans: Vec<SpanData>| spans.into_iter().map(|s| Queued::new(s, &scope)).collect::<Vec<_>>();
        let mut made = std::time::Duration::ZERO;
        let mut ours = std::time::Duration::ZERO;
        let mut theirs = std::time::Duration::ZERO;
        for _ in 0..200 {
            let started = std::time::Instant::now();
            let mut spans = queue(batch());
            made += started.elapsed();
            let started = std::time::Instant::now();
            std::hint::black_box(encoder.encode(&mut spans));
            ours += started.elapsed();
            let spans = batch();
            let started = std::time::Instant::now();
            let resource = ResourceAttributesWithSchema::from(&resource);
            std::hint::black_box(
                ExportTraceServiceRequest {
                    resource_spans: opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope(
                        spans, &resource,
                    ),
                }
                .encode_to_vec(),
            );
            theirs += started.elapsed();
        }
        let per = |d: std::time::Duration| d.as_nanos() as f64 / (200.0 * 512.0);
        println!(
            "making and queueing {:.0} ns, ours {:.0} ns, opentelemetry-otlp {:.0} ns per span",
            per(made),
            per(ours),
            per(theirs)
        );
    }

    /// Prints what a server span costs the thread that handles its message (run alone, with
    /// `--ignored --nocapture`, in release: it sets telemetry up for the process).
    #[test]
    #[ignore]
    fn operation_cost() {
        use crate::telemetry::{Ending, Message, Operation, Peer, Transport};
        std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9");
        std::env::set_var("OTEL_TRACES_SAMPLER", "always_on");
        crate::telemetry::init("timing");
        let id = mcp_types::RequestId::Number(1);
        let message = Message {
            method: "tools/call",
            target: Some("echo"),
            request_id: Some(&id),
            protocol_version: Some("2026-07-28"),
            known_target: true,
            params: None,
        };
        let transport = Transport::http("1.1", Some(Peer::Socket("127.0.0.1:40000".parse().unwrap())));
        for round in 0..3 {
            let started = std::time::Instant::now();
            for _ in 0..100_000 {
                let op = Operation::server(&message, None, &transport);
                let _in = op.context().clone().attach();
                op.end(Ending::Ok);
            }
            println!("round {round}: {:.0} ns per operation", started.elapsed().as_nanos() as f64 / 100_000.0);
        }
    }
}

#[cfg(test)]
mod tests_support {
    use opentelemetry::trace::{SpanContext, SpanId, SpanKind, TraceFlags, TraceId, TraceState};
    use opentelemetry::KeyValue;
    use opentelemetry_sdk::trace::SpanData;

    /// A `tools/call` SERVER span as an HTTP server makes it.
    pub fn typical_span() -> SpanData {
        SpanData {
            span_context: SpanContext::new(
                TraceId::from(7),
                SpanId::from(9),
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: SpanId::from(3),
            parent_span_is_remote: true,
            span_kind: SpanKind::Server,
            name: "tools/call echo".to_owned().into(),
            start_time: std::time::SystemTime::now(),
            end_time: std::time::SystemTime::now(),
            attributes: vec![
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("jsonrpc.request.id", "1".to_owned()),
                KeyValue::new("gen_ai.tool.name", "echo".to_owned()),
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("mcp.protocol.version", "2026-07-28"),
                KeyValue::new("network.transport", "tcp"),
                KeyValue::new("network.protocol.name", "http"),
                KeyValue::new("network.protocol.version", "1.1"),
                KeyValue::new("client.address", "127.0.0.1".to_owned()),
                KeyValue::new("client.port", 40000_i64),
            ],
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: opentelemetry::trace::Status::Unset,
            instrumentation_scope: opentelemetry::InstrumentationScope::builder("mcp-stack")
                .with_version("0.1")
                .build(),
        }
    }
}
