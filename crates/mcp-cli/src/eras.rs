//! What `mcp` remembers between runs: each server's protocol era.
//!
//! The spec lets a client persist the era it detected for a server and re-probe when the
//! assumption fails (2026-07-28, versioning). A remembered legacy server gets `initialize` at
//! once, without a probe; a remembered modern server gets its request (unless it is a
//! `tools/call`) at once, alongside the `server/discover` that confirms the era. A wrong memory
//! costs a fallback, never a wrong answer (see `mcp::client::KnownEra`), and is corrected for the
//! next run; a connection that fails with a remembered era forgets it.
//!
//! A server is named by what makes it that server: a URL; a command with its arguments, the
//! entry's own `env` and `cwd`, and the working directory only when the command names a file
//! relative to it (`./server`, `python server.py`). Not the whole environment: a `cd`, a new
//! terminal tab or an unrelated variable is the same server.
//!
//! The file is `$XDG_CACHE_HOME/mcp/eras.json` (else `~/.cache/mcp/eras.json`): a JSON array
//! of `[server, era]` pairs, most recent last, at most [`MAX_SERVERS`]. It is written only when
//! something changed, through a temporary file renamed into place, merged with what other
//! processes wrote meanwhile. Any trouble reading or writing it just means nothing is remembered.
//! [`recall`], [`record`] and [`forget`] share one memory per process, so the gateway's children
//! of one upstream (one per legacy session) probe once between them.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use mcp::client::{KnownEra, StdioCommand};
use serde_json::{json, Value};

use crate::target::Target;

/// Servers remembered, at most; the least recently learned are forgotten first.
const MAX_SERVERS: usize = 256;
/// A server whose command line is longer than this is not remembered.
const MAX_KEY: usize = 4096;
/// A file larger than this is not read (it cannot be one of ours).
const MAX_FILE: u64 = 2 * MAX_SERVERS as u64 * MAX_KEY as u64;
/// The word stored for a legacy server (a modern one is stored as its version).
const LEGACY: &str = "legacy";

/// The remembered eras.
pub struct Eras {
    path: Option<PathBuf>,
    entries: Vec<(String, String)>,
}

/// This process's memory, read from the file at its first use.
static SHARED: Mutex<Option<Eras>> = Mutex::new(None);

/// The era remembered for `target`, if any.
pub fn recall(target: &Target) -> Option<KnownEra> {
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    shared.get_or_insert_with(Eras::load).get(&key(target))
}

/// Remembers `era` for `target`, in this process and in the file (if that changes anything).
pub fn record(target: &Target, era: &KnownEra) {
    update(|eras| eras.remember(key(target), era));
}

/// Forgets `target`'s era: a connection with it failed, so the next one probes afresh.
pub fn forget(target: &Target) {
    update(|eras| eras.forget(&key(target)));
}

/// Applies `change` to the file as it is now (other processes may have written it) and keeps the
/// result as this process's memory.
fn update(change: impl FnOnce(&mut Eras)) {
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    let path = shared.as_ref().map_or_else(default_path, |eras| eras.path.clone());
    let mut eras = Eras::load_from(path);
    change(&mut eras);
    *shared = Some(eras);
}

/// How `target` is named in the file (see the module's documentation).
pub fn key(target: &Target) -> String {
    match target {
        Target::Http(url, ..) => json!(["http", url]).to_string(),
        Target::Stdio(command) => stdio_key(command),
    }
}

fn stdio_key(command: &StdioCommand) -> String {
    // `./server`, or a word naming a file here (`python server.py`, `node dist/index.js`); not a
    // package name such as `@scope/server`.
    let relative = |word: &str| {
        let path = Path::new(word);
        word.starts_with("./")
            || word.starts_with("../")
            || (!word.starts_with('-') && path.is_relative() && path.exists())
    };
    let here = command.cwd.is_none() && (relative(&command.program) || command.args.iter().any(|a| relative(a)));
    let dir = command.cwd.clone().or_else(|| here.then(|| std::env::current_dir().ok()).flatten());
    json!(["stdio", command.program, command.args, command.env, dir]).to_string()
}

impl Eras {
    /// Reads the file in the user's cache directory.
    fn load() -> Eras {
        Eras::load_from(default_path())
    }

    /// Reads `path` (nothing remembered if it is missing, unreadable or not what it should be).
    fn load_from(path: Option<PathBuf>) -> Eras {
        let ours = |p: &&PathBuf| std::fs::metadata(p).is_ok_and(|m| m.len() <= MAX_FILE);
        let text = path.as_ref().filter(ours).and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
        let entries = serde_json::from_str::<Vec<(String, String)>>(&text).unwrap_or_default();
        Eras { path, entries }
    }

    /// The era remembered for `key`.
    fn get(&self, key: &str) -> Option<KnownEra> {
        let (_, era) = self.entries.iter().find(|(k, _)| k == key)?;
        Some(if era == LEGACY { KnownEra::Legacy } else { KnownEra::Modern(era.clone()) })
    }

    /// Forgets `key`, writing the file if it was remembered.
    fn forget(&mut self, key: &str) {
        let before = self.entries.len();
        self.entries.retain(|(k, _)| k != key);
        if self.entries.len() != before {
            let _ = self.save();
        }
    }

    /// Remembers `era` for `key`, writing the file if that changes anything.
    fn remember(&mut self, key: String, era: &KnownEra) {
        let word = match era {
            KnownEra::Modern(version) => version.clone(),
            KnownEra::Legacy => LEGACY.to_owned(),
        };
        if key.len() > MAX_KEY || self.entries.iter().any(|(k, e)| *k == key && *e == word) {
            return;
        }
        self.entries.retain(|(k, _)| *k != key);
        self.entries.push((key, word));
        let excess = self.entries.len().saturating_sub(MAX_SERVERS);
        self.entries.drain(..excess);
        let _ = self.save();
    }

    fn save(&self) -> std::io::Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        let dir = path.parent().expect("a file in a directory");
        std::fs::create_dir_all(dir)?;
        let temporary = dir.join(format!(".eras.{}.json", std::process::id()));
        let pairs: Vec<Value> = self.entries.iter().map(|(k, e)| json!([k, e])).collect();
        std::fs::write(&temporary, Value::Array(pairs).to_string())?;
        std::fs::rename(&temporary, path)
    }
}

fn default_path() -> Option<PathBuf> {
    cache_dir().map(|d| d.join("mcp").join("eras.json"))
}

fn cache_dir() -> Option<PathBuf> {
    let from = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    from("XDG_CACHE_HOME").or_else(|| from("HOME").map(|home| home.join(".cache")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(program: impl Into<String>) -> Target {
        Target::Stdio(StdioCommand::new(program))
    }

    #[test]
    fn a_server_is_its_command_and_its_own_env_not_the_shells_environment() {
        let npx = Target::Stdio(StdioCommand::new("npx").args(["-y", "@modelcontextprotocol/server-memory"]));
        let before = key(&npx);
        // What a `cd` or a new tab changes (OLDPWD, PWD, SHLVL...) is not part of the name...
        std::env::set_var("MCP_ERAS_TEST_UNRELATED", "changed");
        assert_eq!(key(&npx), before);
        // ...but the entry's own environment is, and so is the URL of an HTTP server.
        let Target::Stdio(command) = &npx else { unreachable!() };
        assert_ne!(key(&Target::Stdio(command.clone().env("MODE", "other"))), before);
        let http = |url: &str| Target::Http(url.into(), Vec::new(), Default::default());
        assert_ne!(key(&http("http://127.0.0.1:1/mcp")), key(&http("http://127.0.0.1:2/mcp")));
        // A command naming a file relative to the working directory is another server elsewhere.
        let relative = key(&stdio("./server"));
        assert!(relative.contains(&std::env::current_dir().unwrap().display().to_string()), "{relative}");
        assert!(!before.contains(&std::env::current_dir().unwrap().display().to_string()), "{before}");
    }

    #[test]
    fn remembers_changes_forgets_the_oldest_and_survives_a_reload() {
        let dir = std::env::temp_dir().join(format!("mcp-eras-test-{}", std::process::id()));
        let path = dir.join("eras.json");
        let mut eras = Eras { path: Some(path.clone()), entries: Vec::new() };
        let a = key(&stdio("server-a"));
        eras.remember(a.clone(), &KnownEra::Modern("2026-07-28".into()));
        eras.remember(a.clone(), &KnownEra::Legacy);
        for i in 0..MAX_SERVERS {
            eras.remember(key(&stdio(format!("server-{i}"))), &KnownEra::Legacy);
        }
        let reloaded = Eras::load_from(Some(path));
        assert_eq!(reloaded.entries.len(), MAX_SERVERS);
        assert_eq!(reloaded.get(&a), None, "the oldest was forgotten");
        assert_eq!(reloaded.get(&key(&stdio("server-0"))), Some(KnownEra::Legacy));
        let mut reloaded = reloaded;
        let long = key(&stdio("x".repeat(MAX_KEY)));
        reloaded.remember(long.clone(), &KnownEra::Legacy);
        assert_eq!(Eras::load_from(reloaded.path.clone()).get(&long), None, "too long to remember");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_damaged_file_means_nothing_remembered_and_is_replaced() {
        let dir = std::env::temp_dir().join(format!("mcp-eras-damaged-{}", std::process::id()));
        let path = dir.join("eras.json");
        std::fs::create_dir_all(&dir).unwrap();
        for junk in ["{not json", "[[1, 2]]", "\u{0}\u{ff}"] {
            std::fs::write(&path, junk).unwrap();
            let mut eras = Eras::load_from(Some(path.clone()));
            let a = key(&stdio("a"));
            assert_eq!(eras.get(&a), None);
            eras.remember(a.clone(), &KnownEra::Legacy);
            assert_eq!(Eras::load_from(Some(path.clone())).get(&a), Some(KnownEra::Legacy));
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
