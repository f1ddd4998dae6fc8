//! [`MemoryPath`]: a path the model gives (`/memories/projects/plan.md`), confined to
//! `/memories` before any store sees it.
//!
//! The memory tool's documentation asks every implementation to refuse traversal: `..`,
//! `..\`, percent-encoded sequences (`%2e%2e%2f`) and anything not under `/memories`. Paths
//! here are never resolved against a file system; they are checked as text and the rest is
//! a [`NotePath`], so no spelling reaches outside the scope's tree.

use std::fmt;

use agent_memory_core::excerpt::Excerpt;
use agent_memory_core::store::notes::{MAX_NOTE_PATH_BYTES, NotePath};

use crate::error::{Error, ErrorKind, Result};
use crate::wording::Wording;

/// The root every path lies in.
pub const ROOT: &str = "/memories";

/// A checked path: the root itself, or a note path below it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPath(Option<NotePath>);

/// The most characters of a refused path its error quotes.
const SHOWN_PATH_CHARS: usize = 80;

/// The longest path accepted, in bytes: a note path below `/memories/`.
pub const MAX_PATH_BYTES: usize = MAX_NOTE_PATH_BYTES + ROOT.len() + 1;

fn invalid(raw: &str, reason: &str) -> Error {
    // The input is shown escaped and cut, so a control character or a huge path never
    // reaches a terminal or a prompt as it is.
    let shown = Excerpt::quoted(raw).within(SHOWN_PATH_CHARS);
    Error::command(
        ErrorKind::InvalidInput,
        shown.kept(),
        format!("invalid path {shown}: {reason}"),
    )
}

/// A refusal in `wording`'s own text when it has one (`sdk_text` makes it from the path as
/// shown: cut, and free of control characters since those are refused first), else the
/// documented one.
fn refused(raw: &str, reason: &str, sdk_text: impl FnOnce(&str) -> Option<String>) -> Error {
    let shown = Excerpt::plain(raw).within(SHOWN_PATH_CHARS);
    match sdk_text(&shown.to_string()) {
        Some(message) => Error::command(ErrorKind::InvalidInput, shown.kept(), message),
        None => invalid(raw, reason),
    }
}

/// The segments of `rest` (the path below `/memories/`) with `.` and empty ones dropped
/// and each `..` taking back the one before it, as a file system resolves them; `None`
/// when a `..` would climb out of the root.
fn resolved(rest: &str) -> Option<Vec<&str>> {
    let mut kept: Vec<&str> = Vec::new();
    for segment in rest.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                kept.pop()?;
            }
            name => kept.push(name),
        }
    }
    Some(kept)
}

/// Whether `raw` holds a `%` followed by two hex digits.
fn percent_encoded(raw: &str) -> bool {
    raw.as_bytes()
        .windows(3)
        .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
}

impl MemoryPath {
    /// Checks `raw` (`/memories`, `/memories/`, `/memories/a/b.md`) and keeps its note path.
    pub fn parse(raw: &str) -> Result<Self> {
        Self::parse_as(raw, Wording::Documented)
    }

    /// [`MemoryPath::parse`] as `wording` reads a path: the SDKs resolve `.`, `..` and
    /// empty segments (as text, never on a file system) where the documented texts refuse
    /// them, and word the refusal of a path outside `/memories` their own way.
    pub fn parse_as(raw: &str, wording: Wording) -> Result<Self> {
        if raw.len() > MAX_PATH_BYTES {
            return Err(invalid(
                raw,
                &format!(
                    "{} bytes, over the limit of {MAX_PATH_BYTES} bytes",
                    raw.len()
                ),
            ));
        }
        if raw.contains('\0') {
            return Err(invalid(raw, "must not contain NUL characters"));
        }
        if raw.chars().any(char::is_control) {
            return Err(invalid(raw, "must not contain control characters"));
        }
        if raw.contains('\\') {
            return Err(invalid(raw, "must not contain backslashes"));
        }
        if percent_encoded(raw) {
            return Err(invalid(
                raw,
                "must not contain percent-encoded characters (such as %2e or %2f)",
            ));
        }
        let rest = match raw.strip_prefix(ROOT) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
            _ => {
                return Err(refused(raw, "must start with /memories", |shown| {
                    wording.outside_root(shown)
                }));
            }
        };
        if wording.resolves_dots() {
            let Some(segments) = resolved(rest) else {
                return Err(refused(
                    raw,
                    "must not contain .. (it would escape /memories)",
                    |shown| wording.escapes_root(shown),
                ));
            };
            return Self::of_segments(raw, &segments.join("/"));
        }
        let rest = rest.strip_prefix('/').unwrap_or(rest);
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() {
            return Ok(MemoryPath(None));
        }
        if rest.starts_with('/') {
            return Err(invalid(raw, "must not contain an empty segment"));
        }
        if rest.split('/').any(|s| s == "..") {
            return Err(invalid(
                raw,
                "must not contain .. (it would escape /memories)",
            ));
        }
        Self::of_segments(raw, rest)
    }

    /// The path of the note `rest` below the root (the root itself when empty).
    fn of_segments(raw: &str, rest: &str) -> Result<Self> {
        if rest.is_empty() {
            return Ok(MemoryPath(None));
        }
        NotePath::new(rest)
            .map(|p| MemoryPath(Some(p)))
            .map_err(|e| {
                let reason = match e {
                    agent_memory_core::Error::InvalidName { reason, .. } => reason,
                    _ => "is not a valid note path",
                };
                invalid(raw, reason)
            })
    }

    /// The note path below the root; `None` for the root itself.
    pub fn note(&self) -> Option<&NotePath> {
        self.0.as_ref()
    }

    /// The path of a note below the root.
    pub fn of(note: &NotePath) -> Self {
        MemoryPath(Some(note.clone()))
    }
}

impl fmt::Display for MemoryPath {
    /// The canonical spelling: `/memories` or `/memories/<note path>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            None => f.write_str(ROOT),
            Some(note) => write!(f, "{ROOT}/{note}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(raw: &str, expected: std::result::Result<&str, &str>) {
        let got = MemoryPath::parse(raw)
            .map(|p| p.to_string())
            .map_err(|e| e.to_string());
        assert_eq!(
            got,
            expected.map(str::to_owned).map_err(str::to_owned),
            "{raw:?}"
        );
    }

    #[test]
    fn paths_stay_inside_memories() {
        check("/memories", Ok("/memories"));
        check("/memories/", Ok("/memories"));
        check("/memories/a/b.md", Ok("/memories/a/b.md"));
        check("/memories/a/", Ok("/memories/a"));
        check(
            "/memories/../etc/passwd",
            Err(
                r#"invalid path "/memories/../etc/passwd": must not contain .. (it would escape /memories)"#,
            ),
        );
        check(
            "/memories/a/../../x",
            Err(
                r#"invalid path "/memories/a/../../x": must not contain .. (it would escape /memories)"#,
            ),
        );
        check(
            "/memories/%2e%2e/x",
            Err(
                r#"invalid path "/memories/%2e%2e/x": must not contain percent-encoded characters (such as %2e or %2f)"#,
            ),
        );
        check(
            "/memories/..%2fx",
            Err(
                r#"invalid path "/memories/..%2fx": must not contain percent-encoded characters (such as %2e or %2f)"#,
            ),
        );
        check(
            "/memories\\..\\x",
            Err(r#"invalid path "/memories\\..\\x": must not contain backslashes"#),
        );
        check(
            "/memories/a\0b",
            Err(r#"invalid path "/memories/a\0b": must not contain NUL characters"#),
        );
        check(
            "/memories/a\nb",
            Err(r#"invalid path "/memories/a\nb": must not contain control characters"#),
        );
        check(
            "/etc/passwd",
            Err(r#"invalid path "/etc/passwd": must start with /memories"#),
        );
        check(
            "memories/a",
            Err(r#"invalid path "memories/a": must start with /memories"#),
        );
        check(
            "/memoriesX/a",
            Err(r#"invalid path "/memoriesX/a": must start with /memories"#),
        );
        check(
            "/memories/./a",
            Err(r#"invalid path "/memories/./a": must not contain . or .. segments"#),
        );
        check(
            "/memories//a",
            Err(r#"invalid path "/memories//a": must not contain an empty segment"#),
        );
        check("/memories/100%.md", Ok("/memories/100%.md"));
    }

    #[test]
    fn overlong_paths_are_refused_without_echoing_them() {
        let long = format!("/memories/{}", "a/".repeat(3000));
        let message = MemoryPath::parse(&long)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("over the limit of 1034 bytes"),
            "{message}"
        );
        assert!(message.len() < 200, "{message}");
        let deep = format!("/memories/{}", vec!["d"; 40].join("/"));
        let message = MemoryPath::parse(&deep)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            message.ends_with("must be at most 32 segments deep"),
            "{message}"
        );
    }
}
