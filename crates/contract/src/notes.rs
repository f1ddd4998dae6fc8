//! `notes`: the notes memory through the memory tool's own command union. The input is the
//! `memory_20250818` tool's input (`{"command": "view", "path": ..., "view_range": [..]}`,
//! `create`, `str_replace`, `insert`, `delete`, `rename`) plus a `search` command, a `scope`
//! and optional `secrets`; the output carries the text the tool answers with.

use std::collections::BTreeMap;

use crate::Result;
use agent_memory_core::Scope;
use agent_memory_notes::{Command, Notes, Secrets};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Env;

pub use agent_memory_notes::{DEFAULT_SEARCH_LIMIT, MemoryPath, ROOT};

/// The scope notes are in when the input names none.
pub const DEFAULT_SCOPE: &str = "default";

/// One command of the memory tool on the notes of a scope.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NotesInput {
    /// The command and its arguments, exactly as the memory tool sends them.
    #[serde(flatten)]
    pub command: NotesCommand,
    /// Whose notes: each scope is a `/memories` tree of its own; `default` when absent.
    #[serde(default)]
    pub scope: Option<String>,
    /// Values never to store or show, by name: each occurrence in the command's texts
    /// becomes `${name}` first.
    #[serde(default)]
    pub secrets: Option<BTreeMap<String, String>>,
}

/// The commands: the memory tool's six, with its argument names, and `search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum NotesCommand {
    /// A directory's listing (two levels deep, with sizes) or a file's numbered lines.
    View {
        /// A path under `/memories`.
        path: String,
        /// `[first, last]` lines of a file, 1-based; `last` may be -1 for the end.
        #[serde(default)]
        view_range: Option<[i64; 2]>,
    },
    /// Creates a file; fails when one is there.
    Create {
        /// The new file, under `/memories`.
        path: String,
        /// Its text.
        file_text: String,
    },
    /// Replaces the one occurrence of `old_str` in a file.
    StrReplace {
        /// The file.
        path: String,
        /// The text to replace; it must occur exactly once.
        old_str: String,
        /// Its replacement.
        new_str: String,
    },
    /// Inserts a line after line `insert_line` (0: at the top).
    Insert {
        /// The file.
        path: String,
        /// The line after which the text goes.
        insert_line: i64,
        /// The text.
        insert_text: String,
    },
    /// Deletes a file, or a directory with everything in it.
    Delete {
        /// The file or directory.
        path: String,
    },
    /// Renames or moves a file or a directory.
    Rename {
        /// Where it is.
        old_path: String,
        /// Where it goes; nothing may be there.
        new_path: String,
    },
    /// Finds the files holding every word of `query`, with their matching lines.
    Search {
        /// Words separated by spaces; ASCII case is ignored.
        query: String,
        /// The directory to search; `/memories` when absent.
        #[serde(default)]
        path: Option<String>,
        /// The most files to show; 20 when absent.
        #[serde(default)]
        limit: Option<usize>,
    },
}

impl NotesCommand {
    /// Whether the command only reads (`view`, `search`).
    pub fn reads_only(&self) -> bool {
        matches!(
            self,
            NotesCommand::View { .. } | NotesCommand::Search { .. }
        )
    }
}

/// Whether the JSON input of `notes` only reads: its command is `view` or `search`. A read
/// of a database that does not exist yet answers as on an empty one and creates nothing.
pub fn reads_only(input: &serde_json::Value) -> bool {
    matches!(
        input.get("command").and_then(serde_json::Value::as_str),
        Some("view" | "search")
    )
}

/// What a notes command answered.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NotesOutput {
    /// The text the memory tool returns: a listing, a file with line numbers, or a
    /// confirmation such as `File created successfully at: /memories/notes.txt`.
    pub text: String,
    /// The scope the command ran in.
    pub scope: String,
    /// For `search`: each matching line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<NoteMatch>,
}

/// A line a search found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NoteMatch {
    /// The file, as `/memories/...`.
    pub path: String,
    /// The line's number, 1-based.
    pub line: usize,
    /// The line.
    pub text: String,
}

impl From<NotesCommand> for Command {
    fn from(command: NotesCommand) -> Self {
        match command {
            NotesCommand::View { path, view_range } => Command::View { path, view_range },
            NotesCommand::Create { path, file_text } => Command::Create { path, file_text },
            NotesCommand::StrReplace {
                path,
                old_str,
                new_str,
            } => Command::StrReplace {
                path,
                old_str,
                new_str,
            },
            NotesCommand::Insert {
                path,
                insert_line,
                insert_text,
            } => Command::Insert {
                path,
                insert_line,
                insert_text,
            },
            NotesCommand::Delete { path } => Command::Delete { path },
            NotesCommand::Rename { old_path, new_path } => Command::Rename { old_path, new_path },
            NotesCommand::Search { query, path, limit } => Command::Search { query, path, limit },
        }
    }
}

/// Runs one notes command.
pub fn notes(env: &Env<'_>, input: NotesInput) -> Result<NotesOutput> {
    let scope = Scope::new(input.scope.as_deref().unwrap_or(DEFAULT_SCOPE))?;
    let mut secrets = Secrets::new();
    for (key, value) in input.secrets.iter().flatten() {
        secrets.add(key, value)?;
    }
    let notes = Notes::new(env.store, scope.clone()).with_secrets(secrets);
    let outcome = notes.execute(&input.command.into())?;
    Ok(NotesOutput {
        text: outcome.text,
        scope: scope.into_string(),
        matches: outcome
            .matches
            .into_iter()
            .map(|m| NoteMatch {
                path: m.path,
                line: m.line,
                text: m.text,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::operations::find;

    fn call(env: &crate::Env<'_>, input: serde_json::Value) -> Result<String, (String, String)> {
        let op = find("notes").expect("notes");
        match op.call(env, input) {
            Ok(out) => Ok(out["text"].as_str().unwrap_or_default().to_owned()),
            Err(e) => Err((e.kind().to_string(), e.message().to_owned())),
        }
    }

    #[test]
    fn the_memory_tools_input_runs_as_it_is() {
        let store = crate::tests::in_memory();
        let env = crate::tests::env_on(&store);
        assert_eq!(
            call(
                &env,
                json!({"command": "create", "path": "/memories/a.md", "file_text": "hi\n"})
            ),
            Ok("File created successfully at: /memories/a.md".to_owned())
        );
        assert_eq!(
            call(
                &env,
                json!({"command": "view", "path": "/memories/a.md", "view_range": [1, -1]})
            ),
            Ok(
                "Here's the content of /memories/a.md with line numbers:\n     1\thi\n     2\t"
                    .to_owned()
            )
        );
        assert_eq!(
            call(
                &env,
                json!({"command": "create", "path": "/memories/a.md", "file_text": "x"})
            ),
            Err((
                "conflict".to_owned(),
                "File /memories/a.md already exists".to_owned()
            ))
        );
        assert_eq!(
            call(
                &env,
                json!({"command": "view", "path": "/memories/a.md", "scope": "other"})
            ),
            Err((
                "not_found".to_owned(),
                "The path /memories/a.md does not exist. Please provide a valid path.".to_owned()
            ))
        );
        let unknown = call(&env, json!({"command": "chmod", "path": "/memories/a.md"}));
        assert!(
            matches!(&unknown, Err((kind, m)) if kind == "invalid_input" && m.contains("notes")),
            "{unknown:?}"
        );
    }
}
