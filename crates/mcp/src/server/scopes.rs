//! The scopes a request needs: a minimum for the whole server, plus those declared for the tool,
//! resource, template or prompt it names, and the hierarchy that lets a broader scope stand for
//! narrower ones.

use std::collections::HashMap;
use std::sync::Arc;

use crate::server::uri_template::UriTemplate;

/// Decides whether a granted scope implies a needed one (beyond equality, which always counts):
/// `|granted, needed| needed.starts_with(&format!("{granted}:"))` makes `files` imply
/// `files:read`.
pub type ScopeHierarchy = Arc<dyn Fn(&str, &str) -> bool + Send + Sync>;

/// The scope rules of a router.
#[derive(Default, Clone)]
pub(crate) struct ScopeRules {
    pub minimum: Vec<String>,
    pub tools: HashMap<String, Vec<String>>,
    pub resources: HashMap<String, Vec<String>>,
    pub templates: Vec<(UriTemplate, Vec<String>)>,
    pub prompts: HashMap<String, Vec<String>>,
    pub hierarchy: Option<ScopeHierarchy>,
    /// `tools/list` shows only the tools the caller's token may call.
    pub filter_tools: bool,
}

/// Adds `scopes` to `set`, keeping it free of duplicates.
fn add_all(set: &mut Vec<String>, scopes: &[String]) {
    for scope in scopes {
        if !set.contains(scope) {
            set.push(scope.clone());
        }
    }
}

impl ScopeRules {
    /// Whether any scope is declared at all.
    pub fn is_empty(&self) -> bool {
        self.minimum.is_empty()
            && self.tools.is_empty()
            && self.resources.is_empty()
            && self.templates.is_empty()
            && self.prompts.is_empty()
    }

    /// The scopes of the item a request names (not the minimum).
    fn of_item(&self, method: &str, name: Option<&str>) -> &[String] {
        let Some(name) = name else { return &[] };
        let resource = || {
            self.resources.get(name).or_else(|| {
                self.templates.iter().find(|(t, _)| t.matches(name).is_some() || t.as_str() == name).map(|(_, s)| s)
            })
        };
        let found = match method {
            "tools/call" => self.tools.get(name),
            "prompts/get" => self.prompts.get(name),
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => resource(),
            // Completing an argument of a prompt or template tells what it holds: its scopes.
            "completion/complete" => self.prompts.get(name).or_else(resource),
            _ => None,
        };
        found.map_or(&[], Vec::as_slice)
    }

    /// Every scope a request needs: the minimum and its item's.
    pub fn required(&self, method: &str, name: Option<&str>) -> Vec<String> {
        let mut needed = self.minimum.clone();
        add_all(&mut needed, self.of_item(method, name));
        needed
    }

    /// Adds to `needed` what one more message of a batch needs.
    #[cfg_attr(not(feature = "auth"), allow(dead_code))] // the resource server asks
    pub fn add_required(&self, needed: &mut Vec<String>, method: &str, name: Option<&str>) {
        add_all(needed, &self.required(method, name));
    }

    /// Whether `granted` covers `needed`.
    pub fn satisfied(&self, granted: &[String], needed: &[String]) -> bool {
        needed.iter().all(|need| {
            granted.iter().any(|g| g == need || self.hierarchy.as_ref().is_some_and(|implies| implies(g, need)))
        })
    }

    /// Every declared scope, for `scopes_supported`.
    pub fn all(&self) -> Vec<String> {
        let mut all = self.minimum.clone();
        let items = self.tools.values().chain(self.resources.values()).chain(self.prompts.values());
        for scopes in items.chain(self.templates.iter().map(|(_, s)| s)) {
            add_all(&mut all, scopes);
        }
        all.sort();
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn required_is_the_minimum_and_the_item() {
        let mut rules = ScopeRules { minimum: strings(&["mcp"]), ..Default::default() };
        rules.tools.insert("delete".into(), strings(&["files:write", "mcp"]));
        rules.templates.push((UriTemplate::parse("file:///{path}").unwrap(), strings(&["files:read"])));
        assert_eq!(rules.required("tools/call", Some("delete")), strings(&["mcp", "files:write"]));
        assert_eq!(rules.required("tools/call", Some("other")), strings(&["mcp"]));
        assert_eq!(rules.required("resources/read", Some("file:///a.txt")), strings(&["mcp", "files:read"]));
        assert_eq!(rules.required("tools/list", None), strings(&["mcp"]));
        assert_eq!(rules.all(), strings(&["files:read", "files:write", "mcp"]));
    }

    #[test]
    fn hierarchy_lets_a_broad_scope_stand_for_narrow_ones() {
        let mut rules = ScopeRules::default();
        assert!(!rules.satisfied(&strings(&["files"]), &strings(&["files:read"])));
        rules.hierarchy = Some(Arc::new(|granted: &str, needed: &str| needed.starts_with(&format!("{granted}:"))));
        assert!(rules.satisfied(&strings(&["files"]), &strings(&["files:read", "files:write"])));
        assert!(!rules.satisfied(&strings(&["files"]), &strings(&["mail:read"])));
        assert!(rules.satisfied(&strings(&[]), &strings(&[])));
    }
}
