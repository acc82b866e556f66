//! The Landlock ruleset of a plan, built in the parent (the plan's paths opened once per command,
//! a ruleset of its own for each start) so that the child only has to call
//! `landlock_restrict_self`; and what this kernel can enforce.

use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};

use crate::plan::{Plan, PROXY_PORT};
use crate::policy::{Network, Policy};

/// What this kernel's Landlock offers, by ABI version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI (0: none).
    pub abi: i32,
}

impl Support {
    /// This kernel's (asked once).
    pub fn current() -> Support {
        static CURRENT: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
        Support { abi: *CURRENT.get_or_init(crate::kernel::landlock_abi) }
    }

    /// The newest ABI this crate's rules are written for that the kernel has.
    fn abi(self) -> ABI {
        ABI::from(self.abi.min(9))
    }

    /// Restricts connecting to pathname UNIX sockets (else seccomp refuses creating them).
    pub fn unix_sockets(self) -> bool {
        self.abi >= 9
    }

    /// Restricts TCP bind and connect.
    pub fn tcp(self) -> bool {
        self.abi >= 4
    }
}

/// What the policy asks that this kernel cannot enforce, each part with how to loosen it.
pub fn missing(policy: &Policy, support: Support) -> Vec<String> {
    let mut missing = Vec::new();
    let kernel = format!("this kernel's Landlock ABI is {}", support.abi);
    if support.abi < 1 {
        missing.push(format!(
            "file system rules: Landlock is not available ({kernel}; it needs Linux 5.13 with landlock in the lsm= boot list)"
        ));
        return missing;
    }
    if support.abi < 3 {
        missing.push(format!("refusing truncation of files it may only read ({kernel}, needs 3: Linux 6.2)"));
    }
    if support.abi < 4 && policy.network == Network::None {
        missing.push(format!("closing TCP ({kernel}, needs 4: Linux 6.7); or set \"network\": true"));
    }
    if support.abi < 5 {
        missing.push(format!("refusing ioctl on devices ({kernel}, needs 5: Linux 6.10)"));
    }
    if support.abi < 6 {
        missing.push(format!(
            "keeping its signals and abstract UNIX sockets inside the sandbox ({kernel}, needs 6: Linux 6.12)"
        ));
    }
    missing
}

/// Read, list and run.
fn exec_rights() -> BitFlags<AccessFs> {
    AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute
}

/// Read and list.
fn read_rights() -> BitFlags<AccessFs> {
    AccessFs::ReadFile | AccessFs::ReadDir
}

/// Everything but running programs, making devices and ioctl on devices.
fn write_rights(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_all(abi) & !(AccessFs::Execute | AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev)
}

/// What every start of a command puts in a Landlock ruleset of its own (with its private temporary
/// directory): the plan's paths with the rights each is granted and what each was when the plan
/// was made, and what the policy handles. No descriptor is kept between starts (a command would
/// hold some 35, and keep their mounts busy): each ruleset opens the paths again, and refuses to
/// grant one that is no longer the same file (a sandboxed process that can write above a granted
/// directory could have put a link to somewhere else in its place).
#[derive(Debug)]
pub struct Grants {
    paths: Vec<Grant>,
    support: Support,
    best_effort: bool,
    network: Network,
}

/// One path of the plan.
#[derive(Debug)]
struct Grant {
    path: PathBuf,
    rights: BitFlags<AccessFs>,
    /// Device and inode when the plan was made.
    identity: (u64, u64),
}

/// `path` opened for naming it only (`O_PATH`, closed on exec).
fn open_path(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH).open(path)
}

/// The grants of `plan` under `policy`, but for `shared_tmp` (the parent of the private temporary
/// directories: each process is granted its own, not its neighbours').
pub fn grants(policy: &Policy, plan: &Plan, support: Support, shared_tmp: &Path) -> Grants {
    let abi = support.abi();
    let file_rights = AccessFs::from_file(abi);
    let mut paths = Vec::new();
    let mut grant = |path: &Path, rights: BitFlags<AccessFs>| {
        let Ok(meta) = open_path(path).and_then(|file| file.metadata()) else { return }; // gone since
        let rights = if meta.is_dir() { rights } else { rights & file_rights };
        paths.push(Grant { path: path.to_owned(), rights, identity: (meta.dev(), meta.ino()) });
    };
    for path in &plan.exec {
        grant(path, exec_rights());
    }
    for path in &plan.read {
        grant(path, read_rights());
    }
    for path in plan.write.iter().filter(|p| *p != shared_tmp) {
        grant(path, write_rights(abi));
    }
    for path in &plan.devices {
        grant(path, AccessFs::ReadFile | AccessFs::WriteFile);
    }
    Grants { paths, support, best_effort: policy.best_effort, network: policy.network.clone() }
}

/// The ruleset of one start: every file system right handled (so what no rule grants is
/// refused), TCP handled unless the network is open, signals and abstract sockets scoped; the
/// `grants`, and reading and writing in `private_tmp`.
pub fn ruleset(grants: &Grants, private_tmp: &Path) -> Result<RulesetCreated, String> {
    let support = grants.support;
    let abi = support.abi();
    let level = if grants.best_effort { CompatLevel::BestEffort } else { CompatLevel::HardRequirement };
    let fail = |e: landlock::RulesetError| format!("Landlock: {e}");
    let mut ruleset =
        Ruleset::default().set_compatibility(level).handle_access(AccessFs::from_all(abi)).map_err(fail)?;
    if grants.network != Network::Any && support.tcp() {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp).map_err(fail)?;
    }
    if support.abi >= 6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(fail)?;
    }
    let mut created = ruleset.create().map_err(fail)?;
    let mut add = |path: &Path, file: std::fs::File, rights: BitFlags<AccessFs>| {
        (&mut created)
            .add_rule(PathBeneath::new(file, rights))
            .map(|_| ())
            .map_err(|e| format!("Landlock rule for {}: {e}", path.display()))
    };
    for grant in &grants.paths {
        let Ok(file) = open_path(&grant.path) else { continue }; // gone since: nothing to grant
        let meta = file.metadata().map_err(|e| format!("{}: {e}", grant.path.display()))?;
        if (meta.dev(), meta.ino()) != grant.identity {
            return Err(format!(
                "{} is no longer the file its rules were made for (something else was put in its place since the first start); start mcp again to make them anew",
                grant.path.display()
            ));
        }
        add(&grant.path, file, grant.rights)?;
    }
    let tmp = open_path(private_tmp).map_err(|e| format!("{}: {e}", private_tmp.display()))?;
    add(private_tmp, tmp, write_rights(abi))?;
    if let (Network::Allow(_), true) = (&grants.network, support.tcp()) {
        created = created.add_rule(NetPort::new(PROXY_PORT, AccessNet::ConnectTcp)).map_err(fail)?;
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_kernel_names_what_it_cannot_enforce_and_how_to_loosen_it() {
        let strict = Policy::strict();
        assert!(missing(&strict, Support { abi: 7 }).is_empty());
        let v3 = missing(&strict, Support { abi: 3 });
        assert!(v3.iter().any(|m| m.contains("closing TCP") && m.contains("\"network\": true")), "{v3:?}");
        assert!(v3.iter().any(|m| m.contains("signals")), "{v3:?}");
        let open = Policy { network: Network::Any, ..Policy::strict() };
        assert!(!missing(&open, Support { abi: 3 }).iter().any(|m| m.contains("TCP")));
        let none = missing(&strict, Support { abi: 0 });
        assert_eq!(none.len(), 1);
        assert!(none[0].contains("Landlock is not available"), "{none:?}");
    }

    #[test]
    fn this_kernel_builds_the_ruleset_of_the_default() {
        let tmp = tempfile::tempdir().unwrap();
        let plan = Plan::new(&Policy::strict(), &Default::default(), &[], tmp.path(), &[]);
        let grants = grants(&Policy::strict(), &plan, Support::current(), tmp.path());
        assert!(ruleset(&grants, tmp.path()).is_ok());
    }

    #[test]
    fn a_granted_directory_put_somewhere_else_since_the_plan_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let (data, elsewhere, own) = (tmp.path().join("data"), tmp.path().join("elsewhere"), tmp.path().join("own"));
        for dir in [&data, &elsewhere, &own] {
            std::fs::create_dir(dir).unwrap();
        }
        let mut plan = Plan::default();
        plan.write.insert(data.clone());
        let grants = grants(&Policy::strict(), &plan, Support::current(), Path::new("/nonexistent"));
        assert!(ruleset(&grants, &own).is_ok());
        std::fs::remove_dir(&data).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &data).unwrap();
        let refusal = ruleset(&grants, &own).expect_err("a link in the granted directory's place");
        assert!(refusal.contains("no longer the file") && refusal.contains("data"), "{refusal}");
        std::fs::remove_file(&data).unwrap();
        assert!(ruleset(&grants, &own).is_ok(), "gone since: nothing to grant, nothing refused");
    }
}
