//! Hooks for proxies: a server that passes on what other servers offer (`mcp gateway`,
//! `mcp bridge`). An ordinary server needs none of this: its handlers never see the protocol's
//! era, they ask with [`RequestContext::elicit`] and its kin, and their tools are typed.
//!
//! A proxy needs the wire underneath: to know the request's era ([`ProxyContext::is_modern`])
//! and its session ([`ProxyContext::session_ref`]); to ask its caller the questions an upstream
//! asked, under the upstream's own keys, in one round ([`ProxyContext::ask_all`]); to keep an
//! upstream's `requestState` in its own ([`ProxyContext::keep_in_state`]); to pass a result on
//! as the upstream wrote it, a task included ([`ProxyRouter::add_raw_tool`]); to hand `tasks/*`
//! and `completion/complete` to whoever holds them ([`ProxyRouter::forward_tasks`],
//! [`ProxyRouter::complete_with`]); and, on a client shared by several callers, to tell whose
//! request an upstream's question belongs to ([`tagged`], [`question_tag`]). Each trait is
//! implemented for the library's own type; bring it into scope with
//! `use mcp::proxy::ProxyContext as _;`.

use std::future::Future;

use mcp_types::JsonObject;
use serde_json::Value;

use crate::error::ToolError;
use crate::server::{RequestContext, Router, ToolDef};

pub use crate::server::context::SessionRef;
pub use crate::server::hooks::{CompletionForwarder, TaskForwarder};
pub use crate::server::tool::RawToolHandler;

#[cfg(feature = "client")]
pub use crate::client::{question_tag, tagged};

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::server::RequestContext {}
    impl Sealed for crate::server::Router {}
}

/// What a proxy reads and does through a request's context, beyond what a handler does.
pub trait ProxyContext: sealed::Sealed {
    /// Whether the request is a 2026-07-28 (stateless) one, whose questions are answered by a
    /// retry rather than by requests to the client.
    fn is_modern(&self) -> bool;

    /// The legacy session the request came on, as a handle that does not keep it alive (a
    /// gateway keeps a child process per session and ends it when the session ends). `None` for
    /// a 2026-07-28 request.
    fn session_ref(&self) -> Option<SessionRef>;

    /// Asks the client one question under a key of your choosing: `method` is
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`. On a legacy session this
    /// is a request to the client; on a 2026-07-28 request the answer comes from the retry's
    /// `inputResponses[key]`, or the call ends with `input_required` asking for it.
    fn ask_keyed(
        &self,
        key: &str,
        method: &str,
        params: Value,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send;

    /// Asks several `(key, method, params)` questions at once (one `input_required` round on
    /// 2026-07-28 requests; one request after another on a legacy session). Answers come back
    /// in the order asked.
    fn ask_all(
        &self,
        questions: Vec<(String, String, Value)>,
    ) -> impl Future<Output = Result<Vec<Value>, ToolError>> + Send;

    /// 2026-07-28: the answer the client sent for `key`, on this retry or an earlier round.
    fn input_response(&self, key: &str) -> Option<Value>;

    /// 2026-07-28: every answer the client sent with this retry and earlier rounds, by key.
    fn input_responses(&self) -> JsonObject;

    /// 2026-07-28: keeps `value` under `key` in the sealed `requestState` of the
    /// `input_required` this request ends with, so that the retry finds it with
    /// [`input_response`](Self::input_response) while the server keeps nothing (a gateway keeps
    /// its upstream's state there). Use a key no question has.
    fn keep_in_state(&self, key: &str, value: Value);

    /// 2026-07-28: whether this retry carried a `requestState` that this server issued and that
    /// verified (sealed, for this request, unexpired).
    fn has_request_state(&self) -> bool;
}

impl ProxyContext for RequestContext {
    fn is_modern(&self) -> bool {
        RequestContext::is_modern(self)
    }

    fn session_ref(&self) -> Option<SessionRef> {
        RequestContext::session_ref(self)
    }

    fn ask_keyed(
        &self,
        key: &str,
        method: &str,
        params: Value,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send {
        RequestContext::ask_keyed(self, key, method, params)
    }

    fn ask_all(
        &self,
        questions: Vec<(String, String, Value)>,
    ) -> impl Future<Output = Result<Vec<Value>, ToolError>> + Send {
        RequestContext::ask_all(self, questions)
    }

    fn input_response(&self, key: &str) -> Option<Value> {
        RequestContext::input_response(self, key)
    }

    fn input_responses(&self) -> JsonObject {
        self.answers()
    }

    fn keep_in_state(&self, key: &str, value: Value) {
        RequestContext::keep_in_state(self, key, value)
    }

    fn has_request_state(&self) -> bool {
        RequestContext::has_request_state(self)
    }
}

/// What a proxy sets on its router.
pub trait ProxyRouter: sealed::Sealed + Sized {
    /// Adds or replaces a tool whose handler answers with the result's JSON itself (see
    /// [`RawToolHandler`]): for a gateway, which passes on what its upstream answered, a task
    /// included. Its arguments are not checked here. Returns `true` when one was replaced.
    fn add_raw_tool(&self, def: ToolDef, handler: RawToolHandler) -> bool;

    /// Sends every `tasks/*` request (get, update, cancel, result, list) to `forwarder` instead
    /// of this router's own tasks, and advertises the tasks extension to 2026-07-28 clients: for
    /// a gateway whose upstreams run the tasks. Set once, before serving.
    fn forward_tasks(self, forwarder: TaskForwarder) -> Self;

    /// Answers every `completion/complete` with `completer` (an async function), for a server
    /// whose completions come from elsewhere (a gateway's upstreams). The reference is still
    /// checked to name a registered prompt, resource or template first. Set once.
    fn complete_with(self, completer: CompletionForwarder) -> Self;
}

impl ProxyRouter for Router {
    fn add_raw_tool(&self, def: ToolDef, handler: RawToolHandler) -> bool {
        Router::add_raw_tool(self, def, handler)
    }

    fn forward_tasks(self, forwarder: TaskForwarder) -> Self {
        Router::forward_tasks(self, forwarder)
    }

    fn complete_with(self, completer: CompletionForwarder) -> Self {
        Router::complete_with(self, completer)
    }
}
