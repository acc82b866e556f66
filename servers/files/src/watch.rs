//! Resource subscriptions backed by inotify.
//!
//! A subscribed file is watched through its directory, opened beneath a root and handed to
//! inotify as `/proc/self/fd/N` (the very directory opened, whatever its path has become), so
//! that a write, a rename over it or a deletion is seen; a subscribed directory is watched
//! itself. One thread reads the events and tells the router's lists, which notify the subscribed
//! sessions. At most [`MAX_WATCHES`] directories are watched.

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mcp::server::Lists;
use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use rustix::fs::OFlags;

use crate::sandbox::{open_beneath, split_parent, Policy};

/// The most directories watched at once.
pub const MAX_WATCHES: usize = 1024;

/// What one watch stands for: URIs and the entry name each is about (`None`: the directory).
type Interests = Vec<(String, Option<Vec<u8>>)>;

/// The inotify instance and what each watch is for.
pub struct Watcher {
    fd: Option<Arc<OwnedFd>>,
    watches: Arc<Mutex<HashMap<i32, Interests>>>,
    lists: Arc<OnceLock<Lists>>,
}

impl Default for Watcher {
    fn default() -> Self {
        Self::new()
    }
}

impl Watcher {
    /// A watcher; without inotify (or its thread), subscriptions are accepted and never fire.
    pub fn new() -> Watcher {
        let fd = inotify::init(CreateFlags::CLOEXEC).ok().map(Arc::new);
        let watcher = Watcher { fd, watches: Arc::default(), lists: Arc::default() };
        if let Some(fd) = &watcher.fd {
            let (fd, watches, lists) = (fd.clone(), watcher.watches.clone(), watcher.lists.clone());
            let spawned = std::thread::Builder::new()
                .name("files-mcp-inotify".into())
                .spawn(move || read_events(fd, watches, lists));
            if let Err(e) = spawned {
                eprintln!("files-mcp: no inotify thread ({e}): subscriptions will not fire");
            }
        }
        watcher
    }

    /// The lists of the router to notify through (set once it is built).
    pub fn attach(&self, lists: Lists) {
        let _ = self.lists.set(lists);
    }

    /// Starts watching `rel` beneath `root` for `uri`. `Err` says why it cannot be.
    pub fn watch(&self, root: std::os::fd::BorrowedFd<'_>, rel: &str, uri: &str, policy: Policy) -> Result<(), String> {
        let Some(inotify_fd) = &self.fd else { return Err("inotify is not available".into()) };
        let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY;
        let (dir, name) = match open_beneath(root, rel, dir_flags, policy) {
            Ok(dir) => (dir, None),
            Err(_) => {
                let (parent, name) = split_parent(rel).ok_or("not a file or directory")?;
                let dir = open_beneath(root, parent, dir_flags, policy).map_err(|e| e.to_string())?;
                (dir, Some(name.as_bytes().to_vec()))
            }
        };
        let mut watches = self.watches.lock().unwrap();
        if watches.len() >= MAX_WATCHES {
            return Err(format!("{MAX_WATCHES} directories are watched already"));
        }
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&dir.as_fd()));
        let flags = WatchFlags::MODIFY
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::ATTRIB
            | WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF;
        let wd = inotify::add_watch(inotify_fd, path.as_str(), flags).map_err(|e| e.to_string())?;
        let interests = watches.entry(wd).or_default();
        if !interests.iter().any(|(u, _)| u == uri) {
            interests.push((uri.to_owned(), name));
        }
        Ok(())
    }

    /// Stops telling about `uri` (the directory watch stays while others want it).
    pub fn unwatch(&self, uri: &str) {
        let mut watches = self.watches.lock().unwrap();
        watches.retain(|wd, interests| {
            interests.retain(|(u, _)| u != uri);
            if interests.is_empty() {
                if let Some(fd) = &self.fd {
                    let _ = inotify::remove_watch(fd, *wd);
                }
                return false;
            }
            true
        });
    }
}

fn read_events(fd: Arc<OwnedFd>, watches: Arc<Mutex<HashMap<i32, Interests>>>, lists: Arc<OnceLock<Lists>>) {
    let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
    let mut reader = inotify::Reader::new(fd.as_fd(), &mut buf);
    loop {
        let mut changed: Vec<String> = Vec::new();
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return,
            };
            let name = event.file_name().map(|n| n.to_bytes().to_vec());
            if let Some(interests) = watches.lock().unwrap().get(&event.wd()) {
                for (uri, wanted) in interests {
                    let hit = match (wanted, &name) {
                        (None, _) => true,
                        (Some(w), Some(n)) => w == n,
                        (Some(_), None) => {
                            event.events().intersects(inotify::ReadFlags::DELETE_SELF | inotify::ReadFlags::MOVE_SELF)
                        }
                    };
                    if hit && !changed.contains(uri) {
                        changed.push(uri.clone());
                    }
                }
            }
            if reader.is_buffer_empty() {
                break;
            }
        }
        if let Some(lists) = lists.get() {
            for uri in &changed {
                lists.notify_resource_updated(uri);
            }
        }
        // Writes come in bursts (open, write, close, rename): the pause lets the rest of a burst
        // pile up and be read as one batch, so a burst gives at most two notices per URI.
        if !changed.is_empty() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
