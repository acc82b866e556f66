//! A policy made concrete for one command: which paths it may read, run and write, and its
//! environment. Everything here is decided in the parent, before the process starts.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::policy::{absolute, Network, Policy};

/// The system's programs and libraries: read and run.
const SYSTEM_EXEC: [&str; 7] = ["/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"];
/// What programs read of the rest of the system: the loader's cache, time zones, certificates,
/// name resolution, the user database (never `/etc/shadow`), the kernel's view of the machine.
const SYSTEM_READ: [&str; 25] = [
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/crypto-policies",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/os-release",
    "/etc/mime.types",
    "/etc/locale.alias",
    "/etc/alternatives",
    "/proc",
    "/sys/devices/system/cpu",
    "/sys/fs/cgroup",
    "/dev/urandom",
    "/dev/random",
];
/// Devices anyone may write to.
const DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];
/// Environment variables every program may see (besides the policy's `env`).
const BASE_ENV: [&str; 13] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TERM",
    "NO_COLOR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
];
/// Programs whose first file argument is the server's own code.
const INTERPRETERS: [&str; 10] = ["node", "python", "deno", "bun", "ruby", "perl", "sh", "bash", "java", "php"];

/// The port of the filtering proxy inside the server's own network namespace.
pub const PROXY_PORT: u16 = 3128;

/// The command as the process will be started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Launch {
    /// The program as named.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Its working directory (else ours).
    pub cwd: Option<PathBuf>,
    /// Variables set for it explicitly (the entry's `env`, `--env`): always passed.
    pub env: Vec<(OsString, OsString)>,
}

/// What the kernel will be told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Read (files and directories).
    pub read: BTreeSet<PathBuf>,
    /// Read and run.
    pub exec: BTreeSet<PathBuf>,
    /// Read and write (create, remove, truncate), not run.
    pub write: BTreeSet<PathBuf>,
    /// Device files read and written.
    pub devices: BTreeSet<PathBuf>,
    /// The whole environment of the process.
    pub env: Vec<(OsString, OsString)>,
}

impl Plan {
    /// The plan for `launch` under `policy`, with `roots` (directories offered as MCP roots) and
    /// `tmp` (the directory its private temporary directories lie in; each start sets `TMPDIR` to
    /// its own); `ours` is this process's environment.
    pub fn new(policy: &Policy, launch: &Launch, roots: &[PathBuf], tmp: &Path, ours: &[(OsString, OsString)]) -> Plan {
        let mut plan = Plan::default();
        let cwd = launch.cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_else(|| "/".into());
        plan.exec.extend(SYSTEM_EXEC.iter().map(PathBuf::from).filter(|p| p.exists()));
        plan.read.extend(SYSTEM_READ.iter().map(PathBuf::from).filter(|p| p.exists()));
        plan.read.extend(python_config());
        plan.devices.extend(DEVICES.iter().map(PathBuf::from).filter(|p| p.exists()));
        plan.env = environment(policy, launch, tmp, ours);
        let path_var = plan.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone());
        if let Some(program) = find_program(&launch.program, path_var.as_deref(), &cwd) {
            plan.add_install(&program, path_var.as_deref(), &cwd);
        }
        let interpreted = is_interpreter(&launch.program);
        let mut first_file = true;
        for arg in &launch.args {
            let Some(path) = argument_path(arg, &cwd) else { continue };
            if path.is_dir() {
                let set = if policy.arguments_writable { &mut plan.write } else { &mut plan.read };
                set.insert(path);
            } else if path.is_file() {
                if interpreted && first_file {
                    plan.exec.insert(install_root(&path));
                }
                first_file = false;
                plan.read.insert(path);
            }
        }
        for root in roots.iter().filter(|r| r.is_dir()) {
            let set = if policy.arguments_writable { &mut plan.write } else { &mut plan.read };
            set.insert(root.clone());
        }
        plan.read.extend(policy.read.iter().cloned());
        plan.write.extend(policy.write.iter().cloned());
        plan.exec.extend(policy.execute.iter().cloned());
        plan.write.insert(tmp.to_owned());
        plan
    }

    /// The program's install (and its interpreter's, for a script), readable and runnable.
    fn add_install(&mut self, program: &Path, path_var: Option<&OsStr>, cwd: &Path) {
        self.exec.insert(install_root(program));
        if let Ok(real) = program.canonicalize() {
            self.exec.insert(install_root(&real));
            if let Some(interpreter) = shebang(&real, path_var, cwd) {
                self.exec.insert(install_root(&interpreter));
                if let Ok(real) = interpreter.canonicalize() {
                    self.exec.insert(install_root(&real));
                }
            }
        }
    }
}

/// `arg` as a path, if it names one that exists: `DIR`, `./x`, `--flag=/path`.
fn argument_path(arg: &OsStr, cwd: &Path) -> Option<PathBuf> {
    let bytes = arg.as_bytes();
    let value = match bytes.iter().position(|b| *b == b'=') {
        Some(i) if bytes.starts_with(b"-") => &bytes[i + 1..],
        _ if bytes.starts_with(b"-") => return None,
        _ => bytes,
    };
    if value.is_empty() || value.contains(&0) {
        return None;
    }
    let text = std::str::from_utf8(value).ok()?;
    let path = absolute(text, cwd);
    path.exists().then_some(path)
}

fn is_interpreter(program: &OsStr) -> bool {
    let name = Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    INTERPRETERS
        .iter()
        .any(|i| name == *i || (name.starts_with(i) && name[i.len()..].chars().all(|c| c.is_ascii_digit() || c == '.')))
}

/// Where `program` is: a path as given (relative to `cwd`), else the first match on `PATH`.
pub fn find_program(program: &OsStr, path_var: Option<&OsStr>, cwd: &Path) -> Option<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        let path = cwd.join(program);
        return path.exists().then_some(path);
    }
    // As execvp: the first file there that may be run.
    let runnable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt as _;
        p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let path_var = path_var.map(OsStr::to_owned).or_else(|| std::env::var_os("PATH"))?;
    std::env::split_paths(&path_var).map(|dir| cwd.join(dir).join(program)).find(|p| runnable(p))
}

/// The interpreter a script names on its `#!` line (`/usr/bin/env NAME` looked up on `PATH`).
fn shebang(script: &Path, path_var: Option<&OsStr>, cwd: &Path) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|b| *b == b'\n').unwrap_or(line.len())];
    let text = std::str::from_utf8(line).ok()?;
    let mut words = text.split_whitespace();
    let interpreter = words.next()?;
    if interpreter.ends_with("/env") {
        let name = words.find(|w| !w.starts_with('-'))?;
        return find_program(OsStr::new(name), path_var, cwd);
    }
    Some(PathBuf::from(interpreter))
}

/// The directory a program or script was installed into: the project holding the outermost
/// `node_modules` above it, a Python virtual environment (`pyvenv.cfg`), the prefix of a `bin`
/// directory, else its own directory. Never `/` or the home directory itself.
pub fn install_root(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("/")).to_owned();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let acceptable = |p: &Path| p.parent().is_some() && Some(p) != home.as_deref();
    let outermost_modules = path.ancestors().filter(|a| a.file_name() == Some(OsStr::new("node_modules"))).last();
    if let Some(project) = outermost_modules.and_then(Path::parent).filter(|p| acceptable(p)) {
        return project.to_owned();
    }
    if let Some(venv) = path.ancestors().skip(1).find(|a| a.join("pyvenv.cfg").is_file()).filter(|p| acceptable(p)) {
        return venv.to_owned();
    }
    let is_bin = matches!(dir.file_name().and_then(OsStr::to_str), Some("bin" | "sbin" | ".bin" | "shims"));
    match dir.parent() {
        Some(prefix) if is_bin && acceptable(prefix) => prefix.to_owned(),
        _ => dir,
    }
}

/// Debian's Python reads its `sitecustomize` under `/etc/python3.X`.
fn python_config() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/etc") else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(OsStr::to_str).is_some_and(|n| n.starts_with("python3")))
        .collect()
}

/// The environment: ours, only the variables every program needs and those the policy names
/// (so no token, key or secret of ours passes unless named), then the explicit ones, then the
/// private temporary directory and the proxy.
fn environment(
    policy: &Policy,
    launch: &Launch,
    tmp: &Path,
    ours: &[(OsString, OsString)],
) -> Vec<(OsString, OsString)> {
    let passes = |name: &OsStr| {
        let name = name.to_string_lossy();
        BASE_ENV.iter().any(|p| glob(p, &name)) || policy.env.iter().any(|p| glob(p, &name))
    };
    let mut env: Vec<(OsString, OsString)> = ours.iter().filter(|(k, _)| passes(k)).cloned().collect();
    let mut set = |key: &str, value: OsString| {
        env.retain(|(k, _)| k != key);
        env.push((key.into(), value));
    };
    for (key, value) in &launch.env {
        set(&key.to_string_lossy(), value.clone());
    }
    for key in ["TMPDIR", "TMP", "TEMP"] {
        set(key, tmp.as_os_str().to_owned());
    }
    if let Network::Allow(_) = policy.network {
        let proxy = OsString::from(format!("http://127.0.0.1:{PROXY_PORT}"));
        for key in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"] {
            set(key, proxy.clone());
        }
        for key in ["NO_PROXY", "no_proxy"] {
            set(key, OsString::new());
        }
        set("NODE_USE_ENV_PROXY", "1".into()); // Node's fetch honours the variables only then
    }
    env
}

/// `*` matches any run of characters; everything else itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            text.starts_with(head)
                && (0..=text.len() - head.len())
                    .any(|i| text.is_char_boundary(head.len() + i) && glob(tail, &text[head.len() + i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names() {
        assert!(glob("LC_*", "LC_ALL") && glob("*_TOKEN", "GITHUB_TOKEN") && glob("A*B*C", "AxxBxC"));
        assert!(!glob("LC_*", "LANG") && !glob("PATH", "PATHX"));
    }

    #[test]
    fn install_roots_are_prefixes_projects_and_environments() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        assert_eq!(install_root(&venv.join("bin/python")), venv);
        let script = dir.path().join("proj/node_modules/@x/srv/node_modules/y/dist/index.js");
        assert_eq!(install_root(&script), dir.path().join("proj"));
        assert_eq!(install_root(Path::new("/opt/tool/bin/tool")), PathBuf::from("/opt/tool"));
        assert_eq!(install_root(Path::new("/bin/sh")), PathBuf::from("/bin"));
        assert_eq!(install_root(Path::new("/srv/target/release/paypedia")), PathBuf::from("/srv/target/release"));
    }

    #[test]
    fn the_environment_keeps_only_what_is_named() {
        let ours: Vec<(OsString, OsString)> = [
            ("PATH", "/usr/bin"),
            ("GITHUB_TOKEN", "t"),
            ("MCP_AUTH_FILE", "f"),
            ("AWS_SECRET_ACCESS_KEY", "k"),
            ("LC_ALL", "C"),
            ("NODE_OPTIONS", "x"),
        ]
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let mut policy = Policy::strict();
        policy.env = vec!["NODE_*".into()];
        let launch = Launch { env: vec![("EXPLICIT".into(), "1".into())], ..Launch::default() };
        let env = environment(&policy, &launch, Path::new("/tmp/x"), &ours);
        let names: Vec<String> = env.iter().map(|(k, _)| k.to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["PATH", "LC_ALL", "NODE_OPTIONS", "EXPLICIT", "TMPDIR", "TMP", "TEMP"]);
    }

    #[test]
    fn directories_named_as_arguments_are_writable_and_files_readable() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let file = dir.path().join("crm.sqlite");
        std::fs::write(&file, "").unwrap();
        let launch = Launch {
            program: "/bin/true".into(),
            args: vec![data.clone().into(), format!("--db={}", file.display()).into(), "--verbose".into()],
            ..Launch::default()
        };
        let plan = Plan::new(&Policy::strict(), &launch, &[], Path::new("/tmp/p"), &[]);
        assert!(plan.write.contains(&data) && plan.read.contains(&file));
        assert!(plan.write.contains(Path::new("/tmp/p")));
        assert!(!plan.read.iter().chain(&plan.exec).any(|p| p == Path::new("/") || p == Path::new("/etc")));
        let read_only = Policy { arguments_writable: false, ..Policy::strict() };
        let plan = Plan::new(&read_only, &launch, &[], Path::new("/tmp/p"), &[]);
        assert!(plan.read.contains(&data) && !plan.write.contains(&data));
    }
}
