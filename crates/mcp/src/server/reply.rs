//! What a request comes to when it succeeds: a JSON value, or a tool's result kept typed until it
//! is written.
//!
//! Most answers are a `tools/call` result. Turned into a [`Value`] tree, given its era's fields,
//! written and dropped, such a result cost more than parsing the request; kept typed, it is
//! written straight from its fields. The bytes are the same either way: the typed writer puts
//! the keys in the order a tree (a sorted map) would.

use std::sync::Arc;

use mcp_types::content::ContentBlock;
use mcp_types::meta;
use mcp_types::result::ResultType;
use mcp_types::tools::CallToolResult;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A successful request's result: what middleware sees and what the transports write.
///
/// Make one from a [`Value`] (`json!({...}).into()`); read it with [`Reply::to_value`] or
/// [`Reply::into_value`]. It serializes as its JSON.
#[derive(Debug, Clone)]
pub struct Reply(Kind);

#[derive(Debug, Clone)]
enum Kind {
    Value(Value),
    Tool(Box<ToolReply>),
}

#[derive(Debug, Clone)]
struct ToolReply {
    result: CallToolResult,
    /// Set for a 2026-07-28 request: `resultType` defaults to `complete`, and `_meta` carries the
    /// server's name and version (this JSON) unless the tool set that key itself.
    server_info: Option<Arc<RawValue>>,
}

impl From<Value> for Reply {
    fn from(value: Value) -> Self {
        Reply(Kind::Value(value))
    }
}

impl Reply {
    /// A tool's result, written as it is.
    pub(crate) fn tool(result: CallToolResult) -> Reply {
        Reply(Kind::Tool(Box::new(ToolReply { result, server_info: None })))
    }

    /// The result as a JSON value.
    pub fn into_value(self) -> Value {
        match self.0 {
            Kind::Value(value) => value,
            Kind::Tool(tool) => (*tool).into_value(),
        }
    }

    /// The result as a JSON value, copied.
    pub fn to_value(&self) -> Value {
        self.clone().into_value()
    }

    /// Whether it is a tool's `isError: true` result.
    pub fn is_tool_error(&self) -> bool {
        match &self.0 {
            Kind::Value(value) => value.get("isError") == Some(&Value::Bool(true)),
            Kind::Tool(tool) => tool.result.is_error == Some(true),
        }
    }

    /// Its `resultType`, when it has one.
    pub fn result_type(&self) -> Option<&str> {
        match &self.0 {
            Kind::Value(value) => value.get("resultType").and_then(Value::as_str),
            Kind::Tool(tool) => match &tool.result.result_type {
                Some(kind) => Some(kind.as_str()),
                None => tool.server_info.is_some().then_some("complete"),
            },
        }
    }

    /// Whether it names a task (a 2025-11-25 `CreateTaskResult`).
    pub(crate) fn has_task(&self) -> bool {
        matches!(&self.0, Kind::Value(value) if value.get("task").is_some())
    }

    /// The value inside, when it is one (the era's fields are added to it in place).
    pub(crate) fn value_mut(&mut self) -> Option<&mut Value> {
        match &mut self.0 {
            Kind::Value(value) => Some(value),
            Kind::Tool(_) => None,
        }
    }

    /// Marks a tool's result as a 2026-07-28 answer carrying `server_info`.
    pub(crate) fn set_server_info(&mut self, server_info: &Arc<RawValue>) {
        if let Kind::Tool(tool) = &mut self.0 {
            tool.server_info.get_or_insert_with(|| server_info.clone());
        }
    }

    /// About how long its JSON text is, to size the buffer it is written into.
    pub(crate) fn estimated_len(&self) -> usize {
        match &self.0 {
            Kind::Value(value) => estimated_len(value, 0),
            Kind::Tool(tool) => {
                let texts: usize = tool
                    .result
                    .content
                    .iter()
                    .map(|block| match block {
                        ContentBlock::Text(text) => text.text.len() + text.text.len() / 8 + 32,
                        _ => 256,
                    })
                    .sum();
                let structured = tool.result.structured_content.as_ref().map_or(0, |v| estimated_len(v, 0));
                texts + structured + 256
            }
        }
    }
}

/// About how long `value` is as JSON text (strings get an eighth more for escapes).
pub(crate) fn estimated_len(value: &Value, depth: usize) -> usize {
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 24,
        Value::String(s) => s.len() + s.len() / 8 + 2,
        _ if depth > 64 => 1024,
        Value::Array(items) => items.iter().map(|v| estimated_len(v, depth + 1) + 1).sum::<usize>() + 2,
        Value::Object(map) => map.iter().map(|(k, v)| k.len() + 4 + estimated_len(v, depth + 1)).sum::<usize>() + 2,
    }
}

/// Gives a 2026-07-28 result its era's fields, where it did not set them itself: `resultType`
/// `complete`, and the server's name and version (`server_info`) in `_meta`.
pub(crate) fn add_era_fields(object: &mut Map<String, Value>, server_info: impl FnOnce() -> Value) {
    object.entry("resultType").or_insert("complete".into());
    if let Value::Object(meta) = object.entry("_meta").or_insert_with(|| Value::Object(Map::new())) {
        meta.entry(meta::SERVER_INFO).or_insert_with(server_info);
    }
}

impl ToolReply {
    fn into_value(self) -> Value {
        let ToolReply { result, server_info } = self;
        let mut value = super::tool::result_value(result).unwrap_or_default();
        if let (Some(info), Value::Object(object)) = (server_info, &mut value) {
            add_era_fields(object, || serde_json::from_str(info.get()).unwrap_or_default());
        }
        value
    }

    /// `_meta`, the server's name and version added (a rare tool sets a `_meta` of its own: that
    /// one is made a tree first, so its keys come out sorted as before).
    fn write_meta<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        match (&self.result.meta, &self.server_info) {
            (None, None) => Ok(()),
            (None, Some(info)) => map.serialize_entry("_meta", &ServerInfoOnly(info)),
            (Some(own), info) => {
                let mut meta = own.clone();
                if let Some(info) = info {
                    if !meta.contains_key(meta::SERVER_INFO) {
                        meta.insert(meta::SERVER_INFO.into(), serde_json::from_str(info.get()).unwrap_or_default());
                    }
                }
                map.serialize_entry("_meta", &meta)
            }
        }
    }
}

/// `{"io.modelcontextprotocol/serverInfo": ...}`.
struct ServerInfoOnly<'a>(&'a RawValue);

impl Serialize for ServerInfoOnly<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(meta::SERVER_INFO, self.0)?;
        map.end()
    }
}

/// The content blocks, in the key order a tree gives them.
struct Blocks<'a>(&'a [ContentBlock]);

impl Serialize for Blocks<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for block in self.0 {
            match block {
                ContentBlock::Text(text) if text.annotations.is_none() && text.meta.is_none() => {
                    seq.serialize_element(&PlainText(&text.text))?
                }
                other => {
                    let tree = serde_json::to_value(other).map_err(serde::ser::Error::custom)?;
                    seq.serialize_element(&tree)?
                }
            }
        }
        seq.end()
    }
}

/// `{"text": ..., "type": "text"}`.
struct PlainText<'a>(&'a str);

impl Serialize for PlainText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("text", self.0)?;
        map.serialize_entry("type", "text")?;
        map.end()
    }
}

impl Serialize for ToolReply {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let result = &self.result;
        let mut map = serializer.serialize_map(None)?;
        // Sorted, as the keys of a tree: _meta, content, isError, resultType, structuredContent.
        self.write_meta(&mut map)?;
        map.serialize_entry("content", &Blocks(&result.content))?;
        if let Some(is_error) = result.is_error {
            map.serialize_entry("isError", &is_error)?;
        }
        match (&result.result_type, &self.server_info) {
            (Some(kind), _) => map.serialize_entry("resultType", kind.as_str())?,
            (None, Some(_)) => map.serialize_entry("resultType", ResultType::Complete.as_str())?,
            (None, None) => {}
        }
        if let Some(structured) = &result.structured_content {
            map.serialize_entry("structuredContent", structured)?;
        }
        map.end()
    }
}

impl Serialize for Reply {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Kind::Value(value) => value.serialize(serializer),
            Kind::Tool(tool) => tool.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::content::TextContent;
    use serde_json::json;

    fn info() -> Arc<RawValue> {
        Arc::from(RawValue::from_string(r#"{"name":"s","version":"1"}"#.into()).unwrap())
    }

    /// The typed writer gives the bytes the tree gives, with and without the era's fields.
    #[test]
    fn a_typed_tool_result_is_written_as_its_tree_would_be() {
        let mut annotated = TextContent::new("b");
        annotated.annotations = Some(Default::default());
        let mut own_meta = serde_json::Map::new();
        own_meta.insert("z".into(), json!(1));
        own_meta.insert("a".into(), json!({"y": 2, "b": [3]}));
        let results = [
            CallToolResult::text("hello \"world\"\n"),
            CallToolResult::error("bad"),
            CallToolResult {
                content: vec![ContentBlock::Text(annotated), ContentBlock::text("c")],
                structured_content: Some(json!({"k": [1, {"b": 2, "a": 1}]})),
                meta: Some(own_meta),
                ..Default::default()
            },
            CallToolResult { result_type: Some(ResultType::Complete), ..Default::default() },
        ];
        for result in results {
            for modern in [false, true] {
                let mut reply = Reply::tool(result.clone());
                if modern {
                    reply.set_server_info(&info());
                }
                let typed = serde_json::to_string(&reply).unwrap();
                let tree = serde_json::to_string(&reply.to_value()).unwrap();
                assert_eq!(typed, tree, "modern: {modern}");
                assert!(reply.estimated_len() >= typed.len() / 2);
                if modern {
                    assert!(typed.contains(r#""io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}"#));
                    assert_eq!(reply.result_type(), Some("complete"));
                }
            }
        }
    }

    #[test]
    fn a_tools_own_server_info_is_kept() {
        let mut own_meta = serde_json::Map::new();
        own_meta.insert(meta::SERVER_INFO.into(), json!({"name": "mine"}));
        let mut reply = Reply::tool(CallToolResult { meta: Some(own_meta), ..CallToolResult::text("x") });
        reply.set_server_info(&info());
        assert_eq!(reply.to_value()["_meta"][meta::SERVER_INFO], json!({"name": "mine"}));
        assert!(serde_json::to_string(&reply).unwrap().contains(r#"{"name":"mine"}"#));
    }

    #[test]
    fn a_value_reply_reads_its_fields() {
        let reply = Reply::from(json!({"isError": true, "resultType": "input_required", "task": {}}));
        assert!(reply.is_tool_error());
        assert_eq!(reply.result_type(), Some("input_required"));
        assert!(reply.has_task());
        assert!(!Reply::tool(CallToolResult::text("x")).is_tool_error());
        assert!(Reply::tool(CallToolResult::error("x")).is_tool_error());
    }
}
