//! The functions a proxy hands its router (see [`crate::proxy`]): where `tasks/*` and
//! `completion/complete` go instead of the router's own.

use std::sync::Arc;

use super::context::RequestContext;
use super::tool::BoxFuture;
use crate::error::ToolError;

/// What [`ProxyRouter::forward_tasks`](crate::proxy::ProxyRouter::forward_tasks) is given: the
/// method, its params, the request's context.
pub type TaskForwarder = Arc<
    dyn Fn(String, serde_json::Value, RequestContext) -> BoxFuture<Result<serde_json::Value, mcp_types::ErrorObject>>
        + Send
        + Sync,
>;

/// What [`ProxyRouter::complete_with`](crate::proxy::ProxyRouter::complete_with) is given: the
/// request, and its context.
pub type CompletionForwarder = Arc<
    dyn Fn(
            mcp_types::completion::CompleteParams,
            RequestContext,
        ) -> BoxFuture<Result<mcp_types::completion::Completion, ToolError>>
        + Send
        + Sync,
>;
