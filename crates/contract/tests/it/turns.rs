//! `turns_history`, `turns_compact` and `turns_tool_history` from JSON: a coding session
//! stored or in a log file, shown in every view, compacted, its tool-history setting read and
//! set, and every kind of refusal.

use std::path::Path;

use agent_memory_contract::files::FileAccess;
use serde_json::{Map, Value, json};

use crate::calls::{NOW, answer, confined_to, env, env_at, kind, store};

/// A session of three turns: one that changed files, one that ran a failing command, one
/// interrupted.
fn events(session: &str) -> Vec<Value> {
    vec![
        json!({"type": "session_started", "session": session, "started_at": 1_767_225_600_000_i64}),
        json!({"type": "user_message", "text": "Add a --verbose flag."}),
        json!({"type": "assistant_turn", "text": "Added it in src/cli.rs.",
               "memory": {"files_changed": ["src/cli.rs"]}}),
        json!({"type": "user_message", "text": "Run the tests."}),
        json!({"type": "assistant_turn", "text": "One fails.",
               "memory": {"failed_commands": [{"command": "cargo test", "exit_code": 101}]},
               "tool_calls": [{"id": "c1", "tool": "bash", "input": {"command": "cargo test"},
                               "output": "test result: FAILED"}]}),
        json!({"type": "user_message", "text": "Document it."}),
        json!({"type": "assistant_turn", "text": "I started on the", "interrupted": true,
               "memory": {"files_changed": ["README.md"]}}),
    ]
}

/// The session's events as a JSON-lines log at `path`, with `tail` after them.
fn write_log(path: &Path, session: &str, tail: &str) {
    let mut text: String = events(session)
        .iter()
        .map(|event| format!("{event}\n"))
        .collect();
    text.push_str(tail);
    std::fs::write(path, text).expect("write the log");
}

#[test]
fn a_session_is_shown_in_every_view_from_the_store_or_a_log() {
    let store = store();
    let env = env(&store);
    let temp = tempfile::tempdir().expect("a folder");
    let dir = temp.path();
    let appended = answer(
        &env,
        "turns_append",
        json!({"session": "s1", "events": events("s1")}),
        dir,
    );
    assert_eq!(appended["appended"], 7, "{appended}");
    let log = dir.join("s2.jsonl");
    write_log(&log, "s2", r#"{"type":"user_message","te"#);
    let log = log.display().to_string();
    let mut answers = Map::new();
    for (case, input) in [
        ("ui", json!({"session": "s1"})),
        ("ui of a log with a torn last line", json!({"log": log})),
        (
            "model",
            json!({"session": "s1", "view": "model", "recent_memories": 1,
                   "system_prompt": "You are careful.", "mark_interrupted": true}),
        ),
        (
            "model, native",
            json!({"session": "s1", "view": "model", "memory_style": "native"}),
        ),
        (
            "anthropic",
            json!({"log": log, "provider": "anthropic", "system_prompt": "You are careful."}),
        ),
    ] {
        answers.insert(case.to_owned(), answer(&env, "turns_history", input, dir));
    }
    assert!(answers.values().all(|a| kind(a) == "none"));
    assert_eq!(
        answers["ui"]["messages"][5]["interrupted"], true,
        "{}",
        answers["ui"]
    );
    insta::assert_json_snapshot!(answers);
}

#[test]
fn showing_a_session_refuses_what_names_none() {
    let store = store();
    let temp = tempfile::tempdir().expect("a folder");
    let dir = temp.path();
    let env = env(&store);
    answer(
        &env,
        "turns_append",
        json!({"session": "s1", "events": events("s1")}),
        dir,
    );
    std::fs::write(
        dir.join("headless.jsonl"),
        "{\"type\":\"user_message\",\"text\":\"hi\"}\n",
    )
    .expect("write");
    std::fs::write(dir.join("corrupt.jsonl"), "{\"type\":\"user_message\"}\n").expect("write");
    let at = |name: &str| dir.join(name).display().to_string();
    let mut answers = Map::new();
    for (case, input) in [
        ("neither", json!({})),
        ("both", json!({"session": "s1", "log": at("s1.jsonl")})),
        ("unknown session", json!({"session": "nobody"})),
        ("invalid session", json!({"session": ""})),
        ("missing log", json!({"log": at("absent.jsonl")})),
        ("headless log", json!({"log": at("headless.jsonl")})),
        ("corrupt log", json!({"log": at("corrupt.jsonl")})),
        (
            "ui view for a provider",
            json!({"session": "s1", "view": "ui", "provider": "gemini"}),
        ),
        (
            "unknown provider",
            json!({"session": "s1", "provider": "openai"}),
        ),
    ] {
        answers.insert(case.to_owned(), answer(&env, "turns_history", input, dir));
    }
    let elsewhere = tempfile::tempdir().expect("a folder");
    let confined = env_at(&store, NOW, confined_to(elsewhere.path()));
    answers.insert(
        "a log outside a server's folders".to_owned(),
        answer(
            &confined,
            "turns_history",
            json!({"log": at("headless.jsonl")}),
            dir,
        ),
    );
    insta::assert_json_snapshot!(answers);
}

#[test]
fn compacting_keeps_the_memories_of_the_turns_it_folds() {
    let store = store();
    let env = env(&store);
    let temp = tempfile::tempdir().expect("a folder");
    let dir = temp.path();
    answer(
        &env,
        "turns_append",
        json!({"session": "s1", "events": events("s1")}),
        dir,
    );
    let log = dir.join("s2.jsonl");
    write_log(&log, "s2", "");
    let log_path = log.display().to_string();
    let mut answers = Map::new();
    for (case, input) in [
        ("blank summary", json!({"session": "s1", "summary": " \n "})),
        (
            "too few turns",
            json!({"session": "s1", "summary": "x", "keep_last": 3}),
        ),
        (
            "unknown session",
            json!({"session": "nobody", "summary": "x"}),
        ),
        ("neither", json!({"summary": "x"})),
        (
            "stored",
            json!({"session": "s1", "summary": " Added --verbose. ", "keep_last": 1}),
        ),
        ("log", json!({"log": log_path, "summary": "Done."})),
    ] {
        answers.insert(case.to_owned(), answer(&env, "turns_compact", input, dir));
    }
    // In the order of the cases (the map sorts them).
    let kinds: Vec<&str> = [
        "blank summary",
        "too few turns",
        "unknown session",
        "neither",
        "stored",
        "log",
    ]
    .iter()
    .map(|case| kind(&answers[*case]))
    .collect();
    assert_eq!(
        kinds,
        [
            "invalid_input",
            "invalid_input",
            "not_found",
            "invalid_input",
            "none",
            "none"
        ],
        "{answers:#?}"
    );
    let last = std::fs::read_to_string(&log).expect("read");
    assert!(
        last.lines()
            .last()
            .is_some_and(|l| l.starts_with(r#"{"type":"compaction_applied""#)),
        "{last}"
    );
    // The summary replaces what it folded, in every later view.
    let ui = answer(&env, "turns_history", json!({"session": "s1"}), dir);
    answers.insert("ui after".to_owned(), ui);
    // A server's clients may not have a log rewritten.
    let confined = env_at(&store, NOW, confined_to(dir));
    let refused = answer(
        &confined,
        "turns_compact",
        json!({"log": log_path, "summary": "again"}),
        dir,
    );
    assert_eq!(kind(&refused), "invalid_input");
    answers.insert("a log for a server's client".to_owned(), refused);
    insta::assert_json_snapshot!(answers);
}

#[test]
fn the_tool_history_setting_is_read_and_set() {
    let store = store();
    let env = env(&store);
    let temp = tempfile::tempdir().expect("a folder");
    let dir = temp.path();
    answer(
        &env,
        "turns_append",
        json!({"session": "s1", "events": events("s1")}),
        dir,
    );
    let mut answers = Map::new();
    for (case, input) in [
        ("read", json!({"session": "s1"})),
        ("set", json!({"session": "s1", "mode": "full"})),
        ("unknown mode", json!({"session": "s1", "mode": "all"})),
        ("unknown session", json!({"session": "nobody"})),
        (
            "setting an unknown session",
            json!({"session": "nobody", "mode": "none"}),
        ),
    ] {
        let answered = answer(&env, "turns_tool_history", input, dir);
        // The view's payload is `turns_view`'s; only the setting matters here.
        let shown = match answered.get("tool_history") {
            Some(setting) => json!({"tool_history": setting, "turns": answered["turns"]}),
            None => answered,
        };
        answers.insert(case.to_owned(), shown);
    }
    let events = answer(
        &env_at(&store, NOW, FileAccess::Any),
        "turns_history",
        json!({"session": "s1", "view": "ui"}),
        dir,
    );
    assert_eq!(kind(&events), "none", "the session still forms a history");
    insta::assert_json_snapshot!(answers);
}
