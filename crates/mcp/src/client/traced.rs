//! The client's side of telemetry (feature `otel`): a CLIENT span per request this client sends
//! (a child of the span the caller runs in: a gateway's or bridge's SERVER span, `mcp chat`'s
//! turn), its trace context injected into the request's `params._meta` for the server to take as
//! its parent. See [`crate::telemetry::spans`].

use mcp_types::{ErrorObject, RequestId};
use opentelemetry::trace::TraceContextExt as _;
use serde_json::{Map, Value};

use crate::telemetry::{Ending, Message, Operation, Transport};

/// What a request names: the tool or prompt, or the resource's URI.
fn target(method: &str, params: &Value) -> Option<String> {
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => "uri",
        _ => return None,
    };
    params.get(field).and_then(Value::as_str).map(str::to_owned)
}

/// Starts the span of request `id`, and writes its trace context into `params._meta` (only
/// when there is one: a request is left as it was otherwise).
pub(crate) fn start(
    method: &str,
    id: &RequestId,
    params: &mut Value,
    protocol_version: Option<&str>,
    transport: &Transport,
) -> Operation {
    let target = target(method, params);
    let text = crate::telemetry::config::capture_content().then(|| params.to_string());
    let message = Message {
        method,
        target: target.as_deref(),
        request_id: Some(id),
        protocol_version: protocol_version.filter(|v| !v.is_empty()),
        known_target: true, // a name this client chose
        params: text.as_deref(),
    };
    let op = Operation::client(&message, transport);
    inject(&op, params);
    op
}

/// Writes `op`'s trace context into `params._meta` (only when there is one).
fn inject(op: &Operation, params: &mut Value) {
    let mut context = Map::new();
    op.inject(&mut context);
    if let (false, Value::Object(p)) = (context.is_empty(), params) {
        if let Value::Object(meta) = p.entry("_meta").or_insert_with(|| Value::Object(Map::new())) {
            for (key, value) in context {
                meta.entry(key).or_insert(value); // a context the caller wrote stays
            }
        }
    }
}

/// A notification this client sends: a CLIENT span of its own, ended as it goes, its context in
/// the notification's `params._meta` (params are made for it when there were none).
pub(crate) fn notification(method: &str, params: &mut Option<Value>, protocol_version: &str, transport: &Transport) {
    let message =
        Message { method, protocol_version: Some(protocol_version).filter(|v| !v.is_empty()), ..Message::default() };
    let op = Operation::client(&message, transport);
    if op.context().span().span_context().is_valid() {
        inject(&op, params.get_or_insert_with(|| Value::Object(Map::new())));
    }
    op.end(Ending::Ok);
}

/// Ends a request's span with its answer.
pub(crate) fn end(mut op: Operation, outcome: &Result<Value, ErrorObject>) {
    let ending = match outcome {
        Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => Ending::ToolError,
        Ok(_) => Ending::Ok,
        Err(e) => Ending::Error { code: i64::from(e.code.0), message: &e.message },
    };
    if let (true, Ok(result)) = (op.wants_result(), outcome) {
        op.record_result(&result.to_string());
    }
    op.end(ending);
}
