//! `x-mcp-header` (2026-07-28): tool arguments mirrored into `Mcp-Param-*` HTTP headers, and
//! the rules an annotation must follow for the tool to be usable over HTTP.

use std::collections::HashSet;

use mcp_types::tools::Tool;
use serde_json::Value;

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The (argument, header suffix) pairs of a tool; `Err` says which rule an annotation breaks.
pub(crate) fn header_params(tool: &Tool) -> Result<Vec<(String, String)>, String> {
    let Some(Value::Object(props)) = tool.input_schema.get("properties") else { return Ok(Vec::new()) };
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (arg, schema) in props {
        let Some(annotation) = schema.get("x-mcp-header") else { continue };
        let name = annotation.as_str().ok_or(format!("x-mcp-header of {arg} is not a string"))?;
        if name.is_empty() || !name.bytes().all(is_tchar) {
            return Err(format!("x-mcp-header {name:?} of {arg} is not a valid header name"));
        }
        if !seen.insert(name.to_ascii_lowercase()) {
            return Err(format!("x-mcp-header {name:?} is used twice"));
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("string" | "integer" | "boolean") => {}
            other => return Err(format!("x-mcp-header on {arg} of type {other:?}: only string, integer and boolean")),
        }
        out.push((arg.clone(), name.to_owned()));
    }
    Ok(out)
}
