//! The demo database: the embedded dataset written once to an SQLite file in the user's cache
//! (`$XDG_CACHE_HOME/crm-mcp/demo-<digest>.sqlite`, or `~/.cache/...`), named by a digest of the
//! data (taken by `build.rs`) and of the key and schema versions, so a new release builds a new
//! one; a running server never sees a half-written file (it is written aside and renamed).

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::dataset::Dataset;
use crate::normalize::KEY_VERSION;
use crate::store::sqlite;

fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("crm-mcp");
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(home).join(".cache").join("crm-mcp");
    }
    std::env::temp_dir().join("crm-mcp")
}

fn digest() -> String {
    let mut h = Sha256::new();
    for part in [KEY_VERSION, sqlite::SCHEMA_VERSION, env!("CARGO_PKG_VERSION"), env!("CRM_DEMO_DATA_DIGEST")] {
        h.update(part);
        h.update([0]);
    }
    h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The demo database's path, written first if it is not there yet.
pub fn ensure() -> Result<PathBuf, String> {
    let dir = cache_dir();
    let path = dir.join(format!("demo-{}.sqlite", digest()));
    if path.exists() {
        return Ok(path);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    match sqlite::create(&path, &Dataset::demo()) {
        Ok(()) => Ok(path),
        // Another process built it at the same moment.
        Err(_) if path.exists() => Ok(path),
        Err(e) => Err(e),
    }
}
