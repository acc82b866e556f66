//! Errors: what a handler returns when it fails ([`ToolError`]) and the library's own [`Error`].
//!
//! Three kinds never mix. A tool that fails returns a normal result with `isError: true` and a
//! message the model can act on. A protocol failure (unknown tool, bad params) is a JSON-RPC
//! error object. A failure of the library itself (IO, a closed connection) is an [`Error`].

use std::fmt;

use mcp_types::mrtr::InputRequests;
use mcp_types::{ErrorCode, ErrorObject};

/// A local error code: the server needs authorization this client may not start.
pub(crate) const AUTH_REQUIRED: ErrorCode = ErrorCode(-31010);
/// A local error code: authorization failed.
pub(crate) const AUTH_FAILED: ErrorCode = ErrorCode(-31011);

/// Why a handler did not produce its result.
///
/// In a tool, [`ToolError::new`] becomes an `isError: true` result whose text is the message: say
/// what went wrong and what to do instead. In a resource or prompt handler it becomes a JSON-RPC
/// error (-32603, or -32602 for [`ToolError::invalid_params`] and [`ToolError::not_found`]).
#[derive(Debug)]
pub struct ToolError {
    pub(crate) kind: ToolErrorKind,
}

#[derive(Debug)]
pub(crate) enum ToolErrorKind {
    /// A failure to report to the model.
    Message(String),
    /// A JSON-RPC error to answer with.
    Protocol(ErrorObject),
    /// The resource or prompt does not exist.
    NotFound(String),
    /// The handler needs input from the client first (2026-07-28 requests only).
    InputRequired { requests: InputRequests },
}

/// No random id or key could be made: the request is answered with a JSON-RPC error (-32603),
/// never with a guessable value.
impl From<crate::util::random::Unavailable> for ToolError {
    fn from(e: crate::util::random::Unavailable) -> Self {
        ToolError::protocol(e.into())
    }
}

impl ToolError {
    /// A failure explained to the model.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError { kind: ToolErrorKind::Message(message.into()) }
    }

    /// Answer the request with this JSON-RPC error instead of a result.
    pub fn protocol(error: ErrorObject) -> Self {
        ToolError { kind: ToolErrorKind::Protocol(error) }
    }

    /// Invalid params (-32602).
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::protocol(ErrorObject::invalid_params(message))
    }

    /// The resource or prompt asked for does not exist: -32602 (2026-07-28), -32002 (legacy).
    pub fn not_found(message: impl Into<String>) -> Self {
        ToolError { kind: ToolErrorKind::NotFound(message.into()) }
    }

    pub(crate) fn input_required(requests: InputRequests) -> Self {
        ToolError { kind: ToolErrorKind::InputRequired { requests } }
    }

    /// Whether this error only means "ask the client, then run again" (2026-07-28).
    pub fn is_input_required(&self) -> bool {
        matches!(self.kind, ToolErrorKind::InputRequired { .. })
    }

    /// The error as a JSON-RPC error object, for resource and prompt handlers.
    pub(crate) fn into_error_object(self, modern: bool) -> ErrorObject {
        match self.kind {
            ToolErrorKind::Message(m) => ErrorObject::internal(m),
            ToolErrorKind::Protocol(e) => e,
            ToolErrorKind::NotFound(m) if modern => ErrorObject::invalid_params(m),
            ToolErrorKind::NotFound(m) => ErrorObject::new(ErrorCode::RESOURCE_NOT_FOUND_LEGACY, m),
            ToolErrorKind::InputRequired { .. } => ErrorObject::internal("input required on a legacy request"),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ToolErrorKind::Message(m) | ToolErrorKind::NotFound(m) => f.write_str(m),
            ToolErrorKind::Protocol(e) => write!(f, "{e}"),
            ToolErrorKind::InputRequired { requests } => {
                write!(f, "input required: {}", requests.keys().cloned().collect::<Vec<_>>().join(", "))
            }
        }
    }
}

impl std::error::Error for ToolError {}

impl From<ErrorObject> for ToolError {
    fn from(e: ErrorObject) -> Self {
        ToolError::protocol(e)
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> Self {
        ToolError::new(e.to_string())
    }
}

impl From<String> for ToolError {
    fn from(m: String) -> Self {
        ToolError::new(m)
    }
}

impl From<&str> for ToolError {
    fn from(m: &str) -> Self {
        ToolError::new(m)
    }
}

/// An error of the library itself: IO, a closed connection, a peer that broke the protocol.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
}

#[derive(Debug)]
#[allow(dead_code)] // Closed, Protocol and Timeout come from the client side.
enum ErrorKind {
    Io(std::io::Error),
    Closed,
    Rpc(ErrorObject),
    Protocol(String),
    Timeout,
}

#[allow(dead_code)] // used by the client side
impl Error {
    pub(crate) fn closed() -> Self {
        Error { kind: ErrorKind::Closed }
    }
    pub(crate) fn protocol(message: impl Into<String>) -> Self {
        Error { kind: ErrorKind::Protocol(message.into()) }
    }
    pub(crate) fn timeout() -> Self {
        Error { kind: ErrorKind::Timeout }
    }
    /// The connection is closed.
    pub fn is_closed(&self) -> bool {
        matches!(self.kind, ErrorKind::Closed)
    }
    /// An IO error.
    pub fn is_io(&self) -> bool {
        matches!(self.kind, ErrorKind::Io(_))
    }
    /// The peer answered with a JSON-RPC error; see [`Error::rpc`].
    pub fn is_rpc(&self) -> bool {
        matches!(self.kind, ErrorKind::Rpc(_))
    }
    /// The peer broke the protocol.
    pub fn is_protocol(&self) -> bool {
        matches!(self.kind, ErrorKind::Protocol(_))
    }
    /// The request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, ErrorKind::Timeout)
    }
    /// The server needs authorization this client was not allowed to start (stored tokens
    /// only, or no way to reach the user): `mcp login` is the remedy.
    pub fn is_auth_required(&self) -> bool {
        matches!(&self.kind, ErrorKind::Rpc(e) if e.code == AUTH_REQUIRED)
    }
    /// Authorization was tried and failed (refused, misconfigured, unreachable).
    pub fn is_auth_failed(&self) -> bool {
        matches!(&self.kind, ErrorKind::Rpc(e) if e.code == AUTH_FAILED)
    }
    /// The JSON-RPC error the peer answered with.
    pub fn rpc(&self) -> Option<&ErrorObject> {
        match &self.kind {
            ErrorKind::Rpc(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Io(e) => write!(f, "io error: {e}"),
            ErrorKind::Closed => f.write_str("connection closed"),
            ErrorKind::Rpc(e) if e.code == AUTH_REQUIRED || e.code == AUTH_FAILED => f.write_str(&e.message),
            ErrorKind::Rpc(e) => write!(f, "peer answered with an error: {e}"),
            ErrorKind::Protocol(m) => write!(f, "protocol error: {m}"),
            ErrorKind::Timeout => f.write_str("request timed out"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            ErrorKind::Rpc(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error { kind: ErrorKind::Io(e) }
    }
}

impl From<ErrorObject> for Error {
    fn from(e: ErrorObject) -> Self {
        Error { kind: ErrorKind::Rpc(e) }
    }
}
