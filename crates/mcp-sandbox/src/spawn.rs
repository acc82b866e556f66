//! Starting a sandboxed process: the plan made, the ruleset and filters built, the environment
//! replaced, the proxy started, and the child's steps added to the command.

use std::any::Any;
use std::ffi::{CString, OsStr, OsString};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::{Arc, OnceLock};

use crate::cgroup::PidsCgroup;
use crate::filter::{self, Options};
use crate::kernel::{self, ChildSetup};
use crate::launch::{ErrorOutput, Exec};
use crate::plan::{Launch, Plan};
use crate::policy::{Limits, Network};
use crate::proxy::{self, Proxy};
use crate::rules::{self, Grants, Support};
use crate::spare::Spare;
use crate::Sandbox;
use landlock::RulesetCreated;
use mcp::client::{StartOptions, StartResult, Started, Stderr};

/// What lives as long as the process: its private temporary directory (removed after it), the
/// proxy, and the pipe a failing step reports on. Dropped (the process is gone), it makes ahead
/// what the command's next start will need.
#[derive(Debug)]
pub struct Guard {
    _proxy: Option<Proxy>,
    _cgroup: Option<PidsCgroup>,
    report: OwnedFd,
    _tmp: PrivateTmp,
    shared_tmp: Arc<PrivateTmp>,
    ahead: Option<Ahead>,
}

/// What to make ahead when a process of a command started more than once ends.
#[derive(Debug)]
struct Ahead {
    spares: Spares,
    /// What its Landlock ruleset granted, but for its temporary directory.
    grants: Option<Arc<Grants>>,
    /// The process limit of its pids cgroup, when it had one.
    cgroup: Option<u64>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        let Some(ahead) = self.ahead.take() else { return };
        ahead.spares.tmp.refill(|| own_tmp(&self.shared_tmp, ahead.grants.as_deref()).ok());
        if let Some(max) = ahead.cgroup {
            ahead.spares.cgroup.refill(|| PidsCgroup::create(max).ok().map(|c| (max, c)));
        }
    }
}

/// What a sandbox keeps between starts of the same command (the gateway starts one per session):
/// its plan, the paths its Landlock rules grant (opened once; each process gets a ruleset of its
/// own, with its own temporary directory), the directory under which each process gets that
/// temporary directory, and what the next start needs new, made ahead.
/// Building them is most of the cost of a start.
#[derive(Debug)]
pub struct Prepared {
    launch: Launch,
    plan: Arc<Plan>,
    grants: Option<Arc<Grants>>,
    /// Before `tmp`: a spare directory inside it goes first.
    spares: Spares,
    tmp: Arc<PrivateTmp>,
}

/// What the next start of a command needs new, made ahead once it has started twice.
#[derive(Debug, Clone, Default)]
struct Spares {
    /// A private temporary directory, and the ruleset that grants it.
    tmp: Spare<(PrivateTmp, Option<RulesetCreated>)>,
    /// A pids cgroup and the limit it was made with.
    cgroup: Spare<(u64, PidsCgroup)>,
}

impl Guard {
    /// What the child's failing step said (`step:errno`), if it said anything.
    fn report(&self) -> Option<(String, i32)> {
        let mut text = String::new();
        std::fs::File::from(self.report.try_clone().ok()?).read_to_string(&mut text).ok();
        let (step, errno) = text.rsplit_once(':')?;
        Some((step.to_owned(), errno.parse().ok()?))
    }
}

/// What our temporary directories and cgroups are named: `mcp-sandbox-PID-RANDOM`, PID ours.
pub const PREFIX: &str = "mcp-sandbox-";

/// Removes, once per process and on a thread of its own, what processes that were killed before
/// they could clean up left in `dirs` (a gateway ended with SIGKILL): the entries named after a
/// process that no longer exists. A cgroup goes only when empty.
pub fn sweep_once(dirs: Vec<PathBuf>) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = std::thread::Builder::new().name("mcp-sandbox-sweep".into()).spawn(move || {
            for dir in dirs {
                let Ok(entries) = std::fs::read_dir(&dir) else { continue };
                for entry in entries.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let Some(pid) = name.strip_prefix(PREFIX).and_then(|rest| rest.split('-').next()) else { continue };
                    let gone = pid.parse::<u32>().is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
                    if gone {
                        let path = entry.path();
                        let _ = std::fs::remove_dir(&path).or_else(|_| {
                            if path.starts_with("/sys") {
                                Ok(())
                            } else {
                                std::fs::remove_dir_all(&path)
                            }
                        });
                    }
                }
            }
        });
    });
}

/// A directory of its own under `base`, mode 0700, removed on drop.
#[derive(Debug)]
pub struct PrivateTmp(PathBuf);

impl PrivateTmp {
    fn create(base: &Path) -> io::Result<PrivateTmp> {
        use std::os::unix::fs::DirBuilderExt;
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_err(|e| io::Error::other(e.to_string()))?;
        let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let path = base.join(format!("{PREFIX}{}-{name}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(PrivateTmp(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn refusal(text: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, text)
}

/// Prepares `command` to start inside `sandbox` (the steps as its `pre_exec` hook: it will fork).
pub fn prepare(sandbox: &Sandbox, command: &mut Command) -> io::Result<Box<dyn Any + Send + Sync>> {
    Ok(Box::new(guarded(sandbox, command, false)?))
}

/// Starts `command` inside `sandbox` without `fork` ([`crate::launch`]).
pub fn start(sandbox: &Sandbox, command: &Command, options: StartOptions) -> StartResult {
    let launch = launch_of(command);
    let (guard, setup, env) = confined(sandbox, &launch, options.die_with_parent)?;
    let exec = exec_of(&launch, &env, options)?;
    let launched = crate::launch::launch(&setup, &exec).map_err(|e| explain(&guard, e))?;
    drop(setup); // the child's ends and the ruleset, ours no longer needed
    let started =
        Started { pid: launched.pid, stdin: launched.stdin, stdout: launched.stdout, stderr: launched.stderr };
    Ok((started, Box::new(guard)))
}

/// What `execve` is given for `launch` with the environment `env`: the program found on the
/// environment's `PATH` (as `Command` finds it), its name as the first argument.
fn exec_of(launch: &Launch, env: &[(OsString, OsString)], options: StartOptions) -> io::Result<Exec> {
    use std::os::unix::ffi::OsStrExt as _;
    let text = |s: &[u8]| {
        CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the command"))
    };
    // The child changes to its directory before execve: a relative one, and the program found
    // from it, are made absolute first (from ours, as Command's child would resolve them).
    let cwd = match &launch.cwd {
        Some(dir) if dir.is_absolute() => Some(dir.clone()),
        Some(dir) => Some(std::env::current_dir()?.join(dir)),
        None => None,
    };
    let lookup_dir = cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_else(|| "/".into());
    let path_var = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_os_str());
    let path = crate::plan::find_program(&launch.program, path_var, &lookup_dir)
        .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
    let path = text(path.as_os_str().as_bytes())?;
    let mut argv = vec![text(launch.program.as_bytes())?];
    for arg in &launch.args {
        argv.push(text(arg.as_bytes())?);
    }
    let mut shell_argv = vec![text(b"/bin/sh")?, path.clone()];
    shell_argv.extend(argv[1..].iter().cloned());
    let mut envp = Vec::with_capacity(env.len());
    for (key, value) in env {
        envp.push(text(&[key.as_bytes(), b"=", value.as_bytes()].concat())?);
    }
    Ok(Exec {
        path,
        argv,
        envp,
        cwd: cwd.map(|dir| text(dir.as_os_str().as_bytes())).transpose()?,
        stderr: match options.stderr {
            Stderr::Capture => ErrorOutput::Pipe,
            Stderr::Inherit => ErrorOutput::Inherit,
            Stderr::Discard => ErrorOutput::Null,
        },
        process_group: options.own_process_group,
        shell_argv,
    })
}

/// `command` made ready to start inside `sandbox` with the steps as its `pre_exec` hook.
fn guarded(sandbox: &Sandbox, command: &mut Command, die_with_parent: bool) -> io::Result<Guard> {
    let (guard, setup, env) = confined(sandbox, &launch_of(command), die_with_parent)?;
    command.env_clear();
    command.envs(env);
    kernel::install(command, setup);
    Ok(guard)
}

/// A process's whole environment.
type Environment = Vec<(OsString, OsString)>;

/// What a start inside `sandbox` needs: what lives as long as the process, what its child does
/// before `execve`, and its whole environment.
fn confined(sandbox: &Sandbox, launch: &Launch, die_with_parent: bool) -> io::Result<(Guard, ChildSetup, Environment)> {
    let learning_policy;
    let policy = if sandbox.learning {
        // Every host, through the proxy that notes its name.
        learning_policy = crate::Policy { network: Network::Allow(Vec::new()), ..sandbox.policy.clone() };
        &learning_policy
    } else {
        &sandbox.policy
    };
    let support = Support::current();
    let missing = rules::missing(policy, support);
    if !missing.is_empty() {
        if !policy.best_effort {
            return Err(refusal(format!(
                "sandbox of {}: this kernel cannot enforce {}. Set \"bestEffort\": true in its \"sandbox\" (or pass --best-effort) to run it with less",
                sandbox.name,
                missing.join("; ")
            )));
        }
        for part in &missing {
            eprintln!("mcp sandbox: {}: bestEffort: running without {part}", sandbox.name);
        }
    }
    let ForStart { plan, grants, shared_tmp, spares } = prepared(sandbox, policy, launch, support)?;
    // A spare removed since it was made (a cleaner of old files in /tmp) is made anew.
    let (tmp, ruleset) = match spares.as_ref().and_then(|s| s.tmp.take()).filter(|(t, _)| t.path().is_dir()) {
        Some(made_ahead) => made_ahead,
        None => own_tmp(&shared_tmp, grants.as_deref())?,
    };
    *sandbox.last_plan.lock().unwrap_or_else(|e| e.into_inner()) = Some((plan.clone(), tmp.path().to_owned()));
    let observer = match sandbox.watch {
        true => {
            let (ours, theirs) = kernel::socket_pair()?;
            crate::observe::start(ours, sandbox.seen.clone())?;
            Some((theirs, kernel::observer_program(&crate::observe::WATCHED)))
        }
        false => None,
    };
    let options =
        Options { refuse_unix_sockets: !support.unix_sockets(), refuse_datagrams: policy.network != Network::Any };
    let filters = programs(options).map_err(io::Error::other)?;
    const TMP_VARS: [&str; 3] = ["TMPDIR", "TMP", "TEMP"];
    let mut env: Environment = plan.env.iter().filter(|(k, _)| !TMP_VARS.iter().any(|t| k == t)).cloned().collect();
    env.extend(TMP_VARS.iter().map(|key| (OsString::from(key), tmp.path().as_os_str().to_owned())));
    let (uid, gid) = kernel::ids();
    let user_maps = Some((format!("{uid} {uid} 1").into_bytes(), format!("{gid} {gid} 1").into_bytes()));
    let (proxy, proxy_socket) = match &policy.network {
        Network::Allow(hosts) => {
            let (ours, theirs) = kernel::socket_pair()?;
            let rules = proxy::Rules {
                hosts: hosts.clone(),
                hosts_file: sandbox.hosts_file.clone(),
                journal: sandbox.journal(),
                server: sandbox.name.clone(),
                allow_all: sandbox.learning,
            };
            (Some(proxy::start(ours, rules)?), Some(theirs))
        }
        _ => (None, None),
    };
    let cgroup_spare = |max| spares.as_ref()?.cgroup.take().filter(|(made_for, _)| *made_for == max).map(|(_, c)| c);
    let cgroup = match policy.limits.processes {
        Some(max) if kernel::is_root() => match cgroup_spare(max).map(Ok).unwrap_or_else(|| PidsCgroup::create(max)) {
            Ok(cgroup) => Some(cgroup),
            Err(e) if policy.best_effort => {
                eprintln!("mcp sandbox: {}: bestEffort: running without a process limit ({e})", sandbox.name);
                None
            }
            Err(e) => return Err(refusal(format!(
                "sandbox of {}: the process limit: the kernel exempts root from RLIMIT_NPROC and no pids cgroup could be made ({e}). Set \"limits\": {{\"processes\": null}} or \"bestEffort\": true to run it without one",
                sandbox.name
            ))),
        },
        _ => None,
    };
    let (report, report_write) = kernel::report_pipe()?;
    let setup = ChildSetup {
        user_maps,
        userns_optional: policy.best_effort,
        proxy_socket,
        limits: limits(&policy.limits),
        ruleset,
        filters,
        report: report_write,
        die_with_parent,
        cgroup_procs: cgroup.as_ref().map(|c| c.procs.clone()),
        observer,
    };
    let processes = policy.limits.processes.filter(|_| cgroup.is_some());
    let ahead = spares.map(|spares| Ahead { spares, grants, cgroup: processes });
    Ok((Guard { _proxy: proxy, _cgroup: cgroup, report, _tmp: tmp, shared_tmp, ahead }, setup, env))
}

/// A private temporary directory under `shared_tmp`, and the Landlock ruleset of `grants` with it.
fn own_tmp(shared_tmp: &PrivateTmp, grants: Option<&Grants>) -> io::Result<(PrivateTmp, Option<RulesetCreated>)> {
    let tmp = PrivateTmp::create(shared_tmp.path())?;
    let ruleset = grants.map(|grants| rules::ruleset(grants, tmp.path())).transpose().map_err(refusal)?;
    Ok((tmp, ruleset))
}

/// What one start takes from what its sandbox keeps.
struct ForStart {
    plan: Arc<Plan>,
    /// `None`: no Landlock (none on this kernel, or learning).
    grants: Option<Arc<Grants>>,
    shared_tmp: Arc<PrivateTmp>,
    /// What was made ahead for the command, when it has started before.
    spares: Option<Spares>,
}

/// The plan, its Landlock grants and the shared temporary directory for `launch`: kept from the
/// last start of the same command, else made (and kept, unless learning); with what is made
/// ahead for the command's starts when it was kept.
fn prepared(sandbox: &Sandbox, policy: &crate::Policy, launch: &Launch, support: Support) -> io::Result<ForStart> {
    let mut kept = sandbox.prepared.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = kept.as_ref().filter(|p| p.launch == *launch && !sandbox.learning) {
        return Ok(ForStart {
            plan: p.plan.clone(),
            grants: p.grants.clone(),
            shared_tmp: p.tmp.clone(),
            spares: Some(p.spares.clone()),
        });
    }
    let mut leftovers = vec![std::env::temp_dir()];
    if kernel::is_root() {
        leftovers.extend(crate::cgroup::hierarchy());
    }
    sweep_once(leftovers);
    let tmp = Arc::new(PrivateTmp::create(&std::env::temp_dir())?);
    let ours: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let plan = Arc::new(Plan::new(policy, launch, &sandbox.roots, tmp.path(), &ours));
    let grants = match support.abi {
        0 => None,
        _ if sandbox.learning => None,
        _ => Some(Arc::new(rules::grants(policy, &plan, support, tmp.path()))),
    };
    if !sandbox.learning {
        let spares = Spares::default();
        let launch = launch.clone();
        *kept = Some(Prepared { launch, plan: plan.clone(), grants: grants.clone(), tmp: tmp.clone(), spares });
    }
    Ok(ForStart { plan, grants, shared_tmp: tmp, spares: None })
}

/// Says which step failed when a sandboxed process could not start.
pub fn explain(kept: &(dyn Any + Send + Sync), error: io::Error) -> io::Error {
    match kept.downcast_ref::<Guard>().and_then(Guard::report) {
        Some((step, errno)) => {
            let cause = io::Error::from_raw_os_error(errno);
            let hint = match step.as_str() {
                "user namespace" => ": this system refuses unprivileged user namespaces (kernel.unprivileged_userns_clone, user.max_user_namespaces, or AppArmor's restriction); set \"bestEffort\": true to run without one (then no process limit and no network list)",
                _ => "",
            };
            io::Error::new(error.kind(), format!("sandbox: {step} failed: {cause}{hint}"))
        }
        None => error,
    }
}

/// The seccomp filters for `options`, compiled once per process.
fn programs(options: Options) -> Result<Arc<Vec<filter::Program>>, String> {
    type Compiled = OnceLock<Result<Arc<Vec<filter::Program>>, String>>;
    static CACHE: [Compiled; 4] = [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let index = usize::from(options.refuse_unix_sockets) * 2 + usize::from(options.refuse_datagrams);
    CACHE[index].get_or_init(|| filter::programs(options).map(Arc::new)).clone()
}

fn limits(limits: &Limits) -> Vec<(libc::__rlimit_resource_t, u64)> {
    let mib = |n: u64| n.saturating_mul(1 << 20);
    let mut out = vec![(libc::RLIMIT_CORE, 0)];
    let pairs = [
        (libc::RLIMIT_DATA, limits.memory_mib.map(mib)),
        (libc::RLIMIT_NPROC, limits.processes),
        (libc::RLIMIT_NOFILE, limits.open_files),
        (libc::RLIMIT_CPU, limits.cpu_seconds),
        (libc::RLIMIT_FSIZE, limits.file_size_mib.map(mib)),
    ];
    out.extend(pairs.into_iter().filter_map(|(r, v)| Some((r, v?))));
    out
}

/// The command as it will start.
fn launch_of(command: &Command) -> Launch {
    Launch {
        program: command.get_program().to_owned(),
        args: command.get_args().map(OsStr::to_owned).collect(),
        cwd: command.get_current_dir().map(Path::to_owned),
        env: command.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))).collect(),
    }
}

/// `mcp sandbox -- PROGRAM ARGS`: runs the program in the sandbox with this process's stdin,
/// stdout and stderr, waits for it (serving its proxy meanwhile), and returns how it ended.
pub fn run(sandbox: &Sandbox, program: &OsStr, args: &[OsString]) -> io::Result<ExitStatus> {
    let mut command = Command::new(program);
    command.args(args);
    let guard = guarded(sandbox, &mut command, true)?;
    let mut child = command.spawn().map_err(|e| {
        let e = explain(&guard, e);
        io::Error::new(e.kind(), format!("cannot start {}: {e}", program.to_string_lossy()))
    })?;
    let status = child.wait()?;
    drop(guard);
    Ok(status)
}
