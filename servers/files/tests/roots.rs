//! Client roots only narrow the directories given on the command line, and serve alone when
//! none were given; `roots/list_changed` is followed. Files as resources, with inotify updates.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{call, ok, refused, text, Tree};
use mcp::testing::LinePeer;
use serde_json::{json, Value};

/// A files-mcp child whose client declares roots.
fn spawn_with_roots(dirs: &[&std::path::Path]) -> LinePeer {
    let mut server = LinePeer::spawn_command(Command::new(env!("CARGO_BIN_EXE_files-mcp")).args(dirs));
    server.timeout = Duration::from_secs(20);
    let params = json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": true}},
        "clientInfo": {"name": "roots-test", "version": "1"}});
    server.request("initialize", params);
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    server
}

/// Calls `tool`, answering any `roots/list` with `roots`; returns the result and how many times
/// the roots were asked for.
fn call_answering(s: &mut LinePeer, id: u64, tool: &str, args: Value, roots: &[String]) -> (Value, usize) {
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}}));
    let mut asked = 0;
    loop {
        let m = s.recv();
        if m["method"] == "roots/list" {
            asked += 1;
            let list: Vec<Value> = roots.iter().map(|u| json!({"uri": u, "name": "r"})).collect();
            s.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": {"roots": list}}));
        } else if m["id"] == json!(id) {
            return (m["result"].clone(), asked);
        }
    }
}

fn uri(path: &std::path::Path) -> String {
    format!("file://{}", path.display())
}

#[test]
fn client_roots_narrow_the_command_line_and_never_widen_it() {
    let tree = Tree::new();
    let mut s = spawn_with_roots(&[&tree.root()]);
    let sub = vec![uri(&tree.root().join("sub")), uri(&tree.path("outside"))];
    let (r, asked) = call_answering(&mut s, 100, "list_allowed_directories", json!({}), &sub);
    let t = ok(&r);
    assert_eq!(asked, 1);
    assert!(t.contains(&tree.at("sub")) && t.contains("lies outside the directories given"), "{t}");
    assert_eq!(r["structuredContent"]["directories"].as_array().unwrap().len(), 1, "{r}");
    // Narrowed: the root's own files are out of reach now, the sub directory's are not.
    let (r, asked) = call_answering(&mut s, 101, "read_text_file", json!({"path": tree.at("inside.txt")}), &sub);
    refused(&r);
    assert_eq!(asked, 0, "the roots are listed once per session");
    let (r, _) = call_answering(&mut s, 102, "read_text_file", json!({"path": tree.at("sub/b.rs")}), &sub);
    assert!(ok(&r).contains("fn one"));
    // Relative paths resolve in the first allowed directory: sub.
    let (r, _) = call_answering(&mut s, 103, "read_text_file", json!({"path": "b.rs"}), &sub);
    assert!(ok(&r).contains("fn two"));
    // roots/list_changed: asked again; a root outside alone leaves the command line's directory.
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    let out = vec![uri(&tree.path("outside"))];
    let (r, asked) =
        call_answering(&mut s, 104, "read_text_file", json!({"path": tree.path("outside/secret.txt")}), &out);
    assert_eq!(asked, 1);
    refused(&r);
    let (r, _) = call_answering(&mut s, 105, "list_allowed_directories", json!({}), &out);
    let t = ok(&r);
    assert!(t.contains(&tree.root().display().to_string()) && t.contains("no client root lies inside"), "{t}");
}

#[test]
fn without_directories_the_client_roots_are_served() {
    let tree = Tree::new();
    let mut s = spawn_with_roots(&[]);
    std::fs::write(tree.path("outside/plain.txt"), "plain").unwrap();
    let roots = vec![uri(&tree.path("outside"))];
    let (r, _) = call_answering(&mut s, 100, "read_text_file", json!({"path": tree.path("outside/plain.txt")}), &roots);
    assert_eq!(ok(&r), "plain");
    let (r, _) = call_answering(&mut s, 101, "read_text_file", json!({"path": tree.at("inside.txt")}), &roots);
    refused(&r);
    // A client without roots, and no directories: said plainly.
    let mut bare = common::spawn(&[], &[], false);
    let t = refused(&call(&mut bare, "list_directory", json!({"path": "/"})));
    assert!(t.contains("no directory is served"), "{t}");
}

#[test]
fn files_are_resources_with_updates_from_inotify() {
    let tree = Tree::new();
    let mut s = common::spawn(&[&tree.root()], &[], false);
    let listed = s.request("resources/list", json!({}));
    assert_eq!(listed["result"]["resources"][0]["uri"], uri(&tree.root()), "{listed}");
    let templates = s.request("resources/templates/list", json!({}));
    assert_eq!(templates["result"]["resourceTemplates"][0]["uriTemplate"], "file://{+path}");
    let file = uri(&tree.root().join("inside.txt"));
    let r = s.request("resources/read", json!({"uri": file}));
    assert_eq!(r["result"]["contents"][0]["text"], "inside\n", "{r}");
    let r = s.request("resources/read", json!({"uri": uri(&tree.path("outside/secret.txt"))}));
    assert!(r.get("error").is_some(), "{r}");
    let r = s.request("resources/read", json!({"uri": format!("{}/../outside/secret.txt", uri(&tree.root()))}));
    assert!(r.get("error").is_some() && !r.to_string().contains(common::SECRET), "{r}");
    // Completion of the template's path.
    let typed = format!("{}/su", tree.root().display());
    let r = s.request(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "file://{+path}"},
        "argument": {"name": "path", "value": typed}}),
    );
    assert_eq!(r["result"]["completion"]["values"][0], format!("{}/sub/", tree.root().display()), "{r}");
    // Subscribed: an atomic write (rename over it) and an append each notify.
    let r = s.request("resources/subscribe", json!({"uri": file}));
    assert!(r.get("error").is_none(), "{r}");
    // (Not through write_file: the notification may come before its answer, which
    // LinePeer::request skips over.)
    std::fs::write(tree.root().join(".tmp"), "changed").unwrap();
    std::fs::rename(tree.root().join(".tmp"), tree.root().join("inside.txt")).unwrap();
    wait_update(&mut s, &file);
    std::fs::write(tree.root().join("inside.txt"), "by hand").unwrap();
    wait_update(&mut s, &file);
    s.request("resources/unsubscribe", json!({"uri": file}));
    std::fs::write(tree.root().join("inside.txt"), "again").unwrap();
    assert!(no_update(&mut s, &file), "an update after unsubscribing");
}

fn wait_update(s: &mut LinePeer, file: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if let Some(m) = s.try_recv(Duration::from_millis(200)) {
            if m["method"] == "notifications/resources/updated" && m["params"]["uri"] == file {
                return;
            }
        }
    }
    panic!("no notifications/resources/updated for {file}");
}

fn no_update(s: &mut LinePeer, file: &str) -> bool {
    while let Some(m) = s.try_recv(Duration::from_millis(500)) {
        if m["method"] == "notifications/resources/updated" && m["params"]["uri"] == file {
            return false;
        }
    }
    true
}

#[test]
fn grep_honours_gitignore_context_and_limits() {
    let tree = Tree::new();
    let root = tree.root();
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join("target/out.rs"), "fn two() {}\n").unwrap();
    std::fs::write(root.join("run.log"), "fn two\n").unwrap();
    std::fs::write(root.join("bin.dat"), b"fn two\x00\x01").unwrap();
    let mut s = common::spawn(&[&root], &[], false);
    let r = call(&mut s, "grep", json!({"pattern": "fn t\\w+"}));
    let t = ok(&r);
    assert_eq!(t, format!("{}:2:fn two() {{}}", tree.at("sub/b.rs")), "{t}");
    let r = call(&mut s, "grep", json!({"pattern": "fn two", "noIgnore": true, "literal": true}));
    assert_eq!(r["structuredContent"]["matches"].as_array().unwrap().len(), 3, "{r}");
    let r = call(&mut s, "grep", json!({"pattern": "ONE", "caseInsensitive": true, "context": 1, "include": "*.rs"}));
    let t = ok(&r);
    assert!(t.contains(":1:fn one() {}") && t.contains("-2-fn two() {}"), "{t}");
    let r = call(&mut s, "grep", json!({"pattern": "fn", "maxResults": 1}));
    assert_eq!(r["structuredContent"]["truncated"], true, "{r}");
    let t = refused(&call(&mut s, "grep", json!({"pattern": "fn ("})));
    assert!(t.contains("literal"), "{t}");
}

#[test]
fn caps_say_how_to_narrow() {
    let tree = Tree::new();
    let root = tree.root();
    std::fs::write(root.join("big.txt"), "line\n".repeat(1000)).unwrap();
    let mut s = common::spawn(
        &[&root],
        &["--max-file-bytes", "1000", "--max-result-bytes", "600", "--max-walk-entries", "3"],
        false,
    );
    let t = refused(&call(&mut s, "read_text_file", json!({"path": "big.txt"})));
    assert!(t.contains("head or tail"), "{t}");
    assert_eq!(ok(&call(&mut s, "read_text_file", json!({"path": "big.txt", "head": 2}))), "line\nline");
    assert_eq!(ok(&call(&mut s, "read_text_file", json!({"path": "big.txt", "tail": 1}))), "line");
    let t = ok(&call(&mut s, "directory_tree", json!({"path": tree.at("")})));
    assert!(t.contains("the walk stopped after"), "{t}");
    let _ = text(&Value::Null);
}

#[test]
fn edits_are_exact_and_crlf_is_kept() {
    let tree = Tree::new();
    let root = tree.root();
    std::fs::write(root.join("w.txt"), "a\r\nb\r\na\r\n").unwrap();
    let mut s = common::spawn(&[&root], &[], false);
    let t = refused(&call(&mut s, "edit_file", json!({"path": "w.txt", "edits": [{"oldText": "a", "newText": "c"}]})));
    assert!(t.contains("more than once"), "{t}");
    let t = ok(&call(
        &mut s,
        "edit_file",
        json!({"path": "w.txt", "edits": [{"oldText": "b\na", "newText": "B\nA"}], "dryRun": true}),
    ));
    assert!(t.contains("-b\n-a\n+B\n+A"), "{t}");
    assert_eq!(std::fs::read_to_string(root.join("w.txt")).unwrap(), "a\r\nb\r\na\r\n");
    ok(&call(&mut s, "edit_file", json!({"path": "w.txt", "edits": [{"oldText": "b\na", "newText": "B\nA"}]})));
    assert_eq!(std::fs::read_to_string(root.join("w.txt")).unwrap(), "a\r\nB\r\nA\r\n");
    ok(&call(&mut s, "create_directory", json!({"path": "x/y/z"})));
    assert!(root.join("x/y/z").is_dir());
    ok(&call(&mut s, "create_directory", json!({"path": "x/y"})));
}
