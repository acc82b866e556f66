//! Starting a sandboxed process without `fork`. `std::process::Command` forks when it has a hook
//! to run before `execve`, and a fork copies the whole parent (its page tables; then every page
//! either side writes): 0.1 to 0.15 ms of every start of a small server. Here the child is made
//! with `clone(CLONE_VM | CLONE_VFORK)` on a stack of its own, as `posix_spawn` does: it shares
//! the parent's memory, and the calling thread waits until the child has called `execve` (or
//! exited) before it goes on.
//!
//! What the child may do is therefore narrow: system calls on data the parent prepared, nothing
//! allocated or freed, no panic, and of the shared memory only the one result word changed (and
//! what libc keeps for the calling thread, errno and its cancellation state, which that thread
//! does not use until the child is gone). It resets
//! the signal handlers it inherited (they are the parent's, and would run on its memory), sets
//! up its stdin, stdout and stderr, its process group and directory, runs [`kernel::confine`]
//! (which changes nothing of its setup) and calls `execve`. The parent blocks every signal for
//! the few microseconds around `clone`, so that none reaches the child before its handlers are
//! reset.
#![allow(unsafe_code)] // clone(2) and what the child does before execve; each block says why.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::kernel::{self, ChildSetup};

/// Where the child's stderr goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorOutput {
    /// A pipe whose other end the caller gets.
    Pipe,
    /// Ours.
    Inherit,
    /// `/dev/null`.
    Null,
}

/// What to run: the program's path (found already), its arguments (the first is its name) and
/// its whole environment (`KEY=VALUE`).
#[derive(Debug)]
pub struct Exec {
    /// The program's path.
    pub path: CString,
    /// Its arguments, its name first.
    pub argv: Vec<CString>,
    /// Its environment, `KEY=VALUE` each.
    pub envp: Vec<CString>,
    /// Its working directory (else ours).
    pub cwd: Option<CString>,
    /// Where its stderr goes.
    pub stderr: ErrorOutput,
    /// In a process group of its own.
    pub process_group: bool,
    /// What runs a program `execve` refuses as not one (`ENOEXEC`: a script without `#!`), as
    /// `execvp` does: `/bin/sh` with the program's path and its arguments.
    pub shell_argv: Vec<CString>,
}

/// A started child: its pid and our ends of its pipes.
#[derive(Debug)]
pub struct Launched {
    /// Its pid: a child of the calling thread's process, to be reaped.
    pub pid: u32,
    /// Our end of its stdin.
    pub stdin: OwnedFd,
    /// Our end of its stdout.
    pub stdout: OwnedFd,
    /// Our end of its stderr ([`ErrorOutput::Pipe`]).
    pub stderr: Option<OwnedFd>,
}

/// What the child reads (all prepared by the parent) and the one word it writes.
struct ChildArgs<'a> {
    setup: &'a ChildSetup,
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    shell_argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    cwd: *const libc::c_char,
    /// Its stdin, stdout and stderr to be (-1: left as they are).
    fds: [RawFd; 3],
    process_group: bool,
    /// The signal mask to restore before `execve` (the parent's, before it blocked them all).
    mask: libc::sigset_t,
    /// Written by a child that failed before `execve` returned: the errno (0: it did not fail).
    failed: i32,
}

/// The child's stack: mapped for it, its lowest page left inaccessible (an overflow faults
/// instead of writing into the memory below, which the parent shares), unmapped once the child
/// has left it (`clone` returned).
struct Stack {
    base: *mut libc::c_void,
    size: usize,
}

impl Stack {
    const SIZE: usize = 256 * 1024;
    const GUARD: usize = 4096;

    fn new() -> io::Result<Stack> {
        // SAFETY: a private anonymous mapping of our own; no memory of ours is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Stack { base, size: Self::SIZE };
        // SAFETY: the first page of the mapping just made.
        if unsafe { libc::mprotect(base, Self::GUARD, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// Its top, where a stack that grows down starts.
    fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of our own mapping, 16-byte aligned (the mapping is page-aligned).
        unsafe { self.base.cast::<u8>().add(self.size).cast() }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: our own mapping, no longer used (the child is past execve or gone).
        unsafe { libc::munmap(self.base, self.size) };
    }
}

/// A pipe, both ends closed on exec: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// Starts `exec` inside `setup`, without `fork`. An error is the errno of the step that failed
/// (the step's name is on `setup.report`, as with the `pre_exec` hook).
pub fn launch(setup: &ChildSetup, exec: &Exec) -> io::Result<Launched> {
    let (stdin_theirs, stdin_ours) = pipe()?;
    let (stdout_ours, stdout_theirs) = pipe()?;
    let (stderr_ours, stderr_theirs) = match exec.stderr {
        ErrorOutput::Pipe => {
            let (ours, theirs) = pipe()?;
            (Some(ours), Some(theirs))
        }
        ErrorOutput::Null => (None, Some(OwnedFd::from(std::fs::OpenOptions::new().write(true).open("/dev/null")?))),
        ErrorOutput::Inherit => (None, None),
    };
    let argv: Vec<*const libc::c_char> =
        exec.argv.iter().map(|a| a.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let shell_argv: Vec<*const libc::c_char> =
        exec.shell_argv.iter().map(|a| a.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let envp: Vec<*const libc::c_char> =
        exec.envp.iter().map(|e| e.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let stack = Stack::new()?;
    // SAFETY: a zeroed sigset_t is a valid (empty) set; pthread_sigmask fills it.
    let mut args = ChildArgs {
        setup,
        path: exec.path.as_ptr(),
        argv: argv.as_ptr(),
        shell_argv: shell_argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: exec.cwd.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
        fds: [
            stdin_theirs.as_raw_fd(),
            stdout_theirs.as_raw_fd(),
            stderr_theirs.as_ref().map_or(-1, |f| f.as_raw_fd()),
        ],
        process_group: exec.process_group,
        mask: unsafe { std::mem::zeroed() },
        failed: 0,
    };
    // SAFETY: every signal blocked on this thread around clone (restored right after), so that
    // none is handled in the child before it resets the handlers. clone runs `child` on the
    // stack mapped for it, sharing our memory; CLONE_VFORK holds this thread until the child has
    // called execve or exited, so `args`, `argv`, `envp`, `exec`, `setup` and the stack outlive
    // its use of them. Of ours the child writes `args.failed` (read after clone returns) and this
    // thread's errno (read only when clone failed, before the child existed).
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut args.mask);
        let pid = libc::clone(
            child,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&mut args as *mut ChildArgs).cast(),
        );
        let error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &args.mask, std::ptr::null_mut());
        if pid < 0 {
            return Err(error);
        }
        pid
    };
    drop(stack);
    let failed = args.failed;
    if failed != 0 {
        loop {
            // SAFETY: waitpid on the child just made, which has exited (it failed before execve).
            let reaped = unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
            if reaped >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
        return Err(io::Error::from_raw_os_error(failed));
    }
    Ok(Launched { pid: pid as u32, stdin: stdin_ours, stdout: stdout_ours, stderr: stderr_ours })
}

/// The child, from clone to execve: system calls only, on what the parent prepared.
extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's ChildArgs, alive while the parent waits (CLONE_VFORK).
    let args = unsafe { &mut *arg.cast::<ChildArgs>() };
    // A failure whose errno is 0 (a short write) is still a failure.
    args.failed = match steps(args) {
        0 => libc::EIO,
        errno => errno,
    };
    // SAFETY: _exit ends the child without running anything of the parent's (no atexit, no
    // destructors, no buffers flushed).
    unsafe { libc::_exit(127) }
}

/// Everything before `execve`, then `execve`: returns only on failure, with its errno.
fn steps(args: &ChildArgs<'_>) -> i32 {
    let errno = || io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL);
    // SAFETY: sigaction, sigprocmask, dup2, fcntl, setpgid, chdir and execve with arguments the
    // parent prepared and that outlive this child's use of them; nothing is allocated or freed.
    unsafe {
        for signal in 1..=libc::SIGRTMAX() {
            if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                continue;
            }
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            // The program starts with default handlers, and SIGPIPE not ignored (as std's
            // Command does: a Rust program ignores SIGPIPE, its children should not).
            let caught = old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN;
            if caught || signal == libc::SIGPIPE {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        libc::sigprocmask(libc::SIG_SETMASK, &args.mask, std::ptr::null_mut());
        for (target, fd) in args.fds.iter().enumerate() {
            let target = target as RawFd;
            if *fd < 0 {
                continue;
            }
            if *fd == target {
                // Already in place: only keep it open across execve.
                if libc::fcntl(target, libc::F_SETFD, 0) != 0 {
                    return errno();
                }
            } else if libc::dup2(*fd, target) < 0 {
                return errno();
            }
        }
        if args.process_group && libc::setpgid(0, 0) != 0 {
            return errno();
        }
        if !args.cwd.is_null() && libc::chdir(args.cwd) != 0 {
            return errno();
        }
    }
    if let Err((step, errno)) = kernel::confine(args.setup) {
        kernel::tell(args.setup.report.as_raw_fd(), step, errno);
        return errno;
    }
    // SAFETY: execve with NUL-terminated strings and null-terminated arrays of them.
    unsafe {
        libc::execve(args.path, args.argv, args.envp);
        if errno() == libc::ENOEXEC {
            libc::execve(c"/bin/sh".as_ptr(), args.shell_argv, args.envp);
            // What is said is why the program itself could not run.
            return libc::ENOEXEC;
        }
    }
    errno()
}
