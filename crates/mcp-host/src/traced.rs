//! The host's side of telemetry (feature `otel`), by the OpenTelemetry GenAI conventions: a
//! person's question is an `invoke_agent mcp chat` span, each model request inside it a
//! `chat {model}` CLIENT span (provider, model, token usage, finish reason, `error.type`), and
//! the MCP calls the turn makes are its children (the client's `tools/call` CLIENT spans, whose
//! trace context travels on to the servers): one trace from the question to the last server.
//! Prompts, replies and tool arguments are never recorded. Without the feature, or before
//! `mcp::telemetry::init` found somewhere to send spans, every function here does nothing.

use std::future::Future;

#[cfg(feature = "otel")]
use crate::provider::Stop;
use crate::provider::{ProviderError, Request, Turn};

#[cfg(feature = "otel")]
use mcp::telemetry::opentelemetry::{
    global,
    trace::{FutureExt as _, Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _},
    Array, Context, KeyValue, StringValue, Value,
};

/// The span of a person's question, while it runs.
#[cfg_attr(not(feature = "otel"), allow(dead_code))] // never made without the feature
pub(crate) struct Question {
    #[cfg(feature = "otel")]
    context: Context,
}

/// The span of one model request, while it runs.
#[cfg_attr(not(feature = "otel"), allow(dead_code))] // never made without the feature
pub(crate) struct ModelRequest {
    #[cfg(feature = "otel")]
    span: mcp::telemetry::opentelemetry::global::BoxedSpan,
}

#[cfg(feature = "otel")]
const SCOPE: &str = "mcp-stack-host";

/// Opens the span of a question to `model` of `provider` (none when spans are not made).
pub(crate) fn question(provider: &str, model: &str) -> Option<Question> {
    #[cfg(feature = "otel")]
    if mcp::telemetry::is_tracing() {
        let tracer = global::tracer(SCOPE);
        let span = tracer
            .span_builder("invoke_agent mcp chat")
            .with_kind(SpanKind::Internal)
            .with_attributes([
                KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                KeyValue::new("gen_ai.agent.name", "mcp chat"),
                KeyValue::new("gen_ai.provider.name", provider.to_owned()),
                KeyValue::new("gen_ai.request.model", model.to_owned()),
            ])
            .start(&tracer);
        return Some(Question { context: Context::current_with_span(span) });
    }
    #[cfg(not(feature = "otel"))]
    let _ = (provider, model);
    None
}

/// Runs `work` inside the question's span, so that what it starts are its children.
pub(crate) async fn within<T>(question: Option<&Question>, work: impl Future<Output = T>) -> T {
    #[cfg(feature = "otel")]
    if let Some(question) = question {
        return work.with_context(question.context.clone()).await;
    }
    #[cfg(not(feature = "otel"))]
    let _ = question;
    work.await
}

/// Closes the question's span; `failure` names what ended it otherwise than with an answer.
pub(crate) fn end_question(question: Option<Question>, failure: Option<&str>) {
    #[cfg(feature = "otel")]
    if let Some(question) = question {
        let span = question.context.span();
        if let Some(kind) = failure {
            span.set_attribute(KeyValue::new("error.type", kind.to_owned()));
            span.set_status(Status::error(kind.to_owned()));
        }
        span.end();
    }
    #[cfg(not(feature = "otel"))]
    let _ = (question, failure);
}

/// Opens the span of one model request (a child of the current context: the question's).
pub(crate) fn model_request(provider: &str, request: &Request) -> Option<ModelRequest> {
    #[cfg(feature = "otel")]
    if mcp::telemetry::is_tracing() {
        let tracer = global::tracer(SCOPE);
        let span = tracer
            .span_builder(format!("chat {}", request.model))
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.provider.name", provider.to_owned()),
                KeyValue::new("gen_ai.request.model", request.model.clone()),
                KeyValue::new("gen_ai.request.max_tokens", i64::from(request.max_tokens)),
            ])
            .start(&tracer);
        return Some(ModelRequest { span });
    }
    #[cfg(not(feature = "otel"))]
    let _ = (provider, request);
    None
}

/// Closes a model request's span with what came of it.
pub(crate) fn end_model_request(request: Option<ModelRequest>, outcome: &Result<Turn, ProviderError>) {
    #[cfg(feature = "otel")]
    if let Some(ModelRequest { mut span }) = request {
        match outcome {
            Ok(turn) => {
                let reason = finish_reason(&turn.stop);
                span.set_attributes([
                    KeyValue::new("gen_ai.usage.input_tokens", turn.usage.input as i64),
                    KeyValue::new("gen_ai.usage.output_tokens", turn.usage.output as i64),
                    KeyValue::new(
                        "gen_ai.response.finish_reasons",
                        Value::Array(Array::String(vec![StringValue::from(reason)])),
                    ),
                ]);
            }
            Err(e) => {
                let kind = error_type(e);
                span.set_attribute(KeyValue::new("error.type", kind));
                span.set_status(Status::error(kind));
            }
        }
        span.end();
    }
    #[cfg(not(feature = "otel"))]
    let _ = (request, outcome);
}

/// The conventions' finish reasons.
#[cfg(feature = "otel")]
fn finish_reason(stop: &Stop) -> String {
    match stop {
        Stop::EndTurn => "stop".into(),
        Stop::ToolUse => "tool_call".into(),
        Stop::MaxTokens => "length".into(),
        Stop::Other(other) => other.clone(),
    }
}

/// A provider failure's `error.type`: its kind, never its message.
pub(crate) fn error_type(error: &ProviderError) -> &'static str {
    match error {
        ProviderError::Unauthorized(_) => "unauthorized",
        ProviderError::RateLimited(_) => "rate_limited",
        ProviderError::Overloaded(_) => "overloaded",
        ProviderError::ContextTooLong(_) => "context_too_long",
        ProviderError::BadRequest(_) => "bad_request",
        ProviderError::Transport(_) => "transport",
    }
}
