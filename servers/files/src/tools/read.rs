//! `read_text_file` (and its deprecated name `read_file`), `read_media_file`,
//! `read_multiple_files`.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::sync::Arc;

use base64::Engine as _;
use mcp::server::{IntoToolOutput, RequestContext, State, Structured, ToolError};
use mcp::types::content::{BlobResourceContents, ContentBlock, ImageContent, ResourceContents};
use mcp::types::tools::CallToolResult;
use mcp::types::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::text_out;
use crate::{blocking, App};

/// Arguments of `read_text_file`.
#[derive(Deserialize, JsonSchema)]
pub struct ReadTextArgs {
    /// The file: an absolute path inside an allowed directory, or relative to the first.
    pub path: String,
    /// If provided, returns only the last N lines of the file
    #[serde(default)]
    pub tail: Option<u64>,
    /// If provided, returns only the first N lines of the file
    #[serde(default)]
    pub head: Option<u64>,
}

/// A text result, the reference server's shape.
#[derive(Serialize, JsonSchema)]
pub struct TextOut {
    /// The text.
    pub content: String,
}

/// `read_text_file`.
pub async fn read_text_file(
    State(app): State<Arc<App>>,
    args: ReadTextArgs,
    cx: RequestContext,
) -> Result<Structured<TextOut>, ToolError> {
    if args.head.is_some() && args.tail.is_some() {
        return Err(ToolError::new("give head or tail, not both: head reads the first lines, tail the last"));
    }
    let allowed = app.allowed(&cx).await?;
    let at = app.locate(&allowed, &args.path)?;
    let a = app.clone();
    let text = blocking(move || {
        let cap = a.limits.max_result_bytes as u64;
        match (args.head, args.tail) {
            (Some(n), _) => {
                let (file, _) = a.open_file(&at, u64::MAX)?;
                head(file, n, cap).map_err(|e| a.fail(&e, &at))
            }
            (_, Some(n)) => {
                let (file, _) = a.open_file(&at, u64::MAX)?;
                tail(file, n, cap).map_err(|e| a.fail(&e, &at))
            }
            _ => a.read_text(&at),
        }
    })
    .await?;
    let text = app.cap_result(text, "read part of the file with head or tail")?;
    Ok(text_out(text))
}

/// The first `n` lines, joined with `\n` (at most `cap` bytes are read).
fn head(file: std::fs::File, n: u64, cap: u64) -> std::io::Result<String> {
    let mut reader = BufReader::new(file.take(cap));
    let mut lines = Vec::new();
    let mut line = Vec::new();
    while (lines.len() as u64) < n {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        lines.push(String::from_utf8_lossy(&line).into_owned());
    }
    Ok(lines.join("\n"))
}

/// The last `n` lines (a final newline does not count as a line), read backwards in chunks, at
/// most `cap` bytes.
fn tail(mut file: std::fs::File, n: u64, cap: u64) -> std::io::Result<String> {
    const CHUNK: u64 = 8192;
    let size = file.seek(SeekFrom::End(0))?;
    let mut end = size;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let newlines = buf.iter().filter(|&&b| b == b'\n').count() as u64;
        let trailing = u64::from(buf.last() == Some(&b'\n'));
        if end == 0 || newlines >= n + trailing || size - end >= cap {
            break;
        }
        let start = end.saturating_sub(CHUNK);
        let mut chunk = vec![0; (end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&buf);
        buf = chunk;
        end = start;
    }
    let text = String::from_utf8_lossy(&buf).replace("\r\n", "\n");
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let lines: Vec<&str> = text.split('\n').collect();
    let from = lines.len().saturating_sub(n as usize);
    Ok(lines[from..].join("\n"))
}

/// Arguments of `read_media_file`.
#[derive(Deserialize, JsonSchema)]
pub struct PathArgs {
    /// The path: absolute inside an allowed directory, or relative to the first.
    pub path: String,
}

/// A media result: image or audio content, or an embedded resource for other types.
pub struct Media(CallToolResult);

impl IntoToolOutput for Media {
    fn into_result(self) -> CallToolResult {
        self.0
    }
    fn output_schema() -> Option<JsonObject> {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"content": {"type": "array", "items": {"type": "object", "properties": {
                "type": {"type": "string", "enum": ["image", "audio", "resource"]},
                "data": {"type": "string"}, "mimeType": {"type": "string"}, "resource": {"type": "object"}
            }, "required": ["type"]}}},
            "required": ["content"]
        });
        schema.as_object().cloned()
    }
}

/// The MIME type of a file name, by extension.
pub fn mime_of(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "bmp" => "image/bmp",
        "svg" => "image/svg+xml",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "ogg" => "audio/ogg",
        "flac" => "audio/flac",
        "txt" | "md" | "rs" | "py" | "js" | "ts" | "toml" | "yaml" | "yml" | "c" | "h" | "sh" => "text/plain",
        "json" => "application/json",
        "html" | "htm" => "text/html",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

/// `read_media_file`.
pub async fn read_media_file(
    State(app): State<Arc<App>>,
    args: PathArgs,
    cx: RequestContext,
) -> Result<Media, ToolError> {
    let allowed = app.allowed(&cx).await?;
    let at = app.locate(&allowed, &args.path)?;
    let a = app.clone();
    let shown = at.shown();
    let bytes = blocking(move || a.read_all(&at)).await?;
    let mime = mime_of(&shown);
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    let media = |data| ImageContent { data, mime_type: mime.into(), annotations: None, meta: None };
    let block = if mime.starts_with("image/") {
        ContentBlock::Image(media(data))
    } else if mime.starts_with("audio/") {
        ContentBlock::Audio(media(data))
    } else {
        ContentBlock::Resource(mcp::types::content::EmbeddedResource {
            resource: ResourceContents::Blob(BlobResourceContents {
                uri: crate::roots::file_uri(&shown),
                mime_type: Some(mime.into()),
                blob: data,
                meta: None,
            }),
            annotations: None,
            meta: None,
        })
    };
    let structured = serde_json::json!({"content": [block]});
    Ok(Media(CallToolResult { content: vec![block], structured_content: Some(structured), ..Default::default() }))
}

/// Arguments of `read_multiple_files`.
#[derive(Deserialize, JsonSchema)]
pub struct ReadManyArgs {
    /// Array of file paths to read. Each path must be a string pointing to a valid file within allowed directories.
    #[schemars(length(min = 1))]
    pub paths: Vec<String>,
}

/// `read_multiple_files`: each file's text after its path, `---` between them; a file that
/// cannot be read says why in its place, and files past the result cap are named, not read.
pub async fn read_multiple_files(
    State(app): State<Arc<App>>,
    args: ReadManyArgs,
    cx: RequestContext,
) -> Result<Structured<TextOut>, ToolError> {
    if args.paths.is_empty() {
        return Err(ToolError::new("paths is empty: give at least one file"));
    }
    let allowed = app.allowed(&cx).await?;
    let a = app.clone();
    let text = blocking(move || {
        let mut parts = Vec::with_capacity(args.paths.len());
        let mut used = 0usize;
        for path in &args.paths {
            let part = match a.locate(&allowed, path).and_then(|at| a.read_text(&at)) {
                Ok(content) if used + content.len() > a.limits.max_result_bytes => format!(
                    "{path}: Error - not read: the result would pass {} bytes; read it in another call",
                    a.limits.max_result_bytes
                ),
                Ok(content) => format!("{path}:\n{content}\n"),
                Err(e) => format!("{path}: Error - {}", e),
            };
            used += part.len();
            parts.push(part);
        }
        Ok(parts.join("\n---\n"))
    })
    .await?;
    Ok(text_out(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> std::fs::File {
        let mut f = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        f
    }

    #[test]
    fn head_and_tail_count_lines() {
        assert_eq!(head(file("a\nb\nc\n"), 2, 1 << 20).unwrap(), "a\nb");
        assert_eq!(head(file("a\nb"), 5, 1 << 20).unwrap(), "a\nb");
        assert_eq!(tail(file("a\nb\nc\n"), 2, 1 << 20).unwrap(), "b\nc");
        assert_eq!(tail(file("a\r\nb\r\nc"), 1, 1 << 20).unwrap(), "c");
        let long: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        assert_eq!(tail(file(&long), 3, 1 << 20).unwrap(), "line 4997\nline 4998\nline 4999");
        assert_eq!(tail(file(""), 3, 1 << 20).unwrap(), "");
    }
}
