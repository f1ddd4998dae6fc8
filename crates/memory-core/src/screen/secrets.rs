//! Strings shaped like credentials: a memory that keeps one hands it to every later run,
//! and a page that plants one may be testing whether the agent repeats it.
//!
//! Each shape is its vendor's documented prefix and length (AWS `AKIA`/`ASIA` key ids,
//! GitHub's `ghp_`… and `github_pat_` tokens, Slack's `xox?-`, Google's `AIza`), or for the
//! looser ones (OpenAI and Anthropic `sk-` keys, bearer tokens) a long run of the key
//! alphabet that mixes digits and both cases, which identifiers and prose do not. A match
//! must start where a run of letters, digits, `_` and `-` starts and end at a word
//! boundary. The finding names the shape and the offset only:
//! the reason never holds a character of the secret.

use super::data_block::starts_with_ignore_case;
use super::{Finding, FindingKind};

/// The secret-shaped string starting at `bytes[at]`, if one does, and where it ends. Only at
/// the start of a run of key characters: each run is read from its start alone, which keeps
/// the pass linear.
pub(super) fn secret(bytes: &[u8], at: usize) -> Option<(usize, Finding)> {
    if !starts_run(bytes, at) {
        return None;
    }
    let (end, shape) = shape_at(bytes, at)?;
    let finding = Finding::new(
        FindingKind::Secret,
        at,
        format_args!("a string shaped like {shape}"),
    );
    Some((end, finding))
}

/// Whether `bytes[at]` starts a run of key characters (letters, digits, `_`, `-`).
#[inline]
pub(super) fn starts_run(bytes: &[u8], at: usize) -> bool {
    at == 0 || !is_key_byte(bytes[at - 1])
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_upper_alnum(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The end and the name of the credential shape that starts at `bytes[at]`, if one does.
fn shape_at(bytes: &[u8], at: usize) -> Option<(usize, &'static str)> {
    let rest = &bytes[at..];
    let (len, shape) = match rest.first()? {
        b'A' => aws_key_id(rest)
            .map(|len| (len, "an AWS access key id"))
            .or_else(|| google_key(rest).map(|len| (len, "a Google API key")))
            .or_else(|| bearer(rest))?,
        b'a' => bearer(rest)?,
        b'g' => github_token(rest)?,
        b'x' => slack_token(rest).map(|len| (len, "a Slack token"))?,
        b's' => secret_key(rest)?,
        b'e' => jwt(rest).map(|len| (len, "a JSON web token"))?,
        b'-' => private_key(rest).map(|len| (len, "a private key block (PEM header)"))?,
        _ => return None,
    };
    Some((at + len, shape))
}

/// The length of the run of `bytes` that `keep` accepts.
fn run(bytes: &[u8], keep: impl Fn(u8) -> bool) -> usize {
    bytes.iter().take_while(|&&b| keep(b)).count()
}

/// Whether `key` has a digit, an uppercase and a lowercase letter: what random keys have and
/// names, placeholders and kebab-case words do not.
fn mixes_classes(key: &[u8]) -> bool {
    key.iter().any(u8::is_ascii_digit)
        && key.iter().any(u8::is_ascii_uppercase)
        && key.iter().any(u8::is_ascii_lowercase)
}

/// `AKIA` or `ASIA` and 16 uppercase letters or digits.
fn aws_key_id(rest: &[u8]) -> Option<usize> {
    if !(rest.starts_with(b"AKIA") || rest.starts_with(b"ASIA")) {
        return None;
    }
    let body = run(&rest[4..], is_upper_alnum);
    let ends = rest
        .get(4 + body)
        .is_none_or(|&b| !b.is_ascii_alphanumeric());
    (body == 16 && ends).then_some(20)
}

/// `AIza` and 35 characters of the key alphabet.
fn google_key(rest: &[u8]) -> Option<usize> {
    let body = run(rest.strip_prefix(b"AIza")?, is_key_byte);
    (body == 35).then_some(39)
}

/// `ghp_`, `gho_`, `ghu_`, `ghs_` or `ghr_` and at least 36 letters and digits, or
/// `github_pat_` and at least 22 of letters, digits and `_`.
fn github_token(rest: &[u8]) -> Option<(usize, &'static str)> {
    if let Some(body) = rest.strip_prefix(b"github_pat_") {
        let len = run(body, is_word);
        return (len >= 22).then_some((11 + len, "a GitHub fine-grained token"));
    }
    let prefixed = rest.len() > 4
        && rest.starts_with(b"gh")
        && matches!(rest[2], b'p' | b'o' | b'u' | b's' | b'r')
        && rest[3] == b'_';
    if !prefixed {
        return None;
    }
    let len = run(&rest[4..], |b| b.is_ascii_alphanumeric());
    let ends = rest.get(4 + len).is_none_or(|&b| !is_word(b));
    (len >= 36 && ends).then_some((4 + len, "a GitHub token"))
}

/// `xoxb-`, `xoxa-`, `xoxp-`, `xoxr-` or `xoxs-` and at least 10 of letters, digits and `-`,
/// among them a digit.
fn slack_token(rest: &[u8]) -> Option<usize> {
    let prefixed = rest.len() > 5
        && rest.starts_with(b"xox")
        && matches!(rest[3], b'b' | b'a' | b'p' | b'r' | b's')
        && rest[4] == b'-';
    if !prefixed {
        return None;
    }
    let body = &rest[5..];
    let len = run(body, |b| b.is_ascii_alphanumeric() || b == b'-');
    (len >= 10 && body[..len].iter().any(u8::is_ascii_digit)).then_some(5 + len)
}

/// `sk-` and at least 20 characters of the key alphabet, mixing digits and both cases.
fn secret_key(rest: &[u8]) -> Option<(usize, &'static str)> {
    let body = rest.strip_prefix(b"sk-")?;
    let len = run(body, is_key_byte);
    if len < 20 || !mixes_classes(&body[..len]) {
        return None;
    }
    let shape = if body.starts_with(b"ant-") {
        "an Anthropic API key"
    } else {
        "an OpenAI-style API key"
    };
    Some((3 + len, shape))
}

/// Three base64url segments joined by dots, the first two JSON objects (`eyJ`), the first
/// two at least 10 characters long; the signature may be empty (an unsigned token).
fn jwt(rest: &[u8]) -> Option<usize> {
    let segment = |from: usize| run(&rest[from..], is_key_byte);
    if !rest.starts_with(b"eyJ") {
        return None;
    }
    let header = segment(0);
    let payload_at = header + 1;
    let dotted = |at: usize| rest.get(at) == Some(&b'.');
    if header < 10 || !dotted(header) || !rest[payload_at..].starts_with(b"eyJ") {
        return None;
    }
    let payload = segment(payload_at);
    let signature_at = payload_at + payload + 1;
    if payload < 10 || !dotted(payload_at + payload) {
        return None;
    }
    Some(signature_at + segment(signature_at))
}

/// `-----BEGIN `, a label ending in `PRIVATE KEY` (or `PRIVATE KEY BLOCK`), and `-----`.
fn private_key(rest: &[u8]) -> Option<usize> {
    let label_and_rest = rest.strip_prefix(b"-----BEGIN ")?;
    let label_len = run(&label_and_rest[..label_and_rest.len().min(48)], |b| {
        is_upper_alnum(b) || b == b' '
    });
    let label = &label_and_rest[..label_len];
    let closed = label_and_rest[label_len..].starts_with(b"-----");
    let private = label.ends_with(b"PRIVATE KEY") || label.ends_with(b"PRIVATE KEY BLOCK");
    (closed && private).then_some(11 + label_len + 5)
}

/// `Authorization`, then `:` or `=` (with spaces and quotes around), then `Bearer` and a
/// token of at least 20 characters mixing letters and digits.
fn bearer(rest: &[u8]) -> Option<(usize, &'static str)> {
    const HEADER: &[u8] = b"authorization";
    if !starts_with_ignore_case(rest, HEADER) {
        return None;
    }
    let mut at = HEADER.len();
    let separator = run(&rest[at..], |b| matches!(b, b' ' | b'\t' | b'"' | b'\''));
    at += separator;
    if !matches!(rest.get(at), Some(b':' | b'=')) {
        return None;
    }
    at += 1;
    at += run(&rest[at..], |b| matches!(b, b' ' | b'\t' | b'"' | b'\''));
    if !starts_with_ignore_case(&rest[at..], b"bearer") {
        return None;
    }
    at += 6;
    let spaces = run(&rest[at..], |b| b == b' ' || b == b'\t');
    if spaces == 0 {
        return None;
    }
    at += spaces;
    let token = &rest[at..at + run(&rest[at..], is_token_byte)];
    let random = token.iter().any(u8::is_ascii_digit) && token.iter().any(u8::is_ascii_alphabetic);
    (token.len() >= 20 && random).then_some((
        at + token.len(),
        "a bearer token in an authorization header",
    ))
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::tests::reasons;

    fn check(text: &str, expected: &[&str]) {
        let got = reasons(text, None, FindingKind::Secret);
        assert_eq!(got, expected, "text {text:?}");
    }

    #[test]
    fn each_shape_is_named() {
        let cases: &[(&str, &str)] = &[
            ("AKIAIOSFODNN7EXAMPLE", "an AWS access key id"),
            ("ASIAY34FZKBOKMUTVV7A", "an AWS access key id"),
            ("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", "a GitHub token"),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                "a GitHub fine-grained token",
            ),
            ("xoxb-2048-4096-AbCdEf", "a Slack token"),
            (
                "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t",
                "an OpenAI-style API key",
            ),
            (
                "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
                "an Anthropic API key",
            ),
            (
                "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
                "a Google API key",
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----",
                "a private key block (PEM header)",
            ),
            (
                "-----BEGIN PGP PRIVATE KEY BLOCK-----",
                "a private key block (PEM header)",
            ),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig-Nature_1",
                "a JSON web token",
            ),
            (
                "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0In0.",
                "a JSON web token",
            ),
            (
                "Authorization: Bearer 4f9c2a7e1b3d5f60a8c9e0d1",
                "a bearer token in an authorization header",
            ),
            (
                "\"authorization\": \"Bearer abc123def456ghi789jkl0\"",
                "a bearer token in an authorization header",
            ),
        ];
        for (text, shape) in cases {
            // The shape starts after "key: " and any opening quote.
            let at = 5 + text.len() - text.trim_start_matches('"').len();
            check(
                &format!("key: {text}"),
                &[&format!("a string shaped like {shape} at byte {at}")],
            );
        }
    }

    #[test]
    fn near_misses_are_left_alone() {
        let cases = [
            "AKIAIOSFODNN7EXAMPL",                // 15 characters, not 16
            "AKIAIOSFODNN7EXAMPLEX",              // 17
            "xAKIAIOSFODNN7EXAMPLE",              // inside a word
            "AKIAiosfodnn7example",               // lowercase
            "ghp_short",                          // too short
            "sk-spinner-fading-circle-rotate",    // kebab-case
            "task-abcdefghijklmnopqrstuvwxyz123", // `sk-` inside a word
            "sk-ABCDEFGHIJKLMNOPQRSTUVWXYZ",      // one case, no digit
            "xoxb-not-a-token-at-all",            // no digit
            "AIzaShort",
            "-----BEGIN PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----",
            "eyJhbGciOiJIUzI1NiJ9",           // one segment
            "eyJhbGciOiJIUzI1NiJ9.notjson.x", // payload is not an object
            "Authorization: Bearer ${TOKEN}",
            "Authorization: Bearer <your-token-here>",
            "authorization: bearer REDACTED_REDACTED_REDACTED",
            "Authorization header with Bearer token",
        ];
        for text in cases {
            check(text, &[]);
        }
    }

    #[test]
    fn a_reason_never_holds_the_secret() {
        let secrets = [
            "AKIAIOSFODNN7EXAMPLE",
            "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",
            "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig-Nature_1",
            "Authorization: Bearer 4f9c2a7e1b3d5f60a8c9e0d1",
        ];
        for secret in secrets {
            let findings = reasons(secret, None, FindingKind::Secret);
            assert_eq!(findings.len(), 1, "secret {secret}");
            // No four characters in a row of the secret's value (past its public prefix), in
            // any case.
            let value = secret[secret.len() - 16..].to_ascii_lowercase();
            let reason = findings[0].to_ascii_lowercase();
            for window in value.as_bytes().windows(4) {
                let window = String::from_utf8_lossy(window);
                assert!(
                    !reason.contains(window.as_ref()),
                    "{window} of {secret} in {}",
                    findings[0]
                );
            }
        }
    }
}
