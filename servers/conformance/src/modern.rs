//! What the 2026-07-28 scenarios of the suite call: multi round-trip (`input_required`) tools
//! and prompt, capability and logging probes, run-time list changes, `x-mcp-header` arguments.

use mcp::proxy::ProxyContext as _;
use mcp::server::{NoArgs, RequestContext, Router, ToolDef, ToolError};
use mcp::types::logging::LoggingLevel;
use mcp::types::prompts::{Prompt, PromptMessage};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

fn ask_name(message: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    })
}

fn sampling(text: &str, max_tokens: u32) -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": max_tokens})
}

fn text_of(answer: &Value) -> String {
    match &answer["content"] {
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        block => block["text"].as_str().unwrap_or("").to_owned(),
    }
}

async fn elicitation(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let answer = cx.ask_keyed("user_name", "elicitation/create", ask_name("What is your name?")).await?;
    Ok(format!("Hello, {}!", answer["content"]["name"].as_str().unwrap_or("stranger")))
}

async fn sampling_tool(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let answer = cx
        .ask_keyed("capital_question", "sampling/createMessage", sampling("What is the capital of France?", 100))
        .await?;
    Ok(format!("LLM response: {}", text_of(&answer)))
}

async fn list_roots(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let answer = cx.ask_keyed("client_roots", "roots/list", json!({})).await?;
    let uris: Vec<&str> = answer["roots"].as_array().into_iter().flatten().filter_map(|r| r["uri"].as_str()).collect();
    Ok(format!("Client roots: {}", uris.join(", ")))
}

async fn confirm_with_state(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let schema = json!({
        "message": "Please confirm",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    });
    let answer = cx.ask_keyed("confirm", "elicitation/create", schema).await?;
    let state = if cx.has_request_state() { "state-ok" } else { "state-missing" };
    Ok(format!("Confirmed: {} ({state})", answer["action"].as_str().unwrap_or("?")))
}

async fn multiple_inputs(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let answers = cx
        .ask_all(vec![
            ("user_name".into(), "elicitation/create".into(), ask_name("What is your name?")),
            ("greeting".into(), "sampling/createMessage".into(), sampling("Generate a greeting", 50)),
            ("client_roots".into(), "roots/list".into(), json!({})),
        ])
        .await?;
    Ok(format!(
        "Name: {}, greeting: {}, roots: {}",
        answers[0]["content"]["name"].as_str().unwrap_or("?"),
        text_of(&answers[1]),
        answers[2]["roots"].as_array().map_or(0, Vec::len)
    ))
}

async fn multi_round(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let name = cx.ask_keyed("step1", "elicitation/create", ask_name("Step 1: What is your name?")).await?;
    let color_schema = json!({
        "message": "Step 2: What is your favorite color?",
        "requestedSchema": {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
    });
    let color = cx.ask_keyed("step2", "elicitation/create", color_schema).await?;
    Ok(format!(
        "{} likes {}",
        name["content"]["name"].as_str().unwrap_or("?"),
        color["content"]["color"].as_str().unwrap_or("?")
    ))
}

async fn capabilities(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let caps = cx.client_capabilities().clone();
    let mut questions = Vec::new();
    if caps.elicitation_form() {
        questions.push(("user_name".to_owned(), "elicitation/create".to_owned(), ask_name("What is your name?")));
    }
    if caps.sampling.is_some() {
        questions.push((
            "greeting".to_owned(),
            "sampling/createMessage".to_owned(),
            sampling("Generate a greeting", 50),
        ));
    }
    if caps.roots.is_some() {
        questions.push(("client_roots".to_owned(), "roots/list".to_owned(), json!({})));
    }
    if questions.is_empty() {
        return Ok("The client declared no capability to ask anything of.".into());
    }
    let answers = cx.ask_all(questions).await?;
    Ok(format!("Received {} answers", answers.len()))
}

async fn missing_capability(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let answer = cx.ask_keyed("needs_sampling", "sampling/createMessage", sampling("Say hello", 10)).await?;
    Ok(format!("Answered: {answer}"))
}

async fn streaming_elicitation(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    cx.progress(0.0, Some(1.0), Some("about to ask")).await;
    let answer = cx.ask_keyed("stream_question", "elicitation/create", ask_name("What is your name?")).await?;
    Ok(format!("Hello, {}!", answer["content"]["name"].as_str().unwrap_or("stranger")))
}

async fn logging_tool(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    cx.log(LoggingLevel::Info, Some("conformance"), "a log message").await;
    cx.log(LoggingLevel::Error, Some("conformance"), "an error message").await;
    Ok("Logged (only if the request asked for a log level)".into())
}

async fn dynamic(_: NoArgs, _cx: RequestContext) -> Result<String, ToolError> {
    Ok("I come and go".into())
}

async fn trigger_tool_change(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let lists = cx.lists().ok_or_else(|| ToolError::new("router not ready"))?;
    if !lists.remove_tool("test_dynamic_tool") {
        lists.add_tool(ToolDef::new("test_dynamic_tool").description("Added at run time."), dynamic);
    }
    Ok("Tool list changed".into())
}

async fn trigger_prompt_change(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let lists = cx.lists().ok_or_else(|| ToolError::new("router not ready"))?;
    if !lists.remove_prompt("test_dynamic_prompt") {
        let prompt = Prompt {
            name: "test_dynamic_prompt".into(),
            description: Some("Added at run time.".into()),
            ..Default::default()
        };
        lists.add_prompt(
            prompt,
            |_: NoArgs, _cx: RequestContext| async move { Ok::<_, ToolError>("dynamic".to_owned()) },
        );
    }
    Ok("Prompt list changed".into())
}

/// Arguments of `test_custom_headers`, mirrored into `Mcp-Param-*` headers.
#[derive(Deserialize, JsonSchema)]
struct CustomHeaders {
    region: Option<String>,
    priority: Option<i64>,
    verbose: Option<bool>,
    query: Option<String>,
}

async fn custom_headers(args: CustomHeaders, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(format!(
        "region={:?} priority={:?} verbose={:?} query={:?}",
        args.region, args.priority, args.verbose, args.query
    ))
}

fn custom_headers_schema() -> serde_json::Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": ["boolean", "null"], "x-mcp-header": "Verbose"},
            "query": {"type": "string"}
        },
        "required": ["region"]
    });
    schema.as_object().cloned().unwrap_or_default()
}

#[derive(Deserialize, JsonSchema)]
struct NoPromptArgs {}

/// Adds the 2026-07-28 scenario tools and prompt.
pub fn add(router: Router) -> Router {
    let tool = |name: &str, description: &str| ToolDef::new(name).description(description);
    router
        .tool_def(tool("test_input_required_result_elicitation", "Asks the user's name (input_required)."), elicitation)
        .tool_def(tool("test_input_required_result_sampling", "Asks the model a question (input_required)."), sampling_tool)
        .tool_def(tool("test_input_required_result_list_roots", "Asks for the client's roots (input_required)."), list_roots)
        .tool_def(tool("test_input_required_result_request_state", "Checks requestState round-trips."), confirm_with_state)
        .tool_def(tool("test_input_required_result_tampered_state", "Rejects a tampered requestState."), confirm_with_state)
        .tool_def(tool("test_input_required_result_multiple_inputs", "Asks three things at once."), multiple_inputs)
        .tool_def(tool("test_input_required_result_multi_round", "Asks in two rounds."), multi_round)
        .tool_def(tool("test_input_required_result_capabilities", "Asks only what the client can answer."), capabilities)
        .tool_def(tool("test_missing_capability", "Needs the sampling capability."), missing_capability)
        .tool_def(tool("test_streaming_elicitation", "Streams progress, then asks for input."), streaming_elicitation)
        .tool_def(tool("test_logging_tool", "Logs, when the request sets a log level."), logging_tool)
        .tool_def(tool("test_trigger_tool_change", "Adds or removes a tool."), trigger_tool_change)
        .tool_def(tool("test_trigger_prompt_change", "Adds or removes a prompt."), trigger_prompt_change)
        .tool_def(tool("test_custom_headers", "Arguments mirrored into Mcp-Param headers.").input_schema(custom_headers_schema()), custom_headers)
        .prompt_def(
            Prompt {
                name: "test_input_required_result_prompt".into(),
                description: Some("A prompt that asks for context first (input_required).".into()),
                ..Default::default()
            },
            |_: NoPromptArgs, cx: RequestContext| async move {
                let schema = json!({
                    "message": "What context should the prompt use?",
                    "requestedSchema": {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
                });
                let answer = cx.ask_keyed("user_context", "elicitation/create", schema).await?;
                let context = answer["content"]["context"].as_str().unwrap_or("none").to_owned();
                Ok::<_, ToolError>(PromptMessage::user(format!("Use this context: {context}")))
            },
        )
}
