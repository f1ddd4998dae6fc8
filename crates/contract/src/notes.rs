//! `notes`: the notes memory through the memory tool's own command union. The input is the
//! `memory_20250818` tool's input (`{"command": "view", "path": ..., "view_range": [..]}`,
//! `create`, `str_replace`, `insert`, `delete`, `rename`) plus a `search` command, a `scope`
//! and optional `secrets`; the output carries the text the tool answers with. `sdk` names the
//! Anthropic SDK whose local filesystem memory tool a handler stands in for, so the answers
//! are that tool's texts; `max_note_bytes` raises or lowers the per-note limit.

use std::collections::BTreeMap;

use crate::Result;
use agent_memory_core::screen::ScreenPolicy;
use agent_memory_core::store::notes::NoteLimits;
use agent_memory_core::{ManualClock, Scope, Source};
use agent_memory_notes::{Command, Notes, Secrets, Wording, Writer};
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
    /// Answer with the texts of that Anthropic SDK's local filesystem memory tool
    /// (`BetaLocalFilesystemMemoryTool`); the tool's documented texts when absent.
    #[serde(default)]
    pub sdk: Option<NotesSdk>,
    /// The largest note a write may leave, in bytes of UTF-8 text: 262,144 (256 KiB) when
    /// absent, at most 67,108,864 (a scope's whole limit). A write past it fails, naming it.
    #[serde(default)]
    #[schemars(range(min = 1, max = 67_108_864))]
    pub max_note_bytes: Option<u64>,
    /// Who writes: `model` (default), `user`, `tool:NAME`, `page:URL`.
    #[serde(default)]
    pub source: Option<String>,
    /// The session or run of the write.
    #[serde(default)]
    pub session: Option<String>,
    /// `view`: wrap a file in a `<memory-item>` block.
    #[serde(default)]
    pub as_data: bool,
}

/// The Anthropic SDK whose local filesystem memory tool's texts a command answers with.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum NotesSdk {
    /// The Python SDK (`anthropic`): `BetaLocalFilesystemMemoryTool`.
    Python,
    /// The TypeScript SDK (`@anthropic-ai/sdk`): `BetaLocalFilesystemMemoryTool`.
    Typescript,
}

impl From<NotesSdk> for Wording {
    fn from(sdk: NotesSdk) -> Self {
        match sdk {
            NotesSdk::Python => Wording::PythonSdk,
            NotesSdk::Typescript => Wording::TypeScriptSdk,
        }
    }
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
    let mut limits = NoteLimits::default();
    if let Some(bytes) = input.max_note_bytes {
        if bytes == 0 || bytes > limits.max_scope_bytes {
            return Err(crate::Error::invalid(
                "max_note_bytes",
                format!(
                    "max_note_bytes is {bytes}, it must be from 1 to {} (a scope's whole limit)",
                    limits.max_scope_bytes
                ),
            ));
        }
        limits.max_note_bytes = bytes;
    }
    // A scope's MEMORY.md is its persistent memory: no write of it may hold a secret.
    match &input.command {
        NotesCommand::Create { path, file_text } => {
            crate::persistent::check_note_write(&scope, path, file_text)?;
        }
        NotesCommand::StrReplace { path, new_str, .. } => {
            crate::persistent::check_note_write(&scope, path, new_str)?;
        }
        NotesCommand::Insert {
            path, insert_text, ..
        } => crate::persistent::check_note_write(&scope, path, insert_text)?,
        NotesCommand::Rename { old_path, new_path } => {
            let moved = agent_memory_notes::MemoryPath::parse(old_path)
                .ok()
                .and_then(|p| p.note().cloned());
            if let Some(note) = moved
                && let Some(text) = env.store.note_read(&scope, &note)?
            {
                crate::persistent::check_note_write(&scope, new_path, &text)?;
            }
        }
        NotesCommand::View { .. } | NotesCommand::Delete { .. } | NotesCommand::Search { .. } => {}
    }
    let wording = input.sdk.map(Wording::from).unwrap_or_default();
    let writer = Writer {
        source: match input.source.as_deref() {
            Some(source) => Source::parse(source)?,
            None => Source::Model(String::new()),
        },
        session: input.session,
        client: env.client.clone(),
    };
    let policy = if input.command.reads_only() {
        ScreenPolicy::Off
    } else {
        crate::evidence::policy(env)?
    };
    let notes = Notes::new(env.store, scope.clone())
        .with_secrets(secrets)
        .with_limits(limits)
        .with_wording(wording)
        .with_writer(writer)
        .with_screen(policy)
        .with_data_blocks(input.as_data)
        .with_clock(ManualClock::new(env.clock.now()));
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

    /// A scope's MEMORY.md is its persistent memory: no notes command writes a secret into
    /// it (create, str_replace, insert, or a rename onto it), whatever the scope, and the
    /// refusal never quotes the secret; other notes take any text.
    #[test]
    fn no_notes_command_writes_a_secret_into_a_memory_file() {
        let store = crate::tests::in_memory();
        let env = crate::tests::env_on(&store);
        let secret = "api_key: sk-1234567890abcdefghijklmnopqrstuvwxyz";
        let refused = |input: serde_json::Value| {
            let (kind, message) = call(&env, input).expect_err("a secret in a memory file");
            assert_eq!(kind, "invalid_input", "{message}");
            assert!(!message.contains("sk-1234567890"), "{message}");
        };
        for scope in ["global", "app"] {
            refused(json!({"scope": scope, "command": "create",
                           "path": "/memories/MEMORY.md", "file_text": secret}));
        }
        call(
            &env,
            json!({"scope": "app", "command": "create", "path": "/memories/MEMORY.md",
                   "file_text": "- run the tests\n"}),
        )
        .expect("a memory without a secret");
        refused(
            json!({"scope": "app", "command": "str_replace", "path": "/memories/MEMORY.md",
                       "old_str": "run the tests", "new_str": secret}),
        );
        refused(
            json!({"scope": "app", "command": "insert", "path": "/memories/MEMORY.md",
                       "insert_line": 0, "insert_text": secret}),
        );
        call(
            &env,
            json!({"scope": "web", "command": "create", "path": "/memories/keys.md",
                   "file_text": secret}),
        )
        .expect("another note takes any text");
        refused(json!({"scope": "web", "command": "rename",
                       "old_path": "/memories/keys.md", "new_path": "/memories/MEMORY.md"}));
        let kept = call(
            &env,
            json!({"scope": "app", "command": "view", "path": "/memories/MEMORY.md"}),
        )
        .expect("view");
        assert!(
            kept.contains("run the tests") && !kept.contains("sk-"),
            "{kept}"
        );
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

    #[test]
    fn an_sdk_is_answered_in_its_own_texts() {
        let store = crate::tests::in_memory();
        let env = crate::tests::env_on(&store);
        let outside = |sdk: Option<&str>| {
            let mut input = json!({"command": "view", "path": "/etc/passwd"});
            if let Some(sdk) = sdk {
                input["sdk"] = json!(sdk);
            }
            call(&env, input).map_err(|(_, message)| message)
        };
        assert_eq!(
            outside(None),
            Err(r#"invalid path "/etc/passwd": must start with /memories"#.to_owned())
        );
        for sdk in ["python", "typescript"] {
            assert_eq!(
                outside(Some(sdk)),
                Err("Path must start with /memories, got: /etc/passwd".to_owned())
            );
        }
        let unknown = outside(Some("ruby"));
        assert!(
            matches!(&unknown, Err(m) if m.contains("ruby")),
            "{unknown:?}"
        );
    }

    #[test]
    fn the_note_limit_is_the_callers_to_set() {
        let store = crate::tests::in_memory();
        let env = crate::tests::env_on(&store);
        let big = "x".repeat(300 * 1024);
        let create = |path: &str, max: Option<u64>| {
            let mut input = json!({"command": "create", "path": path, "file_text": big});
            if let Some(max) = max {
                input["max_note_bytes"] = json!(max);
            }
            call(&env, input)
        };
        assert_eq!(
            create("/memories/a.md", None),
            Err((
                "invalid_input".to_owned(),
                "File /memories/a.md would be 307200 bytes, over the limit of 262144 bytes per file (max_note_bytes)".to_owned()
            ))
        );
        assert_eq!(
            create("/memories/a.md", Some(1024 * 1024)),
            Ok("File created successfully at: /memories/a.md".to_owned())
        );
        assert_eq!(
            create("/memories/b.md", Some(1000)),
            Err((
                "invalid_input".to_owned(),
                "File /memories/b.md would be 307200 bytes, over the limit of 1000 bytes per file (max_note_bytes)".to_owned()
            ))
        );
        for max in [0, 64 * 1024 * 1024 + 1] {
            let refused = create("/memories/c.md", Some(max));
            assert!(
                matches!(&refused, Err((kind, m)) if kind == "invalid_input" && m.contains("max_note_bytes")),
                "{refused:?}"
            );
        }
    }
}
