//! `mcp skills`: a server's skills (SEP-2640) listed without reading a file, or one loaded
//! whole, every file verified against the entry before it is shown or written.

use std::path::{Component, Path, PathBuf};

use mcp::client::skills::{skill_digest, LoadedSkill};
use mcp::client::Client;
use mcp::types::skills::{SkillEntry, SkillResources};
use serde_json::{json, Value};

use crate::failure::{protocol, Failure};

/// Lists the skills, or loads the one named `name` (and writes it under `out`).
pub async fn run(client: &Client, name: Option<&str>, out: Option<&Path>) -> Result<Value, Failure> {
    let entries = client.list_skills().await.map_err(|e| match e.rpc() {
        Some(error) if error.code == mcp::types::jsonrpc::ErrorCode::METHOD_NOT_FOUND => Failure::Protocol(format!(
            "the server serves no skills: it does not know skills/list (the {} extension)",
            mcp::types::skills::EXTENSION_ID
        )),
        _ => protocol(e),
    })?;
    let Some(name) = name else {
        return Ok(json!({"skills": entries.iter().map(summary).collect::<Vec<_>>()}));
    };
    let entry = entries.iter().find(|e| e.name() == name || e.uri == name).ok_or_else(|| {
        let known: Vec<&str> = entries.iter().map(SkillEntry::name).collect();
        Failure::Usage(format!("the server has no skill {name:?} (it has: {})", known.join(", ")))
    })?;
    let loaded = client.load_skill(entry).await.map_err(protocol)?;
    let written = match out {
        Some(dir) => Some(write(&loaded, dir)?),
        None => None,
    };
    Ok(json!({
        "skill": entry.name(),
        "uri": entry.uri,
        "digest": skill_digest(entry),
        "manifest": loaded.manifest,
        "files": loaded.files.iter().map(|(uri, bytes)| json!({"uri": uri, "size": bytes.len()})).collect::<Vec<_>>(),
        "written": written,
    }))
}

fn summary(entry: &SkillEntry) -> Value {
    let files = match &entry.resources {
        SkillResources::Files(files) => json!(files.len()),
        SkillResources::Dynamic(_) => json!("dynamic"),
    };
    json!({
        "name": entry.name(),
        "description": entry.description(),
        "uri": entry.uri,
        "files": files,
        "digest": skill_digest(entry),
    })
}

/// The path of `uri` inside the skill's directory: what follows `skill://.../NAME/`, made of
/// plain components only (no `..`, no root), or `None`.
fn relative_path(entry: &SkillEntry, uri: &str) -> Option<PathBuf> {
    let base = entry.uri.rsplit_once('/').map(|(dir, _)| format!("{dir}/"))?;
    let rest = uri.strip_prefix(&base).filter(|rest| !rest.is_empty())?;
    let path = PathBuf::from(rest);
    path.components().all(|c| matches!(c, Component::Normal(_))).then_some(path)
}

/// Writes the skill under `dir/NAME/`; the directory written.
fn write(loaded: &LoadedSkill, dir: &Path) -> Result<String, Failure> {
    let name = loaded.entry.name();
    if !mcp::types::skills::valid_name(name) {
        return Err(Failure::Protocol(format!("the skill's name {name:?} is not a valid skill name; not written")));
    }
    let root = dir.join(name);
    let mut files = vec![(loaded.entry.uri.clone(), loaded.manifest.as_bytes().to_vec())];
    files.extend(loaded.files.iter().cloned());
    for (uri, bytes) in &files {
        let path = relative_path(&loaded.entry, uri)
            .ok_or_else(|| Failure::Protocol(format!("{uri} is not inside the skill's directory; not written")))?;
        let target = root.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Failure::Usage(format!("{}: {e}", parent.display())))?;
        }
        std::fs::write(&target, bytes).map_err(|e| Failure::Usage(format!("{}: {e}", target.display())))?;
    }
    Ok(root.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_inside_the_skill_are_written() {
        let entry = SkillEntry {
            uri: "skill://pdf-processing/SKILL.md".into(),
            frontmatter: Default::default(),
            resources: SkillResources::Dynamic("dynamic".into()),
        };
        assert_eq!(relative_path(&entry, "skill://pdf-processing/SKILL.md"), Some(PathBuf::from("SKILL.md")));
        assert_eq!(
            relative_path(&entry, "skill://pdf-processing/references/FORMS.md"),
            Some(PathBuf::from("references/FORMS.md"))
        );
        for outside in [
            "skill://pdf-processing/../x",
            "skill://other/SKILL.md",
            "skill://pdf-processing//etc/passwd",
            "skill://pdf-processing/",
        ] {
            assert_eq!(relative_path(&entry, outside), None, "{outside}");
        }
    }
}
