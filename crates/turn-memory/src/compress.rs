//! Tool output compressed for the model, as Keen Code compresses it (a render option,
//! [`ContextPolicy::compress_outputs`](crate::ContextPolicy::compress_outputs)): `read_file`
//! without its byte and line counts, `glob` and `grep` file lists with their common
//! directory factored out as `common_prefix`, and `grep` matches grouped by file. Anything
//! else, and any output of another shape, is left as it is.
//!
//! ```
//! use agent_memory_turns::compress::for_model;
//! use serde_json::json;
//!
//! let out = for_model("glob", &json!({"files": ["src/a.rs", "src/b.rs"]}));
//! assert_eq!(out.as_deref(), Some(&json!({"common_prefix": "src/", "files": ["a.rs", "b.rs"]})));
//! ```

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The output of `tool` compressed for the model, or `None` when compression leaves it as
/// it is.
pub fn for_model(tool: &str, output: &Value) -> Option<Box<Value>> {
    let Value::Object(result) = output else {
        return None;
    };
    let compact = match tool {
        "read_file" => read_file(result),
        "glob" => files(result),
        "grep" if result.contains_key("files") => files(result),
        "grep" => grep(result),
        _ => None,
    }?;
    Some(Box::new(Value::Object(compact)))
}

/// A tool's output text compressed for the model: the JSON text of the compressed object
/// when the text is a JSON object compression changes, else `None`.
pub fn text_for_model(tool: &str, output: &str) -> Option<String> {
    if !matches!(tool, "read_file" | "glob" | "grep") || !output.trim_start().starts_with('{') {
        return None;
    }
    let value: Value = serde_json::from_str(output).ok()?;
    for_model(tool, &value).map(|v| v.to_string())
}

fn read_file(result: &Map<String, Value>) -> Option<Map<String, Value>> {
    if !result.contains_key("bytes_read") && !result.contains_key("lines_read") {
        return None;
    }
    let mut compact = result.clone();
    compact.remove("bytes_read");
    compact.remove("lines_read");
    Some(compact)
}

fn files(result: &Map<String, Value>) -> Option<Map<String, Value>> {
    let paths: Vec<&str> = result
        .get("files")?
        .as_array()?
        .iter()
        .map(Value::as_str)
        .collect::<Option<_>>()?;
    let (prefix, relative) = common_prefix(&paths)?;
    let mut compact = result.clone();
    compact.insert("common_prefix".to_owned(), Value::String(prefix.to_owned()));
    compact.insert(
        "files".to_owned(),
        Value::Array(
            relative
                .into_iter()
                .map(|p| Value::String(p.to_owned()))
                .collect(),
        ),
    );
    Some(compact)
}

fn grep(result: &Map<String, Value>) -> Option<Map<String, Value>> {
    let matches = result.get("matches")?.as_array()?;
    let mut paths = Vec::with_capacity(matches.len());
    for found in matches {
        paths.push(found.as_object()?.get("file")?.as_str()?);
    }
    let (prefix, relative) = common_prefix(&paths)?;
    // Keyed by file in sorted order, as Go writes a map.
    let mut grouped: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for (found, file) in matches.iter().zip(relative) {
        let mut entry = found.as_object()?.clone();
        entry.remove("file");
        grouped.entry(file).or_default().push(Value::Object(entry));
    }
    let mut compact = result.clone();
    compact.insert("common_prefix".to_owned(), Value::String(prefix.to_owned()));
    compact.insert(
        "matches".to_owned(),
        Value::Object(
            grouped
                .into_iter()
                .map(|(file, entries)| (file.to_owned(), Value::Array(entries)))
                .collect(),
        ),
    );
    Some(compact)
}

/// The longest common prefix of `paths` that ends with a path separator (`/` or `\`), and
/// each path without it; `None` when they share no directory.
pub fn common_prefix<'p>(paths: &[&'p str]) -> Option<(&'p str, Vec<&'p str>)> {
    let (first, rest) = paths.split_first()?;
    let mut len = first.len();
    for path in rest {
        len = first
            .bytes()
            .zip(path.bytes())
            .take(len)
            .take_while(|(a, b)| a == b)
            .count();
    }
    // Bytes, not characters: the cut is at an ASCII separator, so always on a boundary.
    let end = first.as_bytes()[..len]
        .iter()
        .rposition(|b| matches!(b, b'/' | b'\\'))?
        + 1;
    let prefix = &first[..end];
    Some((prefix, paths.iter().map(|p| &p[end..]).collect()))
}
