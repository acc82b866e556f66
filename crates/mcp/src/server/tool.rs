//! Tools: typed handlers, their derived schemas, and what they may return.
//!
//! A handler is a plain async function `(Args, RequestContext) -> Result<Out, ToolError>`.
//! `Args` derives `Deserialize + JsonSchema`: the schema becomes the tool's `inputSchema` and is
//! enforced before the handler runs. `Out` is text, a [`CallToolResult`], content blocks, or
//! [`Json<T>`] for structured output (which also fills `outputSchema`).

use std::future::Future;
use std::sync::{Arc, OnceLock};

use mcp_types::content::ContentBlock;
use mcp_types::tools::{CallToolResult, Tool, ToolAnnotations};
use mcp_types::JsonObject;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::context::RequestContext;
use super::handler_state::State;
use super::schema::{input_schema_for, schema_for, CompiledSchema};
use crate::error::ToolError;
use crate::server::tasks::{JobTool, TaskSupport};

pub use crate::util::BoxFuture;

/// A tool's checked arguments on their way to its handler: the JSON text itself when a flat schema
/// checked it in place, else the tree the general validator checked.
pub(crate) enum ArgsIn<'a> {
    Text(&'a str),
    Value(Value),
}

/// A handler with its argument type erased. The arguments are deserialized before the returned
/// future starts, so the future borrows nothing (the request's buffer can go).
pub(crate) type ErasedToolHandler =
    Arc<dyn for<'a> Fn(ArgsIn<'a>, RequestContext) -> BoxFuture<Result<CallToolResult, ToolError>> + Send + Sync>;

/// A handler that answers with the result's JSON itself: a gateway passing on whatever its
/// upstream answered (a result, a task). It is given the arguments' JSON text.
pub type RawToolHandler = Arc<dyn Fn(&str, RequestContext) -> BoxFuture<Result<Value, ToolError>> + Send + Sync>;

/// A tool as registered: its name, its definition and compiled input schema (both derived on
/// first use, so a server with many tools still starts in a blink) and its handler.
pub(crate) struct ToolEntry {
    pub name: String,
    def: OnceLock<Tool>,
    make_def: Box<dyn Fn() -> Tool + Send + Sync>,
    schema: OnceLock<Result<CompiledSchema, String>>,
    pub handler: ErasedToolHandler,
    /// It may run long (see [`crate::server::tasks`]).
    pub support: Option<TaskSupport>,
    /// It is a generated job tool that follows another tool's jobs.
    pub job: Option<JobTool>,
    /// Its arguments are checked against its input schema here (not so for a tool forwarded to
    /// a server that checks them itself).
    checked: bool,
    /// It answers with raw results (see [`RawToolHandler`]).
    pub raw: Option<RawToolHandler>,
}

impl ToolEntry {
    /// The full definition, schemas included.
    pub fn def(&self) -> &Tool {
        self.def.get_or_init(|| (self.make_def)())
    }

    /// Checks the JSON text of the arguments against the input schema (a tree of them is built
    /// only when the schema is not flat, within `budget` bytes); `Err` lists what to fix.
    pub fn prepare<'a>(&self, args: &'a str, budget: usize) -> Result<ArgsIn<'a>, Vec<String>> {
        if !self.checked {
            return Ok(ArgsIn::Text(args));
        }
        let compiled = self.schema.get_or_init(|| CompiledSchema::compile(&self.def().input_schema));
        match compiled {
            Ok(schema) => Ok(match schema.check_text(args, budget)? {
                None => ArgsIn::Text(args),
                Some(tree) => ArgsIn::Value(tree),
            }),
            Err(e) => {
                Err(vec![format!("the tool's own input schema is invalid ({e}); report this to the server's author")])
            }
        }
    }
}

/// Arguments of a tool that takes none: accepts only `{}`.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// Structured tool output: serialized into `structuredContent` (with the JSON as text too, for
/// clients that only read text), and `T`'s schema becomes the tool's `outputSchema`.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

/// What a tool handler may return.
pub trait IntoToolOutput {
    /// The result sent to the client.
    fn into_result(self) -> CallToolResult;
    /// The `outputSchema` this output type implies, if any.
    fn output_schema() -> Option<JsonObject> {
        None
    }
}

impl IntoToolOutput for CallToolResult {
    fn into_result(self) -> CallToolResult {
        self
    }
}

impl IntoToolOutput for String {
    fn into_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoToolOutput for &'static str {
    fn into_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoToolOutput for ContentBlock {
    fn into_result(self) -> CallToolResult {
        CallToolResult { content: vec![self], ..Default::default() }
    }
}

impl IntoToolOutput for Vec<ContentBlock> {
    fn into_result(self) -> CallToolResult {
        CallToolResult { content: self, ..Default::default() }
    }
}

impl<T: Serialize + JsonSchema> IntoToolOutput for Json<T> {
    fn into_result(self) -> CallToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => CallToolResult {
                content: vec![ContentBlock::text(value.to_string())],
                structured_content: Some(value),
                ..Default::default()
            },
            Err(e) => CallToolResult::error(format!("the tool's output could not be serialized: {e}")),
        }
    }
    fn output_schema() -> Option<JsonObject> {
        Some(schema_for::<T>())
    }
}

/// Structured output with a text rendering of your own (markdown for the model, say).
#[derive(Debug, Clone)]
pub struct Structured<T> {
    /// The text handed to the model.
    pub text: String,
    /// The structured value, matching the output schema.
    pub value: T,
}

impl<T: Serialize + JsonSchema> IntoToolOutput for Structured<T> {
    fn into_result(self) -> CallToolResult {
        match serde_json::to_value(&self.value) {
            Ok(value) => CallToolResult {
                content: vec![ContentBlock::text(self.text)],
                structured_content: Some(value),
                ..Default::default()
            },
            Err(e) => CallToolResult::error(format!("the tool's output could not be serialized: {e}")),
        }
    }
    fn output_schema() -> Option<JsonObject> {
        Some(schema_for::<T>())
    }
}

/// Structured output with content blocks of your own: a text rendering followed by one
/// `resource_link` per record, say. `T`'s schema becomes the tool's `outputSchema`.
#[derive(Debug, Clone)]
pub struct Rich<T> {
    /// The blocks handed to the model, in order.
    pub content: Vec<ContentBlock>,
    /// The structured value, matching the output schema.
    pub value: T,
}

impl<T: Serialize + JsonSchema> IntoToolOutput for Rich<T> {
    fn into_result(self) -> CallToolResult {
        match serde_json::to_value(&self.value) {
            Ok(value) => {
                CallToolResult { content: self.content, structured_content: Some(value), ..Default::default() }
            }
            Err(e) => CallToolResult::error(format!("the tool's output could not be serialized: {e}")),
        }
    }
    fn output_schema() -> Option<JsonObject> {
        Some(schema_for::<T>())
    }
}

/// An async function usable as a tool handler. Implemented for every
/// `Fn(Args, RequestContext) -> impl Future<Output = Result<Out, ToolError>>`, and for every
/// `Fn(State<S>, Args, RequestContext) -> ...` that takes the router's state first (see
/// [`State`]); `St` tells the two apart (`()` or `State<S>`), and is inferred.
pub trait ToolHandler<Args, Out, St = ()>: Clone + Send + Sync + 'static {
    /// Runs the tool.
    fn call(&self, args: Args, cx: RequestContext) -> BoxFuture<Result<Out, ToolError>>;
}

impl<F, Fut, Args, Out> ToolHandler<Args, Out> for F
where
    F: Fn(Args, RequestContext) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, ToolError>> + Send + 'static,
{
    fn call(&self, args: Args, cx: RequestContext) -> BoxFuture<Result<Out, ToolError>> {
        Box::pin((self)(args, cx))
    }
}

impl<F, Fut, S, Args, Out> ToolHandler<Args, Out, State<S>> for F
where
    F: Fn(State<S>, Args, RequestContext) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, ToolError>> + Send + 'static,
    S: Clone + Send + Sync + 'static,
{
    fn call(&self, args: Args, cx: RequestContext) -> BoxFuture<Result<Out, ToolError>> {
        super::handler_state::with_state(cx, |state, cx| (self)(state, args, cx))
    }
}

/// The definition of a tool, built before registering it.
#[derive(Debug, Clone)]
pub struct ToolDef {
    pub(crate) tool: Tool,
    pub(crate) support: Option<TaskSupport>,
    pub(crate) scopes: Vec<String>,
    pub(crate) checked: bool,
}

impl ToolDef {
    /// A tool named `name` (1 to 128 of `[A-Za-z0-9_.-]`).
    pub fn new(name: impl Into<String>) -> Self {
        ToolDef {
            tool: Tool {
                name: name.into(),
                title: None,
                description: None,
                icons: None,
                input_schema: JsonObject::new(),
                output_schema: None,
                annotations: None,
                execution: None,
                meta: None,
            },
            support: None,
            scopes: Vec::new(),
            checked: true,
        }
    }

    /// A tool defined elsewhere, as listed by the server it comes from (a gateway's): every
    /// field kept, schemas included.
    pub fn from_tool(tool: Tool) -> Self {
        ToolDef { tool, support: None, scopes: Vec::new(), checked: true }
    }

    /// Its arguments reach the handler as sent, unchecked: for a tool forwarded to a server that
    /// checks them against the same schema (its schema is only advertised here).
    pub fn forwarded(mut self) -> Self {
        self.checked = false;
        self
    }

    /// The OAuth scopes a caller's token needs to call the tool (besides the server's minimum).
    /// Checked before the handler runs; over HTTP a token without them gets `403` and a challenge
    /// naming them.
    pub fn scopes(mut self, scopes: &[&str]) -> Self {
        self.scopes = scopes.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Declares that the tool may run long: it runs as a task, or a job, whenever it takes longer
    /// than the grace period (see [`crate::server::tasks`]); `<name>_status`, `<name>_cancel` and
    /// `<name>_list` are generated next to it for clients that follow no task form.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.support = Some(support);
        self.tool.execution = Some(serde_json::json!({"taskSupport": support.as_str()}));
        self
    }
    /// What the tool does and when to call it: the text the model reads.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.tool.description = Some(text.into());
        self
    }
    /// A display name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.tool.title = Some(title.into());
        self
    }
    /// Behaviour hints.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.tool.annotations = Some(annotations);
        self
    }
    /// Marks the tool read-only, non-destructive and idempotent (a lookup).
    pub fn read_only(self) -> Self {
        let title = self.tool.annotations.as_ref().and_then(|a| a.title.clone());
        self.annotations(ToolAnnotations {
            title,
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(false),
        })
    }
    /// Icons.
    pub fn icons(mut self, icons: Vec<mcp_types::lifecycle::Icon>) -> Self {
        self.tool.icons = Some(icons);
        self
    }
    /// Replaces the derived input schema (it must still describe what `Args` accepts).
    pub fn input_schema(mut self, schema: JsonObject) -> Self {
        self.tool.input_schema = schema;
        self
    }
    /// Sets `_meta`.
    pub fn meta(mut self, meta: JsonObject) -> Self {
        self.tool.meta = Some(meta);
        self
    }
}

impl From<&str> for ToolDef {
    fn from(name: &str) -> Self {
        ToolDef::new(name)
    }
}

/// A tool result as a JSON value, its text moved rather than copied (serializing a result holding
/// an 8 MiB text would hold it twice).
pub(crate) fn result_value(result: CallToolResult) -> Result<Value, serde_json::Error> {
    let CallToolResult { result_type, content, structured_content, is_error, meta } = result;
    let mut object = JsonObject::new();
    if let Some(result_type) = result_type {
        object.insert("resultType".into(), serde_json::to_value(result_type)?);
    }
    let content = content.into_iter().map(block_value).collect::<Result<Vec<Value>, _>>()?;
    object.insert("content".into(), Value::Array(content));
    if let Some(structured) = structured_content {
        object.insert("structuredContent".into(), structured);
    }
    if let Some(is_error) = is_error {
        object.insert("isError".into(), Value::Bool(is_error));
    }
    if let Some(meta) = meta {
        object.insert("_meta".into(), serde_json::to_value(meta)?);
    }
    Ok(Value::Object(object))
}

fn block_value(block: ContentBlock) -> Result<Value, serde_json::Error> {
    match block {
        ContentBlock::Text(text) => {
            let mcp_types::content::TextContent { text, annotations, meta } = text;
            let mut object = JsonObject::new();
            object.insert("type".into(), "text".into());
            object.insert("text".into(), Value::String(text));
            if let Some(annotations) = annotations {
                object.insert("annotations".into(), serde_json::to_value(annotations)?);
            }
            if let Some(meta) = meta {
                object.insert("_meta".into(), serde_json::to_value(meta)?);
            }
            Ok(Value::Object(object))
        }
        other => serde_json::to_value(other),
    }
}

/// Builds the registry entry of a typed handler. Panics on an invalid name or schema: both are
/// programming errors, found the first time the server starts.
pub(crate) fn entry<H, Args, Out, St>(def: ToolDef, handler: H) -> ToolEntry
where
    H: ToolHandler<Args, Out, St>,
    St: 'static,
    Args: DeserializeOwned + JsonSchema + Send + 'static,
    Out: IntoToolOutput + Send + 'static,
{
    let support = def.support;
    let checked = def.checked;
    let tool = def.tool;
    check_name(&tool.name);
    let tool_name = tool.name.clone();
    let make_def = Box::new(move || {
        let mut tool = tool.clone();
        if tool.input_schema.is_empty() {
            tool.input_schema = input_schema_for::<Args>();
        }
        if tool.output_schema.is_none() {
            tool.output_schema = Out::output_schema();
        }
        tool
    });
    let entry_def = OnceLock::new();
    let schema = OnceLock::new();
    if cfg!(debug_assertions) && checked {
        // Debug builds find a bad schema when the router is built, not at the first call.
        let tool = make_def();
        let compiled =
            CompiledSchema::compile(&tool.input_schema).unwrap_or_else(|e| panic!("tool {:?}: {e}", tool.name));
        let _ = schema.set(Ok(compiled));
        let _ = entry_def.set(tool);
    }
    let name: Arc<str> = tool_name.as_str().into();
    let handler: ErasedToolHandler = Arc::new(move |args: ArgsIn<'_>, cx: RequestContext| {
        let parsed: Result<Args, serde_json::Error> = match args {
            ArgsIn::Text(text) => serde_json::from_str(text),
            ArgsIn::Value(tree) => serde_json::from_value(tree),
        };
        let handler = handler.clone();
        let name = name.clone();
        Box::pin(async move {
            let args = parsed.map_err(|e| ToolError::new(format!("Invalid arguments for tool {name}: {e}")))?;
            handler.call(args, cx).await.map(IntoToolOutput::into_result)
        }) as BoxFuture<_>
    });
    ToolEntry { name: tool_name, def: entry_def, make_def, schema, handler, support, job: None, checked, raw: None }
}

/// The registry entry of a raw tool: its definition as given (an object schema when it has
/// none), its arguments unchecked.
pub(crate) fn raw_entry(def: ToolDef, handler: RawToolHandler) -> ToolEntry {
    let mut tool = def.tool;
    check_name(&tool.name);
    if tool.input_schema.is_empty() {
        tool.input_schema.insert("type".into(), "object".into());
    }
    let name = tool.name.clone();
    let unused: ErasedToolHandler = Arc::new(|_: ArgsIn<'_>, _: RequestContext| {
        Box::pin(async { Err(ToolError::new("a raw tool is called through its raw handler")) }) as BoxFuture<_>
    });
    let entry_def = OnceLock::new();
    let _ = entry_def.set(tool.clone());
    ToolEntry {
        name,
        def: entry_def,
        make_def: Box::new(move || tool.clone()),
        schema: OnceLock::new(),
        handler: unused,
        support: None,
        job: None,
        checked: false,
        raw: Some(handler),
    }
}

fn check_name(name: &str) {
    let valid = (1..=128).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    assert!(valid, "tool name {name:?} must be 1 to 128 characters of A-Z, a-z, 0-9, _, - and .");
}

#[cfg(test)]
mod tests {
    use mcp_types::content::{Annotations, TextContent};

    use super::*;

    #[test]
    fn a_result_moved_into_a_value_is_what_serde_makes_of_it() {
        let mut meta = JsonObject::new();
        meta.insert("k".into(), "v".into());
        let text = TextContent {
            text: "hé \"quoted\"\n".into(),
            annotations: Some(Annotations { priority: Some(0.5), ..Default::default() }),
            meta: Some(meta.clone()),
        };
        let results = [
            CallToolResult::text("plain"),
            CallToolResult::error("failed"),
            CallToolResult {
                content: vec![ContentBlock::Text(text), ContentBlock::text("two")],
                structured_content: Some(serde_json::json!({"a": [1, 2]})),
                meta: Some(meta),
                ..Default::default()
            },
            CallToolResult::default(),
        ];
        for result in results {
            assert_eq!(result_value(result.clone()).unwrap(), serde_json::to_value(&result).unwrap());
        }
    }
}
