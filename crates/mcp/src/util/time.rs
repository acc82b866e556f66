//! Wall-clock time as the protocol writes it: milliseconds since the epoch, and RFC 3339.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in ms since the epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// `ms` since the epoch as RFC 3339 UTC with milliseconds: `2026-12-01T08:30:00.123Z`.
/// Written digit by digit: the audit log stamps every request with it.
pub fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    let mut out = String::with_capacity(24);
    let fields: [(u64, usize, char); 7] = [
        (year.clamp(0, 9999) as u64, 4, '-'),
        (u64::from(month), 2, '-'),
        (u64::from(day), 2, 'T'),
        (rest / 3600, 2, ':'),
        (rest % 3600 / 60, 2, ':'),
        (rest % 60, 2, '.'),
        (ms % 1000, 3, 'Z'),
    ];
    for (value, width, after) in fields {
        for place in (0..width).rev() {
            let digit = (value / 10u64.pow(place as u32)) % 10;
            out.push(char::from(b'0' + digit as u8));
        }
        out.push(after);
    }
    out
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_times_as_rfc3339() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_796_113_800_123), "2026-12-01T08:30:00.123Z");
        assert_eq!(iso8601(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(iso8601(1_709_251_199_007), "2024-02-29T23:59:59.007Z");
    }
}
