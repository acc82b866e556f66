//! The walking tools: `directory_tree`, `search_files` (names) and `grep` (contents, with
//! ripgrep's searcher, `.gitignore`-aware).

use std::path::PathBuf;
use std::sync::Arc;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use mcp::server::{RequestContext, Structured, ToolError};
use rustix::fs::OFlags;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::read::TextOut;
use crate::fsops::{Entry, Kind};
use crate::paths::{shown, Located};
use crate::sandbox::open_beneath;
use crate::walk::{join, with_probe, Probe, Walker};
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
    app: Arc<App>,
    args: TreeArgs,
    cx: RequestContext,
) -> Result<Structured<TextOut>, ToolError> {
    let allowed = app.allowed(&cx).await?;
    let at = app.locate(&allowed, &args.path)?;
    let excludes = crate::glob::tree_set(&args.exclude_patterns)?;
    let a = app.clone();
    let text = with_probe(&cx, move |probe| {
        let mut walker = Walker::new(&at.root, a.policy, probe, a.limits.max_walk_entries);
        if walker.entries(&at.rel)?.is_none() {
            return Err(a.fail(&std::io::Error::from(rustix::io::Errno::NOENT), &at));
        }
        walker.visited = 0;
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
    app: Arc<App>,
    args: SearchArgs,
    cx: RequestContext,
) -> Result<Structured<SearchOut>, ToolError> {
    let allowed = app.allowed(&cx).await?;
    let at = app.locate(&allowed, &args.path)?;
    let pattern = crate::glob::one(&args.pattern)?;
    let excludes = crate::glob::set(&args.exclude_patterns)?;
    let a = app.clone();
    let (paths, note) = with_probe(&cx, move |probe| {
        let mut walker = Walker::new(&at.root, a.policy, probe, a.limits.max_walk_entries);
        let mut found = Vec::new();
        let mut stack = vec![(at.rel.clone(), String::new())];
        let mut first = true;
        while let Some((rel, from_start)) = stack.pop() {
            let Some(entries) = walker.entries(&rel)? else {
                if first {
                    return Err(a.fail(&std::io::Error::from(rustix::io::Errno::NOENT), &at));
                }
                continue;
            };
            first = false;
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

/// Arguments of `grep`.
#[derive(Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// What to find: a regular expression (Rust syntax, like ripgrep's), or text with literal.
    pub pattern: String,
    /// The file or directory to search (default: the first allowed directory).
    #[serde(default)]
    pub path: Option<String>,
    /// Take pattern as plain text, not a regular expression.
    #[serde(default)]
    pub literal: bool,
    /// Ignore case.
    #[serde(default, rename = "caseInsensitive")]
    pub case_insensitive: bool,
    /// Only files whose path (relative to path) matches this glob; a glob without / matches the
    /// file name (*.rs).
    #[serde(default)]
    pub include: Option<String>,
    /// Lines of context before and after each match, 0 to 10 (default 0).
    #[serde(default)]
    #[schemars(range(max = 10))]
    pub context: u8,
    /// The most matching lines returned, 1 to 1000 (default 100).
    #[serde(default, rename = "maxResults")]
    #[schemars(range(min = 1, max = 1000))]
    pub max_results: Option<u32>,
    /// Also search files that .gitignore excludes (and hidden .git directories are still skipped).
    #[serde(default, rename = "noIgnore")]
    pub no_ignore: bool,
}

/// A matching line.
#[derive(Serialize, JsonSchema, Clone)]
pub struct GrepMatch {
    /// The file (absolute).
    pub path: String,
    /// The 1-based line number.
    pub line: u64,
    /// The line (cut at 500 characters).
    pub text: String,
}

/// What `grep` answers.
#[derive(Serialize, JsonSchema)]
pub struct GrepOut {
    /// `path:line:text` lines, `path-line-text` for context, `--` between groups.
    pub content: String,
    /// The matching lines.
    pub matches: Vec<GrepMatch>,
    /// Files searched.
    #[serde(rename = "filesSearched")]
    pub files_searched: u64,
    /// Whether more lines matched than were returned.
    pub truncated: bool,
}

/// `grep`.
pub async fn grep(app: Arc<App>, args: GrepArgs, cx: RequestContext) -> Result<Structured<GrepOut>, ToolError> {
    if args.pattern.is_empty() {
        return Err(ToolError::new("pattern is empty: give the text or regular expression to find"));
    }
    if args.context > 10 {
        return Err(ToolError::new("context is at most 10 lines"));
    }
    let max = args.max_results.unwrap_or(100).clamp(1, 1000) as usize;
    let allowed = app.allowed(&cx).await?;
    let at = match args.path.as_deref() {
        Some(path) => app.locate(&allowed, path)?,
        None => Located { root: allowed.roots[0].clone(), rel: String::new() },
    };
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
        .fixed_strings(args.literal)
        .build(&args.pattern)
        .map_err(|e| {
            ToolError::new(format!(
                "pattern is not a valid regular expression ({e}); pass literal: true to search for the text as it is"
            ))
        })?;
    let include = match &args.include {
        Some(g) if !g.contains('/') => Some((crate::glob::one(g)?, true)),
        Some(g) => Some((crate::glob::one(g)?, false)),
        None => None,
    };
    let a = app.clone();
    let context = args.context as usize;
    let no_ignore = args.no_ignore;
    let out = with_probe(&cx, move |probe| {
        let mut search = GrepRun {
            app: &a,
            at: &at,
            matcher,
            searcher: SearcherBuilder::new()
                .line_number(true)
                .before_context(context)
                .after_context(context)
                .binary_detection(BinaryDetection::quit(0))
                .build(),
            include,
            max,
            lines: Vec::new(),
            matches: Vec::new(),
            files: 0,
            truncated: false,
            used: 0,
        };
        search.run(probe, no_ignore)
    })
    .await?;
    Ok(Structured { text: out.content.clone(), value: out })
}

struct GrepRun<'a> {
    app: &'a App,
    at: &'a Located,
    matcher: grep_regex::RegexMatcher,
    searcher: Searcher,
    include: Option<(globset::GlobMatcher, bool)>,
    max: usize,
    lines: Vec<String>,
    matches: Vec<GrepMatch>,
    files: u64,
    truncated: bool,
    used: usize,
}

impl GrepRun<'_> {
    fn run(&mut self, probe: &Probe, no_ignore: bool) -> Result<GrepOut, ToolError> {
        let fd = self.app.open(self.at, OFlags::RDONLY)?;
        let is_dir =
            rustix::fs::fstat(&fd).map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir()).unwrap_or(false);
        drop(fd);
        let mut note = None;
        if is_dir {
            let mut walker = Walker::new(&self.at.root, self.app.policy, probe, self.app.limits.max_walk_entries);
            let mut ignores: Vec<(usize, Gitignore)> = Vec::new();
            if !no_ignore {
                self.load_ancestor_ignores(&mut ignores);
            }
            let mut stack = vec![(self.at.rel.clone(), String::new(), 0usize)];
            while let Some((rel, from_start, depth)) = stack.pop() {
                if self.matches.len() >= self.max {
                    self.truncated = true;
                    break;
                }
                ignores.retain(|(d, _)| *d <= depth);
                let Some(entries) = walker.entries(&rel)? else { continue };
                if !no_ignore && entries.iter().any(|e| e.name == b".gitignore") {
                    if let Some(gi) = self.read_ignore(&rel) {
                        ignores.push((depth + 1, gi));
                    }
                }
                let mut dirs = Vec::new();
                for entry in entries {
                    if !crate::fsops::addressable(&entry.name) {
                        continue;
                    }
                    let name = entry.display();
                    let path = join(&rel, &name);
                    let relative = join(&from_start, &name);
                    if entry.kind == Kind::Dir {
                        if name == ".git" || ignored(&ignores, &path, true) {
                            continue;
                        }
                        dirs.push((path, relative, depth + 1));
                    } else if entry.kind == Kind::File
                        && !ignored(&ignores, &path, false)
                        && self.included(&relative, &name)
                    {
                        self.search_file(&path, &entry)?;
                        if self.matches.len() >= self.max {
                            break;
                        }
                    }
                }
                stack.extend(dirs.into_iter().rev());
            }
            note = walker.note();
        } else {
            let entry = Entry { name: Vec::new(), kind: Kind::File };
            self.search_file(&self.at.rel.clone(), &entry)?;
        }
        let mut content = if self.matches.is_empty() {
            format!("No match in {} files searched", self.files)
        } else {
            self.lines.join("\n")
        };
        if self.truncated {
            content.push_str(&format!(
                "\n\n(stopped at {} matching lines: narrow with path or include, or raise maxResults)",
                self.matches.len()
            ));
        }
        if let Some(note) = note {
            content.push_str(&format!("\n\nNote: {note}"));
        }
        Ok(GrepOut {
            content,
            matches: std::mem::take(&mut self.matches),
            files_searched: self.files,
            truncated: self.truncated,
        })
    }

    fn included(&self, relative: &str, name: &str) -> bool {
        match &self.include {
            None => true,
            Some((glob, true)) => glob.is_match(name),
            Some((glob, false)) => glob.is_match(relative),
        }
    }

    /// The `.gitignore` files from the root down to the search's start (exclusive).
    fn load_ancestor_ignores(&self, ignores: &mut Vec<(usize, Gitignore)>) {
        let parts: Vec<&str> = self.at.rel.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
        if parts.contains(&"..") {
            return;
        }
        for i in 0..parts.len() {
            if let Some(gi) = self.read_ignore(&parts[..i].join("/")) {
                ignores.push((0, gi));
            }
        }
    }

    fn read_ignore(&self, dir: &str) -> Option<Gitignore> {
        let at = Located { root: self.at.root.clone(), rel: join(dir, ".gitignore") };
        let fd = open_beneath(at.root.fd(), &at.rel, OFlags::RDONLY, self.app.policy).ok()?;
        let st = rustix::fs::fstat(&fd).ok()?;
        if !rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() || st.st_size > 1 << 20 {
            return None;
        }
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::fs::File::from(fd), &mut text).ok()?;
        let mut builder = GitignoreBuilder::new(PathBuf::from(dir));
        for line in text.lines() {
            let _ = builder.add_line(None, line);
        }
        builder.build().ok()
    }

    fn search_file(&mut self, rel: &str, _entry: &Entry) -> Result<(), ToolError> {
        let at = Located { root: self.at.root.clone(), rel: rel.to_owned() };
        let file = match self.app.open_file(&at, self.app.limits.max_file_bytes) {
            Ok((file, _)) => file,
            Err(e) if rel == self.at.rel => return Err(e),
            Err(_) => return Ok(()), // too large, a link, a FIFO: skipped in a walk
        };
        self.files += 1;
        let path = at.shown();
        let mut searcher = self.searcher.clone();
        let matcher = self.matcher.clone();
        let mut sink = Collect { run: self, path: &path, last_line: None };
        let _ = searcher.search_file(&matcher, &file, &mut sink);
        Ok(())
    }
}

fn ignored(ignores: &[(usize, Gitignore)], path: &str, is_dir: bool) -> bool {
    for (_, gi) in ignores.iter().rev() {
        let m = gi.matched(path, is_dir);
        if m.is_ignore() {
            return true;
        }
        if m.is_whitelist() {
            return false;
        }
    }
    false
}

struct Collect<'r, 'a> {
    run: &'r mut GrepRun<'a>,
    path: &'r str,
    last_line: Option<u64>,
}

fn cut(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    match text.char_indices().nth(500) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

impl Collect<'_, '_> {
    fn push(&mut self, line: u64, sep: char, text: String) -> bool {
        if let Some(last) = self.last_line {
            if line > last + 1 && !self.run.lines.is_empty() {
                self.run.lines.push("--".into());
            }
        } else if !self.run.lines.is_empty()
            && self.run.searcher.before_context() + self.run.searcher.after_context() > 0
        {
            self.run.lines.push("--".into());
        }
        self.last_line = Some(line);
        let entry = format!("{}{sep}{line}{sep}{text}", self.path);
        self.run.used += entry.len() + 1;
        self.run.lines.push(entry);
        if self.run.used > self.run.app.limits.max_result_bytes {
            self.run.truncated = true;
            return false;
        }
        true
    }
}

impl Sink for Collect<'_, '_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let line = m.line_number().unwrap_or(0);
        let text = cut(m.bytes());
        self.run.matches.push(GrepMatch { path: self.path.to_owned(), line, text: text.clone() });
        let more = self.push(line, ':', text);
        if self.run.matches.len() >= self.run.max {
            self.run.truncated = true;
            return Ok(false);
        }
        Ok(more)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if matches!(c.kind(), SinkContextKind::Other) {
            return Ok(true);
        }
        Ok(self.push(c.line_number().unwrap_or(0), '-', cut(c.bytes())))
    }
}
