//! MCP middleware: layers around the RPC service, so they apply alike on stdio, Streamable HTTP
//! and the 2024-11-05 transport, and see what HTTP middleware cannot: the method, the tool,
//! resource or prompt named, the protocol era, the caller.
//!
//! A layer implements [`Middleware`]: it gets the [`Call`] and the [`Next`] layer, and returns
//! the outcome (a [`Reply`], or a JSON-RPC error), calling `next.run(call)` or not. Layers run in
//! the order they were added, the first outermost.
//!
//! ```
//! use mcp::middleware::{Call, Middleware, Next, Outcome};
//! use futures_util::future::BoxFuture;
//!
//! /// Refuses every tool whose name starts with `admin_` on weekends.
//! struct NoAdminOnWeekends;
//!
//! impl Middleware for NoAdminOnWeekends {
//!     fn handle<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> BoxFuture<'a, Outcome> {
//!         Box::pin(async move {
//!             let weekend = false; // your calendar here
//!             if weekend && call.method() == "tools/call" && call.name().is_some_and(|n| n.starts_with("admin_")) {
//!                 return Err(mcp::types::ErrorObject::invalid_params("admin tools rest on weekends"));
//!             }
//!             next.run(call).await
//!         })
//!     }
//! }
//!
//! let router = mcp::Router::new().layer(NoAdminOnWeekends);
//! ```
//!
//! Ready-made layers: [`AuditLog`], [`RateLimit`], [`Timeout`], [`ConcurrencyLimit`],
//! [`ResponseSizeLimit`]; every server binary sets them with flags (see [`crate::cli`]).

mod audit;
mod limits;
pub(crate) mod rate;

use std::sync::{Arc, OnceLock};

use futures_util::future::BoxFuture;
use mcp_types::{ErrorCode, ErrorObject, RequestId};

pub use audit::{close_all as close_audit_logs, dropped_lines as audit_lines_dropped, AuditLog};
pub use limits::{ConcurrencyLimit, ResponseSizeLimit, Timeout};
pub use rate::{refused_requests as rate_limit_refusals, RateLimit};

pub use crate::server::reply::Reply;

use crate::engine::raw::RawParams;
use crate::server::identity::Identity;
use crate::server::RequestContext;
use crate::Router;

/// What a request comes to: its result, or a JSON-RPC error.
pub type Outcome = Result<Reply, ErrorObject>;

/// The error code of a request refused by a rate limit (`data.retryAfterMs` says when to try
/// again). Outside the range JSON-RPC and MCP reserve, as the spec asks of application codes.
pub const RATE_LIMITED: ErrorCode = ErrorCode(429);
/// The error code of a request stopped by a timeout.
pub const TIMED_OUT: ErrorCode = ErrorCode(408);

/// A layer around the handling of requests.
pub trait Middleware: Send + Sync + 'static {
    /// Handles `call`, usually by passing it on with `next.run(call)`.
    fn handle<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> BoxFuture<'a, Outcome>;
}

/// One request on its way through the layers.
pub struct Call<'a> {
    method: &'a str,
    raw: RawParams,
    cx: &'a RequestContext,
    modern: bool,
    name: OnceLock<Option<String>>,
    account: OnceLock<String>,
}

impl<'a> Call<'a> {
    pub(crate) fn new(method: &'a str, raw: RawParams, cx: &'a RequestContext, modern: bool) -> Self {
        Call { method, raw, cx, modern, name: OnceLock::new(), account: OnceLock::new() }
    }

    /// The JSON-RPC method.
    pub fn method(&self) -> &str {
        self.method
    }

    /// What the request names: the tool of `tools/call`, the prompt of `prompts/get`, the URI of
    /// `resources/read` (and of subscriptions), the task of `tasks/*`.
    pub fn name(&self) -> Option<&str> {
        if let Some(named) = self.raw.named() {
            return Some(named); // the transport read it already
        }
        self.name.get_or_init(|| named_item(self.method, self.raw.text())).as_deref()
    }

    /// The params as the JSON text they arrived in (tool arguments included: handle with care).
    pub fn params_json(&self) -> Option<&str> {
        self.raw.text()
    }

    /// The request's context (its id, era, client, extensions).
    pub fn context(&self) -> &RequestContext {
        self.cx
    }

    /// The JSON-RPC id.
    pub fn request_id(&self) -> &RequestId {
        self.cx.request_id()
    }

    /// The protocol version of the request.
    pub fn protocol_version(&self) -> &str {
        self.cx.protocol_version()
    }

    /// Whether it is a 2026-07-28 (stateless) request.
    pub fn is_modern(&self) -> bool {
        self.modern
    }

    /// The authenticated caller (HTTP with a resource server).
    pub fn caller(&self) -> Option<Identity> {
        self.cx.caller()
    }

    /// The account the request counts against: the caller, the account header, the legacy
    /// session, or `local` (stdio).
    pub fn account(&self) -> String {
        self.account_str().to_owned()
    }

    /// [`Call::account`], borrowed.
    pub(crate) fn account_str(&self) -> &str {
        self.account.get_or_init(|| self.cx.account())
    }
}

/// The rest of the layers, then the router.
pub struct Next<'a> {
    router: &'a Router,
    rest: &'a [Arc<dyn Middleware>],
    /// What the request comes to when the router answered it before the layers ran
    /// (`initialize`); `None`: the router's handler runs last.
    answered: Option<Outcome>,
}

impl<'a> Next<'a> {
    /// Passes `call` on.
    pub fn run(self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        let Next { router, rest, answered } = self;
        match rest.split_first() {
            Some((first, rest)) => first.handle(call, Next { router, rest, answered }),
            None => match answered {
                Some(outcome) => Box::pin(std::future::ready(outcome)),
                None => Box::pin(router.handle(call.method, call.raw, call.cx, call.modern)),
            },
        }
    }
}

/// Runs `call` through `chain` and then `router`.
pub(crate) async fn run_chain(router: &Router, chain: &[Arc<dyn Middleware>], call: Call<'_>) -> Outcome {
    Next { router, rest: chain, answered: None }.run(call).await
}

/// Runs `call` through `chain`, ending in `answer` instead of a handler.
pub(crate) async fn run_answered(
    router: &Router,
    chain: &[Arc<dyn Middleware>],
    call: Call<'_>,
    answer: Outcome,
) -> Outcome {
    Next { router, rest: chain, answered: Some(answer) }.run(call).await
}

/// `ping` and `initialize`: the connection's own upkeep, never rate-limited nor queued behind
/// a concurrency limit (a refused handshake would leave a client with nothing to retry on).
pub fn is_upkeep(method: &str) -> bool {
    matches!(method, "ping" | "initialize")
}

/// The name or URI a request's params name, read as a string only if it is one (for
/// `completion/complete`, the prompt or resource its `ref` names), by the one reader of the
/// params' head ([`crate::server::head::ParamsHead`]): params it refuses (a repeated `name`...)
/// name nothing, and the request is refused when it is admitted.
pub(crate) fn named_item(method: &str, params: Option<&str>) -> Option<String> {
    if method == "completion/complete" {
        return completion_ref(params?);
    }
    crate::server::head::named_field(method)?;
    let head = crate::server::head::ParamsHead::read_text(params).ok()?;
    head.named(method).map(std::borrow::Cow::into_owned)
}

/// The prompt name or resource URI a completion's `ref` names.
fn completion_ref(params: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(rename = "ref", borrow)]
        reference: &'a serde_json::value::RawValue,
    }
    #[derive(serde::Deserialize)]
    struct Ref<'a> {
        #[serde(borrow, default)]
        name: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow, default)]
        uri: Option<&'a serde_json::value::RawValue>,
    }
    let params: Params<'_> = serde_json::from_str(params).ok()?;
    let reference: Ref<'_> = serde_json::from_str(params.reference.get()).ok()?;
    serde_json::from_str::<String>(reference.name.or(reference.uri)?.get()).ok()
}

/// A tool result telling the model why its call did not run to the end.
pub(crate) fn tool_error_result(text: String) -> Reply {
    Reply::tool(mcp_types::tools::CallToolResult::error(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_items_by_method() {
        assert_eq!(
            named_item("tools/call", Some(r#"{"name":"echo","arguments":{"name":"x"}}"#)).as_deref(),
            Some("echo")
        );
        assert_eq!(
            named_item("resources/read", Some(r#"{"name":"x","uri":"file:///a"}"#)).as_deref(),
            Some("file:///a")
        );
        assert_eq!(named_item("tools/call", Some(r#"{"name":5}"#)), None);
        assert_eq!(named_item("tools/list", Some("{}")), None);
        assert_eq!(named_item("tools/call", None), None);
        assert_eq!(
            named_item("tools/call", Some(r#"{"name":"a","name":"b"}"#)),
            None,
            "refused, not the first or last"
        );
        let complete = |r: &str| named_item("completion/complete", Some(&format!(r#"{{"ref":{r},"argument":{{}}}}"#)));
        assert_eq!(complete(r#"{"type":"ref/prompt","name":"greet"}"#).as_deref(), Some("greet"));
        assert_eq!(complete(r#"{"type":"ref/resource","uri":"file:///{p}"}"#).as_deref(), Some("file:///{p}"));
        assert_eq!(complete(r#"{"type":"ref/prompt"}"#), None);
    }
}
