//! The walking tools over names: `directory_tree` and `search_files`.

use std::sync::Arc;

use mcp::server::{RequestContext, State, Structured, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::read::TextOut;
use crate::fsops::Kind;
use crate::paths::shown;
use crate::walk::{join, with_probe, Walker};
use crate::App;

/// Directories deeper than this are listed without their contents.
const MAX_DEPTH: usize = 256;

/// Arguments of `directory_tree`.
#[derive(Deserialize, JsonSchema)]
pub struct TreeArgs {
    /// The directory.
    pub path: String,
    /// Globs of paths (relative to path) to leave out; a bare name leaves it out at any depth.
    #[serde(default, rename = "excludePatterns")]
    pub exclude_patterns: Vec<String>,
}

#[derive(Serialize)]
struct Node {
    name: String,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    children: Option<Vec<Node>>,
}

/// `directory_tree`: the tree as 2-space-indented JSON, `name`, `type`, `children`.
pub async fn directory_tree(
    State(app): State<Arc<App>>,
    args: TreeArgs,
    cx: RequestContext,
) -> Result<Structured<TextOut>, ToolError> {
    let allowed = app.allowed(&cx).await?;
    let at = app.locate(&allowed, &args.path)?;
    let excludes = crate::glob::tree_set(&args.exclude_patterns)?;
    let a = app.clone();
    let text = with_probe(&cx, move |probe| {
        a.open(&at, rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY)?; // its refusal, in words
        let mut walker = Walker::new(&at.root, a.policy, probe, a.limits.max_walk_entries);
        let tree = build_tree(&mut walker, &at.rel, "", &excludes, 0)?;
        let mut text = serde_json::to_string_pretty(&tree).unwrap_or_default();
        if let Some(note) = walker.note() {
            text.push_str(&format!("\n\nNote: {note}"));
        }
        a.cap_result(text, "give a subdirectory, or excludePatterns such as node_modules or .git")
    })
    .await?;
    Ok(super::text_out(text))
}

fn build_tree(
    walker: &mut Walker<'_>,
    rel: &str,
    from_start: &str,
    excludes: &globset::GlobSet,
    depth: usize,
) -> Result<Vec<Node>, ToolError> {
    let Some(entries) = walker.entries(rel)? else {
        return Ok(Vec::new());
    };
    let mut nodes = Vec::with_capacity(entries.len());
    for entry in entries {
        let name = entry.display();
        let relative = join(from_start, &name);
        if excludes.is_match(&relative) {
            continue;
        }
        let children = if entry.kind == Kind::Dir {
            if depth >= MAX_DEPTH || !crate::fsops::addressable(&entry.name) {
                Some(Vec::new())
            } else {
                Some(build_tree(walker, &join(rel, &name), &relative, excludes, depth + 1)?)
            }
        } else {
            None
        };
        let kind = if entry.kind == Kind::Dir { "directory" } else { "file" };
        nodes.push(Node { name, kind, children });
    }
    Ok(nodes)
}

/// Arguments of `search_files`.
#[derive(Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// The directory to search from.
    pub path: String,
    /// A glob matched against paths relative to path: *.rs in path itself, **/*.rs at any depth.
    pub pattern: String,
    /// Globs of relative paths to leave out (and not descend into).
    #[serde(default, rename = "excludePatterns")]
    pub exclude_patterns: Vec<String>,
}

/// What `search_files` answers.
#[derive(Serialize, JsonSchema)]
pub struct SearchOut {
    /// The paths found, one a line, or "No matches found".
    pub content: String,
    /// The paths found.
    pub paths: Vec<String>,
}

/// `search_files`.
pub async fn search_files(
    State(app): State<Arc<App>>,
    args: SearchArgs,
    cx: RequestContext,
) -> Result<Structured<SearchOut>, ToolError> {
    let allowed = app.allowed(&cx).await?;
    let at = app.locate(&allowed, &args.path)?;
    let pattern = crate::glob::one(&args.pattern)?;
    let excludes = crate::glob::set(&args.exclude_patterns)?;
    let a = app.clone();
    let (paths, note) = with_probe(&cx, move |probe| {
        a.open(&at, rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY)?; // its refusal, in words
        let mut walker = Walker::new(&at.root, a.policy, probe, a.limits.max_walk_entries);
        let mut found = Vec::new();
        let mut stack = vec![(at.rel.clone(), String::new())];
        while let Some((rel, from_start)) = stack.pop() {
            let Some(entries) = walker.entries(&rel)? else { continue };
            let mut dirs = Vec::new();
            for entry in entries {
                let name = entry.display();
                let relative = join(&from_start, &name);
                if excludes.is_match(&relative) {
                    continue;
                }
                if pattern.is_match(&relative) {
                    found.push(shown(&at.root, &join(&rel, &name)));
                }
                if entry.kind == Kind::Dir && crate::fsops::addressable(&entry.name) {
                    dirs.push((join(&rel, &name), relative));
                }
            }
            stack.extend(dirs.into_iter().rev());
        }
        Ok((found, walker.note()))
    })
    .await?;
    let mut content = if paths.is_empty() { "No matches found".to_owned() } else { paths.join("\n") };
    if paths.is_empty() && !args.pattern.contains('/') && !args.pattern.starts_with("**") {
        content.push_str(&format!(
            " (the pattern is matched against paths relative to {}: **/{} searches every subdirectory)",
            args.path, args.pattern
        ));
    }
    if let Some(note) = note {
        content.push_str(&format!("\n\nNote: {note}"));
    }
    let content = app.cap_result(content, "give a narrower pattern or a subdirectory")?;
    Ok(Structured { text: content.clone(), value: SearchOut { content, paths } })
}
