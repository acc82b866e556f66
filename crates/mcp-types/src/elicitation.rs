//! Elicitation: the server asks the user for input (`elicitation/create`), in form or URL mode.
//!
//! Spec: `client/elicitation` (2025-06-18+; URL mode 2025-11-25+). A form's `requestedSchema` is
//! a flat object of primitive properties, described by the schema types below.

use serde::{Deserialize, Serialize};

use crate::result::ResultType;
use crate::{JsonObject, Meta};

/// Params of `elicitation/create`, both modes (`ElicitRequestFormParams`,
/// `ElicitRequestURLParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitParams {
    /// `"form"` (the default when absent) or `"url"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What the user is asked, shown to them.
    pub message: String,
    /// Form mode: the schema of the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<RequestedSchema>,
    /// URL mode: the page to open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Legacy URL mode (2025-11-25): the elicitation's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// Legacy (2025-11-25): run as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<serde_json::Value>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ElicitParams {
    /// A form-mode request.
    pub fn form(message: impl Into<String>, schema: RequestedSchema) -> Self {
        ElicitParams {
            mode: None,
            message: message.into(),
            requested_schema: Some(schema),
            url: None,
            elicitation_id: None,
            task: None,
            meta: None,
        }
    }

    /// Whether this is a URL-mode request.
    pub fn is_url(&self) -> bool {
        self.mode.as_deref() == Some("url")
    }
}

/// The schema of a form: a flat object of primitive properties.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestedSchema {
    /// A `$schema` dialect URI.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// `"object"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The fields, each a [`PrimitiveSchema`] in JSON.
    pub properties: JsonObject,
    /// The fields that must be filled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitResult {
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// `accept`, `decline` or `cancel`.
    pub action: ElicitAction,
    /// The form's values, on a form-mode accept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<JsonObject>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted.
    Accept,
    /// Explicitly refused.
    Decline,
    /// Dismissed.
    Cancel,
}

/// A field of a form: string, number, boolean or enum (`PrimitiveSchemaDefinition`).
///
/// One struct holds every variant's keywords; `kind` is the JSON Schema `type`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrimitiveSchema {
    /// `string`, `number`, `integer`, `boolean` or `array`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// String: minimum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// String: maximum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// String: `email`, `uri`, `date`, `date-time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Number: minimum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<f64>,
    /// Number: maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<f64>,
    /// Untitled single-select enum.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub enum_values: Option<Vec<String>>,
    /// Legacy titled enum: display names parallel to `enum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Titled single-select enum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<EnumOption>>,
    /// Multi-select: the options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<EnumItems>,
    /// Multi-select: fewest choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Multi-select: most choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
}

/// A titled option: a value and its label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value.
    #[serde(rename = "const")]
    pub value: String,
    /// Its label.
    pub title: String,
}

/// The `items` of a multi-select enum.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnumItems {
    /// `"string"` for untitled options.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Untitled options.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub enum_values: Option<Vec<String>>,
    /// Titled options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any_of: Option<Vec<EnumOption>>,
}
