//! The gateway's configuration: an `mcpServers` file (Claude Desktop's and Claude Code's
//! format) with optional keys of ours per server: `allowTools`, `denyTools`, `prefix`,
//! `shared`, `scopes`, `toolScopes`, `promptScopes`, `resourceScopes`, and `disabled` as some
//! hosts write it.
//!
//! Every key of an entry is known or reported: a key of ours or one hosts are known to write is
//! taken; a key one edit away from one of those (`denyTool`, `comand`) is an error naming both,
//! because a misspelt filter would silently serve what it meant to hide; any other key is
//! named on stderr at start.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::names::{sanitized_prefix, Glob};
use crate::target::{self, Target};

/// The keys the gateway reads itself.
const OURS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "oauth",
    "sandbox",
    "disabled",
    "allowTools",
    "denyTools",
    "prefix",
    "shared",
    "scopes",
    "toolScopes",
    "promptScopes",
    "resourceScopes",
];

/// Keys hosts write in their entries that the gateway has no use for (Claude Code, VS Code,
/// Cursor, Cline, Windsurf, Zed, Continue): taken without a word.
const HOSTS: &[&str] = &[
    "type",
    "transport",
    "transportType",
    "timeout",
    "autoApprove",
    "alwaysAllow",
    "description",
    "name",
    "envFile",
    "enabled",
    "source",
    "serverUrl",
    "settings",
    "gallery",
    "version",
    "dev",
    "networkTimeout",
    "$schema",
];

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
    /// One connection for every downstream caller, multiplexed (the callers' ids are its own),
    /// instead of one per caller (legacy session or account) where the server can ask questions.
    pub shared: bool,
    /// The OAuth scopes a downstream token needs to use anything of this server: tools,
    /// prompts, resources, templates and completions.
    pub scopes: Vec<String>,
    /// More scopes for some tools (`toolScopes`: the server's own tool name → scopes).
    pub tool_scopes: BTreeMap<String, Vec<String>>,
    /// More scopes for some prompts (`promptScopes`: the server's own prompt name → scopes).
    pub prompt_scopes: BTreeMap<String, Vec<String>>,
    /// More scopes for some resources and templates (`resourceScopes`: URI or URI template →
    /// scopes).
    pub resource_scopes: BTreeMap<String, Vec<String>>,
}

impl UpstreamConfig {
    /// An entry with nothing but its target: every tool, no prefix, no scopes.
    pub fn plain(key: String, target: Target) -> UpstreamConfig {
        UpstreamConfig {
            key,
            target,
            prefix: String::new(),
            allow: Vec::new(),
            deny: Vec::new(),
            shared: false,
            scopes: Vec::new(),
            tool_scopes: BTreeMap::new(),
            prompt_scopes: BTreeMap::new(),
            resource_scopes: BTreeMap::new(),
        }
    }

    /// The scopes a downstream token needs to call the upstream's tool `name`.
    pub fn scopes_of(&self, name: &str) -> Vec<String> {
        with_item(&self.scopes, &self.tool_scopes, name)
    }

    /// The scopes a downstream token needs to get the upstream's prompt `name`.
    pub fn prompt_scopes_of(&self, name: &str) -> Vec<String> {
        with_item(&self.scopes, &self.prompt_scopes, name)
    }

    /// The scopes a downstream token needs to read the upstream's resource (or template) `uri`.
    pub fn resource_scopes_of(&self, uri: &str) -> Vec<String> {
        with_item(&self.scopes, &self.resource_scopes, uri)
    }

    /// Whether the upstream's tool `name` is served.
    pub fn serves_tool(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|g| g.matches(name)))
            && !self.deny.iter().any(|g| g.matches(name))
    }
}

fn with_item(all: &[String], items: &BTreeMap<String, Vec<String>>, name: &str) -> Vec<String> {
    let mut scopes = all.to_vec();
    for scope in items.get(name).into_iter().flatten() {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    scopes
}

/// The entries of `mcpServers` in the file's order (which decides who serves a name two
/// upstreams offer); a name given twice is an error.
fn servers_in_order(path: &Path) -> Result<Vec<(String, Value)>, String> {
    struct Ordered(Vec<(String, Value)>);
    impl<'de> serde::Deserialize<'de> for Ordered {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Entries;
            impl<'de> serde::de::Visitor<'de> for Entries {
                type Value = Ordered;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object of servers")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                    let mut entries: Vec<(String, Value)> = Vec::new();
                    while let Some((key, value)) = map.next_entry::<String, Value>()? {
                        if entries.iter().any(|(k, _)| *k == key) {
                            return Err(serde::de::Error::custom(format!("the server {key:?} is named twice")));
                        }
                        entries.push((key, value));
                    }
                    Ok(Ordered(entries))
                }
            }
            d.deserialize_map(Entries)
        }
    }
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(rename = "mcpServers")]
        servers: Option<Ordered>,
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file: File = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    file.servers.map(|o| o.0).ok_or_else(|| format!("{}: no \"mcpServers\" object", path.display()))
}

/// Reads the servers of `path`, in the file's order; an entry with `"disabled": true` is left
/// out. Unknown keys are named on stderr (a misspelt one of ours is an error).
pub fn load(path: &Path) -> Result<Vec<UpstreamConfig>, String> {
    let servers = servers_in_order(path)?;
    let mut upstreams = Vec::new();
    for (key, entry) in &servers {
        let fail = |e: String| format!("{}: server {key:?}: {e}", path.display());
        let Value::Object(fields) = entry else { return Err(fail(format!("an entry is an object, not {entry}"))) };
        for unknown in unknown_keys(fields).map_err(fail)? {
            eprintln!("mcp gateway: {}: server {key:?}: the key {unknown:?} is not read (ignored)", path.display());
        }
        if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        upstreams.push(upstream(key, entry).map_err(fail)?);
    }
    if upstreams.is_empty() {
        return Err(format!("{}: no servers to put behind the gateway", path.display()));
    }
    Ok(upstreams)
}

/// The keys of an entry that nobody reads; `Err` for one that is one edit away from a known
/// key (a misspelling).
pub fn unknown_keys(fields: &Map<String, Value>) -> Result<Vec<String>, String> {
    let mut unknown = Vec::new();
    for key in fields.keys().filter(|k| !OURS.contains(&k.as_str()) && !HOSTS.contains(&k.as_str())) {
        if let Some(meant) = OURS.iter().chain(HOSTS).find(|known| one_edit_apart(key, known)) {
            return Err(format!("unknown key {key:?}: did you mean {meant:?}?"));
        }
        unknown.push(key.clone());
    }
    Ok(unknown)
}

/// Whether `a` becomes `b` by one insertion, deletion, substitution or swap of neighbours
/// (ASCII case counts as a difference).
fn one_edit_apart(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a == b {
        return false;
    }
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a[prefix..], &b[prefix..]);
    match ra.len() as isize - rb.len() as isize {
        0 => ra[1..] == rb[1..] || (ra.len() >= 2 && ra[0] == rb[1] && ra[1] == rb[0] && ra[2..] == rb[2..]),
        1 => ra[1..] == *rb,
        -1 => *ra == rb[1..],
        _ => false,
    }
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
        prefix,
        allow: globs(entry, "allowTools")?,
        deny: globs(entry, "denyTools")?,
        shared: match entry.get("shared") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(format!("shared must be true or false, not {other}")),
        },
        scopes: strings(entry, "scopes")?,
        tool_scopes: scope_map(entry, "toolScopes")?,
        prompt_scopes: scope_map(entry, "promptScopes")?,
        resource_scopes: scope_map(entry, "resourceScopes")?,
        ..UpstreamConfig::plain(key.to_owned(), target)
    })
}

fn scope_map(entry: &Value, key: &str) -> Result<BTreeMap<String, Vec<String>>, String> {
    match entry.get(key) {
        None => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map.keys().map(|item| Ok((item.clone(), strings(&entry[key], item)?))).collect(),
        Some(other) => Err(format!("{key} must map names to scopes, not {other}")),
    }
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
            "prefix": "fs", "shared": true, "scopes": ["files:read"], "toolScopes": {"read_secret": "files:secret"},
            "promptScopes": {"review": ["files:review"]}, "resourceScopes": {"file:///{path}": "files:secret"}});
        let up = upstream("files server", &entry).unwrap();
        assert_eq!(up.prefix, "fs");
        assert!(up.shared);
        assert_eq!(up.scopes, ["files:read"]);
        assert_eq!(up.scopes_of("read_secret"), ["files:read", "files:secret"]);
        assert_eq!(up.scopes_of("list"), ["files:read"]);
        assert_eq!(up.prompt_scopes_of("review"), ["files:read", "files:review"]);
        assert_eq!(up.prompt_scopes_of("other"), ["files:read"]);
        assert_eq!(up.resource_scopes_of("file:///{path}"), ["files:read", "files:secret"]);
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
            (json!({"command": "s", "promptScopes": ["x"]}), "promptScopes"),
            (json!({"args": []}), "neither"),
        ] {
            let e = upstream("k", &entry).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn a_misspelt_key_is_an_error_naming_both_and_others_are_reported() {
        let keys = |v: Value| unknown_keys(v.as_object().unwrap());
        let e = keys(json!({"command": "s", "denyTool": ["x"]})).unwrap_err();
        assert!(e.contains("\"denyTool\"") && e.contains("\"denyTools\""), "{e}");
        for typo in ["comand", "allowtools", "promtScopes", "sahred", "urll", "ToolScopes"] {
            assert!(keys(json!({ typo: 1 })).is_err(), "{typo} is one edit from a key of ours");
        }
        let unknown = keys(json!({"command": "s", "type": "stdio", "autoApprove": [], "myNote": "x"})).unwrap();
        assert_eq!(unknown, ["myNote"]);
    }

    #[test]
    fn one_edit_means_one() {
        assert!(one_edit_apart("denyTool", "denyTools"));
        assert!(one_edit_apart("denyToolss", "denyTools"));
        assert!(one_edit_apart("denyTooks", "denyTools"));
        assert!(one_edit_apart("dneyTools", "denyTools"));
        assert!(!one_edit_apart("denyTools", "denyTools"));
        assert!(!one_edit_apart("deny", "denyTools"));
        assert!(!one_edit_apart("dnyTool", "denyTools"));
    }
}

#[cfg(test)]
mod file_tests {
    use super::*;

    #[test]
    fn servers_come_in_the_files_order_and_a_name_given_twice_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("servers.json");
        std::fs::write(&path, r#"{"mcpServers": {"zeta": {"command": "z"}, "alpha": {"command": "a"}}}"#).unwrap();
        let keys: Vec<String> = load(&path).unwrap().into_iter().map(|u| u.key).collect();
        assert_eq!(keys, ["zeta", "alpha"]);
        std::fs::write(&path, r#"{"mcpServers": {"a": {"command": "a"}, "a": {"command": "b"}}}"#).unwrap();
        assert!(load(&path).unwrap_err().contains("named twice"));
        std::fs::write(&path, r#"{"servers": {}}"#).unwrap();
        assert!(load(&path).unwrap_err().contains("mcpServers"));
    }
}
