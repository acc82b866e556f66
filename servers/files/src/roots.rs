//! Which directories apply to a request: those of the command line, narrowed by the client's
//! roots when it offers some, or the client's roots alone when none were given.
//!
//! A client root inside a configured directory is opened *beneath* it, so the kernel decides it
//! is inside; one outside is ignored and said so. Client roots never widen or replace the
//! configured set: when none of them lies inside, the configured directories apply as given.
//! On a legacy session the roots are listed once and again after `roots/list_changed`; a
//! 2026-07-28 request is asked for them (`input_required`) only when no directory was configured,
//! since that revision deprecates roots.

use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use mcp::proxy::ProxyContext as _;
use mcp::server::{RequestContext, ToolError};
use mcp::types::roots::Root as ClientRoot;

use crate::paths::{locate, no_roots};
use crate::sandbox::{Policy, Root};

/// The directories that apply, and why.
#[derive(Debug)]
pub struct Allowed {
    /// The roots, in order (relative paths resolve in the first).
    pub roots: Vec<Arc<Root>>,
    /// What happened to client roots that do not apply.
    pub notes: Vec<String>,
}

/// The configured directories and the last client roots seen.
pub struct Roots {
    configured: Arc<Allowed>,
    policy: Policy,
    cache: Mutex<Option<(Vec<String>, Arc<Allowed>)>>,
    last: Mutex<Arc<Allowed>>,
}

impl Roots {
    /// Over the command line's directories (opened already).
    pub fn new(configured: Vec<Arc<Root>>, policy: Policy) -> Roots {
        let configured = Arc::new(Allowed { roots: configured, notes: Vec::new() });
        Roots { last: Mutex::new(configured.clone()), configured, policy, cache: Mutex::new(None) }
    }

    /// The set the last request used (for resource subscriptions, which carry no request).
    pub fn last(&self) -> Arc<Allowed> {
        self.last.lock().unwrap().clone()
    }

    /// The set that applies to the request `cx`.
    pub async fn allowed(&self, cx: &RequestContext) -> Result<Arc<Allowed>, ToolError> {
        let offers = cx.client_capabilities().roots.is_some();
        let configured = !self.configured.roots.is_empty();
        if !offers || (configured && cx.is_modern()) {
            if !configured {
                return Err(ToolError::new(no_roots()));
            }
            return Ok(self.configured.clone());
        }
        let listed = match cx.roots_cached().await {
            Ok(listed) => listed,
            Err(e) if e.is_input_required() => return Err(e),
            Err(e) if configured => {
                tracing_note(&format!(
                    "the client's roots could not be listed ({e:?}); the configured directories apply"
                ));
                return Ok(self.configured.clone());
            }
            Err(e) => return Err(e),
        };
        let key: Vec<String> = listed.roots.iter().map(|r| r.uri.clone()).collect();
        if let Some((cached_key, allowed)) = &*self.cache.lock().unwrap() {
            if *cached_key == key {
                return Ok(self.remember(allowed.clone()));
            }
        }
        let allowed = Arc::new(self.narrow_to_client(&listed.roots)?);
        *self.cache.lock().unwrap() = Some((key, allowed.clone()));
        Ok(self.remember(allowed))
    }

    fn remember(&self, allowed: Arc<Allowed>) -> Arc<Allowed> {
        *self.last.lock().unwrap() = allowed.clone();
        allowed
    }

    fn narrow_to_client(&self, offered: &[ClientRoot]) -> Result<Allowed, ToolError> {
        let mut roots = Vec::new();
        let mut notes = Vec::new();
        for root in offered {
            let Some(path) = file_uri_path(&root.uri) else {
                notes.push(format!("client root {} is not a file:// URI: ignored", root.uri));
                continue;
            };
            let why = format!("client root {}", root.name.as_deref().unwrap_or(&root.uri));
            match self.open_client_root(&path, why) {
                Ok(root) => roots.push(Arc::new(root)),
                Err(note) => notes.push(note),
            }
        }
        if roots.is_empty() {
            if self.configured.roots.is_empty() {
                let mut message = no_roots();
                for note in &notes {
                    message.push_str("; ");
                    message.push_str(note);
                }
                return Err(ToolError::new(message));
            }
            notes.push("no client root lies inside the configured directories, so those apply as given".into());
            return Ok(Allowed { roots: self.configured.roots.clone(), notes });
        }
        Ok(Allowed { roots, notes })
    }

    fn open_client_root(&self, path: &std::path::Path, why: String) -> Result<Root, String> {
        let shown = path.display().to_string();
        if self.configured.roots.is_empty() {
            return Root::open(path, why).map_err(|e| format!("client root {shown}: {e}: ignored"));
        }
        let text = path.to_str().ok_or_else(|| format!("client root {shown} is not UTF-8: ignored"))?;
        let located = locate(&self.configured.roots, text).map_err(|_| {
            format!("client root {shown} lies outside the directories given on the command line: ignored")
        })?;
        Root::narrowed(&located.root, &located.rel, self.policy, path.to_path_buf(), why).map_err(|e| {
            format!("client root {shown}: {}: ignored", crate::errors::explain(&e, &shown, self.policy.follow_symlinks))
        })
    }
}

fn tracing_note(message: &str) {
    eprintln!("files-mcp: {message}");
}

/// The path of a `file://` URI (`file:///a/b`, `file://localhost/a/b`), percent-decoded.
pub fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    Some(PathBuf::from(std::ffi::OsString::from_vec(percent_decode(rest)?)))
}

fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// `path` as a `file://` URI, with the bytes a URI cannot hold percent-encoded.
pub fn file_uri(path: &str) -> String {
    let mut uri = String::from("file://");
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_round_trip() {
        let path = "/tmp/a b/ü%.txt";
        assert_eq!(file_uri_path(&file_uri(path)).unwrap(), PathBuf::from(path));
        assert_eq!(file_uri_path("file://localhost/x").unwrap(), PathBuf::from("/x"));
        assert!(file_uri_path("https://x/y").is_none());
        assert!(file_uri_path("file://%zz").is_none());
    }
}
