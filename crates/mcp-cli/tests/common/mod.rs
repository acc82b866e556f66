//! What the end-to-end tests share: the binaries under test, a look at running processes, and
//! the test authorization server.
#![allow(dead_code)] // each test crate uses its own part

pub mod gateway;
pub mod oidc;

use std::path::PathBuf;
use std::process::Command;

/// The `mcp` binary under test.
pub fn mcp() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcp"))
}

/// The other packages' binaries these tests run (cargo does not rebuild another package's
/// binary for this package's tests): built together, once per test run, in this run's profile.
/// One `cargo build` for all of them: each package set has its own feature unification, and
/// every distinct set rebuilds the shared crates.
const OTHER_PACKAGES: [&str; 3] = ["mcp-example", "paypedia", "mcp-server-conformance"];

fn other_binary(name: &str) -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut args = vec!["build", "-q"];
        for package in OTHER_PACKAGES {
            args.extend(["-p", package]);
        }
        // paypedia with every feature, as the workspace builds it: the same binary path is shared
        // with paypedia's own tests, which need them.
        args.extend(["--features", "paypedia/tls,paypedia/auth,paypedia/redis,paypedia/sqlite"]);
        if mcp().parent().is_some_and(|d| d.ends_with("release")) {
            args.push("--release");
        }
        let mut command = Command::new(cargo);
        command.args(&args);
        // Without the variables cargo sets for this test process: build scripts that watch
        // them (ring's watches CARGO_PKG_NAME...) would see them change and rebuild, and so
        // would the next plain `cargo` run, back and forth.
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            let set_for_tests = [
                "CARGO_PKG_",
                "CARGO_MANIFEST_",
                "CARGO_BIN_",
                "CARGO_CRATE_",
                "CARGO_PRIMARY_",
                "CARGO_TARGET_TMPDIR",
            ];
            if set_for_tests.iter().any(|prefix| name.starts_with(prefix)) {
                command.env_remove(name.as_ref());
            }
        }
        let status = command.status().unwrap();
        assert!(status.success(), "building {OTHER_PACKAGES:?}");
    });
    mcp().with_file_name(name)
}

/// The `mcp-example` binary next to `mcp`.
pub fn example() -> PathBuf {
    other_binary("mcp-example")
}

/// The `mcp-server-conformance` binary.
pub fn conformance_server() -> PathBuf {
    other_binary("mcp-server-conformance")
}

/// `mcp-hostile` (package mcp-example).
pub fn hostile() -> PathBuf {
    other_binary("mcp-hostile")
}

/// The `paypedia` binary.
pub fn paypedia() -> PathBuf {
    other_binary("paypedia")
}

/// Whether a process whose command line contains `marker` is alive (zombies count as gone).
pub fn running(marker: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return false };
    entries.flatten().any(|entry| {
        let path = entry.path();
        let cmdline = std::fs::read(path.join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        let zombie = stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z'));
        !zombie && String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(marker)
    })
}

/// A `sleep` argument no other process has: its seconds end in this process's id.
pub fn unique_sleep() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    format!("300.{}{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// A tmux server of this test's own, ended when dropped.
pub struct Tmux(String);

impl Tmux {
    pub fn new() -> Tmux {
        Tmux(format!("mcp-test-{}-{}", std::process::id(), unique_sleep()))
    }
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").arg("-L").arg(&self.0).args(args).output().expect("tmux is installed");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "t"])
    }
    /// Waits until the screen shows `text` (or fails after 20 s, showing the screen).
    pub fn wait_for(&self, text: &str) {
        for _ in 0..400 {
            if self.screen().contains(text) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the terminal never showed {text:?}:\n{}", self.screen());
    }
    pub fn type_line(&self, line: &str) {
        self.run(&["send-keys", "-t", "t", "-l", line]);
        self.run(&["send-keys", "-t", "t", "Enter"]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}
