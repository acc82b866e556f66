//! Walking a tree beneath a root: bounded, cancellable, reporting progress, never leaving it.
//!
//! Each directory is opened from the root's descriptor by its whole relative path, so one
//! renamed out of the root mid-walk is simply not found; after its entries are read it is
//! opened again and must still be the same directory (device and inode), or its listing is
//! dropped. Symbolic links are listed, never descended.

use std::io;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp::server::{RequestContext, ToolError};
use rustix::fs::{fstat, OFlags};
use rustix::io::Errno;

use crate::fsops::{list, Entry};
use crate::sandbox::{open_beneath, Policy, Root};

/// What the blocking side of a walk sees of its request: cancellation, and a counter for
/// progress.
pub struct Probe {
    cancel: Arc<AtomicBool>,
    progress: tokio::sync::watch::Sender<u64>,
}

impl Probe {
    /// Whether the request was cancelled (or its caller went away).
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Reports how many entries were visited so far.
    pub fn tick(&self, visited: u64) {
        self.progress.send_replace(visited);
    }
}

struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `work` on a blocking thread with a [`Probe`]: progress notifications go to the client
/// (at most ten a second), and a cancellation, or the request being dropped, stops the work.
pub async fn with_probe<T: Send + 'static>(
    cx: &RequestContext,
    work: impl FnOnce(&Probe) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let cancel = Arc::new(AtomicBool::new(false));
    let _guard = CancelOnDrop(cancel.clone());
    let (tx, mut rx) = tokio::sync::watch::channel(0u64);
    let probe = Probe { cancel: cancel.clone(), progress: tx };
    let mut job = tokio::task::spawn_blocking(move || work(&probe));
    let mut cancelled = false;
    loop {
        tokio::select! {
            done = &mut job => {
                return done.unwrap_or_else(|e| Err(ToolError::new(format!("the walk failed unexpectedly: {e}"))));
            }
            _ = cx.cancelled(), if !cancelled => {
                cancelled = true;
                cancel.store(true, Ordering::Relaxed);
            }
            changed = rx.changed(), if !cancelled => {
                if changed.is_ok() {
                    let visited = *rx.borrow_and_update();
                    cx.progress(visited as f64, None, Some(&format!("{visited} entries visited"))).await;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

/// A walk in progress.
pub struct Walker<'a> {
    root: &'a Root,
    policy: Policy,
    probe: &'a Probe,
    limit: usize,
    /// Entries visited so far.
    pub visited: usize,
    /// The walk stopped at the entry cap.
    pub truncated: bool,
    /// Directories dropped because they moved or vanished during the walk.
    pub skipped: Vec<String>,
}

impl<'a> Walker<'a> {
    /// A walk beneath `root`, visiting at most `limit` entries.
    pub fn new(root: &'a Root, policy: Policy, probe: &'a Probe, limit: usize) -> Self {
        Walker { root, policy, probe, limit, visited: 0, truncated: false, skipped: Vec::new() }
    }

    /// The entries of the directory `rel`, sorted by name; `Ok(None)` when the walk must stop
    /// (the cap, or a cancellation) or the directory moved away.
    pub fn entries(&mut self, rel: &str) -> Result<Option<Vec<Entry>>, ToolError> {
        if self.probe.cancelled() {
            return Err(ToolError::new("cancelled"));
        }
        if self.visited >= self.limit {
            self.truncated = true;
            return Ok(None);
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY;
        let dir = match open_beneath(self.root.fd(), rel, flags, self.policy) {
            Ok(dir) => dir,
            Err(e) if gone(&e) && !rel.is_empty() => {
                self.skipped.push(rel.to_owned());
                return Ok(None);
            }
            Err(e) => {
                return Err(crate::errors::tool_error(
                    &e,
                    &crate::paths::shown(self.root, rel),
                    self.policy.follow_symlinks,
                ))
            }
        };
        let before = fstat(dir.as_fd()).map_err(|e| ToolError::new(e.to_string()))?;
        let (mut entries, more) = list(dir, self.limit - self.visited).map_err(|e| ToolError::new(e.to_string()))?;
        let same = open_beneath(self.root.fd(), rel, flags, self.policy)
            .ok()
            .and_then(|again| fstat(again.as_fd()).ok())
            .is_some_and(|after| after.st_dev == before.st_dev && after.st_ino == before.st_ino);
        if !same {
            self.skipped.push(rel.to_owned());
            return Ok(None);
        }
        self.visited += entries.len();
        self.truncated |= more;
        self.probe.tick(self.visited as u64);
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Some(entries))
    }

    /// A note for the result: where the walk stopped short, and how to narrow it.
    pub fn note(&self) -> Option<String> {
        let mut notes = vec![];
        if self.truncated {
            notes.push(format!(
                "the walk stopped after {} entries (the server's cap): search a subdirectory or add excludePatterns",
                self.visited
            ));
        }
        if !self.skipped.is_empty() {
            notes.push(format!(
                "{} directories moved or vanished during the walk and were skipped: {}",
                self.skipped.len(),
                self.skipped.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        (!notes.is_empty()).then(|| notes.join("; "))
    }
}

fn gone(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error().map(Errno::from_raw_os_error),
        Some(Errno::NOENT | Errno::NOTDIR | Errno::LOOP | Errno::XDEV)
    )
}

/// `parent/name` for relative paths.
pub fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Resolver;

    #[test]
    fn a_cancelled_probe_stops_the_walk_and_the_cap_truncates_it() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5 {
            std::fs::write(dir.path().join(format!("f{i}")), "x").unwrap();
        }
        let root = Root::open(dir.path(), "test".into()).unwrap();
        let policy = Policy { resolver: Resolver::Openat2, follow_symlinks: false };
        let (tx, _rx) = tokio::sync::watch::channel(0);
        let probe = Probe { cancel: Arc::new(AtomicBool::new(false)), progress: tx };
        let mut walker = Walker::new(&root, policy, &probe, 3);
        assert_eq!(walker.entries("").unwrap().unwrap().len(), 3);
        assert!(walker.truncated && walker.note().unwrap().contains("stopped after 3"));
        let mut walker = Walker::new(&root, policy, &probe, 100);
        drop(CancelOnDrop(probe.cancel.clone())); // what dropping the request's future does
        assert!(walker.entries("").is_err(), "a cancelled walk went on");
    }
}
