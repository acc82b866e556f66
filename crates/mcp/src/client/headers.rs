//! `x-mcp-header` (2026-07-28): tool arguments mirrored into `Mcp-Param-*` HTTP headers, and
//! the rules an annotation must follow for the tool to be usable over HTTP.

use std::collections::HashSet;

use mcp_types::tools::Tool;
use serde_json::Value;

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The (argument, header suffix) pairs of a tool; `Err` says which rule an annotation breaks.
/// A type an `x-mcp-header` may annotate: string, integer or boolean, possibly nullable
/// (`["boolean", "null"]`: a null value sends no header).
fn primitive(kind: Option<&Value>) -> bool {
    let is_primitive = |t: &str| matches!(t, "string" | "integer" | "boolean");
    match kind {
        Some(Value::String(t)) => is_primitive(t),
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            names.len() == types.len()
                && names.iter().filter(|t| is_primitive(t)).count() == 1
                && names.iter().all(|t| is_primitive(t) || *t == "null")
        }
        _ => false,
    }
}

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
        if !primitive(schema.get("type")) {
            let shown = schema.get("type").map(Value::to_string).unwrap_or_else(|| "none".into());
            return Err(format!("x-mcp-header on {arg} of type {shown}: only string, integer and boolean"));
        }
        out.push((arg.clone(), name.to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(properties: Value) -> Tool {
        serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object", "properties": properties}}))
            .unwrap()
    }

    #[test]
    fn primitive_and_nullable_primitive_arguments_may_be_mirrored() {
        let t = tool(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "verbose": {"type": ["boolean", "null"], "x-mcp-header": "Verbose"},
            "query": {"type": "string"}
        }));
        let params = header_params(&t).unwrap();
        assert_eq!(params.len(), 2);
        for bad in [json!("number"), json!(["string", "integer"]), json!(["null"]), json!("object")] {
            let t = tool(json!({"x": {"type": bad, "x-mcp-header": "X"}}));
            assert!(header_params(&t).is_err(), "{bad}");
        }
    }
}
