//! Multi round-trip requests (2026-07-28): `input_required` results and their retries.
//!
//! Spec: `basic/patterns/mrtr`. Instead of sending a request to the client, a server answers
//! `tools/call`, `prompts/get` or `resources/read` with `inputRequests` (elicitation, sampling,
//! roots) and an opaque `requestState`; the client retries the same request with a new id,
//! `inputResponses` and the state echoed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::result::ResultType;
use crate::{JsonObject, Meta};

/// A request the server needs answered: `elicitation/create`, `sampling/createMessage` or
/// `roots/list`, with its params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// The method.
    pub method: String,
    /// Its params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
}

/// Input requests by server-chosen key.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// Answers by the keys of [`InputRequests`]: each an `ElicitResult`, `CreateMessageResult` or
/// `ListRootsResult` in JSON.
pub type InputResponses = JsonObject;

/// The result that asks for input (`InputRequiredResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// `"input_required"`.
    pub result_type: ResultType,
    /// What the server needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client echoes on the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The retry fields shared by the three methods that allow MRTR (`InputResponseRequestParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputResponseParams {
    /// The answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The echoed state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
