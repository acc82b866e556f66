//! The gateway's configuration: an `mcpServers` file (Claude Desktop's and Claude Code's
//! format) with optional keys of ours per server: `allowTools`, `denyTools`, `prefix`,
//! `shared`, `scopes`, and `disabled` as some hosts write it.

use std::path::Path;

use serde_json::Value;

use super::names::{sanitized_prefix, Glob};
use crate::target::{self, Target};

/// One server behind the gateway.
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// Its key in `mcpServers`.
    pub key: String,
    /// Where it is: a command (stdio) or a URL.
    pub target: Target,
    /// What its tool and prompt names are prefixed with (`PREFIX__name`); empty: unchanged.
    pub prefix: String,
    /// Only tools matching one of these are served (all when empty).
    pub allow: Vec<Glob>,
    /// Tools matching one of these are never served.
    pub deny: Vec<Glob>,
    /// One child for every downstream client, multiplexed (the client's ids are its own), instead
    /// of a child per legacy session (stdio upstreams; 2026-07-28 requests, which have no
    /// session, share the child that lists).
    pub shared: bool,
    /// The OAuth scopes a downstream token needs to use this server's tools.
    pub scopes: Vec<String>,
    /// More scopes for some tools (`toolScopes`: the server's own tool name → scopes).
    pub tool_scopes: std::collections::BTreeMap<String, Vec<String>>,
}

impl UpstreamConfig {
    /// The scopes a downstream token needs to call the upstream's tool `name`.
    pub fn scopes_of(&self, name: &str) -> Vec<String> {
        let mut scopes = self.scopes.clone();
        scopes.extend(self.tool_scopes.get(name).into_iter().flatten().cloned());
        scopes
    }

    /// Whether the upstream's tool `name` is served.
    pub fn serves_tool(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|g| g.matches(name)))
            && !self.deny.iter().any(|g| g.matches(name))
    }
}

/// Reads the servers of `path`, in the file's order; an entry with `"disabled": true` is left out.
pub fn load(path: &Path) -> Result<Vec<UpstreamConfig>, String> {
    let servers = target::servers(path)?;
    let mut upstreams = Vec::new();
    for (key, entry) in &servers {
        if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        upstreams.push(upstream(key, entry).map_err(|e| format!("{}: server {key:?}: {e}", path.display()))?);
    }
    if upstreams.is_empty() {
        return Err(format!("{}: no servers to put behind the gateway", path.display()));
    }
    Ok(upstreams)
}

/// One entry.
pub fn upstream(key: &str, entry: &Value) -> Result<UpstreamConfig, String> {
    let target = target::entry_target(key, entry)?;
    let prefix = match entry.get("prefix") {
        None => sanitized_prefix(key),
        Some(Value::String(p)) if p.is_empty() || sanitized_prefix(p) == *p => p.clone(),
        Some(Value::String(p)) => return Err(format!("prefix {p:?} may hold only A-Z, a-z, 0-9, _, - and .")),
        Some(other) => return Err(format!("prefix must be a string, not {other}")),
    };
    Ok(UpstreamConfig {
        key: key.to_owned(),
        target,
        prefix,
        allow: globs(entry, "allowTools")?,
        deny: globs(entry, "denyTools")?,
        shared: match entry.get("shared") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(format!("shared must be true or false, not {other}")),
        },
        scopes: strings(entry, "scopes")?,
        tool_scopes: match entry.get("toolScopes") {
            None => Default::default(),
            Some(serde_json::Value::Object(map)) => map
                .keys()
                .map(|tool| Ok((tool.clone(), strings(&entry["toolScopes"], tool)?)))
                .collect::<Result<_, String>>()?,
            Some(other) => return Err(format!("toolScopes must map tool names to scopes, not {other}")),
        },
    })
}

fn strings(entry: &Value, key: &str) -> Result<Vec<String>, String> {
    match entry.get(key) {
        None => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(s.split_whitespace().map(str::to_owned).collect()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or(format!("{key} must list strings, not {v}")))
            .collect(),
        Some(other) => Err(format!("{key} must be a list of strings, not {other}")),
    }
}

fn globs(entry: &Value, key: &str) -> Result<Vec<Glob>, String> {
    Ok(strings(entry, key)?.iter().map(|p| Glob::new(p)).collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_entry_with_our_keys_parses() {
        let entry = json!({"command": "srv", "args": ["-x"], "allowTools": ["read_*", "list"], "denyTools": "read_secret",
            "prefix": "fs", "shared": true, "scopes": ["files:read"], "toolScopes": {"read_secret": "files:secret"}});
        let up = upstream("files server", &entry).unwrap();
        assert_eq!(up.prefix, "fs");
        assert!(up.shared);
        assert_eq!(up.scopes, ["files:read"]);
        assert_eq!(up.scopes_of("read_secret"), ["files:read", "files:secret"]);
        assert_eq!(up.scopes_of("list"), ["files:read"]);
        assert!(up.serves_tool("read_file") && up.serves_tool("list"));
        assert!(!up.serves_tool("read_secret") && !up.serves_tool("write_file"));
    }

    #[test]
    fn the_prefix_defaults_to_the_key_made_fit_for_a_name() {
        let up = upstream("my files/2", &json!({"url": "http://127.0.0.1:1/mcp"})).unwrap();
        assert_eq!(up.prefix, "my_files_2");
        assert!(up.serves_tool("anything"));
        let up = upstream("x", &json!({"command": "srv", "prefix": ""})).unwrap();
        assert_eq!(up.prefix, "");
    }

    #[test]
    fn bad_keys_are_refused_with_the_reason() {
        for (entry, why) in [
            (json!({"command": "s", "prefix": "a b"}), "prefix"),
            (json!({"command": "s", "shared": "yes"}), "shared"),
            (json!({"command": "s", "allowTools": [1]}), "allowTools"),
            (json!({"args": []}), "neither"),
        ] {
            let e = upstream("k", &entry).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
    }
}
