//! What a sandboxed server may do: the `"sandbox"` key of an `mcpServers` entry, read here, and
//! the same policy built from `mcp sandbox`'s flags.
//!
//! ```json
//! "sandbox": true
//! "sandbox": {"read": ["~/notes"], "write": ["./out"], "network": ["api.github.com", "*.example.com:443"],
//!             "env": ["GITHUB_TOKEN", "NODE_*"], "limits": {"memoryMiB": 1024, "processes": 64},
//!             "bestEffort": false}
//! ```
//!
//! Whatever the object names comes on top of the strict default: the system's libraries, the
//! command's own install, the directories named as its arguments or as roots, a private temporary
//! directory, no network, a scrubbed environment.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Where a sandboxed server may connect.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    /// Nowhere (the default).
    #[default]
    None,
    /// Only to these hosts, through the filtering proxy; every other path out is closed.
    Allow(Vec<HostPattern>),
    /// Anywhere (the network is not sandboxed).
    Any,
}

/// A host a sandboxed server may reach: `api.github.com`, `*.example.com` (any subdomain, not
/// the name itself), each with an optional `:port` (any port without one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    /// The name, lower case; a leading `*.` matches any subdomain.
    pub host: String,
    /// The only port allowed, if one is named.
    pub port: Option<u16>,
}

impl HostPattern {
    /// Reads `host`, `host:port`, `*.domain[:port]`, `[v6]:port`.
    pub fn parse(text: &str) -> Result<HostPattern, String> {
        let bad = || format!("network: {text:?} is not a host name, *.domain or either with :port");
        let (host, port) = match text.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(':') && (h.starts_with('[') || !h.contains(':')) => {
                (h, Some(p.parse::<u16>().map_err(|_| bad())?))
            }
            _ => (text, None),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        let name = host.strip_prefix("*.").unwrap_or(&host);
        let fits = |c: char| c.is_ascii_alphanumeric() || "-.:_".contains(c);
        if name.is_empty() || name.contains('*') || !name.chars().all(fits) || port == Some(0) {
            return Err(bad());
        }
        Ok(HostPattern { host, port })
    }

    /// Whether a request for `host:port` is allowed by this pattern.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase();
        let name_ok = match self.host.strip_prefix("*.") {
            Some(domain) => {
                host.len() > domain.len() + 1 && host.ends_with(domain) && {
                    host.as_bytes()[host.len() - domain.len() - 1] == b'.'
                }
            }
            None => host == self.host,
        };
        name_ok && self.port.is_none_or(|p| p == port)
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.port {
            Some(port) if self.host.contains(':') => write!(f, "[{}]:{port}", self.host),
            Some(port) => write!(f, "{}:{port}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

/// Resource limits (`setrlimit`), each unset for none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Writable private memory (`RLIMIT_DATA`), MiB: heaps and anonymous mappings.
    pub memory_mib: Option<u64>,
    /// Processes and threads of the server together (`RLIMIT_NPROC`, counted in its own user
    /// namespace).
    pub processes: Option<u64>,
    /// Open file descriptors (`RLIMIT_NOFILE`).
    pub open_files: Option<u64>,
    /// CPU seconds (`RLIMIT_CPU`): past them the kernel ends the process.
    pub cpu_seconds: Option<u64>,
    /// The largest file it may write (`RLIMIT_FSIZE`), MiB.
    pub file_size_mib: Option<u64>,
}

impl Default for Limits {
    /// Generous enough for Node and Python servers, tight enough to stop a fork bomb and a runaway
    /// allocation: 4 GiB of memory, 256 processes and threads, 4096 descriptors, no CPU limit (a
    /// server lives as long as its host).
    fn default() -> Self {
        Limits {
            memory_mib: Some(4096),
            processes: Some(256),
            open_files: Some(4096),
            cpu_seconds: None,
            file_size_mib: None,
        }
    }
}

/// A server's sandbox, as written; see the module's documentation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    /// Files and directories it may read (besides the defaults).
    pub read: Vec<PathBuf>,
    /// Files and directories it may read and write.
    pub write: Vec<PathBuf>,
    /// Files and directories whose programs it may run (and read).
    pub execute: Vec<PathBuf>,
    /// Where it may connect.
    pub network: Network,
    /// Environment variables passed through from ours (names, or globs such as `NODE_*`),
    /// besides the few every program needs.
    pub env: Vec<String>,
    /// Resource limits.
    pub limits: Limits,
    /// Run with what the kernel can enforce when it cannot enforce everything, saying what is
    /// missing on stderr (else such a start is refused).
    pub best_effort: bool,
    /// Directories named as the server's arguments (and roots) are readable and writable: on in
    /// the default; `"argumentsWritable": false` makes them read-only.
    pub arguments_writable: bool,
}

/// The keys of a `"sandbox"` object.
const KEYS: [&str; 8] = ["read", "write", "execute", "network", "env", "limits", "bestEffort", "argumentsWritable"];
const LIMIT_KEYS: [&str; 5] = ["memoryMiB", "processes", "openFiles", "cpuSeconds", "fileSizeMiB"];

impl Policy {
    /// The strict default of `mcp --sandbox` and `"sandbox": true`.
    pub fn strict() -> Policy {
        Policy { arguments_writable: true, ..Policy::default() }
    }

    /// The policy in a line, for people: `network none; read ~/docs; write /tmp/out; ...`.
    pub fn summary(&self) -> String {
        let list = |paths: &[PathBuf]| paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
        let mut parts = vec![match &self.network {
            Network::None => "no network".to_owned(),
            Network::Any => "any network".to_owned(),
            Network::Allow(hosts) => {
                format!("network only to {}", hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>().join(", "))
            }
        }];
        for (label, paths) in [("read", &self.read), ("write", &self.write), ("execute", &self.execute)] {
            if !paths.is_empty() {
                parts.push(format!("{label} {}", list(paths)));
            }
        }
        if !self.env.is_empty() {
            parts.push(format!("env {}", self.env.join(", ")));
        }
        let l = &self.limits;
        let limit = |v: Option<u64>, unit: &str| v.map_or("-".to_owned(), |n| format!("{n}{unit}"));
        parts.push(format!(
            "limits memory {} processes {} files {} cpu {}",
            limit(l.memory_mib, " MiB"),
            limit(l.processes, ""),
            limit(l.open_files, ""),
            limit(l.cpu_seconds, " s")
        ));
        if !self.arguments_writable {
            parts.push("arguments read-only".into());
        }
        if self.best_effort {
            parts.push("best effort".into());
        }
        parts.join("; ")
    }

    /// The policy of an `mcpServers` entry: `None` without a `"sandbox"` key or with `false`.
    /// `expand` reads `${VAR}` in strings (as the entry's other strings are read); paths may start
    /// with `~/`, and relative ones are taken from `base` (the entry's `cwd`, else ours).
    pub fn from_entry(
        entry: &Value,
        base: &Path,
        expand: &dyn Fn(&str) -> Result<String, String>,
    ) -> Result<Option<Policy>, String> {
        let fail = |e: String| format!("sandbox: {e}");
        match entry.get("sandbox") {
            None | Some(Value::Bool(false)) | Some(Value::Null) => Ok(None),
            Some(Value::Bool(true)) => Ok(Some(Policy::strict())),
            Some(Value::Object(object)) => Policy::from_object(object, base, expand).map(Some).map_err(fail),
            Some(other) => Err(fail(format!("must be true, false or an object, not {other}"))),
        }
    }

    fn from_object(
        object: &Map<String, Value>,
        base: &Path,
        expand: &dyn Fn(&str) -> Result<String, String>,
    ) -> Result<Policy, String> {
        if let Some(key) = object.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(format!("unknown key {key:?}; the keys are {}", KEYS.join(", ")));
        }
        let mut policy = Policy::strict();
        let paths = |key: &str| -> Result<Vec<PathBuf>, String> {
            strings(object, key)?.iter().map(|s| Ok(absolute(&expand(s)?, base))).collect()
        };
        policy.read = paths("read")?;
        policy.write = paths("write")?;
        policy.execute = paths("execute")?;
        policy.env = strings(object, "env")?;
        policy.network = match object.get("network") {
            None | Some(Value::Bool(false)) => Network::None,
            Some(Value::Bool(true)) => Network::Any,
            Some(Value::Array(_)) => Network::Allow(
                strings(object, "network")?.iter().map(|h| HostPattern::parse(h)).collect::<Result<_, _>>()?,
            ),
            Some(other) => return Err(format!("network must be true, false or a list of hosts, not {other}")),
        };
        if let Some(limits) = object.get("limits") {
            policy.limits = limits_from(limits)?;
        }
        policy.best_effort = flag(object, "bestEffort", false)?;
        policy.arguments_writable = flag(object, "argumentsWritable", true)?;
        Ok(policy)
    }
}

fn flag(object: &Map<String, Value>, key: &str, default: bool) -> Result<bool, String> {
    match object.get(key) {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(format!("{key} must be true or false, not {other}")),
    }
}

fn strings(object: &Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    match object.get(key) {
        None => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or(format!("{key} must list strings, not {v}")))
            .collect(),
        Some(other) => Err(format!("{key} must be a list of strings, not {other}")),
    }
}

fn limits_from(value: &Value) -> Result<Limits, String> {
    let Value::Object(object) = value else { return Err(format!("limits must be an object, not {value}")) };
    if let Some(key) = object.keys().find(|k| !LIMIT_KEYS.contains(&k.as_str())) {
        return Err(format!("unknown limit {key:?}; the limits are {}", LIMIT_KEYS.join(", ")));
    }
    let mut limits = Limits::default();
    for (key, slot) in [
        ("memoryMiB", &mut limits.memory_mib),
        ("processes", &mut limits.processes),
        ("openFiles", &mut limits.open_files),
        ("cpuSeconds", &mut limits.cpu_seconds),
        ("fileSizeMiB", &mut limits.file_size_mib),
    ] {
        match object.get(key) {
            None => {}
            Some(Value::Null) => *slot = None,
            Some(v) => {
                *slot = Some(
                    v.as_u64()
                        .filter(|n| *n > 0)
                        .ok_or(format!("limits.{key} must be a positive whole number or null, not {v}"))?,
                )
            }
        }
    }
    Ok(limits)
}

/// `text` as an absolute path: `~` is the home directory, a relative path is taken from `base`.
pub fn absolute(text: &str, base: &Path) -> PathBuf {
    let home = || std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"));
    let path = if text == "~" {
        home()
    } else if let Some(rest) = text.strip_prefix("~/") {
        home().join(rest)
    } else {
        PathBuf::from(text)
    };
    if path.is_absolute() {
        path
    } else {
        base.join(path)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(entry: Value) -> Result<Option<Policy>, String> {
        Policy::from_entry(&entry, Path::new("/base"), &|s| Ok(s.replace("${DIR}", "/from-env")))
    }

    #[test]
    fn true_is_the_strict_default_and_false_or_absent_is_none() {
        assert_eq!(parse(json!({"command": "x"})).unwrap(), None);
        assert_eq!(parse(json!({"sandbox": false})).unwrap(), None);
        let strict = parse(json!({"sandbox": true})).unwrap().unwrap();
        assert_eq!(strict, Policy::strict());
        assert_eq!(strict.network, Network::None);
        assert!(strict.arguments_writable && !strict.best_effort);
        assert_eq!(strict.limits.processes, Some(256));
    }

    #[test]
    fn an_object_adds_paths_hosts_variables_and_limits() {
        let policy = parse(json!({"sandbox": {"read": ["docs", "${DIR}/x"], "write": "/srv/out",
            "network": ["API.github.com", "*.example.com:443"], "env": ["GITHUB_TOKEN"],
            "limits": {"processes": 8, "cpuSeconds": 60, "memoryMiB": null}, "bestEffort": true}}))
        .unwrap()
        .unwrap();
        assert_eq!(policy.read, [PathBuf::from("/base/docs"), PathBuf::from("/from-env/x")]);
        assert_eq!(policy.write, [PathBuf::from("/srv/out")]);
        let Network::Allow(hosts) = &policy.network else { panic!("{:?}", policy.network) };
        assert!(hosts[0].matches("api.github.com", 443) && hosts[0].matches("API.GITHUB.COM.", 80));
        assert!(!hosts[0].matches("evil.api.github.com", 443));
        assert!(hosts[1].matches("a.example.com", 443) && hosts[1].matches("a.b.example.com", 443));
        assert!(!hosts[1].matches("example.com", 443) && !hosts[1].matches("a.example.com", 80));
        assert!(!hosts[1].matches("aexample.com", 443));
        assert_eq!(policy.limits.processes, Some(8));
        assert_eq!(policy.limits.cpu_seconds, Some(60));
        assert_eq!(policy.limits.memory_mib, None);
        assert_eq!(policy.limits.open_files, Some(4096));
        assert!(policy.best_effort);
    }

    #[test]
    fn mistakes_are_refused_with_the_key() {
        for (sandbox, why) in [
            (json!("yes"), "must be true, false or an object"),
            (json!({"reads": []}), "unknown key \"reads\""),
            (json!({"network": "example.com"}), "network must be"),
            (json!({"network": ["a b"]}), "not a host name"),
            (json!({"network": ["x:99999"]}), "not a host name"),
            (json!({"limits": {"processes": 0}}), "limits.processes"),
            (json!({"limits": {"threads": 1}}), "unknown limit"),
            (json!({"bestEffort": "yes"}), "bestEffort"),
            (json!({"read": [1]}), "read must list strings"),
        ] {
            let e = parse(json!({"sandbox": sandbox})).unwrap_err();
            assert!(e.starts_with("sandbox: ") && e.contains(why), "{e}");
        }
    }

    #[test]
    fn host_patterns_print_as_written() {
        for text in ["api.github.com", "*.example.com:443", "[::1]:8443", "127.0.0.1:80"] {
            assert_eq!(HostPattern::parse(text).unwrap().to_string(), text);
        }
    }
}
