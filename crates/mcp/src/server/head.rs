//! The one reader of a request's params head: the fields the engine itself reads before a
//! method's own type does (`_meta` and the keys of it the era adapter takes, and the `name`,
//! `uri` or `taskId` that says what a request acts on), read in place without building a tree.
//!
//! Every part of the server reads them here, and so reads them alike: the era adapter on every
//! transport, the HTTP endpoint's header checks, the middleware's [`Call::name`], the resource
//! server's scope peek. A key among them given twice is refused (JSON leaves its meaning open:
//! one reader taking the first and another the last is how a check is passed with one value and
//! the work done with the other), as is params or a `_meta` that is not an object.
//!
//! [`Call::name`]: crate::middleware::Call::name

use std::borrow::Cow;

use mcp_types::meta::ProgressToken;
use mcp_types::ErrorObject;
use serde::Deserialize;
use serde_json::value::RawValue;

/// The fields of a request's params the engine reads, each still JSON text.
#[derive(Default)]
pub(crate) struct ParamsHead<'a> {
    /// The `_meta` keys the era adapter reads (all absent without `_meta`).
    pub meta: RequestMeta<'a>,
    name: Option<&'a RawValue>,
    uri: Option<&'a RawValue>,
    task_id: Option<&'a RawValue>,
}

/// The `_meta` fields the engine reads, decoded without the rest of the params (and kept as
/// text until typed, so a huge one is never a tree), by [`ParamsHead`] alone; serde refuses a
/// repeated one.
#[derive(Deserialize, Default)]
pub(crate) struct RequestMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
    protocol_version: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow)]
    pub client_capabilities: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", borrow)]
    pub client_info: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", borrow)]
    pub log_level: Option<&'a RawValue>,
    #[serde(rename = "progressToken")]
    pub progress_token: Option<ProgressToken>,
    /// The trace context (W3C), read only where telemetry is built in.
    #[cfg(feature = "otel")]
    #[serde(borrow)]
    traceparent: Option<&'a RawValue>,
    #[cfg(feature = "otel")]
    #[serde(borrow)]
    tracestate: Option<&'a RawValue>,
    #[cfg(feature = "otel")]
    #[serde(borrow)]
    baggage: Option<&'a RawValue>,
}

impl<'a> RequestMeta<'a> {
    /// The trace context the request carries.
    #[cfg(feature = "otel")]
    pub fn carrier(&self) -> Option<crate::telemetry::Carrier> {
        crate::telemetry::Carrier::from_fields(self.traceparent, self.tracestate, self.baggage)
    }

    /// The protocol version as it was written (a JSON value, a string when well formed).
    pub(crate) fn protocol_version(&self) -> Option<&'a RawValue> {
        self.protocol_version
    }
}

/// The keys of the params read here; serde refuses a repeated one (`duplicate field`).
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
    #[serde(rename = "taskId", borrow, default)]
    task_id: Option<&'a RawValue>,
}

impl<'a> ParamsHead<'a> {
    /// Reads `params` (`None`: the request had none).
    pub fn read(params: Option<&'a RawValue>) -> Result<ParamsHead<'a>, ErrorObject> {
        Self::read_text(params.map(RawValue::get))
    }

    /// [`ParamsHead::read`] of params given as JSON text.
    pub fn read_text(params: Option<&'a str>) -> Result<ParamsHead<'a>, ErrorObject> {
        let Some(text) = params else { return Ok(ParamsHead::default()) };
        // A struct would also take an array, by position: MCP params are an object.
        if !is_object(text) {
            return Err(ErrorObject::invalid_params("invalid params: params must be an object"));
        }
        let fields: Fields<'a> = serde_json::from_str(text).map_err(|e| refused("params", &e))?;
        let meta = match fields.meta.map(RawValue::get) {
            None | Some("null") => RequestMeta::default(),
            Some(meta) if is_object(meta) => serde_json::from_str(meta).map_err(|e| refused("_meta", &e))?,
            Some(_) => return Err(ErrorObject::invalid_params("invalid params: _meta must be an object")),
        };
        Ok(ParamsHead { meta, name: fields.name, uri: fields.uri, task_id: fields.task_id })
    }

    /// Whether the request carries its protocol version in `_meta`: a 2026-07-28 request.
    pub fn is_modern(&self) -> bool {
        self.meta.protocol_version().is_some()
    }

    /// The protocol version `_meta` names, when it is a string.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // the HTTP transport's header checks
    pub fn version(&self) -> Option<Cow<'a, str>> {
        string(self.meta.protocol_version())
    }

    /// `name`, when it is a string.
    pub fn name(&self) -> Option<Cow<'a, str>> {
        string(self.name)
    }

    /// `uri`, when it is a string.
    pub fn uri(&self) -> Option<Cow<'a, str>> {
        string(self.uri)
    }

    /// `taskId`, when it is a string.
    pub fn task_id(&self) -> Option<Cow<'a, str>> {
        string(self.task_id)
    }

    /// The item `method` acts on (see [`crate::middleware::Call::name`]), when it is a string.
    pub fn named(&self, method: &str) -> Option<Cow<'a, str>> {
        match named_field(method)? {
            "name" => self.name(),
            "uri" => self.uri(),
            _ => self.task_id(),
        }
    }
}

/// The field of the params that names what a request acts on, if its method has one.
pub(crate) fn named_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" | "tasks/result" => Some("taskId"),
        _ => None,
    }
}

fn is_object(text: &str) -> bool {
    text.trim_start().starts_with('{')
}

/// The error for params (or their `_meta`) that cannot be read: a repeated key, a value of the
/// wrong type where the engine reads one.
fn refused(what: &str, e: &serde_json::Error) -> ErrorObject {
    let e = e.to_string();
    let e = e.split(" at line ").next().unwrap_or(&e);
    let hint = if e.starts_with("duplicate field") { ": each key may appear once" } else { "" };
    ErrorObject::invalid_params(format!("invalid params: {what}: {e}{hint}"))
}

/// A string stays a string (borrowed when it has no escapes); any other value reads as absent.
fn string(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    let text = raw?.get();
    match serde_json::from_str::<&str>(text) {
        Ok(borrowed) => Some(Cow::Borrowed(borrowed)),
        Err(_) => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<ParamsHead<'_>, ErrorObject> {
        ParamsHead::read_text(Some(text))
    }

    #[test]
    fn reads_the_fields_without_the_rest() {
        let head = read(
            r#"{"name":"echo","arguments":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"no"}},
                "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":3}}"#,
        )
        .unwrap();
        assert!(head.is_modern());
        assert_eq!(head.version().as_deref(), Some("2026-07-28"));
        assert_eq!(head.named("tools/call").as_deref(), Some("echo"));
        assert_eq!(head.named("resources/read"), None);
        let escaped = read(r#"{"uri":"file:///\u00e9","name":7,"taskId":null}"#).unwrap();
        assert_eq!(escaped.named("resources/read").as_deref(), Some("file:///é"));
        assert_eq!(escaped.name(), None, "a number is no name");
        assert_eq!(escaped.task_id(), None);
        assert!(!escaped.is_modern());
    }

    /// The text of the protocol version's key in the arguments (a user asking about MCP) is not
    /// the key in `_meta`.
    #[test]
    fn the_era_is_read_from_meta_only() {
        let head = read(r#"{"name":"echo","arguments":{"text":"io.modelcontextprotocol/protocolVersion"}}"#).unwrap();
        assert!(!head.is_modern());
        let nested = r#"{"name":"e","arguments":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert!(!read(nested).unwrap().is_modern());
        assert!(read(r#"{"_meta":null}"#).is_ok_and(|h| !h.is_modern()));
    }

    #[test]
    fn a_repeated_key_is_refused_with_its_name() {
        for (text, key) in [
            (r#"{"name":"a","arguments":{},"name":"b"}"#, "name"),
            (r#"{"uri":"a","uri":"b"}"#, "uri"),
            (r#"{"taskId":"a","taskId":"a"}"#, "taskId"),
            (r#"{"_meta":{},"_meta":{}}"#, "_meta"),
            (r#"{"_meta":{"progressToken":1,"progressToken":2}}"#, "progressToken"),
            (
                r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
                "io.modelcontextprotocol/protocolVersion",
            ),
        ] {
            let e = read(text).err().unwrap_or_else(|| panic!("{text} was read"));
            assert_eq!(e.code, mcp_types::ErrorCode::INVALID_PARAMS);
            assert!(e.message.contains(&format!("duplicate field `{key}`")), "{text}: {}", e.message);
            assert!(e.message.contains("each key may appear once"), "{}", e.message);
        }
        // Keys the engine does not read may repeat: the method's own type judges them.
        assert!(read(r#"{"name":"a","arguments":{"x":1,"x":2},"cursor":"a","cursor":"b"}"#).is_ok());
        assert!(read(r#"{"_meta":{"other":1,"other":2}}"#).is_ok());
    }

    #[test]
    fn params_and_meta_must_be_objects() {
        for text in [r#"["echo"]"#, "7", r#""x""#, r#"{"_meta":[]}"#, r#"{"_meta":"2026-07-28"}"#, r#"{"_meta":5}"#] {
            assert!(read(text).is_err(), "{text}");
        }
        assert!(ParamsHead::read(None).is_ok_and(|h| !h.is_modern()));
    }
}
