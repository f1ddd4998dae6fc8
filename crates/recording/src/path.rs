//! [`JsonPath`]: where a string sits inside a JSON value, kept as a stack while walking so
//! that it is only formatted when something is reported.

use std::fmt::Write;

/// The deepest nesting any walk of this crate follows; deeper values are an error, not a
/// stack overflow.
pub const MAX_DEPTH: usize = 128;

#[derive(Clone, Debug)]
enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

/// A path from the root of a JSON value, as a stack of segments.
#[derive(Clone, Debug, Default)]
pub(crate) struct JsonPath<'a> {
    prefix: String,
    segments: Vec<Segment<'a>>,
}

impl<'a> JsonPath<'a> {
    /// A path whose rendering starts with `prefix` instead of `$`.
    pub(crate) fn with_prefix(prefix: impl Into<String>) -> Self {
        JsonPath {
            prefix: prefix.into(),
            segments: Vec::new(),
        }
    }

    pub(crate) fn push_key(&mut self, key: &'a str) {
        self.segments.push(Segment::Key(key));
    }

    pub(crate) fn push_index(&mut self, index: usize) {
        self.segments.push(Segment::Index(index));
    }

    pub(crate) fn pop(&mut self) {
        self.segments.pop();
    }

    pub(crate) fn depth(&self) -> usize {
        self.segments.len()
    }

    pub(crate) fn render(&self) -> String {
        let mut out = if self.prefix.is_empty() {
            "$".to_owned()
        } else {
            self.prefix.clone()
        };
        for segment in &self.segments {
            // Writing to a String cannot fail.
            let _ = match segment {
                Segment::Index(i) => write!(out, "[{i}]"),
                Segment::Key(k) if is_plain(k) => write!(out, ".{k}"),
                Segment::Key(k) => write!(out, "[{k:?}]"),
            };
        }
        out
    }

    pub(crate) fn too_deep(&self) -> crate::Error {
        crate::Error::TooDeep {
            path: self.render(),
            limit: MAX_DEPTH,
        }
    }
}

fn is_plain(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}
