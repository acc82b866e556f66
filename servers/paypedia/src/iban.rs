//! Checking one IBAN: structure, country, length, BBAN layout, ISO 13616 check digits, the
//! national check digits, then the bank behind it. The hot path allocates nothing.

use crate::formats::{Component, Format};
use crate::national::{self, mod97, National};
use crate::registry::Bank;
use crate::Data;

/// Why an IBAN is invalid; the names are those of the test vectors (and of schwifty).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub enum ErrorKind {
    /// Not a country code and two check digits followed by letters and digits.
    InvalidStructure,
    /// No IBAN format for the country code.
    InvalidCountryCode,
    /// Wrong length for the country.
    InvalidLength,
    /// The ISO 13616 check digits do not match (or are 00, 01, 99).
    InvalidChecksumDigits,
    /// The national check digits inside the BBAN do not match.
    #[serde(rename = "InvalidBBANChecksum")]
    InvalidBbanChecksum,
}

impl ErrorKind {
    /// The name, as in the test vectors.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidStructure => "InvalidStructure",
            ErrorKind::InvalidCountryCode => "InvalidCountryCode",
            ErrorKind::InvalidLength => "InvalidLength",
            ErrorKind::InvalidChecksumDigits => "InvalidChecksumDigits",
            ErrorKind::InvalidBbanChecksum => "InvalidBBANChecksum",
        }
    }
}

/// The verdict on one compact IBAN.
#[derive(Clone, Debug)]
pub struct Check<'d> {
    /// The first problem found, with what exactly is wrong.
    pub error: Option<(ErrorKind, String)>,
    /// The country's format, when the country code is known.
    pub format: Option<&'d Format>,
    /// The national check.
    pub national: National,
    /// The bank, when the IBAN is sound and the code is in the registry.
    pub bank: Option<Bank>,
}

impl Check<'_> {
    /// Whether the IBAN is valid.
    pub fn is_valid(&self) -> bool {
        self.error.is_none()
    }
}

fn fail<'d>(kind: ErrorKind, message: String, format: Option<&'d Format>) -> Check<'d> {
    Check { error: Some((kind, message)), format, national: National::NotApplicable, bank: None }
}

/// Checks a compact, upper-case IBAN.
pub fn check<'d>(data: &'d Data, iban: &[u8]) -> Check<'d> {
    if iban.len() < 4 || !iban[..2].iter().all(u8::is_ascii_uppercase) {
        return fail(ErrorKind::InvalidStructure, "an IBAN starts with a two-letter country code".into(), None);
    }
    if !iban[2..4].iter().all(u8::is_ascii_digit) {
        let why = format!("the check digits {:?} must be two digits", lossy(&iban[2..4]));
        return fail(ErrorKind::InvalidStructure, why, None);
    }
    if !iban[4..].iter().all(u8::is_ascii_alphanumeric) {
        return fail(ErrorKind::InvalidStructure, "an IBAN holds only letters and digits".into(), None);
    }
    let country = lossy(&iban[..2]);
    let Some(format) = data.formats().get(country) else {
        return fail(ErrorKind::InvalidCountryCode, format!("{country} is not a country that uses IBANs"), None);
    };
    if iban.len() != format.iban_length {
        let why = format!("an IBAN of {country} has {} characters, this one has {}", format.iban_length, iban.len());
        return fail(ErrorKind::InvalidLength, why, Some(format));
    }
    let bban = &iban[4..];
    if let Err(why) = format.check_bban(bban) {
        let why = format!("the BBAN does not match the format of {country} ({}): {why}", format.bban_spec());
        return fail(ErrorKind::InvalidStructure, why, Some(format));
    }
    if let Some(why) = check_digits_problem(iban) {
        return fail(ErrorKind::InvalidChecksumDigits, why, Some(format));
    }
    let bank = lookup_key(format, bban).and_then(|key| data.registry.preferred(country, key.as_str()));
    let method = bank.map(|b| b.check_method).filter(|m| !m.is_empty());
    let national = national::check(format, bban, method);
    let error = (national == National::Fail).then(|| {
        (
            ErrorKind::InvalidBbanChecksum,
            format!("the national check digits of {country} do not match ({})", algo_name(format)),
        )
    });
    Check { error, format: Some(format), national, bank }
}

fn algo_name(format: &Format) -> &'static str {
    format.national_algo.map_or("national check", |a| a.describe())
}

/// ISO 13616: check digits 02-98 and the whole IBAN, rearranged, mod 97 = 1.
fn check_digits_problem(iban: &[u8]) -> Option<String> {
    if matches!(&iban[2..4], b"00" | b"01" | b"99") {
        return Some(format!("check digits {} are never valid (only 02 to 98 are allowed)", lossy(&iban[2..4])));
    }
    let rearranged = iban[4..].iter().chain(&iban[..4]).copied();
    if mod97(rearranged) != 1 {
        let expected = 98 - mod97(iban[4..].iter().chain(&iban[..2]).copied().chain(*b"00"));
        return Some(format!(
            "check digits do not match: {} has {}, the rest of it needs {expected:02}",
            lossy(&iban[..2]),
            lossy(&iban[2..4])
        ));
    }
    None
}

/// A short key on the stack: the bank lookup key of an IBAN.
pub struct Key {
    buf: [u8; 16],
    len: usize,
}

impl Key {
    /// The key as text.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

/// The registry key of a BBAN: its bank code, or bank + branch where the format says so.
pub fn lookup_key(format: &Format, bban: &[u8]) -> Option<Key> {
    let mut key = Key { buf: [0; 16], len: 0 };
    for component in &format.lookup {
        let range = match component {
            Component::Bank => format.bank.clone(),
            Component::Branch => format.branch.clone(),
        }?;
        let part = bban.get(range)?;
        key.buf.get_mut(key.len..key.len + part.len())?.copy_from_slice(part);
        key.len += part.len();
    }
    (key.len > 0).then_some(key)
}

/// A component of a BBAN as text.
pub fn component<'a>(bban: &'a [u8], range: &Option<std::ops::Range<usize>>) -> Option<&'a str> {
    range.clone().and_then(|r| bban.get(r)).map(lossy)
}

fn lossy(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or("?")
}

/// An IBAN in groups of four, as printed on paper.
pub fn formatted(iban: &str) -> String {
    let mut out = String::with_capacity(iban.len() + iban.len() / 4);
    for (i, c) in iban.chars().enumerate() {
        if i > 0 && i % 4 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}
