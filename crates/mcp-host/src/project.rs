//! What the host remembers per project (the working directory): the rules the person chose
//! ("always this tool", "always this server", denials), the servers disabled or trusted here, and
//! the fingerprints of tool definitions as they were when approved. One JSON file per project,
//! mode 0600, under `$MCP_HOST_STATE` (else `~/.config/mcp/projects`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::Digest as _;

/// The environment variable naming the directory of project files.
pub const STATE_ENV: &str = "MCP_HOST_STATE";

/// A tool definition as it was approved.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Approved {
    /// The SHA-256 of its name, description, schema and annotations.
    pub fingerprint: String,
    /// Its description then (to show what changed).
    pub description: String,
}

/// A project's file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProjectState {
    /// The project directory.
    #[serde(default)]
    pub path: String,
    /// Remembered allow rules (`server/tool`, `server/*`).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Remembered deny rules.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Servers disabled here.
    #[serde(default)]
    pub disabled: Vec<String>,
    /// Servers whose read-only hints are believed here.
    #[serde(default)]
    pub trusted: Vec<String>,
    /// Tool definitions as approved, by `server/tool`.
    #[serde(default)]
    pub approved: BTreeMap<String, Approved>,
    /// Servers allowed whole here ("always this server"): the fingerprint of all their tools
    /// then, by server. A server whose tools changed since is asked about again.
    #[serde(default)]
    pub servers_approved: BTreeMap<String, String>,
    /// Skills offered to the model here: the digest approved, by `server/skill`.
    #[serde(default)]
    pub skills: BTreeMap<String, String>,
}

/// A project and its file.
#[derive(Debug, Clone)]
pub struct Project {
    file: Option<PathBuf>,
    /// What is remembered.
    pub state: ProjectState,
}

fn state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(STATE_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from("."));
    config.join("mcp").join("projects")
}

impl Project {
    /// The project of `dir`, read from its file (empty if none yet, or unreadable: a warning).
    pub fn open(dir: &Path) -> Project {
        let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
        let path = canonical.to_string_lossy().into_owned();
        let digest = sha2::Sha256::digest(path.as_bytes());
        let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        let file = state_dir().join(format!("{name}.json"));
        let mut state: ProjectState = match std::fs::read(&file) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!("{}: {e}; starting afresh", file.display());
                ProjectState::default()
            }),
            Err(_) => ProjectState::default(),
        };
        state.path = path;
        Project { file: Some(file), state }
    }

    /// A project remembered nowhere (tests, `--no-remember`).
    pub fn ephemeral() -> Project {
        Project { file: None, state: ProjectState::default() }
    }

    /// Its file, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Writes the file (mode 0600, in a 0700 directory), whole.
    pub fn save(&self) -> std::io::Result<()> {
        let Some(file) = &self.file else { return Ok(()) };
        let dir = file.parent().unwrap_or(Path::new("."));
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
        let temp = file.with_extension(format!("tmp{}", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut out = options.open(&temp)?;
        std::io::Write::write_all(&mut out, &serde_json::to_vec_pretty(&self.state)?)?;
        std::fs::rename(temp, file)
    }

    /// Adds `value` to `list` if absent; whether it was.
    pub fn remember(list: &mut Vec<String>, value: &str) -> bool {
        if list.iter().any(|v| v == value) {
            return false;
        }
        list.push(value.to_owned());
        true
    }
}
