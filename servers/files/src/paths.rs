//! The paths a model writes, turned into a root and a path beneath it.
//!
//! This only chooses the root: an absolute path names the allowed directory whose components it
//! starts with (the longest one), a relative path names the first. What remains is handed to
//! the kernel as it is, `..` and all, and [`sandbox`](crate::sandbox) refuses what leaves the
//! root. Refused here, before any system call: empty paths, NUL bytes, backslashes (this server
//! runs where `/` is the only separator), Windows drive letters, and absolute paths under no
//! allowed directory.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::sandbox::Root;

/// A path located beneath a root.
#[derive(Debug, Clone)]
pub struct Located {
    /// The root it is beneath.
    pub root: Arc<Root>,
    /// The rest, `/`-separated, possibly empty (the root itself).
    pub rel: String,
}

impl Located {
    /// The absolute path shown back to the model (the root as given, then the rest).
    pub fn shown(&self) -> String {
        shown(&self.root, &self.rel)
    }
}

/// `root`'s path joined with `rel`, as text.
pub fn shown(root: &Root, rel: &str) -> String {
    if rel.is_empty() {
        root.path.display().to_string()
    } else {
        root.path.join(rel).display().to_string()
    }
}

/// Expands a leading `~` with `$HOME`, as shells (and the reference server) do.
fn expand_home(input: &str) -> Option<PathBuf> {
    let rest = input.strip_prefix('~')?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let home = std::env::var_os("HOME")?;
    Some(PathBuf::from(home).join(rest.trim_start_matches('/')))
}

/// Locates `input` among `roots`, or says why it cannot be.
pub fn locate(roots: &[Arc<Root>], input: &str) -> Result<Located, String> {
    if input.is_empty() {
        return Err("the path is empty: give an absolute path inside an allowed directory (see \
                    list_allowed_directories), or one relative to the first"
            .into());
    }
    if input.contains('\0') {
        return Err("the path contains a NUL byte, which no file name can hold".into());
    }
    if input.contains('\\') {
        return Err(format!(
            "{input:?} contains a backslash: this server runs on a system where only / separates directories; \
             write {:?}",
            input.replace('\\', "/")
        ));
    }
    let bytes = input.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Err(format!(
            "{input:?} is a Windows path; this server's paths start with / (see list_allowed_directories)"
        ));
    }
    let Some(first) = roots.first() else {
        return Err(no_roots());
    };
    let path = expand_home(input).unwrap_or_else(|| PathBuf::from(input));
    if !path.is_absolute() {
        return Ok(Located { root: first.clone(), rel: relative(input).trim_end_matches('/').to_owned() });
    }
    let mut best: Option<(usize, &Arc<Root>, String)> = None;
    for root in roots {
        for base in [&root.path, &root.real] {
            if let Some(rest) = beneath(base, &path) {
                let depth = base.components().count();
                if best.as_ref().is_none_or(|(d, _, _)| depth > *d) {
                    best = Some((depth, root, rest));
                }
            }
        }
    }
    match best {
        Some((_, root, rel)) => Ok(Located { root: root.clone(), rel }),
        None => Err(format!(
            "{input} is outside the allowed directories ({}); use a path inside one of them",
            roots.iter().map(|r| r.path.display().to_string()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// A relative path without its leading `./` components (and the slashes after them): `.//./a`
/// is `a`, never `/./a` (which a join would take for an absolute path). `..` is kept.
fn relative(input: &str) -> &str {
    let mut rel = input;
    while let Some(rest) = rel.strip_prefix("./") {
        rel = rest.trim_start_matches('/');
    }
    rel
}

/// The components of `path` after `base`'s, `/`-joined, when `path` starts with all of `base`'s
/// (compared component by component: `/tmp/allowed-evil` does not start with `/tmp/allowed`).
/// `..` is kept: the kernel judges it.
fn beneath(base: &Path, path: &Path) -> Option<String> {
    let mut base_parts = base.components().filter(|c| !matches!(c, Component::CurDir));
    let mut parts = path.components().filter(|c| !matches!(c, Component::CurDir));
    loop {
        match base_parts.next() {
            None => break,
            Some(b) => {
                if parts.next()? != b {
                    return None;
                }
            }
        }
    }
    let rest: Vec<String> = parts.map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    Some(rest.join("/"))
}

/// The message when nothing is served.
pub fn no_roots() -> String {
    "no directory is served: start files-mcp with directories (files-mcp ~/project), or use a client that \
     offers roots"
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sibling_with_the_root_as_prefix_is_not_beneath_it() {
        assert_eq!(beneath(Path::new("/tmp/allowed"), Path::new("/tmp/allowed-evil/x")), None);
        assert_eq!(beneath(Path::new("/tmp/allowed"), Path::new("/tmp/allowed/x/y")).as_deref(), Some("x/y"));
        assert_eq!(beneath(Path::new("/tmp/allowed"), Path::new("/tmp/allowed")).as_deref(), Some(""));
        assert_eq!(beneath(Path::new("/tmp/allowed"), Path::new("/tmp/allowed/../etc")).as_deref(), Some("../etc"));
        assert_eq!(beneath(Path::new("/tmp/allowed"), Path::new("/tmp/allowed//./x/")).as_deref(), Some("x"));
    }

    /// Found by fuzzing (`files_paths`): `.//./s` was located at `/./s`, an absolute path that a
    /// join beneath the root would have taken for the root's replacement.
    #[test]
    fn a_relative_path_stays_relative() {
        for (input, rel) in
            [(".//./s", "s"), ("./a/./b", "a/./b"), ("././", ""), ("./../x", "../x"), (".hidden", ".hidden")]
        {
            assert_eq!(relative(input), rel, "{input}");
        }
        let dir = std::env::temp_dir().join(format!("files-mcp-rel-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let root = Arc::new(Root::open(&dir, "test".into()).unwrap());
        let located = locate(&[root], ".//./s").unwrap();
        assert_eq!(located.rel, "s");
        assert_eq!(located.shown(), dir.join("s").display().to_string());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
