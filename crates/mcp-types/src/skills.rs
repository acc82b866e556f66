//! Skills (SEP-2640, the extension `io.modelcontextprotocol/skills`): a server serves Agent
//! Skills, each a directory whose `SKILL.md` (YAML frontmatter with at least `name` and
//! `description`, then instructions) is read through `resources/read` like its other files.
//! `skills/list` pages through the entries, `skills/get` returns one, and each entry carries
//! the SHA-256 digest and size of every file so that a host can check what it reads.

use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// The extension's identifier.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";
/// A skill's manifest file, at the root of its directory.
pub const MANIFEST: &str = "SKILL.md";
/// The MIME type of a directory in `resources/directory/read`.
pub const DIRECTORY_MIME: &str = "inode/directory";

/// One file of a skill: where to read it and what it must hash to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFile {
    /// Its resource URI (the skill's `SKILL.md`, or a file in the skill's directory).
    pub uri: String,
    /// `sha256:` and 64 lowercase hex characters: the hash of its raw bytes.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

/// The files of a skill: every one with its digest, or `"dynamic"` (not published).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SkillResources {
    /// Every file, each once, the `SKILL.md` included.
    Files(Vec<SkillFile>),
    /// The string `"dynamic"`: the files are not listed.
    Dynamic(String),
}

/// One skill as `skills/list` and `skills/get` give it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The URI of its `SKILL.md` (`skill://<path>/<name>/SKILL.md`).
    pub uri: String,
    /// Its `SKILL.md` frontmatter as a JSON object (`name` and `description` at least).
    pub frontmatter: JsonObject,
    /// Its files.
    pub resources: SkillResources,
}

impl SkillEntry {
    /// The skill's name (its frontmatter's).
    pub fn name(&self) -> &str {
        self.frontmatter.get("name").and_then(|v| v.as_str()).unwrap_or_default()
    }

    /// The skill's description (its frontmatter's).
    pub fn description(&self) -> &str {
        self.frontmatter.get("description").and_then(|v| v.as_str()).unwrap_or_default()
    }

    /// The manifest entry of `uri`, if the skill lists its files.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.resources {
            SkillResources::Files(files) => files.iter().find(|f| f.uri == uri),
            SkillResources::Dynamic(_) => None,
        }
    }
}

/// Whether `name` follows the Agent Skills naming rules: 1 to 64 characters, lowercase letters,
/// digits and hyphens, no hyphen first, last or twice in a row.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_agent_skills_rules() {
        for good in ["pdf-processing", "a", "x1-2"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "PDF", "a_b", &"a".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn resources_are_files_or_dynamic() {
        let files: SkillResources =
            serde_json::from_str(r#"[{"uri":"skill://a/SKILL.md","digest":"sha256:00","size":1}]"#).unwrap();
        assert!(matches!(files, SkillResources::Files(ref f) if f.len() == 1));
        let dynamic: SkillResources = serde_json::from_str(r#""dynamic""#).unwrap();
        assert_eq!(dynamic, SkillResources::Dynamic("dynamic".into()));
    }
}
