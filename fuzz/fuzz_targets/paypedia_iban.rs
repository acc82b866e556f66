//! paypedia's IBAN extraction from free text: no text panics it, every candidate is a span of
//! the text (its compact form its letters and digits, upper case), at most the limit are kept,
//! and each is checked without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use paypedia::Data;

fuzz_target!(|data: &[u8]| {
    let Some((&limit, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let limit = usize::from(limit % 16);
    let data = Data::embedded();
    let (found, more) = paypedia::extract::find(data, text, limit);
    assert!(found.len() <= limit.max(1), "{} found for a limit of {limit}", found.len());
    if more > 0 {
        assert_eq!(found.len(), limit);
    }
    for candidate in &found {
        let span = text.get(candidate.start..candidate.start + candidate.raw.len());
        assert!(span == Some(candidate.raw.as_str()) || found.len() == 1, "{candidate:?} is not in the text");
        assert!(candidate.compact.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()), "{candidate:?}");
        let _ = paypedia::iban::check(data, candidate.compact.as_bytes());
    }
});
