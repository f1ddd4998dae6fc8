//! What the tests of single operations share: an environment on a fresh store, and an
//! operation called from JSON with its answer as JSON, success or error alike, so a snapshot
//! shows exactly what every door answers.

use std::path::Path;
use std::sync::Arc;

use agent_memory_contract::database::Store;
use agent_memory_contract::files::{Confined, FileAccess};
use agent_memory_contract::{Env, operations};
use agent_memory_core::{ManualClock, SeededIds, Timestamp};
use serde_json::{Value, json};

/// "Now" of every call: the reference browser sample's, so its trajectories are fresh.
pub const NOW: i64 = 1_795_321_223_974;

/// A private SQLite store in memory, whose own clock (the write times it keeps) stands at
/// [`NOW`], so answers that show them are the same every run.
pub fn store() -> Store {
    let options = agent_memory_sqlite::SqliteOptions::default()
        .with_clock(ManualClock::new(Timestamp::from_millis(NOW)));
    Arc::new(
        agent_memory_sqlite::SqliteStore::open_in_memory_with(&options)
            .expect("an in-memory store"),
    )
}

/// An environment on `store` at [`NOW`], with seeded ids, reading any file.
pub fn env(store: &Store) -> Env<'_> {
    env_at(store, NOW, FileAccess::Any)
}

/// An environment on `store` at `now`, with seeded ids and `files`.
pub fn env_at(store: &Store, now: i64, files: FileAccess) -> Env<'_> {
    Env {
        client: None,
        store,
        clock: Box::new(ManualClock::new(Timestamp::from_millis(now))),
        ids: Box::new(SeededIds::new(7)),
        files,
    }
}

/// What a server's clients may read: the files inside `folder` only.
pub fn confined_to(folder: &Path) -> FileAccess {
    FileAccess::Within(
        Confined::new(&[folder.to_path_buf()], "allow the folder").expect("a folder to allow"),
    )
}

/// The answer of operation `name` to `input`: its output, or `{"error": ...}`, with `dir`
/// (a test's temporary folder) written as `[dir]` wherever it appears.
pub fn answer(env: &Env<'_>, name: &str, input: Value, dir: &Path) -> Value {
    let operation = operations::find(name).unwrap_or_else(|| panic!("no operation {name}"));
    let value = match operation.call(env, input) {
        Ok(output) => output,
        Err(error) => json!({ "error": error }),
    };
    let text = value.to_string();
    let shown = text.replace(&dir.display().to_string(), "[dir]");
    serde_json::from_str(&shown).expect("still JSON")
}

/// The kind of an error answer, for tests that check it among other things.
pub fn kind(answer: &Value) -> &str {
    answer["error"]["kind"].as_str().unwrap_or("none")
}

/// A recorded browser run of two turns that found what it looked for (`run-1`).
pub fn green_tea_run() -> Value {
    json!({
        "goal": "find green tea",
        "start_url": "https://shop.test/",
        "turns": [
            {"url": "https://shop.test/", "action": {"action": "click", "selector": "#search"},
             "verified": true, "duration_ms": 900},
            {"url": "https://shop.test/results", "action": "{\"action\":\"complete\"}",
             "verified": true, "duration_ms": 100}
        ],
        "success": true,
        "outcome": "found it",
        "session_id": "tea-1",
        "final_url": "https://shop.test/results",
        "run_id": "run-1"
    })
}

/// A coding session `code-1` of three events: started, a request, a turn that changed a file.
pub fn fixed_test_events() -> Value {
    json!([
        {"type": "session_started", "session": "code-1", "started_at": 1_767_225_600_000_i64},
        {"type": "user_message", "text": "fix the flaky test"},
        {"type": "assistant_turn", "text": "Fixed.", "memory": {"files_changed": ["src/retry.rs"]}}
    ])
}
