//! The JSONL log: append, resume, a torn last line, a corrupt line in the middle.

use std::fs;
use std::io::Write;

use agent_memory_core::{ManualClock, Timestamp};
use agent_memory_turns::{ContextPolicy, Error, EventLog, JsonlLog, Session, Warning, render};

use crate::fixture::{STARTED_AT, realistic, session_id};

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"))
}

fn model_json<L: EventLog>(session: &Session<L>) -> String {
    let view = session.history().model_view(&ContextPolicy::default());
    render::to_pretty_json(&render::openai_chat(&view))
}

#[test]
fn a_resumed_session_renders_the_same_model_view() {
    let dir = dir();
    let log = JsonlLog::new(dir.path(), &session_id("realistic")).unwrap_or_else(|e| panic!("{e}"));
    let session = realistic(log);
    let before = model_json(&session);
    let history = session.history().clone();
    drop(session);
    let log = JsonlLog::new(dir.path(), &session_id("realistic")).unwrap_or_else(|e| panic!("{e}"));
    let (mut resumed, warnings) = Session::resume(log).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(warnings, vec![]);
    assert_eq!(resumed.history(), &history);
    assert_eq!(model_json(&resumed), before);
    // The resumed session keeps appending to the same log.
    resumed
        .user_message("one more")
        .unwrap_or_else(|e| panic!("{e}"));
    let log = JsonlLog::new(dir.path(), &session_id("realistic")).unwrap_or_else(|e| panic!("{e}"));
    let (again, _) = Session::resume(log).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.history().entries().len(), history.entries().len() + 1);
}

fn started(dir: &std::path::Path) -> std::path::PathBuf {
    let clock = ManualClock::new(Timestamp::from_millis(STARTED_AT));
    let log = JsonlLog::new(dir, &session_id("s")).unwrap_or_else(|e| panic!("{e}"));
    let mut s = Session::start(log, session_id("s"), &clock).unwrap_or_else(|e| panic!("{e}"));
    s.user_message("first").unwrap_or_else(|e| panic!("{e}"));
    s.user_message("second").unwrap_or_else(|e| panic!("{e}"));
    s.log().path().to_path_buf()
}

fn append_raw(path: &std::path::Path, bytes: &[u8]) {
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{e}"));
    file.write_all(bytes).unwrap_or_else(|e| panic!("{e}"));
}

fn user_texts<L: EventLog>(session: &Session<L>) -> Vec<&str> {
    session.history().ui_view().map(|m| m.text).collect()
}

#[test]
fn a_torn_last_line_is_skipped_with_a_warning_and_removed() {
    let dir = dir();
    let path = started(dir.path());
    append_raw(&path, br#"{"type":"user_message","text":"cut sho"#);
    let (mut session, warnings) =
        Session::resume(JsonlLog::at(&path)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        warnings,
        vec![Warning::TornLastLine {
            path: path.clone(),
            line: 4,
            bytes: 38
        }]
    );
    assert!(
        warnings[0]
            .to_string()
            .starts_with("skipped torn last line 4 of session log "),
        "{}",
        warnings[0]
    );
    assert_eq!(user_texts(&session), vec!["first", "second"]);
    // The next append starts on a fresh line, and the log reads back whole.
    session
        .user_message("third")
        .unwrap_or_else(|e| panic!("{e}"));
    let (session, warnings) =
        Session::resume(JsonlLog::at(&path)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(warnings, vec![]);
    assert_eq!(user_texts(&session), vec!["first", "second", "third"]);
}

#[test]
fn reading_a_torn_log_leaves_the_file_as_it_was() {
    let dir = dir();
    let path = started(dir.path());
    append_raw(&path, br#"{"type":"user_message","text":"cut sho"#);
    let before = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
    let read = JsonlLog::read(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        read.warnings,
        vec![Warning::TornLastLine {
            path: path.clone(),
            line: 4,
            bytes: 38
        }]
    );
    assert_eq!(
        std::fs::read(&path).unwrap_or_else(|e| panic!("{e}")),
        before
    );
    // The same events as a load, which does repair the file.
    let loaded = JsonlLog::at(&path).load().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read.events, loaded.events);
    assert_ne!(
        std::fs::read(&path).unwrap_or_else(|e| panic!("{e}")),
        before
    );
}

#[test]
fn a_whole_last_event_without_its_newline_is_kept() {
    let dir = dir();
    let path = started(dir.path());
    append_raw(&path, br#"{"type":"user_message","text":"no newline"}"#);
    let (mut session, warnings) =
        Session::resume(JsonlLog::at(&path)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(warnings, vec![]);
    session
        .user_message("after")
        .unwrap_or_else(|e| panic!("{e}"));
    let (session, _) = Session::resume(JsonlLog::at(&path)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        user_texts(&session),
        vec!["first", "second", "no newline", "after"]
    );
}

#[test]
fn a_corrupt_middle_line_names_file_and_line() {
    let cases: [(&[u8], &str); 3] = [
        (b"{\"type\":\"user_message\",\"te\n", "EOF while parsing"),
        (b"{\"type\":\"mystery\"}\n", "unknown variant `mystery`"),
        (b"\n", "EOF while parsing"),
    ];
    for (bad, reason) in cases {
        let dir = dir();
        let path = started(dir.path());
        append_raw(&path, bad);
        append_raw(&path, b"{\"type\":\"user_message\",\"text\":\"later\"}\n");
        let err = Session::resume(JsonlLog::at(&path))
            .map(|_| ())
            .unwrap_err();
        let Error::CorruptLine {
            path: p,
            line,
            reason: r,
        } = &err
        else {
            panic!("{err}")
        };
        assert_eq!((p, *line), (&path, 4));
        assert!(r.contains(reason), "{r}");
        assert!(
            err.to_string()
                .starts_with(&format!("corrupt session log {}: line 4: ", path.display())),
            "{err}"
        );
    }
}

#[test]
fn session_ids_that_cannot_name_a_file_are_refused() {
    for (id, reason) in [
        ("../escape", "path separator"),
        ("a\\b", "path separator"),
        (".hidden", "dot"),
    ] {
        let err = JsonlLog::new("/tmp", &session_id(id))
            .map(|_| ())
            .unwrap_err();
        assert!(err.to_string().contains(reason), "{id}: {err}");
    }
    let missing = Session::resume(JsonlLog::at("/nonexistent/dir/s.jsonl"))
        .map(|_| ())
        .unwrap_err();
    assert!(missing.to_string().contains("not found"), "{missing}");
}

#[test]
fn starting_a_session_that_has_events_is_refused() {
    let dir = dir();
    let path = started(dir.path());
    let before = fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(Timestamp::from_millis(STARTED_AT));
    let again = Session::start(JsonlLog::at(&path), session_id("s"), &clock)
        .map(|_| ())
        .unwrap_err();
    assert!(
        again.to_string().contains("already has 3 events"),
        "{again}"
    );
    assert_eq!(
        fs::read(&path).unwrap_or_else(|e| panic!("{e}")),
        before,
        "the log changed"
    );

    let store = agent_memory_core::InMemoryStore::new();
    let log = || agent_memory_turns::StoreLog::new(&store, session_id("s"));
    Session::start(log(), session_id("s"), &clock).unwrap_or_else(|e| panic!("{e}"));
    let again = Session::start(log(), session_id("s"), &clock)
        .map(|_| ())
        .unwrap_err();
    assert!(
        again.to_string().contains("already has 1 events"),
        "{again}"
    );
}

#[test]
fn invalid_utf8_in_a_middle_line_names_file_and_line_and_leaves_the_file() {
    let dir = dir();
    let path = started(dir.path());
    append_raw(&path, b"{\"type\":\"user_message\",\"text\":\"caf\xe9\"}\n");
    append_raw(&path, b"{\"type\":\"user_message\",\"text\":\"later\"}\n");
    let before = fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
    let err = Session::resume(JsonlLog::at(&path))
        .map(|_| ())
        .unwrap_err();
    let Error::CorruptLine { path: p, line, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!((p, *line), (&path, 4), "{err}");
    assert_eq!(fs::read(&path).unwrap_or_else(|e| panic!("{e}")), before);
}

#[test]
fn invalid_utf8_in_a_torn_last_line_is_skipped_like_any_torn_line() {
    let dir = dir();
    let path = started(dir.path());
    // A kill in the middle of a multi-byte character leaves half of it.
    append_raw(&path, b"{\"type\":\"user_message\",\"text\":\"\xe2\x82");
    let (session, warnings) =
        Session::resume(JsonlLog::at(&path)).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(warnings[..], [Warning::TornLastLine { line: 4, .. }]),
        "{warnings:?}"
    );
    assert_eq!(user_texts(&session), vec!["first", "second"]);
}
