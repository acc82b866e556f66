//! Names behind the gateway: `PREFIX__name` within the 64 characters clients allow, and the
//! `allowTools`/`denyTools` globs.

/// The longest name the gateway serves (clients such as Claude's reject longer tool names).
pub const MAX_NAME: usize = 64;

/// `text` made fit for a name: every character outside `A-Z a-z 0-9 _ - .` becomes `_`.
pub fn sanitized_prefix(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '_' }).collect()
}

/// Whether `name` may be served as it is (1 to 128 of `A-Z a-z 0-9 _ - .`).
pub fn is_valid(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The name a client sees for an upstream's `name`: `PREFIX__name`, within 64 characters. With
/// an empty prefix a valid name is kept as it is. A name holding characters a name may not hold
/// has them replaced, and one too long is cut; both end with a hash of the original, so that two
/// names never become one.
pub fn public_name(prefix: &str, name: &str) -> String {
    if prefix.is_empty() && is_valid(name) {
        return name.to_owned();
    }
    let clean = sanitized_prefix(name);
    let joined = if prefix.is_empty() { clean.clone() } else { format!("{prefix}__{clean}") };
    if joined.len() <= MAX_NAME && clean == name {
        return joined;
    }
    let hash = fnv::short_hash(&format!("{prefix}\u{0}{name}"));
    let keep = joined.len().min(MAX_NAME - 9);
    format!("{}_{hash}", &joined[..keep])
}

/// A shell-like pattern: `*` matches any run of characters, `?` any one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob(Vec<char>);

impl Glob {
    pub fn new(pattern: &str) -> Glob {
        Glob(pattern.chars().collect())
    }

    pub fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        let (pattern, mut p, mut t) = (&self.0, 0, 0);
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            match pattern.get(p) {
                Some('*') => {
                    star = Some((p, t));
                    p += 1;
                }
                Some(&c) if c == '?' || c == text[t] => {
                    p += 1;
                    t += 1;
                }
                _ => match star {
                    Some((sp, st)) => {
                        p = sp + 1;
                        t = st + 1;
                        star = Some((sp, st + 1));
                    }
                    None => return false,
                },
            }
        }
        pattern[p..].iter().all(|&c| c == '*')
    }
}

/// A short, stable hash (FNV-1a, 32 bits, as 8 hex digits): for telling names apart, not for
/// security.
mod fnv {
    pub fn short_hash(text: &str) -> String {
        let mut h: u32 = 0x811c_9dc5;
        for b in text.bytes() {
            h ^= u32::from(b);
            h = h.wrapping_mul(0x0100_0193);
        }
        format!("{h:08x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_and_kept_short() {
        assert_eq!(public_name("fs", "read_file"), "fs__read_file");
        assert_eq!(public_name("", "read_file"), "read_file");
        assert_eq!(public_name("fs", "a/b c"), format!("fs__a_b_c_{}", fnv::short_hash("fs\u{0}a/b c")));
        assert_ne!(public_name("fs", "a/b"), public_name("fs", "a_b"));
        let long = "x".repeat(80);
        let one = public_name("server", &long);
        let two = public_name("server", &format!("{long}y"));
        assert_eq!(one.len(), MAX_NAME);
        assert_ne!(one, two);
        assert!(is_valid(&one) && is_valid(&two));
    }

    #[test]
    fn globs_match_like_a_shell() {
        let g = Glob::new("read_*");
        assert!(g.matches("read_file") && g.matches("read_") && !g.matches("write_file"));
        assert!(Glob::new("*").matches("") && Glob::new("a?c").matches("abc") && !Glob::new("a?c").matches("ac"));
        assert!(Glob::new("*_file*").matches("read_file_now") && !Glob::new("*_file").matches("read_files"));
    }
}
