//! `write_file`, `edit_file`, `create_directory`, `move_file`: every write atomic or a single
//! system call on descriptors opened beneath a root.

use std::sync::Arc;

use mcp::server::{RequestContext, State, Structured, ToolError};
use rustix::fs::{mkdirat, renameat_with, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use schemars::JsonSchema;
use serde::Deserialize;

use super::read::TextOut;
use super::text_out;
use crate::sandbox::{open_beneath, open_parent, split_parent};
use crate::{blocking, App};

/// Arguments of `write_file`.
#[derive(Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// The file to create or overwrite.
    pub path: String,
    /// Its whole new contents.
    pub content: String,
}

/// `write_file`.
pub async fn write_file(
    State(app): State<Arc<App>>,
    args: WriteArgs,
    cx: RequestContext,
) -> Result<Structured<TextOut>, ToolError> {
    app.check_writable()?;
    let allowed = app.allowed(&cx).await?;
    let at = app.locate(&allowed, &args.path)?;
    let a = app.clone();
    blocking(move || a.write_atomic(&at, args.content.as_bytes())).await?;
    Ok(text_out(format!("Successfully wrote to {}", args.path)))
}

/// One edit of `edit_file`.
#[derive(Deserialize, JsonSchema)]
pub struct Edit {
    /// Text to search for - must match exactly
    #[serde(rename = "oldText")]
    pub old_text: String,
    /// Text to replace with
    #[serde(rename = "newText")]
    pub new_text: String,
}

/// Arguments of `edit_file`.
#[derive(Deserialize, JsonSchema)]
pub struct EditArgs {
    /// The file to edit.
    pub path: String,
    /// The edits, applied in order; each oldText must occur exactly once.
    pub edits: Vec<Edit>,
    /// Preview changes using git-style diff format
    #[serde(default, rename = "dryRun")]
    pub dry_run: bool,
}

/// `edit_file`: exact-text replacements, each of text found exactly once, shown as a unified
/// diff; with `dryRun` nothing is written. Line endings of a CRLF file are kept.
pub async fn edit_file(
    State(app): State<Arc<App>>,
    args: EditArgs,
    cx: RequestContext,
) -> Result<Structured<TextOut>, ToolError> {
    if !args.dry_run {
        app.check_writable()?;
    }
    if args.edits.is_empty() {
        return Err(ToolError::new("edits is empty: give at least one {oldText, newText}"));
    }
    let allowed = app.allowed(&cx).await?;
    let at = app.locate(&allowed, &args.path)?;
    let a = app.clone();
    let shown = at.shown();
    blocking(move || {
        let original = a.read_text(&at)?;
        let crlf = original.contains("\r\n");
        let before = original.replace("\r\n", "\n");
        let mut after = before.clone();
        for (i, edit) in args.edits.iter().enumerate() {
            let old = edit.old_text.replace("\r\n", "\n");
            let new = edit.new_text.replace("\r\n", "\n");
            if old.is_empty() {
                return Err(ToolError::new(format!(
                    "edit {}: oldText is empty; give the exact text to replace",
                    i + 1
                )));
            }
            let mut found = after.match_indices(&old);
            let Some((at_byte, _)) = found.next() else {
                return Err(ToolError::new(format!(
                    "edit {}: oldText was not found in {shown} (after the edits before it): read_text_file to copy \
                     the exact text, whitespace included",
                    i + 1
                )));
            };
            if found.next().is_some() {
                return Err(ToolError::new(format!(
                    "edit {}: oldText occurs more than once in {shown}: include more of the surrounding lines so \
                     that it names one place",
                    i + 1
                )));
            }
            after.replace_range(at_byte..at_byte + old.len(), &new);
        }
        let diff = unified_diff(&shown, &before, &after);
        if !args.dry_run {
            let out = if crlf { after.replace('\n', "\r\n") } else { after };
            a.write_atomic(&at, out.as_bytes())?;
        }
        let mut ticks = 3;
        while diff.contains(&"`".repeat(ticks)) {
            ticks += 1;
        }
        let fence = "`".repeat(ticks);
        Ok(text_out(format!("{fence}diff\n{diff}{fence}\n\n")))
    })
    .await
}

/// A git-style unified diff of `before` and `after`, headed by `path`.
pub fn unified_diff(path: &str, before: &str, after: &str) -> String {
    let diff = similar::TextDiff::from_lines(before, after);
    let mut out = format!("Index: {path}\n{}\n--- {path}\toriginal\n+++ {path}\tmodified\n", "=".repeat(67));
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        out.push_str(&hunk.to_string());
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// Arguments of `create_directory`.
#[derive(Deserialize, JsonSchema)]
pub struct DirArgs {
    /// The directory to create, with any missing parents.
    pub path: String,
}

/// `create_directory`: `mkdir -p`, each level created beneath the one before.
pub async fn create_directory(
    State(app): State<Arc<App>>,
    args: DirArgs,
    cx: RequestContext,
) -> Result<Structured<TextOut>, ToolError> {
    app.check_writable()?;
    let allowed = app.allowed(&cx).await?;
    let at = app.locate(&allowed, &args.path)?;
    let a = app.clone();
    blocking(move || {
        let parts: Vec<&str> = at.rel.split('/').filter(|p| !p.is_empty()).collect();
        for i in 0..parts.len() {
            let prefix = parts[..=i].join("/");
            match open_beneath(at.root.fd(), &prefix, OFlags::RDONLY | OFlags::DIRECTORY, a.policy) {
                Ok(_) => continue,
                Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => {}
                Err(e) => return Err(a.fail(&e, &at)),
            }
            let (parent, name) = open_parent(at.root.fd(), &prefix, a.policy).map_err(|e| a.fail(&e, &at))?;
            match mkdirat(&parent, name, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(a.fail(&e.into(), &at)),
            }
        }
        // What now stands there must be a directory reached beneath the root.
        open_beneath(at.root.fd(), &at.rel, OFlags::RDONLY | OFlags::DIRECTORY, a.policy)
            .map_err(|e| a.fail(&e, &at))?;
        Ok(())
    })
    .await?;
    Ok(text_out(format!("Successfully created directory {}", args.path)))
}

/// Arguments of `move_file`.
#[derive(Deserialize, JsonSchema)]
pub struct MoveArgs {
    /// What to move or rename.
    pub source: String,
    /// Where to, which must not exist.
    pub destination: String,
}

/// `move_file`: one `renameat2(RENAME_NOREPLACE)` between two directories opened beneath
/// roots, so it can neither leave them nor overwrite anything.
pub async fn move_file(
    State(app): State<Arc<App>>,
    args: MoveArgs,
    cx: RequestContext,
) -> Result<Structured<TextOut>, ToolError> {
    app.check_writable()?;
    let allowed = app.allowed(&cx).await?;
    let from = app.locate(&allowed, &args.source)?;
    let to = app.locate(&allowed, &args.destination)?;
    let a = app.clone();
    blocking(move || {
        if split_parent(&from.rel).is_none() {
            return Err(ToolError::new(format!("{} names no file or directory that can be moved", from.shown())));
        }
        let (from_dir, from_name) = open_parent(from.root.fd(), &from.rel, a.policy).map_err(|e| a.fail(&e, &from))?;
        let (to_dir, to_name) = open_parent(to.root.fd(), &to.rel, a.policy).map_err(|e| a.fail(&e, &to))?;
        match renameat_with(&from_dir, from_name, &to_dir, to_name, RenameFlags::NOREPLACE) {
            Ok(()) => Ok(()),
            Err(Errno::EXIST) => Err(ToolError::new(format!("Destination already exists: {}", to.shown()))),
            Err(Errno::XDEV) => Err(ToolError::new(format!(
                "{} and {} are on different file systems: a move cannot cross them; copy with read and write instead",
                from.shown(),
                to.shown()
            ))),
            Err(Errno::INVAL) => Err(ToolError::new(format!("{} cannot be moved into itself", from.shown()))),
            Err(e) => Err(a.fail(&e.into(), &from)),
        }
    })
    .await?;
    Ok(text_out(format!("Successfully moved {} to {}", args.source, args.destination)))
}
