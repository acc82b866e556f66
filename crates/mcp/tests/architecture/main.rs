//! The layers of `mcp-stack`, checked against its imports (the way rust-analyzer checks its
//! architecture invariants).
//!
//! `docs/ARCHITECTURE.md` lists the crate's top-level modules as layers, top first, in the block
//! after `<!-- layers: mcp-stack -->`, and the submodules of `server` and of `client` in the
//! blocks after `<!-- layers: mcp-stack::server -->` and `<!-- layers: mcp-stack::client -->`.
//! Every path of the code (comments and strings left out) that starts with `crate::`, `super::`
//! or `self::`, and every path of a `use`, is made absolute and resolved through the `use`
//! declarations of the modules it passes (`reader.rs`): `crate::tasks::X` is `server::tasks::X`
//! (lib.rs has `pub use server::tasks`), `crate::Router` is `server`'s and
//! `crate::RequestContext` is `server::context`'s (lib.rs and `server/mod.rs` re-export them).
//! An arrow goes from the module whose file names the path to the module the path resolves into,
//! and must point to the module itself or one of a lower layer: nothing imports upward, modules
//! of one layer do not import each other, and so no two modules form a circle. A module's own
//! file (`lib.rs`, `server/mod.rs`, `client/mod.rs`) is the facade above its submodules: its
//! code is in none of them.
//!
//! The check fails on a tree it cannot read, on a tree with no modules, and on one with no
//! arrows (a reader that sees nothing would otherwise pass). `cargo test -p mcp-stack --test
//! architecture` prints each arrow that breaks the rule, with the file and the path it names.

mod reader;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use reader::{code_only, scan, Arrow, Index, ModPath, Tree};

/// One checked module: its path (empty for the crate) and its submodules' layers, top first.
struct Scope {
    path: ModPath,
    layers: Vec<Vec<String>>,
}

/// The layers, top first: each a set of module names.
fn layers_from_doc(doc: &str, marker: &str) -> Vec<Vec<String>> {
    let after = doc.split_once(marker).unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has no `{marker}` block")).1;
    let block = after.split("```").nth(1).expect("the layers block is a fenced code block");
    block
        .lines()
        .skip(1) // the fence's language tag
        .map(|line| line.split('#').next().unwrap_or("").split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|names| !names.is_empty())
        .collect()
}

/// `scope::name` as the messages print it (`name` alone at the crate's top level).
fn qualified(scope: &[String], name: &str) -> String {
    scope.iter().map(String::as_str).chain([name]).collect::<Vec<_>>().join("::")
}

/// A circle among the modules, as the list of modules around it, if there is one.
fn find_circle(arrows: &[Arrow]) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for a in arrows {
        next.entry(&a.from).or_default().insert(&a.to);
    }
    fn visit<'a>(
        node: &'a str,
        next: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| *n == node) {
            let mut circle: Vec<String> = path[start..].iter().map(|s| s.to_string()).collect();
            circle.push(node.to_owned());
            return Some(circle);
        }
        if !done.insert(node) {
            return None;
        }
        path.push(node);
        for to in next.get(node).into_iter().flatten() {
            if let Some(circle) = visit(to, next, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for node in next.keys() {
        if let Some(circle) = visit(node, &next, &mut Vec::new(), &mut done) {
            return Some(circle);
        }
    }
    None
}

/// What is wrong with `tree` against the layers of each scope; empty when it holds.
fn problems(tree: &Tree, scopes: &[Scope]) -> Vec<String> {
    if tree.is_empty() {
        return vec!["the tree has no files: nothing to check".to_owned()];
    }
    let index = Index::new(tree);
    let mut out = Vec::new();
    for Scope { path: scope, layers } in scopes {
        let q = |name: &str| qualified(scope, name);
        let where_ = if scope.is_empty() { "the crate".to_owned() } else { format!("`{}`", scope.join("::")) };
        let subs = index.submodules(scope);
        if subs.is_empty() {
            out.push(format!("{where_} has no modules in the tree: nothing to check"));
            continue;
        }
        let rank: BTreeMap<&str, usize> = layers
            .iter()
            .rev()
            .enumerate()
            .flat_map(|(rank, names)| names.iter().map(move |n| (n.as_str(), rank)))
            .collect();
        for module in &subs {
            if !rank.contains_key(module.as_str()) {
                out.push(format!("module `{}` is in no layer of docs/ARCHITECTURE.md", q(module)));
            }
        }
        for listed in rank.keys() {
            if !subs.contains(*listed) {
                out.push(format!("module `{}` is in docs/ARCHITECTURE.md but not in the tree", q(listed)));
            }
        }
        let arrows = index.arrows(scope);
        if arrows.is_empty() {
            out.push(format!("no module of {where_} imports another: the reader sees no imports"));
        }
        if let Some(circle) = find_circle(&arrows) {
            out.push(format!("a circle: {}", circle.iter().map(|m| q(m)).collect::<Vec<_>>().join(" -> ")));
        }
        for a in &arrows {
            let (Some(from), Some(to)) = (rank.get(a.from.as_str()), rank.get(a.to.as_str())) else { continue };
            if to >= from {
                let how = if to == from { "a module of the same layer" } else { "a higher layer" };
                out.push(format!("{}: `{}` imports `crate::{}`, {how} (`{}`)", a.file, q(&a.from), q(&a.to), a.named));
            }
        }
    }
    out
}

/// Every `.rs` file under `src`, or why it cannot be read.
fn read_tree(src: &Path) -> Result<Tree, String> {
    fn walk(dir: &Path, src: &Path, out: &mut Tree) -> Result<(), String> {
        let cannot = |e: std::io::Error, what: &Path| format!("cannot read {}: {e}", what.display());
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| cannot(e, dir))? {
            entries.push(entry.map_err(|e| cannot(e, dir))?.path());
        }
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, src, out)?;
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).expect("under src").to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&path).map_err(|e| cannot(e, &path))?));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(src, src, &mut out)?;
    Ok(out)
}

/// What is wrong with the tree under `src`, unreadable counted.
fn check(src: &Path, scopes: &[Scope]) -> Vec<String> {
    match read_tree(src) {
        Ok(tree) => problems(&tree, scopes),
        Err(e) => vec![e],
    }
}

/// The scopes docs/ARCHITECTURE.md lists: the crate, `server` and `client`.
fn documented_scopes() -> Vec<Scope> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ARCHITECTURE.md");
    let doc = std::fs::read_to_string(&doc).expect("docs/ARCHITECTURE.md is readable");
    [("mcp-stack", vec![]), ("mcp-stack::server", vec!["server"]), ("mcp-stack::client", vec!["client"])]
        .into_iter()
        .map(|(name, path)| Scope {
            path: path.into_iter().map(str::to_owned).collect(),
            layers: layers_from_doc(&doc, &format!("<!-- layers: {name} -->")),
        })
        .collect()
}

#[test]
fn the_crate_keeps_its_documented_layers() {
    let scopes = documented_scopes();
    for scope in &scopes {
        assert!(scope.layers.len() >= 3, "the layers block of {:?} lists the layers: {:?}", scope.path, scope.layers);
    }
    let problems = check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &scopes);
    assert!(problems.is_empty(), "the imports break the layers:\n{}", problems.join("\n"));
}

fn tree(files: &[(&str, &str)]) -> Tree {
    files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect()
}

fn layers(spec: &[&str]) -> Vec<Vec<String>> {
    spec.iter().map(|l| l.split_whitespace().map(str::to_owned).collect()).collect()
}

/// The scope `path` (`""` for the crate) with layers `spec`.
fn scope(path: &str, spec: &[&str]) -> Scope {
    Scope { path: path.split("::").filter(|s| !s.is_empty()).map(str::to_owned).collect(), layers: layers(spec) }
}

/// The arrows of `scope` in `tree` as `from -> to`.
fn arrows_of(tree: &Tree, scope: &[&str]) -> Vec<String> {
    let scope: ModPath = scope.iter().map(|s| s.to_string()).collect();
    Index::new(tree).arrows(&scope).into_iter().map(|a| format!("{} -> {}", a.from, a.to)).collect()
}

/// A directory of its own under the system's temporary directory, empty.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-architecture-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

#[test]
fn a_circle_between_modules_fails() {
    let good = tree(&[
        ("lib.rs", "pub mod client; pub mod server; pub mod util;"),
        ("util/mod.rs", "pub type BoxFuture = ();"),
        ("server/mod.rs", "use crate::util::BoxFuture;"),
        ("client/core.rs", "use crate::{util::BoxFuture, server};"),
    ]);
    let order = [scope("", &["client", "server", "util"])];
    assert_eq!(problems(&good, &order), Vec::<String>::new());

    let mut circular = good.clone();
    circular.push(("util/naming.rs".into(), "fn f() { crate::client::core::x() }".into()));
    let found = problems(&circular, &order);
    assert!(found.iter().any(|p| p.starts_with("a circle: ")), "{found:?}");
    assert!(
        found.iter().any(|p| p.contains("util/naming.rs: `util` imports `crate::client`, a higher layer")),
        "{found:?}"
    );
}

#[test]
fn same_layer_and_unlisted_modules_fail() {
    let t = tree(&[("auth/mod.rs", "use crate::client::X;"), ("client/mod.rs", ""), ("extra.rs", "")]);
    let found = problems(&t, &[scope("", &["auth client gone"])]);
    assert!(
        found.iter().any(|p| p.contains("`auth` imports `crate::client`, a module of the same layer")),
        "{found:?}"
    );
    assert!(found.iter().any(|p| p.contains("module `extra` is in no layer")), "{found:?}");
    assert!(
        found.iter().any(|p| p.contains("module `gone` is in docs/ARCHITECTURE.md but not in the tree")),
        "{found:?}"
    );
}

#[test]
fn comments_strings_and_macros_are_not_arrows() {
    let modules: BTreeSet<ModPath> = ["client", "cli", "redis", "auth", "tasks", "server", "engine", "net", "util"]
        .map(|m| vec![m.to_owned()])
        .into();
    let heads = |code: &str| -> BTreeSet<String> {
        scan(&code_only(code), &["proxy".to_owned()], &modules).paths.into_iter().map(|(p, _)| p[0].clone()).collect()
    };
    let code = "//! see [`crate::client`]\n/* crate::cli */ let s = \"crate::redis\"; let r = r#\"crate::auth\"#;\n\
                let c = '\"'; $crate::tasks::x(); fn f<'a>(x: &'a str) { crate::server::go(x) }";
    assert_eq!(heads(code), BTreeSet::from(["server".to_owned()]));
    assert_eq!(
        heads("use crate::{engine::{lines, raw}, net::fetch::Fetcher, util};"),
        BTreeSet::from(["engine".to_owned(), "net".to_owned(), "util".to_owned()])
    );
    // Other crates and std are not modules of this one; `Self::` and `self.` are no paths.
    assert_eq!(heads("use tokio::sync; use std::io; fn g(&self) { Self::new(); self.x; }"), BTreeSet::new());
}

#[test]
fn imports_through_the_crate_roots_reexports_are_arrows_to_where_the_item_lives() {
    let t = tree(&[
        (
            "lib.rs",
            "pub mod net; pub mod server; pub mod util;\n#[cfg(feature = \"tls\")]\npub use net::{fetch, tls};\n\
             pub use server::{middleware, tasks};\npub use server::{RequestContext, Router};\npub use mcp_types as types;",
        ),
        ("net/mod.rs", "pub mod fetch; pub mod tls;"),
        ("net/fetch.rs", ""),
        ("net/tls.rs", "use crate::util::now;"),
        ("server/mod.rs", "mod context; pub mod tasks; pub mod middleware;\npub use context::RequestContext;\npub struct Router;"),
        ("server/context.rs", "use crate::tasks::TaskSlot; use crate::types::Id;"),
        ("server/tasks/mod.rs", "pub struct TaskSlot; fn f(cx: crate::RequestContext) {}"),
        ("server/middleware.rs", "use crate::Router; fn g() { crate::fetch::get() }"),
        ("util/mod.rs", ""),
    ]);
    // `crate::fetch` is `net`'s, `crate::Router` is `server`'s own, `crate::types` another crate.
    assert_eq!(arrows_of(&t, &[]), ["net -> util", "server -> net"]);
    // `crate::tasks` is `server::tasks`, `crate::RequestContext` is `server::context`'s.
    assert_eq!(arrows_of(&t, &["server"]), ["context -> tasks", "tasks -> context"]);
    let found = problems(&t, &[scope("server", &["middleware", "context", "tasks"])]);
    assert!(found.iter().any(|p| p == "a circle: server::context -> server::tasks -> server::context"), "{found:?}");
    assert!(
        found.iter().any(|p| p.contains(
            "server/tasks/mod.rs: `server::tasks` imports `crate::server::context`, a higher layer (`crate::RequestContext`)"
        )),
        "{found:?}"
    );
}

#[test]
fn a_circle_inside_server_fails() {
    let good = tree(&[
        ("lib.rs", "pub mod server;"),
        ("server/mod.rs", "mod helpers; mod tasks; mod tool;\nuse self::tool::Def;\n#[cfg(test)]\nmod tests { use super::tasks::Support; }"),
        ("server/helpers.rs", ""),
        (
            "server/tool.rs",
            "use super::tasks::Support;\nuse crate::server::helpers::h;\n\
             #[cfg(test)]\nmod tests {\n    use super::helpers::x; // `server::tool::helpers`\n}",
        ),
        ("server/tool/helpers.rs", ""),
        ("server/tasks/mod.rs", "mod run; pub struct Support;"),
        ("server/tasks/run.rs", "use super::Support; use crate::server::helpers::h;"),
    ]);
    let order = [scope("server", &["tool", "tasks", "helpers"])];
    assert_eq!(problems(&good, &order), Vec::<String>::new());
    assert_eq!(arrows_of(&good, &["server"]), ["tasks -> helpers", "tool -> helpers", "tool -> tasks"]);

    // `super::super::tool::Def` from `server::tasks::run`, and `Def` through `server/mod.rs`'s `use`.
    for upward in ["fn f() { super::super::tool::Def::new() }", "use crate::server::Def;", "use super::super::Def;"] {
        let mut circular = good.clone();
        circular.push(("server/tasks/wire.rs".into(), upward.into()));
        let found = problems(&circular, &order);
        assert!(
            found.iter().any(|p| p == "a circle: server::tasks -> server::tool -> server::tasks"),
            "{upward}: {found:?}"
        );
        assert!(
            found.iter().any(|p| p.starts_with("server/tasks/wire.rs: `server::tasks` imports `crate::server::tool`")),
            "{upward}: {found:?}"
        );
    }
}

#[test]
fn an_empty_tree_fails() {
    let scopes = [scope("", &["server", "util"]), scope("server", &["tool", "tasks"])];
    let nothing = problems(&tree(&[]), &scopes);
    assert_eq!(nothing, ["the tree has no files: nothing to check"]);

    let only_root = problems(&tree(&[("lib.rs", "")]), &scopes);
    assert!(only_root.iter().any(|p| p == "the crate has no modules in the tree: nothing to check"), "{only_root:?}");
    assert!(only_root.iter().any(|p| p == "`server` has no modules in the tree: nothing to check"), "{only_root:?}");

    let no_arrows = tree(&[
        ("lib.rs", "pub mod server; pub mod util;"),
        ("util/mod.rs", ""),
        ("server/mod.rs", "mod tool; mod tasks;"),
        ("server/tool.rs", ""),
        ("server/tasks.rs", ""),
    ]);
    let found = problems(&no_arrows, &scopes);
    assert!(
        found.iter().any(|p| p == "no module of the crate imports another: the reader sees no imports"),
        "{found:?}"
    );
    assert!(
        found.iter().any(|p| p == "no module of `server` imports another: the reader sees no imports"),
        "{found:?}"
    );

    let dir = scratch_dir("empty");
    let found = check(&dir, &scopes);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(found, ["the tree has no files: nothing to check"]);
}

#[test]
fn an_unreadable_tree_fails() {
    let scopes = [scope("", &["server"])];
    let missing = check(Path::new("/nonexistent/mcp-stack/src"), &scopes);
    assert!(
        matches!(missing.as_slice(), [p] if p.starts_with("cannot read /nonexistent/mcp-stack/src: ")),
        "{missing:?}"
    );

    let dir = scratch_dir("unreadable");
    std::fs::write(dir.join("lib.rs"), "pub mod server;").unwrap();
    std::fs::create_dir(dir.join("server")).unwrap();
    std::fs::write(dir.join("server/mod.rs"), b"fn f() { \xff }").unwrap();
    let found = check(&dir, &scopes);
    std::fs::remove_dir_all(&dir).ok();
    assert!(matches!(found.as_slice(), [p] if p.starts_with("cannot read ") && p.contains("mod.rs")), "{found:?}");
}

/// The distinct crates (name and version) of `cargo tree` for mcp-stack without default features.
fn core_crates(edges: &str) -> BTreeSet<String> {
    crates_with(&[], edges)
}

/// The same, with `features` on.
fn crates_with(features: &[&str], edges: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let features = features.join(",");
    let mut args =
        vec!["tree", "--locked", "-p", "mcp-stack", "--no-default-features", "-e", edges, "--prefix", "none"];
    if !features.is_empty() {
        args.extend(["--features", &features]);
    }
    let out = std::process::Command::new(cargo)
        .args(&args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.replace(" (*)", "").replace(" (proc-macro)", ""))
        .map(|l| l.split(" (").next().unwrap_or_default().trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// A stdio server on `mcp-stack` with default features off (as the README's "Writing a server"
/// says) compiles at most 100 crates and no C code: a crate that pulls in hyper, rustls or
/// jsonwebtoken without a feature fails here.
#[test]
fn a_stdio_server_compiles_few_crates_and_no_c() {
    let normal = core_crates("normal");
    assert!(normal.len() <= 100, "{} crates without default features (at most 100):\n{normal:?}", normal.len());
    for heavy in ["hyper ", "rustls ", "ring ", "jsonwebtoken ", "clap ", "rusqlite ", "redis "] {
        assert!(!normal.iter().any(|c| c.starts_with(heavy)), "`{heavy}` is in the stdio core: {normal:?}");
    }
    let with_build = core_crates("normal,build");
    assert!(!with_build.iter().any(|c| c.starts_with("cc ")), "a crate of the stdio core compiles C: {with_build:?}");
}

/// A host that only starts stdio servers takes `client` alone: no TLS, no *ring*, no C code
/// (HTTP, TLS and OAuth are the features `client-http`, `tls` and `client-oauth`).
#[test]
fn a_stdio_client_compiles_no_c() {
    let normal = crates_with(&["client"], "normal");
    for heavy in ["hyper ", "rustls ", "ring ", "jsonwebtoken "] {
        assert!(!normal.iter().any(|c| c.starts_with(heavy)), "`{heavy}` is in the stdio client: {normal:?}");
    }
    let with_build = crates_with(&["client"], "normal,build");
    assert!(!with_build.iter().any(|c| c.starts_with("cc ")), "a crate of the stdio client compiles C: {with_build:?}");
    // And the cut is where the README says: OAuth brings ring.
    assert!(crates_with(&["client-oauth"], "normal").iter().any(|c| c.starts_with("ring ")));
}
