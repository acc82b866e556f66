//! The search key: one normalisation, in Rust, applied to the data when it is written and to
//! every query, so that SQLite and PostgreSQL find the same rows.
//!
//! 1. NFKC (full-width ASCII, half-width kana, the ideographic space, `㈱`...);
//! 2. lower case;
//! 3. no whitespace and no middle dot (「山田 太郎」 = 「山田太郎」 = 「ヤマダ・タロウ」's form);
//! 4. hiragana to katakana (「やまだ」 = 「ヤマダ」);
//! 5. the variant kanji common in surnames to their usual form (髙→高, 﨑→崎, 邊→辺...).
//!
//! A romanized query (`yamada taro`) also gets a katakana form ([`romaji_alternative`]),
//! searched against the kana readings.

use unicode_normalization::UnicodeNormalization;

/// Bumped whenever [`search_key`] changes: a database written with another version must be
/// built again (`crm-mcp init`), or its keys would not match the queries'.
pub const KEY_VERSION: &str = "1";

/// Variant kanji (itaiji) folded to the form most people type. Our own table: the variants that
/// appear in Japanese surnames and that NFKC leaves alone.
const VARIANTS: &[(char, char)] = &[
    ('髙', '高'),
    ('﨑', '崎'),
    ('嵜', '崎'),
    ('碕', '崎'),
    ('邊', '辺'),
    ('邉', '辺'),
    ('齋', '斎'),
    ('齊', '斎'),
    ('斉', '斎'),
    ('濵', '浜'),
    ('濱', '浜'),
    ('澤', '沢'),
    ('廣', '広'),
    ('國', '国'),
    ('櫻', '桜'),
    ('瀨', '瀬'),
    ('冨', '富'),
    ('德', '徳'),
    ('槗', '橋'),
    ('𠮷', '吉'),
    ('龍', '竜'),
    ('眞', '真'),
    ('惠', '恵'),
    ('條', '条'),
    ('嶋', '島'),
    ('嶌', '島'),
    ('埜', '野'),
    ('曻', '昇'),
    ('藪', '薮'),
    ('舘', '館'),
];

fn fold_variant(c: char) -> char {
    VARIANTS.iter().find(|(from, _)| *from == c).map_or(c, |(_, to)| *to)
}

/// Hiragana (and its iteration marks) to katakana; anything else unchanged.
fn to_katakana(c: char) -> char {
    match c {
        '\u{3041}'..='\u{3096}' | '\u{309D}' | '\u{309E}' => char::from_u32(c as u32 + 0x60).unwrap_or(c),
        _ => c,
    }
}

/// The search key of a name, a reading, a romanized name or an e-mail address.
pub fn search_key(text: &str) -> String {
    text.nfkc()
        .flat_map(char::to_lowercase)
        .filter(|c| !c.is_whitespace() && *c != '・')
        .map(to_katakana)
        .map(fold_variant)
        .collect()
}

/// A romanized name read back as katakana (`yamada` → `ヤマダ`), for queries made only of Latin
/// letters, spaces, hyphens and apostrophes; `None` for anything else (an e-mail address, digits,
/// kana) or when some letters do not spell kana.
pub fn romaji_alternative(query: &str) -> Option<String> {
    use wana_kana::ConvertJapanese;
    let folded: String = query.nfkc().flat_map(char::to_lowercase).collect();
    let letters = folded.chars().filter(char::is_ascii_alphabetic).count();
    if letters < 2 || !folded.chars().all(|c| c.is_ascii_alphabetic() || c.is_whitespace() || c == '-' || c == '\'') {
        return None;
    }
    let compact: String = folded.chars().filter(char::is_ascii_alphabetic).collect();
    let kana = compact.to_katakana();
    if kana.chars().any(|c| c.is_ascii()) {
        return None;
    }
    Some(search_key(&kana))
}

/// The romanized name in family-first order (`Taro Yamada` → `yamadataro`), the order Japanese
/// speakers type it in.
pub fn family_first_key(latin: &str) -> String {
    let words: Vec<&str> = latin.split_whitespace().collect();
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => search_key(&format!("{last}{}", rest.concat())),
        _ => search_key(latin),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_case_and_spaces_do_not_matter() {
        assert_eq!(search_key("ｙａｍａｄａ＠ｅｘａｍｐｌｅ．ｃｏｍ"), "yamada@example.com");
        assert_eq!(search_key("YAMADA@EXAMPLE.COM"), "yamada@example.com");
        assert_eq!(search_key("ＹＡＭＡＤＡ"), "yamada");
        assert_eq!(search_key("山田　太郎"), "山田太郎");
        assert_eq!(search_key(" 山田 太郎 "), "山田太郎");
        assert_eq!(search_key("ﾔﾏﾀﾞ ﾀﾛｳ"), "ヤマダタロウ");
        assert_eq!(search_key("ヤマダ・タロウ"), "ヤマダタロウ");
    }

    #[test]
    fn hiragana_is_katakana() {
        assert_eq!(search_key("やまだ"), "ヤマダ");
        assert_eq!(search_key("やまだ たろう"), search_key("ヤマダタロウ"));
        assert_eq!(search_key("ゞ"), "ヾ");
    }

    #[test]
    fn variant_kanji_fold() {
        assert_eq!(search_key("髙橋"), "高橋");
        assert_eq!(search_key("山﨑"), "山崎");
        assert_eq!(search_key("渡邊"), "渡辺");
        assert_eq!(search_key("渡邉"), "渡辺");
        assert_eq!(search_key("齋藤"), search_key("斎藤"));
        assert_eq!(search_key("𠮷田"), "吉田");
    }

    #[test]
    fn other_text_stays_text() {
        assert_eq!(search_key("'; DROP TABLE customers; --"), "';droptablecustomers;--");
        assert_eq!(search_key("100%_"), "100%_");
        assert_eq!(search_key("José"), "josé");
        assert_eq!(search_key("王伟"), "王伟");
        assert_eq!(search_key("김민준"), "김민준");
        assert_eq!(search_key("①㈱"), "1(株)");
    }

    #[test]
    fn romaji_reads_as_katakana() {
        assert_eq!(romaji_alternative("yamada").as_deref(), Some("ヤマダ"));
        assert_eq!(romaji_alternative("Yamada Tarou").as_deref(), Some("ヤマダタロウ"));
        assert_eq!(romaji_alternative("ＹＡＭＡＤＡ").as_deref(), Some("ヤマダ"));
        assert_eq!(romaji_alternative("yamada@example.com"), None);
        assert_eq!(romaji_alternative("ヤマダ"), None);
        assert_eq!(romaji_alternative("x"), None);
        assert_eq!(romaji_alternative("1023"), None);
        // Letters that spell no kana.
        assert_eq!(romaji_alternative("xyzq"), None);
    }

    #[test]
    fn family_first() {
        assert_eq!(family_first_key("Taro Yamada"), "yamadataro");
        assert_eq!(family_first_key("Yamada"), "yamada");
        assert_eq!(family_first_key(""), "");
    }
}
