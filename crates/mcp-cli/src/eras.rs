//! What `mcp` remembers between runs: each stdio server's protocol era.
//!
//! The spec lets a client persist the era it detected for a server and re-probe when the
//! assumption fails (2026-07-28, versioning). A remembered legacy server gets `initialize` at
//! once, without a probe that a legacy server ignoring unknown methods would answer only by a
//! 5 s timeout; a remembered modern server gets its request (unless it is a `tools/call`) at
//! once, alongside the `server/discover` that confirms the era. A wrong memory costs a fallback,
//! never a wrong answer (see `mcp::client::KnownEra`), and is corrected for the next run.
//!
//! The file is `$XDG_CACHE_HOME/mcp/eras.json` (else `~/.cache/mcp/eras.json`): a JSON array
//! of `[server, era]` pairs, most recent last, at most [`MAX_SERVERS`]. It is written only when
//! something changed, through a temporary file renamed into place. Any trouble reading or
//! writing it just means nothing is remembered.

use std::path::PathBuf;

use mcp::client::{KnownEra, StdioCommand};
use serde_json::{json, Value};

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

/// How a server is named in the file: its whole command (program, arguments, extra
/// environment), the directory it runs in (relative paths depend on it) and a digest of the
/// environment it inherits (a server may change with it, e.g. a variable that picks its mode), as
/// JSON.
pub fn key(command: &StdioCommand) -> String {
    let dir = command.cwd.clone().or_else(|| std::env::current_dir().ok());
    json!([command.program, command.args, command.env, dir, environment_digest()]).to_string()
}

/// FNV-1a over this process's environment, sorted: the same in every run from the same place.
fn environment_digest() -> String {
    let mut vars: Vec<_> = std::env::vars_os().collect();
    vars.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, value) in &vars {
        for byte in name.as_encoded_bytes().iter().chain(b"=").chain(value.as_encoded_bytes()).chain(b"\0") {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

impl Eras {
    /// Reads the file in the user's cache directory.
    pub fn load() -> Eras {
        Eras::load_from(cache_dir().map(|d| d.join("mcp").join("eras.json")))
    }

    /// Reads `path` (nothing remembered if it is missing, unreadable or not what it should be).
    fn load_from(path: Option<PathBuf>) -> Eras {
        let ours = |p: &&PathBuf| std::fs::metadata(p).is_ok_and(|m| m.len() <= MAX_FILE);
        let text = path.as_ref().filter(ours).and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
        let entries = serde_json::from_str::<Vec<(String, String)>>(&text).unwrap_or_default();
        Eras { path, entries }
    }

    /// The era remembered for `key`.
    pub fn get(&self, key: &str) -> Option<KnownEra> {
        let (_, era) = self.entries.iter().find(|(k, _)| k == key)?;
        Some(if era == LEGACY { KnownEra::Legacy } else { KnownEra::Modern(era.clone()) })
    }

    /// Remembers `era` for `key`, writing the file if that changes anything.
    pub fn remember(&mut self, key: String, era: &KnownEra) {
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

fn cache_dir() -> Option<PathBuf> {
    let from = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    from("XDG_CACHE_HOME").or_else(|| from("HOME").map(|home| home.join(".cache")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_changes_forgets_the_oldest_and_survives_a_reload() {
        let dir = std::env::temp_dir().join(format!("mcp-eras-test-{}", std::process::id()));
        let path = dir.join("eras.json");
        let mut eras = Eras { path: Some(path.clone()), entries: Vec::new() };
        let a = key(&StdioCommand::new("server-a"));
        eras.remember(a.clone(), &KnownEra::Modern("2026-07-28".into()));
        eras.remember(a.clone(), &KnownEra::Legacy);
        for i in 0..MAX_SERVERS {
            eras.remember(key(&StdioCommand::new(format!("server-{i}"))), &KnownEra::Legacy);
        }
        let reloaded = Eras::load_from(Some(path));
        assert_eq!(reloaded.entries.len(), MAX_SERVERS);
        assert_eq!(reloaded.get(&a), None, "the oldest was forgotten");
        assert_eq!(reloaded.get(&key(&StdioCommand::new("server-0"))), Some(KnownEra::Legacy));
        let mut reloaded = reloaded;
        let long = key(&StdioCommand::new("x".repeat(MAX_KEY)));
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
            let a = key(&StdioCommand::new("a"));
            assert_eq!(eras.get(&a), None);
            eras.remember(a.clone(), &KnownEra::Legacy);
            assert_eq!(Eras::load_from(Some(path.clone())).get(&a), Some(KnownEra::Legacy));
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
