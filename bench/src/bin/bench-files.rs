//! files-mcp against the reference filesystem server (npm `@modelcontextprotocol/server-filesystem`,
//! `npm ci --prefix tests/fixtures/files-reference`) on a generated tree of 100,000 files, in the
//! same run: `directory_tree`, `search_files`, `read_multiple_files`, and our `grep` against the
//! reference's `search_files` (its only way to look for something). Each figure is the median
//! of three warm calls; the ratio is the reference's time over ours (above 1: we are faster).
//! Our target: every walk of the 100,000 files under one second warm.
//!
//! ```text
//! cargo build --profile dist -p files-mcp -p mcp-bench && target/dist/bench-files
//! ```

#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mcp::testing::LinePeer;
use mcp_bench::{median, sibling_binary, time};
use serde_json::{json, Value};

const DIRS: usize = 100;
const SUBDIRS: usize = 10;
const FILES: usize = 100;

fn generate(root: &Path) {
    for d in 0..DIRS {
        for s in 0..SUBDIRS {
            let dir = root.join(format!("d{d:03}/s{s:02}"));
            std::fs::create_dir_all(&dir).unwrap();
            for f in 0..FILES {
                let n = (d * SUBDIRS + s) * FILES + f;
                std::fs::write(dir.join(format!("f{f:03}.txt")), format!("file {n}\nneedle{}\n", n % 5000)).unwrap();
            }
        }
    }
}

fn peer(command: &mut Command) -> LinePeer {
    let mut peer = LinePeer::spawn_command(command);
    peer.timeout = Duration::from_secs(300);
    peer.initialize("2025-06-18");
    peer
}

fn call(peer: &mut LinePeer, tool: &str, args: &Value) -> Value {
    let r = peer.request("tools/call", json!({"name": tool, "arguments": args}));
    assert!(
        r["result"]["isError"] != true && r.get("error").is_none(),
        "{tool}: {}",
        r.to_string().chars().take(300).collect::<String>()
    );
    r
}

fn measure(peer: &mut LinePeer, tool: &str, args: &Value) -> Duration {
    call(peer, tool, args);
    median((0..3).map(|_| time(|| call(peer, tool, args)).0).collect())
}

fn main() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/files-reference");
    let reference: PathBuf = fixture.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(reference.exists(), "npm ci --prefix {} first", fixture.display());
    let dir = std::env::temp_dir().join(format!("bench-files-{}", std::process::id()));
    let root = dir.join("tree");
    let (took, ()) = time(|| generate(&root));
    println!("generated {} files in {} directories in {took:.1?}", DIRS * SUBDIRS * FILES, DIRS * SUBDIRS + DIRS);
    let root_text = root.display().to_string();
    let mut ours =
        peer(Command::new(sibling_binary("files-mcp")).args(["--max-result-bytes", "268435456", &root_text]));
    let mut theirs = peer(Command::new("node").arg(&reference).arg(&root_text));
    let many: Vec<String> = (0..50).map(|i| format!("{root_text}/d{:03}/s00/f{:03}.txt", i, i)).collect();
    let cases = [
        ("directory_tree (100,000 files)", "directory_tree", json!({"path": root_text}), "directory_tree"),
        (
            "search_files **/f042.txt",
            "search_files",
            json!({"path": root_text, "pattern": "**/f042.txt"}),
            "search_files",
        ),
        ("read_multiple_files (50 files)", "read_multiple_files", json!({"paths": many}), "read_multiple_files"),
    ];
    let mut all_fast = true;
    for (name, tool, args, their_tool) in &cases {
        let a = measure(&mut ours, tool, args);
        let b = measure(&mut theirs, their_tool, args);
        all_fast &= *tool == "read_multiple_files" || a < Duration::from_secs(1);
        println!("{name:<44} files-mcp {:>9.1} ms   reference {:>9.1} ms   ratio {:>6.2}", ms(a), ms(b), ms(b) / ms(a));
    }
    let a = measure(&mut ours, "grep", &json!({"path": root_text, "pattern": "needle4242$", "maxResults": 1000}));
    let b = measure(&mut theirs, "search_files", &json!({"path": root_text, "pattern": "**/*4242*"}));
    all_fast &= a < Duration::from_secs(1);
    println!(
        "{:<44} files-mcp {:>9.1} ms   reference {:>9.1} ms   ratio {:>6.2}",
        "grep contents vs reference search_files",
        ms(a),
        ms(b),
        ms(b) / ms(a)
    );
    println!("every walk of 100,000 files under 1 s warm: {}", if all_fast { "OK" } else { "MISSED" });
    let _ = std::fs::remove_dir_all(&dir);
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
