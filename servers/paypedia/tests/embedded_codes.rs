//! IBANs with a group that looks like the start of another country's IBAN (two letters and two
//! digits, e.g. `FR14 2004 1010 DE89 ...`), written in groups as people type them, in upper and
//! lower case: the extractor keeps the group in the IBAN it is reading when that reading is
//! valid, and splits there only when it is not.
//!
//! The cases are generated from the formats themselves: for every country whose BBAN layout lets
//! a group at a four-character boundary hold two letters and two digits, valid IBANs with such a
//! group, one for every country code that can appear there.

use paypedia::formats::{Class, Format};
use paypedia::{extract, iban, Data};

/// A small deterministic generator (the cases must be the same on every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// The class of each BBAN position.
fn classes(format: &Format) -> Vec<Class> {
    format.bban.iter().flat_map(|part| std::iter::repeat_n(part.class, part.count)).collect()
}

fn letters_fit(c: Class) -> bool {
    matches!(c, Class::Upper | Class::Alnum)
}

fn digits_fit(c: Class) -> bool {
    matches!(c, Class::Digits | Class::Alnum)
}

/// IBAN positions (4, 8, ...) where a group may start with two letters and two digits.
fn host_positions(format: &Format) -> Vec<usize> {
    let bban = classes(format);
    (4..format.iban_length.saturating_sub(3))
        .step_by(4)
        .filter(|&p| {
            let at = |i: usize| bban.get(i - 4).copied();
            at(p).is_some_and(letters_fit)
                && at(p + 1).is_some_and(letters_fit)
                && at(p + 2).is_some_and(digits_fit)
                && at(p + 3).is_some_and(digits_fit)
        })
        .collect()
}

/// A valid IBAN of `format` whose characters at `at..at + 4` are `guest` and two digits, if one
/// turns up within a few thousand random tries (national check digits must hold too).
fn generate(data: &Data, format: &Format, at: usize, guest: &str, rng: &mut Lcg) -> Option<String> {
    let bban_classes = classes(format);
    for _ in 0..20_000 {
        let mut bban: Vec<u8> = bban_classes
            .iter()
            .map(|class| match class {
                Class::Digits => b'0' + rng.next(10) as u8,
                Class::Upper => b'A' + rng.next(26) as u8,
                Class::Alnum if rng.next(3) == 0 => b'A' + rng.next(26) as u8,
                Class::Alnum => b'0' + rng.next(10) as u8,
                Class::Space => b' ',
            })
            .collect();
        let group = at - 4;
        bban[group..group + 2].copy_from_slice(guest.as_bytes());
        bban[group + 2] = b'0' + rng.next(10) as u8;
        bban[group + 3] = b'0' + rng.next(10) as u8;
        let iban = with_check_digits(&format.country, &bban);
        if iban::check(data, iban.as_bytes()).is_valid() {
            return Some(iban);
        }
    }
    None
}

/// The IBAN with its ISO 13616 check digits computed.
fn with_check_digits(country: &str, bban: &[u8]) -> String {
    let rearranged: String =
        std::str::from_utf8(bban).unwrap().chars().chain(country.chars()).chain("00".chars()).collect();
    let mut remainder = 0u32;
    for c in rearranged.chars() {
        let value = c.to_digit(36).unwrap();
        remainder = if value < 10 { (remainder * 10 + value) % 97 } else { (remainder * 100 + value) % 97 };
    }
    format!("{country}{:02}{}", 98 - remainder, std::str::from_utf8(bban).unwrap())
}

/// Groups of four, as printed on statements.
fn grouped(iban: &str) -> String {
    iban.as_bytes().chunks(4).map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join(" ")
}

fn found(data: &Data, text: &str) -> Vec<String> {
    extract::find(data, text, 10).0.into_iter().map(|c| c.compact).collect()
}

#[test]
fn a_group_that_looks_like_another_iban_stays_when_the_reading_is_valid() {
    let data = Data::embedded();
    let formats = data.formats().all();
    let guests: Vec<&str> = formats.iter().map(|f| f.country.as_str()).collect();
    let mut rng = Lcg(2026);
    let mut cases = Vec::new();
    let mut hosts_used = std::collections::BTreeSet::new();
    for guest in &guests {
        // One case per country code that can appear inside another IBAN, at the first place it fits.
        let place =
            formats.iter().flat_map(|f| host_positions(f).into_iter().map(move |p| (*f, p))).find_map(|(host, at)| {
                generate(data, host, at, guest, &mut Lcg(rng.next(u64::MAX))).map(|iban| (host, iban))
            });
        if let Some((host, iban)) = place {
            hosts_used.insert(host.country.clone());
            cases.push(iban);
        }
    }
    for host in &formats {
        // And one per country whose layout lets such a group appear.
        if hosts_used.contains(&host.country) {
            continue;
        }
        let Some(&at) = host_positions(host).first() else { continue };
        if let Some(iban) = generate(data, host, at, "DE", &mut rng) {
            hosts_used.insert(host.country.clone());
            cases.push(iban);
        }
    }
    assert!(cases.len() >= guests.len() / 2, "only {} cases were generated", cases.len());
    assert!(hosts_used.len() >= 10, "hosts: {hosts_used:?}");
    let mut failures = Vec::new();
    for iban in &cases {
        let spaced = grouped(iban);
        let lower = spaced.to_ascii_lowercase();
        for text in [format!("Virement sur {spaced}, merci."), format!("iban: {lower}"), spaced.replace(' ', "-")] {
            let got = found(data, &text);
            if got != [iban.clone()] {
                failures.push(format!("{text:?}: found {got:?}, want [{iban}]"));
            }
        }
    }
    eprintln!("{} cases from {} host countries: {hosts_used:?}", cases.len(), hosts_used.len());
    assert!(failures.is_empty(), "{} of {} cases:\n{}", failures.len(), cases.len() * 3, failures.join("\n"));
}

#[test]
fn the_text_is_still_split_where_the_joined_reading_is_invalid() {
    let data = Data::embedded();
    // Two whole IBANs in a row: the second is never swallowed by the first.
    let text = "DE89 3704 0044 0532 0130 00 FR76 3000 6000 0112 3456 7890 189";
    assert_eq!(found(data, text), ["DE89370400440532013000", "FR7630006000011234567890189"]);
    // A cut-off IBAN followed by another: split where the second starts.
    let text = "de89 3704 0044 0532 0130 fr76 3000 6000 0112 3456 7890 189";
    assert_eq!(found(data, text), ["DE893704004405320130", "FR7630006000011234567890189"]);
    // A FR IBAN whose account holds "DE12": kept whole when valid; split when its key is wrong.
    let mut rng = Lcg(7);
    let fr = data.formats().get("FR").unwrap();
    let at = *host_positions(fr).first().expect("FR accounts may hold letters");
    let iban = generate(data, fr, at, "DE", &mut rng).expect("a valid FR IBAN with DE inside");
    assert_eq!(found(data, &grouped(&iban)), std::slice::from_ref(&iban));
    let mut broken = iban.clone().into_bytes();
    let last = broken.len() - 1;
    broken[last] = if broken[last] == b'0' { b'1' } else { b'0' };
    let broken = String::from_utf8(broken).unwrap();
    assert!(
        found(data, &grouped(&broken)).len() >= 2,
        "an invalid reading is split: {:?}",
        found(data, &grouped(&broken))
    );
}
