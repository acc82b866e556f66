//! A server process the client ends and reaps: one `std::process::Command` started, or one a
//! [`Confine`](super::Confine) started itself ([`Started`]: a sandbox that starts its process
//! without `fork`).

use std::os::fd::OwnedFd;
use std::process::Child;

/// A process a [`Confine`](super::Confine) started itself ([`Confine::start`](super::Confine::start)):
/// its pid and our ends of its pipes. The client ends and reaps it.
#[derive(Debug)]
pub struct Started {
    /// Its process id: a child of this process, not yet reaped.
    pub pid: u32,
    /// Our end of its stdin.
    pub stdin: OwnedFd,
    /// Our end of its stdout.
    pub stdout: OwnedFd,
    /// Our end of its stderr, when it is captured ([`Stderr::Capture`](super::Stderr::Capture)).
    pub stderr: Option<OwnedFd>,
}

/// Our ends of a process's stdin, stdout and (captured) stderr.
pub(crate) type Pipes = (OwnedFd, OwnedFd, Option<OwnedFd>);

/// A running server process.
#[derive(Debug)]
pub(crate) enum Process {
    Std(Child),
    Started { pid: u32, reaped: bool, pipes: Option<Pipes> },
}

impl From<Started> for Process {
    fn from(started: Started) -> Self {
        Process::Started {
            pid: started.pid,
            reaped: false,
            pipes: Some((started.stdin, started.stdout, started.stderr)),
        }
    }
}

impl Process {
    /// Its process id.
    pub(crate) fn id(&self) -> u32 {
        match self {
            Process::Std(child) => child.id(),
            Process::Started { pid, .. } => *pid,
        }
    }

    /// Our ends of its pipes (once).
    pub(crate) fn take_pipes(&mut self) -> Option<Pipes> {
        match self {
            Process::Std(child) => {
                Some((child.stdin.take()?.into(), child.stdout.take()?.into(), child.stderr.take().map(OwnedFd::from)))
            }
            Process::Started { pipes, .. } => pipes.take(),
        }
    }

    /// Whether it has exited (reaping it if so).
    pub(crate) fn has_exited(&mut self) -> bool {
        match self {
            Process::Std(child) => matches!(child.try_wait(), Ok(Some(_))),
            Process::Started { pid, reaped, .. } => *reaped || reap(*pid, reaped, false),
        }
    }

    /// Kills it (SIGKILL) and reaps it.
    pub(crate) fn end(&mut self) {
        match self {
            Process::Std(child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Process::Started { pid, reaped, .. } => {
                if !*reaped {
                    signal(*pid, SIGKILL);
                    reap(*pid, reaped, true);
                }
            }
        }
    }
}

impl Drop for Process {
    /// A process dropped before it was reaped (a start abandoned half-way, a close cancelled) is
    /// ended and reaped: none runs on without what its `Confine` kept, none stays a zombie.
    fn drop(&mut self) {
        if !self.has_exited() {
            self.end();
        }
    }
}

#[cfg(unix)]
const SIGKILL: i32 = libc::SIGKILL;
#[cfg(not(unix))]
const SIGKILL: i32 = 9;

/// Sends `signal` to `pid` (a child of ours not yet reaped, so the pid is still its own).
#[allow(unsafe_code)]
pub(crate) fn signal(pid: u32, signal: i32) {
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) with a pid and a signal number touches no memory of ours.
        unsafe {
            libc::kill(pid, signal);
        }
    }
    #[cfg(not(unix))]
    let _ = (pid, signal);
}

/// Reaps `pid` if it has exited (or waits until it does, with `block`); says whether it is
/// reaped, and records it in `reaped`.
#[allow(unsafe_code)]
fn reap(pid: u32, reaped: &mut bool, block: bool) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else { return true };
        let flags = if block { 0 } else { libc::WNOHANG };
        loop {
            let mut status = 0;
            // SAFETY: waitpid on our own child with a live status word.
            let done = unsafe { libc::waitpid(pid, &mut status, flags) };
            if done < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // Reaped now (> 0), or not ours to wait for any more (< 0: nothing left to reap).
            *reaped = done != 0;
            return *reaped;
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (pid, block);
        *reaped = true;
        true
    }
}
