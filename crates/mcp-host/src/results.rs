//! Tool results as the model reads them: text blocks, structured content as JSON, resources by
//! their text or URI, images and audio named but not inlined, content meant for the person only
//! (`audience: ["user"]`) kept from the model; and, past a limit, cut with a note and saved whole
//! to a file the person can open.

use std::path::{Path, PathBuf};

use mcp::types::content::ContentBlock;
use mcp::types::tools::CallToolResult;

/// A result, ready to fence.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// What the model reads.
    pub text: String,
    /// The tool failed.
    pub is_error: bool,
    /// Where the whole result was saved when it was cut.
    pub saved: Option<PathBuf>,
}

fn for_the_person_only(annotations: Option<&mcp::types::content::Annotations>) -> bool {
    annotations
        .and_then(|a| a.audience.as_ref())
        .is_some_and(|audience| !audience.is_empty() && audience.iter().all(|r| *r == mcp::types::content::Role::User))
}

/// The model's text of a result.
pub fn text_of(result: &CallToolResult) -> String {
    let mut parts = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) if !for_the_person_only(t.annotations.as_ref()) => parts.push(t.text.clone()),
            ContentBlock::Text(_) => {}
            ContentBlock::Image(i) => parts.push(format!("[an image, {}, not shown]", i.mime_type)),
            ContentBlock::Audio(a) => parts.push(format!("[audio, {}, not played]", a.mime_type)),
            ContentBlock::ResourceLink(link) => parts.push(format!("[resource {} ({})]", link.uri, link.name)),
            ContentBlock::Resource(embedded) => {
                let value = serde_json::to_value(&embedded.resource).unwrap_or_default();
                match value["text"].as_str() {
                    Some(text) => parts.push(format!("[resource {}]\n{text}", value["uri"].as_str().unwrap_or("?"))),
                    None => parts.push(format!("[binary resource {}]", value["uri"].as_str().unwrap_or("?"))),
                }
            }
        }
    }
    if parts.is_empty() {
        if let Some(structured) = &result.structured_content {
            parts.push(structured.to_string());
        }
    }
    parts.join("\n")
}

/// Renders `result`, cut at `limit` characters (the whole saved under `spill_dir`).
pub fn render(result: &CallToolResult, limit: usize, spill_dir: &Path, label: &str) -> Rendered {
    let text = text_of(result);
    let is_error = result.is_error();
    match text.char_indices().nth(limit) {
        None => Rendered { text, is_error, saved: None },
        Some((cut, _)) => {
            let saved = save(spill_dir, label, &text);
            let whole = text.chars().count();
            let place = saved
                .as_ref()
                .map(|p| format!(" The person can read the whole result in {}.", p.display()))
                .unwrap_or_default();
            let note = format!(
                "\n[The result was cut here: it has {whole} characters, over the limit of {limit}.{place} Ask for less \
                 (narrower, fewer items, a page) if you need the rest.]"
            );
            Rendered { text: format!("{}{note}", &text[..cut]), is_error, saved }
        }
    }
}

fn save(dir: &Path, label: &str, text: &str) -> Option<PathBuf> {
    std::fs::create_dir_all(dir).ok()?;
    let safe: String =
        label.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    let mut bytes = [0u8; 4];
    getrandom::fill(&mut bytes).ok()?;
    let name = format!("{safe}-{}.txt", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>());
    let path = dir.join(name);
    std::fs::write(&path, text).ok()?;
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp::types::content::{Annotations, Role, TextContent};

    #[test]
    fn text_for_the_model_and_a_cut_with_the_rest_saved() {
        let mut private = TextContent::new("only for you");
        private.annotations = Some(Annotations { audience: Some(vec![Role::User]), ..Default::default() });
        let result = CallToolResult {
            content: vec![ContentBlock::Text(TextContent::new("hello")), ContentBlock::Text(private)],
            ..Default::default()
        };
        assert_eq!(text_of(&result), "hello");
        let long = CallToolResult {
            content: vec![ContentBlock::Text(TextContent::new("x".repeat(1000)))],
            ..Default::default()
        };
        let dir = std::env::temp_dir().join(format!("mcp-host-results-{}", std::process::id()));
        let rendered = render(&long, 100, &dir, "srv/tool");
        assert!(rendered.text.starts_with(&"x".repeat(100)) && rendered.text.contains("1000 characters"));
        let saved = rendered.saved.unwrap();
        assert_eq!(std::fs::read_to_string(&saved).unwrap().len(), 1000);
        let _ = std::fs::remove_dir_all(dir);
    }
}
