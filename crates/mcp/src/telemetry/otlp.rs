//! The OTLP/HTTP trace request, as the OpenTelemetry project's own protobuf types
//! (`opentelemetry-proto`) describe it and `prost` encodes it: where it goes ([`Target`], from
//! the standard `OTEL_EXPORTER_OTLP_*` variables) and its body ([`Encoder`]).
//!
//! The `opentelemetry-otlp` span exporter makes a new protobuf message of every span it sends:
//! two dozen small allocations a span (every attribute's key and value copied into a new
//! `String`, every id into a new `Vec`), all freed again once the batch is sent. That was half of
//! what an exported span cost a server. The [`Encoder`] fills the same messages but keeps them
//! between batches: a span's ids, name and attributes are written over the last batch's, so that
//! a batch like the one before allocates next to nothing (its body's copy, and what a span of
//! events, links or a `tracestate` needs).

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::{InstrumentationScope, Value};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, status, ResourceSpans, ScopeSpans, Span, SpanFlags, Status};
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_sdk::trace::SpanData;
use prost::Message as _;

use super::inline::{Compact, Inline, Queued};

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
    /// Reads the environment. As the `opentelemetry-otlp` exporter does, a header pair that
    /// cannot be one and a timeout that is not a number are skipped (and said on stderr), not
    /// fatal; an endpoint that is not an `http://` or `https://` URL is. No message repeats a
    /// header or the URL: either may hold a credential.
    pub fn from_env() -> Result<Target, String> {
        let (target, warnings) =
            Target::from_vars(|name| std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()))?;
        for warning in warnings {
            eprintln!("OpenTelemetry: {warning}");
        }
        Ok(target)
    }

    /// The target, and what was skipped.
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<(Target, Vec<String>), String> {
        let (name, url) = match (var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), var("OTEL_EXPORTER_OTLP_ENDPOINT")) {
            (Some(url), _) => ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url),
            (None, Some(base)) => ("OTEL_EXPORTER_OTLP_ENDPOINT", format!("{}/v1/traces", base.trim_end_matches('/'))),
            (None, None) => ("the default endpoint", "http://localhost:4318/v1/traces".to_owned()),
        };
        let uri: http::Uri = url.parse().map_err(|e| format!("{name} is not a URL ({e})"))?;
        let http = matches!(uri.scheme_str(), Some("http" | "https"));
        if !http || uri.authority().is_none() {
            return Err(format!("{name} is not an http:// or https:// URL"));
        }
        let mut warnings = Vec::new();
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::USER_AGENT, http::HeaderValue::from_static(USER_AGENT));
        for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
            if let Some(list) = var(name) {
                add_headers(&mut headers, &list, |e| warnings.push(format!("{name}: {e}; skipped")));
            }
        }
        let mut millis = |name: &str| match var(name).map(|v| v.parse::<u64>()) {
            Some(Ok(ms)) => Some(ms),
            Some(Err(_)) => {
                warnings.push(format!("{name} is not a number of milliseconds; skipped"));
                None
            }
            None => None,
        };
        let timeout = millis("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT").or_else(|| millis("OTEL_EXPORTER_OTLP_TIMEOUT"));
        let timeout = std::time::Duration::from_millis(timeout.unwrap_or(10_000).max(1));
        Ok((Target { uri, headers, timeout }, warnings))
    }
}

/// What the requests say they are from.
const USER_AGENT: &str = concat!("mcp-stack/", env!("CARGO_PKG_VERSION"), " (OTLP/HTTP exporter)");

/// Adds the `key=value,key=value` list `list` to `headers` (a later key replaces an earlier one);
/// a pair that cannot be a header is told to `skipped` by its place in the list, never by its
/// text.
fn add_headers(headers: &mut http::HeaderMap, list: &str, mut skipped: impl FnMut(String)) {
    for (place, pair) in list.split(',').map(str::trim).filter(|p| !p.is_empty()).enumerate() {
        let header = pair.split_once('=').and_then(|(key, value)| {
            let name = http::HeaderName::from_bytes(key.trim().as_bytes()).ok()?;
            let value = percent_decode(value.trim()).filter(|v| !v.is_empty())?;
            Some((name, http::HeaderValue::from_str(&value).ok()?))
        });
        match header {
            Some((name, value)) => {
                headers.insert(name, value);
            }
            None => skipped(format!("header {} is not a key=value pair a request can carry", place + 1)),
        }
    }
}

/// `%XX` sequences decoded (the W3C baggage format the variables use); `None` when one is cut,
/// not two hex digits, or the result is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Text longer than this grows a buffer that is freed once its batch is sent, not kept.
const LARGE_TEXT: usize = 4096;

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
        let mut large = false;
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
                Queued::Full(data) => {
                    large |= data
                        .attributes
                        .iter()
                        .any(|a| matches!(&a.value, Value::String(t) if t.as_str().len() > LARGE_TEXT));
                    fill_span(message, data, &mut self.spare_attributes);
                }
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
        if large {
            self.shed_large_buffers();
        }
        &self.body
    }

    /// Frees the buffers a large value grew (tool arguments and results, when recorded, may be
    /// 64 KiB each), so that one batch of them is not kept for good.
    fn shed_large_buffers(&mut self) {
        let shed = |attribute: &mut KeyValue| {
            if let Some(AnyValue { value: Some(any_value::Value::StringValue(text)) }) = &mut attribute.value {
                if text.capacity() > LARGE_TEXT {
                    *text = String::new();
                }
            }
        };
        let spans = self.scopes.iter_mut().flat_map(|slot| slot.message.spans.iter_mut()).chain(&mut self.spare_spans);
        for span in spans {
            span.attributes.iter_mut().for_each(shed);
        }
        self.spare_attributes.iter_mut().for_each(shed);
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
    let text = span.all_text();
    message.trace_state.clear();
    overwrite_text(&mut message.name, Compact::piece(text, span.name));
    resize_attributes(&mut message.attributes, span.attributes().len(), spare);
    for (message, (key, value)) in message.attributes.iter_mut().zip(span.attributes()) {
        overwrite_text(&mut message.key, Compact::piece(text, *key));
        message.key_strindex = 0;
        let any = message.value.get_or_insert_with(AnyValue::default);
        match *value {
            Inline::Text(at) => overwrite_string(any, Compact::piece(text, at)),
            Inline::Int(n) => any.value = Some(any_value::Value::IntValue(n)),
            Inline::Bool(b) => any.value = Some(any_value::Value::BoolValue(b)),
            Inline::Float(f) => any.value = Some(any_value::Value::DoubleValue(f)),
        }
    }
    message.dropped_events_count = 0;
    message.events.clear();
    message.dropped_links_count = 0;
    message.links.clear();
    let status = message.status.get_or_insert_with(Status::default);
    status.code = span.status as i32;
    overwrite_text(&mut status.message, Compact::piece(text, span.status_message));
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
    match value {
        Value::String(text) => overwrite_string(message, text.as_str()),
        Value::I64(n) => message.value = Some(any_value::Value::IntValue(*n)),
        Value::Bool(b) => message.value = Some(any_value::Value::BoolValue(*b)),
        Value::F64(f) => message.value = Some(any_value::Value::DoubleValue(*f)),
        other => *message = AnyValue::from(other.clone()),
    }
}

/// Writes `text` over `message`, into the string it holds when it holds one.
fn overwrite_string(message: &mut AnyValue, text: &str) {
    match &mut message.value {
        Some(any_value::Value::StringValue(buffer)) => overwrite_text(buffer, text),
        other => *other = Some(any_value::Value::StringValue(text.to_owned())),
    }
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
        let read = |pairs| Target::from_vars(vars(pairs));
        let (plain, warnings) = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")]).unwrap();
        assert_eq!(plain.uri, "http://collector:4318/v1/traces");
        assert_eq!(plain.timeout, std::time::Duration::from_secs(10));
        assert!(plain.headers[http::header::USER_AGENT].to_str().unwrap().starts_with("mcp-stack/"));
        assert!(warnings.is_empty());
        let (target, warnings) = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://traces.example/custom"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=general%20key, x-team=a"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "api-key=traces%3Dkey"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
        ])
        .unwrap();
        assert_eq!(target.uri, "https://traces.example/custom");
        assert_eq!(target.headers["api-key"], "traces=key");
        assert_eq!(target.headers["x-team"], "a");
        assert_eq!(target.timeout, std::time::Duration::from_millis(2500));
        assert!(warnings.is_empty());
        assert_eq!(read(&[]).unwrap().0.uri, "http://localhost:4318/v1/traces");
        // Pairs that cannot be headers are skipped, and said without their text (a credential).
        let (target, warnings) = read(&[
            ("OTEL_EXPORTER_OTLP_HEADERS", "Authorization: Bearer abc123==,ok=1,token=secret%zz,empty=,x=%+f"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
        ])
        .unwrap();
        assert_eq!(target.headers["ok"], "1");
        assert_eq!(target.headers.len(), 2, "{:?}", target.headers);
        assert_eq!(target.timeout, std::time::Duration::from_secs(10));
        assert_eq!(warnings.len(), 5, "{warnings:?}");
        let said = warnings.join(" ");
        assert!(!said.contains("abc123") && !said.contains("secret") && !said.contains("Bearer"), "{said}");
        let refused = [
            read(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "not a url")]),
            read(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://collector/v1/traces")]),
            read(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://user:pw@/x")]),
        ];
        for error in refused.into_iter().map(Result::unwrap_err) {
            assert!(!error.contains("pw") && !error.contains("collector"), "{error}");
        }
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
        // A recorded tool result of 64 KiB is sent, and its buffer not kept.
        let big = || {
            vec![span(
                "tools/call echo",
                vec![opentelemetry::KeyValue::new("gen_ai.tool.call.result", "r".repeat(65536))],
            )]
        };
        assert_eq!(encoder.encode(&mut queue(big(), false)), reference(&resource, big()).as_slice());
        let kept: usize = encoder
            .scopes
            .iter()
            .flat_map(|slot| &slot.message.spans)
            .chain(&encoder.spare_spans)
            .flat_map(|span| &span.attributes)
            .chain(&encoder.spare_attributes)
            .filter_map(|a| match &a.value {
                Some(AnyValue { value: Some(any_value::Value::StringValue(text)) }) => Some(text.capacity()),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        assert!(kept <= LARGE_TEXT, "a buffer of {kept} bytes was kept");
    }
}
