//! Reading the JSON documents the write commands take: from a file or from stdin (`-`),
//! one document or JSON lines, with errors that name the input, the line and the column.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;

use crate::ops::Error as Failure;
use crate::ops::files::{MAX_FILE_BYTES, read_bounded};

/// The text of `source`: a file path, or `-` for standard input, at most 4 MiB. A UTF-8
/// byte-order mark is dropped; text that is not UTF-8 is an error naming the input.
pub(crate) fn read_text(source: &Path) -> Result<(String, String)> {
    let (name, bytes) = if source == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin()
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .context("reading standard input")?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(Failure::invalid(
                "<stdin>",
                "standard input holds more than 4 MiB, the most an input may hold",
            )
            .into());
        }
        ("<stdin>".to_owned(), bytes)
    } else {
        let name = source.display().to_string();
        let bytes = read_bounded(source).with_context(|| format!("cannot read {name}"))?;
        (name, bytes)
    };
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    let text = String::from_utf8(bytes.to_vec())
        .map_err(|e| Failure::invalid(&name, format!("{name}: not UTF-8 text ({e})")))?;
    Ok((name, text))
}

/// One JSON document of type `T` from `source`.
pub(crate) fn document<T: DeserializeOwned>(source: &Path) -> Result<T> {
    let (name, text) = read_text(source)?;
    if text.trim().is_empty() {
        return Err(Failure::invalid(
            &name,
            format!("{name}: empty input, expected a JSON document"),
        )
        .into());
    }
    serde_json::from_str(&text).map_err(|e| {
        Failure::invalid(&name, format!("{name}:{}:{}: {e}", e.line(), e.column())).into()
    })
}

/// Every non-blank line of `source` as a `T`, or the input as one JSON array of `T`. An
/// error names the line; nothing is returned unless every line parses.
pub(crate) fn lines<T: DeserializeOwned>(source: &Path) -> Result<Vec<T>> {
    let (name, text) = read_text(source)?;
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err(
            Failure::invalid(&name, format!("{name}: empty input, expected JSON lines")).into(),
        );
    }
    if trimmed.starts_with('[') {
        return serde_json::from_str(&text).map_err(|e| {
            Failure::invalid(&name, format!("{name}:{}:{}: {e}", e.line(), e.column())).into()
        });
    }
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            serde_json::from_str(line).map_err(|e| {
                Failure::invalid(&name, format!("{name}:{}:{}: {e}", index + 1, e.column())).into()
            })
        })
        .collect()
}
