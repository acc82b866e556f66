//! [`Lists`]: the one handle through which a built router's tools, resources, templates and
//! prompts change while it serves, and through which subscribers hear of it. Every change is
//! announced to every connection: `notifications/*/list_changed` on legacy sessions, the
//! `subscriptions/listen` stream on 2026-07-28 requests.
//!
//! The [`Router`] itself is a builder (methods that take it and give it back) that ends in a
//! read-only catalog; [`Router::lists`] and [`RequestContext::lists`] give this handle on it.

use mcp_types::prompts::Prompt;
use mcp_types::resources::{Resource, ResourceTemplate};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;

use super::context::RequestContext;
use super::registry::Change;
use super::uri_template::UriTemplate;
use super::{prompt, resource, task_calls, tool, Router};
use super::{IntoContents, IntoPromptResult, IntoToolOutput, NoArgs, PromptHandler, ResourceHandler, ToolDef};
use super::{ToolError, ToolHandler};

/// Changes what a served [`Router`] lists: its tools, resources, templates and prompts, and the
/// scopes they need; tells clients subscribed to a resource that it changed; and subscribes to
/// these changes. Cheap to clone: it shares the router's catalog, so a change is seen by every
/// connection. From [`Router::lists`], or in a handler from [`RequestContext::lists`].
///
/// ```
/// use mcp::server::{NoArgs, RequestContext, Router, ToolDef, ToolError};
///
/// async fn hello(_: NoArgs, _cx: RequestContext) -> Result<String, ToolError> {
///     Ok("hello".into())
/// }
///
/// let router = Router::new().info("example", "1.0.0");
/// let lists = router.lists();
/// lists.add_tool(ToolDef::new("hello").description("Says hello."), hello);
/// assert!(lists.remove_tool("hello"));
/// ```
#[derive(Clone, Debug)]
pub struct Lists {
    router: Router,
}

impl Router {
    /// The handle that changes what this router lists while it serves (and subscribes to those
    /// changes); every clone of the router sees them.
    pub fn lists(&self) -> Lists {
        Lists { router: self.clone() }
    }
}

// Here rather than in `context.rs`: `Lists` names the handler traits, which sit above the
// context.
impl RequestContext {
    /// The lists of the router serving the request ([`Router::lists`]): to change them while it
    /// serves, or to tell subscribers a resource changed, each reaching every connection as its
    /// era's notification. `None` only for a context no router has served yet.
    pub fn lists(&self) -> Option<Lists> {
        self.router().map(Router::lists)
    }
}

impl Lists {
    /// Adds or replaces a tool while serving; connected clients are told the list changed.
    /// Returns `true` when a tool of that name was replaced.
    pub fn add_tool<H, Args, Out, St>(&self, def: ToolDef, handler: H) -> bool
    where
        H: ToolHandler<Args, Out, St>,
        St: 'static,
        Args: DeserializeOwned + JsonSchema + Send + 'static,
        Out: IntoToolOutput + Send + 'static,
    {
        let router = &self.router;
        let scopes = def.scopes.clone();
        let entry = tool::entry(def, handler);
        let jobs = entry.support.map(|_| task_calls::jobs::definitions(&entry.name, router.task_settings()));
        let entry_name = entry.name.clone();
        let mut registry = router.inner.registry.write().unwrap();
        let replaced = registry.tools.insert(entry.name.clone(), entry);
        router.set_tool_scopes(&entry_name, scopes.clone());
        for (def, job) in jobs.into_iter().flatten() {
            router.set_tool_scopes(&def.tool.name, scopes.clone());
            let mut generated = match job.action {
                crate::server::tasks::JobAction::List => tool::entry(def, job_placeholder),
                _ => tool::entry(def, job_id_placeholder),
            };
            generated.job = Some(job);
            registry.tools.insert(generated.name.clone(), generated);
        }
        drop(registry);
        router.announce(Change::Tools);
        replaced
    }

    /// Removes a tool while serving (and the job tools generated for it); `true` when it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        let mut registry = self.router.inner.registry.write().unwrap();
        let removed = registry.tools.remove(name);
        if removed {
            for suffix in ["_status", "_cancel", "_list"] {
                let generated = format!("{name}{suffix}");
                if registry.tools.get(&generated).is_some_and(|t| t.job.as_ref().is_some_and(|j| j.of == name)) {
                    registry.tools.remove(&generated);
                }
            }
        }
        drop(registry);
        if removed {
            self.router.announce(Change::Tools);
        }
        removed
    }

    /// Adds or replaces a static resource while serving; clients are told the list changed.
    pub fn add_resource<H, Out, St>(&self, def: Resource, handler: H) -> bool
    where
        H: ResourceHandler<(), Out, St>,
        St: 'static,
        Out: IntoContents + Send + 'static,
    {
        let handler = resource::erase(handler, def.mime_type.clone());
        let key = def.uri.clone();
        let entry = resource::ResourceEntry { def, handler };
        let replaced = self.router.inner.registry.write().unwrap().resources.insert(key, entry);
        self.router.announce(Change::Resources);
        replaced
    }

    /// Removes a static resource while serving.
    pub fn remove_resource(&self, uri: &str) -> bool {
        let removed = self.router.inner.registry.write().unwrap().resources.remove(uri);
        if removed {
            self.router.announce(Change::Resources);
        }
        removed
    }

    /// Adds or replaces a resource template while serving; clients are told the list changed.
    /// `Ok(true)` when one of that template was replaced; `Err` says why the template is not one.
    pub fn add_resource_template<H, P, Out, St>(&self, def: ResourceTemplate, handler: H) -> Result<bool, String>
    where
        H: ResourceHandler<P, Out, St>,
        St: 'static,
        P: DeserializeOwned + Send + 'static,
        Out: IntoContents + Send + 'static,
    {
        let template = UriTemplate::parse(&def.uri_template).map_err(|e| e.to_string())?;
        let handler = resource::erase(handler, def.mime_type.clone());
        let key = def.uri_template.clone();
        let entry = resource::TemplateEntry { def, template, handler };
        let replaced = self.router.inner.registry.write().unwrap().templates.insert(key, entry);
        self.router.announce(Change::Resources);
        Ok(replaced)
    }

    /// Removes a resource template while serving; `true` when it existed.
    pub fn remove_resource_template(&self, uri_template: &str) -> bool {
        let removed = self.router.inner.registry.write().unwrap().templates.remove(uri_template);
        if removed {
            self.router.announce(Change::Resources);
        }
        removed
    }

    /// Adds or replaces a prompt while serving; clients are told the list changed.
    pub fn add_prompt<H, Args, Out, St>(&self, def: Prompt, handler: H) -> bool
    where
        H: PromptHandler<Args, Out, St>,
        St: 'static,
        Args: DeserializeOwned + JsonSchema + Send + 'static,
        Out: IntoPromptResult + Send + 'static,
    {
        let name = def.name.clone();
        let entry = prompt::entry(def, handler); // its schema made before the lock is taken
        let replaced = self.router.inner.registry.write().unwrap().prompts.insert(name, entry);
        self.router.announce(Change::Prompts);
        replaced
    }

    /// Removes a prompt while serving; `true` when it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let removed = self.router.inner.registry.write().unwrap().prompts.remove(name);
        if removed {
            self.router.announce(Change::Prompts);
        }
        removed
    }

    /// [`Router::prompt_scopes`], [`Router::resource_scopes`] or [`Router::template_scopes`]
    /// while serving, for an item added or removed at run time: the scopes `item` needs from now
    /// on (none: the rule is removed). A template that does not parse is refused.
    pub fn set_item_scopes(&self, item: ScopedItem<'_>, scopes: &[String]) -> Result<(), String> {
        let mut rules = self.router.inner.scopes.write().unwrap();
        let keep = !scopes.is_empty();
        match item {
            ScopedItem::Prompt(name) if keep => drop(rules.prompts.insert(name.to_owned(), scopes.to_vec())),
            ScopedItem::Prompt(name) => drop(rules.prompts.remove(name)),
            ScopedItem::Resource(uri) if keep => drop(rules.resources.insert(uri.to_owned(), scopes.to_vec())),
            ScopedItem::Resource(uri) => drop(rules.resources.remove(uri)),
            ScopedItem::Template(source) => {
                rules.templates.retain(|(t, _)| t.as_str() != source);
                if keep {
                    rules.templates.push((UriTemplate::parse(source)?, scopes.to_vec()));
                }
            }
        }
        Ok(())
    }

    /// Tells clients subscribed to `uri` that its contents changed.
    pub fn notify_resource_updated(&self, uri: &str) {
        self.router.announce(Change::ResourceUpdated(uri.to_owned()));
    }

    /// Subscribes to the changes announced to clients (for transports and tests).
    pub fn changes(&self) -> broadcast::Receiver<Change> {
        self.router.inner.changes.subscribe()
    }
}

/// An item whose scopes [`Lists::set_item_scopes`] sets.
#[derive(Debug, Clone, Copy)]
pub enum ScopedItem<'a> {
    /// A prompt, by name.
    Prompt(&'a str),
    /// A resource, by URI.
    Resource(&'a str),
    /// A resource template, by its template text.
    Template(&'a str),
}

/// The handler of a generated job tool that takes no arguments; the engine answers these itself.
async fn job_placeholder(_: NoArgs, _cx: RequestContext) -> Result<String, ToolError> {
    Err(ToolError::new("job tools are answered by the engine"))
}

/// The same for the job tools that take a job id.
async fn job_id_placeholder(_: task_calls::jobs::JobId, _cx: RequestContext) -> Result<String, ToolError> {
    Err(ToolError::new("job tools are answered by the engine"))
}
