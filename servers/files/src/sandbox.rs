//! Containment by construction: every path is opened relative to the open directory of an
//! allowed root, and the kernel refuses any resolution that leaves it.
//!
//! - On Linux 5.6 and later, [`openat2`] with `RESOLVE_BENEATH` (no `..` above the root, no
//!   absolute path or absolute symlink), `RESOLVE_NO_MAGICLINKS`, and `RESOLVE_NO_SYMLINKS`
//!   unless symlinks inside are to be followed.
//! - Where `openat2` is missing (older kernels, a seccomp filter that answers `ENOSYS` or
//!   `EPERM`), a walk one component at a time with `O_NOFOLLOW`, in the manner of `cap-std`:
//!   `..` pops a directory of our own stack (never above the root), a symlink is refused or, when
//!   followed, its relative target is walked the same way (absolute targets refused, 40 hops).
//!
//! Nothing here compares path strings: a path names a root (see `paths`), and what it names
//! beneath that root is the kernel's business.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{openat, openat2, readlinkat, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// How paths are resolved beneath a root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolver {
    /// The kernel's `openat2(RESOLVE_BENEATH)`.
    Openat2,
    /// One component at a time with `O_NOFOLLOW` (no `openat2`).
    Walk,
}

impl Resolver {
    /// `openat2` when this kernel has it (tried on `dir`), else the walk. `FILES_MCP_RESOLVER=walk`
    /// forces the walk (the tests run both).
    pub fn detect(dir: BorrowedFd<'_>) -> Resolver {
        if std::env::var("FILES_MCP_RESOLVER").as_deref() == Ok("walk") {
            return Resolver::Walk;
        }
        let how = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        match openat2(dir, ".", how, Mode::empty(), ResolveFlags::BENEATH) {
            Ok(_) => Resolver::Openat2,
            Err(_) => Resolver::Walk,
        }
    }

    /// The name shown in `list_allowed_directories`.
    pub fn describe(self) -> &'static str {
        match self {
            Resolver::Openat2 => "openat2(RESOLVE_BENEATH), enforced by the kernel",
            Resolver::Walk => "a component-by-component walk with O_NOFOLLOW (this kernel has no openat2)",
        }
    }
}

/// The rules every open follows.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// How to resolve.
    pub resolver: Resolver,
    /// Follow symlinks whose targets stay beneath the root (`--follow-symlinks-inside`).
    pub follow_symlinks: bool,
}

/// The most symlinks one resolution follows (the kernel's own limit).
const MAX_HOPS: usize = 40;

/// An allowed directory, held open.
#[derive(Debug)]
pub struct Root {
    /// The path as given (absolute), which paths in requests are matched against.
    pub path: PathBuf,
    /// The same directory with every symlink resolved, matched too.
    pub real: PathBuf,
    /// Why it is allowed: "command line", or the client root it came from.
    pub why: String,
    fd: OwnedFd,
}

impl Root {
    /// Opens `path`, an absolute directory, as a root. Symlinks in `path` itself are followed:
    /// it is the configuration's word, not a request's.
    pub fn open(path: &Path, why: String) -> io::Result<Root> {
        let fd = openat(rustix::fs::CWD, path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        let real = std::fs::canonicalize(path)?;
        Ok(Root { path: path.to_path_buf(), real, why, fd })
    }

    /// Opens `rel` beneath `parent` as a narrower root (a client root inside a configured one):
    /// the kernel decides that it is inside.
    pub fn narrowed(parent: &Root, rel: &str, policy: Policy, shown: PathBuf, why: String) -> io::Result<Root> {
        let fd = open_beneath(parent.fd(), rel, OFlags::RDONLY | OFlags::DIRECTORY, policy)?;
        let real = if rel.is_empty() { parent.real.clone() } else { parent.real.join(rel) };
        Ok(Root { path: shown, real, why, fd })
    }

    /// The open directory.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Opens `rel` beneath the directory `root` with `flags` (`O_CLOEXEC` and `O_NOFOLLOW` are
/// always added; `O_NONBLOCK` too, so that a FIFO never blocks). `rel` is relative, `/`
/// separated, and may hold `.` and `..`; the empty path is the root itself.
pub fn open_beneath(root: BorrowedFd<'_>, rel: &str, flags: OFlags, policy: Policy) -> io::Result<OwnedFd> {
    open_beneath_mode(root, rel, flags, Mode::empty(), policy)
}

/// [`open_beneath`] with a creation mode (for `O_CREAT`).
pub fn open_beneath_mode(
    root: BorrowedFd<'_>,
    rel: &str,
    flags: OFlags,
    mode: Mode,
    policy: Policy,
) -> io::Result<OwnedFd> {
    let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK;
    let rel = if rel.is_empty() { "." } else { rel };
    match policy.resolver {
        Resolver::Openat2 => {
            let mut resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
            if !policy.follow_symlinks {
                resolve |= ResolveFlags::NO_SYMLINKS;
            }
            // O_NOFOLLOW also refuses a symlink as the last component, followed or not: a
            // symlink is opened through its target only by a walk of the target's own path.
            let flags = if policy.follow_symlinks { flags - OFlags::NOFOLLOW } else { flags };
            loop {
                match openat2(root, rel, flags, mode, resolve) {
                    Err(Errno::AGAIN) | Err(Errno::INTR) => continue, // a rename raced the lookup
                    other => return other.map_err(io::Error::from),
                }
            }
        }
        Resolver::Walk => walk_open(root, rel, flags, mode, policy.follow_symlinks),
    }
}

/// The cap-std-style resolution: one component at a time, never through the kernel's `..`.
fn walk_open(root: BorrowedFd<'_>, rel: &str, flags: OFlags, mode: Mode, follow: bool) -> io::Result<OwnedFd> {
    let mut queue: VecDeque<String> = rel.split('/').map(str::to_owned).collect();
    let mut stack: Vec<OwnedFd> = Vec::new();
    let mut hops = 0;
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    while let Some(part) = queue.pop_front() {
        let last = queue.iter().all(|p| p.is_empty() || p == ".");
        match part.as_str() {
            "" | "." if !last => continue,
            "" | "." => {
                let here = stack.last().map_or(root, |fd| fd.as_fd());
                return Ok(openat(here, ".", flags - OFlags::NOFOLLOW - OFlags::CREATE - OFlags::EXCL, mode)?);
            }
            ".." => {
                if stack.pop().is_none() {
                    return Err(Errno::XDEV.into());
                }
                if last {
                    let here = stack.last().map_or(root, |fd| fd.as_fd());
                    return Ok(openat(here, ".", flags - OFlags::NOFOLLOW - OFlags::CREATE - OFlags::EXCL, mode)?);
                }
                continue;
            }
            _ => {}
        }
        let here = stack.last().map_or(root, |fd| fd.as_fd());
        let attempt = if last {
            openat(here, part.as_str(), flags, mode)
        } else {
            openat(here, part.as_str(), dir_flags, Mode::empty())
        };
        match attempt {
            Ok(fd) if last => return Ok(fd),
            Ok(fd) => stack.push(fd),
            Err(e @ (Errno::LOOP | Errno::NOTDIR | Errno::MLINK)) => {
                let target = match readlinkat(here, part.as_str(), Vec::new()) {
                    Ok(target) => target,
                    Err(_) => return Err(e.into()), // not a symlink: the error stands
                };
                if !follow {
                    return Err(Errno::LOOP.into());
                }
                hops += 1;
                let target = target.into_string().map_err(|_| io::Error::from(Errno::ILSEQ))?;
                if hops > MAX_HOPS {
                    return Err(Errno::LOOP.into());
                }
                if target.starts_with('/') {
                    return Err(Errno::XDEV.into());
                }
                for (i, piece) in target.split('/').enumerate() {
                    queue.insert(i, piece.to_owned());
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    let here = stack.last().map_or(root, |fd| fd.as_fd());
    Ok(openat(here, ".", flags - OFlags::NOFOLLOW - OFlags::CREATE - OFlags::EXCL, mode)?)
}

/// Splits `rel` into its parent directory and its last component, which must be a name (not
/// empty, `.` or `..`). `None` when it is not.
pub fn split_parent(rel: &str) -> Option<(&str, &str)> {
    let rel = rel.trim_end_matches('/');
    let (parent, name) = match rel.rfind('/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => ("", rel),
    };
    if name.is_empty() || name == "." || name == ".." {
        return None;
    }
    Some((parent, name))
}

/// Opens the directory that holds `rel`'s last component, and names it.
pub fn open_parent<'a>(root: BorrowedFd<'_>, rel: &'a str, policy: Policy) -> io::Result<(OwnedFd, &'a str)> {
    let (parent, name) = split_parent(rel).ok_or_else(|| io::Error::from(Errno::ISDIR))?;
    let dir = open_beneath(root, parent, OFlags::RDONLY | OFlags::DIRECTORY, policy)?;
    Ok((dir, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policies() -> Vec<Policy> {
        let mut all = vec![];
        for resolver in [Resolver::Openat2, Resolver::Walk] {
            for follow_symlinks in [false, true] {
                all.push(Policy { resolver, follow_symlinks });
            }
        }
        all
    }

    #[test]
    fn dotdot_above_the_root_is_refused_by_every_resolver() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::fs::create_dir(dir.path().join("root/a")).unwrap();
        std::fs::write(dir.path().join("root/a/f"), "f").unwrap();
        let root = Root::open(&dir.path().join("root"), "test".into()).unwrap();
        for policy in policies() {
            let e = open_beneath(root.fd(), "../secret", OFlags::RDONLY, policy).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc_xdev()), "{policy:?}");
            let e = open_beneath(root.fd(), "a/../../secret", OFlags::RDONLY, policy).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc_xdev()), "{policy:?}");
            assert!(open_beneath(root.fd(), "a/../a/f", OFlags::RDONLY, policy).is_ok(), "{policy:?}");
            assert!(open_beneath(root.fd(), "", OFlags::RDONLY | OFlags::DIRECTORY, policy).is_ok());
        }
    }

    #[test]
    fn symlinks_out_are_refused_and_inside_followed_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let rootp = dir.path().join("root");
        std::fs::create_dir(&rootp).unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::fs::write(rootp.join("inside"), "i").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), rootp.join("abs")).unwrap();
        std::os::unix::fs::symlink("../secret", rootp.join("rel")).unwrap();
        std::os::unix::fs::symlink("inside", rootp.join("ok")).unwrap();
        let root = Root::open(&rootp, "test".into()).unwrap();
        for policy in policies() {
            for link in ["abs", "rel"] {
                assert!(open_beneath(root.fd(), link, OFlags::RDONLY, policy).is_err(), "{link} {policy:?}");
            }
            let ok = open_beneath(root.fd(), "ok", OFlags::RDONLY, policy);
            assert_eq!(ok.is_ok(), policy.follow_symlinks, "{policy:?}");
        }
    }

    fn libc_xdev() -> i32 {
        Errno::XDEV.raw_os_error()
    }
}
