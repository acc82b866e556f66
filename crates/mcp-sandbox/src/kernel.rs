//! What the child does before `execve`, and the few raw system calls around it: with
//! [`crate::launch`], the only unsafe code of the crate.
//!
//! Everything is decided and allocated in the parent ([`ChildSetup`]); the child (after a `fork`,
//! or made by [`crate::launch`] sharing the parent's memory) only makes system calls, allocates
//! and frees nothing, changes nothing of its setup and must not panic, in this order: a user namespace of its own (its uid and gid mapped to
//! themselves), with a network namespace when the network goes through the proxy (loopback up, the
//! proxy's listening socket opened there and handed to the parent); resource limits; every
//! capability dropped; Landlock (`no_new_privs` with it); the seccomp filters last. A step that
//! fails writes its name and errno to a pipe the parent reads, so the refusal names it.
#![allow(unsafe_code)] // the child's system calls before execve; each block says why it is sound.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

use landlock::RulesetCreated;

use crate::plan::PROXY_PORT;

/// What the child will do, prepared by the parent.
pub struct ChildSetup {
    /// `"U U 1"` and `"G G 1"`: a user namespace mapping the ids to themselves; `None`: none.
    pub user_maps: Option<(Vec<u8>, Vec<u8>)>,
    /// A user namespace is wanted but may be missing (best effort).
    pub userns_optional: bool,
    /// A network namespace of its own, with the proxy's listener sent over this socket.
    pub proxy_socket: Option<OwnedFd>,
    /// `(resource, limit)` pairs for `setrlimit`.
    pub limits: Vec<(libc::__rlimit_resource_t, u64)>,
    /// The Landlock ruleset (each child restricts itself with a duplicate).
    pub ruleset: Option<RulesetCreated>,
    /// The seccomp filters (compiled once per process, shared by every start).
    pub filters: std::sync::Arc<Vec<crate::filter::Program>>,
    /// Where a failing step writes its name and errno.
    pub report: OwnedFd,
    /// Killed when the thread that started it ends (`PR_SET_PDEATHSIG`).
    pub die_with_parent: bool,
    /// `cgroup.procs` of the cgroup it moves into first (the process limit for root).
    pub cgroup_procs: Option<std::ffi::CString>,
    /// Watched: a filter sending its file and network calls to the parent, whose listener goes
    /// over this socket (`mcp sandbox --learn`, `mcp doctor`).
    pub observer: Option<(OwnedFd, Vec<libc::sock_filter>)>,
}

/// Adds the setup to `command` as its `pre_exec` hook.
pub fn install(command: &mut Command, setup: ChildSetup) {
    // SAFETY: the hook runs in the child between fork and exec. It allocates nothing (every
    // buffer, path and program was made by the parent) and only makes system calls, which are
    // async-signal-safe; the ruleset is duplicated, the filters are read.
    unsafe {
        command.pre_exec(move || {
            let result = confine(&setup);
            if let Err((step, errno)) = result {
                tell(setup.report.as_raw_fd(), step, errno);
                return Err(io::Error::from_raw_os_error(errno));
            }
            Ok(())
        });
    }
}

/// A step done, or the step that failed and its errno.
pub type Step = Result<(), (&'static str, i32)>;

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EPERM)
}

/// `Err((step, errno))` unless `ok`.
fn check(ok: bool, step: &'static str) -> Step {
    if ok {
        Ok(())
    } else {
        Err((step, errno()))
    }
}

/// The child's steps. It changes nothing of `setup`: after a `fork` the child's memory is its
/// own, but [`crate::launch`] runs it in a child that shares the parent's until `execve`.
pub fn confine(setup: &ChildSetup) -> Step {
    if setup.die_with_parent {
        // SAFETY: prctl with integer arguments.
        check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) } == 0, "die with parent")?;
    }
    if let Some(procs) = &setup.cgroup_procs {
        write_file(procs, b"0", "process limit (joining its pids cgroup)")?;
    }
    // SAFETY: prctl with integer arguments.
    let death_signal = unsafe {
        let mut signal: libc::c_int = 0;
        libc::prctl(libc::PR_GET_PDEATHSIG, &mut signal as *mut libc::c_int);
        signal
    };
    if let Some((uid_map, gid_map)) = &setup.user_maps {
        let net = if setup.proxy_socket.is_some() { libc::CLONE_NEWNET } else { 0 };
        // SAFETY: unshare takes flags.
        let unshared = unsafe { libc::unshare(libc::CLONE_NEWUSER | net) } == 0;
        if unshared {
            write_file(c"/proc/self/setgroups", b"deny", "user namespace (setgroups)")?;
            write_file(c"/proc/self/uid_map", uid_map, "user namespace (uid_map)")?;
            write_file(c"/proc/self/gid_map", gid_map, "user namespace (gid_map)")?;
        } else if !setup.userns_optional || net != 0 {
            return Err(("user namespace", errno()));
        }
    }
    if death_signal != 0 {
        // SAFETY: prctl with integer arguments; the namespace change may have cleared it.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, death_signal as libc::c_ulong) };
    }
    if let Some(socket) = &setup.proxy_socket {
        loopback_up()?;
        let listener = listen_on_loopback()?;
        send_fd(socket.as_raw_fd(), listener.as_raw_fd())?;
    }
    for (resource, limit) in &setup.limits {
        set_limit(*resource, *limit)?;
    }
    drop_capabilities()?;
    if let Some(ruleset) = &setup.ruleset {
        // A duplicate (dup(2) and a copy on the stack) is used up, the parent's stays whole.
        let own = ruleset.try_clone().map_err(|e| ("Landlock", e.raw_os_error().unwrap_or(libc::EBADF)))?;
        own.restrict_self().map_err(|_| ("Landlock", errno()))?;
    }
    // SAFETY: prctl with integer arguments (Landlock set it already; seccomp needs it).
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } == 0, "no_new_privs")?;
    for filter in setup.filters.iter() {
        let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr() as *mut libc::sock_filter };
        // SAFETY: seccomp with a program that outlives the call.
        let applied = unsafe { libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &prog) } == 0;
        check(applied, "seccomp")?;
    }
    if let Some((socket, program)) = &setup.observer {
        let prog = libc::sock_fprog { len: program.len() as u16, filter: program.as_ptr() as *mut libc::sock_filter };
        // SAFETY: seccomp with a program that outlives the call; the result is a new descriptor.
        let listener = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
                &prog,
            )
        };
        check(listener >= 0, "seccomp (observer)")?;
        send_fd(socket.as_raw_fd(), listener as RawFd)?;
        // SAFETY: our own descriptor, sent already.
        unsafe { libc::close(listener as RawFd) };
    }
    Ok(())
}

/// A BPF program that sends `syscalls` to the listener and allows everything else.
pub fn observer_program(syscalls: &[libc::c_long]) -> Vec<libc::sock_filter> {
    let op = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter { code: code as u16, jt, jf, k };
    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
    #[cfg(target_arch = "aarch64")]
    const ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64
    let (load, jeq, ret) = (
        libc::BPF_LD | libc::BPF_W | libc::BPF_ABS,
        libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
        libc::BPF_RET | libc::BPF_K,
    );
    let n = syscalls.len() as u8;
    let mut program =
        vec![op(load, 0, 0, 4), op(jeq, 1, 0, ARCH), op(ret, 0, 0, libc::SECCOMP_RET_ALLOW), op(load, 0, 0, 0)];
    for (i, nr) in syscalls.iter().enumerate() {
        program.push(op(jeq, n - i as u8, 0, *nr as u32)); // to the notify at the end
    }
    program.push(op(ret, 0, 0, libc::SECCOMP_RET_ALLOW));
    program.push(op(ret, 0, 0, libc::SECCOMP_RET_USER_NOTIF));
    program
}

/// One watched call.
#[derive(Debug, Clone, Copy)]
pub struct Notification {
    /// Its id, for [`notification_continue`].
    pub id: u64,
    /// The calling process.
    pub pid: u32,
    /// The syscall.
    pub nr: i32,
    /// Its arguments.
    pub args: [u64; 6],
}

/// Waits until a watched call is pending (`true`) or no watched process is left (`false`).
pub fn wait_for_notification(listener: RawFd) -> bool {
    let mut poll = libc::pollfd { fd: listener, events: libc::POLLIN, revents: 0 };
    loop {
        // SAFETY: poll on one pollfd of ours.
        let n = unsafe { libc::poll(&mut poll, 1, -1) };
        if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return n > 0 && poll.revents & libc::POLLIN != 0;
    }
}

/// Waits for the next watched call.
pub fn notification_receive(listener: RawFd) -> io::Result<Notification> {
    // SAFETY: the ioctl fills a zeroed seccomp_notif of the size the kernel expects.
    unsafe {
        let mut notif: libc::seccomp_notif = std::mem::zeroed();
        if libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notif as *mut libc::seccomp_notif) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Notification { id: notif.id, pid: notif.pid, nr: notif.data.nr, args: notif.data.args })
    }
}

/// Lets the watched call go on as if never stopped (the kernel, Landlock included, decides).
pub fn notification_continue(listener: RawFd, id: u64) {
    // SAFETY: the ioctl reads a seccomp_notif_resp built here.
    unsafe {
        let mut response: libc::seccomp_notif_resp = std::mem::zeroed();
        response.id = id;
        response.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32;
        libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut response as *mut libc::seccomp_notif_resp);
    }
}

fn write_file(path: &CStr, bytes: &[u8], step: &'static str) -> Step {
    // SAFETY: open on a NUL-terminated path; write of a live buffer; close of our descriptor.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        check(fd >= 0, step)?;
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let failed = written != bytes.len() as isize;
        let error = errno();
        libc::close(fd);
        if failed {
            return Err((step, error));
        }
    }
    Ok(())
}

/// Brings up `lo` in the new network namespace.
fn loopback_up() -> Step {
    // SAFETY: a socket for the ioctl; ifreq is plain data, zeroed, its name and flags set.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        check(fd >= 0, "network namespace (socket)")?;
        let fd = OwnedFd::from_raw_fd(fd);
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        request.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        check(libc::ioctl(fd.as_raw_fd(), libc::SIOCSIFFLAGS, &request) == 0, "network namespace (loopback up)")
    }
}

/// The proxy's listening socket, 127.0.0.1:[`PROXY_PORT`] inside the namespace.
fn listen_on_loopback() -> Result<OwnedFd, (&'static str, i32)> {
    // SAFETY: socket, bind with a sockaddr_in of the right size, listen.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        check(fd >= 0, "proxy listener (socket)")?;
        let fd = OwnedFd::from_raw_fd(fd);
        let mut address: libc::sockaddr_in = std::mem::zeroed();
        address.sin_family = libc::AF_INET as libc::sa_family_t;
        address.sin_port = PROXY_PORT.to_be();
        address.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
        let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        check(
            libc::bind(fd.as_raw_fd(), (&address as *const libc::sockaddr_in).cast(), size) == 0,
            "proxy listener (bind)",
        )?;
        check(libc::listen(fd.as_raw_fd(), 64) == 0, "proxy listener (listen)")?;
        Ok(fd)
    }
}

/// Space for one descriptor's control message, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct ControlBuffer([u8; 64]);

/// Sends `fd` over the UNIX socket `socket` (SCM_RIGHTS).
fn send_fd(socket: RawFd, fd: RawFd) -> Step {
    // SAFETY: msghdr and cmsghdr built over live stack buffers of the sizes the CMSG macros give.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut control = ControlBuffer([0; 64]);
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.0.as_mut_ptr().cast();
        message.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<RawFd>(), fd);
        check(libc::sendmsg(socket, &message, 0) == 1, "proxy listener (handing it over)")
    }
}

/// Receives a descriptor sent by [`send_fd`]; `Ok(None)` when the other end closed first.
pub fn receive_fd(socket: RawFd) -> io::Result<Option<OwnedFd>> {
    // SAFETY: as in send_fd; the received descriptor is new and owned by no one else.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut control = ControlBuffer([0; 64]);
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.0.as_mut_ptr().cast();
        message.msg_controllen = control.0.len();
        let n = libc::recvmsg(socket, &mut message, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let header = libc::CMSG_FIRSTHDR(&message);
        if n == 0 || header.is_null() || (*header).cmsg_type != libc::SCM_RIGHTS {
            return Ok(None);
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<RawFd>());
        Ok(Some(OwnedFd::from_raw_fd(fd)))
    }
}

fn set_limit(resource: libc::__rlimit_resource_t, limit: u64) -> Step {
    // SAFETY: getrlimit and setrlimit on a stack rlimit.
    unsafe {
        let mut current: libc::rlimit = std::mem::zeroed();
        check(libc::getrlimit(resource, &mut current) == 0, "resource limits")?;
        let limit = limit.min(current.rlim_max);
        let new = libc::rlimit { rlim_cur: limit, rlim_max: limit };
        check(libc::setrlimit(resource, &new) == 0, "resource limits")
    }
}

/// Header and data of `capset(2)`, version 3.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Empties the ambient set and the process's own sets: whatever the user (root too), the program
/// runs with no capability. The bounding set is left as it is: with `no_new_privs` (set before
/// the filters, always) `execve` gives a program no capability its caller did not hold (the
/// kernel intersects the new permitted set with the old one), and the caller holds none, so
/// emptying the bounding set would change nothing but cost some forty `prctl` calls (each
/// commits new credentials: about 60 us of every start, measured with bench-sandbox).
fn drop_capabilities() -> Step {
    // SAFETY: prctl with integer arguments; capset with a header and two data structs.
    unsafe {
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        let header = CapHeader { version: 0x2008_0522, pid: 0 };
        let data = [CapData { effective: 0, permitted: 0, inheritable: 0 }; 2];
        check(libc::syscall(libc::SYS_capset, &header, data.as_ptr()) == 0, "capabilities")
    }
}

/// Writes `step: errno` to the report pipe (no allocation: digits on the stack).
pub fn tell(fd: RawFd, step: &str, errno: i32) {
    let mut digits = [0u8; 12];
    let mut n = errno.unsigned_abs();
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // SAFETY: writes of live buffers to our pipe.
    unsafe {
        libc::write(fd, step.as_ptr().cast(), step.len());
        libc::write(fd, b":".as_ptr().cast(), 1);
        libc::write(fd, digits[i..].as_ptr().cast(), digits.len() - i);
    }
}

/// A pipe whose read end the parent keeps, for [`tell`]; both ends close on exec.
pub fn report_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// A connected pair of UNIX sockets (the parent's end, the child's end), closed on exec.
pub fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills two descriptors we then own.
    unsafe {
        if libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// Wakes a thread blocked in `accept` on `fd` (shut down, the call fails and the thread ends).
pub fn shut_down(fd: RawFd) {
    // SAFETY: shutdown on a descriptor number; a closed one fails harmlessly with EBADF.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}

/// The kernel's Landlock ABI version (0 when Landlock is missing or off).
pub fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) only returns a number.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    version.max(0) as i32
}

/// Sends SIGKILL to `pid` (a process left in a server's cgroup).
pub fn kill(pid: i32) {
    // SAFETY: kill takes a pid and a signal; a stale pid fails with ESRCH.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Whether we run as root (whom the kernel exempts from `RLIMIT_NPROC`).
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Our real user and group ids.
pub fn ids() -> (u32, u32) {
    // SAFETY: getuid and getgid cannot fail.
    unsafe { (libc::getuid(), libc::getgid()) }
}
