//! Skills (SEP-2640, the extension `io.modelcontextprotocol/skills`): a server serves Agent
//! Skills, each a directory whose `SKILL.md` (YAML frontmatter with at least `name` and
//! `description`, then instructions) is read through `resources/read` like its other files.
//! `skills/list` pages through the entries, `skills/get` returns one, and each entry carries
//! the SHA-256 digest and size of every file so that a host can check what it reads.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

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

/// The frontmatter of a `SKILL.md`, as a JSON object: scalars (quoted or plain strings,
/// booleans, null, numbers) and one level of nested maps; any other YAML is refused, naming the
/// line, rather than read wrongly. Servers build their entries with it and hosts compare what
/// they read against the entry with it.
pub fn frontmatter(manifest: &str) -> Result<JsonObject, String> {
    let text = manifest.strip_prefix('\u{feff}').unwrap_or(manifest);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(format!("{MANIFEST} must begin with a --- line and YAML frontmatter"));
    }
    let mut object = JsonObject::new();
    let mut open: Option<(String, JsonObject)> = None;
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            if let Some((key, map)) = open.take() {
                object.insert(key, Value::Object(map));
            }
            return Ok(object);
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let nested = line.starts_with(' ') || line.starts_with('\t');
        let (key, value) = line
            .trim()
            .split_once(':')
            .ok_or_else(|| format!("{MANIFEST} frontmatter: {line:?} is not `key: value`"))?;
        let (key, value) = (key.trim().to_owned(), value.trim());
        match (nested, &mut open) {
            (true, Some((_, map))) => {
                map.insert(key, scalar(value, line)?);
            }
            (true, None) => return Err(format!("{MANIFEST} frontmatter: {line:?} is indented under nothing")),
            (false, _) => {
                if let Some((k, map)) = open.take() {
                    object.insert(k, Value::Object(map));
                }
                if value.is_empty() {
                    open = Some((key, JsonObject::new()));
                } else {
                    object.insert(key, scalar(value, line)?);
                }
            }
        }
    }
    Err(format!("{MANIFEST}: the frontmatter has no closing --- line"))
}

/// A YAML scalar as JSON: quoted strings, booleans, null, numbers, else plain text.
fn scalar(value: &str, line: &str) -> Result<Value, String> {
    let unsupported = || {
        format!("{MANIFEST} frontmatter: {line:?} uses YAML this reader does not take (write it as one quoted string)")
    };
    if value.starts_with('"') {
        return serde_json::from_str::<String>(value).map(Value::String).map_err(|_| unsupported());
    }
    if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        return Ok(Value::String(inner.replace("''", "'")));
    }
    if value.starts_with(['[', '{', '-', '|', '>', '&', '*', '!', '%', '@', '`']) || value.contains(" #") {
        return Err(unsupported());
    }
    Ok(match value {
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        "null" | "Null" | "NULL" | "~" => Value::Null,
        _ => match value.parse::<i64>() {
            Ok(n) => json!(n),
            Err(_) => match value.parse::<f64>() {
                Ok(f) if f.is_finite() && value.chars().all(|c| c.is_ascii_digit() || ".eE+-".contains(c)) => json!(f),
                _ => Value::String(value.to_owned()),
            },
        },
    })
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
