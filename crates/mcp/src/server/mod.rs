//! The server side: a [`Router`] of tools, resources and prompts, served on any transport and in
//! every protocol era.
//!
//! ```no_run
//! use mcp::server::{RequestContext, Router, ToolError};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Echo { text: String }
//!
//! async fn echo(args: Echo, _cx: RequestContext) -> Result<String, ToolError> {
//!     Ok(args.text)
//! }
//!
//! let router = Router::new().info("example", "1.0.0").tool("echo", "Returns the text it is given.", echo);
//! ```

mod access;
pub(crate) mod bounded;
mod completion;
pub mod counters;
// The connection loop: served through `serve_connection` and `ServeOptions` (re-exported
// below); its other items are the transports', not an API.
#[doc(hidden)]
pub mod connection;
pub(crate) mod context;
mod dispatch;
pub(crate) mod era;
mod flat_schema;
mod handler_state;
pub(crate) mod head;
pub(crate) mod hooks;
pub mod identity;
mod lists;
pub mod middleware;
mod pagination;
mod params;
mod prompt;
mod registry;
pub mod reply;
mod resource;
pub mod schema;
pub mod scopes;
pub mod skills;
pub(crate) mod state;
#[cfg(any(test, feature = "fuzzing", not(feature = "jsonschema")))]
pub(crate) mod structural_schema;
mod task_calls;
pub mod tasks;
pub(crate) mod tool;
#[cfg(feature = "otel")]
pub(crate) mod traced;
pub mod uri_template;

use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use mcp_types::lifecycle::{Implementation, ListChangedCapability, ResourcesCapability, ServerCapabilities};
use mcp_types::prompts::Prompt;
use mcp_types::resources::{Resource, ResourceTemplate};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;

pub use completion::CompletionHandler;
pub use connection::{serve_connection, ServeOptions};
pub use context::{Elicitation, RequestContext};
pub use handler_state::State;
pub use identity::{Identity, Verified};
pub use lists::{Lists, ScopedItem};
pub use prompt::{IntoPromptResult, PromptHandler};
pub use registry::Change;
pub use reply::Reply;
pub use resource::{Blob, IntoContents, ResourceHandler, ResourceRequest, StreamedText};
pub use skills::Skill;
pub use tool::{BoxFuture, IntoToolOutput, Json, NoArgs, Rich, Structured, ToolDef, ToolHandler};

pub use crate::error::ToolError;
pub use mcp_types::logging::LoggingLevel as Level;

use crate::server::tasks::manager::TaskManager;
use crate::server::tasks::{MemoryStore, TaskConfig, TaskStore};
use completion::Completers;
use hooks::{CompletionForwarder, TaskForwarder};
use registry::Registry;
use state::StateKey;
use tool::RawToolHandler;

/// A set of tools, resources and prompts, and the server's identity: built with the methods
/// that take the router and give it back (`Router::new().info(..).tool(..)`), then served as a
/// read-only catalog. Cheap to clone: clones share the catalog. What it lists changes while it
/// serves only through the handle [`Router::lists`] gives ([`Lists`]), each change reaching every
/// connection as a `list_changed` notification.
#[derive(Clone)]
pub struct Router {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub config: Config,
    pub registry: RwLock<Registry>,
    pub completers: RwLock<Completers>,
    pub changes: broadcast::Sender<Change>,
    /// Where task records go (in memory unless set before the first task).
    pub task_store: OnceLock<Arc<dyn TaskStore>>,
    pub task_manager: OnceLock<Arc<TaskManager>>,
    /// Task settings given after the router was shared (see [`Router::set_task_settings`]).
    pub task_settings: OnceLock<TaskConfig>,
    /// Who may call what.
    pub scopes: RwLock<crate::server::scopes::ScopeRules>,
    /// The middleware layers, outermost first.
    pub middleware: RwLock<Arc<[Arc<dyn crate::server::middleware::Middleware>]>>,
    /// Told of every `resources/subscribe` and `resources/unsubscribe` (a server that watches).
    pub on_subscribe: OnceLock<SubscribeHook>,
    /// Answers `completion/complete` instead of the registered completers (a gateway's).
    pub completer: OnceLock<CompletionForwarder>,
    /// Answers `tasks/*` instead of this router's tasks (a gateway's).
    pub task_forwarder: OnceLock<TaskForwarder>,
    /// The skills served (SEP-2640).
    pub skills: RwLock<skills::Skills>,
}

/// What [`Router::on_subscribe`] is given: the URI, and whether it is subscribed (`true`) or
/// unsubscribed (`false`).
pub type SubscribeHook = Arc<dyn Fn(&str, bool) + Send + Sync>;

/// The server's `Implementation` as the results carry it (see [`Config::info_json`]).
pub(crate) type InfoForms = (serde_json::Value, serde_json::Value, std::sync::Arc<serde_json::value::RawValue>);

/// Settings fixed before serving.
pub(crate) struct Config {
    pub info: Implementation,
    /// `info` as JSON, made once for the `serverInfo` of every 2026-07-28 result: its name,
    /// version and title, and whole (for `server/discover`), as trees; and the first as text
    /// (for typed tool results).
    pub info_json: std::sync::OnceLock<InfoForms>,
    pub instructions: Option<String>,
    pub page_size: usize,
    pub cache_ttl: Duration,
    pub state_key: StateKey,
    pub state_ttl: Duration,
    pub max_subscriptions: usize,
    /// The most memory a value from the client (tool arguments, answers) may take as a tree.
    pub value_budget: usize,
    /// How long-running tools run.
    pub tasks: TaskConfig,
    /// The values handlers take as [`State`] (see [`Router::with_state`]).
    pub states: handler_state::States,
}

impl Default for Router {
    fn default() -> Self {
        Router::new()
    }
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let registry = self.inner.registry.read().unwrap();
        f.debug_struct("Router")
            .field("name", &self.inner.config.info.name)
            .field("tools", &registry.tools.len())
            .field("resources", &registry.resources.len())
            .field("prompts", &registry.prompts.len())
            .finish()
    }
}

impl Router {
    /// An empty router named after this crate.
    pub fn new() -> Self {
        let (changes, _) = broadcast::channel(64);
        Router {
            inner: Arc::new(Inner {
                config: Config {
                    info: Implementation::new("mcp-rs", env!("CARGO_PKG_VERSION")),
                    info_json: std::sync::OnceLock::new(),
                    instructions: None,
                    page_size: 100,
                    cache_ttl: Duration::ZERO,
                    state_key: StateKey::random(),
                    state_ttl: Duration::from_secs(600),
                    max_subscriptions: 1024,
                    value_budget: bounded::DEFAULT_BUDGET,
                    tasks: TaskConfig::default(),
                    states: handler_state::States::default(),
                },
                registry: RwLock::new(Registry::default()),
                completers: RwLock::new(Completers::default()),
                changes,
                task_store: OnceLock::new(),
                task_manager: OnceLock::new(),
                task_settings: OnceLock::new(),
                scopes: RwLock::new(Default::default()),
                middleware: RwLock::new(Arc::new([])),
                on_subscribe: OnceLock::new(),
                completer: OnceLock::new(),
                task_forwarder: OnceLock::new(),
                skills: RwLock::new(Default::default()),
            }),
        }
    }

    fn config_mut(&mut self) -> &mut Config {
        let config = &mut Arc::get_mut(&mut self.inner).expect("configure the router before cloning it").config;
        config.info_json = std::sync::OnceLock::new(); // made again from what is configured
        config
    }

    /// Keeps `state` for handlers: one taking [`State<S>`](State) as its first argument gets a
    /// clone of it, and any handler can ask [`RequestContext::state`]. One value per type (give
    /// several types for several values); keep it cheap to clone (an `Arc`, a pool). Panics when
    /// a value of this type was already given, or when the router was cloned before.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mcp::server::{NoArgs, RequestContext, Router, State, ToolError};
    ///
    /// struct Counter(std::sync::atomic::AtomicU64);
    ///
    /// async fn bump(State(counter): State<Arc<Counter>>, _: NoArgs, _cx: RequestContext) -> Result<String, ToolError> {
    ///     Ok(counter.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed).to_string())
    /// }
    ///
    /// let router = Router::new()
    ///     .with_state(Arc::new(Counter(Default::default())))
    ///     .tool("bump", "Counts the calls so far.", bump);
    /// # drop(router);
    /// ```
    pub fn with_state<S: Clone + Send + Sync + 'static>(mut self, state: S) -> Self {
        let added = self.config_mut().states.insert(state);
        assert!(added, "Router::with_state was given a {} twice", std::any::type_name::<S>());
        self
    }

    /// The server's name and version, as clients see them.
    pub fn info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        let info = &mut self.config_mut().info;
        info.name = name.into();
        info.version = version.into();
        self
    }

    /// What the server is, in a sentence: sent to clients (2025-11-25 and later) and shown by
    /// `--help`.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.config_mut().info.description = Some(text.into());
        self
    }

    /// The server's full identity (title, description, icons, website).
    pub fn implementation(mut self, info: Implementation) -> Self {
        self.config_mut().info = info;
        self
    }

    /// Guidance for the model on using this server.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.config_mut().instructions = Some(text.into());
        self
    }

    /// How many items a list page holds (default 100).
    pub fn page_size(mut self, n: usize) -> Self {
        self.config_mut().page_size = n.max(1);
        self
    }

    /// How long 2026-07-28 clients may cache lists and reads (`ttlMs`; default 0, always revalidate).
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.config_mut().cache_ttl = ttl;
        self
    }

    /// The key that seals `requestState` (2026-07-28). Random per process by default; give every
    /// instance behind a load balancer the same key so any of them can take a retry.
    pub fn state_key(mut self, key: [u8; 32]) -> Self {
        self.config_mut().state_key = StateKey::new(key);
        self
    }

    /// Replaces the `requestState` key, even while serving (every clone sees it): how a cluster
    /// node adopts the key its peers share (`--store redis`).
    #[cfg_attr(not(all(feature = "cli", feature = "redis")), allow(dead_code))] // --store redis
    pub(crate) fn set_state_key(&self, key: [u8; 32]) {
        self.inner.config.state_key.set(key);
    }

    /// The most memory a value from the client may take once parsed into a tree (default
    /// 16 MiB): the arguments of a tool whose schema is not flat, `inputResponses`. A larger one
    /// is refused with a message, so that a small text of many tiny objects (which take tens of
    /// times their size as a tree) cannot exhaust memory. Flat-schema arguments, the common case,
    /// are read in place and never become a tree.
    pub fn max_value_memory(mut self, bytes: usize) -> Self {
        self.config_mut().value_budget = bytes;
        self
    }

    /// How tools that may run long run: caps, lifetimes, grace period, job tools.
    pub fn task_config(mut self, config: TaskConfig) -> Self {
        self.config_mut().tasks = config;
        self
    }

    /// The task settings in force.
    pub fn task_settings(&self) -> &TaskConfig {
        self.inner.task_settings.get().unwrap_or(&self.inner.config.tasks)
    }

    /// Changes the task settings of a router already shared (the command line does this); only
    /// before the first task, `false` otherwise.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))] // --max-jobs-per-account, --task-ttl
    pub(crate) fn set_task_settings(&self, config: TaskConfig) -> bool {
        self.inner.task_manager.get().is_none() && self.inner.task_settings.set(config).is_ok()
    }

    /// Where task records are kept (in memory by default): a durable store (`SqliteStore` with
    /// the `sqlite` feature, `RedisTaskStore` with `redis`, or any [`TaskStore`]) keeps them
    /// across restarts; then call [`recover_tasks`](Self::recover_tasks) once at start-up.
    /// Panics when a store was already given.
    pub fn task_store(self, store: Arc<dyn TaskStore>) -> Self {
        assert!(self.set_task_store(store), "Router::task_store was given a store twice");
        self
    }

    /// [`Router::task_store`] on a router already shared (the command line does this): before
    /// the first task; `false` if a store was already in use.
    pub(crate) fn set_task_store(&self, store: Arc<dyn TaskStore>) -> bool {
        self.inner.task_store.set(store).is_ok()
    }

    /// The task manager (created on first use, in a tokio runtime).
    pub(crate) fn tasks(&self) -> &Arc<TaskManager> {
        self.inner.task_manager.get_or_init(|| {
            let store = self.inner.task_store.get_or_init(|| Arc::new(MemoryStore::new())).clone();
            TaskManager::new(store, self.task_settings().clone())
        })
    }

    /// Marks tasks that an earlier process left running as failed, with the reason (call once at
    /// start-up with a durable store). Returns how many.
    pub async fn recover_tasks(&self) -> Result<usize, crate::server::tasks::StoreError> {
        self.tasks().recover().await
    }

    /// Adds a tool: `name`, the description the model reads, and an async handler
    /// `(Args, RequestContext) -> Result<Out, ToolError>`.
    pub fn tool<H, Args, Out, St>(self, name: &str, description: &str, handler: H) -> Self
    where
        H: ToolHandler<Args, Out, St>,
        St: 'static,
        Args: DeserializeOwned + JsonSchema + Send + 'static,
        Out: IntoToolOutput + Send + 'static,
    {
        self.tool_def(ToolDef::new(name).description(description), handler)
    }

    /// Adds a tool with a full definition (title, annotations, icons).
    pub fn tool_def<H, Args, Out, St>(self, def: ToolDef, handler: H) -> Self
    where
        H: ToolHandler<Args, Out, St>,
        St: 'static,
        Args: DeserializeOwned + JsonSchema + Send + 'static,
        Out: IntoToolOutput + Send + 'static,
    {
        let name = def.tool.name.clone();
        let replaced = self.lists().add_tool(def, handler);
        assert!(!replaced, "tool {name:?} is registered twice");
        self
    }

    /// Adds or replaces a tool whose handler answers with the result's JSON itself (see
    /// [`RawToolHandler`]): for a gateway, which passes on what its upstream answered, a task
    /// included. Its arguments are not checked here. Returns `true` when one was replaced.
    pub(crate) fn add_raw_tool(&self, def: ToolDef, handler: RawToolHandler) -> bool {
        let scopes = def.scopes.clone();
        let entry = tool::raw_entry(def, handler);
        let name = entry.name.clone();
        let replaced = self.inner.registry.write().unwrap().tools.insert(name.clone(), entry);
        self.set_tool_scopes(&name, scopes);
        self.announce(Change::Tools);
        replaced
    }

    /// Sends every `tasks/*` request (get, update, cancel, result, list) to `forwarder` instead
    /// of this router's own tasks, and advertises the tasks extension to 2026-07-28 clients: for
    /// a gateway whose upstreams run the tasks. Set once, before serving.
    pub(crate) fn forward_tasks(self, forwarder: TaskForwarder) -> Self {
        let _ = self.inner.task_forwarder.set(forwarder);
        self
    }

    /// Adds a static resource at `uri`; the handler returns its contents.
    pub fn resource<H, Out, St>(self, uri: &str, name: &str, handler: H) -> Self
    where
        H: ResourceHandler<(), Out, St>,
        St: 'static,
        Out: IntoContents + Send + 'static,
    {
        let def = Resource { uri: uri.into(), name: name.into(), ..Default::default() };
        self.resource_def(def, handler)
    }

    /// Adds a static resource with a full definition (description, MIME type, size, ...).
    pub fn resource_def<H, Out, St>(self, def: Resource, handler: H) -> Self
    where
        H: ResourceHandler<(), Out, St>,
        St: 'static,
        Out: IntoContents + Send + 'static,
    {
        let uri = def.uri.clone();
        assert!(!self.lists().add_resource(def, handler), "resource {uri:?} is registered twice");
        self
    }

    /// Adds a family of resources named by an RFC 6570 URI template such as
    /// `"files://{path}"`; the handler receives the variables deserialized into `P`.
    pub fn resource_template<H, P, Out, St>(self, uri_template: &str, name: &str, handler: H) -> Self
    where
        H: ResourceHandler<P, Out, St>,
        St: 'static,
        P: DeserializeOwned + Send + 'static,
        Out: IntoContents + Send + 'static,
    {
        let def = ResourceTemplate { uri_template: uri_template.into(), name: name.into(), ..Default::default() };
        self.resource_template_def(def, handler)
    }

    /// Adds a resource template with a full definition.
    pub fn resource_template_def<H, P, Out, St>(self, def: ResourceTemplate, handler: H) -> Self
    where
        H: ResourceHandler<P, Out, St>,
        St: 'static,
        P: DeserializeOwned + Send + 'static,
        Out: IntoContents + Send + 'static,
    {
        let key = def.uri_template.clone();
        let replaced =
            self.lists().add_resource_template(def, handler).unwrap_or_else(|e| panic!("resource template: {e}"));
        assert!(!replaced, "resource template {key:?} is registered twice");
        self
    }

    /// Adds a prompt whose arguments are the fields of `Args` (all strings on the wire).
    pub fn prompt<H, Args, Out, St>(self, name: &str, description: &str, handler: H) -> Self
    where
        H: PromptHandler<Args, Out, St>,
        St: 'static,
        Args: DeserializeOwned + JsonSchema + Send + 'static,
        Out: IntoPromptResult + Send + 'static,
    {
        let def = Prompt { name: name.into(), description: Some(description.into()), ..Default::default() };
        self.prompt_def(def, handler)
    }

    /// Adds a prompt with a full definition (title, icons, explicit arguments).
    pub fn prompt_def<H, Args, Out, St>(self, def: Prompt, handler: H) -> Self
    where
        H: PromptHandler<Args, Out, St>,
        St: 'static,
        Args: DeserializeOwned + JsonSchema + Send + 'static,
        Out: IntoPromptResult + Send + 'static,
    {
        let name = def.name.clone();
        assert!(!self.lists().add_prompt(def, handler), "prompt {name:?} is registered twice");
        self
    }

    /// Completes the argument `argument` of the prompt `prompt`.
    pub fn complete_prompt_argument(self, prompt: &str, argument: &str, handler: impl CompletionHandler) -> Self {
        self.inner.completers.write().unwrap().add_prompt(prompt, argument, handler);
        self
    }

    /// Completes the variable `variable` of the resource template `uri_template`.
    pub fn complete_resource_argument(
        self,
        uri_template: &str,
        variable: &str,
        handler: impl CompletionHandler,
    ) -> Self {
        self.inner.completers.write().unwrap().add_resource(uri_template, variable, handler);
        self
    }

    /// Calls `hook` on every `resources/subscribe` (`true`) and `resources/unsubscribe`
    /// (`false`) a client sends, so that the server can start or stop watching the URI; the
    /// updates themselves go out through [`Lists::notify_resource_updated`].
    /// Set once; a second call is ignored.
    pub fn on_subscribe(self, hook: impl Fn(&str, bool) + Send + Sync + 'static) -> Self {
        let _ = self.inner.on_subscribe.set(Arc::new(hook));
        self
    }

    /// Answers every `completion/complete` with `completer` (an async function), for a server
    /// whose completions come from elsewhere (a gateway's upstreams). The reference is still
    /// checked to name a registered prompt, resource or template first. Set once.
    pub(crate) fn complete_with(self, completer: CompletionForwarder) -> Self {
        let _ = self.inner.completer.set(completer);
        self
    }

    fn announce(&self, change: Change) {
        let _ = self.inner.changes.send(change);
    }

    /// The arguments of tool `name` that are mirrored into HTTP headers (`x-mcp-header`), as
    /// (argument, header suffix, JSON type) triples.
    pub fn header_params(&self, name: &str) -> Vec<(String, String, String)> {
        let Some(tool) = self.inner.registry.read().unwrap().tools.get(name) else { return Vec::new() };
        let Some(serde_json::Value::Object(props)) = tool.def().input_schema.get("properties") else {
            return Vec::new();
        };
        props
            .iter()
            .filter_map(|(arg, schema)| {
                let header = schema.get("x-mcp-header")?.as_str()?.to_owned();
                let kind = schema.get("type").and_then(|t| t.as_str()).unwrap_or("string").to_owned();
                Some((arg.clone(), header, kind))
            })
            .collect()
    }

    /// The server's identity.
    pub fn implementation_info(&self) -> &Implementation {
        &self.inner.config.info
    }

    /// What this server offers in protocol `version`: [`Router::capabilities`], and task support
    /// when a tool may run long (`tasks` in 2025-11-25, the tasks extension in 2026-07-28).
    pub fn capabilities_for(&self, version: &str) -> ServerCapabilities {
        let mut caps = self.capabilities();
        let forwarded = self.inner.task_forwarder.get().is_some();
        let tasks = forwarded || self.inner.registry.read().unwrap().tools.iter().any(|t| t.support.is_some());
        if tasks && !forwarded && version == mcp_types::version::ProtocolVersion::V2025_11_25 {
            caps.tasks = Some(serde_json::json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}));
        } else if tasks && mcp_types::version::ProtocolVersion::MODERN.contains(&version) {
            let mut extensions = mcp_types::JsonObject::new();
            extensions.insert(mcp_types::tasks::EXTENSION_ID.into(), serde_json::json!({}));
            caps.extensions = Some(extensions);
        }
        if self.serves_skills() {
            caps.extensions
                .get_or_insert_with(Default::default)
                .insert(mcp_types::skills::EXTENSION_ID.into(), serde_json::json!({"directoryRead": true}));
        }
        caps
    }

    /// What this server offers, as advertised in `initialize` and `server/discover`.
    pub fn capabilities(&self) -> ServerCapabilities {
        let listed = Some(ListChangedCapability { list_changed: Some(true) });
        ServerCapabilities {
            tools: listed.clone(),
            prompts: listed,
            resources: Some(ResourcesCapability { subscribe: Some(true), list_changed: Some(true) }),
            logging: Some(Default::default()),
            completions: Some(Default::default()),
            ..Default::default()
        }
    }
}
