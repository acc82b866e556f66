//! The OTLP/HTTP trace request, as the OpenTelemetry project's own protobuf types
//! (`opentelemetry-proto`) describe it and `prost` encodes it: where it goes ([`Target`], from
//! the standard `OTEL_EXPORTER_OTLP_*` variables) and its body ([`Encoder`]).
//!
//! The `opentelemetry-otlp` span exporter makes a new protobuf message of every span it sends:
//! two dozen small allocations a span, every attribute's key and value copied into a new
//! `String`, every id into a new `Vec`, all freed again once the batch is sent. Here this
//! library's spans come already written as their `Span` messages ([`super::wire`]), and a batch
//! of them is copied into the request around the resource and scope encoded once; the SDK's
//! spans (those of its tracer) go through `opentelemetry-proto`'s own conversion.

use opentelemetry::InstrumentationScope;
use opentelemetry_proto::tonic::common::v1::InstrumentationScope as InstrumentationScopeMessage;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::ScopeSpans;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::trace::SpanData;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use prost::encoding::{encoded_len_varint, key_len, WireType};

use super::wire::{self, length_delimited, Queued};

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

/// The body of an OTLP/HTTP trace request: `ExportTraceServiceRequest { resource_spans: [ResourceSpans {
/// resource, scope_spans, schema_url }] }`, one resource (this process), this library's spans
/// in one `ScopeSpans` as they were written ([`super::wire`]), the SDK's spans grouped by scope
/// by `opentelemetry-proto`'s own conversion.
///
/// The resource and this library's scope are encoded once. A written span is copied once, into
/// the body, after room left for the heads of the messages around it (their lengths are known
/// once the batch is); the body goes to the HTTP client as it is, and its buffer comes back for
/// the next batch when the client is done with it.
pub(crate) struct Encoder {
    /// The resource, as the SDK's spans are grouped under it.
    resource: ResourceAttributesWithSchema,
    /// `ResourceSpans.resource`, encoded.
    resource_field: Vec<u8>,
    /// `ResourceSpans.schema_url`, encoded (empty when there is none).
    resource_schema_field: Vec<u8>,
    /// This library's scope.
    scope: InstrumentationScope,
    /// `ScopeSpans.scope` of this library, encoded.
    scope_field: Vec<u8>,
    /// `ScopeSpans.schema_url` of this library, encoded.
    scope_schema_field: Vec<u8>,
    /// The body being made: room for the heads ([`Encoder::room`] bytes), then this batch's
    /// written spans, each a `ScopeSpans.spans` field.
    body: Vec<u8>,
    /// This batch's spans as the SDK ended them.
    others: Vec<SpanData>,
    /// The buffers of this batch's written spans, given back to their pool as it is made.
    buffers: Vec<Vec<u8>>,
    /// Spans in this batch.
    count: usize,
    /// Bodies the HTTP client is done with.
    spare: Arc<Mutex<Vec<Vec<u8>>>>,
    /// About the bytes of a batch of common spans: a body's buffer is used again up to four
    /// times this (a batch of large spans is not kept).
    keep: usize,
}

impl Encoder {
    /// An encoder for the spans of `resource`, written ones being of `scope`, batches of about
    /// `batch` spans.
    pub fn new(resource: &opentelemetry_sdk::Resource, scope: &InstrumentationScope, batch: usize) -> Encoder {
        let resource = ResourceAttributesWithSchema::from(resource);
        let mut resource_field = Vec::new();
        let message =
            Resource { attributes: resource.attributes.0.clone(), dropped_attributes_count: 0, entity_refs: vec![] };
        prost::encoding::message::encode(1, &message, &mut resource_field);
        let mut resource_schema_field = Vec::new();
        if let Some(url) = resource.schema_url.as_deref().filter(|u| !u.is_empty()) {
            length_delimited(3, url.as_bytes(), &mut resource_schema_field);
        }
        let mut scope_field = Vec::new();
        let message: InstrumentationScopeMessage = (scope, None).into();
        prost::encoding::message::encode(1, &message, &mut scope_field);
        let mut scope_schema_field = Vec::new();
        if let Some(url) = scope.schema_url().filter(|u| !u.is_empty()) {
            length_delimited(3, url.as_bytes(), &mut scope_schema_field);
        }
        let mut encoder = Encoder {
            resource,
            resource_field,
            resource_schema_field,
            scope: scope.clone(),
            scope_field,
            scope_schema_field,
            body: Vec::new(),
            others: Vec::new(),
            buffers: Vec::new(),
            count: 0,
            spare: Arc::default(),
            keep: batch.max(1).saturating_mul(wire::SLOT + 8),
        };
        encoder.begin();
        encoder
    }

    /// The room for the heads around the batch's written spans, at most: `ResourceSpans`' key
    /// and length, the resource, `ScopeSpans`' key and length, this library's scope.
    fn room(&self) -> usize {
        2 * (1 + 10) + self.resource_field.len() + self.scope_field.len()
    }

    /// Begins a batch, in a body the client is done with when there is one.
    fn begin(&mut self) {
        let spare = self.spare.lock().ok().and_then(|mut spare| spare.pop());
        self.body = spare.unwrap_or_default();
        self.body.clear();
        self.body.resize(self.room(), 0);
    }

    /// Adds a span to the batch.
    pub fn add(&mut self, span: Queued) {
        match span {
            Queued::Written { bytes, from } => {
                length_delimited(2, bytes.get(from..).unwrap_or_default(), &mut self.body);
                self.buffers.push(bytes);
                if self.buffers.len() >= 64 {
                    wire::POOL.give_back(&mut self.buffers);
                }
            }
            // One of this library's scope made through the SDK goes with the written ones.
            Queued::Full(data) if data.instrumentation_scope == self.scope => {
                let span = opentelemetry_proto::tonic::trace::v1::Span::from(*data);
                prost::encoding::message::encode(2, &span, &mut self.body);
            }
            Queued::Full(data) => self.others.push(*data),
        }
        self.count += 1;
    }

    /// Spans in the batch.
    pub fn len(&self) -> usize {
        self.count
    }

    /// The body of a request carrying the batch, which begins again empty.
    pub fn encode(&mut self) -> Bytes {
        wire::POOL.give_back(&mut self.buffers);
        let room = self.room();
        let written = self.body.len() - room;
        let others: Vec<ScopeSpans> = match self.others.is_empty() {
            true => Vec::new(),
            false => group_spans_by_resource_and_scope(std::mem::take(&mut self.others), &self.resource)
                .into_iter()
                .flat_map(|resource_spans| resource_spans.scope_spans)
                .collect(),
        };
        let ours = match written {
            0 => 0,
            n => self.scope_field.len() + n + self.scope_schema_field.len(),
        };
        // After the written spans: their scope's schema, the other scopes, the resource's schema.
        if ours > 0 {
            self.body.extend_from_slice(&self.scope_schema_field);
        }
        for scope in &others {
            prost::encoding::message::encode(2, scope, &mut self.body);
        }
        self.body.extend_from_slice(&self.resource_schema_field);
        // Before them, in the room left, the heads, now that their lengths are known.
        let mut resource_spans = self.body.len() - room + self.resource_field.len();
        if ours > 0 {
            resource_spans += key_len(2) + encoded_len_varint(ours as u64) + self.scope_field.len();
        }
        let mut heads = Vec::with_capacity(room);
        wire::field_key(1, WireType::LengthDelimited, &mut heads);
        wire::varint(resource_spans as u64, &mut heads);
        heads.extend_from_slice(&self.resource_field);
        if ours > 0 {
            wire::field_key(2, WireType::LengthDelimited, &mut heads);
            wire::varint(ours as u64, &mut heads);
            heads.extend_from_slice(&self.scope_field);
        }
        let from = room - heads.len();
        self.body[from..room].copy_from_slice(&heads);
        self.count = 0;
        let body = Body { bytes: std::mem::take(&mut self.body), from, spare: self.spare.clone(), keep: self.keep };
        self.begin();
        Bytes::from_owner(body)
    }
}

/// A request's body, which goes back to its encoder once the HTTP client drops it.
struct Body {
    bytes: Vec<u8>,
    from: usize,
    spare: Arc<Mutex<Vec<Vec<u8>>>>,
    keep: usize,
}

impl AsRef<[u8]> for Body {
    fn as_ref(&self) -> &[u8] {
        self.bytes.get(self.from..).unwrap_or_default()
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        if self.bytes.capacity() > self.keep.saturating_mul(4) {
            return;
        }
        if let Ok(mut spare) = self.spare.lock() {
            if spare.len() < 2 {
                spare.push(std::mem::take(&mut self.bytes));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanContext, SpanId, SpanKind, TraceFlags, TraceId, TraceState};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use std::time::UNIX_EPOCH;

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
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use prost::Message as _;
        let resource = ResourceAttributesWithSchema::from(resource);
        ExportTraceServiceRequest { resource_spans: group_spans_by_resource_and_scope(spans, &resource) }
            .encode_to_vec()
    }

    #[test]
    fn batches_encode_as_the_otlp_exporter_would() {
        use prost::Message as _;
        let resource = opentelemetry_sdk::Resource::builder().with_service_name("svc").build();
        let ours = InstrumentationScope::builder("scope-a").with_version("1").build();
        let mut encoder = Encoder::new(&resource, &ours, 8);
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
        let second = || {
            vec![span(
                "initialize",
                vec![
                    opentelemetry::KeyValue::new("client.port", "text now"),
                    opentelemetry::KeyValue::new("ratio", 0.5),
                ],
            )]
        };
        fn encode(encoder: &mut Encoder, spans: Vec<SpanData>, written: bool) -> Vec<u8> {
            for span in spans {
                encoder.add(if written { wire::of_span_data(&span) } else { Queued::Full(Box::new(span)) });
            }
            encoder.encode().to_vec()
        }
        // Written spans, and the same spans as the SDK ended them: the bytes the exporter sends.
        for written in [true, false, true] {
            assert_eq!(encode(&mut encoder, first(), written), reference(&resource, first()));
            assert_eq!(encode(&mut encoder, second(), written), reference(&resource, second()));
        }
        // Spans of another scope beside written ones: one scope message each, ours first.
        let mut other = span("elsewhere", vec![opentelemetry::KeyValue::new("k", "v")]);
        other.instrumentation_scope = InstrumentationScope::builder("scope-b").build();
        let mut expected = first();
        expected.push(other.clone());
        let mut mixed: Vec<Queued> = first().iter().map(wire::of_span_data).collect();
        mixed.push(Queued::Full(Box::new(other)));
        mixed.into_iter().for_each(|span| encoder.add(span));
        assert_eq!(encoder.len(), 3);
        let body = encoder.encode();
        assert_eq!(body, reference(&resource, expected));
        assert_eq!(encoder.len(), 0);
        let decoded = ExportTraceServiceRequest::decode(body.clone()).unwrap();
        assert_eq!(decoded.resource_spans[0].scope_spans.len(), 2);
        // A recorded tool result of 64 KiB is sent, and its buffers not kept.
        let big = || {
            vec![span(
                "tools/call echo",
                vec![opentelemetry::KeyValue::new("gen_ai.tool.call.result", "r".repeat(65536))],
            )]
        };
        assert_eq!(encode(&mut encoder, big(), true), reference(&resource, big()));
        assert!(encoder.body.capacity() <= 2 * encoder.keep);
        assert!(encoder.spare.lock().unwrap().iter().all(|body| body.capacity() <= 4 * encoder.keep));
        // A body the client is done with is used again.
        drop(body);
        assert!(!encoder.spare.lock().unwrap().is_empty());
    }
}
