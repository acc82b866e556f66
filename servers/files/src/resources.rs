//! Files as resources: each configured directory is listed as a `file://` resource, every file
//! and directory beneath the allowed ones is readable through the template `file://{+path}`
//! (with completion of the path), and `resources/subscribe` watches it (see [`watch`](crate::watch)).

use std::sync::Arc;

use base64::Engine as _;
use mcp::server::{RequestContext, ResourceRequest, Router, State, ToolError};
use mcp::types::content::{BlobResourceContents, ResourceContents, TextResourceContents};
use mcp::types::resources::{Resource, ResourceTemplate};
use rustix::fs::{fstat, FileType, OFlags};
use serde::Deserialize;

use crate::fsops::{list, Kind};
use crate::paths::{locate, Located};
use crate::roots::{file_uri, file_uri_path};
use crate::tools::read::mime_of;
use crate::{blocking, App};

/// The template's variables.
#[derive(Deserialize)]
pub struct FilePath {
    /// The absolute path after `file://`.
    pub path: String,
}

/// The most completions offered.
const MAX_COMPLETIONS: usize = 100;

/// Registers the resources, the template, its completion and the subscription hook.
pub fn register(mut router: Router, app: Arc<App>) -> Router {
    for root in app.roots.last().roots.iter() {
        let shown = root.path.display().to_string();
        router = router.resource_def(
            Resource {
                uri: file_uri(&shown),
                name: root.path.file_name().map_or(shown.clone(), |n| n.to_string_lossy().into_owned()),
                title: Some(format!("Allowed directory {shown}")),
                description: Some(format!("The entries of {shown}, one a line ([DIR] or [FILE], then the name).")),
                mime_type: Some("text/plain".into()),
                ..Default::default()
            },
            |State(app): State<Arc<App>>, r: ResourceRequest, cx| read(app, r.uri, cx),
        );
    }
    router = router.resource_template_def(
        ResourceTemplate {
            uri_template: "file://{+path}".into(),
            name: "file".into(),
            title: Some("A file or directory".into()),
            description: Some(
                "Any file (its text, or its bytes for binary files) or directory (its entries) inside the allowed \
                 directories, by absolute path: file:///home/me/project/README.md."
                    .into(),
            ),
            ..Default::default()
        },
        |State(app): State<Arc<App>>, r: ResourceRequest<FilePath>, cx| read(app, r.uri, cx),
    );
    let a = app.clone();
    router = router.complete_resource_argument("file://{+path}", "path", move |typed: &str, _: &_| complete(&a, typed));
    let a = app.clone();
    router.on_subscribe(move |uri, on| subscribe(&a, uri, on))
}

fn locate_uri(roots: &[Arc<crate::sandbox::Root>], uri: &str) -> Result<Located, ToolError> {
    let path = file_uri_path(uri).ok_or_else(|| ToolError::not_found(format!("{uri} is not a file:// URI")))?;
    let text = path.to_str().ok_or_else(|| ToolError::not_found(format!("{uri} is not UTF-8")))?;
    locate(roots, text).map_err(ToolError::not_found)
}

async fn read(app: Arc<App>, uri: String, cx: RequestContext) -> Result<Vec<ResourceContents>, ToolError> {
    let allowed = app.allowed(&cx).await?;
    let at = locate_uri(&allowed.roots, &uri)?;
    let a = app.clone();
    blocking(move || {
        let fd = a.open(&at, OFlags::RDONLY).map_err(|e| ToolError::not_found(e.to_string()))?;
        let st = fstat(&fd).map_err(|e| ToolError::not_found(e.to_string()))?;
        if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
            let (mut entries, _) = list(fd, a.limits.max_walk_entries).map_err(|e| ToolError::new(e.to_string()))?;
            entries.sort_by(|x, y| x.name.cmp(&y.name));
            let text: Vec<String> = entries.iter().map(|e| format!("{} {}", e.kind.tag(), e.display())).collect();
            return Ok(vec![ResourceContents::Text(TextResourceContents {
                uri,
                mime_type: Some("text/plain".into()),
                text: text.join("\n"),
                meta: None,
            })]);
        }
        drop(fd);
        let bytes = a.read_all(&at).map_err(|e| ToolError::not_found(e.to_string()))?;
        let mime = mime_of(&at.rel);
        Ok(vec![match String::from_utf8(bytes) {
            Ok(text) => ResourceContents::Text(TextResourceContents {
                uri,
                mime_type: Some(if mime == "application/octet-stream" { "text/plain".into() } else { mime.into() }),
                text,
                meta: None,
            }),
            Err(e) => ResourceContents::Blob(BlobResourceContents {
                uri,
                mime_type: Some(mime.into()),
                blob: base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
                meta: None,
            }),
        }])
    })
    .await
}

/// Paths that continue `typed` (an absolute path): the entries of its directory whose names
/// start with its last part, directories ending in `/`.
fn complete(app: &App, typed: &str) -> Vec<String> {
    let roots = app.roots.last();
    let (dir, prefix) = match typed.rfind('/') {
        Some(i) => (&typed[..=i], &typed[i + 1..]),
        None => return roots.roots.iter().map(|r| format!("{}/", r.path.display())).collect(),
    };
    let dir_path = match dir.trim_end_matches('/') {
        "" => "/",
        trimmed => trimmed,
    };
    let Ok(at) = locate(&roots.roots, dir_path) else {
        return roots.roots.iter().map(|r| format!("{}/", r.path.display())).filter(|p| p.starts_with(typed)).collect();
    };
    let Ok(fd) = app.open(&at, OFlags::RDONLY | OFlags::DIRECTORY) else { return Vec::new() };
    let Ok((mut entries, _)) = list(fd, app.limits.max_walk_entries) else { return Vec::new() };
    entries.sort_by(|x, y| x.name.cmp(&y.name));
    entries
        .iter()
        .filter(|e| crate::fsops::addressable(&e.name))
        .map(|e| (e.display(), e.kind))
        .filter(|(name, _)| name.starts_with(prefix))
        .take(MAX_COMPLETIONS)
        .map(|(name, kind)| format!("{dir}{name}{}", if kind == Kind::Dir { "/" } else { "" }))
        .collect()
}

fn subscribe(app: &App, uri: &str, on: bool) {
    if !on {
        return app.watcher.unwatch(uri);
    }
    let roots = app.roots.last();
    match locate_uri(&roots.roots, uri) {
        Ok(at) => {
            if let Err(e) = app.watcher.watch(at.root.fd(), &at.rel, uri, app.policy) {
                eprintln!("files-mcp: {uri} is not watched: {e}");
            }
        }
        Err(e) => eprintln!("files-mcp: {uri} is not watched: {e}"),
    }
}
