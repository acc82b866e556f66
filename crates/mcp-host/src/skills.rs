//! Skills (SEP-2640) offered to the model. A server that declares the skills extension has its
//! skills listed when the session starts (no file is read); each is offered to the model only
//! once the person approved it, by the digest of its whole entry (every file's digest and the
//! frontmatter), remembered per project: a skill whose digest changed is asked about again.
//! The model sees their names and descriptions and loads one with `load_skill`; only then are
//! its files read, each verified against the entry.

use mcp::client::skills::{skill_digest, LoadedSkill};
use mcp::types::skills::{SkillEntry, EXTENSION_ID};
use serde_json::{json, Value};

use crate::provider::ToolSpec;
use crate::servers::Server;

/// The tool the model loads a skill with.
pub const LOAD_SKILL: &str = "load_skill";

/// The most bytes of a skill's other files given to the model whole (the rest are named).
const INLINE_LIMIT: usize = 64 * 1024;

/// A skill the person approved for this session.
#[derive(Debug, Clone)]
pub struct OfferedSkill {
    /// What the model calls it (the skill's name, or `server/name` when two servers share it).
    pub key: String,
    /// The server's index in the session.
    pub server: usize,
    /// Its entry, as listed.
    pub entry: SkillEntry,
    /// The digest the person approved.
    pub digest: String,
}

/// Whether `server` declares the skills extension.
pub fn serves_skills(server: &Server) -> bool {
    let Some(client) = &server.client else { return false };
    client.description().capabilities.extensions.as_ref().is_some_and(|e| e.contains_key(EXTENSION_ID))
}

/// The entries a server lists, each with its digest (an error in words).
pub async fn listed(server: &Server) -> Result<Vec<(SkillEntry, String)>, String> {
    let Some(client) = &server.client else { return Ok(Vec::new()) };
    let entries = client.list_skills().await.map_err(|e| format!("skills/list failed: {e}"))?;
    Ok(entries.into_iter().map(|e| (skill_digest(&e), e)).map(|(d, e)| (e, d)).collect())
}

/// The model's `load_skill` tool.
pub fn spec(skills: &[OfferedSkill]) -> ToolSpec {
    let keys: Vec<&str> = skills.iter().map(|s| s.key.as_str()).collect();
    ToolSpec {
        name: LOAD_SKILL.into(),
        description: "Loads a skill (instructions and files an MCP server provides for a kind of task, approved by \
                      the person). Call it when the task matches the skill's description, then follow what it says."
            .into(),
        input_schema: json!({"type": "object", "properties": {"name": {"type": "string", "enum": keys}}, "required": ["name"]}),
    }
}

/// What the system prompt says of the skills.
pub fn prompt(skills: &[OfferedSkill]) -> String {
    let mut text = String::from("\n\nSkills you may load with load_skill when a task matches one:");
    for skill in skills {
        text.push_str(&format!("\n- {}: {}", skill.key, skill.entry.description()));
    }
    text
}

/// The model's view of a loaded skill: its SKILL.md, then its other files (text ones whole up
/// to a limit, the others named).
pub fn render(loaded: &LoadedSkill) -> String {
    let mut text = loaded.manifest.clone();
    let mut inline = 0;
    for (uri, bytes) in &loaded.files {
        match std::str::from_utf8(bytes) {
            Ok(body) if inline + body.len() <= INLINE_LIMIT => {
                inline += body.len();
                text.push_str(&format!("\n\n--- {uri} ---\n{body}"));
            }
            _ => text.push_str(&format!("\n\n--- {uri} ({} bytes, not shown) ---", bytes.len())),
        }
    }
    text
}

/// The skill the model names in `arguments`, if offered.
pub fn find<'a>(skills: &'a [OfferedSkill], arguments: &Value) -> Result<&'a OfferedSkill, String> {
    let name = arguments["name"].as_str().unwrap_or_default();
    skills.iter().find(|s| s.key == name).ok_or_else(|| {
        let keys: Vec<&str> = skills.iter().map(|s| s.key.as_str()).collect();
        format!("There is no skill named {name:?}. The skills are: {}.", keys.join(", "))
    })
}
