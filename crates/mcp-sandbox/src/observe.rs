//! Watching what a sandboxed server opens and connects to, from outside it: a seccomp filter
//! stops each file and network call long enough for the parent to read what it names (the path
//! from the process's memory, resolved against its working directory or the directory
//! descriptor), then lets it go on, so the kernel still decides. Used by `mcp sandbox --learn`
//! (to write a starting policy) and `mcp doctor` (to tell what the policy refused: each attempt
//! is checked against the same plan the Landlock rules were made from).

use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::kernel::{self, Notification};

/// The calls watched.
pub const WATCHED: [libc::c_long; 14] = [
    libc::SYS_open,
    libc::SYS_openat,
    libc::SYS_openat2,
    libc::SYS_creat,
    libc::SYS_mkdir,
    libc::SYS_mkdirat,
    libc::SYS_unlink,
    libc::SYS_unlinkat,
    libc::SYS_rename,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_truncate,
    libc::SYS_connect,
    libc::SYS_execve,
];

/// How a path was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Use {
    /// Opened to read (or listed).
    Read,
    /// Opened to write, created, removed, renamed or truncated.
    Write,
    /// Run.
    Execute,
}

/// What was seen.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// Paths and how they were used.
    pub paths: BTreeSet<(PathBuf, Use)>,
    /// Addresses connected to (`1.2.3.4:443`, `[::1]:80`, `unix:/path`).
    pub connections: BTreeSet<String>,
}

/// What was seen so far, shared with the watching thread.
pub type Record = Arc<Mutex<Seen>>;

/// Starts the watching thread: it receives the listener over `socket`, then serves it until the
/// watched processes are gone.
pub fn start(socket: OwnedFd, record: Record) -> std::io::Result<()> {
    std::thread::Builder::new().name("mcp-sandbox-watch".into()).spawn(move || {
        let Ok(Some(listener)) = kernel::receive_fd(socket.as_raw_fd()) else { return };
        drop(socket);
        // Until every watched process is gone (a hang-up); a call whose process died or was
        // interrupted meanwhile (ENOENT, EINTR) is skipped, never the end of the watch, since the
        // others would wait forever.
        while kernel::wait_for_notification(listener.as_raw_fd()) {
            let notification = match kernel::notification_receive(listener.as_raw_fd()) {
                Ok(notification) => notification,
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EINTR)) => continue,
                Err(_) => break,
            };
            // Noted before the call goes on, so that whoever waits for the process sees it all.
            if let Some(seen) = describe(&notification) {
                let mut record = record.lock().unwrap_or_else(|e| e.into_inner());
                match seen {
                    Observation::Path(path, usage) if record.paths.len() < 100_000 => {
                        record.paths.insert((path, usage));
                    }
                    Observation::Connect(address) => {
                        record.connections.insert(address);
                    }
                    Observation::Path(..) => {}
                }
            }
            kernel::notification_continue(listener.as_raw_fd(), notification.id);
        }
    })?;
    Ok(())
}

enum Observation {
    Path(PathBuf, Use),
    Connect(String),
}

/// What a call names.
fn describe(n: &Notification) -> Option<Observation> {
    let nr = libc::c_long::from(n.nr);
    let at = |dirfd: u64, path: u64| resolve(n.pid, dirfd as i32, &read_string(n.pid, path)?);
    let cwd = libc::AT_FDCWD as u64;
    let write_flags = |flags: u64| {
        let flags = flags as i32;
        flags & (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC) != 0
    };
    let open = |path: Option<PathBuf>, flags: u64| {
        Some(Observation::Path(path?, if write_flags(flags) { Use::Write } else { Use::Read }))
    };
    let written = |path: Option<PathBuf>| Some(Observation::Path(path?, Use::Write));
    match nr {
        libc::SYS_open => open(at(cwd, n.args[0]), n.args[1]),
        libc::SYS_openat => open(at(n.args[0], n.args[1]), n.args[2]),
        libc::SYS_openat2 => open(at(n.args[0], n.args[1]), read_u64(n.pid, n.args[2]).unwrap_or(0)),
        libc::SYS_creat | libc::SYS_mkdir | libc::SYS_unlink | libc::SYS_truncate => written(at(cwd, n.args[0])),
        libc::SYS_rename => written(at(cwd, n.args[1])),
        libc::SYS_mkdirat | libc::SYS_unlinkat => written(at(n.args[0], n.args[1])),
        libc::SYS_renameat | libc::SYS_renameat2 => written(at(n.args[2], n.args[3])),
        libc::SYS_execve => Some(Observation::Path(at(cwd, n.args[0])?, Use::Execute)),
        libc::SYS_connect => address(n.pid, n.args[1], n.args[2]).map(Observation::Connect),
        _ => None,
    }
}

/// A NUL-terminated string in the process's memory (at most 4 KiB).
fn read_string(pid: u32, address: u64) -> Option<String> {
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut buffer = vec![0u8; 4096];
    let mut filled = 0;
    while filled < buffer.len() {
        let n = mem.read_at(&mut buffer[filled..(filled + 256).min(4096)], address + filled as u64).ok()?;
        if n == 0 {
            break;
        }
        filled += n;
        if let Some(end) = buffer[..filled].iter().position(|b| *b == 0) {
            return String::from_utf8(buffer[..end].to_vec()).ok();
        }
    }
    None
}

fn read_u64(pid: u32, address: u64) -> Option<u64> {
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut bytes = [0u8; 8];
    mem.read_exact_at(&mut bytes, address).ok()?;
    Some(u64::from_ne_bytes(bytes))
}

/// `path` as the process means it: relative to its working directory or to `dirfd`.
fn resolve(pid: u32, dirfd: i32, path: &str) -> Option<PathBuf> {
    if path.is_empty() {
        return None;
    }
    let path = Path::new(path);
    if path.is_absolute() {
        return Some(path.to_owned());
    }
    let base = if dirfd == libc::AT_FDCWD {
        std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?
    } else {
        std::fs::read_link(format!("/proc/{pid}/fd/{dirfd}")).ok()?
    };
    Some(base.join(path))
}

/// A socket address in the process's memory, as text.
fn address(pid: u32, pointer: u64, length: u64) -> Option<String> {
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let length = (length as usize).min(128);
    let mut bytes = vec![0u8; length];
    mem.read_exact_at(&mut bytes, pointer).ok()?;
    let family = u16::from_ne_bytes([*bytes.first()?, *bytes.get(1)?]) as i32;
    let port = || u16::from_be_bytes([bytes[2], bytes[3]]);
    match family {
        libc::AF_INET if length >= 8 => {
            Some(format!("{}:{}", std::net::Ipv4Addr::new(bytes[4], bytes[5], bytes[6], bytes[7]), port()))
        }
        libc::AF_INET6 if length >= 24 => {
            let ip: [u8; 16] = bytes[8..24].try_into().ok()?;
            Some(format!("[{}]:{}", std::net::Ipv6Addr::from(ip), port()))
        }
        libc::AF_UNIX => {
            let path = &bytes[2..];
            let end = path.iter().position(|b| *b == 0).unwrap_or(path.len());
            Some(format!("unix:{}", String::from_utf8_lossy(&path[..end])))
        }
        _ => None,
    }
}
