//! Elicitation without a person at the keyboard.

use mcp::types::elicitation::{ElicitAction, ElicitParams, ElicitResult};
use serde_json::Map;

/// Accepts a form with each field's default; declines when a required field has none.
pub fn accept_with_defaults(params: &ElicitParams) -> ElicitResult {
    let decline = ElicitResult { result_type: None, action: ElicitAction::Decline, content: None, meta: None };
    if params.is_url() {
        return decline;
    }
    let Some(schema) = &params.requested_schema else { return decline };
    let mut content = Map::new();
    for (name, field) in &schema.properties {
        if let Some(default) = field.get("default") {
            content.insert(name.clone(), default.clone());
        }
    }
    let required = schema.required.clone().unwrap_or_default();
    if required.iter().any(|r| !content.contains_key(r)) {
        return decline;
    }
    ElicitResult { result_type: None, action: ElicitAction::Accept, content: Some(content), meta: None }
}
