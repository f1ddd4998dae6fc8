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
//! - keys are `snake_case`, except inside another program's objects kept in its own shape
//!   (Trailblaze's tool logs, browser-agent-driver's trajectories in [`browser_compat`]);
//! - times are RFC 3339 strings in UTC with milliseconds (`2026-01-01T00:00:00.000Z`), made
//!   by [`time`];
//! - an error is `{"error": {"kind": ..., "message": ..., "input": ...}}` ([`Error`]);
//! - counts are unsigned integers, absent values are omitted rather than `null` unless the
//!   schema says otherwise.

pub mod browser;
pub mod browser_compat;
pub mod check;
pub mod database;
mod error;
pub mod evidence;
pub mod files;
pub mod listing;
pub mod memory;
pub mod notes;
pub mod operations;
pub mod persistent;
pub mod portable;
pub mod recording;
pub mod review;
pub mod runs;
pub mod stats;
pub mod tour;
pub mod trajectory;
pub mod turns;

use crate::database::Store;
pub use crate::error::{Error, ErrorKind, Result, ResultExt, one_line};
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
    /// The door the call came in by (`cli`, `mcp`, `inspector`, `python`, `node`): what a
    /// written item's provenance names as its client unless the input names another.
    pub client: Option<String>,
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
    pub error: Error,
}

/// The schema of `T`, as committed under `schemas/`: draft 2020-12, made [`portable`].
pub fn schema_of<T: JsonSchema>() -> Schema {
    SchemaGenerator::new(SchemaSettings::draft2020_12().with_transform(portable::transform()))
        .into_root_schema_for::<T>()
}

/// Every schema of the contract, by file stem: the error document, then each operation's
/// input and output as [`operations::schemas`] lists them (`<name>.input`, `<output>.output`).
/// The command line adds the schemas of what its own commands print.
pub fn schemas() -> Vec<(String, Schema)> {
    let mut all = vec![("error".to_owned(), schema_of::<ErrorDocument>())];
    all.extend(operations::schemas());
    all
}

/// A schema as committed: pretty JSON with a final newline.
pub fn schema_text(schema: &Schema) -> Result<String> {
    let mut text = serde_json::to_string_pretty(schema)?;
    text.push('\n');
    Ok(text)
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
            client: None,
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
        assert_eq!(
            (error.kind(), error.input()),
            (super::ErrorKind::InvalidInput, Some("fingerprint"))
        );
        assert!(error.message().contains("bogus"), "{error}");
        let long = "p".repeat(100_000);
        let error = recall
            .call(
                &env,
                serde_json::json!({"partition": long, "fingerprint": {"task": "t"}}),
            )
            .expect_err("too long");
        assert!(error.message().len() < 1_000);
    }
}
