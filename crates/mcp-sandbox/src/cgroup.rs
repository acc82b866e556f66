//! The process limit for root. The kernel exempts uid 0 from `RLIMIT_NPROC` (a fork bomb of a
//! server run by root would not stop), so for root the limit is a `pids` cgroup of the server's
//! own instead: made under ours (cgroup v2 where its `pids` controller is on, else the v1 `pids`
//! hierarchy), the child moving itself into it before exec, removed once the server is gone.

use std::ffi::CString;
use std::path::{Path, PathBuf};

/// A cgroup of one server, removed on drop (when its processes are gone).
#[derive(Debug)]
pub struct PidsCgroup {
    dir: PathBuf,
    /// `DIR/cgroup.procs`, for the child to write `0` to.
    pub procs: CString,
}

impl PidsCgroup {
    /// A new cgroup allowing `max` processes and threads; why not, if none can be made here.
    pub fn create(max: u64) -> Result<PidsCgroup, String> {
        let base = hierarchy().ok_or("no pids cgroup controller is mounted")?;
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_err(|e| e.to_string())?;
        let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let dir = base.join(format!("{}{}-{name}", crate::spawn::PREFIX, std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let cgroup = PidsCgroup {
            procs: CString::new(dir.join("cgroup.procs").into_os_string().into_encoded_bytes())
                .map_err(|e| e.to_string())?,
            dir,
        };
        std::fs::write(cgroup.dir.join("pids.max"), max.to_string())
            .map_err(|e| format!("{}: {e}", cgroup.dir.join("pids.max").display()))?;
        Ok(cgroup)
    }
}

impl Drop for PidsCgroup {
    /// The server is gone: what it left running is killed, and the cgroup removed.
    fn drop(&mut self) {
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
            for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                crate::kernel::kill(pid);
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

/// Where our servers' cgroups are made (found once), if anywhere.
pub fn hierarchy() -> Option<PathBuf> {
    static HIERARCHY: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    HIERARCHY.get_or_init(pids_hierarchy).clone()
}

/// Our own cgroup in a hierarchy where the `pids` controller can be used.
fn pids_hierarchy() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let ours = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in mounts.lines() {
        let (left, right) = line.split_once(" - ")?;
        let mount_point = left.split(' ').nth(4)?;
        let mut fields = right.split(' ');
        let (kind, options) = (fields.next()?, fields.nth(1).unwrap_or(""));
        let own_path = match kind {
            "cgroup" if options.split(',').any(|o| o == "pids") => {
                own_cgroup(&ours, |c| c.split(',').any(|c| c == "pids"))
            }
            "cgroup2" => own_cgroup(&ours, str::is_empty).filter(|p| v2_has_pids(Path::new(mount_point), p)),
            _ => None,
        };
        if let Some(path) = own_path {
            return Some(Path::new(mount_point).join(path.trim_start_matches('/')));
        }
    }
    None
}

/// Our path in the hierarchy whose controllers field satisfies `which` (`/proc/self/cgroup`).
fn own_cgroup(text: &str, which: impl Fn(&str) -> bool) -> Option<String> {
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        which(controllers).then(|| path.to_owned())
    })
}

/// A v2 cgroup whose children get the `pids` controller.
fn v2_has_pids(mount: &Path, path: &str) -> bool {
    let dir = mount.join(path.trim_start_matches('/'));
    let has =
        |file: &str| std::fs::read_to_string(dir.join(file)).is_ok_and(|t| t.split_whitespace().any(|c| c == "pids"));
    has("cgroup.subtree_control")
        || (has("cgroup.controllers") && std::fs::write(dir.join("cgroup.subtree_control"), "+pids").is_ok())
}
