//! Reading a server's skills (SEP-2640, `io.modelcontextprotocol/skills`) as a host must:
//! `skills/list` and `skills/get` give entries without reading any file (nothing is fetched
//! ahead of need); [`Client::load_skill`] then reads the `SKILL.md` and, only if it verifies,
//! the skill's other files. A file verifies when its byte length is the entry's `size` and its
//! SHA-256 the entry's `digest`; a `SKILL.md` also when its frontmatter equals the entry's,
//! field by field. Content that does not verify is never returned, and nothing after it is read.

use base64::Engine as _;
use mcp_types::content::ResourceContents;
use mcp_types::resources::ReadResourceResult;
use mcp_types::skills::{self, SkillEntry, SkillFile, SkillResources, MANIFEST};
use serde_json::{json, Value};
use sha2::Digest as _;

use super::Client;
use crate::error::Error;

/// The most bytes one skill may bring in (the extension's limit).
const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// A skill read whole and verified.
#[derive(Debug, Clone)]
pub struct LoadedSkill {
    /// Its entry, as listed.
    pub entry: SkillEntry,
    /// Its `SKILL.md`, as text.
    pub manifest: String,
    /// Its other files, in the entry's order: URI and bytes (none for a `"dynamic"` skill).
    pub files: Vec<(String, Vec<u8>)>,
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`, as entries write digests.
pub fn digest_of(bytes: &[u8]) -> String {
    let hash = sha2::Sha256::digest(bytes);
    format!("sha256:{}", hash.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// One digest for a whole skill: of its entry's URI, frontmatter and file digests. It changes
/// whenever any file or the frontmatter does, so a host approves a skill by it.
pub fn skill_digest(entry: &SkillEntry) -> String {
    let files = match &entry.resources {
        SkillResources::Files(files) => json!(files),
        SkillResources::Dynamic(word) => json!(word),
    };
    let canonical = json!({"uri": entry.uri, "frontmatter": entry.frontmatter, "resources": files});
    digest_of(canonical.to_string().as_bytes())
}

/// Why content read for a skill was refused.
fn unverified(uri: &str, why: String) -> Error {
    Error::protocol(format!("skill file {uri} failed verification: {why}; it was not used"))
}

/// Checks `bytes` against `file`: size first, then digest.
fn verify(file: &SkillFile, bytes: &[u8]) -> Result<(), Error> {
    if bytes.len() as u64 != file.size {
        return Err(unverified(&file.uri, format!("{} bytes where the entry says {}", bytes.len(), file.size)));
    }
    let digest = digest_of(bytes);
    if !digest.eq_ignore_ascii_case(&file.digest) {
        return Err(unverified(&file.uri, format!("its digest is {digest}, the entry says {}", file.digest)));
    }
    Ok(())
}

/// The bytes of a read's first contents for `uri`.
fn bytes_of(uri: &str, result: ReadResourceResult) -> Result<Vec<u8>, Error> {
    let contents = result
        .contents
        .into_iter()
        .find(|c| c.uri() == uri)
        .ok_or_else(|| Error::protocol(format!("resources/read of {uri} returned no contents for it")))?;
    match contents {
        ResourceContents::Text(text) => Ok(text.text.into_bytes()),
        ResourceContents::Blob(blob) => base64::engine::general_purpose::STANDARD
            .decode(blob.blob.as_bytes())
            .map_err(|e| Error::protocol(format!("resources/read of {uri}: the blob is not base64 ({e})"))),
    }
}

impl Client {
    /// Every skill the server lists (all pages). No file is read.
    pub async fn list_skills(&self) -> Result<Vec<SkillEntry>, Error> {
        let mut entries = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1000 {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let page = self.request("skills/list", params).await?;
            let list = page.get("skills").cloned().unwrap_or(Value::Array(Vec::new()));
            let list: Vec<SkillEntry> = serde_json::from_value(list)
                .map_err(|e| Error::protocol(format!("malformed skills/list result: {e}")))?;
            entries.extend(list);
            cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        Ok(entries)
    }

    /// One skill's entry by the URI of its `SKILL.md`. No file is read.
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry, Error> {
        let result = self.request("skills/get", json!({"uri": uri})).await?;
        let entry = result.get("skill").cloned().unwrap_or(result);
        serde_json::from_value(entry).map_err(|e| Error::protocol(format!("malformed skills/get result: {e}")))
    }

    /// Reads the skill: its `SKILL.md` first, verified against the entry (size, digest,
    /// frontmatter), then each other file the entry lists, verified likewise. The first file
    /// that fails stops the load; nothing unverified is returned.
    pub async fn load_skill(&self, entry: &SkillEntry) -> Result<LoadedSkill, Error> {
        if let SkillResources::Files(files) = &entry.resources {
            let total: u64 = files.iter().map(|f| f.size).sum();
            if total > MAX_SKILL_BYTES {
                return Err(Error::protocol(format!(
                    "skill {} lists {total} bytes of files, over the {MAX_SKILL_BYTES} a skill may have",
                    entry.uri
                )));
            }
        }
        let manifest = self.read_skill_file(entry, &entry.uri).await?;
        let manifest =
            String::from_utf8(manifest).map_err(|_| unverified(&entry.uri, format!("{MANIFEST} is not UTF-8 text")))?;
        let frontmatter = skills::frontmatter(&manifest).map_err(|e| unverified(&entry.uri, e))?;
        if frontmatter != entry.frontmatter {
            let differ: Vec<&String> = entry
                .frontmatter
                .keys()
                .chain(frontmatter.keys())
                .filter(|k| entry.frontmatter.get(*k) != frontmatter.get(*k))
                .collect();
            return Err(unverified(&entry.uri, format!("its frontmatter differs from the entry's in {differ:?}")));
        }
        let mut files = Vec::new();
        if let SkillResources::Files(listed) = &entry.resources {
            for file in listed.iter().filter(|f| f.uri != entry.uri) {
                files.push((file.uri.clone(), self.read_skill_file(entry, &file.uri).await?));
            }
        }
        Ok(LoadedSkill { entry: entry.clone(), manifest, files })
    }

    /// Reads one file of `entry`, verified against its manifest line when the entry lists
    /// files (a `"dynamic"` skill's files cannot be verified and come as they are).
    pub async fn read_skill_file(&self, entry: &SkillEntry, uri: &str) -> Result<Vec<u8>, Error> {
        let listed = match &entry.resources {
            SkillResources::Files(_) => Some(entry.file(uri).ok_or_else(|| {
                Error::protocol(format!("{uri} is not a file of skill {} (its entry does not list it)", entry.uri))
            })?),
            SkillResources::Dynamic(_) => None,
        };
        let result = self.read_resource(uri).await?;
        let bytes = bytes_of(uri, result)?;
        if let Some(file) = listed {
            verify(file, &bytes)?;
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(bytes: &[u8]) -> SkillFile {
        SkillFile { uri: "skill://a/SKILL.md".into(), digest: digest_of(bytes), size: bytes.len() as u64 }
    }

    #[test]
    fn a_file_verifies_by_size_then_digest() {
        assert!(verify(&file(b"body"), b"body").is_ok());
        let size = verify(&file(b"body"), b"body!").unwrap_err().to_string();
        assert!(size.contains("5 bytes where the entry says 4"), "{size}");
        let digest = verify(&file(b"body"), b"bodY").unwrap_err().to_string();
        assert!(digest.contains("digest"), "{digest}");
    }

    #[test]
    fn the_skill_digest_follows_every_file_and_the_frontmatter() {
        let entry = |text: &[u8], description: &str| SkillEntry {
            uri: "skill://a/SKILL.md".into(),
            frontmatter: serde_json::from_value(json!({"name": "a", "description": description})).unwrap(),
            resources: SkillResources::Files(vec![file(text)]),
        };
        let base = skill_digest(&entry(b"one", "d"));
        assert_eq!(base, skill_digest(&entry(b"one", "d")));
        assert_ne!(base, skill_digest(&entry(b"two", "d")));
        assert_ne!(base, skill_digest(&entry(b"one", "e")));
    }
}
