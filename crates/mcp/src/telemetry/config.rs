//! The standard `OTEL_*` environment variables, read once at [`super::init`].
//!
//! - `OTEL_SDK_DISABLED=true`: nothing at all (not even the histograms' OTLP export; the
//!   Prometheus page still counts).
//! - `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`: the resource (the service name defaults to
//!   the program's: `mcp-example`, `mcp gateway`...).
//! - `OTEL_TRACES_EXPORTER`: `otlp` or `none`. Unset, spans are exported when an OTLP endpoint is
//!   configured (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), and not
//!   otherwise: unlike the specification's default (`otlp` to `localhost:4318`), a stdio server a
//!   desktop host starts sends nothing anywhere unless asked to.
//! - `OTEL_METRICS_EXPORTER`: the same, for the histograms and counters (every 60 s, or
//!   `OTEL_METRIC_EXPORT_INTERVAL`); the Prometheus page needs no variable.
//! - `OTEL_EXPORTER_OTLP_*` (endpoint, headers, timeout, per signal too) are the exporter's own;
//!   the protocol must be `http/protobuf` (the default), the only one built in.
//! - `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` are the SDK's (default
//!   `parentbased_always_on`). Two are decided before any span is begun, so that sampling off
//!   costs a message next to nothing: `always_off` begins no span, `parentbased_always_off` one
//!   only under a sampled parent; the context passed on then is the parent's (or a new trace)
//!   with the sampled flag off, as the SDK's non-recording span would carry it. The samplers
//!   that decide on the parent alone (`always_on`, `always_off`, `parentbased_always_on` and
//!   `parentbased_always_off`) are not asked: each span's decision is theirs, made here (the
//!   `Roots::decide` rule, which a test checks against the SDK's samplers); the others are
//!   asked. The name is read as the SDK reads it, untrimmed: `always_off ` (a space after it) is
//!   a name the SDK does not know, and samples as its default does.
//! - `OTEL_BSP_MAX_QUEUE_SIZE` (2048), `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (512),
//!   `OTEL_BSP_SCHEDULE_DELAY` (5000 ms), `OTEL_BSP_EXPORT_TIMEOUT` (30000 ms): the batch
//!   processor's bounds.
//! - `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`: tool arguments and results on the
//!   `tools/call` spans (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`). Off by default:
//!   they may hold secrets and personal data.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry_sdk::Resource;

static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Whether tool arguments and results go on spans (the GenAI content opt-in).
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

/// Which spans the sampler of `OTEL_TRACES_SAMPLER` keeps, as far as that is known without
/// asking it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Roots {
    /// Any (the sampler decides each: `traceidratio`, `parentbased_traceidratio`, and a name
    /// this crate does not know, which the SDK reads as it likes).
    Any,
    /// Every one (`always_on`).
    Every,
    /// Those without a parent, and those under a sampled one (`parentbased_always_on`, the
    /// default).
    UnlessParentUnsampled,
    /// Only those under a sampled parent (`parentbased_always_off`).
    UnderSampledParent,
    /// None (`always_off`).
    None,
}

impl Roots {
    fn from_env() -> Roots {
        // Read as the SDK reads it (not trimmed), so that the two agree.
        match std::env::var("OTEL_TRACES_SAMPLER").ok().as_deref() {
            Some("always_off") => Roots::None,
            Some("always_on") => Roots::Every,
            None | Some("parentbased_always_on") => Roots::UnlessParentUnsampled,
            Some("parentbased_always_off") => Roots::UnderSampledParent,
            Some(_) => Roots::Any,
        }
    }

    /// Whether the sampler keeps a span whose parent is `parent`, when it decides on the parent
    /// alone (`None`: it must be asked). As the SDK's `ParentBased` sampler does, a parent is
    /// any span in the context, and one not sampled (an invalid one too) has its children
    /// dropped.
    pub(crate) fn decide(self, parent: &opentelemetry::Context) -> Option<bool> {
        use opentelemetry::trace::TraceContextExt as _;
        let sampled_parent = || parent.span().span_context().is_sampled();
        match self {
            Roots::Any => None,
            Roots::Every => Some(true),
            Roots::UnlessParentUnsampled => Some(!parent.has_active_span() || sampled_parent()),
            Roots::UnderSampledParent => Some(parent.has_active_span() && sampled_parent()),
            Roots::None => Some(false),
        }
    }
}

/// What the environment asks for.
pub struct Config {
    /// `OTEL_SDK_DISABLED=true`.
    pub disabled: bool,
    /// The service these spans and metrics describe.
    pub resource: Resource,
    /// Spans go out, batched so.
    pub traces: Option<Batch>,
    /// Which spans the sampler can keep.
    pub roots: Roots,
    /// Metrics go out over OTLP too.
    pub metrics: bool,
}

/// The batch span processor's bounds.
#[derive(Debug, Clone)]
pub struct Batch {
    /// Spans waiting at most; past it, ended spans are dropped and counted.
    pub max_queue: usize,
    /// Spans per export request at most.
    pub max_batch: usize,
    /// How long a span may wait for a full batch.
    pub delay: Duration,
    /// How long one export may take (the exporter's own timeout is shorter by default).
    pub export_timeout: Duration,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            max_queue: 2048,
            max_batch: 512,
            delay: Duration::from_secs(5),
            export_timeout: Duration::from_secs(30),
        }
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

fn number(name: &str, default: u64) -> Result<u64, String> {
    match var(name) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| format!("{name}={v:?} is not a number")),
    }
}

/// Whether a signal is exported: `OTEL_{SIGNAL}_EXPORTER`, else whether an endpoint is set.
fn exported(exporter_var: &str, endpoint_var: &str) -> Result<bool, String> {
    match var(exporter_var).as_deref() {
        Some("none") => Ok(false),
        Some("otlp") => Ok(true),
        Some("prometheus") if exporter_var == "OTEL_METRICS_EXPORTER" => Ok(false), // the /metrics page
        Some(other) => Err(format!("{exporter_var}={other:?} is not supported (otlp or none)")),
        None => Ok(var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() || var(endpoint_var).is_some()),
    }
}

/// The protocol of a signal's exporter must be OTLP over HTTP with protobuf.
fn check_protocol(signal_var: &str) -> Result<(), String> {
    let protocol = var(signal_var).or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
    match protocol.as_deref() {
        None | Some("http/protobuf") => Ok(()),
        Some(other) => Err(format!("OTLP protocol {other:?} is not built in (http/protobuf is)")),
    }
}

impl Config {
    /// Reads the environment; `service` is the service name when it names none.
    pub fn from_env(service: &str) -> Result<Config, String> {
        let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        CAPTURE_CONTENT.store(
            var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT").is_some_and(|v| v.eq_ignore_ascii_case("true")),
            Ordering::Relaxed,
        );
        let named = var("OTEL_SERVICE_NAME").is_some()
            || var("OTEL_RESOURCE_ATTRIBUTES")
                .is_some_and(|a| a.split(',').any(|kv| kv.trim().starts_with("service.name=")));
        let mut resource = Resource::builder();
        if !named {
            resource = resource.with_service_name(service.to_owned());
        }
        let roots = Roots::from_env();
        let traces = if roots != Roots::None && exported("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")?
        {
            check_protocol("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")?;
            let defaults = Batch::default();
            let max_queue = number("OTEL_BSP_MAX_QUEUE_SIZE", defaults.max_queue as u64)?.max(1) as usize;
            Some(Batch {
                max_queue,
                max_batch: (number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", defaults.max_batch as u64)?.max(1) as usize)
                    .min(max_queue),
                delay: Duration::from_millis(number("OTEL_BSP_SCHEDULE_DELAY", 5000)?),
                export_timeout: Duration::from_millis(number("OTEL_BSP_EXPORT_TIMEOUT", 30000)?.max(1)),
            })
        } else {
            None
        };
        let metrics = exported("OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")?;
        if metrics {
            check_protocol("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")?;
        }
        Ok(Config { disabled, resource: resource.build(), traces, roots, metrics })
    }
}

#[cfg(test)]
mod tests {
    use super::Roots;
    use opentelemetry::trace::{SpanContext, SpanId, SpanKind, TraceContextExt as _, TraceFlags, TraceId, TraceState};
    use opentelemetry::Context;
    use opentelemetry_sdk::trace::{Sampler, SamplingDecision, ShouldSample as _};

    #[test]
    fn the_samplers_decided_here_decide_as_the_sdks_do() {
        let state = TraceState::from_key_value([("vendor", "value")]).unwrap();
        let span = |flags: TraceFlags, remote: bool| {
            SpanContext::new(TraceId::from(7), SpanId::from(9), flags, remote, state.clone())
        };
        let parents = [
            Context::new(),
            Context::new().with_remote_span_context(span(TraceFlags::SAMPLED, true)),
            Context::new().with_remote_span_context(span(TraceFlags::default(), true)),
            Context::new().with_remote_span_context(span(TraceFlags::SAMPLED, false)),
            Context::new().with_remote_span_context(span(TraceFlags::default(), false)),
            Context::new().with_remote_span_context(SpanContext::empty_context()),
        ];
        let samplers = [
            (Roots::Every, Sampler::AlwaysOn),
            (Roots::None, Sampler::AlwaysOff),
            (Roots::UnlessParentUnsampled, Sampler::ParentBased(Box::new(Sampler::AlwaysOn))),
            (Roots::UnderSampledParent, Sampler::ParentBased(Box::new(Sampler::AlwaysOff))),
        ];
        for (roots, sampler) in &samplers {
            for (i, parent) in parents.iter().enumerate() {
                let sdk = sampler.should_sample(
                    Some(parent),
                    TraceId::from(7),
                    "tools/call echo",
                    &SpanKind::Server,
                    &[],
                    &[],
                );
                let keep = sdk.decision == SamplingDecision::RecordAndSample;
                assert_eq!(roots.decide(parent), Some(keep), "{roots:?}, parent {i}");
                assert!(sdk.attributes.is_empty());
                assert_eq!(
                    sdk.trace_state,
                    parent.span().span_context().trace_state().clone(),
                    "the parent's tracestate"
                );
            }
        }
        assert_eq!(Roots::Any.decide(&parents[0]), None, "a ratio is the sampler's to apply");
    }
}
