//! OpenTelemetry (feature `otel`): every MCP message in the words of the semantic conventions for
//! MCP (`docs/gen-ai/mcp.md` of open-telemetry/semantic-conventions-genai, status Development),
//! on both sides, and the trace context carried from one process to the next.
//!
//! - [`spans`]: a SERVER span per message a server handles and a CLIENT span per message a client
//!   sends, named `{mcp.method.name} {target}`, with the conventions' attributes and `error.type`,
//!   and the conventions' duration histograms recorded as each ends;
//! - [`carrier`]: the trace context (`traceparent`, `tracestate`, `baggage`) in `params._meta`;
//! - [`export`]: OTLP over HTTP with protobuf, off the request path: a bounded queue that a thread
//!   of its own drains in batches, so a slow or absent collector costs dropped (and counted)
//!   spans, never a waiting request nor a growing queue; `wire` is how a span is written (as
//!   the protobuf message it is sent as) and waits in it, `otlp` the request it goes out in;
//! - [`metrics`]: the instruments, and the Prometheus text page HTTP servers serve at `/metrics`;
//!   `push` pushes them over OTLP, from the export thread or from a server's own runtime;
//! - [`config`]: the standard `OTEL_*` environment variables.
//!
//! Spans are made only once [`init`] ran (the command line of every server and `mcp` call it)
//! and found somewhere to send them; before that a message costs one atomic load, and a trace
//! context that comes in is still passed on to the next hop. The histograms are recorded from the
//! first message on, but in a process the command line serves over stdio with no exporter pushing
//! them (nothing could read them there; see [`metrics::prometheus`]).
//!
//! Arguments, results and tokens are never recorded, unless the standard opt-in for GenAI content
//! (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`) asks for tool arguments and results.
//! Where this module follows a proposal rather than the released conventions, its item says so
//! (`server/discover`, `subscriptions/listen`, `mcp.session.id` only before 2026-07-28).

pub mod carrier;
pub mod config;
pub mod export;
mod labels;
pub mod metrics;
mod otlp;
pub(crate) mod push;
pub mod spans;
mod wire;

use std::sync::OnceLock;
use std::time::Duration;

pub use carrier::Carrier;
pub use opentelemetry;
pub use spans::{Ending, Message, Operation, Peer, Session, Transport};

/// What [`init`] set up for spans.
pub(crate) struct Tracing {
    /// The sampler of `OTEL_TRACES_SAMPLER`, as the SDK reads it (its tracer provider has the same).
    pub sampler: Box<dyn opentelemetry_sdk::trace::ShouldSample>,
    /// What the sampler keeps, when that is known without asking it.
    pub roots: config::Roots,
}

static TRACING: OnceLock<Tracing> = OnceLock::new();

/// `OTEL_TRACES_SAMPLER=always_off`: no span is begun, and none exported.
static SAMPLING_OFF: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// How spans are made, once [`init`] found an exporter, for a span whose parent is `parent`:
/// `None` when no span is made (none is exported, or the sampler would drop it whatever it is).
pub(crate) fn tracing(parent: &opentelemetry::Context) -> Option<&'static Tracing> {
    use opentelemetry::trace::TraceContextExt as _;
    let tracing = TRACING.get()?;
    if tracing.roots == config::Roots::UnderSampledParent && !parent.span().span_context().is_sampled() {
        return None;
    }
    Some(tracing)
}

/// The context a message is handled in (and the next hop is told) when the sampler drops its
/// span before it is begun: the parent's trace, or a new one, with the sampled flag off, as the
/// SDK's non-recording span would carry it, so that the next hop does not record what this one
/// dropped. `None` when this process decides nothing about spans (no exporter): the parent is
/// then passed on as it came.
pub(crate) fn dropped_context(parent: &opentelemetry::Context) -> Option<opentelemetry::Context> {
    decides_spans().then(|| unsampled(parent))
}

/// Whether this process decides about spans: it makes them, or its sampler drops them all.
fn decides_spans() -> bool {
    TRACING.get().is_some() || SAMPLING_OFF.load(std::sync::atomic::Ordering::Relaxed)
}

/// `parent` with its span context marked not sampled (a new trace when it has none).
fn unsampled(parent: &opentelemetry::Context) -> opentelemetry::Context {
    use opentelemetry::trace::{SpanContext, TraceContextExt as _, TraceFlags};
    use opentelemetry_sdk::trace::{IdGenerator as _, RandomIdGenerator};
    let span = parent.span();
    let given = span.span_context();
    let unsampled = if given.is_valid() {
        SpanContext::new(given.trace_id(), given.span_id(), TraceFlags::default(), true, given.trace_state().clone())
    } else {
        let ids = RandomIdGenerator::default();
        SpanContext::new(ids.new_trace_id(), ids.new_span_id(), TraceFlags::default(), false, Default::default())
    };
    parent.with_remote_span_context(unsampled)
}

/// Whether an operation that no trace context came with records anything: spans are made, or
/// the sampler's "no" is decided here (and passed on), or the duration histograms are recorded.
pub(crate) fn records_anything() -> bool {
    decides_spans() || metrics::recorded()
}

/// Whether spans are made (and exported).
pub fn is_tracing() -> bool {
    TRACING.get().is_some()
}

/// Sets telemetry up from the `OTEL_*` environment (see [`config`]) for a process whose service
/// is called `service` unless `OTEL_SERVICE_NAME` (or `service.name` in
/// `OTEL_RESOURCE_ATTRIBUTES`) says otherwise: spans exported over OTLP/HTTP when an endpoint is
/// configured, metrics too when `OTEL_METRICS_EXPORTER` asks, the W3C propagators. Once per
/// process; later calls do nothing. A configuration that cannot work is said on stderr, and the
/// process goes on without what it asked for.
pub fn init(service: &str) {
    init_once(service, false);
}

/// [`init`] for a server about to serve on the runtime this is called from, which flushes with
/// [`flush_serving`] before that runtime ends: when no span is exported and only the metrics are
/// pushed (to an IP address over plain HTTP), their push runs there, once a minute, rather than
/// on a thread of its own (see [`push`] for what a second thread costs every request). Called
/// again, by a server serving again on another runtime, it starts the push again there.
#[cfg_attr(not(feature = "cli"), allow(dead_code))] // called by the command line
pub(crate) fn init_serving(service: &str) {
    init_once(service, true);
    push::resume_here();
}

fn init_once(service: &str, serving: bool) {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let config = match config::Config::from_env(service) {
            Ok(config) => config,
            Err(e) => {
                eprintln!("OpenTelemetry: {e}; telemetry stays off");
                return;
            }
        };
        if config.disabled {
            return;
        }
        opentelemetry::global::set_text_map_propagator(carrier::propagator());
        SAMPLING_OFF.store(config.roots == config::Roots::None, std::sync::atomic::Ordering::Relaxed);
        metrics::init(&config, serving && config.traces.is_none());
        if let Some(traces) = &config.traces {
            let sampler = opentelemetry_sdk::trace::Config::default().sampler;
            match export::tracer_provider(&config, traces, sampler.clone()) {
                Ok(provider) => {
                    opentelemetry::global::set_tracer_provider(provider);
                    let _ = TRACING.set(Tracing { sampler, roots: config.roots });
                }
                Err(e) => eprintln!("OpenTelemetry: the span exporter cannot start ({e}); spans stay off"),
            }
        }
    });
}

/// This library as the instrumentation scope of its spans and metrics.
pub(crate) fn scope() -> opentelemetry::InstrumentationScope {
    opentelemetry::InstrumentationScope::builder("mcp-stack").with_version(env!("CARGO_PKG_VERSION")).build()
}

/// Sends what is queued (spans, and metrics when they are exported), waiting at most `timeout`:
/// what a process does before it exits. Spans that end afterwards are still exported.
pub fn flush(timeout: Duration) {
    if TRACING.get().is_some() {
        let _ = export::flush(timeout);
    }
    metrics::flush(timeout);
}

/// [`flush`] from the runtime [`init_serving`] was called on, which may be the one the metrics
/// are pushed from.
#[cfg_attr(not(feature = "cli"), allow(dead_code))] // called by the command line
pub(crate) async fn flush_serving(timeout: Duration) {
    if TRACING.get().is_some() {
        let _ = export::flush(timeout);
    }
    let _ = push::flush_async(timeout).await;
}

/// The trace and span ids of the span the current code runs in (the server span of the request
/// being handled), as lowercase hex: what the audit log writes beside each request.
pub fn current_ids() -> Option<(String, String)> {
    use opentelemetry::trace::TraceContextExt as _;
    let cx = opentelemetry::Context::current();
    let span = cx.span();
    let ids = span.span_context();
    ids.is_valid().then(|| (ids.trace_id().to_string(), ids.span_id().to_string()))
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanContext, TraceContextExt as _, TraceFlags, TraceId, TraceState};
    use opentelemetry::Context;

    #[test]
    fn a_dropped_span_passes_on_its_parent_unsampled_or_a_new_unsampled_trace() {
        let trace = TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap();
        let parent = SpanContext::new(
            trace,
            opentelemetry::trace::SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::SAMPLED,
            true,
            TraceState::default(),
        );
        let cx = super::unsampled(&Context::new().with_remote_span_context(parent.clone()));
        let passed = cx.span().span_context().clone();
        assert_eq!((passed.trace_id(), passed.span_id()), (parent.trace_id(), parent.span_id()));
        assert!(!passed.is_sampled(), "the next hop is told this one dropped it");
        let root = super::unsampled(&Context::new());
        let passed = root.span().span_context().clone();
        assert!(passed.is_valid() && !passed.is_sampled(), "a new trace, not sampled: {passed:?}");
    }
}
