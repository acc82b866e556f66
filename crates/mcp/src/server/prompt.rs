//! Prompts: typed arguments (all strings on the wire) and what a prompt handler may return.
//!
//! The prompt's `arguments` list is derived from the argument type's schema: each property is an
//! argument, required when the schema says so, described by its doc comment.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use mcp_types::prompts::{GetPromptResult, Prompt, PromptArgument, PromptMessage};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::context::RequestContext;
use super::handler_state::State;
use super::schema::schema_for;
use super::tool::BoxFuture;
use crate::error::ToolError;

/// What a prompt handler may return.
pub trait IntoPromptResult {
    /// The `prompts/get` result.
    fn into_prompt_result(self) -> GetPromptResult;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> GetPromptResult {
        self
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> GetPromptResult {
        GetPromptResult { messages: self, ..Default::default() }
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> GetPromptResult {
        vec![self].into_prompt_result()
    }
}

impl IntoPromptResult for String {
    fn into_prompt_result(self) -> GetPromptResult {
        PromptMessage::user(self).into_prompt_result()
    }
}

/// An async function usable as a prompt handler: `Fn(Args, RequestContext)`, or
/// `Fn(State<S>, Args, RequestContext)` with the router's state first (see [`State`]).
pub trait PromptHandler<Args, Out, St = ()>: Clone + Send + Sync + 'static {
    /// Renders the prompt.
    fn call(&self, args: Args, cx: RequestContext) -> BoxFuture<Result<Out, ToolError>>;
}

impl<F, Fut, Args, Out> PromptHandler<Args, Out> for F
where
    F: Fn(Args, RequestContext) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, ToolError>> + Send + 'static,
{
    fn call(&self, args: Args, cx: RequestContext) -> BoxFuture<Result<Out, ToolError>> {
        Box::pin((self)(args, cx))
    }
}

impl<F, Fut, S, Args, Out> PromptHandler<Args, Out, State<S>> for F
where
    F: Fn(State<S>, Args, RequestContext) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, ToolError>> + Send + 'static,
    S: Clone + Send + Sync + 'static,
{
    fn call(&self, args: Args, cx: RequestContext) -> BoxFuture<Result<Out, ToolError>> {
        super::handler_state::with_state(cx, |state, cx| (self)(state, args, cx))
    }
}

pub(crate) type ErasedPromptHandler = Arc<
    dyn Fn(BTreeMap<String, String>, RequestContext) -> BoxFuture<Result<GetPromptResult, ToolError>> + Send + Sync,
>;

/// A prompt as registered.
pub(crate) struct PromptEntry {
    pub def: Prompt,
    pub handler: ErasedPromptHandler,
}

/// Builds the registry entry; arguments are filled from `Args`'s schema when not given.
pub(crate) fn entry<H, Args, Out, St>(mut def: Prompt, handler: H) -> PromptEntry
where
    H: PromptHandler<Args, Out, St>,
    St: 'static,
    Args: DeserializeOwned + JsonSchema + Send + 'static,
    Out: IntoPromptResult + Send + 'static,
{
    if def.arguments.is_none() {
        let arguments = arguments_from_schema(&schema_for::<Args>());
        def.arguments = (!arguments.is_empty()).then_some(arguments);
    }
    let handler: ErasedPromptHandler = Arc::new(move |args: BTreeMap<String, String>, cx: RequestContext| {
        let handler = handler.clone();
        Box::pin(async move {
            let args: Args = super::params::from_strings(args)
                .map_err(|e| ToolError::invalid_params(format!("invalid prompt arguments: {e}")))?;
            handler.call(args, cx).await.map(IntoPromptResult::into_prompt_result)
        }) as BoxFuture<_>
    });
    PromptEntry { def, handler }
}

fn arguments_from_schema(schema: &serde_json::Map<String, Value>) -> Vec<PromptArgument> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, prop)| PromptArgument {
            name: name.clone(),
            title: prop.get("title").and_then(Value::as_str).map(Into::into),
            description: prop.get("description").and_then(Value::as_str).map(Into::into),
            required: Some(required.contains(&name.as_str())),
        })
        .collect()
}
