//! Finding IBANs in free text: spaces, dashes and dots between groups, lower case, an `IBAN:`
//! prefix, several per line or one per line. A candidate starts at a word boundary with two
//! letters and two check characters; it grows across single separators while the next group
//! still fits the country's layout, and stops at the country's length when a group ends there.

use crate::formats::Format;
use crate::Data;

/// The longest candidate kept; a longer run of letters and digits is cut and reported too long.
const MAX_CANDIDATE: usize = 64;

/// An IBAN-like span of the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Where it starts in the input (byte offset).
    pub start: usize,
    /// The span as written.
    pub raw: String,
    /// Letters and digits only, upper case.
    pub compact: String,
}

fn is_separator(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'-' | b'.')
}

/// Every IBAN-like span of `text`, at most `limit` of them, and how many more there were.
pub fn find(data: &Data, text: &str, limit: usize) -> (Vec<Candidate>, usize) {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut extra = 0;
    let mut i = 0;
    while i + 4 <= bytes.len() {
        if !starts_candidate(bytes, i) {
            i += 1;
            continue;
        }
        let (end, compact) = grow(data, bytes, i);
        if found.len() < limit {
            found.push(Candidate { start: i, raw: text[i..end].to_owned(), compact });
        } else {
            extra += 1;
        }
        i = end.max(i + 1);
    }
    if found.is_empty() && extra == 0 {
        if let Some(single) = whole_input(text) {
            found.push(single);
        }
    }
    (found, extra)
}

fn starts_candidate(b: &[u8], i: usize) -> bool {
    let boundary = i == 0 || !b[i - 1].is_ascii_alphanumeric();
    boundary
        && b[i].is_ascii_alphabetic()
        && b[i + 1].is_ascii_alphabetic()
        && b[i + 2].is_ascii_alphanumeric()
        && b[i + 3].is_ascii_alphanumeric()
        && (b[i + 2].is_ascii_digit() || b[i + 3].is_ascii_digit())
}

/// Extends a candidate from `start`, group by group; returns its end and compact form.
///
/// Below the country's length a group of letters only must fit the BBAN layout there
/// ("DE89 ... please" stops), and at or past the length only a group with a digit joins (so
/// "AT93 ... 3201 99" is read as one IBAN that is too long, but "FR76 ... 189 and" stops at
/// "and"). A group that looks like the start of another IBAN (a known country code and two
/// digits, in any case) joins only when that reading makes a valid IBAN; otherwise the text is
/// split there.
fn grow(data: &Data, b: &[u8], start: usize) -> (usize, String) {
    let country = std::str::from_utf8(&b[start..start + 2]).unwrap_or("").to_ascii_uppercase();
    let format = data.formats().get(&country);
    let mut compact = String::with_capacity(format.map_or(34, |f| f.iban_length));
    let end = take_group(b, start, &mut compact);
    grow_from(data, b, format, end, compact)
}

/// Goes on growing a candidate that so far ends at `end` and reads `compact`.
fn grow_from(data: &Data, b: &[u8], format: Option<&Format>, mut end: usize, mut compact: String) -> (usize, String) {
    let target = format.map_or(34, |f| f.iban_length);
    while compact.len() < MAX_CANDIDATE {
        let Some(next) = (end..b.len().min(end + 3)).find(|&j| !is_separator(b[j])) else {
            break;
        };
        if next == end || !b[next].is_ascii_alphanumeric() {
            break;
        }
        if starts_known_iban(data, b, next) {
            let mut joined = compact.clone();
            let joined_end = take_group(b, next, &mut joined);
            let (whole_end, whole) = grow_from(data, b, format, joined_end, joined);
            if crate::iban::check(data, whole.as_bytes()).is_valid() {
                return (whole_end, whole);
            }
            break; // not part of this IBAN: another one starts there
        }
        let group_end = (next..b.len()).find(|&j| !b[j].is_ascii_alphanumeric()).unwrap_or(b.len());
        let has_digit = b[next..group_end].iter().any(u8::is_ascii_digit);
        let joins = if compact.len() >= target { has_digit } else { has_digit || fits(format, compact.len(), b[next]) };
        if !joins {
            break;
        }
        end = take_group(b, next, &mut compact);
    }
    // Past the cap: swallow the rest of the run so it is not read as more IBANs.
    while end < b.len() && b[end].is_ascii_alphanumeric() {
        end += 1;
    }
    (end, compact)
}

/// Whether a known country code and two check digits start at `i` (a second IBAN).
fn starts_known_iban(data: &Data, b: &[u8], i: usize) -> bool {
    i + 4 <= b.len()
        && starts_candidate(b, i)
        && b[i + 2].is_ascii_digit()
        && b[i + 3].is_ascii_digit()
        && data.formats().get(&std::str::from_utf8(&b[i..i + 2]).unwrap_or("").to_ascii_uppercase()).is_some()
}

/// Appends the run of letters and digits at `at` (up to the cap); returns where the run ends.
fn take_group(b: &[u8], at: usize, compact: &mut String) -> usize {
    let mut i = at;
    while i < b.len() && b[i].is_ascii_alphanumeric() {
        if compact.len() < MAX_CANDIDATE {
            compact.push(b[i].to_ascii_uppercase() as char);
        }
        i += 1;
    }
    i
}

/// Whether character `c` may stand at IBAN position `at` of `format` (unknown: anything goes).
fn fits(format: Option<&Format>, at: usize, c: u8) -> bool {
    let Some(format) = format else { return true };
    if at < 4 {
        return true;
    }
    let mut pos = 4;
    for part in &format.bban {
        if at < pos + part.count {
            return match part.class {
                crate::formats::Class::Digits => c.is_ascii_digit(),
                crate::formats::Class::Upper => c.is_ascii_alphabetic(),
                crate::formats::Class::Alnum => c.is_ascii_alphanumeric(),
                crate::formats::Class::Space => c == b' ',
            };
        }
        pos += part.count;
    }
    false
}

/// The whole input as one candidate, when it is a single IBAN-looking token: letters, digits and
/// separators only, at least half of them digits (so prose is never taken for an IBAN).
fn whole_input(text: &str) -> Option<Candidate> {
    let trimmed = text.trim();
    let start = text.len() - text.trim_start().len();
    let alnum = trimmed.bytes().filter(u8::is_ascii_alphanumeric).count();
    let digits = trimmed.bytes().filter(u8::is_ascii_digit).count();
    let ok = (5..=MAX_CANDIDATE * 2).contains(&trimmed.len())
        && trimmed.bytes().all(|b| b.is_ascii_alphanumeric() || is_separator(b))
        && alnum >= 5
        && digits * 2 >= alnum;
    ok.then(|| Candidate {
        start,
        raw: trimmed.to_owned(),
        compact: trimmed.bytes().filter(u8::is_ascii_alphanumeric).map(|b| b.to_ascii_uppercase() as char).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compacts(text: &str) -> Vec<String> {
        find(Data::embedded(), text, 100).0.into_iter().map(|c| c.compact).collect()
    }

    #[test]
    fn finds_ibans_in_prose() {
        assert_eq!(compacts("Pay to IBAN: fr76 3000-6000-0112 3456 7890 189 please."), ["FR7630006000011234567890189"]);
        assert_eq!(
            compacts("DE89 3704 0044 0532 0130 00 DE44 5001 0517 5407 3249 31\nGB29NWBK60161331926819"),
            ["DE89370400440532013000", "DE44500105175407324931", "GB29NWBK60161331926819"]
        );
        assert_eq!(compacts("MD5 hashes and ABCD words and IBAN alone"), Vec::<String>::new());
        assert_eq!(compacts("DE89 3704 0044 0532 0130 please"), ["DE893704004405320130"]);
        assert_eq!(compacts("A7212110090000000235698741"), ["A7212110090000000235698741"]);
    }

    #[test]
    fn too_long_runs_are_cut() {
        let text = format!("DE{}", "1".repeat(10_000));
        let (found, _) = find(Data::embedded(), &text, 10);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].compact.len(), MAX_CANDIDATE);
    }
}
