//! Time as the reference reads and writes it: ISO-8601 timestamps as JavaScript's
//! `toISOString()` writes them (`2026-03-15T10:00:00.000Z`), timestamps read as
//! `Date.parse` reads them, and the `YYYY-MM-DD HH:MM` form of the session history.

use agent_memory_core::Timestamp;
use chrono::{DateTime, SecondsFormat, Utc};

use crate::utf16::utf16_prefix;

/// The largest distance from the epoch a JavaScript date may have, in milliseconds.
const MAX_JS_MILLIS: i64 = 8_640_000_000_000_000;

/// `timestamp` as JavaScript's `Date.prototype.toISOString()` writes it.
pub fn iso(timestamp: Timestamp) -> String {
    DateTime::<Utc>::from_timestamp_millis(timestamp.as_millis())
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
        .unwrap_or_else(|| timestamp.as_millis().to_string())
}

/// The instant `text` names, read as JavaScript's `Date.parse` (V8) reads the ISO forms:
/// `YYYY`, `YYYY-MM` or `YYYY-MM-DD` (or a signed six-digit year), optionally followed by
/// `T`, `t` or a space and `HH:mm`, `HH:mm:ss` or `HH:mm:ss.fraction` (any number of fraction
/// digits, milliseconds kept; `24:00` is the next midnight), then optionally `Z`, `z`,
/// `±HH:mm` or `±HHmm`. A day past the end of its month rolls over into the next (V8 reads
/// `2026-02-30` as March 2). A date alone is UTC midnight; a date and time without a zone
/// is local time in JavaScript, read here as UTC (the reference's own tests run in UTC).
/// Forms only V8's fallback parser takes (month names, slashes, one-digit fields) give
/// `None`, as does anything out of JavaScript's date range.
///
/// ```
/// use agent_memory_browser::compat::parse_date;
/// use agent_memory_core::Timestamp;
///
/// assert_eq!(parse_date("2026-01-01"), Some(Timestamp::from_millis(1_767_225_600_000)));
/// assert_eq!(parse_date("2026-01-01T02:00:00+02:00"), Some(Timestamp::from_millis(1_767_225_600_000)));
/// assert_eq!(parse_date("yesterday"), None);
/// ```
pub fn parse_date(text: &str) -> Option<Timestamp> {
    let mut cursor = Cursor(text.as_bytes());
    let year = match cursor.peek() {
        Some(sign @ (b'+' | b'-')) => {
            cursor.advance(1);
            let digits = cursor.digits(6)?;
            if sign == b'-' && digits == 0 {
                return None;
            }
            if sign == b'-' { -digits } else { digits }
        }
        _ => cursor.digits(4)?,
    };
    let mut month = 1;
    let mut day = 1;
    if cursor.eat(b'-') {
        month = cursor.digits(2)?;
        if cursor.eat(b'-') {
            day = cursor.digits(2)?;
        }
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut millis_of_day = 0;
    if matches!(cursor.peek(), Some(b'T' | b't' | b' ')) {
        cursor.advance(1);
        let hour = cursor.digits(2)?;
        if !cursor.eat(b':') {
            return None;
        }
        let minute = cursor.digits(2)?;
        let mut second = 0;
        let mut millis = 0;
        if cursor.eat(b':') {
            second = cursor.digits(2)?;
            if cursor.eat(b'.') {
                millis = cursor.fraction_millis()?;
            }
        }
        let midnight_after = hour == 24 && minute == 0 && second == 0 && millis == 0;
        if !(hour < 24 || midnight_after) || minute > 59 || second > 59 {
            return None;
        }
        millis_of_day = ((hour * 60 + minute) * 60 + second) * 1000 + millis;
    }
    let offset_minutes = match cursor.peek() {
        Some(b'Z' | b'z') => {
            cursor.advance(1);
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            cursor.advance(1);
            let hours = cursor.digits(2)?;
            cursor.eat(b':');
            let minutes = cursor.digits(2)?;
            if hours > 23 || minutes > 59 {
                return None;
            }
            let offset = hours * 60 + minutes;
            if sign == b'-' { -offset } else { offset }
        }
        _ => 0,
    };
    if !cursor.0.is_empty() {
        return None;
    }
    let days = days_from_civil(year, month) + day - 1;
    let millis = days * 86_400_000 + millis_of_day - offset_minutes * 60_000;
    (millis.abs() <= MAX_JS_MILLIS).then(|| Timestamp::from_millis(millis))
}

/// The bytes of a timestamp not read yet.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.0.first().copied()
    }

    fn advance(&mut self, n: usize) {
        self.0 = &self.0[n.min(self.0.len())..];
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.advance(1);
        }
        found
    }

    /// Exactly `n` ASCII digits as a number.
    fn digits(&mut self, n: usize) -> Option<i64> {
        let taken = self.0.get(..n)?;
        if !taken.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.advance(n);
        Some(
            taken
                .iter()
                .fold(0, |acc, d| acc * 10 + i64::from(d - b'0')),
        )
    }

    /// One or more fraction digits, as whole milliseconds (digits past the third ignored).
    fn fraction_millis(&mut self) -> Option<i64> {
        let len = self.0.iter().take_while(|b| b.is_ascii_digit()).count();
        if len == 0 {
            return None;
        }
        let mut millis = 0;
        for i in 0..3 {
            millis = millis * 10
                + self
                    .0
                    .get(i)
                    .filter(|_| i < len)
                    .map_or(0, |d| i64::from(d - b'0'));
        }
        self.advance(len);
        Some(millis)
    }
}

/// Days from 1970-01-01 to the first day of `month` of `year` (proleptic Gregorian).
fn days_from_civil(year: i64, month: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD HH:MM` for the session history, from the timestamp's own text as the
/// reference shows it (`slice(0, 16)` with the first `T` replaced by a space), never
/// converted: `2025-12-28T14:00:00.000+02:00` shows `2025-12-28 14:00`.
pub fn minute(text: &str) -> String {
    utf16_prefix(text, 16).replacen('T', " ", 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trip_and_minutes() {
        let t = Timestamp::from_millis(1_767_225_600_000);
        assert_eq!(iso(t), "2026-01-01T00:00:00.000Z");
        assert_eq!(parse_date("2026-01-01T00:00:00.000Z"), Some(t));
        assert_eq!(parse_date("yesterday"), None);
        assert_eq!(minute("2026-03-15T12:00:59.999Z"), "2026-03-15 12:00");
        // The old display converted to UTC: 12:00.
        assert_eq!(minute("2026-03-15T14:00:00+02:00"), "2026-03-15 14:00");
        assert_eq!(minute("soon"), "soon");
        assert_eq!(minute("2026-03-15T1😀:00Z"), "2026-03-15 1😀:0");
        assert_eq!(minute("2026-03-15T10:0😀"), "2026-03-15 10:0\u{fffd}");
    }

    #[test]
    fn dates_parse_as_javascript_does() {
        // Every expected value is what `Date.parse` returns in Node 18 with TZ=UTC (`None`:
        // NaN); the old parser took only RFC 3339 date-times.
        let table: &[(&str, Option<i64>)] = &[
            ("2026-03-15", Some(1773532800000)),
            ("2026-03-15T10:00", Some(1773568800000)),
            ("2026-03-15T10:00:00", Some(1773568800000)),
            ("2026-03-15T10:00:00.123456Z", Some(1773568800123)),
            ("2026-03-15 10:00:00", Some(1773568800000)),
            ("2026-03-15T10:00:00+0200", Some(1773561600000)),
            ("2026-02-30", Some(1772409600000)),
            ("2026-03", Some(1772323200000)),
            ("2026", Some(1767225600000)),
            ("+002026-03-15T00:00:00Z", Some(1773532800000)),
            ("2026-03-15T24:00:00Z", Some(1773619200000)),
            ("2026-03-15T24:00:01Z", None),
            ("2026-03-15t10:00:00z", Some(1773568800000)),
            ("2026-03-15T10:00:00.1Z", Some(1773568800100)),
            ("2026-03-15T10Z", None),
            ("2025-12-28T14:00:00.000+02:00", Some(1766923200000)),
            ("yesterday", None),
            ("", None),
            ("2026-03-15T10:00:00.000Z ", None),
            ("2026-03-15T25:00:00Z", None),
            ("2026-13-01", None),
            ("2026-00-10", None),
            ("-000001-01-01T00:00:00Z", Some(-62198755200000)),
            ("-000000-01-01T00:00:00Z", None),
            ("2026-03-15T10:00:60Z", None),
            ("2026-03-15T10:00:00.Z", None),
            ("20260315", None),
            ("2026-03-15T10:00:00-05:30", Some(1773588600000)),
            ("2026-02-31", Some(1772496000000)),
            ("2026-04-31", Some(1777593600000)),
            ("2026-03-15T10:00Z", Some(1773568800000)),
            ("2026-03-15T10:00:00.999999999Z", Some(1773568800999)),
            ("+275760-09-13T00:00:00Z", Some(8640000000000000)),
            ("+275760-09-13T00:00:00.001Z", None),
            ("2026-03-15T1:00:00Z", None),
            ("2026-03-15T10:00:00+02", None),
            ("2026-03-15T10:00:00+2:00", None),
            ("2026-03-15Z", Some(1773532800000)),
            ("2026-03-15T10:00:00 Z", None),
            ("2026-03-32", None),
            ("2026-03-00", None),
            ("2026-03-15T10:60:00Z", None),
            ("2026-03-15T10:00:00.000+14:00", Some(1773518400000)),
            ("2026-03-15T10:00:00.000+24:00", None),
            ("2026-03-15T10:00:00.000+23:59", Some(1773482460000)),
            ("2026-03-15T10:00:00.000+23:60", None),
        ];
        for &(text, expected) in table {
            assert_eq!(
                parse_date(text),
                expected.map(Timestamp::from_millis),
                "Date.parse({text:?})"
            );
        }
    }
}
