//! `list_directory`, `list_directory_with_sizes`, `get_file_info`, `list_allowed_directories`.

use std::sync::Arc;

use mcp::server::{NoArgs, RequestContext, State, Structured, ToolError};
use rustix::fs::{statat, AtFlags, FileType, OFlags};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::read::PathArgs;
use crate::fsops::{list, Kind};
use crate::{blocking, App};

/// One listed entry.
#[derive(Serialize, JsonSchema)]
pub struct Listed {
    /// Its name (bytes that are not UTF-8 shown as `\xNN`).
    pub name: String,
    /// `file`, `directory`, `symlink` or `other`.
    #[serde(rename = "type")]
    pub kind: Kind,
    /// Its size in bytes (files, with sizes only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// A listing.
#[derive(Serialize, JsonSchema)]
pub struct ListingOut {
    /// The listing as text, `[DIR]` and `[FILE]` lines.
    pub content: String,
    /// The entries.
    pub entries: Vec<Listed>,
}

/// `list_directory`.
pub async fn list_directory(
    State(app): State<Arc<App>>,
    args: PathArgs,
    cx: RequestContext,
) -> Result<Structured<ListingOut>, ToolError> {
    let (entries, more) = read_dir(&app, &cx, &args.path, false).await?;
    let lines = entries.iter().map(|e| format!("{} {}", e.kind.tag(), e.name));
    let mut content = lines.collect::<Vec<_>>().join("\n");
    if more {
        content.push_str(&format!(
            "\n\n(only the first {} entries were read: use search_files to find names)",
            entries.len()
        ));
    }
    let content = app.cap_result(content, "list a subdirectory, or use search_files")?;
    Ok(Structured { text: content.clone(), value: ListingOut { content, entries } })
}

/// Arguments of `list_directory_with_sizes`.
#[derive(Deserialize, JsonSchema)]
pub struct SizesArgs {
    /// The directory.
    pub path: String,
    /// Sort entries by name or size
    #[serde(default, rename = "sortBy")]
    pub sort_by: Option<SortBy>,
}

/// How to sort.
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SortBy {
    /// By name.
    Name,
    /// Largest first.
    Size,
}

/// `list_directory_with_sizes`.
pub async fn list_directory_with_sizes(
    State(app): State<Arc<App>>,
    args: SizesArgs,
    cx: RequestContext,
) -> Result<Structured<ListingOut>, ToolError> {
    let (mut entries, more) = read_dir(&app, &cx, &args.path, true).await?;
    if args.sort_by == Some(SortBy::Size) {
        entries.sort_by_key(|e| std::cmp::Reverse(e.size.unwrap_or(0)));
    }
    let mut lines: Vec<String> = entries
        .iter()
        .map(|e| {
            let size = match e.kind {
                Kind::Dir => String::new(),
                _ => format!("{:>10}", format_size(e.size.unwrap_or(0))),
            };
            format!("{} {:<30} {size}", e.kind.tag(), e.name)
        })
        .collect();
    let files = entries.iter().filter(|e| e.kind != Kind::Dir).count();
    let total: u64 = entries.iter().filter_map(|e| e.size).sum();
    lines.push(String::new());
    lines.push(format!("Total: {files} files, {} directories", entries.len() - files));
    lines.push(format!("Combined size: {}", format_size(total)));
    if more {
        lines.push(format!("(only the first {} entries were read: use search_files to find names)", entries.len()));
    }
    let content = app.cap_result(lines.join("\n"), "list a subdirectory")?;
    Ok(Structured { text: content.clone(), value: ListingOut { content, entries } })
}

async fn read_dir(
    app: &Arc<App>,
    cx: &RequestContext,
    path: &str,
    sizes: bool,
) -> Result<(Vec<Listed>, bool), ToolError> {
    let allowed = app.allowed(cx).await?;
    let at = app.locate(&allowed, path)?;
    let a = app.clone();
    blocking(move || {
        let dir = a.open(&at, OFlags::RDONLY | OFlags::DIRECTORY)?;
        let probe = dir.try_clone().map_err(|e| a.fail(&e, &at))?;
        let (mut entries, more) = list(dir, a.limits.max_walk_entries).map_err(|e| a.fail(&e, &at))?;
        entries.sort_by(|x, y| x.name.cmp(&y.name));
        let listed = entries
            .iter()
            .map(|e| {
                let size = (sizes && e.kind != Kind::Dir).then(|| {
                    statat(&probe, e.name.as_slice(), AtFlags::SYMLINK_NOFOLLOW)
                        .map(|st| st.st_size as u64)
                        .unwrap_or(0)
                });
                Listed { name: e.display(), kind: e.kind, size }
            })
            .collect();
        Ok((listed, more))
    })
    .await
}

/// The reference server's size format: `1.50 KB`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    if bytes == 0 {
        return "0 B".into();
    }
    let i = ((bytes as f64).ln() / 1024f64.ln()).floor() as usize;
    if i == 0 {
        return format!("{bytes} B");
    }
    let i = i.min(UNITS.len() - 1);
    format!("{:.2} {}", bytes as f64 / 1024f64.powi(i as i32), UNITS[i])
}

/// What `get_file_info` answers.
#[derive(Serialize, JsonSchema)]
pub struct InfoOut {
    /// The facts as `key: value` lines.
    pub content: String,
    /// Size in bytes.
    pub size: u64,
    /// Creation time (RFC 3339, UTC), where the file system keeps it.
    pub created: Option<String>,
    /// Last modification (RFC 3339, UTC).
    pub modified: String,
    /// Last access (RFC 3339, UTC).
    pub accessed: String,
    /// Whether it is a directory.
    #[serde(rename = "isDirectory")]
    pub is_directory: bool,
    /// Whether it is a regular file.
    #[serde(rename = "isFile")]
    pub is_file: bool,
    /// Whether it is a symbolic link (never followed).
    #[serde(rename = "isSymlink")]
    pub is_symlink: bool,
    /// Permission bits, octal (`644`).
    pub permissions: String,
    /// Hard links to it.
    pub links: u64,
}

/// `get_file_info`: `lstat`-like (a symlink is described, not followed).
pub async fn get_file_info(
    State(app): State<Arc<App>>,
    args: PathArgs,
    cx: RequestContext,
) -> Result<Structured<InfoOut>, ToolError> {
    let allowed = app.allowed(&cx).await?;
    let at = app.locate(&allowed, &args.path)?;
    let a = app.clone();
    let info = blocking(move || {
        let btime = rustix::fs::StatxFlags::BTIME;
        let (st, statx) = match crate::sandbox::split_parent(&at.rel) {
            Some(_) => {
                let (dir, name) =
                    crate::sandbox::open_parent(at.root.fd(), &at.rel, a.policy).map_err(|e| a.fail(&e, &at))?;
                let st = statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| a.fail(&e.into(), &at))?;
                (st, rustix::fs::statx(&dir, name, AtFlags::SYMLINK_NOFOLLOW, btime).ok())
            }
            None => {
                let fd = a.open(&at, OFlags::RDONLY)?;
                let st = rustix::fs::fstat(&fd).map_err(|e| a.fail(&e.into(), &at))?;
                (st, rustix::fs::statx(&fd, "", AtFlags::EMPTY_PATH, btime).ok())
            }
        };
        let kind = FileType::from_raw_mode(st.st_mode);
        let created = statx
            .filter(|x| x.stx_mask & btime.bits() != 0)
            .map(|x| time_of(x.stx_btime.tv_sec, i64::from(x.stx_btime.tv_nsec)));
        Ok(InfoOut {
            content: String::new(),
            size: st.st_size as u64,
            created,
            modified: time_of(st.st_mtime, st.st_mtime_nsec as i64),
            accessed: time_of(st.st_atime, st.st_atime_nsec as i64),
            is_directory: kind == FileType::Directory,
            is_file: kind == FileType::RegularFile,
            is_symlink: kind == FileType::Symlink,
            permissions: format!("{:03o}", st.st_mode & 0o777),
            links: st.st_nlink,
        })
    })
    .await?;
    let mut info = info;
    info.content = format!(
        "size: {}\ncreated: {}\nmodified: {}\naccessed: {}\nisDirectory: {}\nisFile: {}\nisSymlink: {}\npermissions: {}\nlinks: {}",
        info.size,
        info.created.as_deref().unwrap_or("unknown"),
        info.modified,
        info.accessed,
        info.is_directory,
        info.is_file,
        info.is_symlink,
        info.permissions,
        info.links
    );
    Ok(Structured { text: info.content.clone(), value: info })
}

/// A file time (seconds and nanoseconds since the epoch) as RFC 3339 UTC, with milliseconds.
fn time_of(secs: i64, nanos: i64) -> String {
    let ms = secs.saturating_mul(1000).saturating_add(nanos / 1_000_000);
    mcp::tasks::record::iso8601(ms.max(0) as u64)
}

/// What `list_allowed_directories` answers.
#[derive(Serialize, JsonSchema)]
pub struct AllowedOut {
    /// The directories as text.
    pub content: String,
    /// Each directory and why it applies.
    pub directories: Vec<AllowedDir>,
    /// Client roots that do not apply, and why.
    pub notes: Vec<String>,
    /// How containment is enforced.
    pub containment: String,
    /// Whether writes are refused.
    #[serde(rename = "readOnly")]
    pub read_only: bool,
}

/// An allowed directory.
#[derive(Serialize, JsonSchema)]
pub struct AllowedDir {
    /// The path.
    pub path: String,
    /// Why it applies: the command line, or a client root.
    pub why: String,
}

/// `list_allowed_directories`.
pub async fn list_allowed_directories(
    State(app): State<Arc<App>>,
    _: NoArgs,
    cx: RequestContext,
) -> Result<Structured<AllowedOut>, ToolError> {
    let allowed = app.allowed(&cx).await?;
    let directories: Vec<AllowedDir> =
        allowed.roots.iter().map(|r| AllowedDir { path: r.path.display().to_string(), why: r.why.clone() }).collect();
    let mut content = String::from("Allowed directories:\n");
    content.push_str(&directories.iter().map(|d| d.path.as_str()).collect::<Vec<_>>().join("\n"));
    let mut footer = vec![];
    for d in &directories {
        footer.push(format!("{}: {}", d.path, d.why));
    }
    footer.extend(allowed.notes.iter().cloned());
    footer.push(format!("containment: {}", app.policy.resolver.describe()));
    if app.read_only {
        footer.push("read-only: nothing can be written".into());
    }
    let text = format!("{content}\n\n{}", footer.join("\n"));
    Ok(Structured {
        text,
        value: AllowedOut {
            content,
            directories,
            notes: allowed.notes.clone(),
            containment: app.policy.resolver.describe().into(),
            read_only: app.read_only,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_the_reference_and_times_are_rfc3339() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(1000), "1000 B");
        assert_eq!(format_size(1536), "1.50 KB");
        assert_eq!(format_size(5 << 20), "5.00 MB");
        assert_eq!(time_of(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(time_of(1_796_083_200, 250_000_000), "2026-12-01T00:00:00.250Z");
    }
}
