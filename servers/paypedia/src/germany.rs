//! German account-number check digits: the Bundesbank's "Prüfzifferberechnungsmethoden", one
//! per bank (the `check_method` column of the registry).
//!
//! Implemented: the methods that schwifty implements and the registry uses most (00–11, 13–26,
//! 28, 32–34, 38, 60, 61, 63, 68, 76, 88, 91, 99). Others answer `None` ("not checked"), never
//! a guess: a wrong "invalid" on a real account is worse than no opinion.

/// Whether the 10-digit `account` passes `method`; `None` when the method is not implemented.
pub fn check(method: &str, account: &[u8]) -> Option<bool> {
    if account.len() != 10 || !account.iter().all(u8::is_ascii_digit) {
        return Some(false);
    }
    let a: [u8; 10] = std::array::from_fn(|i| account[i] - b'0');
    Some(match method {
        "00" => mod10_cross(&a, 1, 9, 10, &[2, 1]),
        "01" => mod10(&a, 1, 9, 10, &[3, 7, 1]),
        "02" => mod11_strict(&a, 1, 9, 10, &[2, 3, 4, 5, 6, 7, 8, 9]),
        "03" => mod10(&a, 1, 9, 10, &[2, 1]),
        "04" => mod11_strict(&a, 1, 9, 10, &[2, 3, 4, 5, 6, 7]),
        "05" => mod10(&a, 1, 9, 10, &[7, 3, 1]),
        "06" => mod11(&a, 1, 9, 10, &[2, 3, 4, 5, 6, 7]),
        "07" => mod11_strict(&a, 1, 9, 10, &[2, 3, 4, 5, 6, 7, 8, 9, 10]),
        "08" => number(&a) < 60_000 || mod10_cross(&a, 1, 9, 10, &[2, 1]),
        "09" => true,
        "10" => mod11(&a, 1, 9, 10, &[2, 3, 4, 5, 6, 7, 8, 9, 10]),
        "11" => method_11(&a),
        "13" => mod10_cross(&a, 2, 7, 8, &[2, 1]),
        "14" => mod11_strict(&a, 4, 9, 10, &[2, 3, 4, 5, 6, 7]),
        "15" => mod11(&a, 6, 9, 10, &[2, 3, 4, 5]),
        "16" => method_16(&a, 1, 9, 10),
        "17" => method_17(&a),
        "18" => mod10(&a, 1, 9, 10, &[3, 9, 7, 1]),
        "19" => mod11(&a, 1, 9, 10, &[2, 3, 4, 5, 6, 7, 8, 9, 1]),
        "20" => mod11(&a, 1, 9, 10, &[2, 3, 4, 5, 6, 7, 8, 9, 3]),
        "21" => method_21(&a),
        "22" => method_22(&a),
        "23" => method_16(&a, 1, 6, 7),
        "24" => method_24(&a),
        "25" => method_25(&a),
        "26" => {
            let shifted = if a[0] == 0 && a[1] == 0 { shift_left_2(&a) } else { a };
            mod11(&shifted, 1, 7, 8, &[2, 3, 4, 5, 6, 7])
        }
        "28" => mod11(&a, 1, 7, 8, &[2, 3, 4, 5, 6, 7, 8]),
        "32" => mod11(&a, 4, 9, 10, &[2, 3, 4, 5, 6, 7]),
        "33" => mod11(&a, 5, 9, 10, &[2, 3, 4, 5, 6]),
        "34" => mod11(&a, 1, 7, 8, &[2, 4, 8, 5, 10, 9, 7]),
        "38" => mod11(&a, 4, 9, 10, &[2, 4, 8, 5, 10, 9]),
        "60" => mod10_cross(&a, 3, 9, 10, &[2, 1]),
        "61" => method_61(&a),
        "63" => a[0] == 0 && mod10_cross(&a, 2, 7, 8, &[2, 1]),
        "68" => method_68(&a),
        "76" => method_76(&a),
        "88" => {
            let start = if a[2] == 9 { 3 } else { 4 };
            mod11(&a, start, 9, 10, &[2, 3, 4, 5, 6, 7, 8])
        }
        "91" => method_91(&a),
        "99" => matches!(account, b"0499999999" | b"0396000000") || mod11(&a, 1, 9, 10, &[2, 3, 4, 5, 6, 7]),
        _ => return None,
    })
}

fn number(a: &[u8; 10]) -> u64 {
    a.iter().fold(0, |n, &d| n * 10 + d as u64)
}

fn shift_left_2(a: &[u8; 10]) -> [u8; 10] {
    std::array::from_fn(|i| if i < 8 { a[i + 2] } else { 0 })
}

/// The weighted sum of positions `start..=end` (1-based), weighted from the right.
fn weighted_sum(a: &[u8; 10], start: usize, end: usize, weights: &[u32], cross: bool) -> u32 {
    (start - 1..end)
        .rev()
        .zip(weights.iter().cycle())
        .map(|(i, &w)| {
            let p = a[i] as u32 * w;
            if cross {
                p / 10 + p % 10
            } else {
                p
            }
        })
        .sum()
}

fn digit_at(a: &[u8; 10], pos: usize) -> u32 {
    a[pos - 1] as u32
}

/// Mod 10, check = 10 − (sum mod 10), 10 → 0.
fn mod10(a: &[u8; 10], start: usize, end: usize, check: usize, weights: &[u32]) -> bool {
    let c = (10 - weighted_sum(a, start, end, weights, false) % 10) % 10;
    c == digit_at(a, check)
}

/// Mod 10 over the cross sums of the products (the Luhn family).
fn mod10_cross(a: &[u8; 10], start: usize, end: usize, check: usize, weights: &[u32]) -> bool {
    let c = (10 - weighted_sum(a, start, end, weights, true) % 10) % 10;
    c == digit_at(a, check)
}

/// Mod 11, check = 11 − remainder; 10 and 11 give 0.
fn mod11(a: &[u8; 10], start: usize, end: usize, check: usize, weights: &[u32]) -> bool {
    let c = 11 - weighted_sum(a, start, end, weights, false) % 11;
    (if c >= 10 { 0 } else { c }) == digit_at(a, check)
}

/// Mod 11 where remainder 0 gives 0 and remainder 1 means the account is invalid.
fn mod11_strict(a: &[u8; 10], start: usize, end: usize, check: usize, weights: &[u32]) -> bool {
    match weighted_sum(a, start, end, weights, false) % 11 {
        0 => digit_at(a, check) == 0,
        1 => false,
        r => 11 - r == digit_at(a, check),
    }
}

fn method_11(a: &[u8; 10]) -> bool {
    let c = 11 - weighted_sum(a, 1, 9, &[2, 3, 4, 5, 6, 7, 8, 9, 10], false) % 11;
    let c = match c {
        10 => 9,
        11 => 0,
        c => c,
    };
    c == digit_at(a, 10)
}

/// Methods 16 and 23: remainder 1 is valid when the digit before the check digit repeats it.
fn method_16(a: &[u8; 10], start: usize, end: usize, check: usize) -> bool {
    let r = weighted_sum(a, start, end, &[2, 3, 4, 5, 6, 7], false) % 11;
    if r == 1 && a[check - 2] == a[check - 1] {
        return true;
    }
    let c = 11 - r;
    (if c >= 10 { 0 } else { c }) == digit_at(a, check)
}

fn method_17(a: &[u8; 10]) -> bool {
    // Positions 2-7 from the left, weights 1,2 alternating, cross sums, minus 1, mod 11.
    let sum: u32 = (1..7)
        .zip([1u32, 2].iter().cycle())
        .map(|(i, &w)| {
            let p = a[i] as u32 * w;
            p / 10 + p % 10
        })
        .sum();
    let r = (sum + 11 - 1) % 11;
    let c = 10 - r;
    (if c >= 10 { 0 } else { c }) == digit_at(a, 8)
}

fn method_21(a: &[u8; 10]) -> bool {
    let mut sum = weighted_sum(a, 1, 9, &[2, 1], true);
    while sum >= 10 {
        sum = sum / 10 + sum % 10;
    }
    (10 - sum) % 10 == digit_at(a, 10)
}

fn method_22(a: &[u8; 10]) -> bool {
    let sum: u32 = (0..9).rev().zip([3u32, 1].iter().cycle()).map(|(i, &w)| (a[i] as u32 * w) % 10).sum();
    (10 - sum % 10) % 10 == digit_at(a, 10)
}

fn method_24(a: &[u8; 10]) -> bool {
    let mut digits: &[u8] = &a[..9];
    if matches!(digits[0], 3..=6) {
        digits = &digits[1..];
    } else if digits[0] == 9 {
        digits = &digits[3..];
    }
    let first = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
    let sum: u32 =
        digits[first..].iter().zip([1u32, 2, 3].iter().cycle()).map(|(&d, &w)| (d as u32 * w + w) % 11).sum();
    sum % 10 == digit_at(a, 10)
}

fn method_25(a: &[u8; 10]) -> bool {
    let r = weighted_sum(a, 2, 9, &[2, 3, 4, 5, 6, 7, 8, 9], false) % 11;
    if r == 1 && !matches!(a[1], 8 | 9) {
        return false;
    }
    let c = 11 - r;
    (if c >= 10 { 0 } else { c }) == digit_at(a, 10)
}

fn method_61(a: &[u8; 10]) -> bool {
    if a[8] == 8 {
        // Positions 1-7 and 9-10 take part; the check digit stays at position 8.
        let sum: u32 = [9usize, 8, 6, 5, 4, 3, 2, 1, 0]
            .iter()
            .filter(|&&i| i != 7)
            .zip([2u32, 1].iter().cycle())
            .map(|(&i, &w)| {
                let p = a[i] as u32 * w;
                p / 10 + p % 10
            })
            .sum();
        return (10 - sum % 10) % 10 == digit_at(a, 8);
    }
    mod10_cross(a, 1, 7, 8, &[2, 1])
}

fn method_68(a: &[u8; 10]) -> bool {
    let n = number(a);
    if (400_000_000..=499_999_999).contains(&n) {
        return true;
    }
    let ten_digits = a[0] != 0;
    if ten_digits {
        return a[3] == 9 && mod10_cross(a, 4, 9, 10, &[2, 1]);
    }
    if mod10_cross(a, 1, 9, 10, &[2, 1]) {
        return true;
    }
    // Second try without the 7th and 8th digits counted from the right (positions 3 and 4).
    let mut b = *a;
    b[2] = 0;
    b[3] = 0;
    mod10_cross(&b, 1, 9, 10, &[2, 1])
}

fn method_76(a: &[u8; 10]) -> bool {
    if !matches!(a[0], 0 | 4 | 6 | 7 | 8 | 9) {
        return false;
    }
    let first = (1..7).find(|&i| a[i] != 0).unwrap_or(7);
    let sum: u32 = (first..7).rev().zip([2u32, 3, 4, 5, 6, 7, 8].iter()).map(|(i, &w)| a[i] as u32 * w).sum();
    let r = sum % 11;
    r < 10 && r == digit_at(a, 8)
}

fn method_91(a: &[u8; 10]) -> bool {
    let variant = |weights: &[u32], positions: std::ops::Range<usize>| {
        let sum: u32 =
            positions.clone().rev().filter(|&i| i != 6).zip(weights.iter()).map(|(i, &w)| a[i] as u32 * w).sum();
        let c = 11 - sum % 11;
        (if c >= 10 { 0 } else { c }) == a[6] as u32
    };
    variant(&[2, 3, 4, 5, 6, 7], 0..6)
        || variant(&[7, 6, 5, 4, 3, 2], 0..6)
        || variant(&[2, 3, 4, 5, 6, 7, 8, 9, 10], 0..10)
        || variant(&[2, 4, 8, 5, 10, 9], 0..6)
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn known_accounts() {
        // Commerzbank, method 13: 0532013000 (the registry's well-known example).
        assert_eq!(check("13", b"0532013000"), Some(true));
        assert_eq!(check("13", b"0532013100"), Some(false), "position 8 is the check digit");
        assert_eq!(check("09", b"0009027378"), Some(true));
        assert_eq!(check("ZZ", b"0532013000"), None);
        // Method 00 (Luhn): 9290701 with check digit... 0092907010? weights from the right.
        assert_eq!(check("00", b"0000000018"), Some(true));
        assert_eq!(check("00", b"0000000017"), Some(false));
    }
}
