//! IBAN formats per country (`iban_formats.csv`): length, BBAN structure, where the bank code,
//! branch, account and national check digits sit, and which national algorithm applies.

use std::collections::HashMap;
use std::ops::Range;

/// The formats compiled into the binary.
pub static EMBEDDED_CSV: &str = include_str!("../data/iban_formats.csv");

/// A character class of the SWIFT notation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `n`: digits.
    Digits,
    /// `a`: upper-case letters.
    Upper,
    /// `c`: letters and digits.
    Alnum,
    /// `e`: spaces.
    Space,
}

impl Class {
    fn accepts(self, b: u8) -> bool {
        match self {
            Class::Digits => b.is_ascii_digit(),
            Class::Upper => b.is_ascii_uppercase(),
            Class::Alnum => b.is_ascii_alphanumeric(),
            Class::Space => b == b' ',
        }
    }

    /// How the class reads in a message.
    pub fn describe(self) -> &'static str {
        match self {
            Class::Digits => "digits",
            Class::Upper => "letters",
            Class::Alnum => "letters or digits",
            Class::Space => "spaces",
        }
    }
}

/// One element of a BBAN structure: `count` characters of `class`, exactly or at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// How many.
    pub count: usize,
    /// Of which class.
    pub class: Class,
    /// Exactly `count` (`!`), or up to.
    pub exact: bool,
}

/// A BBAN component used for bank lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// The bank code.
    Bank,
    /// The branch code.
    Branch,
}

/// The national check-digit algorithm of a country.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NationalAlgo {
    /// ISO 7064 mod 97-10 over the whole BBAN (BA ME MK PT RS SI TL).
    Mod97Bban,
    /// The same with 97 − r (MR TN).
    Mod97Bban97r,
    /// Belgium.
    Belgium,
    /// France and Monaco: the RIB key.
    FranceRib,
    /// Spain: the two control digits.
    Spain,
    /// Italy and San Marino: the CIN letter.
    ItalyCin,
    /// Norway: mod 11.
    Norway,
    /// Finland: Luhn.
    Finland,
    /// Estonia: 7-3-1.
    Estonia,
    /// Poland: the settlement number's check digit.
    Poland,
    /// Czechia and Slovakia: mod 11 of prefix and account.
    CzechSlovak,
    /// Iceland: the kennitala's check digit.
    Iceland,
    /// Germany: per bank, by its Bundesbank method.
    Germany,
}

impl NationalAlgo {
    fn from_id(id: &str) -> Option<Self> {
        Some(match id {
            "mod97-10-bban" => NationalAlgo::Mod97Bban,
            "mod97-10-bban-97r" => NationalAlgo::Mod97Bban97r,
            "be-mod97" => NationalAlgo::Belgium,
            "fr-rib" => NationalAlgo::FranceRib,
            "es-dc-mod11" => NationalAlgo::Spain,
            "it-cin" => NationalAlgo::ItalyCin,
            "no-mod11" => NationalAlgo::Norway,
            "fi-luhn" => NationalAlgo::Finland,
            "ee-731" => NationalAlgo::Estonia,
            "pl-3971" => NationalAlgo::Poland,
            "cz-sk-mod11" => NationalAlgo::CzechSlovak,
            "is-kennitala-mod11" => NationalAlgo::Iceland,
            "de-per-bank" => NationalAlgo::Germany,
            _ => return None,
        })
    }

    /// A short description for the model and the country resource.
    pub fn describe(self) -> &'static str {
        match self {
            NationalAlgo::Mod97Bban => "ISO 7064 mod 97-10 over the whole BBAN",
            NationalAlgo::Mod97Bban97r => "mod 97 over the BBAN (97 − remainder variant)",
            NationalAlgo::Belgium => "Belgian check digits: first 10 digits mod 97",
            NationalAlgo::FranceRib => "French RIB key",
            NationalAlgo::Spain => "Spanish control digits (mod 11)",
            NationalAlgo::ItalyCin => "Italian CIN check letter",
            NationalAlgo::Norway => "Norwegian account number mod 11",
            NationalAlgo::Finland => "Finnish Luhn check digit",
            NationalAlgo::Estonia => "Estonian 7-3-1 check digit",
            NationalAlgo::Poland => "Polish settlement number check digit",
            NationalAlgo::CzechSlovak => "Czech/Slovak mod 11 of prefix and account",
            NationalAlgo::Iceland => "Icelandic kennitala check digit",
            NationalAlgo::Germany => "German check-digit method of the bank (Bundesbank)",
        }
    }
}

/// The IBAN format of one country.
#[derive(Clone, Debug)]
pub struct Format {
    /// ISO country code.
    pub country: String,
    /// `registry`, `territory` or `aspirational`.
    pub status: String,
    /// For a territory: the country whose format it uses.
    pub alias_of: Option<String>,
    /// Total IBAN length.
    pub iban_length: usize,
    /// BBAN length.
    pub bban_length: usize,
    /// SWIFT notation of the IBAN.
    pub iban_spec: String,
    /// The BBAN structure.
    pub bban: Vec<Part>,
    /// Bank code position in the BBAN.
    pub bank: Option<Range<usize>>,
    /// Branch code position.
    pub branch: Option<Range<usize>>,
    /// Account number position.
    pub account: Option<Range<usize>>,
    /// National check digits position.
    pub national_check: Option<Range<usize>>,
    /// Extra components by name (`account_holder_id`, ...).
    pub other: HashMap<String, Range<usize>>,
    /// Components that make the bank lookup key.
    pub lookup: Vec<Component>,
    /// Part of the SEPA zone.
    pub sepa: bool,
    /// The national algorithm, when one is implemented.
    pub national_algo: Option<NationalAlgo>,
    /// A valid example.
    pub example: Option<String>,
}

impl Format {
    /// Checks the BBAN against the structure; `Err` explains the first mismatch.
    pub fn check_bban(&self, bban: &[u8]) -> Result<(), String> {
        let mut at = 0;
        for part in &self.bban {
            let start = at;
            while at < bban.len() && at - start < part.count && part.class.accepts(bban[at]) {
                at += 1;
            }
            if part.exact && at - start < part.count {
                let found = bban.get(at).map(|&b| b as char);
                return Err(match found {
                    Some(c) => format!(
                        "character {} of the BBAN is {c:?}, but positions {}-{} must be {}",
                        at + 1,
                        start + 1,
                        start + part.count,
                        part.class.describe()
                    ),
                    None => "the BBAN ends early".to_owned(),
                });
            }
        }
        if at != bban.len() {
            return Err(format!("unexpected characters from position {} of the BBAN", at + 1));
        }
        Ok(())
    }

    /// The BBAN layout in words, e.g. "4!n4!n12!c".
    pub fn bban_spec(&self) -> &str {
        self.iban_spec.get(4..).unwrap_or("")
    }
}

fn range(text: &str) -> Option<Range<usize>> {
    let (a, b) = text.split_once(':')?;
    let (a, b) = (a.parse().ok()?, b.parse().ok()?);
    (b > a).then_some(a..b)
}

fn parse_spec(spec: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut rest = spec;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let count: usize = rest[..digits].parse().map_err(|_| format!("bad BBAN spec {spec:?}"))?;
        rest = &rest[digits..];
        let exact = rest.starts_with('!');
        if exact {
            rest = &rest[1..];
        }
        let class = match rest.as_bytes().first() {
            Some(b'n') => Class::Digits,
            Some(b'a') => Class::Upper,
            Some(b'c') => Class::Alnum,
            Some(b'e') => Class::Space,
            _ => return Err(format!("bad BBAN spec {spec:?}")),
        };
        rest = &rest[1..];
        parts.push(Part { count, class, exact });
    }
    Ok(parts)
}

/// All formats by country code.
#[derive(Clone, Debug, Default)]
pub struct Formats {
    by_country: HashMap<String, Format>,
}

impl Formats {
    /// Parses `iban_formats.csv`.
    pub fn parse(text: &str) -> Result<Formats, String> {
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let headers = reader.headers().map_err(|e| e.to_string())?.clone();
        let mut by_country = HashMap::new();
        for row in reader.records() {
            let row = row.map_err(|e| format!("iban_formats.csv: {e}"))?;
            let get = |name: &str| headers.iter().position(|h| h == name).and_then(|i| row.get(i)).unwrap_or("");
            let format = Format {
                country: get("country").to_owned(),
                status: get("status").to_owned(),
                alias_of: Some(get("alias_of").to_owned()).filter(|s| !s.is_empty()),
                iban_length: get("iban_length").parse().map_err(|_| "bad iban_length".to_owned())?,
                bban_length: get("bban_length").parse().map_err(|_| "bad bban_length".to_owned())?,
                iban_spec: get("iban_spec").to_owned(),
                bban: parse_spec(get("bban_spec"))?,
                bank: range(get("bank_code")),
                branch: range(get("branch_code")),
                account: range(get("account_code")),
                national_check: range(get("national_check")),
                other: get("other_positions")
                    .split(';')
                    .filter_map(|kv| kv.split_once('=').and_then(|(k, v)| Some((k.to_owned(), range(v)?))))
                    .collect(),
                lookup: get("bank_lookup")
                    .split('+')
                    .filter_map(|c| match c {
                        "bank_code" => Some(Component::Bank),
                        "branch_code" => Some(Component::Branch),
                        _ => None,
                    })
                    .collect(),
                sepa: get("sepa") == "1",
                national_algo: NationalAlgo::from_id(get("national_check_algo")),
                example: Some(get("example").to_owned()).filter(|s| !s.is_empty()),
            };
            by_country.insert(format.country.clone(), format);
        }
        Ok(Formats { by_country })
    }

    /// The format of `country`.
    pub fn get(&self, country: &str) -> Option<&Format> {
        self.by_country.get(country)
    }

    /// Every format, sorted by country code.
    pub fn all(&self) -> Vec<&Format> {
        let mut all: Vec<_> = self.by_country.values().collect();
        all.sort_by(|a, b| a.country.cmp(&b.country));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_format() {
        let formats = Formats::parse(EMBEDDED_CSV).unwrap();
        assert_eq!(formats.all().len(), 127);
        let de = formats.get("DE").unwrap();
        assert_eq!((de.iban_length, de.bank.clone()), (22, Some(0..8)));
        assert_eq!(de.national_algo, Some(NationalAlgo::Germany));
        let si = formats.get("SI").unwrap();
        assert_eq!(si.lookup, [Component::Bank, Component::Branch]);
        assert!(de.check_bban(b"370400440532013000").is_ok());
        assert!(de.check_bban(b"AA0400440532013000").unwrap_err().contains("digits"));
    }
}
