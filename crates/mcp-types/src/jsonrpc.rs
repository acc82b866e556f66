//! The JSON-RPC 2.0 layer: ids, error objects, and the envelope that classifies a message.
//!
//! Spec: "Base Protocol" (`basic/index`) of every revision. A message is a request (`id` and
//! `method`), a notification (`method`, no `id`), a result response (`id` and `result`) or an
//! error response (`error`, with `id` or `null`). [`Envelope`] decodes only those keys and keeps
//! `params` and `result` as raw JSON, so a message is parsed once and its params later by the
//! type of the one method it names.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

/// A request id: a string or an integer. `1` and `"1"` are different ids.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

/// The `"jsonrpc": "2.0"` member: a one-value type, so no other value deserializes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JsonRpcVersion;

impl Serialize for JsonRpcVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("2.0")
    }
}

impl<'de> Deserialize<'de> for JsonRpcVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v: Cow<'de, str> = Deserialize::deserialize(d)?;
        if v == "2.0" {
            Ok(JsonRpcVersion)
        } else {
            Err(de::Error::custom(format!("jsonrpc must be \"2.0\", got {v:?}")))
        }
    }
}

/// A JSON-RPC error code: an open set of integers with the spec's codes as constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// The method does not exist, or its capability was not advertised.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// Invalid method parameters: unknown tool or prompt, bad arguments, missing `_meta`,
    /// unknown resource (2026-07-28).
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// Internal error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// HTTP headers missing, malformed, or not matching the body (2026-07-28).
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// The request needs a client capability it did not declare (2026-07-28).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// The requested protocol version is not supported (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
    /// Legacy (up to 2025-11-25): resource not found.
    pub const RESOURCE_NOT_FOUND_LEGACY: ErrorCode = ErrorCode(-32002);
    /// Legacy (2025-11-25 only): URL elicitation required.
    pub const URL_ELICITATION_REQUIRED_LEGACY: ErrorCode = ErrorCode(-32042);
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The `error` member of an error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: ErrorCode,
    /// A short description.
    pub message: String,
    /// Additional information, defined by the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl ErrorObject {
    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None }
    }

    /// The same error with `data` set.
    pub fn with_data(mut self, data: serde_json::Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::PARSE_ERROR, message)
    }
    /// -32600.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_REQUEST, message)
    }
    /// -32601 naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(ErrorCode::METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }
    /// -32602.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }
    /// -32603.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, message)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// What kind of message an [`Envelope`] holds, decided by the keys present.
#[derive(Debug)]
pub enum MessageKind<'a> {
    /// `id` and `method`.
    Request {
        /// The request id.
        id: RequestId,
        /// The method.
        method: Cow<'a, str>,
        /// The raw params, if any.
        params: Option<&'a RawValue>,
    },
    /// `method` without `id`.
    Notification {
        /// The method.
        method: Cow<'a, str>,
        /// The raw params, if any.
        params: Option<&'a RawValue>,
    },
    /// `id` and `result`.
    Result {
        /// The id of the request this answers.
        id: RequestId,
        /// The raw result.
        result: &'a RawValue,
    },
    /// `error`, with the id of the request or `None` when it could not be read.
    Error {
        /// The id of the request this answers.
        id: Option<RequestId>,
        /// The error.
        error: ErrorObject,
    },
    /// A response (`result` or `error`, no `method`) that breaks the rules: never answered.
    InvalidResponse {
        /// Its id, when it is a string or an integer.
        id: Option<RequestId>,
        /// What is wrong with it.
        reason: String,
    },
}

impl MessageKind<'_> {
    /// Whether this is a response (well formed or not): a message no peer may answer.
    pub fn is_response(&self) -> bool {
        matches!(self, MessageKind::Result { .. } | MessageKind::Error { .. } | MessageKind::InvalidResponse { .. })
    }
}

/// Why a JSON object is not a valid JSON-RPC message, with the id when one could be read.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidMessage {
    /// The id of the message, when it had a usable one.
    pub id: Option<RequestId>,
    /// What is wrong, for the -32600 error message.
    pub reason: String,
}

/// The keys of a JSON-RPC message, decoded without touching `params` or `result`.
///
/// A key of the envelope given twice makes the message invalid ([`Envelope::kind`] says which):
/// JSON leaves the meaning of a repeated key open, and a peer that read the first where another
/// reads the last would act on a message other than the one checked.
#[derive(Debug, Default)]
pub struct Envelope<'a> {
    jsonrpc: Option<&'a RawValue>,
    id: Option<Option<IdValue>>,
    method: Option<&'a RawValue>,
    params: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
    /// The first key found twice.
    repeated: Option<&'static str>,
}

/// An `id` as found on the wire, before checking it is a string or an integer.
#[derive(Debug)]
enum IdValue {
    Valid(RequestId),
    Invalid,
}

impl<'a> Envelope<'a> {
    /// Classifies the message, or says why it is not a valid JSON-RPC 2.0 message.
    ///
    /// A message with `result` or `error` and no `method` is a response, however malformed
    /// (wrong `jsonrpc`, an error object of the wrong shape, an id of any type): it is classified
    /// as one ([`MessageKind::InvalidResponse`] when malformed), never as an invalid request, so
    /// that no peer ever answers it. JSON-RPC peers must not reply to responses.
    pub fn kind(self) -> Result<MessageKind<'a>, InvalidMessage> {
        if self.method.is_none() && (self.result.is_some() || self.error.is_some()) {
            return Ok(self.response());
        }
        if let Some(key) = self.repeated {
            // A repeated id has no one value to answer to.
            let id = match &self.id {
                Some(Some(IdValue::Valid(id))) if key != "id" => Some(id.clone()),
                _ => None,
            };
            return Err(invalid(id, repeated(key)));
        }
        let id = match self.id {
            None => None,
            Some(None) => Some(None),
            Some(Some(IdValue::Valid(id))) => Some(Some(id)),
            Some(Some(IdValue::Invalid)) => return Err(invalid(None, "id must be a string or an integer")),
        };
        let usable_id = id.clone().flatten();
        if self.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
            return Err(invalid(usable_id, "jsonrpc must be \"2.0\""));
        }
        let method = match self.method {
            None => return Err(invalid(usable_id, "a message needs a method, a result or an error")),
            Some(raw) => match serde_json::from_str::<Cow<'a, str>>(raw.get()) {
                Ok(m) => m,
                Err(_) => return Err(invalid(usable_id, "method must be a string")),
            },
        };
        match id {
            None => Ok(MessageKind::Notification { method, params: self.params }),
            Some(None) => Err(invalid(None, "request id must not be null")),
            Some(Some(id)) => Ok(MessageKind::Request { id, method, params: self.params }),
        }
    }

    /// A response: a result, an error, or a malformed one (with its id when readable).
    fn response(self) -> MessageKind<'a> {
        let id = match &self.id {
            Some(Some(IdValue::Valid(id))) => Some(id.clone()),
            _ => None,
        };
        let malformed = |reason: String| MessageKind::InvalidResponse { id: id.clone(), reason };
        if let Some(key) = self.repeated {
            return MessageKind::InvalidResponse { id: id.filter(|_| key != "id"), reason: repeated(key) };
        }
        if self.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
            return malformed("jsonrpc must be \"2.0\"".into());
        }
        if matches!(self.id, Some(Some(IdValue::Invalid))) {
            return malformed("id must be a string or an integer".into());
        }
        match (self.result, self.error) {
            (Some(_), Some(_)) => malformed("a response has either result or error, not both".into()),
            (Some(result), None) => match id {
                Some(id) => MessageKind::Result { id, result },
                None => malformed("a result response needs an id".into()),
            },
            (None, Some(error)) => match serde_json::from_str::<ErrorObject>(error.get()) {
                Ok(error) => MessageKind::Error { id, error },
                Err(e) => malformed(format!("malformed error object: {e}")),
            },
            (None, None) => malformed("a message needs a method, a result or an error".into()),
        }
    }
}

fn repeated(key: &str) -> String {
    format!("the key \"{key}\" appears more than once: each key of a message may appear once")
}

fn invalid(id: Option<RequestId>, reason: impl Into<String>) -> InvalidMessage {
    InvalidMessage { id, reason: reason.into() }
}

impl<'de: 'a, 'a> Deserialize<'de> for Envelope<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(EnvelopeVisitor(std::marker::PhantomData))
    }
}

struct EnvelopeVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for EnvelopeVisitor<'a> {
    type Value = Envelope<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'a>, A::Error> {
        /// The envelope's keys, matched where they are read (no key is copied out).
        #[derive(Deserialize)]
        #[serde(field_identifier, rename_all = "lowercase")]
        enum Key {
            Jsonrpc,
            Id,
            Method,
            Params,
            Result,
            Error,
            #[serde(other)]
            Other,
        }
        let mut env = Envelope::default();
        // The keys seen, one bit each, to notice one given twice.
        let mut seen = 0u8;
        while let Some(key) = map.next_key::<Key>()? {
            let (bit, name) = match key {
                Key::Jsonrpc => (1, "jsonrpc"),
                Key::Id => (2, "id"),
                Key::Method => (4, "method"),
                Key::Params => (8, "params"),
                Key::Result => (16, "result"),
                Key::Error => (32, "error"),
                Key::Other => (0, ""),
            };
            if seen & bit != 0 && env.repeated.is_none() {
                env.repeated = Some(name);
            }
            seen |= bit;
            match key {
                Key::Jsonrpc => env.jsonrpc = Some(map.next_value()?),
                Key::Id => env.id = Some(map.next_value::<Option<&'de RawValue>>()?.map(parse_id)),
                Key::Method => env.method = Some(map.next_value()?),
                Key::Params => env.params = Some(map.next_value()?),
                Key::Result => env.result = Some(map.next_value()?),
                Key::Error => env.error = Some(map.next_value()?),
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(env)
    }
}

fn parse_id(raw: &RawValue) -> IdValue {
    match serde_json::from_str::<RequestId>(raw.get()) {
        Ok(id) => IdValue::Valid(id),
        Err(_) => IdValue::Invalid,
    }
}

/// A typed JSON-RPC request, for building outbound messages and for tests.
///
/// `jsonrpc` and `id` are optional so that the spec's `InputRequest` shapes (a method and params
/// without an envelope) decode with the same type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest<P> {
    /// `"2.0"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jsonrpc: Option<JsonRpcVersion>,
    /// The request id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// The method.
    pub method: String,
    /// The params.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

/// A typed JSON-RPC notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcNotification<P> {
    /// `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The method.
    pub method: String,
    /// The params.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<P> JsonRpcNotification<P> {
    /// A notification of `method` with `params`.
    pub fn new(method: impl Into<String>, params: P) -> Self {
        JsonRpcNotification { jsonrpc: JsonRpcVersion, method: method.into(), params: Some(params) }
    }
}

/// A typed result response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResponse<R> {
    /// `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request answered.
    pub id: RequestId,
    /// The result.
    pub result: R,
}

/// An error response; `id` is `null` when the request's id could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcError {
    /// `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request answered, or `null`.
    pub id: Option<RequestId>,
    /// The error.
    pub error: ErrorObject,
}

impl JsonRpcError {
    /// An error response to `id`.
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        JsonRpcError { jsonrpc: JsonRpcVersion, id, error }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> Result<MessageKind<'_>, InvalidMessage> {
        serde_json::from_str::<Envelope>(s).unwrap().kind()
    }

    #[test]
    fn classifies_by_keys() {
        assert!(matches!(kind(r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#), Ok(MessageKind::Request { .. })));
        assert!(matches!(kind(r#"{"jsonrpc":"2.0","method":"x"}"#), Ok(MessageKind::Notification { .. })));
        assert!(matches!(kind(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#), Ok(MessageKind::Result { .. })));
        assert!(matches!(
            kind(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m"}}"#),
            Ok(MessageKind::Error { id: None, .. })
        ));
    }

    #[test]
    fn ids_keep_their_type() {
        let Ok(MessageKind::Request { id, .. }) = kind(r#"{"jsonrpc":"2.0","id":"1","method":"x"}"#) else { panic!() };
        assert_eq!(id, RequestId::String("1".into()));
        assert_ne!(id, RequestId::Number(1));
    }

    #[test]
    fn anything_with_result_or_error_and_no_method_is_a_response() {
        for text in [
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":"oops"}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":{"a":1},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1e400,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":[1],"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":null}"#,
        ] {
            let kind = kind(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            assert!(kind.is_response(), "{text}");
            assert!(matches!(kind, MessageKind::InvalidResponse { .. }), "{text}");
        }
        let Ok(MessageKind::InvalidResponse { id, .. }) = kind(r#"{"jsonrpc":"1.0","id":"s-1","result":{}}"#) else {
            panic!()
        };
        assert_eq!(id, Some(RequestId::String("s-1".into())), "the id is kept when readable");
        assert!(kind(r#"{"jsonrpc":"2.0","id":7,"result":null}"#).unwrap().is_response());
    }

    /// Whichever of two values another reader would take, this one takes neither.
    #[test]
    fn a_repeated_key_makes_the_message_invalid() {
        let request = kind(r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","method":"tools/call","params":{}}"#);
        let e = request.unwrap_err();
        assert_eq!(e.id, Some(RequestId::Number(4)), "the id is kept to answer");
        assert!(e.reason.contains("\"method\" appears more than once"), "{}", e.reason);
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{},"params":{"a":1}}"#,
        ] {
            let e = kind(text).unwrap_err();
            assert!(e.reason.contains("appears more than once"), "{text}: {}", e.reason);
            if text.contains(r#""id":2"#) {
                assert_eq!(e.id, None, "no one id to answer: {text}");
            }
        }
        // A response is still never answered: it is a malformed one.
        for text in
            [r#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#, r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#]
        {
            let Ok(MessageKind::InvalidResponse { reason, .. }) = kind(text) else { panic!("{text}") };
            assert!(reason.contains("appears more than once"), "{reason}");
        }
        // Keys the envelope does not read may repeat.
        assert!(kind(r#"{"jsonrpc":"2.0","id":1,"method":"x","x":1,"x":2}"#).is_ok());
    }

    #[test]
    fn rejects_null_and_fractional_ids_and_wrong_version() {
        assert!(kind(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).is_err());
        assert!(kind(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#).is_err());
        assert!(kind(r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#).is_err());
        assert!(kind(r#"{"id":1,"method":"x"}"#).is_err());
    }
}
