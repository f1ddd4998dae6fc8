//! The operations of the JSON contract: every door (the command line, the MCP server, the
//! language packages) calls them, and none of them holds a rule of its own.
//!
//! Each operation is a function from a typed input to a typed output over an [`Env`]; the
//! command line builds the input from its flags or a JSON document and prints the output
//! with `--json`, and the MCP server takes the input as a tool's arguments and returns the
//! output as its structured result. [`database`] opens the store they run on, from a SQLite
//! file's path or a `postgres://` URL; [`files`] reads a file an input names (at most 4 MiB,
//! and for a server's clients only inside the folders it allows). Every input and output
//! derives its JSON Schema, and the schemas are committed under `schemas/` ([`schemas`] lists
//! them; a test compares).
//!
//! The conventions of the contract, for every type here:
//!
//! - keys are `snake_case`;
//! - times are RFC 3339 strings in UTC with milliseconds (`2026-01-01T00:00:00.000Z`), made
//!   by [`time`];
//! - an error is `{"error": {"kind": ..., "message": ..., "input": ...}}` ([`ErrorBody`]);
//! - counts are unsigned integers, absent values are omitted rather than `null` unless the
//!   schema says otherwise.

pub mod browser;
pub mod check;
pub mod database;
pub mod files;
pub mod listing;
pub mod memory;
pub mod notes;
pub mod operations;
pub mod portable;
pub mod recording;
pub mod runs;
pub mod stats;
pub mod trajectory;
pub mod turns;

use std::borrow::Cow;

use crate::database::Store;
use agent_memory_core::excerpt::{Excerpt, bounded};
use agent_memory_core::{Clock, IdSource, Timestamp};
use chrono::{DateTime, SecondsFormat, Utc};
use schemars::{JsonSchema, Schema, SchemaGenerator, generate::SchemaSettings};
use serde::Serialize;

/// What every operation runs with: the store, the clock, the id source and the files an
/// input may name.
pub struct Env<'a> {
    /// The database.
    pub store: &'a Store,
    /// "Now": the system clock, or a fixed time for reproducible output.
    pub clock: Box<dyn Clock>,
    /// Where new ids come from.
    pub ids: Box<dyn IdSource>,
    /// Which files an input may name (`trail_path`): any for the command line, only those
    /// inside the allowed folders for a server's clients.
    pub files: files::FileAccess,
}

/// A time as the contract writes it: RFC 3339, UTC, milliseconds.
pub fn time(at: Timestamp) -> String {
    DateTime::<Utc>::from_timestamp_millis(at.as_millis())
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
        .unwrap_or_else(|| at.as_millis().to_string())
}

/// The one JSON object an error becomes, on stderr with `--json` and as an MCP tool error.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorDocument {
    /// The error.
    pub error: ErrorBody,
}

/// What went wrong.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorBody {
    /// A stable word a program can branch on: `usage`, `invalid_input`, `not_found`,
    /// `conflict`, `corrupt`, `io`, `database` or `error`.
    pub kind: &'static str,
    /// The message a person reads; the same text the command prints without `--json`.
    pub message: String,
    /// The input the error is about (a file, a field, a name), when one is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
}

/// An error the command line or an operation raises itself, with its contract kind and the
/// input it is about.
#[derive(Debug)]
pub struct Failure {
    /// The contract's `kind`.
    pub kind: &'static str,
    /// The input it is about.
    pub input: Option<String>,
    /// What a person reads.
    pub message: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

impl Failure {
    /// A `not_found` failure about `input`.
    pub fn not_found(input: impl Into<String>, message: impl Into<String>) -> Self {
        Failure {
            kind: "not_found",
            input: Some(input.into()),
            message: message.into(),
        }
    }

    /// An `invalid_input` failure about `input`.
    pub fn invalid(input: impl Into<String>, message: impl Into<String>) -> Self {
        Failure {
            kind: "invalid_input",
            input: Some(input.into()),
            message: message.into(),
        }
    }
}

impl ErrorBody {
    /// The body of `error`, classified by the first cause that says what kind it is. Its
    /// message and input are [`bounded`]: every error quotes its inputs cut where it is made,
    /// and this holds for a message another library wrote too.
    pub fn of(error: &anyhow::Error, message: String) -> Self {
        let mut body = ErrorBody::classified(error, message);
        if let Cow::Owned(message) = bounded(&body.message) {
            body.message = message;
        }
        if let Some(Cow::Owned(input)) = body.input.as_deref().map(bounded) {
            body.input = Some(input);
        }
        body
    }

    fn classified(error: &anyhow::Error, message: String) -> Self {
        let mut body = ErrorBody {
            kind: "error",
            message,
            input: None,
        };
        for cause in error.chain() {
            if let Some(failure) = cause.downcast_ref::<Failure>() {
                body.kind = failure.kind;
                body.input = failure.input.clone();
                return body;
            }
            // A feature crate's store error is transparent: its source skips the store's own
            // error, so look inside it here.
            if let Some(core) = store_error_of(cause) {
                (body.kind, body.input) = classify_core(core);
                return body;
            }
            if let Some(input) = trajectory_input_of(cause) {
                body.kind = "invalid_input";
                body.input = Some(input);
                return body;
            }
            if let Some(agent_memory_browser::Error::RunNotFound(run)) = cause.downcast_ref() {
                body.kind = "not_found";
                body.input = Some(run.clone());
                return body;
            }
            if let Some(core) = cause.downcast_ref::<agent_memory_core::Error>() {
                (body.kind, body.input) = classify_core(core);
                return body;
            }
            if cause.downcast_ref::<agent_memory_sqlite::Error>().is_some()
                || cause
                    .downcast_ref::<agent_memory_postgres::Error>()
                    .is_some()
            {
                // The caller knows the database's path and names it as the input.
                body.kind = "database";
                return body;
            }
            if cause.downcast_ref::<std::io::Error>().is_some() {
                body.kind = "io";
                return body;
            }
        }
        body
    }
}

/// The error and its causes on one line, "what failed: why", each cause once: an error that
/// already ends with its cause's message (as many `thiserror` messages do) does not repeat it.
/// The line is [`bounded`], however long a message a cause wrote.
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    match bounded(&line) {
        Cow::Borrowed(_) => line,
        Cow::Owned(cut) => cut,
    }
}

/// The input a procedural-memory error of the caller's making is about (a recall's unknown
/// fingerprint field, a weight, the configuration), if `cause` is one.
fn trajectory_input_of(cause: &(dyn std::error::Error + 'static)) -> Option<String> {
    use agent_memory_trajectory::Error as E;
    Some(match cause.downcast_ref::<E>()? {
        E::MissingFields { .. } | E::UnknownFields { .. } => "fingerprint".to_owned(),
        E::InvalidWeight { name, .. } => format!("{name}_weight"),
        E::UnknownWeight(name) => name.clone(),
        E::MissingFeature(_) | E::InvalidFeatures(_) => "features".to_owned(),
        E::InvalidConfig(_) => "configuration".to_owned(),
        _ => return None,
    })
}

/// The store error inside a feature crate's `Store` variant, if `cause` is one.
fn store_error_of<'e>(
    cause: &'e (dyn std::error::Error + 'static),
) -> Option<&'e agent_memory_core::Error> {
    if let Some(agent_memory_browser::Error::Store(core)) = cause.downcast_ref() {
        return Some(core);
    }
    if let Some(agent_memory_recording::Error::Store(core)) = cause.downcast_ref() {
        return Some(core);
    }
    if let Some(agent_memory_trajectory::Error::Store(core)) = cause.downcast_ref() {
        return Some(core);
    }
    if let Some(agent_memory_turns::Error::Store(core)) = cause.downcast_ref() {
        return Some(core);
    }
    None
}

fn classify_core(error: &agent_memory_core::Error) -> (&'static str, Option<String>) {
    use agent_memory_core::Error as E;
    match error {
        E::InvalidName { value, .. } => ("invalid_input", Some(Excerpt::plain(value).to_string())),
        E::InvalidInput { field, .. } => ("invalid_input", Some(field.clone())),
        E::NotFound { key, .. } => ("not_found", Some(Excerpt::plain(key).to_string())),
        E::Conflict { key, .. } => ("conflict", Some(Excerpt::plain(key).to_string())),
        E::Corrupt { location, .. } => ("corrupt", Some(location.clone())),
        _ => ("database", None),
    }
}

/// The schema of `T`, as committed under `schemas/`: draft 2020-12, made [`portable`].
pub fn schema_of<T: JsonSchema>() -> Schema {
    SchemaGenerator::new(SchemaSettings::draft2020_12().with_transform(portable::transform()))
        .into_root_schema_for::<T>()
}

/// Every schema of the operations, by file stem (`<operation>.input`, `<operation>.output`);
/// the command line adds the schemas of what its own commands print.
pub fn schemas() -> Vec<(&'static str, Schema)> {
    let mut all = vec![("error", schema_of::<ErrorDocument>())];
    all.extend(memory::schemas());
    all.extend(runs::schemas());
    all.extend(stats::schemas());
    all.extend(check::schemas());
    all.extend(trajectory::schemas());
    all.extend(browser::schemas());
    all.extend(turns::schemas());
    all.extend(recording::schemas());
    all.extend(notes::schemas());
    all
}

/// A schema as committed: pretty JSON with a final newline.
pub fn schema_text(schema: &Schema) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(schema)?;
    text.push('\n');
    Ok(text)
}

/// The schemas of one operation's input and output.
pub fn pair<I: JsonSchema, O: JsonSchema>(
    input: &'static str,
    output: &'static str,
) -> [(&'static str, Schema); 2] {
    [(input, schema_of::<I>()), (output, schema_of::<O>())]
}

/// The schema of an output only (operations without a JSON input).
pub fn output<O: JsonSchema>(name: &'static str) -> (&'static str, Schema) {
    (name, schema_of::<O>())
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::database::Store;
    use agent_memory_core::{ManualClock, SeededIds, Timestamp};

    /// A private SQLite database in memory.
    pub fn in_memory() -> Store {
        std::sync::Arc::new(
            agent_memory_sqlite::SqliteStore::open_in_memory().expect("in-memory store"),
        )
    }

    /// An environment on `store` at a fixed "now" (2026-01-01T00:00:00Z) with seeded ids.
    pub fn env_on(store: &Store) -> super::Env<'_> {
        super::Env {
            store,
            clock: Box::new(ManualClock::new(Timestamp::from_millis(1_767_225_600_000))),
            ids: Box::new(SeededIds::new(7)),
            files: crate::files::FileAccess::Any,
        }
    }

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        let at = agent_memory_core::Timestamp::from_millis(1_767_225_600_123);
        assert_eq!(super::time(at), "2026-01-01T00:00:00.123Z");
    }

    /// A recall by a field that is not a fingerprint field is the caller's mistake.
    #[test]
    fn an_unknown_fingerprint_field_is_invalid_input() {
        let store = in_memory();
        let env = env_on(&store);
        let record = crate::operations::find("trajectory_record").expect("record");
        let episode =
            serde_json::json!({"fingerprint": {"task": "t"}, "trajectory": ["a"], "outcome": 1});
        record
            .call(
                &env,
                serde_json::json!({"partition": "p", "fields": ["task"], "episodes": [episode]}),
            )
            .expect("recorded");
        let recall = crate::operations::find("trajectory_recall").expect("recall");
        let error = recall
            .call(
                &env,
                serde_json::json!({"partition": "p", "fingerprint": {"bogus": "x"}}),
            )
            .expect_err("bogus is no field");
        let body = super::ErrorBody::of(&error, super::one_line(&error));
        assert_eq!(
            (body.kind, body.input.as_deref()),
            ("invalid_input", Some("fingerprint"))
        );
        assert!(body.message.contains("bogus"), "{}", body.message);
        let long = "p".repeat(100_000);
        let error = recall
            .call(
                &env,
                serde_json::json!({"partition": long, "fingerprint": {"task": "t"}}),
            )
            .expect_err("too long");
        assert!(super::one_line(&error).len() < 1_000);
    }

    #[test]
    fn causes_join_on_one_line_each_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let repeated = anyhow::Error::new(io).context("trail file t.yaml: no such file");
        assert_eq!(
            super::one_line(&repeated),
            "trail file t.yaml: no such file"
        );
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let distinct = anyhow::Error::new(io).context("cannot read t.yaml");
        assert_eq!(
            super::one_line(&distinct),
            "cannot read t.yaml: no such file"
        );
    }
}
