//! What the tools accept, checked before any database sees it: search queries (their keys and
//! romaji alternatives), limits, opaque cursors and dates. Every refusal says what to send.

use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::normalize::{romaji_alternative, search_key};

/// The longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 200;
/// Hits per page unless the caller asks otherwise.
pub const DEFAULT_LIMIT: u32 = 10;
/// The most hits per page.
pub const MAX_LIMIT: u32 = 50;
/// Interactions per page unless the caller asks otherwise.
pub const DEFAULT_INTERACTIONS: u32 = 20;
/// The most interactions per page.
pub const MAX_INTERACTIONS: u32 = 100;

/// A search, normalised.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    /// The query's search key.
    pub key: String,
    /// The katakana reading of a romanized query, searched against kana readings.
    pub kana: Option<String>,
}

impl Search {
    /// Checks and normalises a query.
    pub fn parse(query: &str) -> Result<Search, String> {
        if let Some(c) = query.chars().find(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')) {
            return Err(format!(
                "The query contains a control character (U+{:04X}); pass only the text of a name, a kana reading, \
                 a romanized name or an e-mail address.",
                c as u32
            ));
        }
        let chars = query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(format!(
                "The query is {chars} characters long; pass at most {MAX_QUERY_CHARS}: part of one name or one \
                 e-mail address (e.g. 山田, やまだ, yamada or yamada@example.com)."
            ));
        }
        let key = search_key(query);
        if key.is_empty() {
            return Err("The query is empty: pass part of a customer's name (山田), its reading (やまだ), its \
                        romanized form (yamada) or an e-mail address."
                .into());
        }
        let kana = romaji_alternative(query).filter(|k| *k != key);
        Ok(Search { key, kana })
    }

    /// Whether the key is a whole e-mail address (`local@domain.tld`).
    pub fn is_email_address(&self) -> bool {
        match self.key.split_once('@') {
            Some((local, domain)) => {
                !local.is_empty() && !domain.contains('@') && domain.contains('.') && !domain.ends_with('.')
            }
            None => false,
        }
    }

    /// Length of the key in characters (the trigram index needs 3).
    pub fn key_chars(&self) -> usize {
        self.key.chars().count()
    }

    fn fingerprint(&self) -> String {
        let digest = Sha256::digest(format!("{}\u{0}{}", self.key, self.kana.as_deref().unwrap_or("")));
        digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
    }
}

/// Where the next page of a search starts: after this (rank, name length, id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SearchAfter {
    /// 0 exact, 1 prefix, 2 substring.
    pub rank: i32,
    /// Length of the name key.
    pub name_len: i32,
    /// Customer id.
    pub id: i64,
}

impl SearchAfter {
    /// Before every row.
    pub const START: SearchAfter = SearchAfter { rank: -1, name_len: -1, id: i64::MIN };
}

const CURSOR_ERROR: &str =
    "The cursor is not one this server gave for this query; call again with the same query and no cursor.";

fn encode(text: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
}

fn decode(cursor: &str) -> Option<String> {
    if cursor.len() > 200 {
        return None;
    }
    String::from_utf8(base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(cursor).ok()?).ok()
}

/// The cursor of the page after `after`, bound to the search it belongs to.
pub fn search_cursor(search: &Search, after: SearchAfter) -> String {
    encode(&format!("s1.{}.{}.{}.{}", search.fingerprint(), after.rank, after.name_len, after.id))
}

/// Reads a search cursor back; it must come from the same search.
pub fn parse_search_cursor(search: &Search, cursor: Option<&str>) -> Result<SearchAfter, String> {
    let Some(cursor) = cursor else { return Ok(SearchAfter::START) };
    let text = decode(cursor).ok_or(CURSOR_ERROR)?;
    let parts: Vec<&str> = text.split('.').collect();
    match parts.as_slice() {
        ["s1", print, rank, len, id] if *print == search.fingerprint() => Ok(SearchAfter {
            rank: rank.parse().map_err(|_| CURSOR_ERROR)?,
            name_len: len.parse().map_err(|_| CURSOR_ERROR)?,
            id: id.parse().map_err(|_| CURSOR_ERROR)?,
        }),
        _ => Err(CURSOR_ERROR.into()),
    }
}

/// Where the next page of interactions starts: before this (time, id), newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InteractionsBefore {
    /// `occurred_at` of the last row shown.
    pub occurred_at: String,
    /// Its id.
    pub id: i64,
}

/// The cursor of the page of `customer_id`'s interactions after `before`.
pub fn interactions_cursor(customer_id: i64, since: Option<&str>, before: &InteractionsBefore) -> String {
    encode(&format!("i1|{customer_id}|{}|{}|{}", since.unwrap_or(""), before.occurred_at, before.id))
}

/// Reads an interactions cursor back; it must come from the same customer and `since`.
pub fn parse_interactions_cursor(
    customer_id: i64,
    since: Option<&str>,
    cursor: Option<&str>,
) -> Result<Option<InteractionsBefore>, String> {
    let Some(cursor) = cursor else { return Ok(None) };
    let text = decode(cursor).ok_or(CURSOR_ERROR)?;
    let parts: Vec<&str> = text.split('|').collect();
    match parts.as_slice() {
        ["i1", id, s, at, last] if *id == customer_id.to_string() && *s == since.unwrap_or("") => {
            let at = parse_since(at).map_err(|_| CURSOR_ERROR)?;
            Ok(Some(InteractionsBefore { occurred_at: at, id: last.parse().map_err(|_| CURSOR_ERROR)? }))
        }
        _ => Err(CURSOR_ERROR.into()),
    }
}

fn digits(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit())
}

/// A `since` date, `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SSZ`, as the latter (how times are stored).
pub fn parse_since(text: &str) -> Result<String, String> {
    let bad = || {
        format!(
            "since must be a UTC date or time such as 2026-11-01 or 2026-11-01T09:00:00Z, not {:?}.",
            text.chars().take(40).collect::<String>()
        )
    };
    let (date, time) = match text.split_once('T') {
        Some((d, t)) => (d, t.strip_suffix('Z').ok_or_else(bad)?),
        None => (text, "00:00:00"),
    };
    let d: Vec<&str> = date.split('-').collect();
    let t: Vec<&str> = time.split(':').collect();
    let ok = matches!(d.as_slice(), [y, m, dd] if digits(y, 4) && digits(m, 2) && digits(dd, 2))
        && matches!(t.as_slice(), [h, mi, s] if digits(h, 2) && digits(mi, 2) && digits(s, 2));
    if !ok {
        return Err(bad());
    }
    let num = |s: &str| s.parse::<u32>().unwrap_or(99);
    if !(1..=12).contains(&num(d[1]))
        || !(1..=31).contains(&num(d[2]))
        || num(t[0]) > 23
        || num(t[1]) > 59
        || num(t[2]) > 60
    {
        return Err(bad());
    }
    Ok(format!("{date}T{time}Z"))
}

/// A page size: `default` when absent, else 1..=`max`.
pub fn limit(requested: Option<u32>, default: u32, max: u32) -> Result<u32, String> {
    match requested {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(n) => Err(format!("limit must be between 1 and {max}, not {n}.")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_checked() {
        assert_eq!(Search::parse("山田 太郎").unwrap().key, "山田太郎");
        assert_eq!(Search::parse("yamada").unwrap().kana.as_deref(), Some("ヤマダ"));
        assert!(Search::parse("").unwrap_err().contains("empty"));
        assert!(Search::parse("　 ").unwrap_err().contains("empty"));
        assert!(Search::parse(&"山".repeat(201)).unwrap_err().contains("201 characters"));
        assert!(Search::parse("ab\u{0}c").unwrap_err().contains("U+0000"));
        assert!(Search::parse("a\u{1b}[31m").unwrap_err().contains("U+001B"));
        assert_eq!(Search::parse("山田\t太郎").unwrap().key, "山田太郎");
        assert!(Search::parse("YAMADA@EXAMPLE.COM").unwrap().is_email_address());
        for not in ["example.org", "yamada@", "@example.com", "a@b", "山田"] {
            assert!(!Search::parse(not).unwrap().is_email_address(), "{not}");
        }
    }

    #[test]
    fn cursors_round_trip_and_stay_bound() {
        let s = Search::parse("山田").unwrap();
        let after = SearchAfter { rank: 1, name_len: 4, id: 1023 };
        let c = search_cursor(&s, after);
        assert_eq!(parse_search_cursor(&s, Some(&c)).unwrap(), after);
        let other = Search::parse("田中").unwrap();
        assert!(parse_search_cursor(&other, Some(&c)).is_err());
        assert!(parse_search_cursor(&s, Some("nonsense!")).is_err());
        assert_eq!(parse_search_cursor(&s, None).unwrap(), SearchAfter::START);

        let before = InteractionsBefore { occurred_at: "2026-11-20T10:00:00Z".into(), id: 7 };
        let c = interactions_cursor(1023, None, &before);
        assert_eq!(parse_interactions_cursor(1023, None, Some(&c)).unwrap(), Some(before));
        assert!(parse_interactions_cursor(1024, None, Some(&c)).is_err());
    }

    #[test]
    fn dates() {
        assert_eq!(parse_since("2026-11-01").unwrap(), "2026-11-01T00:00:00Z");
        assert_eq!(parse_since("2026-11-01T09:30:00Z").unwrap(), "2026-11-01T09:30:00Z");
        for bad in ["yesterday", "2026-13-01", "2026-11-01T09:30", "2026-1-1", "'; --"] {
            assert!(parse_since(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn limits() {
        assert_eq!(limit(None, 10, 50), Ok(10));
        assert_eq!(limit(Some(50), 10, 50), Ok(50));
        assert!(limit(Some(0), 10, 50).is_err());
        assert!(limit(Some(51), 10, 50).is_err());
    }
}
