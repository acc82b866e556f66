//! files-mcp: a filesystem MCP server whose containment the kernel enforces.
//!
//! - [`sandbox`]: opening beneath a root's directory descriptor (`openat2(RESOLVE_BENEATH)`, or a
//!   `cap-std`-style walk), the only way any file is reached;
//! - [`paths`]: choosing the root a model's path names (never deciding containment);
//! - [`roots`]: the command line's directories, narrowed by the client's roots;
//! - [`fsops`]: reading, listing and atomic writing on those descriptors;
//! - [`walk`]: bounded, cancellable walks for `directory_tree`, `search_files` and `grep`;
//! - [`tools`]: the reference server's tools (same names and arguments) and `grep`;
//! - [`resources`] and [`watch`]: files as `file://` resources, with inotify updates.

pub mod errors;
pub mod fsops;
pub mod glob;
pub mod paths;
pub mod resources;
pub mod roots;
pub mod sandbox;
pub mod tools;
pub mod walk;
pub mod watch;

use std::sync::Arc;

use mcp::server::{RequestContext, Router, ToolError};

use paths::{locate, Located};
use roots::{Allowed, Roots};
use sandbox::Policy;

/// The caps that keep one call bounded; each refusal says how to narrow the request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The largest file read whole (text or media).
    pub max_file_bytes: u64,
    /// The largest text result.
    pub max_result_bytes: usize,
    /// The most entries one walk visits.
    pub max_walk_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_file_bytes: 16 << 20, max_result_bytes: 4 << 20, max_walk_entries: 200_000 }
    }
}

/// The server's state.
pub struct App {
    /// How paths resolve.
    pub policy: Policy,
    /// The caps.
    pub limits: Limits,
    /// Nothing is written (`--read-only`).
    pub read_only: bool,
    /// Files with several hard links may be read (`--allow-hard-links`).
    pub allow_hard_links: bool,
    /// The allowed directories.
    pub roots: Roots,
    /// The inotify watches behind resource subscriptions.
    pub watcher: watch::Watcher,
}

impl App {
    /// The directories that apply to `cx`.
    pub async fn allowed(&self, cx: &RequestContext) -> Result<Arc<Allowed>, ToolError> {
        self.roots.allowed(cx).await
    }

    /// Locates `path` among `allowed`.
    pub fn locate(&self, allowed: &Allowed, path: &str) -> Result<Located, ToolError> {
        locate(&allowed.roots, path).map_err(ToolError::new)
    }

    /// Refuses a text result over the cap, saying how to narrow the request.
    pub fn cap_result(&self, text: String, narrow: &str) -> Result<String, ToolError> {
        if text.len() > self.limits.max_result_bytes {
            return Err(ToolError::new(format!(
                "the result would be {} bytes, over the {} bytes one call may return: {narrow}",
                text.len(),
                self.limits.max_result_bytes
            )));
        }
        Ok(text)
    }
}

/// Runs blocking file work off the async threads.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(ToolError::new(format!("the operation failed unexpectedly: {e}"))))
}

/// The MCP server over `app`.
pub fn router(app: Arc<App>) -> Router {
    let router = Router::new().info("files-mcp", env!("CARGO_PKG_VERSION")).instructions(
        "files-mcp reads and writes files inside the allowed directories only (list_allowed_directories names \
         them). Paths are absolute, or relative to the first allowed directory. Use grep to search contents, \
         search_files to find names, read_text_file with head/tail for parts of large files.",
    );
    let router = tools::register(router.with_state(app.clone()), app.read_only);
    resources::register(router, app)
}
