//! `grep`: file contents searched with ripgrep's searcher and regex engine, `.gitignore`-aware.
//!
//! The walk collects the files first (names only, honouring every `.gitignore` from the root
//! down), then two workers search them, each with its own `Searcher` (its buffers are made once),
//! every file opened beneath the root by its whole path. Results are put back in path order;
//! once `maxResults` lines have matched the workers stop taking files.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use mcp::server::{RequestContext, State, Structured, ToolError};
use rustix::fs::{FileType, OFlags};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::fsops::Kind;
use crate::paths::Located;
use crate::sandbox::open_beneath;
use crate::walk::{join, with_probe, Probe, Walker};
use crate::App;

/// How many threads search at once.
const WORKERS: usize = 2;

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
    /// Also search files that .gitignore excludes (.git directories are skipped either way).
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
pub async fn grep(
    State(app): State<Arc<App>>,
    args: GrepArgs,
    cx: RequestContext,
) -> Result<Structured<GrepOut>, ToolError> {
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
        Some(g) => Some((crate::glob::one(g)?, !g.contains('/'))),
        None => None,
    };
    let a = app.clone();
    let out = with_probe(&cx, move |probe| {
        let plan = Plan { app: &a, at: &at, include, no_ignore: args.no_ignore };
        let (files, note) = plan.files(probe)?;
        let search = Search { app: &a, matcher, context: args.context as usize, max };
        Ok(search.run(&at, &files, probe, note))
    })
    .await?;
    Ok(Structured { text: out.content.clone(), value: out })
}

/// What to search: the walk that lists the files.
struct Plan<'a> {
    app: &'a App,
    at: &'a Located,
    /// The glob, and whether it is matched against the file name alone.
    include: Option<(globset::GlobMatcher, bool)>,
    no_ignore: bool,
}

impl Plan<'_> {
    /// The files to search (paths beneath the root), in path order, and a note on the walk.
    fn files(&self, probe: &Probe) -> Result<(Vec<String>, Option<String>), ToolError> {
        let fd = self.app.open(self.at, OFlags::RDONLY)?;
        let is_dir = rustix::fs::fstat(&fd).map(|st| FileType::from_raw_mode(st.st_mode).is_dir()).unwrap_or(false);
        drop(fd);
        if !is_dir {
            self.app.open_file(self.at, self.app.limits.max_file_bytes)?; // its refusal, said to the model
            return Ok((vec![self.at.rel.clone()], None));
        }
        let mut walker = Walker::new(&self.at.root, self.app.policy, probe, self.app.limits.max_walk_entries);
        let mut ignores: Vec<(usize, Gitignore)> = Vec::new();
        if !self.no_ignore {
            self.load_ancestor_ignores(&mut ignores);
        }
        let mut files = Vec::new();
        let mut stack = vec![(self.at.rel.clone(), String::new(), 0usize)];
        while let Some((rel, from_start, depth)) = stack.pop() {
            ignores.retain(|(d, _)| *d <= depth);
            let Some(entries) = walker.entries(&rel)? else { continue };
            if !self.no_ignore && entries.iter().any(|e| e.name == b".gitignore") {
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
                match entry.kind {
                    Kind::Dir if name != ".git" && !ignored(&ignores, &path, true) => {
                        dirs.push((path, relative, depth + 1));
                    }
                    Kind::File if !ignored(&ignores, &path, false) && self.included(&relative, &name) => {
                        files.push(path);
                    }
                    _ => {}
                }
            }
            stack.extend(dirs.into_iter().rev());
        }
        Ok((files, walker.note()))
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
        let fd = open_beneath(self.at.root.fd(), &join(dir, ".gitignore"), OFlags::RDONLY, self.app.policy).ok()?;
        let st = rustix::fs::fstat(&fd).ok()?;
        if !FileType::from_raw_mode(st.st_mode).is_file() || st.st_size > 1 << 20 {
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

/// The search of the listed files.
struct Search<'a> {
    app: &'a App,
    matcher: RegexMatcher,
    context: usize,
    max: usize,
}

/// What one file gave: its output lines and its matches.
#[derive(Default)]
struct Hits {
    /// Output lines, each marked whether it is a match (else context or `--`).
    lines: Vec<(bool, String)>,
    matches: Vec<GrepMatch>,
}

impl Search<'_> {
    fn run(&self, at: &Located, files: &[String], probe: &Probe, note: Option<String>) -> GrepOut {
        let next = AtomicUsize::new(0);
        let found = AtomicUsize::new(0);
        let searched = AtomicUsize::new(0);
        let results: Mutex<Vec<(usize, Hits)>> = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..WORKERS.min(files.len().max(1)) {
                scope.spawn(|| {
                    let mut searcher = SearcherBuilder::new()
                        .line_number(true)
                        .before_context(self.context)
                        .after_context(self.context)
                        .binary_detection(BinaryDetection::quit(0))
                        .build();
                    let mut mine = Vec::new();
                    loop {
                        if found.load(Ordering::Relaxed) >= self.max || probe.cancelled() {
                            break;
                        }
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(rel) = files.get(i) else { break };
                        let file = Located { root: at.root.clone(), rel: rel.clone() };
                        let Some(hits) = self.search_file(&mut searcher, &file) else { continue };
                        let n = searched.fetch_add(1, Ordering::Relaxed) + 1;
                        if n % 1024 == 0 {
                            probe.tick(n as u64);
                        }
                        if !hits.matches.is_empty() {
                            found.fetch_add(hits.matches.len(), Ordering::Relaxed);
                            mine.push((i, hits));
                        }
                    }
                    results.lock().unwrap().extend(mine);
                });
            }
        });
        let mut results = results.into_inner().unwrap();
        results.sort_by_key(|(i, _)| *i);
        self.assemble(results, searched.into_inner() as u64, found.into_inner(), note)
    }

    /// Searches one file; `None` when it cannot be read (skipped in a walk).
    fn search_file(&self, searcher: &mut Searcher, at: &Located) -> Option<Hits> {
        let (file, _) = self.app.open_file(at, self.app.limits.max_file_bytes).ok()?;
        let mut sink = Collect { path: at.shown(), last_line: None, hits: Hits::default(), max: self.max };
        let _ = searcher.search_file(&self.matcher, &file, &mut sink);
        Some(sink.hits)
    }

    fn assemble(&self, results: Vec<(usize, Hits)>, searched: u64, found: usize, note: Option<String>) -> GrepOut {
        let mut lines: Vec<String> = Vec::new();
        let mut matches = Vec::new();
        let mut used = 0;
        let mut truncated = found > self.max;
        'files: for (_, hits) in results {
            if self.context > 0 && !lines.is_empty() {
                lines.push("--".to_owned());
            }
            let mut m = hits.matches.into_iter();
            for (is_match, line) in hits.lines {
                used += line.len() + 1;
                if used > self.app.limits.max_result_bytes {
                    truncated = true;
                    break 'files;
                }
                if is_match {
                    if matches.len() >= self.max {
                        truncated = true;
                        break 'files;
                    }
                    matches.extend(m.next());
                }
                lines.push(line);
            }
        }
        let mut content =
            if matches.is_empty() { format!("No match in {searched} files searched") } else { lines.join("\n") };
        if truncated {
            content.push_str(&format!(
                "\n\n(stopped at {} matching lines: narrow with path or include, or raise maxResults)",
                matches.len()
            ));
        }
        if let Some(note) = note {
            content.push_str(&format!("\n\nNote: {note}"));
        }
        GrepOut { content, matches, files_searched: searched, truncated }
    }
}

struct Collect {
    path: String,
    last_line: Option<u64>,
    hits: Hits,
    max: usize,
}

fn cut(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    match text.char_indices().nth(500) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

impl Collect {
    fn push(&mut self, line: u64, is_match: bool, text: &str) {
        if self.last_line.is_some_and(|last| line > last + 1) {
            self.hits.lines.push((false, "--".into()));
        }
        self.last_line = Some(line);
        let sep = if is_match { ':' } else { '-' };
        self.hits.lines.push((is_match, format!("{}{sep}{line}{sep}{text}", self.path)));
    }
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let line = m.line_number().unwrap_or(0);
        let text = cut(m.bytes());
        self.push(line, true, &text);
        self.hits.matches.push(GrepMatch { path: self.path.clone(), line, text });
        Ok(self.hits.matches.len() <= self.max)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if matches!(c.kind(), SinkContextKind::Other) {
            return Ok(true);
        }
        self.push(c.line_number().unwrap_or(0), false, &cut(c.bytes()));
        Ok(true)
    }
}
