//! The server's side of telemetry (feature `otel`): each request runs inside its SERVER span (the
//! trace context its `_meta` carried as the parent), so that everything it does (the middleware
//! layers, the audit line, a request a gateway's handler sends on) happens in that span; each
//! notification the server handles is a span of its own. See [`crate::telemetry::spans`]. In a
//! process where telemetry records nothing (no exporter, the histograms unread), a message that
//! carried no trace context is handled as without telemetry.

use mcp_types::ErrorObject;

use super::context::RequestContext;
use super::reply::Reply;
use super::Router;
use crate::engine::raw::RawParams;
use crate::telemetry::spans::Known;
use crate::telemetry::{Ending, Message, Operation, Transport};

/// The transport of a request: stdio when its transport said nothing.
fn transport_of(cx: &RequestContext) -> &Transport {
    static PIPE: std::sync::LazyLock<Transport> = std::sync::LazyLock::new(Transport::pipe);
    cx.transport().unwrap_or(&PIPE)
}

/// Whether the router has the tool or prompt a request names (only those label histograms).
/// Asked only when the request's label set with that name is not bound yet: a name that labelled
/// an operation of this process once (a tool since removed, or one another router of the process
/// has) stays a label, and what a peer sends never grows the labels.
fn has(router: &Router, method: &str, name: &str) -> bool {
    let registry = router.inner.registry.read().unwrap();
    match method {
        "tools/call" => registry.tools.contains(name),
        "prompts/get" => registry.prompts.contains(name),
        _ => false,
    }
}

/// Whether a request's handling runs as an operation: something is recorded (spans, the
/// sampler's decision, the histograms: see [`crate::telemetry::records_anything`]), or a trace
/// context came with it, which the handling passes on. Otherwise it is handled as without
/// telemetry.
pub(crate) fn wanted(cx: &RequestContext) -> bool {
    crate::telemetry::records_anything()
        || cx.carrier().is_some()
        || cx.transport().is_some_and(|t| t.http_context.is_some())
}

/// The span of one request, started.
pub(crate) fn start(router: &Router, method: &str, raw: &RawParams, cx: &RequestContext) -> Operation {
    let named = match raw.named() {
        Some(named) => Some(std::borrow::Cow::Borrowed(named)),
        None => super::middleware::named_item(method, raw.text()).map(std::borrow::Cow::Owned),
    };
    let message = Message {
        method,
        target: named.as_deref(),
        request_id: Some(cx.request_id()),
        protocol_version: Some(cx.protocol_version()).filter(|v| !v.is_empty()),
        known_target: false, // asked below
        params: if crate::telemetry::config::capture_content() { raw.text() } else { None },
    };
    let has = |name: &str| has(router, method, name);
    Operation::server_knowing(&message, cx.carrier(), transport_of(cx), Known::Ask(&has))
}

/// How a request's outcome ends its span.
pub(crate) fn ending(outcome: &Result<Reply, ErrorObject>) -> Ending<'_> {
    match outcome {
        Ok(reply) if reply.is_tool_error() => Ending::ToolError,
        Ok(_) => Ending::Ok,
        Err(e) => Ending::Error { code: i64::from(e.code.0), message: &e.message },
    }
}

/// Ends a request's span with its outcome (and its result, when tool results are recorded).
pub(crate) fn end(mut op: Operation, outcome: &Result<Reply, ErrorObject>) {
    if op.wants_result() {
        if let Ok(reply) = outcome {
            op.record_result(&reply.to_value().to_string());
        }
    }
    op.end(ending(outcome));
}

/// A notification the server received: a span of its own, ended at once.
pub(crate) fn notification(method: &str, params: Option<&str>, protocol_version: Option<&str>, transport: &Transport) {
    let carrier = params.and_then(crate::telemetry::Carrier::read);
    if carrier.is_none() && !crate::telemetry::records_anything() {
        return; // nothing to record, nothing to pass on
    }
    let target = match method {
        "notifications/resources/updated" => super::middleware::named_item("resources/read", params),
        _ => None,
    };
    let message = Message { method, target: target.as_deref(), protocol_version, ..Message::default() };
    Operation::server(&message, carrier.as_ref(), transport).end(Ending::Ok);
}
