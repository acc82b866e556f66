//! A files-mcp child on real pipes, and a scratch tree with things outside it to escape to.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use mcp::testing::LinePeer;
use serde_json::{json, Value};

/// The secret every escape test tries to reach.
pub const SECRET: &str = "TOPSECRET-outside-the-root";

/// `dir/allowed` (served), `dir/allowed-evil` (a sibling with the root's name as prefix) and
/// `dir/outside`, each holding files; links inside the root point out.
pub struct Tree {
    pub dir: tempfile::TempDir,
}

impl Tree {
    pub fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        for d in ["allowed/sub", "allowed-evil", "outside"] {
            std::fs::create_dir_all(p.join(d)).unwrap();
        }
        std::fs::write(p.join("allowed/inside.txt"), "inside\n").unwrap();
        std::fs::write(p.join("allowed/sub/b.rs"), "fn one() {}\nfn two() {}\n").unwrap();
        std::fs::write(p.join("allowed-evil/secret.txt"), SECRET).unwrap();
        std::fs::write(p.join("outside/secret.txt"), SECRET).unwrap();
        std::os::unix::fs::symlink("/etc", p.join("allowed/etc")).unwrap();
        std::os::unix::fs::symlink(p.join("outside"), p.join("allowed/abs-out")).unwrap();
        std::os::unix::fs::symlink("../outside/secret.txt", p.join("allowed/rel-out")).unwrap();
        std::os::unix::fs::symlink("inside.txt", p.join("allowed/ok-link")).unwrap();
        std::fs::hard_link(p.join("outside/secret.txt"), p.join("allowed/hard")).unwrap();
        Tree { dir }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("allowed")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `root/rel` as text.
    pub fn at(&self, rel: &str) -> String {
        self.root().join(rel).display().to_string()
    }
}

/// files-mcp over `dirs`, with `args` and the resolver `walk` or the kernel's.
pub fn spawn(dirs: &[&Path], args: &[&str], walk: bool) -> LinePeer {
    let mut command = Command::new(env!("CARGO_BIN_EXE_files-mcp"));
    command.args(args).args(dirs);
    if walk {
        command.env("FILES_MCP_RESOLVER", "walk");
    }
    let mut server = LinePeer::spawn_command(&mut command);
    server.timeout = std::time::Duration::from_secs(30);
    let r = server.initialize("2025-06-18");
    assert_eq!(r["result"]["serverInfo"]["name"], "files-mcp", "{r}");
    server
}

/// The result of `tool`.
pub fn call(server: &mut LinePeer, tool: &str, arguments: Value) -> Value {
    let r = server.request("tools/call", json!({"name": tool, "arguments": arguments}));
    assert!(r.get("error").is_none(), "{tool}: {r}");
    r["result"].clone()
}

/// The text of a result.
pub fn text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

/// Asserts a refusal (an `isError` result) that does not leak the secret, and returns its text.
#[track_caller]
pub fn refused(result: &Value) -> String {
    assert_eq!(result["isError"], true, "not refused: {result}");
    let t = text(result);
    assert!(!result.to_string().contains(SECRET), "leaked: {result}");
    t
}

/// Asserts success and returns the text.
#[track_caller]
pub fn ok(result: &Value) -> String {
    assert_ne!(result["isError"], true, "refused: {result}");
    text(result)
}
