//! Who may do what, declared on the router: the scopes of tools, resources, templates and
//! prompts, a minimum for the whole server, a scope hierarchy; and the middleware layers every
//! request goes through. The HTTP resource server ([`crate::auth`]) checks the scopes before a
//! request reaches the router; the router checks them again for any request that carries an
//! identity, so no transport can skip them.

use std::sync::{Arc, RwLockReadGuard};

use mcp_types::ErrorObject;
use serde_json::Value;

use super::context::RequestContext;
use super::reply::Reply;
use super::uri_template::UriTemplate;
use super::Router;
use crate::engine::raw::RawParams;
use crate::server::middleware::{self, Call, Middleware};
use crate::server::scopes::ScopeHierarchy;
use crate::server::scopes::ScopeRules;

fn owned(scopes: &[&str]) -> Vec<String> {
    scopes.iter().map(|s| s.to_string()).collect()
}

impl Router {
    /// Every request needs these scopes (`--auth-scope` adds to them).
    pub fn require_scopes(self, scopes: &[&str]) -> Self {
        self.add_required_scopes(scopes);
        self
    }

    /// [`Router::require_scopes`] on a shared router (the command line's `--auth-scope`).
    pub(crate) fn add_required_scopes(&self, scopes: &[&str]) {
        let mut rules = self.inner.scopes.write().unwrap();
        for scope in scopes {
            if !rules.minimum.iter().any(|s| s == scope) {
                rules.minimum.push(scope.to_string());
            }
        }
    }

    /// Calling tool `name` needs `scopes` (besides the minimum); the same as
    /// [`ToolDef::scopes`](super::ToolDef::scopes).
    pub fn tool_scopes(self, name: &str, scopes: &[&str]) -> Self {
        self.set_tool_scopes(name, owned(scopes));
        self
    }

    pub(crate) fn set_tool_scopes(&self, name: &str, scopes: Vec<String>) {
        let mut rules = self.inner.scopes.write().unwrap();
        if scopes.is_empty() {
            rules.tools.remove(name);
        } else {
            rules.tools.insert(name.to_owned(), scopes);
        }
    }

    /// Reading (or subscribing to) the resource at `uri` needs `scopes`.
    pub fn resource_scopes(self, uri: &str, scopes: &[&str]) -> Self {
        self.inner.scopes.write().unwrap().resources.insert(uri.to_owned(), owned(scopes));
        self
    }

    /// Reading any resource the template `uri_template` matches needs `scopes`.
    pub fn template_scopes(self, uri_template: &str, scopes: &[&str]) -> Self {
        let template = UriTemplate::parse(uri_template).unwrap_or_else(|e| panic!("resource template: {e}"));
        self.inner.scopes.write().unwrap().templates.push((template, owned(scopes)));
        self
    }

    /// Getting prompt `name` needs `scopes`.
    pub fn prompt_scopes(self, name: &str, scopes: &[&str]) -> Self {
        self.inner.scopes.write().unwrap().prompts.insert(name.to_owned(), owned(scopes));
        self
    }

    /// How a granted scope implies needed ones, beyond equality (the spec asks servers to honour
    /// their scope hierarchies): `|granted, needed| needed.starts_with(&format!("{granted}:"))`.
    pub fn scope_hierarchy(self, implies: impl Fn(&str, &str) -> bool + Send + Sync + 'static) -> Self {
        let hierarchy: ScopeHierarchy = Arc::new(implies);
        self.inner.scopes.write().unwrap().hierarchy = Some(hierarchy);
        self
    }

    /// `tools/list` shows an authenticated caller only the tools its token may call.
    pub fn list_only_permitted_tools(self) -> Self {
        self.inner.scopes.write().unwrap().filter_tools = true;
        self
    }

    pub(crate) fn scope_rules(&self) -> RwLockReadGuard<'_, ScopeRules> {
        self.inner.scopes.read().unwrap()
    }

    /// Every scope declared on the router, sorted.
    pub fn declared_scopes(&self) -> Vec<String> {
        self.scope_rules().all()
    }

    /// Whether the caller of `cx` may call tool `name` (true without an authenticated caller).
    pub(crate) fn may_call_tool(&self, cx: &RequestContext, name: &str) -> bool {
        let Some(caller) = cx.caller() else { return true };
        let rules = self.scope_rules();
        rules.satisfied(caller.scopes(), &rules.required("tools/call", Some(name)))
    }

    /// Adds a middleware layer, inside those added before it.
    pub fn layer(self, layer: impl Middleware) -> Self {
        self.add_layer(layer);
        self
    }

    /// [`Router::layer`] on a shared router (before serving: the command line's limits).
    pub(crate) fn add_layer(&self, layer: impl Middleware) {
        let mut chain = self.inner.middleware.write().unwrap();
        let mut layers: Vec<Arc<dyn Middleware>> = chain.iter().cloned().collect();
        layers.push(Arc::new(layer));
        *chain = layers.into();
    }

    /// Runs one admitted request: its scopes checked when it carries an identity, then the
    /// middleware layers, then its handler (a panic anywhere becomes an internal error). With
    /// telemetry, all of it inside the request's SERVER span.
    pub(crate) async fn serve_request(
        &self,
        method: &str,
        raw: RawParams,
        cx: &RequestContext,
        modern: bool,
    ) -> Result<Reply, ErrorObject> {
        #[cfg(feature = "otel")]
        {
            // The handling is wrapped where it is made, not handed to a function: the future is
            // big, and each move of it is a copy (a third of what telemetry cost a stdio call
            // with sampling off, when it was moved into an `async fn` and again into its wrapper).
            use opentelemetry::trace::FutureExt as _;
            if !super::traced::wanted(cx) {
                return self.serve_checked(method, raw, cx, modern).await;
            }
            let op = super::traced::start(self, method, &raw, cx);
            let outcome = self.serve_checked(method, raw, cx, modern).with_context(op.context().clone()).await;
            super::traced::end(op, &outcome);
            outcome
        }
        #[cfg(not(feature = "otel"))]
        self.serve_checked(method, raw, cx, modern).await
    }

    /// [`Router::serve_request`] without telemetry.
    async fn serve_checked(
        &self,
        method: &str,
        raw: RawParams,
        cx: &RequestContext,
        modern: bool,
    ) -> Result<Reply, ErrorObject> {
        self.check_scopes(method, &raw, cx)?;
        let chain = self.inner.middleware.read().unwrap().clone();
        if chain.is_empty() {
            return self.handle_guarded(method, raw, cx, modern).await;
        }
        let call = Call::new(method, raw, cx, modern);
        let run = std::panic::AssertUnwindSafe(Box::pin(middleware::run_chain(self, &chain, call)));
        let outcome = futures_util::FutureExt::catch_unwind(run)
            .await
            .unwrap_or_else(|_| Err(ErrorObject::internal("internal error: the handler panicked")))?;
        Ok(super::era::finish(self, method, outcome, modern))
    }

    /// Passes a request the router has already answered (`initialize`) through the middleware
    /// layers, so they see it like any other; `answer` is what it comes to unless a layer says
    /// otherwise.
    pub(crate) async fn serve_answered(
        &self,
        method: &str,
        raw: RawParams,
        cx: &RequestContext,
        answer: Result<Value, ErrorObject>,
    ) -> Result<Value, ErrorObject> {
        let answer = answer.map(Reply::from);
        #[cfg(feature = "otel")]
        let outcome = if super::traced::wanted(cx) {
            use opentelemetry::trace::FutureExt as _;
            let op = super::traced::start(self, method, &raw, cx);
            let work = self.serve_answered_untraced(method, raw, cx, answer).with_context(op.context().clone());
            let outcome = work.await;
            super::traced::end(op, &outcome);
            outcome
        } else {
            self.serve_answered_untraced(method, raw, cx, answer).await
        };
        #[cfg(not(feature = "otel"))]
        let outcome = self.serve_answered_untraced(method, raw, cx, answer).await;
        outcome.map(Reply::into_value)
    }

    /// [`Router::serve_answered`] without telemetry.
    async fn serve_answered_untraced(
        &self,
        method: &str,
        raw: RawParams,
        cx: &RequestContext,
        answer: Result<Reply, ErrorObject>,
    ) -> Result<Reply, ErrorObject> {
        let chain = self.inner.middleware.read().unwrap().clone();
        if chain.is_empty() {
            return answer;
        }
        let call = Call::new(method, raw, cx, false);
        let run = std::panic::AssertUnwindSafe(Box::pin(middleware::run_answered(self, &chain, call, answer)));
        futures_util::FutureExt::catch_unwind(run)
            .await
            .unwrap_or_else(|_| Err(ErrorObject::internal("internal error: a middleware layer panicked")))
    }

    fn check_scopes(&self, method: &str, raw: &RawParams, cx: &RequestContext) -> Result<(), ErrorObject> {
        let rules = self.scope_rules();
        if rules.is_empty() {
            return Ok(());
        }
        let Some(caller) = cx.caller() else { return Ok(()) };
        let needed = rules.required(method, middleware::named_item(method, raw.text()).as_deref());
        if rules.satisfied(caller.scopes(), &needed) {
            return Ok(());
        }
        Err(ErrorObject::invalid_request(format!("insufficient scope: this request needs {}", needed.join(" ")))
            .with_data(serde_json::json!({"requiredScopes": needed})))
    }
}
