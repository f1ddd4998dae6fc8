//! [`compute_fingerprint`]: popoto's stable 16-hex-character fingerprint of a feature map,
//! byte for byte: SHA-256 over Python's `json.dumps(features, sort_keys=True)` text.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::Error;

/// The fingerprint of `features`: the first 16 lowercase hex characters of SHA-256 over the
/// text Python's `json.dumps(features, sort_keys=True)` writes.
///
/// ```
/// use agent_memory_trajectory::compute_fingerprint;
///
/// let features = serde_json::json!({"task": "deploy", "env": "staging"});
/// assert_eq!(compute_fingerprint(features.as_object().unwrap()), "86e6b7501eb99c29");
/// ```
pub fn compute_fingerprint(features: &Map<String, Value>) -> String {
    let mut text = String::new();
    write_object(&mut text, features.iter());
    let digest = Sha256::digest(text.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// [`compute_fingerprint`] over only the features named in `include` (popoto's
/// `include_fields`); a name missing from `features` is an error.
pub fn compute_fingerprint_of(
    features: &Map<String, Value>,
    include: &[&str],
) -> Result<String, Error> {
    let mut sub = Map::new();
    for &name in include {
        let value = features
            .get(name)
            .ok_or_else(|| Error::MissingFeature(name.to_owned()))?;
        sub.insert(name.to_owned(), value.clone());
    }
    Ok(compute_fingerprint(&sub))
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

fn write_object<'a>(out: &mut String, entries: impl Iterator<Item = (&'a String, &'a Value)>) {
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
fn write_string(out: &mut String, s: &str) {
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
