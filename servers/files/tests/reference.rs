//! The same calls against files-mcp and the reference server (npm
//! `@modelcontextprotocol/server-filesystem`, pinned in `tests/fixtures/files-reference`), on
//! two copies of one tree: the same tool and argument names, and the same answers where the
//! reference is right. Where we differ on purpose, the difference is asserted.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{call, text};
use mcp::testing::LinePeer;
use serde_json::{json, Value};

fn reference_entry() -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/files-reference");
    let entry = fixture.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        entry.exists(),
        "the reference server is not installed: npm ci --prefix {} (scripts/test.sh does it)",
        fixture.display()
    );
    entry
}

fn spawn_reference(dir: &Path) -> LinePeer {
    let mut s = LinePeer::spawn_command(Command::new("node").arg(reference_entry()).arg(dir));
    s.timeout = std::time::Duration::from_secs(30);
    s.initialize("2025-06-18");
    s
}

/// A tree of the kinds of entries both servers handle.
fn make_tree(dir: &Path) {
    std::fs::create_dir_all(dir.join("src/nested")).unwrap();
    std::fs::create_dir_all(dir.join("node_modules/pkg")).unwrap();
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    std::fs::write(dir.join("README.md"), "# Title\n\nline 3\nline 4\n").unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
    std::fs::write(dir.join("src/nested/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(dir.join("node_modules/pkg/index.js"), "module.exports = 1;\n").unwrap();
    std::fs::write(dir.join("docs/a.txt"), "x".repeat(2000)).unwrap();
    std::fs::write(dir.join(".env"), "KEY=1\n").unwrap();
    // A 1x1 PNG.
    let png = [137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0];
    std::fs::write(dir.join("docs/pixel.png"), png).unwrap();
}

struct Pair {
    _dir: tempfile::TempDir,
    ours_root: PathBuf,
    ref_root: PathBuf,
    ours: LinePeer,
    reference: LinePeer,
}

impl Pair {
    fn new() -> Pair {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let (ours_root, ref_root) = (real.join("ours"), real.join("reference"));
        make_tree(&ours_root);
        make_tree(&ref_root);
        let ours = common::spawn(&[&ours_root], &[], false);
        let reference = spawn_reference(&ref_root);
        Pair { _dir: dir, ours_root, ref_root, ours, reference }
    }

    /// Calls `tool` on both, with `{root}` in string arguments replaced by each one's root.
    fn both(&mut self, tool: &str, args: Value) -> (Value, Value) {
        let for_root = |root: &Path| {
            serde_json::from_str::<Value>(&args.to_string().replace("{root}", &root.display().to_string())).unwrap()
        };
        let ours = call(&mut self.ours, tool, for_root(&self.ours_root));
        let reference = call(&mut self.reference, tool, for_root(&self.ref_root));
        (ours, reference)
    }

    /// Both texts, each with its own root written `{root}`.
    fn texts(&mut self, tool: &str, args: Value) -> (String, String) {
        let (ours, reference) = self.both(tool, args);
        (
            text(&ours).replace(&self.ours_root.display().to_string(), "{root}"),
            text(&reference).replace(&self.ref_root.display().to_string(), "{root}"),
        )
    }
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

fn sort_tree(value: &mut Value) {
    if let Some(items) = value.as_array_mut() {
        for item in items.iter_mut() {
            if let Some(children) = item.get_mut("children") {
                sort_tree(children);
            }
        }
        items.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    }
}

#[test]
fn same_tools_same_arguments() {
    let mut p = Pair::new();
    let ours = p.ours.request("tools/list", json!({}));
    let reference = p.reference.request("tools/list", json!({}));
    let ours = ours["result"]["tools"].as_array().unwrap();
    for tool in reference["result"]["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let mine = ours.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name} is missing"));
        for arg in tool["inputSchema"]["properties"].as_object().unwrap().keys() {
            assert!(mine["inputSchema"]["properties"].get(arg).is_some(), "{name}.{arg} is missing");
        }
        assert_eq!(mine["annotations"]["readOnlyHint"], tool["annotations"]["readOnlyHint"], "{name}");
        assert!(mine["outputSchema"].is_object(), "{name} has no outputSchema");
    }
}

#[test]
fn the_same_answers_where_the_reference_is_right() {
    let mut p = Pair::new();
    for args in [json!({"path": "{root}/README.md"}), json!({"path": "{root}/README.md", "head": 2})] {
        let (a, b) = p.texts("read_text_file", args);
        assert_eq!(a, b);
    }
    let (a, b) = p.texts("read_multiple_files", json!({"paths": ["{root}/README.md", "{root}/src/main.rs"]}));
    assert_eq!(a, b);
    let (a, b) = p.texts("list_directory", json!({"path": "{root}"}));
    assert_eq!(sorted_lines(&a), sorted_lines(&b));
    let (a, b) = p.texts("list_directory_with_sizes", json!({"path": "{root}/docs"}));
    assert_eq!(a, b);
    let (a, b) = p.texts("directory_tree", json!({"path": "{root}", "excludePatterns": ["node_modules"]}));
    let (mut a, mut b): (Value, Value) = (serde_json::from_str(&a).unwrap(), serde_json::from_str(&b).unwrap());
    sort_tree(&mut a);
    sort_tree(&mut b);
    assert_eq!(a, b);
    for pattern in ["**/*.rs", "*.md", "**/nested"] {
        let (a, b) = p.texts(
            "search_files",
            json!({"path": "{root}", "pattern": pattern, "excludePatterns": ["node_modules/**"]}),
        );
        assert_eq!(sorted_lines(&a), sorted_lines(&b), "{pattern}");
    }
    let (ours, reference) = p.both("read_media_file", json!({"path": "{root}/docs/pixel.png"}));
    assert_eq!(ours["content"][0]["data"], reference["content"][0]["data"]);
    assert_eq!(ours["content"][0]["mimeType"], "image/png");
    let (a, b) = p.texts("get_file_info", json!({"path": "{root}/docs/a.txt"}));
    for key in ["size: 2000", "isDirectory: false", "isFile: true", "permissions: "] {
        let line = |t: &str| t.lines().find(|l| l.starts_with(key)).map(str::to_owned);
        assert_eq!(line(&a), line(&b), "{key}");
    }
    // Writes: the same files afterwards.
    p.both("write_file", json!({"path": "{root}/new.txt", "content": "alpha\nbeta\n"}));
    p.both("edit_file", json!({"path": "{root}/new.txt", "edits": [{"oldText": "beta", "newText": "gamma"}]}));
    p.both("create_directory", json!({"path": "{root}/made/deeper"}));
    p.both("move_file", json!({"source": "{root}/new.txt", "destination": "{root}/made/deeper/moved.txt"}));
    let read = |root: &Path| std::fs::read_to_string(root.join("made/deeper/moved.txt")).unwrap();
    assert_eq!(read(&p.ours_root), "alpha\ngamma\n");
    assert_eq!(read(&p.ours_root), read(&p.ref_root));
    let (ours, reference) =
        p.both("move_file", json!({"source": "{root}/README.md", "destination": "{root}/src/main.rs"}));
    assert_eq!((ours["isError"].clone(), reference["isError"].clone()), (json!(true), json!(true)));
    let (ours, reference) = p.both("read_text_file", json!({"path": "{root}/../outside.txt"}));
    assert_eq!((ours["isError"].clone(), reference["isError"].clone()), (json!(true), json!(true)));
}

/// Where we differ on purpose: a hard link to a file outside is read by the reference and
/// refused by us; so is a symlink inside the root unless --follow-symlinks-inside; an edit whose
/// text occurs twice is applied by the reference to the first and refused by us.
#[test]
fn where_we_differ_on_purpose() {
    let mut p = Pair::new();
    let outside = p.ours_root.parent().unwrap().join("outside.txt");
    std::fs::write(&outside, "OUTSIDE").unwrap();
    for root in [&p.ours_root, &p.ref_root] {
        std::fs::hard_link(&outside, root.join("hard")).unwrap();
        std::os::unix::fs::symlink("README.md", root.join("link")).unwrap();
        std::fs::write(root.join("twice.txt"), "a\na\n").unwrap();
    }
    let (ours, reference) = p.both("read_text_file", json!({"path": "{root}/hard"}));
    assert_eq!(text(&reference), "OUTSIDE", "the reference reads a hard link to a file outside");
    assert_eq!(ours["isError"], true);
    let (ours, reference) = p.both("read_text_file", json!({"path": "{root}/link"}));
    assert!(text(&reference).starts_with("# Title"));
    assert_eq!(ours["isError"], true);
    let (ours, reference) =
        p.both("edit_file", json!({"path": "{root}/twice.txt", "edits": [{"oldText": "a", "newText": "b"}]}));
    assert_ne!(reference["isError"], true);
    assert_eq!(ours["isError"], true);
}
