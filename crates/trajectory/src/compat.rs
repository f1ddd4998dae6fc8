//! popoto's Python formats, reproduced exactly: the text of `json.dumps(value,
//! sort_keys=True)` that fingerprints hash, `repr(float)` inside it, and the `float(text)`
//! conversion the outcome signal applies to a string.
//!
//! These are compatibility helpers, public so tests and tools can check them against Python;
//! the memory API does not need them.

use serde_json::Value;

/// The decimal digit zeros of Unicode 15.0 outside ASCII (each starts a run of ten
/// consecutive digits), which Python's `float()` reads as `0`-`9`.
const DECIMAL_ZEROS: [u32; 67] = [
    0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
    0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50,
    0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650,
    0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x11F50, 0x16A60, 0x16AC0,
    0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E4F0, 0x1E950,
    0x1FBF0,
];

/// The ASCII digit of a Unicode decimal digit outside ASCII.
fn decimal_digit(c: char) -> Option<char> {
    let code = u32::from(c);
    let at = DECIMAL_ZEROS.partition_point(|&zero| zero <= code);
    let zero = *DECIMAL_ZEROS.get(at.checked_sub(1)?)?;
    let value = code - zero;
    (value < 10).then(|| char::from(b'0' + value as u8))
}

/// Python's `float(text)` for a string: `None` where Python raises `ValueError`.
///
/// As CPython does: every non-ASCII whitespace character becomes a space and every Unicode
/// decimal digit its ASCII digit (anything else outside ASCII fails); an underscore is
/// allowed only between two digits and removed; surrounding whitespace is stripped; what
/// remains is a decimal number (`1`, `1.`, `.5`, `1e-3`, with a sign) or `inf`, `infinity`,
/// `nan` in any case, with a sign.
///
/// ```
/// use agent_memory_trajectory::compat::python_float;
///
/// assert_eq!(python_float(" 1_0 "), Some(10.0));
/// assert_eq!(python_float("\u{661}.\u{665}"), Some(1.5));
/// assert_eq!(python_float("1__0"), None);
/// assert_eq!(python_float("-Infinity"), Some(f64::NEG_INFINITY));
/// ```
pub fn python_float(text: &str) -> Option<f64> {
    let mut ascii = String::with_capacity(text.len());
    for c in text.chars() {
        if u32::from(c) < 127 {
            ascii.push(c);
        } else if c.is_whitespace() {
            ascii.push(' ');
        } else {
            ascii.push(decimal_digit(c)?);
        }
    }
    let bytes = ascii.as_bytes();
    let mut plain = String::with_capacity(ascii.len());
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'_' {
            let before = i.checked_sub(1).map(|j| bytes[j]);
            let after = bytes.get(i + 1);
            if !(before.is_some_and(|b| b.is_ascii_digit())
                && after.is_some_and(u8::is_ascii_digit))
            {
                return None;
            }
        } else {
            plain.push(char::from(b));
        }
    }
    // Python strips the whitespace of C's `isspace`: space, \t, \n, \v, \f and \r.
    let trimmed = plain.trim_matches([' ', '\t', '\n', '\u{b}', '\u{c}', '\r']);
    let (negative, unsigned) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let special = match unsigned.to_ascii_lowercase().as_str() {
        "inf" | "infinity" => Some(f64::INFINITY),
        "nan" => Some(f64::NAN),
        _ => None,
    };
    if let Some(value) = special {
        return Some(if negative { -value } else { value });
    }
    if !is_decimal(unsigned) {
        return None;
    }
    let value: f64 = unsigned.parse().ok()?;
    Some(if negative { -value } else { value })
}

/// `digits [. digits?] | . digits`, then optionally `e|E [sign] digits`.
fn is_decimal(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mantissa_ok && exponent_ok
}

/// Python's `json.dumps(value, sort_keys=True)` text of `value` (default separators,
/// `ensure_ascii`).
pub fn python_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string());
            } else if let Some(f) = n.as_f64() {
                out.push_str(&python_float_repr(f));
            }
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => write_object(out, map.iter()),
    }
}

pub(crate) fn write_object<'a>(
    out: &mut String,
    entries: impl Iterator<Item = (&'a String, &'a Value)>,
) {
    // Python sorts keys by code point; for UTF-8 strings that is byte order.
    let mut entries: Vec<_> = entries.collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    out.push('{');
    for (i, (key, value)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_string(out, key);
        out.push_str(": ");
        write_value(out, value);
    }
    out.push('}');
}

/// A JSON string as Python writes it with `ensure_ascii`: everything outside printable
/// ASCII as `\uXXXX` (UTF-16 surrogate pairs above the BMP).
pub(crate) fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: the shortest text that reads back as `x`, fixed notation for
/// decimal exponents in `-4..16` (`1.0`, `0.0001`), scientific otherwise (`1e+20`, `1e-07`).
pub fn python_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    // Rust's `{:e}` already gives the shortest round-tripping digits.
    let sci = format!("{x:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if (-4..16).contains(&exponent) {
        if exponent >= 0 {
            let int_len = exponent as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.push_str(&"0".repeat(int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.push_str(&"0".repeat((-exponent - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exponent < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exponent.unsigned_abs()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_parses_as_python_does() {
        // Every expected value is what CPython 3.11's `float()` returns (`None`: ValueError).
        let table: &[(&str, Option<f64>)] = &[
            ("1_0", Some(10.0)),
            ("0_5", Some(5.0)),
            ("\u{661}", Some(1.0)),
            ("\u{661}.\u{665}", Some(1.5)),
            (" 0.5 ", Some(0.5)),
            ("\u{a0}0.25\u{2003}", Some(0.25)),
            ("1__0", None),
            ("_1", None),
            ("1_", None),
            ("1_.5", None),
            ("1._5", None),
            ("1e1_0", Some(1e10)),
            ("1_0e5", Some(1e6)),
            ("inf", Some(f64::INFINITY)),
            ("-Infinity", Some(f64::NEG_INFINITY)),
            ("in_f", None),
            ("1.", Some(1.0)),
            (".", None),
            (".5", Some(0.5)),
            ("+.5", Some(0.5)),
            ("-", None),
            ("", None),
            ("1e", None),
            ("1e+", None),
            ("e5", None),
            ("0x10", None),
            ("1.2.3", None),
            ("\u{b}1\u{c}", Some(1.0)),
            ("\u{1c}1", None),
            ("1 0", None),
            ("\u{ff11}\u{ff12}", Some(12.0)),
            ("\u{1d7cf}\u{1d7d0}", Some(12.0)),
            ("1e400", Some(f64::INFINITY)),
            ("-1e400", Some(f64::NEG_INFINITY)),
            ("\u{660}_\u{661}", Some(1.0)),
            ("yes", None),
            ("0.3", Some(0.3)),
            ("\u{ff12}.\u{ff15}e-1", Some(0.25)),
            ("1\u{200b}", None),
        ];
        for &(text, expected) in table {
            assert_eq!(python_float(text), expected, "float({text:?})");
        }
        assert!(python_float("+nan").is_some_and(f64::is_nan));
        assert!(python_float("NaN").is_some_and(f64::is_nan));
        assert!(python_float(" -0.0 ").is_some_and(|x| x == 0.0 && x.is_sign_negative()));
    }

    #[test]
    fn float_repr_matches_python() {
        let table: &[(f64, &str)] = &[
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e20, "1e+20"),
            (1e-7, "1e-07"),
            (-0.0, "-0.0"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123.456, "123.456"),
            (-2.5e-300, "-2.5e-300"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (0.7999999999999999, "0.7999999999999999"),
            (12345678901234567.0, "1.2345678901234568e+16"),
        ];
        for &(x, expected) in table {
            assert_eq!(python_float_repr(x), expected, "repr of {x:e}");
        }
    }
}
