//! Quoting for YAML 1.1 readers.
//!
//! `serde_yaml` quotes every string that a YAML 1.2 reader would read as something else
//! (`'true'`, `'007'`, `'1e3'`), but YAML 1.1 readers, still the default in PyYAML and
//! SnakeYAML 1.x (which Trailblaze's tooling meets), resolve more plain scalars: `8:00` and
//! `7:30` are the sexagesimal integers 480 and 450, `yes`/`no`/`on`/`off`/`y`/`n` are booleans,
//! `1_000` is a thousand, `2001-12-14` is a date, `=` and `<<` are special keys. A trail
//! written with those plain comes back changed. [`requote`] takes the text `serde_yaml`
//! wrote and single-quotes every plain scalar (key or value) that any YAML 1.1 or 1.2 reader
//! would not read back as the same string; nothing else changes.
//!
//! It reads the block style `serde_yaml` emits, line by line: indentation, `- ` sequence
//! markers, `key: value` with a plain or quoted key, and block scalars (`|`, `>`), whose
//! content lines it leaves alone. A plain scalar never holds `": "` or `" #"` there (the
//! emitter quotes those), so the first `": "` ends a plain key.

use std::sync::LazyLock;

use regex::Regex;

/// The implicit types of YAML 1.1 as PyYAML, SnakeYAML 1.x and the YAML 1.1 type
/// repository resolve them (their union): booleans, null, integers, floats, timestamps, the
/// merge and value keys.
static IMPLICIT: LazyLock<Regex> = LazyLock::new(|| {
    let patterns = [
        // Booleans (the type repository's y/n included; PyYAML and SnakeYAML leave those out).
        r"y|Y|n|N|yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
        // Null.
        r"~|null|Null|NULL",
        // Integers: binary, octal, decimal, hexadecimal, sexagesimal; `_` as a separator.
        r"[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+",
        r"[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
        // Floats: PyYAML's, SnakeYAML's (no dot needed, optional exponent sign) and the
        // sexagesimal form, infinities and NaN.
        r"[-+]?(?:[0-9][0-9_]*)?\.[0-9._]*(?:[eE][-+]?[0-9]+)?",
        r"[-+]?(?:\.[0-9]+|[0-9_]+(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?",
        r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*",
        r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
        // Timestamps.
        r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?",
        // The merge and value keys.
        r"<<|=",
    ];
    let joined = patterns.join("|");
    Regex::new(&format!("^(?:{joined})$")).expect("the implicit-type patterns are valid")
});

/// Whether a plain scalar `text` would be read as something other than this string by a
/// YAML 1.1 reader.
pub(crate) fn is_ambiguous(text: &str) -> bool {
    text.is_empty() || IMPLICIT.is_match(text)
}

/// `text` as a single-quoted scalar.
fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Whether a YAML 1.2 reader (`serde_yaml`'s) reads the plain scalar `text` as a string: a
/// plain `0` or `true` the emitter wrote is a number or a boolean for every reader, and
/// stays as it is.
fn is_string_in_yaml_1_2(text: &str) -> bool {
    matches!(
        serde_yaml::from_str::<serde_yaml::Value>(text),
        Ok(serde_yaml::Value::String(_))
    )
}

/// The plain scalar `text` as written back: quoted when it is a string that a YAML 1.1
/// reader would read as another type.
fn scalar(text: &str) -> String {
    if is_plain(text) && is_ambiguous(text) && is_string_in_yaml_1_2(text) {
        single_quoted(text)
    } else {
        text.to_owned()
    }
}

/// Whether `text` (a whole key or value as emitted) is a plain scalar rather than a quoted
/// one, a block scalar header, a flow collection, an alias, an anchor or a tag.
fn is_plain(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with([
            '\'', '"', '|', '>', '[', '{', '&', '*', '!', '%', '@', '`', '#',
        ])
}

/// The byte length of the quoted scalar at the start of `text`, if it starts with one.
fn quoted_len(text: &str) -> Option<usize> {
    let quote = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let bytes = text.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == '"' => i += 2,
            b'\'' if quote == '\'' && bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b if b == quote as u8 => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Whether `value` (what follows `key:` or `- `) opens a block scalar.
fn opens_block_scalar(value: &str) -> bool {
    value.starts_with('|') || value.starts_with('>')
}

/// `text` as `serde_yaml` wrote it, with every ambiguous plain scalar single-quoted.
pub(crate) fn requote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    // While inside a block scalar: the indentation its header line had.
    let mut block: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches('\n');
        let indent = content.len() - content.trim_start_matches(' ').len();
        if let Some(header) = block {
            if content.trim().is_empty() || indent > header {
                out.push_str(line);
                continue;
            }
            block = None;
        }
        let (rewritten, opens) = requote_line(content);
        if opens {
            block = Some(indent);
        }
        out.push_str(&rewritten);
        if line.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// One line, and whether it opens a block scalar.
fn requote_line(line: &str) -> (String, bool) {
    let mut rest = line;
    let mut out = String::with_capacity(line.len() + 4);
    // Indentation and sequence markers.
    loop {
        let trimmed = rest.trim_start_matches(' ');
        out.push_str(&rest[..rest.len() - trimmed.len()]);
        rest = trimmed;
        if let Some(after) = rest.strip_prefix("- ") {
            out.push_str("- ");
            rest = after;
        } else if rest == "-" {
            out.push('-');
            return (out, false);
        } else {
            break;
        }
    }
    if rest.is_empty() || rest.starts_with('#') || rest == "---" || rest == "..." {
        out.push_str(rest);
        return (out, false);
    }
    // A key: quoted (its end found by its quotes), or plain up to the first ": " or a final
    // ':'. Anything else is a lone value.
    let (key, value) = match quoted_len(rest) {
        Some(end) if rest[end..].starts_with(": ") => (Some(&rest[..end]), Some(&rest[end + 2..])),
        Some(end) if &rest[end..] == ":" => (Some(&rest[..end]), None),
        Some(_) => (None, Some(rest)),
        None => match rest.find(": ") {
            Some(at) => (Some(&rest[..at]), Some(&rest[at + 2..])),
            None => match rest.strip_suffix(':') {
                Some(key) if is_plain(rest) => (Some(key), None),
                _ => (None, Some(rest)),
            },
        },
    };
    if let Some(key) = key {
        out.push_str(&scalar(key));
        out.push(':');
        if value.is_some() {
            out.push(' ');
        }
    }
    let Some(value) = value else {
        return (out, false);
    };
    if opens_block_scalar(value) {
        out.push_str(value);
        return (out, true);
    }
    out.push_str(&scalar(value));
    (out, false)
}

#[cfg(test)]
mod tests {
    use super::{is_ambiguous, requote};

    #[test]
    fn yaml_1_1_types_are_ambiguous_and_plain_words_are_not() {
        for text in [
            "8:00",
            "7:30",
            "1:30:00.5",
            "yes",
            "No",
            "OFF",
            "y",
            "N",
            "~",
            "1_000",
            "0b101",
            "017",
            "0x1F",
            "+12",
            ".5",
            "1e3",
            "1.",
            "2001-12-14",
            "2001-12-14 21:59:43.10 -5",
            "=",
            "<<",
            ".inf",
            "-.Inf",
            ".NaN",
            "",
        ] {
            assert!(is_ambiguous(text), "{text:?}");
        }
        for text in [
            "Jane Doe",
            "8:00 pm",
            "yes please",
            "x",
            "on-call",
            "1.2.3a",
            "${merchant_email}",
            "v1",
            "2001-12",
            "a=b",
            "9999zq",
        ] {
            assert!(!is_ambiguous(text), "{text:?}");
        }
    }

    #[test]
    fn keys_and_values_are_quoted_block_scalars_are_left_alone() {
        let emitted = "- config:\n    id: t\n    n: 0\n    f: 1.5\n    b: true\n- tools:\n  - assertVisible:\n      textRegex: 8:00\n      yes: on\n  - - 7:30\n    - plain\n- prompts:\n  - step: |-\n      8:00\n      yes\n    text: done\n";
        let expected = "- config:\n    id: t\n    'n': 0\n    f: 1.5\n    b: true\n- tools:\n  - assertVisible:\n      textRegex: '8:00'\n      'yes': 'on'\n  - - '7:30'\n    - plain\n- prompts:\n  - step: |-\n      8:00\n      yes\n    text: done\n";
        assert_eq!(requote(emitted), expected);
        // Already quoted scalars stay as they are, quotes inside them included.
        let quoted = "a: 'it''s: 8:00'\nb: \"x: \\\"y\\\"\"\n'c: d': e\n";
        assert_eq!(requote(quoted), quoted);
    }
}
