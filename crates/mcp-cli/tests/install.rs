//! The README's install steps, as a person follows them: every binary of the workspace has its
//! `cargo install --locked --profile dist --path DIR` line, no registration step points at a
//! `release` build, and one of those lines, run as written, installs a server that answers.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).unwrap()
}

/// `cargo`, without the variables cargo sets for this test process (build scripts that watch
/// them would rebuild, back and forth).
fn cargo() -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        let set_for_tests = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_", "CARGO_CRATE_", "CARGO_PRIMARY_"];
        if set_for_tests.iter().any(|prefix| name.starts_with(prefix)) || name == "CARGO_TARGET_TMPDIR" {
            command.env_remove(&name);
        }
    }
    command.current_dir(root());
    command
}

/// Every package with binaries (the benchmarks apart): its directory and its binaries' names.
fn packages_with_binaries() -> Vec<(String, Vec<String>)> {
    let out = cargo().args(["metadata", "--no-deps", "--format-version", "1", "--locked"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
    let root = root();
    let mut found = Vec::new();
    for package in metadata["packages"].as_array().unwrap() {
        let manifest = PathBuf::from(package["manifest_path"].as_str().unwrap());
        let dir = manifest.parent().unwrap().strip_prefix(&root).unwrap().display().to_string();
        let bins: Vec<String> = package["targets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["kind"].as_array().unwrap().iter().any(|k| k == "bin"))
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        if !bins.is_empty() && !dir.starts_with("bench") {
            found.push((dir, bins));
        }
    }
    found
}

#[test]
fn the_readme_installs_every_binary_in_the_dist_profile() {
    let readme = readme();
    let block = readme.split("<!-- install -->").nth(1).expect("README.md has an <!-- install --> block");
    let block = block.split("```").nth(1).unwrap();
    let packages = packages_with_binaries();
    assert!(packages.len() >= 5, "{packages:?}");
    for (dir, bins) in &packages {
        let line = block
            .lines()
            .find(|l| l.starts_with(&format!("cargo install --locked --profile dist --path {dir} ")))
            .unwrap_or_else(|| panic!("README.md's install block has no line for {dir}"));
        for bin in bins {
            assert!(line.contains(bin), "the line for {dir} does not name {bin}: {line}");
        }
    }
    // The entries a person copies into a host point at installed binaries, not at a release build.
    for line in readme.lines().filter(|l| l.contains("\"command\":") || l.contains("claude mcp add")) {
        assert!(!line.contains("target/release"), "a registration step names a release build: {line}");
    }
}

#[test]
fn cargo_install_as_the_readme_says_gives_a_server_that_answers() {
    let installed = tempfile::tempdir().unwrap();
    // The README's line for mcp-example, as written, into a directory of this test's. The dist
    // profile's code generation is turned down here (no LTO, no optimisation), so that the test
    // checks the command and what it installs, not the compiler's patience. Its artefacts go to
    // a target directory of their own: in the workspace's, these unoptimised binaries would
    // replace the real `dist` ones (benchmarks then measured an opt-level 0 mcp-example).
    let status = cargo()
        .args(["install", "--locked", "--profile", "dist", "--path", "servers/example", "--root"])
        .arg(installed.path())
        .arg("--target-dir")
        .arg(root().join("target/install-test"))
        .args(["--quiet", "--offline"])
        .env("CARGO_PROFILE_DIST_LTO", "false")
        .env("CARGO_PROFILE_DIST_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_DIST_CODEGEN_UNITS", "64")
        .env("CARGO_PROFILE_DIST_DEBUG", "false")
        .status()
        .unwrap();
    assert!(status.success(), "cargo install failed");
    let binary = installed.path().join("bin").join("mcp-example");
    let mut server = Command::new(&binary).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"install-test","version":"1"}}}"#;
    writeln!(server.stdin.as_mut().unwrap(), "{initialize}").unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["result"]["serverInfo"]["name"], "mcp-example", "{line}");
}
