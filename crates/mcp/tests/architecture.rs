//! The layers of `mcp-stack`, checked against its imports (the way rust-analyzer checks its
//! architecture invariants).
//!
//! `docs/ARCHITECTURE.md` lists the crate's top-level modules as layers, top first, in the block
//! after `<!-- layers: mcp-stack -->`. Every `crate::` path in a module's code (comments and
//! strings left out) must name the module itself or one of a lower layer: nothing imports
//! upward, modules of one layer do not import each other, and so no two modules form a circle.
//! The crate root (`lib.rs`) is the facade above every layer.
//!
//! `cargo test -p mcp-stack --test architecture` prints each arrow that breaks the rule, with the
//! file and the path it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A file's code as `(path under src/, text)`.
type Tree = Vec<(String, String)>;

/// One arrow: the file, the module it is in, and the module it names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Arrow {
    file: String,
    from: String,
    to: String,
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

/// The top-level module a file under `src/` belongs to (`None` for the crate root).
fn module_of(path: &str) -> Option<String> {
    if path == "lib.rs" {
        return None;
    }
    let first = path.split('/').next().unwrap_or(path);
    Some(first.trim_end_matches(".rs").to_owned())
}

/// The code of a Rust file without comments, string and character literals (so that a doc link
/// or a message naming `crate::x` is not an arrow).
fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(len) = raw_string_len(rest) {
            i += len;
            out.push_str("\"\"");
        } else if rest.starts_with('"') {
            i += quoted_len(rest, b'"');
            out.push_str("\"\"");
        } else if rest.starts_with('\'') && is_char_literal(rest) {
            i += quoted_len(rest, b'\'');
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The length of `r"..."` / `r#"..."#` at the start of `s`, if it is one.
fn raw_string_len(s: &str) -> Option<usize> {
    let s2 = s.strip_prefix('b').unwrap_or(s);
    let prefix = s.len() - s2.len();
    let after_r = s2.strip_prefix('r')?;
    let hashes = after_r.len() - after_r.trim_start_matches('#').len();
    let body = after_r[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    let end = body.find(&close)?;
    Some(prefix + 1 + hashes + 1 + end + close.len())
}

/// The length of a quoted literal at the start of `s` (escapes honoured).
fn quoted_len(s: &str, quote: u8) -> usize {
    let bytes = s.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Whether a `'` starts a character literal rather than a lifetime.
fn is_char_literal(s: &str) -> bool {
    let mut chars = s.chars().skip(1);
    matches!((chars.next(), chars.next()), (Some('\\'), _) | (Some(_), Some('\'')))
}

/// The top-level modules named by `crate::` paths in `code`, `use crate::{a, b::c}` included.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let preceded_by_ident =
            rest[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        rest = &rest[at + "crate::".len()..];
        if preceded_by_ident {
            continue; // `$crate::` in a macro, or `mcp_crate::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            names.extend(group_heads(group));
        } else {
            let ident: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !ident.is_empty() {
                names.insert(ident);
            }
        }
    }
    names
}

/// The first identifier of each item of a `{...}` group (the text after the `{`).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let (mut depth, mut at_item_start) = (0usize, true);
    let mut chars = group.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item_start = true,
            c if (c.is_alphabetic() || c == '_') && depth == 0 && at_item_start => {
                let ident: String = group[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                for _ in 1..ident.chars().count() {
                    chars.next();
                }
                heads.push(ident);
                at_item_start = false;
            }
            _ => {}
        }
    }
    heads
}

/// Every arrow between two different top-level modules.
fn arrows(tree: &Tree) -> Vec<Arrow> {
    let modules: BTreeSet<String> = tree.iter().filter_map(|(p, _)| module_of(p)).collect();
    let mut out = Vec::new();
    for (path, text) in tree {
        let Some(from) = module_of(path) else { continue };
        for to in named_modules(&code_only(text)) {
            if to != from && modules.contains(&to) {
                out.push(Arrow { file: path.clone(), from: from.clone(), to });
            }
        }
    }
    out.sort();
    out
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

/// What is wrong with `tree` against `layers` (top first); empty when it holds.
fn problems(tree: &Tree, layers: &[Vec<String>]) -> Vec<String> {
    let rank: BTreeMap<&str, usize> = layers
        .iter()
        .rev()
        .enumerate()
        .flat_map(|(rank, names)| names.iter().map(move |n| (n.as_str(), rank)))
        .collect();
    let mut out = Vec::new();
    for module in tree.iter().filter_map(|(p, _)| module_of(p)).collect::<BTreeSet<_>>() {
        if !rank.contains_key(module.as_str()) {
            out.push(format!("module `{module}` is in no layer of docs/ARCHITECTURE.md"));
        }
    }
    let arrows = arrows(tree);
    if let Some(circle) = find_circle(&arrows) {
        out.push(format!("a circle: {}", circle.join(" -> ")));
    }
    for a in &arrows {
        let (Some(from), Some(to)) = (rank.get(a.from.as_str()), rank.get(a.to.as_str())) else { continue };
        if to >= from {
            let how = if to == from { "a module of the same layer" } else { "a higher layer" };
            out.push(format!("{}: `{}` imports `crate::{}`, {how}", a.file, a.from, a.to));
        }
    }
    out
}

fn read_tree(src: &Path) -> Tree {
    fn walk(dir: &Path, src: &Path, out: &mut Tree) {
        let mut entries: Vec<PathBuf> =
            std::fs::read_dir(dir).expect("src is readable").map(|e| e.expect("entry").path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, src, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).expect("under src").to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&path).expect("readable source")));
            }
        }
    }
    let mut out = Vec::new();
    walk(src, src, &mut out);
    out
}

fn documented_layers() -> Vec<Vec<String>> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ARCHITECTURE.md");
    let doc = std::fs::read_to_string(&doc).expect("docs/ARCHITECTURE.md is readable");
    layers_from_doc(&doc, "<!-- layers: mcp-stack -->")
}

#[test]
fn the_crate_keeps_its_documented_layers() {
    let tree = read_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let layers = documented_layers();
    assert!(layers.len() >= 5, "the layers block lists the layers: {layers:?}");
    let problems = problems(&tree, &layers);
    assert!(problems.is_empty(), "the imports break the layers:\n{}", problems.join("\n"));
}

fn tree(files: &[(&str, &str)]) -> Tree {
    files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect()
}

fn layers(spec: &[&str]) -> Vec<Vec<String>> {
    spec.iter().map(|l| l.split_whitespace().map(str::to_owned).collect()).collect()
}

#[test]
fn a_circle_between_modules_fails() {
    let good = tree(&[
        ("lib.rs", "pub mod client; pub mod server; pub mod util;"),
        ("util/mod.rs", "pub type BoxFuture = ();"),
        ("server/mod.rs", "use crate::util::BoxFuture;"),
        ("client/core.rs", "use crate::{util::BoxFuture, server};"),
    ]);
    let order = layers(&["client", "server", "util"]);
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
    let found = problems(&t, &layers(&["auth client"]));
    assert!(
        found.iter().any(|p| p.contains("`auth` imports `crate::client`, a module of the same layer")),
        "{found:?}"
    );
    assert!(found.iter().any(|p| p.contains("module `extra` is in no layer")), "{found:?}");
}

#[test]
fn comments_strings_and_macros_are_not_arrows() {
    let code = code_only(
        "//! see [`crate::client`]\n/* crate::cli */ let s = \"crate::redis\"; let r = r#\"crate::auth\"#;\n\
         let c = '\"'; $crate::tasks::x(); fn f<'a>(x: &'a str) { crate::server::go(x) }",
    );
    assert_eq!(named_modules(&code), BTreeSet::from(["server".to_owned()]));
    assert_eq!(
        named_modules("use crate::{engine::{lines, raw}, net::fetch::Fetcher, util};"),
        BTreeSet::from(["engine".to_owned(), "net".to_owned(), "util".to_owned()])
    );
}

/// The distinct crates (name and version) of `cargo tree` for mcp-stack without default features.
fn core_crates(edges: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["tree", "--locked", "-p", "mcp-stack", "--no-default-features", "-e", edges, "--prefix", "none"])
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
