//! Reading a crate's source as the architecture test needs it: the code without comments and
//! strings, the paths it names (`crate::`, `super::`, `self::`, and every `use` tree, expanded),
//! made absolute from the crate root, and resolved through the names each module's `use`
//! declarations bind, re-exports included; from those, the arrows between the submodules of a
//! module.

use std::collections::{BTreeMap, BTreeSet};

/// A file's code as `(path under src/, text)`.
pub type Tree = Vec<(String, String)>;

/// A module's path from the crate root (`["server", "tasks"]`; empty for the crate root).
pub type ModPath = Vec<String>;

/// One arrow: the file, the submodule it is in, the submodule it names, and the path as written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Arrow {
    pub file: String,
    pub from: String,
    pub to: String,
    pub named: String,
}

/// The module a file under `src/` is (`lib.rs` the crate root, `a/mod.rs` and `a.rs` both `a`).
pub fn module_path(file: &str) -> ModPath {
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    if stem == "lib" {
        return Vec::new();
    }
    let mut parts: ModPath = stem.split('/').map(str::to_owned).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The code of a Rust file without comments, string and character literals (so that a doc link
/// or a message naming `crate::x` is not an arrow).
pub fn code_only(text: &str) -> String {
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

/// A reader of paths and `use` trees over code without comments and strings.
struct Cursor<'a> {
    s: &'a str,
    i: usize,
}

impl Cursor<'_> {
    fn skip_ws(&mut self) {
        self.i += self.s[self.i..].len() - self.s[self.i..].trim_start().len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        let found = self.s[self.i..].starts_with(token);
        if found {
            self.i += token.len();
        }
        found
    }

    fn ident(&mut self) -> Option<String> {
        self.skip_ws();
        let rest = &self.s[self.i..];
        if !rest.starts_with(|c: char| c.is_alphabetic() || c == '_') {
            return None;
        }
        let ident: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        self.i += ident.len();
        Some(ident)
    }
}

/// A path a tree names, as written (`["super", "tasks", "X"]`), and the name it binds in a `use`
/// (`None` for a glob or `as _`).
type Named = (Vec<String>, Option<String>);

/// Reads a `use` tree, or a plain path, at the cursor: every path it names, `a::{b, c::{self,
/// d}}` expanded to `a::b`, `a::c`, `a::c::d`.
fn use_tree(c: &mut Cursor, prefix: &[String], out: &mut Vec<Named>) {
    let mut path = prefix.to_vec();
    if c.eat("{") {
        return use_group(c, &path, out);
    }
    while let Some(ident) = c.ident() {
        path.push(ident);
        let before = c.i;
        if c.eat("::") {
            if c.eat("{") {
                return use_group(c, &path, out);
            }
            if c.eat("*") {
                out.push((path, None));
                return;
            }
            if c.s[c.i..].trim_start().starts_with(|c: char| c.is_alphabetic() || c == '_') {
                continue;
            }
            c.i = before; // `::<T>`, a turbofish
        }
        break;
    }
    if path.len() == prefix.len() {
        return;
    }
    if path.len() > 1 && path.last().is_some_and(|s| s == "self") {
        path.pop(); // `a::{self}` names `a`
    }
    let before = c.i;
    let binding = if c.ident().as_deref() == Some("as") {
        c.ident().filter(|name| name != "_")
    } else {
        c.i = before;
        path.last().cloned()
    };
    out.push((path, binding));
}

/// The items of a `{...}` group up to its `}`.
fn use_group(c: &mut Cursor, prefix: &[String], out: &mut Vec<Named>) {
    while c.i < c.s.len() {
        if c.eat("}") {
            return;
        }
        let before = c.i;
        use_tree(c, prefix, out);
        c.eat(",");
        if c.i == before {
            c.i += c.s[c.i..].chars().next().map_or(1, char::len_utf8);
        }
    }
}

/// `path` from the crate root, written in module `here`: `crate::`, `self::` and `super::` as
/// Rust reads them; a path of a `use` that starts with one of `here`'s submodules (`relative`)
/// under `here`; anything else (another crate, std, a name brought in some other way) `None`.
fn absolute(path: &[String], here: &[String], modules: &BTreeSet<ModPath>, relative: bool) -> Option<ModPath> {
    let (first, rest) = path.split_first()?;
    match first.as_str() {
        "crate" => Some(rest.to_vec()),
        "self" => Some(here.iter().chain(rest).cloned().collect()),
        "super" => {
            let mut base = here.to_vec();
            let supers = path.iter().take_while(|s| *s == "super").count();
            for _ in 0..supers {
                base.pop()?;
            }
            Some(base.into_iter().chain(path[supers..].iter().cloned()).collect())
        }
        _ => {
            let under: ModPath = here.iter().chain([first]).cloned().collect();
            (relative && modules.contains(&under)).then(|| here.iter().chain(path).cloned().collect())
        }
    }
}

/// What one file names: the absolute paths with the text that named them, and the names its
/// top-level `use` declarations bind (`None` where the target is outside the crate).
#[derive(Default)]
pub struct FileNames {
    pub paths: Vec<(ModPath, String)>,
    pub aliases: Vec<(String, Option<ModPath>)>,
}

/// Reads the paths of `code` (without comments and strings), the code of module `file_mod`,
/// keeping track of inline `mod x { ... }` blocks so that `super::` resolves as Rust reads it.
pub fn scan(code: &str, file_mod: &[String], modules: &BTreeSet<ModPath>) -> FileNames {
    let mut names = FileNames::default();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let (mut depth, mut i) = (0usize, 0usize);
    while let Some(c) = code[i..].chars().next() {
        if c == '{' || c == '}' {
            if c == '{' {
                depth += 1;
            } else {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            i += 1;
            continue;
        }
        let at_boundary = !code[..i].chars().next_back().is_some_and(|p| p.is_alphanumeric() || p == '_' || p == '$');
        if !at_boundary || !(c.is_alphabetic() || c == '_') {
            i += c.len_utf8();
            continue;
        }
        let word: String = code[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let here: ModPath = file_mod.iter().cloned().chain(inline.iter().map(|(n, _)| n.clone())).collect();
        let is_use = word == "use";
        let starts_path =
            matches!(word.as_str(), "crate" | "super" | "self") && code[i + word.len()..].starts_with("::");
        if is_use || starts_path {
            let mut cur = Cursor { s: &code[i..], i: if is_use { word.len() } else { 0 } };
            let mut found = Vec::new();
            use_tree(&mut cur, &[], &mut found);
            for (path, binding) in found {
                let abs = absolute(&path, &here, modules, is_use);
                if let Some(abs) = &abs {
                    names.paths.push((abs.clone(), path.join("::")));
                }
                if let (true, 0, true, Some(name)) = (is_use, depth, inline.is_empty(), binding) {
                    names.aliases.push((name, abs));
                }
            }
            i += cur.i.max(word.len());
        } else if word == "mod" {
            let mut cur = Cursor { s: &code[i..], i: word.len() };
            if let Some(name) = cur.ident() {
                if cur.eat("{") {
                    depth += 1;
                    inline.push((name, depth));
                }
            }
            i += cur.i;
        } else {
            i += word.len();
        }
    }
    names
}

/// The modules of a tree, every file's paths, and the names each module's `use` declarations
/// bind.
pub struct Index {
    modules: BTreeSet<ModPath>,
    aliases: BTreeMap<ModPath, BTreeMap<String, Option<ModPath>>>,
    /// `(file, its module, a path it names resolved, the path as written)`.
    paths: Vec<(String, ModPath, ModPath, String)>,
}

impl Index {
    pub fn new(tree: &Tree) -> Index {
        let mut modules = BTreeSet::new();
        for (file, _) in tree {
            let path = module_path(file);
            for len in 0..=path.len() {
                modules.insert(path[..len].to_vec());
            }
        }
        let mut aliases: BTreeMap<ModPath, BTreeMap<String, Option<ModPath>>> = BTreeMap::new();
        let mut named = Vec::new();
        for (file, text) in tree {
            let here = module_path(file);
            let names = scan(&code_only(text), &here, &modules);
            aliases.entry(here.clone()).or_default().extend(names.aliases);
            named
                .extend(names.paths.into_iter().map(|(abs, as_written)| (file.clone(), here.clone(), abs, as_written)));
        }
        let mut index = Index { modules, aliases, paths: Vec::new() };
        index.paths = named
            .into_iter()
            .filter_map(|(file, here, abs, as_written)| Some((file, here, index.resolve(abs)?, as_written)))
            .collect();
        index
    }

    /// `path` with every name a module's `use` binds replaced by what it names (`crate::Router`
    /// becomes `server::context::Router`, if lib.rs says so); `None` if it leaves the crate.
    pub fn resolve(&self, mut path: ModPath) -> Option<ModPath> {
        'again: for _ in 0..64 {
            for at in 0..path.len() {
                let (module, name) = (&path[..at], &path[at]);
                if self.modules.contains(&path[..=at]) {
                    continue;
                }
                match self.aliases.get(module).and_then(|names| names.get(name)) {
                    Some(None) => return None,
                    Some(Some(target)) if *target != path[..=at] => {
                        path = target.iter().chain(&path[at + 1..]).cloned().collect();
                        continue 'again;
                    }
                    _ => break,
                }
            }
            break;
        }
        Some(path)
    }

    /// The submodules of `scope`.
    pub fn submodules(&self, scope: &[String]) -> BTreeSet<String> {
        self.modules
            .iter()
            .filter(|m| m.len() == scope.len() + 1 && m.starts_with(scope))
            .map(|m| m[scope.len()].clone())
            .collect()
    }

    /// Every arrow between two different submodules of `scope`, one per file and target.
    pub fn arrows(&self, scope: &[String]) -> Vec<Arrow> {
        let inside = |m: &ModPath| (m.len() > scope.len() && m.starts_with(scope)).then(|| m[scope.len()].clone());
        let subs = self.submodules(scope);
        let mut out: BTreeMap<(String, String, String), String> = BTreeMap::new();
        for (file, here, target, as_written) in &self.paths {
            let (Some(from), Some(to)) = (inside(here), inside(target)) else { continue };
            if from != to && subs.contains(&to) {
                out.entry((file.clone(), from, to)).or_insert_with(|| as_written.clone());
            }
        }
        out.into_iter().map(|((file, from, to), named)| Arrow { file, from, to, named }).collect()
    }
}
