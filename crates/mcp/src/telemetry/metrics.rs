//! The metrics: the conventions' four histograms, `mcp.{server,client}.operation.duration` and
//! `mcp.{server,client}.session.duration` (seconds, with the buckets the conventions advise), and
//! the SDK's own counters for the span pipeline as the conventions for SDK metrics name them
//! (`otel.sdk.processor.span.processed` with `error.type = queue_full` for what was dropped,
//! `otel.sdk.processor.span.queue.size` and `.capacity`, `otel.sdk.exporter.span.exported` with
//! the failure's `error.type`).
//!
//! They are OpenTelemetry instruments, read two ways: on demand into the Prometheus text format
//! ([`prometheus`], the `/metrics` page of every HTTP server), named as the OpenTelemetry to
//! Prometheus compatibility rules say (dots become underscores, the unit is appended, `_total`
//! ends a counter); and, when the environment asks, pushed over OTLP. A process the command line
//! serves over stdio has no page: unless they are pushed, its operations do not record their
//! durations (`unread_unless_pushed`).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use opentelemetry::metrics::{Histogram, MeterProvider as _};
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{ManualReader, SdkMeterProvider, Temporality};

use super::config::Config;
use super::labels::{BoundPoints, Labels, Recorder};

/// Which side of the conversation a measurement is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Server,
    Client,
}

/// The bucket boundaries the conventions advise for all four histograms, in seconds.
const BOUNDARIES: [f64; 14] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

struct Meters {
    /// Owns the pipeline the instruments record into: kept for the process's life.
    _provider: SdkMeterProvider,
    reader: Arc<ManualReader>,
    server_operation: BoundPoints,
    client_operation: BoundPoints,
    server_session: Histogram<f64>,
    client_session: Histogram<f64>,
}

static METERS: OnceLock<Meters> = OnceLock::new();

/// The Prometheus page's reader, shared with the provider that owns it.
#[derive(Debug)]
pub(super) struct Shared(pub(super) Arc<ManualReader>);

impl MetricReader for Shared {
    fn register_pipeline(&self, pipeline: std::sync::Weak<opentelemetry_sdk::metrics::Pipeline>) {
        self.0.register_pipeline(pipeline)
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(&self, kind: opentelemetry_sdk::metrics::InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

fn build(config: Option<&Config>, serving: bool) -> Meters {
    let reader = Arc::new(ManualReader::builder().with_temporality(Temporality::Cumulative).build());
    let mut builder = SdkMeterProvider::builder().with_reader(Shared(reader.clone()));
    if let Some(config) = config {
        builder = builder.with_resource(config.resource.clone());
        if config.metrics {
            // Pushed from the one reader the Prometheus page reads too (the SDK's periodic
            // reader would be a second pipeline, every measurement recorded twice).
            if let Err(e) = super::push::start(reader.clone(), push_interval(), serving) {
                eprintln!("OpenTelemetry: the metric exporter cannot start ({e}); metrics stay on /metrics only");
            }
        }
    }
    let provider = builder.build();
    let meter = provider.meter_with_scope(super::scope());
    let histogram = |name: &'static str, description: &'static str| {
        meter
            .f64_histogram(name)
            .with_unit("s")
            .with_description(description)
            .with_boundaries(BOUNDARIES.to_vec())
            .build()
    };
    super::export::register_counters(&meter);
    Meters {
        server_operation: BoundPoints::new(histogram(
            "mcp.server.operation.duration",
            "MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.",
        )),
        client_operation: BoundPoints::new(histogram(
            "mcp.client.operation.duration",
            "The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received.",
        )),
        server_session: histogram("mcp.server.session.duration", "The duration of the MCP session as observed on the MCP server."),
        client_session: histogram("mcp.client.session.duration", "The duration of the MCP session as observed on the MCP client."),
        _provider: provider,
        reader,
    }
}

fn meters() -> &'static Meters {
    METERS.get_or_init(|| build(None, false))
}

/// Set when nothing in the process can read the histograms (see [`unread_unless_pushed`]).
static UNREAD: AtomicBool = AtomicBool::new(false);

/// Whether operations record their durations: unless [`unread_unless_pushed`] found that
/// nothing could read them (and [`prometheus`] has not been asked since).
pub(crate) fn recorded() -> bool {
    !UNREAD.load(Ordering::Relaxed)
}

/// Called by the command line as it serves stdio: with no exporter pushing the metrics and no
/// HTTP server to serve them at `/metrics`, nothing reads the duration histograms, and
/// operations stop recording them (two clock reads, the label set's lookup and the SDK's
/// locked record, a call). [`prometheus`] turns them back on, from its first call.
#[cfg_attr(not(feature = "cli"), allow(dead_code))] // called by the command line
pub(crate) fn unread_unless_pushed() {
    if !super::push::pushes() {
        UNREAD.store(true, Ordering::Relaxed);
    }
}

/// Builds the instruments for `config` (with its resource, and the OTLP exporter it asks for,
/// pushing from the runtime this is called from when `serving`: see [`super::push`]), unless a
/// measurement came first and built them plain.
pub(crate) fn init(config: &Config, serving: bool) {
    let _ = METERS.set(build(Some(config), serving));
}

/// Where an operation so labelled, starting now, records its duration as it ends.
pub(crate) fn operation(side: Side, labels: &Labels<'_>) -> Recorder {
    operation_points(side).recorder(labels)
}

/// [`operation`] when the points of such operations are bound already (an operation so
/// labelled started before) or `may_bind` says they may be (asked only then); `None`, and
/// nothing bound, otherwise.
pub(crate) fn operation_if(side: Side, labels: &Labels<'_>, may_bind: impl FnOnce() -> bool) -> Option<Recorder> {
    operation_points(side).recorder_if(labels, may_bind)
}

fn operation_points(side: Side) -> &'static BoundPoints {
    let meters = meters();
    if side == Side::Server {
        &meters.server_operation
    } else {
        &meters.client_operation
    }
}

/// Records a session's duration.
pub(crate) fn session(side: Side, seconds: f64, attributes: &[KeyValue]) {
    if !recorded() {
        return;
    }
    let meters = meters();
    let histogram = if side == Side::Server { &meters.server_session } else { &meters.client_session };
    histogram.record(seconds, attributes);
}

/// How often metrics are pushed: `OTEL_METRIC_EXPORT_INTERVAL` milliseconds (60 s unless set).
fn push_interval() -> Duration {
    let millis = std::env::var("OTEL_METRIC_EXPORT_INTERVAL").ok().and_then(|v| v.trim().parse::<u64>().ok());
    Duration::from_millis(millis.unwrap_or(60_000).max(1))
}

/// Pushes the metrics out now, when they are exported, waiting at most `timeout`.
pub(crate) fn flush(timeout: Duration) {
    let _ = super::push::flush(timeout);
}

/// Every metric, in the Prometheus text exposition format (version 0.0.4). (A stdio server the
/// command line serves, whose metrics no exporter pushes, records its durations only from the
/// first call of this on.)
pub fn prometheus() -> String {
    UNREAD.store(false, Ordering::Relaxed); // read from now on
    let mut collected = ResourceMetrics::default();
    if meters().reader.collect(&mut collected).is_err() {
        return String::new();
    }
    let mut page = String::new();
    for scope in collected.scope_metrics() {
        for metric in scope.metrics() {
            write_metric(&mut page, metric.name(), metric.unit(), metric.description(), metric.data());
        }
    }
    page
}

/// A metric's Prometheus name: every character outside `[a-zA-Z0-9_:]` becomes `_`, then the
/// unit's word (`s` is `_seconds`; annotations such as `{span}` add nothing), then `_total` for
/// a counter.
fn prometheus_name(name: &str, unit: &str, counter: bool) -> String {
    let mut out: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == ':' { c } else { '_' }).collect();
    let word = match unit {
        "s" => Some("seconds"),
        "ms" => Some("milliseconds"),
        "By" => Some("bytes"),
        "1" if !counter => Some("ratio"),
        _ => None,
    };
    if let Some(word) = word {
        if !out.ends_with(word) {
            out.push('_');
            out.push_str(word);
        }
    }
    if counter && !out.ends_with("_total") {
        out.push_str("_total");
    }
    out
}

/// `{key="value",...}` of a data point's attributes (and `extra`, a `le` bound), keys with dots
/// as underscores, values escaped.
fn labels<'a>(attributes: impl Iterator<Item = &'a KeyValue>, extra: Option<(&str, &str)>) -> String {
    let mut pairs: Vec<(String, String)> = attributes
        .map(|kv| {
            let key: String =
                kv.key.as_str().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
            (key, kv.value.as_str().into_owned())
        })
        .collect();
    pairs.sort();
    pairs.extend(extra.map(|(k, v)| (k.to_owned(), v.to_owned())));
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
    format!("{{{}}}", inner.join(","))
}

fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A float as Prometheus writes it.
fn number(value: f64) -> String {
    if value == f64::INFINITY {
        "+Inf".into()
    } else {
        format!("{value}")
    }
}

fn write_metric(page: &mut String, name: &str, unit: &str, description: &str, data: &AggregatedMetrics) {
    match data {
        AggregatedMetrics::F64(data) => write_data(page, name, unit, description, data, |v| number(*v)),
        AggregatedMetrics::U64(data) => write_data(page, name, unit, description, data, |v| v.to_string()),
        AggregatedMetrics::I64(data) => write_data(page, name, unit, description, data, |v| v.to_string()),
    }
}

fn write_data<T: Copy + std::fmt::Debug>(
    page: &mut String,
    name: &str,
    unit: &str,
    description: &str,
    data: &MetricData<T>,
    show: impl Fn(&T) -> String,
) {
    let help = description.replace('\\', "\\\\").replace('\n', "\\n");
    match data {
        MetricData::Histogram(histogram) => {
            let name = prometheus_name(name, unit, false);
            let _ = writeln!(page, "# HELP {name} {help}\n# TYPE {name} histogram");
            for point in histogram.data_points() {
                let mut cumulative = 0;
                for (bound, count) in point.bounds().zip(point.bucket_counts()) {
                    cumulative += count;
                    let le = labels(point.attributes(), Some(("le", &number(bound))));
                    let _ = writeln!(page, "{name}_bucket{le} {cumulative}");
                }
                let le = labels(point.attributes(), Some(("le", "+Inf")));
                let _ = writeln!(page, "{name}_bucket{le} {}", point.count());
                let plain = labels(point.attributes(), None);
                let _ = writeln!(page, "{name}_sum{plain} {}", show(&point.sum()));
                let _ = writeln!(page, "{name}_count{plain} {}", point.count());
            }
        }
        MetricData::Sum(sum) => {
            let counter = sum.is_monotonic();
            let name = prometheus_name(name, unit, counter);
            let kind = if counter { "counter" } else { "gauge" };
            let _ = writeln!(page, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for point in sum.data_points() {
                let _ = writeln!(page, "{name}{} {}", labels(point.attributes(), None), show(&point.value()));
            }
        }
        MetricData::Gauge(gauge) => {
            let name = prometheus_name(name, unit, false);
            let _ = writeln!(page, "# HELP {name} {help}\n# TYPE {name} gauge");
            for point in gauge.data_points() {
                let _ = writeln!(page, "{name}{} {}", labels(point.attributes(), None), show(&point.value()));
            }
        }
        MetricData::ExponentialHistogram(_) => {} // none is made here
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_compatibility_rules() {
        assert_eq!(
            prometheus_name("mcp.server.operation.duration", "s", false),
            "mcp_server_operation_duration_seconds"
        );
        assert_eq!(
            prometheus_name("otel.sdk.processor.span.processed", "{span}", true),
            "otel_sdk_processor_span_processed_total"
        );
        assert_eq!(
            prometheus_name("otel.sdk.processor.span.queue.size", "{span}", false),
            "otel_sdk_processor_span_queue_size"
        );
        let kv = [KeyValue::new("gen_ai.tool.name", "a\"b"), KeyValue::new("error.type", "tool_error")];
        assert_eq!(
            labels(kv.iter(), Some(("le", "0.01"))),
            r#"{error_type="tool_error",gen_ai_tool_name="a\"b",le="0.01"}"#
        );
    }
}
