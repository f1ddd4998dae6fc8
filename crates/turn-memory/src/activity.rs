//! [`ToolActivity`]: what each tool of a turn did, where in the assistant's text it ran, and
//! the bounded part of its input that is replayed to the model.
//!
//! This is Keen Code's record of a turn (0.30 and later): one activity per tool call, with the
//! byte offset of the call in the assistant's text, the tool's name, its input cut to
//! [`DEFAULT_MAX_INPUT_FIELD_BYTES`] per field, a status and a shell command's non-zero exit
//! code. Outputs are kept only in [`ToolActivity::retained_output`], when the session's
//! [`ToolHistory`] is `full` for the turn (Keen's `/tool-history full`), bounded to
//! [`DEFAULT_MAX_RETAINED_OUTPUT_BYTES`]. The bounding rules are Keen's:
//!
//! - only the inputs of the tools listed in [`CaptureConfig::activity_input_tools`] are kept;
//! - the `path` field of the tools in [`CaptureConfig::activity_path_tools`] is made relative
//!   to the workspace root when it is an absolute path inside it (other paths are kept as
//!   written);
//! - string fields of write and edit tools longer than the limit are cut on a UTF-8 boundary;
//!   any other field whose JSON text is longer than the limit is dropped.
//!
//! Field sizes are measured as Keen's Go code measures them: the length of the field's JSON
//! text as `encoding/json` writes it (`<`, `>` and `&` escaped as `\u003c`, …).
//!
//! [`CaptureConfig::activity_input_tools`]: crate::CaptureConfig::activity_input_tools
//! [`CaptureConfig::activity_path_tools`]: crate::CaptureConfig::activity_path_tools

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// The per-field input limit of Keen Code's turn memory, in bytes.
pub const DEFAULT_MAX_INPUT_FIELD_BYTES: usize = 4 * 1024;

/// The largest retained output a tool activity keeps, in bytes (Keen keeps it whole; we bound
/// it as we bound every other input).
pub const DEFAULT_MAX_RETAINED_OUTPUT_BYTES: usize = 16 * 1024;

/// The session's tool-history setting (Keen's `/tool-history`): whether tool results are kept
/// for later turns. It applies to turns that start after it is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolHistory {
    /// Results are not kept: later turns see each call's status only (the default).
    #[default]
    None,
    /// Results are kept, bounded, as each activity's `retained_output`.
    Full,
}

impl ToolHistory {
    /// `"none"` or `"full"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolHistory::None => "none",
            ToolHistory::Full => "full",
        }
    }
}

impl std::str::FromStr for ToolHistory {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "none" => Ok(ToolHistory::None),
            "full" => Ok(ToolHistory::Full),
            other => Err(format!(
                "tool history {other:?} is neither \"full\" nor \"none\""
            )),
        }
    }
}

/// Whether a tool call succeeded, as the model is told when the call is replayed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "schemars",
    derive(schemars::JsonSchema),
    schemars(rename_all = "snake_case")
)]
pub enum ActivityStatus {
    /// The tool ran (a shell command that exited non-zero still ran: its exit code says so).
    #[default]
    Success,
    /// The tool reported an error.
    Error,
}

impl ActivityStatus {
    /// `"success"` or `"error"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ActivityStatus::Success => "success",
            ActivityStatus::Error => "error",
        }
    }
}

impl fmt::Display for ActivityStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ActivityStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ActivityStatus {
    /// Any status other than `"success"` reads as [`ActivityStatus::Error`], as Keen's replay
    /// treats it.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let status = Cow::<'de, str>::deserialize(deserializer)?;
        Ok(if status == "success" {
            ActivityStatus::Success
        } else {
            ActivityStatus::Error
        })
    }
}

/// One tool call of a turn, as it is kept and replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct ToolActivity {
    /// Where the call happened: the byte offset in the turn's text of what the model had
    /// written when the tool ended. Replay puts the call there.
    pub text_offset: usize,
    /// The tool's name.
    pub tool: String,
    /// The bounded input (a JSON object), or `None` when nothing of it is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schemars",
        schemars(with = "Option<serde_json::Map<String, Value>>")
    )]
    pub input: Option<Value>,
    /// Whether the call succeeded.
    #[serde(default)]
    pub status: ActivityStatus,
    /// A shell command's exit code, only when it was not 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The file a successful write or edit changed, relative to the workspace (the first
    /// one when the call names several); a field of the tool result, as Keen names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_changed: Option<String>,
    /// The command of a shell call that exited non-zero; a field of the tool result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_command: Option<String>,
    /// The tool's result, bounded, kept when the turn ran with [`ToolHistory::Full`]; replay
    /// sends it in place of the status object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(schema_with = "any_json"))]
    pub retained_output: Option<Value>,
}

impl ToolActivity {
    /// A successful call of `tool` at `text_offset`, without input.
    pub fn new(text_offset: usize, tool: impl Into<String>) -> Self {
        ToolActivity {
            text_offset,
            tool: tool.into(),
            input: None,
            status: ActivityStatus::Success,
            exit_code: None,
            file_changed: None,
            failed_command: None,
            retained_output: None,
        }
    }

    /// With this retained output, bounded to [`DEFAULT_MAX_RETAINED_OUTPUT_BYTES`].
    pub fn with_retained_output(mut self, output: &str) -> Self {
        self.retained_output = Some(retained_output(output, DEFAULT_MAX_RETAINED_OUTPUT_BYTES));
        self
    }

    /// With the file the call changed.
    pub fn with_file_changed(mut self, path: Option<String>) -> Self {
        self.file_changed = path;
        self
    }

    /// With the command that failed.
    pub fn with_failed_command(mut self, command: Option<String>) -> Self {
        self.failed_command = command;
        self
    }

    /// With this (already bounded) input; an empty object or a non-object keeps none.
    pub fn with_input(mut self, input: Value) -> Self {
        self.input = match input {
            Value::Object(map) if !map.is_empty() => Some(Value::Object(map)),
            _ => None,
        };
        self
    }

    /// With this status.
    pub fn with_status(mut self, status: ActivityStatus) -> Self {
        self.status = status;
        self
    }

    /// With this exit code; 0 keeps none.
    pub fn with_exit_code(mut self, exit_code: Option<i32>) -> Self {
        self.exit_code = exit_code.filter(|code| *code != 0);
        self
    }

    /// The result a replayed call gets, as Keen writes it: the retained output when there is
    /// one (a string as it is, anything else as JSON text), else `{"status":"success"}`,
    /// `{"status":"error"}`, or either with `"exit_code":N`.
    pub fn result(&self) -> Cow<'_, str> {
        match &self.retained_output {
            Some(Value::String(text)) => return Cow::Borrowed(text),
            Some(other) => return Cow::Owned(other.to_string()),
            None => {}
        }
        match (self.status, self.exit_code) {
            (ActivityStatus::Success, None) => Cow::Borrowed(r#"{"status":"success"}"#),
            (ActivityStatus::Error, None) => Cow::Borrowed(r#"{"status":"error"}"#),
            (status, Some(code)) => {
                Cow::Owned(format!(r#"{{"status":"{status}","exit_code":{code}}}"#))
            }
        }
    }
}

/// Any JSON value but null, each of its types named (what a retained output may be), for
/// schema readers that need a type.
#[cfg(feature = "schemars")]
fn any_json(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"anyOf": [
        {"type": "object"}, {"type": "array"}, {"type": "string"},
        {"type": "number"}, {"type": "boolean"}
    ]})
}

/// A tool's output as an activity retains it: a JSON object or array kept as such when its
/// text fits in `max_bytes`, anything else as a string cut to `max_bytes` on a UTF-8 boundary.
pub(crate) fn retained_output(output: &str, max_bytes: usize) -> Value {
    let trimmed = output.trim_start();
    if output.len() <= max_bytes
        && (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(value @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str(output)
    {
        return value;
    }
    Value::String(truncate_utf8(output, max_bytes).to_owned())
}

/// A retained output read from elsewhere (a Keen log), bounded as capture bounds it: a value
/// whose JSON text is longer than `max_bytes` is kept as that text, cut.
pub(crate) fn bound_retained(value: Value, max_bytes: usize) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::String(text) if text.len() > max_bytes => {
            Some(Value::String(truncate_utf8(&text, max_bytes).to_owned()))
        }
        other if go_json_len(&other, max_bytes) > max_bytes => Some(Value::String(
            truncate_utf8(&other.to_string(), max_bytes).to_owned(),
        )),
        other => Some(other),
    }
}

/// `input` bounded by Keen's rules: each field kept when its JSON text fits in `max_bytes`,
/// except that string fields are cut (on a UTF-8 boundary) when `truncate_strings`. `None`
/// when the input is not an object or nothing of it is kept.
pub(crate) fn bounded_input(
    input: &Value,
    max_bytes: usize,
    truncate_strings: bool,
    mut relative: impl FnMut(&str, &str) -> Option<String>,
) -> Option<Value> {
    let Value::Object(fields) = input else {
        return None;
    };
    let mut bounded = Map::new();
    for (key, value) in fields {
        let relative_path = match value {
            Value::String(text) => relative(key, text),
            _ => None,
        };
        let value = match (&relative_path, value) {
            (Some(path), _) => Cow::Owned(Value::String(path.clone())),
            (None, value) => Cow::Borrowed(value),
        };
        match value.as_ref() {
            Value::String(text) if truncate_strings => {
                let cut = truncate_utf8(text, max_bytes);
                bounded.insert(key.clone(), Value::String(cut.to_owned()));
            }
            other if go_json_len(other, max_bytes) <= max_bytes => {
                bounded.insert(key.clone(), value.into_owned());
            }
            _ => {}
        }
    }
    (!bounded.is_empty()).then_some(Value::Object(bounded))
}

/// `text` cut to at most `max_bytes` bytes, on a character boundary.
pub(crate) fn truncate_utf8(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The length of `value`'s JSON text as Go's `encoding/json` writes it, counted up to a little
/// past `limit` (the count stops early once it is over). Numbers are counted as serde_json
/// writes them, which differs from Go only in the spelling of exponents.
pub(crate) fn go_json_len(value: &Value, limit: usize) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(number) => number.to_string().len(),
        Value::String(text) => go_string_len(text, limit),
        Value::Array(items) => {
            let mut total = 2 + items.len().saturating_sub(1);
            for item in items {
                total += go_json_len(item, limit);
                if total > limit {
                    break;
                }
            }
            total
        }
        Value::Object(fields) => {
            let mut total = 2 + fields.len().saturating_sub(1);
            for (key, item) in fields {
                total += go_string_len(key, limit) + 1 + go_json_len(item, limit);
                if total > limit {
                    break;
                }
            }
            total
        }
    }
}

/// The length of `text` as a Go JSON string, quotes included.
fn go_string_len(text: &str, limit: usize) -> usize {
    let mut total = 2;
    for c in text.chars() {
        total += match c {
            '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => 6,
            c if u32::from(c) < 0x20 => 6,
            c => c.len_utf8(),
        };
        if total > limit {
            break;
        }
    }
    total
}

/// `path` relative to `root` (absolute, normalized, without a trailing slash, `""` for `/`)
/// as Keen makes it: an absolute path inside the root becomes relative (`.` for the root
/// itself); any other path is kept as written.
pub(crate) fn keen_relative(path: &str, root: &str) -> Option<String> {
    let rest = path.strip_prefix('/')?;
    let mut segments: Vec<&str> = Vec::new();
    for segment in rest.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    let root_segments = root.split('/').filter(|s| !s.is_empty());
    let mut inside = segments.iter();
    for expected in root_segments {
        if inside.next() != Some(&expected) {
            return None;
        }
    }
    let remainder: Vec<&str> = inside.copied().collect();
    Some(if remainder.is_empty() {
        ".".to_owned()
    } else {
        remainder.join("/")
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn go_lengths_count_escapes_as_encoding_json_writes_them() {
        for (value, expected) in [
            (json!("abc"), r#""abc""#.len()),
            (json!("a<b>&c"), r#""a\u003cb\u003e\u0026c""#.len()),
            (json!("\n\t\"\\\u{8}\u{c}"), r#""\n\t\"\\\b\f""#.len()),
            (json!("\u{1}"), r#""\u0001""#.len()),
            (json!("é\u{2028}"), "\"é\\u2028\"".len()),
            (json!(null), 4),
            (json!(false), 5),
            (json!(12), 2),
            (json!([1, "x"]), r#"[1,"x"]"#.len()),
            (json!({"a": 1, "b": [true]}), r#"{"a":1,"b":[true]}"#.len()),
        ] {
            assert_eq!(go_json_len(&value, usize::MAX), expected, "{value}");
        }
    }

    #[test]
    fn utf8_cuts_fall_on_a_character_boundary() {
        assert_eq!(truncate_utf8("héllo", 2), "h");
        assert_eq!(truncate_utf8("héllo", 3), "hé");
        assert_eq!(truncate_utf8("abc", 3), "abc");
        assert_eq!(truncate_utf8("日本", 5), "日");
    }

    #[test]
    fn paths_are_made_relative_as_keen_does() {
        for (path, root, expected) in [
            ("/w/src/a.rs", "/w", Some("src/a.rs")),
            ("/w", "/w", Some(".")),
            ("/w/./src/../a.rs", "/w", Some("a.rs")),
            ("/x/../w/a.rs", "/w", Some("a.rs")),
            ("/wx/a.rs", "/w", None),
            ("/etc/passwd", "/w", None),
            ("src/a.rs", "/w", None),
            ("./src/../a.rs", "/w", None),
            ("/a/b", "", Some("a/b")),
            ("/", "", Some(".")),
        ] {
            assert_eq!(
                keen_relative(path, root).as_deref(),
                expected,
                "{path} in {root}"
            );
        }
    }

    #[test]
    fn results_are_keens_status_objects() {
        let ok = ToolActivity::new(0, "bash");
        assert_eq!(ok.result(), r#"{"status":"success"}"#);
        let failed = ok.clone().with_exit_code(Some(1));
        assert_eq!(failed.result(), r#"{"status":"success","exit_code":1}"#);
        let error = ToolActivity::new(0, "write_file").with_status(ActivityStatus::Error);
        assert_eq!(error.result(), r#"{"status":"error"}"#);
        assert_eq!(ok.with_exit_code(Some(0)).exit_code, None);
    }

    #[test]
    fn any_status_but_success_reads_as_an_error() {
        for (json, status) in [
            (r#""success""#, ActivityStatus::Success),
            (r#""error""#, ActivityStatus::Error),
            (r#""denied""#, ActivityStatus::Error),
        ] {
            let read: ActivityStatus = serde_json::from_str(json).expect("a status");
            assert_eq!(read, status, "{json}");
        }
    }
}
