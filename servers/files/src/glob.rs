//! Glob patterns as the reference server reads them (minimatch with `dot: true`): `*` stays
//! within one directory, `**` crosses any number, dotfiles match.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use mcp::server::ToolError;

fn compile(pattern: &str) -> Result<Glob, ToolError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| ToolError::new(format!("the glob {pattern:?} is not valid: {}", e.kind())))
}

/// One pattern matched against a path relative to the search's start.
pub fn one(pattern: &str) -> Result<globset::GlobMatcher, ToolError> {
    Ok(compile(pattern)?.compile_matcher())
}

/// `excludePatterns` of `search_files`: each matched against the relative path.
pub fn set(patterns: &[String]) -> Result<GlobSet, ToolError> {
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        set.add(compile(p)?);
    }
    set.build().map_err(|e| ToolError::new(format!("the exclude patterns are not valid: {e}")))
}

/// `excludePatterns` of `directory_tree`: a pattern with `*` is matched as it is; one without
/// also matches that name at any depth, and everything under it.
pub fn tree_set(patterns: &[String]) -> Result<GlobSet, ToolError> {
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        set.add(compile(p)?);
        if !p.contains('*') {
            set.add(compile(&format!("**/{p}"))?);
            set.add(compile(&format!("**/{p}/**"))?);
        }
    }
    set.build().map_err(|e| ToolError::new(format!("the exclude patterns are not valid: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_stays_in_one_directory_and_dotfiles_match() {
        let g = one("*.rs").unwrap();
        assert!(g.is_match("main.rs") && !g.is_match("src/main.rs"));
        assert!(one("**/*.rs").unwrap().is_match("src/a/b.rs"));
        assert!(one("*").unwrap().is_match(".env"));
        let t = tree_set(&["node_modules".into()]).unwrap();
        assert!(t.is_match("a/node_modules") && t.is_match("node_modules/x/y"));
    }
}
