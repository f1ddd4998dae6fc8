//! Trail arguments: the typed `args.` namespace `{{args.name}}` tokens read.
//!
//! A trail declares its arguments under `config.args`; a run supplies values for them.
//! [`Args::bind`] checks the values against the declarations as Trailblaze's binder does:
//! every value is coerced to its declared type (a string `"3"` bound to an `integer` is `3`),
//! an omitted optional argument takes its default, and an unknown name, a missing required
//! argument, a null or a value that does not coerce is an error, before anything runs. A
//! string value may hold memory tokens and tokens of other arguments; they are resolved once,
//! when the arguments are seeded into a replay.
//!
//! A token is a dotted path (`args.name` or `args.name.field`), never an expression: a token
//! that starts with `args.` and is not a dotted path is an error wherever it is met.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use crate::config::{ArgDeclaration, ArgType, is_identifier};
use crate::error::{Error, Result};

/// The prefix of an argument token's body.
pub(crate) const ARGS_PREFIX: &str = "args.";

/// Whether `body` (a token's text between its delimiters) is a dotted path: identifiers
/// (`[a-zA-Z_][a-zA-Z0-9_]*`) joined by single dots.
pub(crate) fn is_dotted_path(body: &str) -> bool {
    body.split('.').all(is_identifier)
}

/// The error for an `args.` token that is not a dotted path.
pub(crate) fn malformed(body: &str, path: String) -> Error {
    Error::MalformedToken {
        token: body.to_owned(),
        path,
    }
}

/// The bound arguments of a run: names to typed JSON values.
///
/// ```
/// use std::collections::BTreeMap;
/// use agent_memory_recording::{Args, Trail};
/// use serde_json::json;
///
/// let trail = Trail::from_yaml_str(
///     "config:\n  args:\n    retries: {type: integer, default: 3}\n    who: string\ntrail:\n- step: go\n",
///     "t.yaml",
/// )?;
/// let given = BTreeMap::from([("who".to_owned(), json!("ada"))]);
/// let args = Args::bind(trail.config().map_or(&[][..], |c| c.args()), &given)?;
/// assert_eq!(args.get("retries"), Some(&json!(3)));
///
/// let err = Args::bind(trail.config().map_or(&[][..], |c| c.args()), &BTreeMap::new()).unwrap_err();
/// assert_eq!(err.to_string(), "trail args: missing required arg(s) who; give each a value, or declare a `default:`");
/// # Ok::<(), agent_memory_recording::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    values: BTreeMap<String, Json>,
}

impl Args {
    /// No arguments.
    pub fn new() -> Self {
        Args::default()
    }

    /// Binds `given` values to the `declared` arguments: coerces each to its declared type,
    /// fills omitted optional ones with their defaults, and refuses unknown names, missing
    /// required arguments, nulls and values that do not coerce, naming each.
    pub fn bind(declared: &[ArgDeclaration], given: &BTreeMap<String, Json>) -> Result<Self> {
        let unknown: Vec<&str> = given
            .keys()
            .filter(|name| !declared.iter().any(|d| d.name == **name))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            let declared_names = if declared.is_empty() {
                "none (the trail declares no `config.args`)".to_owned()
            } else {
                let mut names: Vec<&str> = declared.iter().map(|d| d.name.as_str()).collect();
                names.sort_unstable();
                names.join(", ")
            };
            return Err(args_error(format!(
                "unknown arg(s) {}; declared: {declared_names}",
                unknown.join(", ")
            )));
        }
        let mut values = BTreeMap::new();
        let mut missing = Vec::new();
        for declaration in declared {
            let name = declaration.name.as_str();
            let value = match (given.get(name), &declaration.default) {
                (Some(Json::Null), _) => {
                    return Err(args_error(format!(
                        "arg `{name}` was given null; args have no null: use '' for an empty \
                         string, or leave the arg out to take its default"
                    )));
                }
                (Some(value), _) => coerce(name, declaration.kind, value)?,
                (None, Some(default)) => coerce(name, declaration.kind, default).map_err(|e| {
                    args_error(format!(
                        "the default of arg `{name}` is invalid: {}",
                        detail(&e)
                    ))
                })?,
                (None, None) => {
                    missing.push(name);
                    continue;
                }
            };
            values.insert(name.to_owned(), value);
        }
        if !missing.is_empty() {
            missing.sort_unstable();
            return Err(args_error(format!(
                "missing required arg(s) {}; give each a value, or declare a `default:`",
                missing.join(", ")
            )));
        }
        for (name, value) in &values {
            let Json::String(text) = value else { continue };
            if let Some(body) = arg_token_bodies(text).find(|body| !is_dotted_path(body)) {
                return Err(args_error(format!(
                    "arg `{name}` holds the token {{{{{body}}}}}, which is not a dotted path \
                     (`args.name` or `args.name.field`); compute values before the run, not \
                     inside a token"
                )));
            }
        }
        Ok(Args { values })
    }

    /// The value bound to `name`.
    pub fn get(&self, name: &str) -> Option<&Json> {
        self.values.get(name)
    }

    /// Every argument, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Json)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Whether no argument is bound.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The value at a dotted `path` below the namespace (`reply_to.email`): the argument,
    /// then a field of it at each further segment.
    pub fn lookup(&self, path: &str) -> Option<&Json> {
        let mut segments = path.split('.');
        let mut current = self.values.get(segments.next()?)?;
        for segment in segments {
            current = current.as_object()?.get(segment)?;
        }
        Some(current)
    }

    pub(crate) fn set(&mut self, name: &str, value: Json) {
        self.values.insert(name.to_owned(), value);
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.values.keys().cloned().collect()
    }
}

fn args_error(message: String) -> Error {
    Error::Args { message }
}

/// The message of an [`Error::Args`].
fn detail(error: &Error) -> String {
    match error {
        Error::Args { message } => message.clone(),
        other => other.to_string(),
    }
}

/// The bodies of every `args.` token (`${args.x}` or `{{args.x}}`) in `text`.
pub(crate) fn arg_token_bodies(text: &str) -> impl Iterator<Item = &str> {
    token_bodies(text).filter(|body| body.starts_with(ARGS_PREFIX))
}

/// The body of every `${…}` and `{{…}}` token of `text`, in order: the text between the
/// opener and the first `}` (which must close the token).
pub(crate) fn token_bodies(text: &str) -> impl Iterator<Item = &str> {
    [("${", "}"), ("{{", "}}")]
        .into_iter()
        .flat_map(move |(open, close)| {
            let mut at = 0;
            std::iter::from_fn(move || {
                loop {
                    let start = at + text[at..].find(open)?;
                    let key_start = start + open.len();
                    let key_end = key_start + text[key_start..].find('}')?;
                    if !text[key_end..].starts_with(close) {
                        at = key_end + 1;
                        continue;
                    }
                    at = key_end + close.len();
                    if key_end > key_start {
                        return Some(&text[key_start..key_end]);
                    }
                }
            })
        })
}

/// How a value reads as text: a string as itself, a number or boolean as its JSON text.
pub(crate) fn scalar_text(value: &Json) -> Option<String> {
    match value {
        Json::String(s) => Some(s.clone()),
        Json::Number(n) => Some(n.to_string()),
        Json::Bool(b) => Some(b.to_string()),
        Json::Null | Json::Array(_) | Json::Object(_) => None,
    }
}

fn shape(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// Coerces `value` to `kind` as Trailblaze's binder does: by the declared type, never by the
/// value's shape.
fn coerce(name: &str, kind: ArgType, value: &Json) -> Result<Json> {
    let text = scalar_text(value);
    let shown = text.clone();
    let refuse = |expected: &str| {
        let got = match (&shown, value) {
            (Some(text), Json::String(_)) => format!("{text:?}"),
            (Some(text), _) => text.clone(),
            (None, other) => shape(other).to_owned(),
        };
        args_error(format!("arg `{name}` expects {expected}, got {got}"))
    };
    match kind {
        ArgType::String => text.map(Json::String).ok_or_else(|| refuse("a string")),
        ArgType::Integer => value
            .as_i64()
            .or_else(|| text.as_deref().and_then(|t| t.parse::<i64>().ok()))
            .map(Json::from)
            .ok_or_else(|| refuse("an integer")),
        ArgType::Boolean => match text.as_deref().map(str::to_ascii_lowercase).as_deref() {
            Some("true") => Ok(Json::Bool(true)),
            Some("false") => Ok(Json::Bool(false)),
            _ => Err(refuse("a boolean (true or false)")),
        },
        ArgType::Array if value.is_array() => Ok(value.clone()),
        ArgType::Array => Err(refuse("an array")),
        ArgType::Object if value.is_object() => Ok(value.clone()),
        ArgType::Object => Err(refuse("an object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_bodies_follow_the_interpolation_grammar() {
        let bodies: Vec<&str> = token_bodies("${a} {{b}} ${} {{c} ${d {{args.x}} $${e}}").collect();
        // A key runs to the first `}`, so `${d {{args.x}}` holds the key `d {{args.x`, as in
        // Trailblaze's patterns.
        assert_eq!(bodies, ["a", "d {{args.x", "e", "b", "args.x"]);
    }

    #[test]
    fn dotted_paths() {
        for ok in ["args.x", "args.reply_to.email", "args._1"] {
            assert!(is_dotted_path(ok), "{ok}");
        }
        for bad in [
            "args.count + 1",
            "args.",
            "args..x",
            "args.x | upper",
            "args.1x",
        ] {
            assert!(!is_dotted_path(bad), "{bad}");
        }
    }
}
