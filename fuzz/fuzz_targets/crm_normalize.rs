//! crm-mcp's query normalisation: the search key, the katakana reading of a romanized query and
//! the family-first key. No text panics them; a key holds no whitespace nor middle dot; a
//! reading, when there is one, holds no Latin letter.
#![no_main]

use crm_mcp::normalize::{family_first_key, romaji_alternative, search_key};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let key = search_key(text);
    assert!(!key.chars().any(char::is_whitespace), "{key:?}");
    assert!(!key.contains('・'));
    if let Some(reading) = romaji_alternative(text) {
        assert!(!reading.chars().any(|c| c.is_ascii_alphabetic()), "{text:?} read as {reading:?}");
        assert!(!reading.chars().any(char::is_whitespace));
    }
    let family = family_first_key(text);
    assert!(!family.chars().any(char::is_whitespace), "{family:?}");
});
