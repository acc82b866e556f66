//! Serving Agent Skills (SEP-2640, `io.modelcontextprotocol/skills`). A [`Skill`] is a named
//! directory of files whose `SKILL.md` begins with YAML frontmatter; [`Router::skill`] serves
//! it: every file as a `skill://<name>/<path>` resource, the entry (frontmatter, and each file's
//! `sha256:` digest and size) on `skills/list` and `skills/get`, and the directories on
//! `resources/directory/read`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use mcp_types::content::{BlobResourceContents, ResourceContents, TextResourceContents};
use mcp_types::resources::Resource;
use mcp_types::skills::{self, frontmatter, SkillEntry, SkillFile, SkillResources, DIRECTORY_MIME, MANIFEST};
use mcp_types::{ErrorObject, JsonObject};
use serde_json::{json, Value};
use sha2::Digest as _;

use super::{RequestContext, ResourceRequest, Router, ToolError};

/// The most files a skill may have, and their most total bytes (the extension's limits).
const MAX_FILES: usize = 512;
const MAX_BYTES: usize = 16 * 1024 * 1024;

/// A skill to serve: its frontmatter and its files (`SKILL.md` among them).
#[derive(Debug, Clone)]
pub struct Skill {
    name: String,
    frontmatter: JsonObject,
    files: BTreeMap<String, Arc<Vec<u8>>>,
}

impl Skill {
    /// A skill written from its parts: `SKILL.md` gets a frontmatter with `name` and
    /// `description`, then `instructions`.
    pub fn new(name: &str, description: &str, instructions: &str) -> Result<Skill, String> {
        let manifest = format!(
            "---\nname: {name}\ndescription: {}\n---\n\n{instructions}\n",
            serde_json::to_string(description).unwrap_or_default()
        );
        Skill::from_manifest(&manifest)
    }

    /// A skill from the text of its `SKILL.md`. The frontmatter may hold `key: value` lines
    /// (plain, `"double"` or `'single'` quoted scalars, booleans, numbers, null) and maps of
    /// such lines one level deep (`metadata:`); anything else is refused with the line.
    pub fn from_manifest(manifest: &str) -> Result<Skill, String> {
        let frontmatter = frontmatter(manifest)?;
        let name = frontmatter.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        if !skills::valid_name(&name) {
            return Err(format!(
                "skill name {name:?}: use 1-64 lowercase letters, digits and single hyphens (not first or last)"
            ));
        }
        let description = frontmatter.get("description").and_then(Value::as_str).unwrap_or_default();
        if description.trim().is_empty() || description.chars().count() > 1024 {
            return Err(format!("skill {name}: the description must say, in 1 to 1024 characters, what it is for"));
        }
        let mut files = BTreeMap::new();
        files.insert(MANIFEST.to_owned(), Arc::new(manifest.as_bytes().to_vec()));
        Ok(Skill { name, frontmatter, files })
    }

    /// A skill from a directory: its `SKILL.md` and every file under it (hidden ones left out).
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Skill, String> {
        let dir = dir.as_ref();
        let manifest =
            std::fs::read_to_string(dir.join(MANIFEST)).map_err(|e| format!("{}/{MANIFEST}: {e}", dir.display()))?;
        let mut skill = Skill::from_manifest(&manifest)?;
        let mut stack = vec![dir.to_path_buf()];
        while let Some(current) = stack.pop() {
            let entries = std::fs::read_dir(&current).map_err(|e| format!("{}: {e}", current.display()))?;
            for entry in entries {
                let entry = entry.map_err(|e| format!("{}: {e}", current.display()))?;
                let path = entry.path();
                if entry.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                let kind = entry.file_type().map_err(|e| format!("{}: {e}", path.display()))?;
                if kind.is_dir() {
                    stack.push(path);
                } else if kind.is_file() {
                    let relative = path.strip_prefix(dir).expect("under the directory").to_string_lossy().into_owned();
                    if relative != MANIFEST {
                        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                        skill = skill.file(&relative, bytes)?;
                    }
                }
            }
        }
        Ok(skill)
    }

    /// Adds a file at `path` (relative, `/`-separated, inside the skill).
    pub fn file(mut self, path: &str, bytes: impl Into<Vec<u8>>) -> Result<Skill, String> {
        let bad = path.is_empty()
            || path.starts_with('/')
            || path.split('/').any(|part| part.is_empty() || part == "." || part == "..")
            || path.chars().any(|c| c.is_control() || c == '\\' || c == '?' || c == '#');
        if bad || path == MANIFEST {
            return Err(format!("skill {}: {path:?} is not a file path inside the skill", self.name));
        }
        self.files.insert(path.to_owned(), Arc::new(bytes.into()));
        if self.files.len() > MAX_FILES {
            return Err(format!("skill {}: more than {MAX_FILES} files", self.name));
        }
        if self.files.values().map(|f| f.len()).sum::<usize>() > MAX_BYTES {
            return Err(format!("skill {}: its files are over 16 MiB together", self.name));
        }
        Ok(self)
    }

    /// The skill's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn uri(&self, path: &str) -> String {
        format!("skill://{}/{path}", self.name)
    }

    /// The entry `skills/list` and `skills/get` give.
    fn entry(&self) -> SkillEntry {
        let files = self
            .files
            .iter()
            .map(|(path, bytes)| SkillFile {
                uri: self.uri(path),
                digest: format!("sha256:{}", hex(&sha2::Sha256::digest(bytes.as_slice()))),
                size: bytes.len() as u64,
            })
            .collect();
        SkillEntry {
            uri: self.uri(MANIFEST),
            frontmatter: self.frontmatter.clone(),
            resources: SkillResources::Files(files),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The MIME type of a skill file, from its name.
fn mime_type(path: &str, bytes: &[u8]) -> String {
    let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    let known = match extension.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" | "mjs" => "text/javascript",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "pdf" => "application/pdf",
        _ if std::str::from_utf8(bytes).is_ok() => "text/plain",
        _ => "application/octet-stream",
    };
    known.to_owned()
}

/// The skills a router serves (registered once, before serving).
#[derive(Default)]
pub(crate) struct Skills {
    entries: Vec<Skill>,
}

impl Router {
    /// Serves a skill (SEP-2640): its files become `skill://<name>/<path>` resources (the
    /// `SKILL.md` named and described by its frontmatter, `text/markdown`), and the server
    /// declares the `io.modelcontextprotocol/skills` extension with `skills/list`, `skills/get`
    /// and `resources/directory/read`.
    pub fn skill(self, skill: Skill) -> Self {
        {
            let mut skills = self.inner.skills.write().unwrap();
            assert!(skills.entries.iter().all(|s| s.name != skill.name), "skill {:?} is registered twice", skill.name);
            skills.entries.push(skill.clone());
        }
        for (path, bytes) in &skill.files {
            let manifest = path == MANIFEST;
            let mime = mime_type(path, bytes);
            let def = Resource {
                uri: skill.uri(path),
                name: if manifest { skill.name.clone() } else { path.clone() },
                description: manifest
                    .then(|| skill.frontmatter.get("description").and_then(Value::as_str).map(str::to_owned))
                    .flatten(),
                mime_type: Some(mime.clone()),
                size: Some(bytes.len() as u64),
                ..Default::default()
            };
            let bytes = bytes.clone();
            let handler = move |req: ResourceRequest, _cx: RequestContext| {
                let contents = contents(&req.uri, &mime, &bytes);
                async move { Ok::<_, ToolError>(contents) }
            };
            self.lists().add_resource(def, handler);
        }
        self
    }

    /// Whether the router serves skills (the extension is then declared).
    pub(crate) fn serves_skills(&self) -> bool {
        !self.inner.skills.read().unwrap().entries.is_empty()
    }

    /// `skills/list`: the entries, a page at a time.
    pub(crate) fn list_skills(&self, cursor: Option<&str>) -> Result<Value, ErrorObject> {
        let entries: Vec<SkillEntry> = self.inner.skills.read().unwrap().entries.iter().map(Skill::entry).collect();
        let (page, next_cursor) = self.page_of(entries.iter(), cursor)?;
        let mut result = json!({"skills": page});
        if let Some(next) = next_cursor {
            result["nextCursor"] = next.into();
        }
        Ok(result)
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is `uri`.
    pub(crate) fn get_skill(&self, uri: &str) -> Result<Value, ErrorObject> {
        let skills = self.inner.skills.read().unwrap();
        let skill = skills.entries.iter().find(|s| s.uri(MANIFEST) == uri).ok_or_else(|| {
            ErrorObject::invalid_params(format!("no skill is served at {uri:?}: skills/list names them"))
        })?;
        Ok(json!({"skill": skill.entry()}))
    }

    /// `resources/directory/read`: the direct children of a skill directory (`skill://<name>`
    /// or a directory under it); a subdirectory is listed as `inode/directory`.
    pub(crate) fn read_directory(&self, uri: &str, cursor: Option<&str>) -> Result<Value, ErrorObject> {
        let not_a_directory =
            || ErrorObject::invalid_params(format!("{uri:?} is not a directory of a skill served here"));
        let rest = uri.strip_prefix("skill://").ok_or_else(not_a_directory)?.trim_end_matches('/');
        let (name, sub) = rest.split_once('/').unwrap_or((rest, ""));
        let skills = self.inner.skills.read().unwrap();
        let skill = skills.entries.iter().find(|s| s.name == name).ok_or_else(not_a_directory)?;
        let prefix = if sub.is_empty() { String::new() } else { format!("{sub}/") };
        let mut children: BTreeMap<String, Resource> = BTreeMap::new();
        for (path, bytes) in &skill.files {
            let Some(below) = path.strip_prefix(&prefix) else { continue };
            match below.split_once('/') {
                None => {
                    children.insert(
                        below.to_owned(),
                        Resource {
                            uri: skill.uri(path),
                            name: below.to_owned(),
                            mime_type: Some(mime_type(path, bytes)),
                            size: Some(bytes.len() as u64),
                            ..Default::default()
                        },
                    );
                }
                Some((dir, _)) => {
                    children.entry(format!("{dir}/")).or_insert_with(|| Resource {
                        uri: skill.uri(&format!("{prefix}{dir}")),
                        name: dir.to_owned(),
                        mime_type: Some(DIRECTORY_MIME.to_owned()),
                        ..Default::default()
                    });
                }
            }
        }
        if children.is_empty() {
            return Err(not_a_directory()); // a file, or nothing
        }
        let (page, next_cursor) = self.page_of(children.values(), cursor)?;
        let mut result = json!({"resources": page});
        if let Some(next) = next_cursor {
            result["nextCursor"] = next.into();
        }
        Ok(result)
    }
}

/// A file's contents: text when it is UTF-8, else base64.
fn contents(uri: &str, mime: &str, bytes: &[u8]) -> ResourceContents {
    match std::str::from_utf8(bytes) {
        Ok(text) => ResourceContents::Text(TextResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(mime.to_owned()),
            text: text.to_owned(),
            meta: None,
        }),
        Err(_) => {
            use base64::Engine as _;
            ResourceContents::Blob(BlobResourceContents {
                uri: uri.to_owned(),
                mime_type: Some(mime.to_owned()),
                blob: base64::engine::general_purpose::STANDARD.encode(bytes),
                meta: None,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_reads_scalars_and_one_nested_map() {
        let fm = frontmatter(
            "---\nname: pdf-processing\ndescription: \"Extract: fill\"\nlicense: 'it''s MIT'\nversion: 2\nbeta: true\nmetadata:\n  author: ada\n---\nbody",
        )
        .unwrap();
        assert_eq!(
            Value::Object(fm),
            json!({"name": "pdf-processing", "description": "Extract: fill", "license": "it's MIT", "version": 2, "beta": true, "metadata": {"author": "ada"}})
        );
        assert!(frontmatter("name: x\n").is_err());
        assert!(frontmatter("---\nname: x\n").is_err());
        assert!(frontmatter("---\ntags:\n  - a\n---\n").is_err());
    }

    #[test]
    fn a_written_skill_reads_back_the_same() {
        let skill = Skill::new("notes", "Takes notes: \"quoted\" and all", "Do it.").unwrap();
        let manifest = String::from_utf8(skill.files[MANIFEST].to_vec()).unwrap();
        assert_eq!(frontmatter(&manifest).unwrap(), skill.frontmatter);
        assert!(Skill::new("Bad_Name", "x", "").is_err());
        assert!(Skill::new("ok", "", "").is_err());
    }

    #[test]
    fn file_paths_stay_inside_the_skill() {
        let skill = Skill::new("notes", "d", "").unwrap();
        for bad in ["../x", "/etc/passwd", "a//b", "a/./b", "SKILL.md", ""] {
            assert!(skill.clone().file(bad, "x").is_err(), "{bad}");
        }
        assert!(skill.file("references/FORMS.md", "x").is_ok());
    }
}
