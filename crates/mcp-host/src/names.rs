//! Tool names for the model: `server__tool`, reduced to what providers accept
//! (`[A-Za-z0-9_-]{1,64}`), with a short hash suffix when a name is too long or already taken,
//! and the reverse map. Collisions are reported, never silently shadowed.

use std::collections::HashMap;

use sha2::Digest as _;

/// The most characters providers take.
pub const MAX_LEN: usize = 64;

fn sanitize(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

fn suffix(server: &str, tool: &str, salt: u32) -> String {
    let digest = sha2::Sha256::digest(format!("{server}\0{tool}\0{salt}").as_bytes());
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// The names of every tool of every server.
#[derive(Debug, Default, Clone)]
pub struct Names {
    by_model: HashMap<String, (String, String)>,
    by_tool: HashMap<(String, String), String>,
    /// What was renamed and why, in words (for start-up).
    pub notices: Vec<String>,
}

impl Names {
    /// Names for `(server, tool)` pairs, in order: the first of two that would share a name keeps
    /// it, the next gets a suffix.
    pub fn build<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Names {
        let mut names = Names::default();
        for (server, tool) in pairs {
            names.add(server, tool);
        }
        names
    }

    fn add(&mut self, server: &str, tool: &str) {
        let key = (server.to_owned(), tool.to_owned());
        if self.by_tool.contains_key(&key) {
            return;
        }
        let base = format!("{}__{}", sanitize(server), sanitize(tool));
        let mut name = base.clone();
        let mut salt = 0;
        while name.len() > MAX_LEN || self.by_model.contains_key(&name) {
            let tail = format!("_{}", suffix(server, tool, salt));
            let keep = base.len().min(MAX_LEN - tail.len());
            name = format!("{}{tail}", &base[..keep]);
            salt += 1;
        }
        if name != base {
            let why = match self.by_model.get(&base) {
                Some((s, t)) => format!("{server}/{tool} would be {base}, already the name of {s}/{t}: it is {name}"),
                None => format!("{server}/{tool} is longer than {MAX_LEN} characters as {base}: it is {name}"),
            };
            self.notices.push(why);
        }
        self.by_model.insert(name.clone(), key.clone());
        self.by_tool.insert(key, name);
    }

    /// The server and tool a model's name stands for.
    pub fn resolve(&self, name: &str) -> Option<(&str, &str)> {
        self.by_model.get(name).map(|(s, t)| (s.as_str(), t.as_str()))
    }

    /// The model's name of `tool` of `server`.
    pub fn name_of(&self, server: &str, tool: &str) -> Option<&str> {
        self.by_tool.get(&(server.to_owned(), tool.to_owned())).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitized_bounded_unique_and_reversible() {
        let long = "t".repeat(100);
        let pairs = vec![
            ("paypedia", "iban_check"),
            ("pay.pedia", "iban_check"),
            ("pay_pedia", "iban_check"),
            ("files", "read.file"),
            ("files", long.as_str()),
        ];
        let names = Names::build(pairs.iter().copied());
        let all: Vec<&str> = pairs.iter().map(|(s, t)| names.name_of(s, t).unwrap()).collect();
        assert_eq!(all[0], "paypedia__iban_check");
        assert_eq!(all[1], "pay_pedia__iban_check");
        assert!(all[2].starts_with("pay_pedia__iban_check_") && all[2].len() <= MAX_LEN, "{}", all[2]);
        assert_eq!(all[3], "files__read_file");
        assert!(all[4].len() <= MAX_LEN);
        for (name, (server, tool)) in all.iter().zip(&pairs) {
            assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'), "{name}");
            assert_eq!(names.resolve(name), Some((*server, *tool)));
        }
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "injective");
        assert_eq!(names.notices.len(), 2, "{:?}", names.notices);
        assert!(names.notices[0].contains("already the name of pay.pedia/iban_check"));
        let again = Names::build(pairs.iter().copied());
        assert_eq!(again.name_of("files", &long), names.name_of("files", &long), "stable");
    }
}
