//! Every example message of the 2026-07-28 spec decodes into the Rust type of its name and
//! encodes back to the same JSON (numbers compared by value: `50` and `50.0` are one number).

use std::path::{Path, PathBuf};

use mcp_types::completion::{CompleteParams, CompleteResult};
use mcp_types::content::{ContentBlock, ResourceContents, Role, SamplingContent};
use mcp_types::elicitation::{ElicitParams, ElicitResult, PrimitiveSchema};
use mcp_types::jsonrpc::{JsonRpcError, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse};
use mcp_types::lifecycle::{ClientCapabilities, DiscoverResult, ServerCapabilities};
use mcp_types::logging::LoggingMessageParams;
use mcp_types::mrtr::{InputRequests, InputRequiredResult, InputResponses};
use mcp_types::prompts::{GetPromptParams, GetPromptResult, ListPromptsResult};
use mcp_types::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceParams, ReadResourceResult, Resource,
    ResourceUpdatedParams,
};
use mcp_types::result::{EmptyResult, MetaParams, PaginatedParams};
use mcp_types::roots::{ListRootsResult, Root};
use mcp_types::sampling::{CreateMessageParams, CreateMessageResult, ModelPreferences, SamplingMessage};
use mcp_types::subscriptions::{AcknowledgedParams, ListenParams};
use mcp_types::tools::{CallToolParams, CallToolResult, ListToolsResult, Tool};
use mcp_types::utilities::{CancelledParams, ProgressParams};
use mcp_types::ErrorObject;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/examples-2026-07-28")
}

/// JSON equality where numbers compare by value.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

fn roundtrip<T: Serialize + DeserializeOwned>(json: &Value) -> Result<(), String> {
    let typed: T = serde_json::from_value(json.clone()).map_err(|e| format!("decode: {e}"))?;
    let back = serde_json::to_value(&typed).map_err(|e| format!("encode: {e}"))?;
    if same_json(json, &back) {
        Ok(())
    } else {
        Err(format!("re-encoded differently:\n  in:  {json}\n  out: {back}"))
    }
}

/// Error examples are either a bare error object or a whole error response.
fn roundtrip_error(json: &Value) -> Result<(), String> {
    if json.get("jsonrpc").is_some() {
        roundtrip::<JsonRpcError>(json)
    } else {
        roundtrip::<ErrorObject>(json)
    }
}

fn check(type_name: &str, json: &Value) -> Result<(), String> {
    type Req<P> = JsonRpcRequest<P>;
    type Note<P> = JsonRpcNotification<P>;
    type Resp<R> = JsonRpcResponse<R>;
    match type_name {
        "AudioContent" | "ImageContent" | "TextContent" | "ResourceLink" | "EmbeddedResource" => {
            roundtrip::<ContentBlock>(json)
        }
        "ToolUseContent" | "ToolResultContent" => roundtrip::<SamplingContent>(json),
        "BlobResourceContents" | "TextResourceContents" => roundtrip::<ResourceContents>(json),
        "BooleanSchema"
        | "NumberSchema"
        | "StringSchema"
        | "TitledMultiSelectEnumSchema"
        | "TitledSingleSelectEnumSchema"
        | "UntitledMultiSelectEnumSchema"
        | "UntitledSingleSelectEnumSchema" => roundtrip::<PrimitiveSchema>(json),
        "CallToolRequest" => roundtrip::<Req<CallToolParams>>(json),
        "CallToolRequestParams" => roundtrip::<CallToolParams>(json),
        "CallToolResult" => roundtrip::<CallToolResult>(json),
        "CallToolResultResponse" => roundtrip::<Resp<CallToolResult>>(json),
        "CancelledNotification" => roundtrip::<Note<CancelledParams>>(json),
        "CancelledNotificationParams" => roundtrip::<CancelledParams>(json),
        "ClientCapabilities" => roundtrip::<ClientCapabilities>(json),
        "ServerCapabilities" => roundtrip::<ServerCapabilities>(json),
        "CompleteRequest" => roundtrip::<Req<CompleteParams>>(json),
        "CompleteRequestParams" => roundtrip::<CompleteParams>(json),
        "CompleteResult" => roundtrip::<CompleteResult>(json),
        "CompleteResultResponse" => roundtrip::<Resp<CompleteResult>>(json),
        "CreateMessageRequest" => roundtrip::<Req<CreateMessageParams>>(json),
        "CreateMessageRequestParams" => roundtrip::<CreateMessageParams>(json),
        "CreateMessageResult" => roundtrip::<CreateMessageResult>(json),
        "DiscoverRequest" => roundtrip::<Req<MetaParams>>(json),
        "DiscoverResult" => roundtrip::<DiscoverResult>(json),
        "DiscoverResultResponse" => roundtrip::<Resp<DiscoverResult>>(json),
        "ElicitRequest" => roundtrip::<Req<ElicitParams>>(json),
        "ElicitRequestFormParams" | "ElicitRequestURLParams" => roundtrip::<ElicitParams>(json),
        "ElicitResult" => roundtrip::<ElicitResult>(json),
        "GetPromptRequest" => roundtrip::<Req<GetPromptParams>>(json),
        "GetPromptRequestParams" => roundtrip::<GetPromptParams>(json),
        "GetPromptResult" => roundtrip::<GetPromptResult>(json),
        "GetPromptResultResponse" => roundtrip::<Resp<GetPromptResult>>(json),
        "InputRequests" => roundtrip::<InputRequests>(json),
        "InputRequiredResult" => roundtrip::<InputRequiredResult>(json),
        "InputResponses" => roundtrip::<InputResponses>(json),
        "ListPromptsRequest" | "ListResourceTemplatesRequest" | "ListResourcesRequest" | "ListToolsRequest" => {
            roundtrip::<Req<PaginatedParams>>(json)
        }
        "ListPromptsResult" => roundtrip::<ListPromptsResult>(json),
        "ListPromptsResultResponse" => roundtrip::<Resp<ListPromptsResult>>(json),
        "ListResourceTemplatesResult" => roundtrip::<ListResourceTemplatesResult>(json),
        "ListResourceTemplatesResultResponse" => roundtrip::<Resp<ListResourceTemplatesResult>>(json),
        "ListResourcesResult" => roundtrip::<ListResourcesResult>(json),
        "ListResourcesResultResponse" => roundtrip::<Resp<ListResourcesResult>>(json),
        "ListRootsRequest" => roundtrip::<Req<MetaParams>>(json),
        "ListRootsResult" => roundtrip::<ListRootsResult>(json),
        "ListToolsResult" => roundtrip::<ListToolsResult>(json),
        "ListToolsResultResponse" => roundtrip::<Resp<ListToolsResult>>(json),
        "LoggingMessageNotification" => roundtrip::<Note<LoggingMessageParams>>(json),
        "LoggingMessageNotificationParams" => roundtrip::<LoggingMessageParams>(json),
        "ModelPreferences" => roundtrip::<ModelPreferences>(json),
        "PaginatedRequestParams" => roundtrip::<PaginatedParams>(json),
        "ProgressNotification" => roundtrip::<Note<ProgressParams>>(json),
        "ProgressNotificationParams" => roundtrip::<ProgressParams>(json),
        "PromptListChangedNotification" | "ResourceListChangedNotification" | "ToolListChangedNotification" => {
            roundtrip::<Note<MetaParams>>(json)
        }
        "ReadResourceRequest" => roundtrip::<Req<ReadResourceParams>>(json),
        "ReadResourceResult" => roundtrip::<ReadResourceResult>(json),
        "ReadResourceResultResponse" => roundtrip::<Resp<ReadResourceResult>>(json),
        "Resource" => roundtrip::<Resource>(json),
        "ResourceUpdatedNotification" => roundtrip::<Note<ResourceUpdatedParams>>(json),
        "ResourceUpdatedNotificationParams" => roundtrip::<ResourceUpdatedParams>(json),
        "Root" => roundtrip::<Root>(json),
        "SamplingMessage" => roundtrip::<SamplingMessage>(json),
        "SubscriptionsAcknowledgedNotification" => roundtrip::<Note<AcknowledgedParams>>(json),
        "SubscriptionsListenRequest" => roundtrip::<Req<ListenParams>>(json),
        "SubscriptionsListenResult" => roundtrip::<EmptyResult>(json),
        "SubscriptionsListenResultResponse" => roundtrip::<Resp<EmptyResult>>(json),
        "Tool" => roundtrip::<Tool>(json),
        "HeaderMismatchError"
        | "InternalError"
        | "InvalidParamsError"
        | "MethodNotFoundError"
        | "MissingRequiredClientCapabilityError"
        | "ParseError"
        | "UnsupportedProtocolVersionError" => roundtrip_error(json),
        other => Err(format!("no Rust type is mapped to example type {other}")),
    }
}

#[test]
fn every_spec_example_round_trips() {
    let mut files = 0;
    let mut failures = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(examples_dir()).expect("examples dir").flatten().collect();
    dirs.sort_by_key(|d| d.file_name());
    for dir in dirs {
        let type_name = dir.file_name().to_string_lossy().into_owned();
        for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
            files += 1;
            let text = std::fs::read_to_string(file.path()).unwrap();
            let json: Value = serde_json::from_str(&text).unwrap();
            if let Err(e) = check(&type_name, &json) {
                failures.push(format!("{type_name}/{}: {e}", file.file_name().to_string_lossy()));
            }
        }
    }
    assert_eq!(files, 129, "the spec ships 129 example files");
    assert!(failures.is_empty(), "{} of {files} examples failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn the_copy_matches_the_shared_spec_when_present() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/spec/2026-07-28/examples");
    if !shared.is_dir() {
        return; // a clone without shared/ beside it: the in-repo copy is the reference
    }
    for dir in std::fs::read_dir(&shared).unwrap().flatten() {
        for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
            let ours = examples_dir().join(dir.file_name()).join(file.file_name());
            assert_eq!(std::fs::read(file.path()).unwrap(), std::fs::read(&ours).unwrap(), "{}", ours.display());
        }
    }
}

#[test]
fn roles_are_lowercase() {
    assert_eq!(serde_json::to_value(Role::Assistant).unwrap(), "assistant");
}
