//! State handed to handlers: [`Router::with_state`](super::Router::with_state) keeps a value, a
//! handler takes it as its first argument ([`State<S>`]) or asks its context for it
//! ([`RequestContext::state`](super::RequestContext::state)). No global, no closure cloning an
//! `Arc` into every tool.
//!
//! A router keeps one value per type. A handler that takes a `State<S>` the router was not given
//! answers with an internal error naming the type (a mistake of the server's author, found by
//! its first test).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// A handler's first argument: a clone of the value given to
/// [`Router::with_state`](super::Router::with_state). Keep `S` cheap to clone (an `Arc`, a pool
/// handle), as with axum's `State`.
///
/// ```
/// use std::sync::Arc;
/// use mcp::server::{RequestContext, Router, State, ToolError};
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct Lookup { code: String }
///
/// struct Directory { names: Vec<(String, String)> }
///
/// async fn lookup(State(dir): State<Arc<Directory>>, args: Lookup, _cx: RequestContext) -> Result<String, ToolError> {
///     let name = dir.names.iter().find(|(code, _)| *code == args.code).map(|(_, name)| name.clone());
///     name.ok_or_else(|| ToolError::new(format!("no entry {:?}: codes are two letters, like FR", args.code)))
/// }
///
/// let directory = Arc::new(Directory { names: vec![("FR".into(), "France".into())] });
/// let router = Router::new().with_state(directory).tool("lookup", "Names a country by its code.", lookup);
/// # drop(router);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct State<S>(pub S);

impl<S> std::ops::Deref for State<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.0
    }
}

/// Calls `handler` with a clone of the router's `S` (what a handler taking [`State<S>`] first
/// is given), or answers with the error naming the missing type: the one lookup the tool,
/// resource and prompt handlers share.
pub(crate) fn with_state<S, T, Fut>(
    cx: super::RequestContext,
    handler: impl FnOnce(State<S>, super::RequestContext) -> Fut,
) -> crate::util::BoxFuture<Result<T, super::ToolError>>
where
    S: Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<T, super::ToolError>> + Send + 'static,
{
    match cx.state::<S>() {
        Ok(state) => {
            let state = State(state.clone());
            Box::pin(handler(state, cx))
        }
        Err(e) => Box::pin(async move { Err(e) }),
    }
}

/// The values given to [`Router::with_state`](super::Router::with_state), one per type.
#[derive(Default)]
pub(crate) struct States {
    values: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl States {
    /// Keeps `value`; `false` when a value of its type was already kept (it is not replaced).
    pub(crate) fn insert<S: Send + Sync + 'static>(&mut self, value: S) -> bool {
        let id = TypeId::of::<State<S>>();
        if self.values.contains_key(&id) {
            return false;
        }
        self.values.insert(id, Arc::new(value));
        true
    }

    pub(crate) fn get<S: 'static>(&self) -> Option<&S> {
        self.values.get(&TypeId::of::<State<S>>()).and_then(|v| v.downcast_ref::<S>())
    }
}

impl std::fmt::Debug for States {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("States").field("count", &self.values.len()).finish()
    }
}
