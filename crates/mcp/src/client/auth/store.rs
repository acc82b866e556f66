//! Where tokens and client registrations are kept between runs: one JSON file, mode 0600 (in a
//! 0700 directory), written whole and renamed into place. Tokens are keyed by authorization
//! server, resource and client; registrations by authorization server. A lock file serializes
//! the processes that change it, so two `mcp` processes needing a refresh at once make one
//! refresh request: the second finds the first's tokens when it gets the lock.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::register::Registered;
use super::token::Tokens;
use crate::net::oauth::canonical_resource;

/// The environment variable naming the store file.
pub const STORE_ENV: &str = "MCP_AUTH_FILE";

/// Tokens for one server.
#[derive(Clone, Serialize, Deserialize, PartialEq, Debug)]
pub struct StoredToken {
    /// The MCP server's URL, canonical.
    pub server_url: String,
    /// The resource the tokens are for.
    pub resource: String,
    /// The authorization server that issued them.
    pub issuer: String,
    /// The client they were issued to.
    pub client_id: String,
    /// Where to refresh them.
    pub token_endpoint: String,
    /// The tokens.
    pub tokens: Tokens,
    /// The DPoP key they are bound to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<String>,
}

/// The whole file.
#[derive(Default, Serialize, Deserialize)]
pub struct StoreFile {
    /// The format's version.
    #[serde(default)]
    pub version: u32,
    /// Registrations by issuer.
    #[serde(default)]
    pub clients: BTreeMap<String, Registered>,
    /// Tokens.
    #[serde(default)]
    pub tokens: Vec<StoredToken>,
}

impl StoreFile {
    /// The tokens for the server at `url`, if any.
    pub fn token_for(&self, url: &str) -> Option<&StoredToken> {
        let url = canonical_resource(url);
        self.tokens.iter().rev().find(|t| t.server_url == url)
    }

    /// Keeps `token`, replacing any for the same server, or the same issuer, resource and client.
    pub fn put_token(&mut self, token: StoredToken) {
        self.tokens.retain(|t| {
            t.server_url != token.server_url
                && !(t.issuer == token.issuer && t.resource == token.resource && t.client_id == token.client_id)
        });
        self.tokens.push(token);
    }

    /// Forgets the tokens for the server at `url`; whether there were any.
    pub fn remove_for(&mut self, url: &str) -> bool {
        let url = canonical_resource(url);
        let before = self.tokens.len();
        self.tokens.retain(|t| t.server_url != url);
        before != self.tokens.len()
    }
}

/// The store file.
#[derive(Debug, Clone)]
pub struct Store {
    path: PathBuf,
}

/// Holds the store's lock until dropped.
pub struct StoreLock {
    _file: std::fs::File,
}

impl Store {
    /// The store at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Store {
        Store { path: path.into() }
    }

    /// `$MCP_AUTH_FILE`, else `$XDG_CONFIG_HOME/mcp/oauth.json`, else `~/.config/mcp/oauth.json`.
    pub fn default_path() -> PathBuf {
        if let Some(path) = std::env::var_os(STORE_ENV).filter(|p| !p.is_empty()) {
            return PathBuf::from(path);
        }
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
            .unwrap_or_else(|| PathBuf::from("."));
        config.join("mcp").join("oauth.json")
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file (empty when there is none yet).
    pub fn load(&self) -> std::io::Result<StoreFile> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {e}", self.path.display()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StoreFile::default()),
            Err(e) => Err(e),
        }
    }

    /// Writes the file whole: to a temporary file (mode 0600), then renamed into place.
    pub fn save(&self, file: &StoreFile) -> std::io::Result<()> {
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        create_private_dir(dir)?;
        let temp = dir.join(format!(".{}.{}.tmp", file_name(&self.path), std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut out = options.open(&temp)?;
        let mut text = serde_json::to_vec_pretty(&StoreFile { version: 1, ..clone_file(file) })?;
        text.push(b'\n');
        out.write_all(&text)?;
        out.sync_all()?;
        std::fs::rename(&temp, &self.path)
    }

    /// Takes the store's lock (waiting up to 30 s for another process to let go).
    pub async fn lock(&self) -> std::io::Result<StoreLock> {
        self.lock_file("lock", Duration::from_secs(30)).await
    }

    /// Takes the lock of authorizations through a browser (waiting up to 10 minutes: another
    /// process's user may be signing in). Apart from the store's lock, which refreshes take.
    pub async fn lock_for_authorization(&self) -> std::io::Result<StoreLock> {
        self.lock_file("authorize.lock", Duration::from_secs(600)).await
    }

    async fn lock_file(&self, suffix: &str, wait: Duration) -> std::io::Result<StoreLock> {
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        create_private_dir(dir)?;
        let lock_path = dir.join(format!("{}.{suffix}", file_name(&self.path)));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&lock_path)?;
        let deadline = std::time::Instant::now() + wait;
        loop {
            if try_lock(&file)? {
                return Ok(StoreLock { _file: file });
            }
            if std::time::Instant::now() > deadline {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("{} stayed locked for {} s", lock_path.display(), wait.as_secs()),
                ));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

fn clone_file(file: &StoreFile) -> StoreFile {
    StoreFile { version: file.version, clients: file.clients.clone(), tokens: file.tokens.clone() }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| "oauth.json".into(), |n| n.to_string_lossy().into_owned())
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.exists() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// An exclusive advisory lock, without waiting; released when the file closes.
#[allow(unsafe_code)]
fn try_lock(file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::unix::io::AsRawFd as _;
    // SAFETY: flock on a file descriptor this function borrows; no memory is involved.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::WouldBlock {
        Ok(false)
    } else {
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(url: &str, issuer: &str) -> StoredToken {
        StoredToken {
            server_url: canonical_resource(url),
            resource: canonical_resource(url),
            issuer: issuer.into(),
            client_id: "c".into(),
            token_endpoint: format!("{issuer}/token"),
            tokens: Tokens {
                access_token: "at".into(),
                token_type: "Bearer".into(),
                refresh_token: Some("rt".into()),
                expires_at: None,
                issued_at: 0,
                scopes: vec![],
            },
            dpop_key: None,
        }
    }

    #[tokio::test]
    async fn saved_private_and_locked() {
        let dir = tempdir();
        let store = Store::at(dir.join("sub").join("oauth.json"));
        let mut file = store.load().unwrap();
        file.put_token(token("https://a.example/mcp/", "https://as"));
        file.put_token(token("https://a.example/mcp", "https://as"));
        assert_eq!(file.tokens.len(), 1, "one entry per server");
        store.save(&file).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(store.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(dir.join("sub")).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
        let again = store.load().unwrap();
        assert_eq!(again.token_for("HTTPS://a.example/mcp").unwrap().tokens.access_token, "at");
        let held = store.lock().await.unwrap();
        let other = std::fs::OpenOptions::new().write(true).open(dir.join("sub").join("oauth.json.lock")).unwrap();
        assert!(!try_lock(&other).unwrap(), "a second holder waits");
        drop(held);
        assert!(try_lock(&other).unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempdir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "mcp-store-test-{}-{}",
            std::process::id(),
            super::super::pkce::random_text(6)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
