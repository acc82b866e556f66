//! Every way out of the root, tried on a real files-mcp process with both resolvers (the
//! kernel's openat2 and the component walk): each is refused with a clear `isError` result, and
//! nothing outside is read or written. A server that compared path strings, or checked a path
//! with realpath and then opened it, fails these.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{call, ok, refused, spawn, text, Tree, SECRET};
use serde_json::json;

fn each_resolver(test: impl Fn(bool)) {
    for walk in [false, true] {
        test(walk);
    }
}

#[test]
fn dotdot_absolute_prefix_sibling_and_symlinks_are_refused() {
    each_resolver(|walk| {
        let tree = Tree::new();
        let mut s = spawn(&[&tree.root()], &[], walk);
        let outside = tree.path("outside/secret.txt").display().to_string();
        for path in [
            "../outside/secret.txt".to_owned(),
            "sub/../../outside/secret.txt".to_owned(),
            format!("{}/../outside/secret.txt", tree.root().display()),
            outside.clone(),
            tree.path("allowed-evil/secret.txt").display().to_string(),
            "etc/passwd".to_owned(),
            "/etc/passwd".to_owned(),
            "abs-out/secret.txt".to_owned(),
            "rel-out".to_owned(),
            "hard".to_owned(),
        ] {
            let t = refused(&call(&mut s, "read_text_file", json!({"path": path})));
            assert!(!t.is_empty(), "{path}");
            refused(&call(&mut s, "read_media_file", json!({"path": path})));
            refused(&call(&mut s, "get_file_info", json!({"path": format!("{path}/x")})));
        }
        let t = refused(&call(&mut s, "read_text_file", json!({"path": "etc/passwd"})));
        assert!(t.contains("symbolic link"), "{t}");
        let t = refused(&call(&mut s, "read_text_file", json!({"path": tree.path("allowed-evil/secret.txt")})));
        assert!(t.contains("outside the allowed directories"), "{t}");
        let t = refused(&call(&mut s, "read_text_file", json!({"path": "hard"})));
        assert!(t.contains("hard links"), "{t}");
        // A listing shows links as entries and never descends them.
        refused(&call(&mut s, "list_directory", json!({"path": "etc"})));
        let tree_text = ok(&call(&mut s, "directory_tree", json!({"path": tree.at("")})));
        assert!(!tree_text.contains("passwd") && !tree_text.contains("secret"), "{tree_text}");
        let found = ok(&call(&mut s, "search_files", json!({"path": tree.at(""), "pattern": "**/*secret*"})));
        assert!(found.starts_with("No matches found"), "{found}");
        let grep = ok(&call(&mut s, "grep", json!({"pattern": "TOPSECRET|root:x"})));
        assert!(grep.starts_with("No match"), "{grep}");
        let multi = ok(&call(&mut s, "read_multiple_files", json!({"paths": ["inside.txt", "rel-out", outside]})));
        assert!(multi.contains("inside\n") && !multi.contains(SECRET), "{multi}");
    });
}

#[test]
fn writes_and_moves_cannot_leave_the_root() {
    each_resolver(|walk| {
        let tree = Tree::new();
        let mut s = spawn(&[&tree.root()], &[], walk);
        let evil = tree.path("allowed-evil/new.txt").display().to_string();
        for path in ["../outside/new.txt", "abs-out/new.txt", "etc/new.txt", evil.as_str()] {
            refused(&call(&mut s, "write_file", json!({"path": path, "content": "x"})));
            refused(&call(&mut s, "create_directory", json!({"path": format!("{path}.d/x")})));
            refused(&call(&mut s, "edit_file", json!({"path": path, "edits": [{"oldText": "a", "newText": "b"}]})));
        }
        assert!(!tree.path("outside/new.txt").exists() && !tree.path("allowed-evil/new.txt").exists());
        assert!(!tree.path("outside/new.txt.d").exists());
        // Writing onto a symlink that points out is refused, as editing it is, in the same
        // words; the link and the file it points to are untouched.
        let written = refused(&call(&mut s, "write_file", json!({"path": "rel-out", "content": "replaced"})));
        let edited = refused(&call(
            &mut s,
            "edit_file",
            json!({"path": "rel-out", "edits": [{"oldText": "a", "newText": "b"}]}),
        ));
        assert_eq!(written, edited);
        assert_eq!(std::fs::read_to_string(tree.path("outside/secret.txt")).unwrap(), SECRET);
        assert!(std::fs::symlink_metadata(tree.path("allowed/rel-out")).unwrap().file_type().is_symlink());
        // Over a hard link: the other name keeps the old contents.
        ok(&call(&mut s, "write_file", json!({"path": "hard", "content": "new"})));
        assert_eq!(std::fs::read_to_string(tree.path("outside/secret.txt")).unwrap(), SECRET);
        for to in ["../outside/moved.txt", "abs-out/moved.txt", &evil] {
            refused(&call(&mut s, "move_file", json!({"source": "inside.txt", "destination": to})));
        }
        refused(&call(&mut s, "move_file", json!({"source": "../outside/secret.txt", "destination": "stolen.txt"})));
        assert!(tree.path("allowed/inside.txt").exists() && !tree.path("allowed/stolen.txt").exists());
        assert!(tree.path("outside/secret.txt").exists());
        let t = refused(&call(&mut s, "move_file", json!({"source": "inside.txt", "destination": "sub/b.rs"})));
        assert!(t.contains("already exists"), "{t}");
    });
}

#[test]
fn bad_names_are_refused_in_words() {
    let tree = Tree::new();
    std::fs::write(
        tree.root().join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"bad\xffname")),
        "x",
    )
    .unwrap();
    let mut s = spawn(&[&tree.root()], &[], false);
    let t = refused(&call(&mut s, "read_text_file", json!({"path": "inside.txt\u{0}../../outside/secret.txt"})));
    assert!(t.contains("NUL"), "{t}");
    let t = refused(&call(&mut s, "read_text_file", json!({"path": "..\\outside\\secret.txt"})));
    assert!(t.contains("backslash"), "{t}");
    let t = refused(&call(&mut s, "read_text_file", json!({"path": "C:\\Windows\\win.ini"})));
    assert!(t.contains("backslash") || t.contains("Windows"), "{t}");
    refused(&call(&mut s, "read_text_file", json!({"path": ""})));
    // A name that is not UTF-8 is listed escaped, and its escaped form reaches nothing.
    let listing = ok(&call(&mut s, "list_directory", json!({"path": "."})));
    assert!(listing.contains("[FILE] bad\\xFFname"), "{listing}");
    refused(&call(&mut s, "read_text_file", json!({"path": "bad\\xFFname"})));
    refused(&call(&mut s, "read_text_file", json!({"path": "bad\u{FFFD}name"})));
    // A lone surrogate is not valid JSON text for a path: a protocol error, and the server lives on.
    s.send_line(r#"{"jsonrpc":"2.0","id":900,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"\ud800"}}}"#);
    let r = s.recv();
    assert!(r.get("error").is_some() || r["result"]["isError"] == true, "{r}");
    ok(&call(&mut s, "read_text_file", json!({"path": "inside.txt"})));
}

#[test]
fn symlinks_inside_are_followed_only_when_allowed() {
    each_resolver(|walk| {
        let tree = Tree::new();
        let mut s = spawn(&[&tree.root()], &[], walk);
        refused(&call(&mut s, "read_text_file", json!({"path": "ok-link"})));
        let mut s = spawn(&[&tree.root()], &["--follow-symlinks-inside"], walk);
        assert_eq!(ok(&call(&mut s, "read_text_file", json!({"path": "ok-link"}))), "inside\n");
        for path in ["etc/passwd", "abs-out/secret.txt", "rel-out"] {
            refused(&call(&mut s, "read_text_file", json!({"path": path})));
        }
    });
}

/// A symlink swapped in for a regular file between a check and the use, 10,000 times while a
/// thread swaps it: no read ever returns what is outside.
#[test]
fn a_symlink_swapped_in_during_ten_thousand_reads_never_leaks() {
    each_resolver(|walk| {
        let tree = Tree::new();
        let root = tree.root();
        std::fs::write(root.join("swap"), "inside").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let racer = {
            let (root, stop, target) = (root.clone(), stop.clone(), tree.path("outside/secret.txt"));
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let link = root.join(".link");
                    let file = root.join(".file");
                    let _ = std::os::unix::fs::symlink(&target, &link);
                    let _ = std::fs::rename(&link, root.join("swap"));
                    let _ = std::fs::write(&file, "inside");
                    let _ = std::fs::rename(&file, root.join("swap"));
                    n += 1;
                }
                n
            })
        };
        let mut s = spawn(&[&root], &["--follow-symlinks-inside"], walk);
        let mut read_inside = 0;
        for _ in 0..10_000 {
            let r = call(&mut s, "read_text_file", json!({"path": "swap"}));
            assert!(!r.to_string().contains(SECRET), "leaked: {r}");
            if r["isError"] != true {
                assert_eq!(text(&r), "inside");
                read_inside += 1;
            }
        }
        stop.store(true, Ordering::Relaxed);
        let swaps = racer.join().unwrap();
        assert!(swaps > 100, "the racer swapped only {swaps} times");
        assert!(read_inside > 0, "no read ever succeeded");
    });
}

/// A directory renamed out of the root (and filled there) while directory_tree walks: what it
/// holds outside never shows.
#[test]
fn a_directory_renamed_out_during_a_walk_is_not_followed() {
    let tree = Tree::new();
    let root = tree.root();
    for i in 0..300 {
        std::fs::create_dir_all(root.join(format!("moving/d{i}/e"))).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let racer = {
        let (root, stop, out) = (root.clone(), stop.clone(), tree.path("outside"));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if std::fs::rename(root.join("moving"), out.join("moving")).is_ok() {
                    let _ = std::fs::write(out.join("moving/ESCAPED-MARKER"), "x");
                    let _ = std::fs::create_dir(out.join("moving/d0/ESCAPED-DIR"));
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    let _ = std::fs::remove_file(out.join("moving/ESCAPED-MARKER"));
                    let _ = std::fs::remove_dir(out.join("moving/d0/ESCAPED-DIR"));
                    let _ = std::fs::rename(out.join("moving"), root.join("moving"));
                }
            }
        })
    };
    let mut s = spawn(&[&root], &[], false);
    for _ in 0..30 {
        let r = call(&mut s, "directory_tree", json!({"path": tree.at("")}));
        assert!(!r.to_string().contains("ESCAPED"), "listed outside: {}", text(&r));
        let r = call(&mut s, "search_files", json!({"path": tree.at(""), "pattern": "**/ESCAPED*"}));
        assert!(text(&r).starts_with("No matches"), "{}", text(&r));
    }
    stop.store(true, Ordering::Relaxed);
    racer.join().unwrap();
}

#[test]
fn read_only_offers_no_write_tool_and_writes_nothing() {
    let tree = Tree::new();
    let mut s = spawn(&[&tree.root()], &["--read-only"], false);
    let tools = s.request("tools/list", json!({}));
    let names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"read_text_file") && names.contains(&"grep"));
    for write in ["write_file", "edit_file", "create_directory", "move_file"] {
        assert!(!names.contains(&write), "{write} offered");
    }
    let r = s.request("tools/call", json!({"name": "write_file", "arguments": {"path": "x", "content": "y"}}));
    assert!(r.get("error").is_some() || r["result"]["isError"] == true, "{r}");
    assert!(!tree.root().join("x").exists());
}
