//! National check digits inside the BBAN, per country. Each function takes the upper-case BBAN
//! (already matched against the country's structure) and says whether its check digits hold.

use crate::formats::{Format, NationalAlgo};
use crate::germany;

/// The outcome of a national check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum National {
    /// An algorithm exists and the digits are right.
    Pass,
    /// An algorithm exists and the digits are wrong.
    Fail,
    /// The format declares check digits but no algorithm is implemented.
    NotVerified,
    /// Nothing to check (or, for DE, the bank's method is not implemented or the bank unknown).
    NotApplicable,
}

impl National {
    /// The vocabulary of the test vectors: `pass`, `fail:InvalidBBANChecksum`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            National::Pass => "pass",
            National::Fail => "fail:InvalidBBANChecksum",
            National::NotVerified => "not-verified",
            National::NotApplicable => "n/a",
        }
    }
}

/// The value of an alphanumeric character in ISO 7064 (0-9, A=10 ... Z=35).
fn value(b: u8) -> u32 {
    match b {
        b'0'..=b'9' => (b - b'0') as u32,
        b'A'..=b'Z' => (b - b'A') as u32 + 10,
        _ => 0,
    }
}

/// The remainder mod 97 of the number an alphanumeric string stands for (letters as 10-35).
pub fn mod97(chars: impl IntoIterator<Item = u8>) -> u32 {
    chars.into_iter().fold(0, |acc, b| {
        let v = value(b);
        if v >= 10 {
            (acc * 100 + v) % 97
        } else {
            (acc * 10 + v) % 97
        }
    })
}

fn digits(s: &[u8]) -> Option<u64> {
    s.iter().try_fold(0u64, |acc, &b| b.is_ascii_digit().then(|| acc * 10 + (b - b'0') as u64))
}

fn weighted(s: &[u8], weights: &[u32]) -> Option<u32> {
    s.iter()
        .zip(weights.iter().cycle())
        .try_fold(0, |acc, (&b, w)| b.is_ascii_digit().then(|| acc + (b - b'0') as u32 * w))
}

/// Runs the country's national check; `bank_method` is the DE bank's Bundesbank method.
pub fn check(format: &Format, bban: &[u8], bank_method: Option<&str>) -> National {
    let Some(algo) = format.national_algo else {
        return if format.national_check.is_some() { National::NotVerified } else { National::NotApplicable };
    };
    let ok = match algo {
        NationalAlgo::Mod97Bban => mod97(bban.iter().copied()) == 1,
        NationalAlgo::Mod97Bban97r => mod97_variant(format, bban),
        NationalAlgo::Belgium => belgium(bban),
        NationalAlgo::FranceRib => france(format, bban),
        NationalAlgo::Spain => spain(bban),
        NationalAlgo::ItalyCin => italy(bban),
        NationalAlgo::Norway => norway(bban),
        NationalAlgo::Finland => luhn_valid(bban),
        NationalAlgo::Estonia => estonia(bban),
        NationalAlgo::Poland => poland(bban),
        NationalAlgo::CzechSlovak => czech_slovak(bban),
        NationalAlgo::Iceland => iceland(format, bban),
        NationalAlgo::Germany => {
            let account = format.account.clone().and_then(|r| bban.get(r));
            return match (bank_method, account) {
                (Some(method), Some(account)) => match germany::check(method, account) {
                    Some(true) => National::Pass,
                    Some(false) => National::Fail,
                    None => National::NotApplicable,
                },
                _ => National::NotApplicable,
            };
        }
    };
    if ok {
        National::Pass
    } else {
        National::Fail
    }
}

/// MR, TN: check digits = 97 − (BBAN-without-check · 100 mod 97).
fn mod97_variant(format: &Format, bban: &[u8]) -> bool {
    let check = format.national_check.clone().unwrap_or(bban.len().saturating_sub(2)..bban.len());
    let Some(expected) = bban.get(check.clone()).and_then(digits) else {
        return false;
    };
    let r = mod97(bban[..check.start].iter().copied().chain(*b"00"));
    (97 - r) as u64 == expected
}

/// BE: the last 2 digits are the first 10 mod 97, with 0 written as 97.
fn belgium(bban: &[u8]) -> bool {
    let (Some(n), Some(check)) = (digits(&bban[..10]), digits(&bban[10..12])) else {
        return false;
    };
    let r = n % 97;
    (if r == 0 { 97 } else { r }) == check
}

/// FR, MC: RIB key = 97 − ((89·bank + 15·branch + 3·account) mod 97), account letters mapped.
fn france(format: &Format, bban: &[u8]) -> bool {
    let field = |r: &Option<std::ops::Range<usize>>| r.clone().and_then(|r| bban.get(r));
    let (Some(bank), Some(branch), Some(account), Some(key)) =
        (field(&format.bank), field(&format.branch), field(&format.account), field(&format.national_check))
    else {
        return false;
    };
    let account: Vec<u8> = account.iter().map(|&b| rib_digit(b)).collect();
    let (Some(bank), Some(branch), Some(account), Some(key)) =
        (digits(bank), digits(branch), digits(&account), digits(key))
    else {
        return false;
    };
    97 - (89 * bank + 15 * branch + 3 * account) % 97 == key
}

fn rib_digit(b: u8) -> u8 {
    match b {
        b'A' | b'J' => b'1',
        b'B' | b'K' | b'S' => b'2',
        b'C' | b'L' | b'T' => b'3',
        b'D' | b'M' | b'U' => b'4',
        b'E' | b'N' | b'V' => b'5',
        b'F' | b'O' | b'W' => b'6',
        b'G' | b'P' | b'X' => b'7',
        b'H' | b'Q' | b'Y' => b'8',
        b'I' | b'R' | b'Z' => b'9',
        other => other,
    }
}

/// ES: bank(4) branch(4) control(2) account(10).
fn spain(bban: &[u8]) -> bool {
    const W: [u32; 10] = [1, 2, 4, 8, 5, 10, 9, 7, 3, 6];
    let digit = |s: &[u8]| {
        weighted(s, &W).map(|sum| match 11 - sum % 11 {
            11 => 0,
            10 => 1,
            d => d,
        })
    };
    let mut first = [b'0'; 10];
    first[2..].copy_from_slice(&bban[0..8]);
    match (digit(&first), digit(&bban[10..20]), digits(&bban[8..10])) {
        (Some(a), Some(b), Some(control)) => (a * 10 + b) as u64 == control,
        _ => false,
    }
}

/// IT, SM: the CIN letter over ABI + CAB + account.
fn italy(bban: &[u8]) -> bool {
    const ODD: [u32; 26] =
        [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23];
    let v = |b: u8| match b {
        b'0'..=b'9' => (b - b'0') as u32,
        b'A'..=b'Z' => (b - b'A') as u32,
        _ => 0,
    };
    let sum: u32 =
        bban[1..23].iter().enumerate().map(|(i, &b)| if i % 2 == 0 { ODD[v(b) as usize] } else { v(b) }).sum();
    bban[0] == b'A' + (sum % 26) as u8
}

/// NO: bank(4) account(6) check(1), mod 11 (an account starting 00 weighs only its last 4).
fn norway(bban: &[u8]) -> bool {
    const W: [u32; 10] = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2];
    let value: &[u8] = if &bban[4..6] == b"00" { &bban[6..10] } else { &bban[0..10] };
    let Some(sum) =
        value.iter().zip(W).try_fold(0, |acc, (&b, w)| b.is_ascii_digit().then(|| acc + (b - b'0') as u32 * w))
    else {
        return false;
    };
    let check = 11 - sum % 11;
    check != 10 && (check % 11) as u8 + b'0' == bban[10]
}

/// Luhn over all digits, the last being the check digit (FI).
fn luhn_valid(s: &[u8]) -> bool {
    let mut sum = 0;
    for (i, &b) in s.iter().rev().enumerate() {
        if !b.is_ascii_digit() {
            return false;
        }
        let d = (b - b'0') as u32;
        sum += if i % 2 == 1 {
            if d * 2 > 9 {
                d * 2 - 9
            } else {
                d * 2
            }
        } else {
            d
        };
    }
    sum % 10 == 0
}

/// EE: weights 7,3,1 from the right over branch + account; check = (10 − sum mod 10) mod 10.
fn estonia(bban: &[u8]) -> bool {
    let body = &bban[2..15];
    let Some(sum) = body
        .iter()
        .rev()
        .zip([7u32, 3, 1].iter().cycle())
        .try_fold(0, |acc, (&b, w)| b.is_ascii_digit().then(|| acc + (b - b'0') as u32 * w))
    else {
        return false;
    };
    ((10 - sum % 10) % 10) as u8 + b'0' == bban[15]
}

/// PL: the 8th digit of the settlement number.
fn poland(bban: &[u8]) -> bool {
    weighted(&bban[0..7], &[3, 9, 7, 1, 3, 9, 7]).is_some_and(|sum| ((10 - sum % 10) % 10) as u8 + b'0' == bban[7])
}

/// CZ, SK: prefix and account each sum to 0 mod 11 with their weights.
fn czech_slovak(bban: &[u8]) -> bool {
    let prefix = weighted(&bban[4..10], &[10, 5, 8, 4, 2, 1]);
    let account = weighted(&bban[10..20], &[6, 3, 7, 9, 10, 5, 8, 4, 2, 1]);
    matches!((prefix, account), (Some(p), Some(a)) if p % 11 == 0 && a % 11 == 0)
}

/// IS: the 9th digit of the kennitala.
fn iceland(format: &Format, bban: &[u8]) -> bool {
    let id = format.other.get("account_holder_id").cloned().unwrap_or(12..22);
    let Some(id) = bban.get(id) else { return false };
    let Some(r) = weighted(&id[..8], &[3, 2, 7, 6, 5, 4, 3, 2]).map(|s| s % 11) else {
        return false;
    };
    let expected = if r == 0 { 0 } else { 11 - r };
    expected < 10 && expected as u8 + b'0' == id[8]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mod97_of_letters_and_digits() {
        // DE89 3704 0044 0532 0130 00 rearranged: BBAN + "DE89".
        assert_eq!(mod97(b"370400440532013000DE89".iter().copied()), 1);
        assert!(luhn_valid(b"79927398713"));
        assert!(!luhn_valid(b"79927398710"));
    }
}
