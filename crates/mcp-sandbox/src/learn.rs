//! What a watched run comes to: the attempts its plan refused (for `mcp doctor`), and a starting
//! policy from everything a learning run used beyond the strict default (`mcp sandbox --learn`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::journal::Journal;
use crate::observe::{Seen, Use};
use crate::plan::{install_root, Plan, PROXY_PORT};

/// `path` with symbolic links resolved (its parent's, for a path yet to be created).
fn real(path: &Path) -> Option<PathBuf> {
    path.canonicalize().ok().or_else(|| Some(path.parent()?.canonicalize().ok()?.join(path.file_name()?)))
}

fn beneath<'a>(path: &Path, mut roots: impl Iterator<Item = &'a PathBuf>) -> bool {
    roots.any(|root| path.starts_with(root) || real(root).is_some_and(|r| path.starts_with(r)))
}

/// Whether the plan grants `usage` of `path`.
fn granted(plan: &Plan, path: &Path, usage: Use) -> bool {
    let Some(path) = real(path) else { return true }; // nothing there: refused by nobody
    match usage {
        Use::Read => beneath(&path, plan.read.iter().chain(&plan.exec).chain(&plan.write).chain(&plan.devices)),
        Use::Write => beneath(&path, plan.write.iter().chain(&plan.devices)),
        Use::Execute => beneath(&path, plan.exec.iter()),
    }
}

/// Whether an attempt on `path` could have got past the path walk: reads of things that exist,
/// writes into directories that exist.
fn meaningful(path: &Path, usage: Use) -> bool {
    match usage {
        Use::Read | Use::Execute => path.exists(),
        Use::Write => path.exists() || path.parent().is_some_and(Path::exists),
    }
}

fn verb(usage: Use) -> &'static str {
    match usage {
        Use::Read => "read",
        Use::Write => "write",
        Use::Execute => "execute",
    }
}

/// Whether `path` lies in the directory of the private temporary directories (`own_tmp`'s parent,
/// which the plan lists) but not in `own_tmp`: a neighbour's, which no process is granted.
fn neighbours(own_tmp: &Path, path: &Path) -> bool {
    let (Some(shared), Some(path)) = (own_tmp.parent(), real(path)) else { return false };
    let inside = |dir: &Path| path.starts_with(dir) || real(dir).is_some_and(|d| path.starts_with(d));
    inside(shared) && !inside(own_tmp)
}

/// The attempts `plan` refused (`own_tmp`: the process's private temporary directory), one line
/// each.
pub fn refused(plan: &Plan, own_tmp: &Path, seen: &Seen) -> Vec<String> {
    let mut lines = Vec::new();
    for (path, usage) in &seen.paths {
        if meaningful(path, *usage) && (!granted(plan, path, *usage) || neighbours(own_tmp, path)) {
            lines.push(format!("{} {}", verb(*usage), path.display()));
        }
    }
    for address in &seen.connections {
        if !is_proxy(address) {
            lines.push(format!("connect {address} (directly, not through the proxy)"));
        }
    }
    lines
}

fn is_proxy(address: &str) -> bool {
    address == format!("127.0.0.1:{PROXY_PORT}")
}

/// Directories whose files are granted one by one (granting `/etc` would grant `/etc/shadow`).
const ONE_BY_ONE: [&str; 4] = ["/etc", "/proc", "/sys", "/dev"];

/// What to grant for `path`: a directory itself, a file's directory (the file itself under
/// `/etc`, `/proc`, `/sys` and `/dev`); under the home directory, the first level below it
/// (`~/.npm`, not a cache file deep inside).
fn grant_for(path: &Path, home: Option<&Path>) -> PathBuf {
    let system = ONE_BY_ONE.iter().any(|d| path.starts_with(d));
    let dir = if path.is_dir() || system { path.to_owned() } else { path.parent().unwrap_or(path).to_owned() };
    if let Some(home) = home {
        if let Ok(rest) = dir.strip_prefix(home) {
            if let Some(first) = rest.components().next() {
                return home.join(first);
            }
        }
    }
    dir
}

/// Keeps only the outermost of nested paths.
fn outermost(paths: BTreeSet<PathBuf>) -> Vec<String> {
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in paths {
        if !kept.iter().any(|k| path.starts_with(k)) {
            kept.push(path);
        }
    }
    kept.iter().map(|p| p.display().to_string()).collect()
}

/// The starting policy of a learning run (what it used that the strict default does not grant),
/// and notes for the person.
pub fn policy(plan: &Plan, seen: &Seen, journal: &Journal) -> (Value, Vec<String>) {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let (mut read, mut write, mut execute) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for (path, usage) in &seen.paths {
        if !meaningful(path, *usage) || granted(plan, path, *usage) {
            continue;
        }
        let Some(path) = real(path) else { continue };
        match usage {
            Use::Read => read.insert(grant_for(&path, home.as_deref())),
            Use::Write => write.insert(grant_for(&path, home.as_deref())),
            Use::Execute => execute.insert(install_root(&path)),
        };
    }
    let read: BTreeSet<PathBuf> = read.into_iter().filter(|r| !write.iter().any(|w| r.starts_with(w))).collect();
    let hosts: BTreeSet<String> =
        journal.events().0.into_iter().filter(|e| e.kind == "connect").map(|e| e.target).collect();
    let mut notes = Vec::new();
    let direct: Vec<&String> = seen.connections.iter().filter(|a| !is_proxy(a) && !a.starts_with("unix:")).collect();
    if !direct.is_empty() {
        notes.push(format!(
            "it tried to connect directly to {} (not through HTTPS_PROXY): give it \"network\": true, or make it honour the proxy variables",
            direct.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    let mut sandbox = serde_json::Map::new();
    for (key, list) in [("read", outermost(read)), ("write", outermost(write)), ("execute", outermost(execute))] {
        if !list.is_empty() {
            sandbox.insert(key.into(), json!(list));
        }
    }
    if !hosts.is_empty() {
        sandbox.insert("network".into(), json!(hosts));
    }
    (json!({ "sandbox": sandbox }), notes)
}
