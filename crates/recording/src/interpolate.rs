//! Interpolation: resolving `${key}` and `{{key}}` in every string of a JSON value.
//!
//! The `${…}` pass runs first, then the `{{…}}` pass over its result, so text the first pass
//! inserted is seen by the second. Within one pass an inserted value is never rescanned, so
//! a value holding `${x}` is inserted literally. `memory.x` reads the key `x`, and a key
//! literally named `memory.x` only when there is no `x` (Trailblaze's order). Keys are not
//! trimmed and cannot contain `}`. A token that never closes, or has an empty key, is left as
//! it is.
//!
//! `args.x` reads the trail argument `x` (and `args.x.field` a field of an object argument),
//! never memory. A string that is exactly one `args.` token becomes the argument's own JSON
//! value, so `"{{args.retries}}"` on an integer argument is the number `3`; inside a longer
//! string the value is written as text. A token naming an array or object argument is left
//! as written (Trailblaze defers their substitution), and an `args.` token that is not a
//! dotted path is an error: tokens are never expressions.

use std::borrow::Cow;

use serde_json::Value;

use crate::args::{ARGS_PREFIX, is_dotted_path, malformed, scalar_text};
use crate::error::{Error, MissingKey, Result};
use crate::memory::Lookup;
use crate::path::{JsonPath, MAX_DEPTH};

/// What to do with a token whose key is not in memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MissingKeys {
    /// Leave the token as it is (the default, as Trailblaze does).
    #[default]
    Leave,
    /// Replace the token with the empty string.
    Empty,
    /// Fail, naming every missing key and its JSON path.
    Fail,
}

/// Resolves every memory token in every string of `value`.
///
/// Returns the input borrowed when nothing changes. Numbers, booleans and null pass
/// through; object keys are not interpolated.
///
/// ```
/// use std::collections::BTreeMap;
/// use agent_memory_recording::{interpolate, MissingKeys};
/// use serde_json::json;
///
/// let memory = BTreeMap::from([("merchant_email".to_owned(), "a@example.com".to_owned())]);
/// let call = json!({"email": "${merchant_email}", "retries": 3, "note": "{{memory.merchant_email}}"});
/// let resolved = interpolate(&call, &memory, MissingKeys::Fail)?;
/// assert_eq!(*resolved, json!({"email": "a@example.com", "retries": 3, "note": "a@example.com"}));
///
/// let missing = interpolate(&json!({"x": ["${nope}"]}), &memory, MissingKeys::Fail).unwrap_err();
/// assert_eq!(missing.to_string(), r#"unresolved memory keys: "nope" at $.x[0]"#);
/// # Ok::<(), agent_memory_recording::Error>(())
/// ```
pub fn interpolate<'v, L: Lookup + ?Sized>(
    value: &'v Value,
    memory: &L,
    policy: MissingKeys,
) -> Result<Cow<'v, Value>> {
    interpolate_at(value, memory, policy, JsonPath::default())
}

pub(crate) fn interpolate_at<'v, L: Lookup + ?Sized>(
    value: &'v Value,
    memory: &L,
    policy: MissingKeys,
    mut path: JsonPath<'v>,
) -> Result<Cow<'v, Value>> {
    let mut missing = Vec::new();
    let changed = walk(value, memory, policy, &mut path, &mut missing)?;
    if policy == MissingKeys::Fail && !missing.is_empty() {
        return Err(Error::Unresolved { missing });
    }
    Ok(changed.map_or(Cow::Borrowed(value), Cow::Owned))
}

/// `Some(new)` when something inside `value` changed.
fn walk<'v, L: Lookup + ?Sized>(
    value: &'v Value,
    memory: &L,
    policy: MissingKeys,
    path: &mut JsonPath<'v>,
    missing: &mut Vec<MissingKey>,
) -> Result<Option<Value>> {
    if path.depth() > MAX_DEPTH {
        return Err(path.too_deep());
    }
    match value {
        Value::String(text) => {
            if let Some(native) = whole_arg(text, memory, path)? {
                return Ok(Some(native));
            }
            let mut report = |key: &str| missing.push(MissingKey::new(key, path.render()));
            let resolved =
                interpolate_str(text, memory, policy, &mut report).map_err(|e| at_path(e, path))?;
            Ok(match resolved {
                Cow::Borrowed(_) => None,
                Cow::Owned(new) => Some(Value::String(new)),
            })
        }
        Value::Array(items) => {
            let mut out: Option<Vec<Value>> = None;
            for (i, item) in items.iter().enumerate() {
                path.push_index(i);
                let changed = walk(item, memory, policy, path, missing)?;
                path.pop();
                if let Some(new) = changed {
                    out.get_or_insert_with(|| items.clone())[i] = new;
                }
            }
            Ok(out.map(Value::Array))
        }
        Value::Object(map) => {
            let mut out: Option<serde_json::Map<String, Value>> = None;
            for (key, item) in map {
                path.push_key(key);
                let changed = walk(item, memory, policy, path, missing)?;
                path.pop();
                if let Some(new) = changed {
                    out.get_or_insert_with(|| map.clone())
                        .insert(key.clone(), new);
                }
            }
            Ok(out.map(Value::Object))
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(None),
    }
}

/// A malformed-token error found in a string, placed at the string's JSON path.
fn at_path(error: Error, path: &JsonPath<'_>) -> Error {
    match error {
        Error::MalformedToken { token, .. } => malformed(&token, path.render()),
        other => other,
    }
}

/// The body of `text` when it is exactly one `args.` token: `{{args.x}}` or `${args.x}`.
pub(crate) fn whole_arg_body(text: &str) -> Option<&str> {
    let body = text
        .strip_prefix("{{")
        .and_then(|t| t.strip_suffix("}}"))
        .or_else(|| text.strip_prefix("${").and_then(|t| t.strip_suffix('}')))?;
    (body.starts_with(ARGS_PREFIX) && !body.contains('}')).then_some(body)
}

/// The argument's own value when `text` is exactly one `args.` token naming a string,
/// number or boolean.
fn whole_arg<L: Lookup + ?Sized>(
    text: &str,
    memory: &L,
    path: &JsonPath<'_>,
) -> Result<Option<Value>> {
    let Some(body) = whole_arg_body(text) else {
        return Ok(None);
    };
    if !is_dotted_path(body) {
        return Err(malformed(body, path.render()));
    }
    let found = memory
        .args()
        .and_then(|args| args.lookup(&body[ARGS_PREFIX.len()..]));
    Ok(found.filter(|v| scalar_text(v).is_some()).cloned())
}

/// Resolves the tokens of one string: the `${…}` pass, then the `{{…}}` pass. `on_missing`
/// hears each key that memory lacks (once per occurrence, in order). Fails only on an
/// `args.` token that is not a dotted path.
pub fn interpolate_str<'t, L: Lookup + ?Sized>(
    text: &'t str,
    memory: &L,
    policy: MissingKeys,
    on_missing: &mut dyn FnMut(&str),
) -> Result<Cow<'t, str>> {
    let first = pass(text, "${", "}", memory, policy, on_missing)?;
    Ok(match first {
        Cow::Borrowed(text) => pass(text, "{{", "}}", memory, policy, on_missing)?,
        Cow::Owned(text) => match pass(&text, "{{", "}}", memory, policy, on_missing)? {
            Cow::Borrowed(_) => Cow::Owned(text),
            Cow::Owned(again) => Cow::Owned(again),
        },
    })
}

/// What a token's key reads.
pub(crate) enum Resolution<'m> {
    /// This text.
    Text(Cow<'m, str>),
    /// An array or object argument: the token stays as written.
    Deferred,
    /// Nothing.
    Missing,
}

/// What `key` reads: an `args.` path in the arguments, anything else in memory (`memory.x`
/// reads `x` first, then a key literally named `memory.x`). Fails on a malformed `args.`
/// token.
pub(crate) fn resolve<'m, L: Lookup + ?Sized>(memory: &'m L, key: &str) -> Result<Resolution<'m>> {
    if let Some(arg_path) = key.strip_prefix(ARGS_PREFIX) {
        if !is_dotted_path(key) {
            return Err(malformed(key, "$".to_owned()));
        }
        return Ok(match memory.args().and_then(|args| args.lookup(arg_path)) {
            Some(value) => match scalar_text(value) {
                Some(text) => Resolution::Text(Cow::Owned(text)),
                None => Resolution::Deferred,
            },
            None => Resolution::Missing,
        });
    }
    let found = match key.strip_prefix("memory.") {
        Some(plain) => memory.lookup(plain).or_else(|| memory.lookup(key)),
        None => memory.lookup(key),
    };
    Ok(found.map_or(Resolution::Missing, |v| Resolution::Text(Cow::Borrowed(v))))
}

fn pass<'t, L: Lookup + ?Sized>(
    text: &'t str,
    open: &str,
    close: &str,
    memory: &L,
    policy: MissingKeys,
    on_missing: &mut dyn FnMut(&str),
) -> Result<Cow<'t, str>> {
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut at = 0;
    while let Some(found) = text[at..].find(open) {
        let start = at + found;
        let key_start = start + open.len();
        // A key cannot contain `}`: the first `}` ends it. No `}` at all: left literal.
        let Some(key_len) = text[key_start..].find('}') else {
            break;
        };
        let key_end = key_start + key_len;
        if !text[key_end..].starts_with(close) {
            // Every opener before this `}` meets the same lone `}` first: none of them is a
            // token, so the scan resumes after it (rescanning them would be quadratic).
            at = key_end + 1;
            continue;
        }
        let token_end = key_end + close.len();
        let key = &text[key_start..key_end];
        at = token_end;
        if key.is_empty() {
            continue;
        }
        let replacement = match resolve(memory, key)? {
            Resolution::Text(value) => value,
            Resolution::Deferred => continue,
            Resolution::Missing => {
                on_missing(key);
                match policy {
                    MissingKeys::Empty => Cow::Borrowed(""),
                    MissingKeys::Leave | MissingKeys::Fail => continue,
                }
            }
        };
        let buffer = out.get_or_insert_with(|| String::with_capacity(text.len()));
        buffer.push_str(&text[copied..start]);
        buffer.push_str(&replacement);
        copied = token_end;
    }
    Ok(match out {
        None => Cow::Borrowed(text),
        Some(mut buffer) => {
            buffer.push_str(&text[copied..]);
            Cow::Owned(buffer)
        }
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn memory(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// Interpolates `text` under `pairs` with `policy` and compares with `expected`, and the
    /// missing keys reported with `missing`.
    fn check(
        pairs: &[(&str, &str)],
        policy: MissingKeys,
        text: &str,
        expected: &str,
        missing: &[&str],
    ) {
        let memory = memory(pairs);
        let mut heard = Vec::new();
        let got = interpolate_str(text, &memory, policy, &mut |k| heard.push(k.to_owned()))
            .expect("no args token");
        assert_eq!(got, expected, "interpolating {text:?}");
        assert_eq!(heard, missing, "missing keys of {text:?}");
    }

    #[test]
    fn token_rules() {
        let leave = MissingKeys::Leave;
        let m = [
            ("a", "AAA"),
            ("b", "${a}"),
            ("c", "{{a}}"),
            ("memory.d", "plain-d"),
            ("memory.e", "literal-e"),
            ("d", "D"),
            (" a ", "spaced"),
        ];
        check(&m, leave, "x ${a} y {{a}} z", "x AAA y AAA z", &[]);
        check(&m, leave, "no tokens", "no tokens", &[]);
        // Single pass: a `${…}` value is inserted literally and not rescanned.
        check(&m, leave, "${b}", "${a}", &[]);
        // The `{{…}}` pass sees what the `${…}` pass inserted.
        check(&m, leave, "${c}", "AAA", &[]);
        // `memory.x` reads `x` first, then a key literally named `memory.x`.
        check(&m, leave, "${memory.a}", "AAA", &[]);
        check(&m, leave, "${memory.d}", "D", &[]);
        check(&m, leave, "${memory.e}", "literal-e", &[]);
        // Keys are not trimmed.
        check(&m, leave, "${ a }", "spaced", &[]);
        check(&m, leave, "${  a  }", "${  a  }", &["  a  "]);
        // Unclosed and empty tokens stay literal.
        check(&m, leave, "${a", "${a", &[]);
        check(&m, leave, "{{a}", "{{a}", &[]);
        check(&m, leave, "${}", "${}", &[]);
        check(&m, leave, "${a}${a", "AAA${a", &[]);
        check(&m, leave, "{{a} {{a}}", "{{a} AAA", &[]);
        check(&m, leave, "$${a}}", "$AAA}", &[]);
    }

    #[test]
    fn missing_key_policies() {
        let m = [("a", "AAA")];
        check(&m, MissingKeys::Leave, "${x}-${a}", "${x}-AAA", &["x"]);
        check(
            &m,
            MissingKeys::Empty,
            "${x}-${a}-{{y}}",
            "-AAA-",
            &["x", "y"],
        );
        check(&m, MissingKeys::Fail, "${x}", "${x}", &["x"]);
    }

    #[test]
    fn unchanged_values_are_borrowed() {
        let m = memory(&[("a", "AAA")]);
        let value = serde_json::json!({"k": ["plain", 1, null, {"n": true}], "s": "${missing}"});
        let got = interpolate(&value, &m, MissingKeys::Leave).expect("interpolate");
        assert!(matches!(got, Cow::Borrowed(_)));
    }

    #[test]
    fn fail_names_every_missing_key_with_its_path() {
        let m = memory(&[]);
        let value = serde_json::json!({"a": "${x}", "b": [{"c d": "{{y}} ${z}"}]});
        let err = interpolate(&value, &m, MissingKeys::Fail).expect_err("missing keys");
        assert_eq!(
            err.to_string(),
            r#"unresolved memory keys: "x" at $.a, "z" at $.b[0]["c d"], "y" at $.b[0]["c d"]"#
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_an_overflow() {
        let mut value = Value::String("${a}".to_owned());
        for _ in 0..10_000 {
            value = Value::Array(vec![value]);
        }
        let err =
            interpolate(&value, &memory(&[("a", "x")]), MissingKeys::Leave).expect_err("too deep");
        assert!(
            matches!(
                err,
                Error::TooDeep {
                    limit: MAX_DEPTH,
                    ..
                }
            ),
            "{err}"
        );
        // Dropping a deep value recurses too; take it apart iteratively.
        let mut stack = vec![value];
        while let Some(v) = stack.pop() {
            if let Value::Array(items) = v {
                stack.extend(items);
            }
        }
    }
}
