//! `mcp-server-conformance`: the tools, resources and prompts that the official MCP conformance
//! suite (`@modelcontextprotocol/conformance`) calls by name, built on the same router as every
//! other server here. `--http 127.0.0.1:PORT` to run the suite against it.

mod modern;
mod tasks;

use std::time::Duration;

use mcp::server::{Blob, NoArgs, RequestContext, ResourceRequest, Router, ToolDef, ToolError};
use mcp::types::content::{ContentBlock, EmbeddedResource, ImageContent, ResourceContents};
use mcp::types::content::{Role, SamplingContent, TextContent};
use mcp::types::elicitation::ElicitParams;
use mcp::types::logging::LoggingLevel;
use mcp::types::prompts::{Prompt, PromptMessage};
use mcp::types::resources::{Resource, ResourceTemplate};
use mcp::types::sampling::{CreateMessageParams, OneOrMany, SamplingMessage};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

/// A 1x1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny WAV file (44-byte header, 2 samples of silence).
const WAV: &str = "UklGRigAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQQAAAAAAAAA";

fn image(data: &str, mime: &str) -> ImageContent {
    ImageContent { data: data.into(), mime_type: mime.into(), annotations: None, meta: None }
}

fn embedded(uri: &str, mime: &str, text: &str) -> ContentBlock {
    ContentBlock::Resource(EmbeddedResource {
        resource: ResourceContents::text(uri, Some(mime), text),
        annotations: None,
        meta: None,
    })
}

async fn simple_text(_: NoArgs, _cx: RequestContext) -> Result<String, ToolError> {
    Ok("This is a simple text response for testing.".into())
}

async fn image_content(_: NoArgs, _cx: RequestContext) -> Result<ContentBlock, ToolError> {
    Ok(ContentBlock::Image(image(PNG, "image/png")))
}

async fn audio_content(_: NoArgs, _cx: RequestContext) -> Result<ContentBlock, ToolError> {
    Ok(ContentBlock::Audio(image(WAV, "audio/wav")))
}

async fn embedded_resource(_: NoArgs, _cx: RequestContext) -> Result<ContentBlock, ToolError> {
    Ok(embedded("test://embedded-resource", "text/plain", "This is an embedded resource content."))
}

async fn multiple_content_types(_: NoArgs, _cx: RequestContext) -> Result<Vec<ContentBlock>, ToolError> {
    Ok(vec![
        ContentBlock::text("Multiple content types test:"),
        ContentBlock::Image(image(PNG, "image/png")),
        embedded("test://mixed-content-resource", "application/json", r#"{"test":"data","value":123}"#),
    ])
}

async fn with_logging(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    for (i, message) in
        ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate()
    {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        cx.log(LoggingLevel::Info, Some("conformance"), message).await;
    }
    Ok("Tool with logging executed successfully".into())
}

async fn with_progress(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        cx.progress(p, Some(100.0), None).await;
    }
    Ok("Tool with progress executed successfully".into())
}

async fn error_handling(_: NoArgs, _cx: RequestContext) -> Result<String, ToolError> {
    Err(ToolError::new("This tool intentionally returns an error for testing"))
}

#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the LLM.
    prompt: String,
}

async fn sampling(args: SamplingArgs, cx: RequestContext) -> Result<String, ToolError> {
    let params = CreateMessageParams {
        messages: vec![SamplingMessage {
            role: Role::User,
            content: OneOrMany::One(SamplingContent::Text(TextContent::new(args.prompt))),
            meta: None,
        }],
        model_preferences: None,
        system_prompt: None,
        include_context: None,
        temperature: None,
        max_tokens: 100,
        stop_sequences: None,
        metadata: None,
        tools: None,
        tool_choice: None,
        task: None,
        meta: None,
    };
    let result = cx.sample(params).await?;
    let text: Vec<&str> = result
        .content
        .as_slice()
        .iter()
        .filter_map(|c| match c {
            SamplingContent::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    Ok(format!("LLM response: {}", text.join("")))
}

#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

async fn elicit_with(
    cx: &RequestContext,
    message: &str,
    schema: Value,
) -> Result<mcp::types::elicitation::ElicitResult, ToolError> {
    let schema = serde_json::from_value(schema).map_err(|e| ToolError::new(e.to_string()))?;
    cx.elicit_raw(ElicitParams::form(message, schema)).await
}

async fn elicitation(args: ElicitationArgs, cx: RequestContext) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        },
        "required": ["username", "email"]
    });
    let r = elicit_with(&cx, &args.message, schema).await?;
    Ok(format!("User response: <action: {}, content: {}>", action(&r), json!(r.content)))
}

fn action(r: &mcp::types::elicitation::ElicitResult) -> String {
    serde_json::to_value(r.action).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

async fn elicitation_defaults(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": true}
        }
    });
    let r = elicit_with(&cx, "Please review and update the form fields with defaults", schema).await?;
    Ok(format!("Elicitation completed: action={}, content={}", action(&r), json!(r.content)))
}

async fn elicitation_enums(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}
            ]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}
            ]}}
        }
    });
    let r = elicit_with(&cx, "Please select options from the enum fields", schema).await?;
    Ok(format!("Elicitation completed: action={}, content={}", action(&r), json!(r.content)))
}

async fn reconnection(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(100)).await;
    cx.close_stream().await; // the client reconnects with Last-Event-ID and gets the rest
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok("Reconnection test completed successfully".into())
}

async fn json_schema_tool(args: Value, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(format!("Received: {args}"))
}

#[derive(Deserialize, JsonSchema)]
struct PromptArgs {
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
}

#[derive(Deserialize, JsonSchema)]
struct EmbeddedPromptArgs {
    /// URI of the resource to embed.
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

#[derive(Deserialize)]
struct TemplateParams {
    id: String,
}

fn resource(uri: &str, name: &str, description: &str, mime: &str) -> Resource {
    Resource {
        uri: uri.into(),
        name: name.into(),
        description: Some(description.into()),
        mime_type: Some(mime.into()),
        ..Default::default()
    }
}

fn prompt(name: &str, description: &str) -> Prompt {
    Prompt { name: name.into(), description: Some(description.into()), ..Default::default() }
}

fn tool(name: &str, description: &str) -> ToolDef {
    ToolDef::new(name).description(description)
}

fn json_schema_2020_12() -> serde_json::Map<String, Value> {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {
            "$anchor": "address",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
        }},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "kind": {"enum": ["person", "company"]},
            "registration": {"type": "string"}
        },
        "additionalProperties": false,
        // SEP-2106: composition, conditionals and $anchor pass through unchanged.
        "allOf": [{"anyOf": [{"required": ["name"]}, {"required": ["address"]}]}],
        "if": {"properties": {"kind": {"const": "company"}}, "required": ["kind"]},
        "then": {"required": ["registration"]},
        "else": {"not": {"required": ["registration"]}}
    });
    schema.as_object().cloned().unwrap_or_default()
}

/// The skill the suite's SEP-2640 scenarios read: a `SKILL.md` and a file in a subdirectory.
fn pdf_skill() -> mcp::server::Skill {
    mcp::server::Skill::new(
        "pdf-processing",
        "Extract, fill, and assemble PDF documents",
        "# PDF processing\n\nRead references/FORMS.md before filling a form.",
    )
    .and_then(|s| s.file("references/FORMS.md", "# Forms\n\nFill every field, then flatten the form.\n"))
    .expect("a valid skill")
}

fn router() -> Router {
    Router::new()
        .info("mcp-server-conformance", env!("CARGO_PKG_VERSION"))
        .skill(pdf_skill())
        .description("the tools, resources and prompts the official MCP conformance suite calls by name; run it with --http 127.0.0.1:PORT.")
        .tool_def(tool("test_simple_text", "Returns a simple text response."), simple_text)
        .tool_def(tool("test_image_content", "Returns an image."), image_content)
        .tool_def(tool("test_audio_content", "Returns audio."), audio_content)
        .tool_def(tool("test_embedded_resource", "Returns an embedded resource."), embedded_resource)
        .tool_def(tool("test_multiple_content_types", "Returns text, an image and a resource."), multiple_content_types)
        .tool_def(tool("test_tool_with_logging", "Sends three log messages."), with_logging)
        .tool_def(tool("test_tool_with_progress", "Reports progress 0, 50, 100 of 100."), with_progress)
        .tool_def(tool("test_error_handling", "Always fails."), error_handling)
        .tool_def(tool("test_sampling", "Asks the client's model to answer a prompt."), sampling)
        .tool_def(tool("test_elicitation", "Asks the user for a username and an email."), elicitation)
        .tool_def(
            tool("test_elicitation_sep1034_defaults", "Elicitation with defaults for every primitive type."),
            elicitation_defaults,
        )
        .tool_def(tool("test_elicitation_sep1330_enums", "Elicitation with every enum variant."), elicitation_enums)
        .tool_def(
            tool("test_reconnection", "Closes its SSE stream mid-call; the result arrives after reconnection."),
            reconnection,
        )
        .tool_def(
            tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features")
                .input_schema(json_schema_2020_12()),
            json_schema_tool,
        )
        .resource_def(
            resource("test://static-text", "static-text", "A static text resource", "text/plain"),
            |_r: ResourceRequest, _cx: RequestContext| async move {
                Ok::<_, ToolError>("This is the content of the static text resource.".to_owned())
            },
        )
        .resource_def(
            resource("test://static-binary", "static-binary", "A static binary resource", "image/png"),
            |_r: ResourceRequest, _cx: RequestContext| async move {
                use base64::Engine as _;
                let png =
                    base64::engine::general_purpose::STANDARD.decode(PNG).map_err(|e| ToolError::new(e.to_string()))?;
                Ok::<_, ToolError>(Blob(png))
            },
        )
        .resource_def(
            resource(
                "test://watched-resource",
                "watched-resource",
                "A resource that can be subscribed to",
                "text/plain",
            ),
            |_r: ResourceRequest, _cx: RequestContext| async move {
                Ok::<_, ToolError>("Watched resource content".to_owned())
            },
        )
        .resource_template_def(
            ResourceTemplate {
                uri_template: "test://template/{id}/data".into(),
                name: "template".into(),
                description: Some("A resource template with an id parameter".into()),
                mime_type: Some("application/json".into()),
                ..Default::default()
            },
            |r: ResourceRequest<TemplateParams>, _cx: RequestContext| async move {
                let id = r.params.id;
                Ok::<_, ToolError>(
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string(),
                )
            },
        )
        .prompt_def(
            prompt("test_simple_prompt", "A simple prompt without arguments"),
            |_: NoArgs, _cx: RequestContext| async move {
                Ok::<_, ToolError>(PromptMessage::user("This is a simple prompt for testing."))
            },
        )
        .prompt_def(
            prompt("test_prompt_with_arguments", "A prompt with required arguments"),
            |a: PromptArgs, _cx: RequestContext| async move {
                Ok::<_, ToolError>(PromptMessage::user(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    a.arg1, a.arg2
                )))
            },
        )
        .prompt_def(
            prompt("test_prompt_with_embedded_resource", "A prompt with an embedded resource"),
            |a: EmbeddedPromptArgs, _cx: RequestContext| async move {
                Ok::<_, ToolError>(vec![
                    PromptMessage {
                        role: Role::User,
                        content: embedded(&a.resource_uri, "text/plain", "Embedded resource content for testing."),
                    },
                    PromptMessage::user("Please process the embedded resource above."),
                ])
            },
        )
        .prompt_def(
            prompt("test_prompt_with_image", "A prompt with an image"),
            |_: NoArgs, _cx: RequestContext| async move {
                Ok::<_, ToolError>(vec![
                    PromptMessage { role: Role::User, content: ContentBlock::Image(image(PNG, "image/png")) },
                    PromptMessage::user("Please analyze the image above."),
                ])
            },
        )
        .complete_prompt_argument("test_prompt_with_arguments", "arg1", |typed: &str, _: &_| {
            ["paris", "park", "party"].iter().filter(|v| v.starts_with(typed)).map(|v| v.to_string()).collect()
        })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let router = tasks::add(modern::add(router()));
    match mcp::serve(router).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-server-conformance: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
