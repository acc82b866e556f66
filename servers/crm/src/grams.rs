//! The search grams: short pieces of each customer's keys, written at load time into one table
//! (`search_grams`, primary key `(kind, gram, name_len, id)`), so that every search walks an index
//! in page order (`name_len`, then id) and stops when the page is full, instead of gathering
//! and sorting every match.
//!
//! - [`Kind::Prefix`]: the first 1, 2 and 3 characters of every key: a query of up to 3
//!   characters finds its prefix hits by walking `(Prefix, query)`; a longer one walks its first
//!   3 characters and checks the rest.
//! - [`Kind::KanaPrefix`]: the same for the kana reading alone (a romanized query's katakana
//!   alternative is matched against the reading only).
//! - [`Kind::Inside`]: a 1- or 2-character gram found in some key of the customer, none of whose
//!   keys starts with it (a substring hit that no prefix pass finds), written only for grams
//!   that few customers hold: a rare gram is walked here, where a scan of the table would read
//!   every row to find nothing.
//! - [`Kind::Dense`]: one row per gram that too many customers hold to list (the rows' `id` is the
//!   count): such a gram is found by walking the customers in page order, where matches are
//!   close together.
//!
//! Tri-grams and longer are served by FTS5 (SQLite) and `pg_trgm` (PostgreSQL).

use std::collections::{BTreeSet, HashMap};

use crate::dataset::CustomerKeys;

/// The longest prefix written, in characters.
pub const PREFIX_CHARS: usize = 3;
/// The longest substring gram written, in characters (trigram indexes serve 3 and more).
pub const INSIDE_CHARS: usize = 2;

/// What a gram row says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum Kind {
    /// Some key of the customer starts with the gram.
    Prefix = 1,
    /// The customer's kana reading starts with the gram.
    KanaPrefix = 2,
    /// Some key contains the gram, and none starts with it.
    Inside = 3,
    /// The gram is held by too many customers to list (`id`: how many).
    Dense = 4,
}

/// One row of `search_grams`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GramRow {
    /// What the row says.
    pub kind: Kind,
    /// The piece of key.
    pub gram: String,
    /// The customer's name length (page order).
    pub name_len: i32,
    /// The customer (for [`Kind::Dense`], the number of customers).
    pub id: i64,
}

/// The first `n` characters of `text`, if it has that many.
fn first_chars(text: &str, n: usize) -> Option<&str> {
    match text.char_indices().nth(n) {
        Some((end, _)) => Some(&text[..end]),
        None if text.chars().count() == n => Some(text),
        None => None,
    }
}

/// The gram a query of any length walks: its first [`PREFIX_CHARS`] characters, or itself.
pub fn prefix_gram(key: &str) -> &str {
    first_chars(key, PREFIX_CHARS).unwrap_or(key)
}

fn keys_of(keys: &CustomerKeys) -> [&str; 5] {
    [&keys.name, &keys.kana, &keys.latin, &keys.latin_family_first, &keys.email]
}

/// The prefixes of a customer's keys, and those of its reading alone.
fn prefixes(keys: &CustomerKeys) -> (BTreeSet<&str>, BTreeSet<&str>) {
    let mut any = BTreeSet::new();
    let mut kana = BTreeSet::new();
    for n in 1..=PREFIX_CHARS {
        any.extend(keys_of(keys).into_iter().filter_map(|k| first_chars(k, n)));
        kana.extend(first_chars(&keys.kana, n));
    }
    (any, kana)
}

/// The 1- and 2-character grams inside a customer's keys that none of its keys starts with.
fn inside(keys: &CustomerKeys) -> BTreeSet<String> {
    let starts: Vec<&str> = keys_of(keys).to_vec();
    let mut grams = BTreeSet::new();
    for key in keys_of(keys) {
        let chars: Vec<char> = key.chars().collect();
        for n in 1..=INSIDE_CHARS {
            for window in chars.windows(n) {
                let gram: String = window.iter().collect();
                if !starts.iter().any(|k| k.starts_with(gram.as_str())) {
                    grams.insert(gram);
                }
            }
        }
    }
    grams
}

/// The most customers an [`Kind::Inside`] gram is listed for; above, it is [`Kind::Dense`].
pub fn dense_threshold(customers: usize) -> usize {
    (customers / 100).max(1_000)
}

/// Every gram row of `customers` (their keys and ids), in the table's key order (a b-tree is
/// written fastest in order).
pub fn rows(customers: &[(i64, CustomerKeys)]) -> Vec<GramRow> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for (_, keys) in customers {
        for gram in inside(keys) {
            *counts.entry(gram).or_default() += 1;
        }
    }
    let threshold = dense_threshold(customers.len());
    let mut rows = Vec::new();
    for (id, keys) in customers {
        let row = |kind, gram: &str| GramRow { kind, gram: gram.to_owned(), name_len: keys.name_len, id: *id };
        let (any, kana) = prefixes(keys);
        rows.extend(any.into_iter().map(|g| row(Kind::Prefix, g)));
        rows.extend(kana.into_iter().map(|g| row(Kind::KanaPrefix, g)));
        rows.extend(inside(keys).iter().filter(|g| counts[*g] <= threshold).map(|g| row(Kind::Inside, g)));
    }
    for (gram, count) in counts.into_iter().filter(|(_, count)| *count > threshold) {
        rows.push(GramRow { kind: Kind::Dense, gram, name_len: 0, id: count as i64 });
    }
    rows.sort_unstable_by(|a, b| (a.kind, &a.gram, a.name_len, a.id).cmp(&(b.kind, &b.gram, b.name_len, b.id)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(name: &str, kana: &str, latin: &str, email: &str) -> CustomerKeys {
        CustomerKeys {
            name: name.into(),
            kana: kana.into(),
            latin: latin.into(),
            latin_family_first: latin.into(),
            email: email.into(),
            name_len: name.chars().count() as i32,
        }
    }

    #[test]
    fn prefixes_and_inside_grams() {
        let k = keys("山田太郎", "ヤマダタロウ", "taro", "t@x.jp");
        let (any, kana) = prefixes(&k);
        assert!(any.contains("山田太") && any.contains("ヤ") && any.contains("tar") && any.contains("t@x"));
        assert!(!any.contains("山田太郎"));
        assert_eq!(kana.into_iter().collect::<Vec<_>>(), ["ヤ", "ヤマ", "ヤマダ"]);
        let inside = inside(&k);
        assert!(inside.contains("田") && inside.contains("田太") && inside.contains("@x"));
        // "t" and "ta" start keys: a prefix pass finds them, so they are not inside grams.
        assert!(!inside.contains("t") && !inside.contains("ta") && !inside.contains("山"));
        assert_eq!(prefix_gram("山田太郎"), "山田太");
        assert_eq!(prefix_gram("山"), "山");
    }

    #[test]
    fn common_grams_are_counted_not_listed() {
        let customers: Vec<(i64, CustomerKeys)> =
            (0..1_500).map(|i| (i, keys("佐藤", "サトウ", "sato", &format!("s{i}@x.jp")))).collect();
        let rows = rows(&customers);
        let dense: Vec<&GramRow> = rows.iter().filter(|r| r.kind == Kind::Dense).collect();
        assert!(dense.iter().any(|r| r.gram == "藤" && r.id == 1_500));
        assert!(!rows.iter().any(|r| r.kind == Kind::Inside && r.gram == "藤"));
        // A gram only one customer has is listed.
        assert!(rows.iter().any(|r| r.kind == Kind::Inside && r.gram == "99" && r.id == 999));
    }
}
