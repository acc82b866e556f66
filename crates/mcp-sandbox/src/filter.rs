//! The seccomp filters: what an MCP server never needs is refused with `EPERM` (debugging other
//! processes, mounting, kernel modules and keys, `perf_event_open`, BPF, new namespaces, injecting
//! keystrokes into a terminal, sockets of families other than UNIX, IP and netlink); what it can do
//! without is refused with `ENOSYS` so that libraries fall back (`clone3`, whose flags a filter
//! cannot read, to `clone`; io_uring to ordinary calls). Compiled in the parent with seccompiler.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Syscalls refused outright.
const REFUSED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_perf_event_open,
    libc::SYS_bpf,
    libc::SYS_userfaultfd,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_setns,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_syslog,
    libc::SYS_vhangup,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_fanotify_init,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// Answered "not implemented", so that callers fall back.
const NOT_IMPLEMENTED: &[libc::c_long] =
    &[libc::SYS_clone3, libc::SYS_io_uring_setup, libc::SYS_io_uring_enter, libc::SYS_io_uring_register];

/// Namespace flags of `clone` and `unshare`.
const NAMESPACES: [u64; 8] = [
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWTIME as u64,
];

#[cfg(target_arch = "x86_64")]
const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: TargetArch = TargetArch::aarch64;

/// What the filters are made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Creating UNIX sockets is refused (where Landlock cannot restrict connecting to them).
    pub refuse_unix_sockets: bool,
    /// Datagram and raw IP sockets and TCP Fast Open are refused (the network is closed, or open
    /// only through the proxy, and Landlock restricts TCP only).
    pub refuse_datagrams: bool,
}

/// The filters, to be installed in this order.
pub fn programs(options: Options) -> Result<Vec<BpfProgram>, String> {
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = REFUSED.iter().map(|n| (*n, Vec::new())).collect();
    refused.insert(libc::SYS_unshare, namespace_rules(0)?);
    refused.insert(libc::SYS_clone, namespace_rules(0)?);
    refused.insert(libc::SYS_ioctl, terminal_injection()?);
    refused.insert(libc::SYS_socket, socket_rules(options)?);
    if options.refuse_datagrams {
        refused.insert(libc::SYS_sendto, flag_rule(3, libc::MSG_FASTOPEN as u64)?);
        refused.insert(libc::SYS_sendmsg, flag_rule(2, libc::MSG_FASTOPEN as u64)?);
        refused.insert(libc::SYS_sendmmsg, flag_rule(3, libc::MSG_FASTOPEN as u64)?);
    }
    let missing: BTreeMap<i64, Vec<SeccompRule>> = NOT_IMPLEMENTED.iter().map(|n| (*n, Vec::new())).collect();
    [(refused, libc::EPERM), (missing, libc::ENOSYS)]
        .into_iter()
        .map(|(rules, errno)| {
            let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(errno as u32), ARCH)
                .map_err(|e| format!("seccomp: {e}"))?;
            BpfProgram::try_from(filter).map_err(|e| format!("seccomp: {e}"))
        })
        .collect()
}

fn rule(conditions: Vec<Cond>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| format!("seccomp: {e}"))
}

fn cond(arg: u8, len: Len, op: Op, value: u64) -> Result<Cond, String> {
    Cond::new(arg, len, op, value).map_err(|e| format!("seccomp: {e}"))
}

/// One rule per namespace flag in argument `arg`.
fn namespace_rules(arg: u8) -> Result<Vec<SeccompRule>, String> {
    NAMESPACES.iter().map(|flag| rule(vec![cond(arg, Len::Qword, Op::MaskedEq(*flag), *flag)?])).collect()
}

/// `ioctl(fd, TIOCSTI)` pushes characters into a terminal's input, `TIOCLINUX` can too.
#[allow(clippy::unnecessary_cast)] // the request's type differs between C libraries
fn terminal_injection() -> Result<Vec<SeccompRule>, String> {
    [libc::TIOCSTI, libc::TIOCLINUX]
        .iter()
        .map(|request| rule(vec![cond(1, Len::Dword, Op::Eq, *request as u64)?]))
        .collect()
}

/// A flag set in argument `arg`.
fn flag_rule(arg: u8, flag: u64) -> Result<Vec<SeccompRule>, String> {
    Ok(vec![rule(vec![cond(arg, Len::Dword, Op::MaskedEq(flag), flag)?])?])
}

/// `socket(family, type, _)`: families other than UNIX, IPv4, IPv6 and netlink; UNIX ones where
/// Landlock cannot restrict them; datagram and raw IP sockets when the network is closed.
fn socket_rules(options: Options) -> Result<Vec<SeccompRule>, String> {
    let family = |op: Op, f: i32| cond(0, Len::Dword, op, f as u64);
    let mut rules = vec![rule(vec![
        family(Op::Ne, libc::AF_UNIX)?,
        family(Op::Ne, libc::AF_INET)?,
        family(Op::Ne, libc::AF_INET6)?,
        family(Op::Ne, libc::AF_NETLINK)?,
    ])?];
    if options.refuse_unix_sockets {
        rules.push(rule(vec![family(Op::Eq, libc::AF_UNIX)?])?);
    }
    if options.refuse_datagrams {
        for f in [libc::AF_INET, libc::AF_INET6] {
            for kind in [libc::SOCK_DGRAM, libc::SOCK_RAW, libc::SOCK_SEQPACKET] {
                rules.push(rule(vec![family(Op::Eq, f)?, cond(1, Len::Dword, Op::MaskedEq(0xf), kind as u64)?])?);
            }
        }
    }
    Ok(rules)
}
