//! [`compute_fingerprint`]: popoto's stable 16-hex-character fingerprint of a feature map,
//! byte for byte: SHA-256 over Python's `json.dumps(features, sort_keys=True)` text.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::compat::{python_float_repr, write_object, write_string};
use crate::error::{Error, Result};

/// The most digits Python reads into an integer (`sys.get_int_max_str_digits()`); a longer
/// integer makes `json.loads` fail there, so it is refused here too.
const MAX_INT_DIGITS: usize = 4300;

/// The fingerprint of `features`: the first 16 lowercase hex characters of SHA-256 over the
/// text Python's `json.dumps(features, sort_keys=True)` writes.
///
/// A `serde_json` map holds integers beyond 64 bits as floats, which Python would print
/// otherwise (`1e+20` for `100000000000000000000`); fingerprint JSON text with
/// [`compute_fingerprint_json`] to hash every integer as written.
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
    digest(&text)
}

/// [`compute_fingerprint`] over only the features named in `include` (popoto's
/// `include_fields`); a name missing from `features` is an error.
pub fn compute_fingerprint_of(features: &Map<String, Value>, include: &[&str]) -> Result<String> {
    let mut sub = Map::new();
    for &name in include {
        let value = features
            .get(name)
            .ok_or_else(|| Error::MissingFeature(name.to_owned()))?;
        sub.insert(name.to_owned(), value.clone());
    }
    Ok(compute_fingerprint(&sub))
}

/// The fingerprint of a JSON object given as text, read as Python's `json.loads` reads it:
/// an integer of any size is hashed with all its digits (`10**20` as
/// `100000000000000000000`), a number with a fraction or exponent as a float, a repeated
/// key keeps its last value. A float too large to be finite (`1e400`) is refused, since
/// JSON has no infinity.
///
/// ```
/// use agent_memory_trajectory::compute_fingerprint_json;
///
/// assert_eq!(compute_fingerprint_json(r#"{"a": 1, "b": 2}"#)?, "d8497d9d82770a70");
/// assert!(compute_fingerprint_json("[1]").is_err());
/// # Ok::<(), agent_memory_trajectory::Error>(())
/// ```
pub fn compute_fingerprint_json(features: &str) -> Result<String> {
    let invalid = |reason: String| Error::InvalidFeatures(reason);
    let raw: &RawValue = serde_json::from_str(features)
        .map_err(|e| invalid(format!("features are not JSON: {e}")))?;
    if !raw.get().starts_with('{') {
        return Err(invalid("features must be a JSON object".to_owned()));
    }
    let mut text = String::new();
    write_raw(&mut text, raw, "features").map_err(invalid)?;
    Ok(digest(&text))
}

fn digest(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes the JSON text `raw` as Python's `json.dumps(json.loads(raw), sort_keys=True)`
/// would; `at` names the value in an error.
fn write_raw(out: &mut String, raw: &RawValue, at: &str) -> Result<(), String> {
    let text = raw.get();
    let parse_error = |e: serde_json::Error| format!("{at}: {e}");
    match text.as_bytes().first() {
        Some(b'{') => {
            // Keys sort by code point, which is byte order in UTF-8; a repeated key keeps
            // its last value, as `json.loads` does.
            let members: BTreeMap<String, &RawValue> =
                serde_json::from_str(text).map_err(parse_error)?;
            out.push('{');
            for (i, (key, value)) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(out, key);
                out.push_str(": ");
                write_raw(out, value, &format!("{at}.{key}"))?;
            }
            out.push('}');
        }
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(text).map_err(parse_error)?;
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_raw(out, item, &format!("{at}[{i}]"))?;
            }
            out.push(']');
        }
        Some(b'"') => {
            let s: String = serde_json::from_str(text).map_err(parse_error)?;
            write_string(out, &s);
        }
        Some(b'-' | b'0'..=b'9') => write_number(out, text, at)?,
        // `true`, `false` and `null` are written as JSON writes them.
        _ => out.push_str(text),
    }
    Ok(())
}

/// A JSON number as Python prints what `json.loads` made of it: an integer (no fraction, no
/// exponent) with all its digits, anything else as a float's `repr`.
fn write_number(out: &mut String, text: &str, at: &str) -> Result<(), String> {
    if text.contains(['.', 'e', 'E']) {
        let value: f64 = text
            .parse()
            .map_err(|_| format!("{at}: {text} is not a number"))?;
        if !value.is_finite() {
            return Err(format!("{at}: {text} is too large for a float"));
        }
        out.push_str(&python_float_repr(value));
        return Ok(());
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.len() > MAX_INT_DIGITS {
        return Err(format!(
            "{at}: an integer of {} digits is over Python's limit of {MAX_INT_DIGITS}",
            digits.len()
        ));
    }
    // `-0` reads as the integer 0.
    if text.starts_with('-') && digits != "0" {
        out.push('-');
    }
    out.push_str(digits);
    Ok(())
}
