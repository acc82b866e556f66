//! The `SKILL.md` frontmatter reader: no text panics it, and what it reads, written back as
//! frontmatter, reads the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_types::skills::frontmatter;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(object) = frontmatter(text) else { return };
    let _ = mcp::server::skills::Skill::from_manifest(text);
    // Written back with every value quoted as JSON (a YAML flow scalar), it reads the same.
    let mut again = String::from("---\n");
    for (key, value) in &object {
        if key.contains(':') || key.trim() != key || key.is_empty() || key.starts_with('#') {
            return; // not writable as a plain key
        }
        match value {
            Value::Object(map) => {
                again.push_str(&format!("{key}:\n"));
                for (k, v) in map {
                    if k.contains(':') || k.trim() != k || k.is_empty() || k.starts_with('#') {
                        return;
                    }
                    again.push_str(&format!("  {k}: {v}\n"));
                }
            }
            v => again.push_str(&format!("{key}: {v}\n")),
        }
    }
    again.push_str("---\n");
    if let Ok(reread) = frontmatter(&again) {
        for (key, value) in &object {
            if !matches!(value, Value::Object(m) if m.is_empty()) {
                assert_eq!(reread.get(key), Some(value), "{key} read back otherwise from {again:?}");
            }
        }
    }
});
