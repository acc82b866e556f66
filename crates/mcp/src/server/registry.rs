//! The router's catalog of tools, resources, templates and prompts, changeable at run time.
//!
//! Each list keeps registration order (so `tools/list` is deterministic) and a name index. A
//! change is announced on a broadcast channel that connections turn into `list_changed`
//! notifications (legacy sessions) or listen-stream notifications (2026-07-28).

use std::collections::HashMap;
use std::sync::Arc;

use super::prompt::PromptEntry;
use super::resource::{ResourceEntry, TemplateEntry};
use super::tool::ToolEntry;

/// An ordered, name-indexed list of entries.
pub(crate) struct Catalog<E> {
    entries: Vec<Arc<E>>,
    index: HashMap<String, usize>,
}

impl<E> Default for Catalog<E> {
    fn default() -> Self {
        Catalog { entries: Vec::new(), index: HashMap::new() }
    }
}

impl<E> Catalog<E> {
    /// Adds or replaces the entry named `name`; `true` when it replaced one.
    pub fn insert(&mut self, name: String, entry: E) -> bool {
        match self.index.get(&name) {
            Some(&i) => {
                self.entries[i] = Arc::new(entry);
                true
            }
            None => {
                self.index.insert(name, self.entries.len());
                self.entries.push(Arc::new(entry));
                false
            }
        }
    }

    /// Removes the entry named `name`; `true` when there was one.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(i) = self.index.remove(name) else {
            return false;
        };
        self.entries.remove(i);
        for slot in self.index.values_mut() {
            if *slot > i {
                *slot -= 1;
            }
        }
        true
    }

    pub fn get(&self, name: &str) -> Option<Arc<E>> {
        self.index.get(name).map(|&i| self.entries[i].clone())
    }

    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<E>> {
        self.entries.iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Everything the router serves.
#[derive(Default)]
pub(crate) struct Registry {
    pub tools: Catalog<ToolEntry>,
    pub resources: Catalog<ResourceEntry>,
    pub templates: Catalog<TemplateEntry>,
    pub prompts: Catalog<PromptEntry>,
}

/// A change that clients may be told about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The list of tools changed.
    Tools,
    /// The list of prompts changed.
    Prompts,
    /// The list of resources or templates changed.
    Resources,
    /// The contents of one resource changed.
    ResourceUpdated(String),
}

impl Change {
    /// The notification method that announces this change.
    pub fn method(&self) -> &'static str {
        match self {
            Change::Tools => "notifications/tools/list_changed",
            Change::Prompts => "notifications/prompts/list_changed",
            Change::Resources => "notifications/resources/list_changed",
            Change::ResourceUpdated(_) => "notifications/resources/updated",
        }
    }

    /// The notification's params, with extra `_meta` if given.
    pub fn params(&self, meta: Option<serde_json::Map<String, serde_json::Value>>) -> serde_json::Value {
        let mut params = serde_json::Map::new();
        if let Change::ResourceUpdated(uri) = self {
            params.insert("uri".into(), uri.clone().into());
        }
        if let Some(meta) = meta {
            params.insert("_meta".into(), meta.into());
        }
        serde_json::Value::Object(params)
    }
}
