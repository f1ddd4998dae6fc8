//! The same session through the session store trait: SQLite and the in-memory store hold the
//! same events as the JSONL log and resume to the same history.

use agent_memory_core::{InMemoryStore, SessionEvent as StoredEvent, SessionStore};
use agent_memory_sqlite::SqliteStore;
use agent_memory_turns::{ContextPolicy, Error, JsonlLog, MemoryStyle, Session, StoreLog, render};

use crate::fixture::{realistic, session_id};

#[test]
fn jsonl_and_sqlite_hold_the_same_events_and_resume_alike() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let id = session_id("realistic");
    let jsonl = realistic(JsonlLog::new(dir.path(), &id).unwrap_or_else(|e| panic!("{e}")));
    let sqlite = SqliteStore::open(dir.path().join("memory.db")).unwrap_or_else(|e| panic!("{e}"));
    let in_sqlite = realistic(StoreLog::new(&sqlite, id.clone()));
    assert_eq!(jsonl.history(), in_sqlite.history());

    let lines = std::fs::read_to_string(jsonl.log().path()).unwrap_or_else(|e| panic!("{e}"));
    let stored = sqlite.session_load(&id).unwrap_or_else(|e| panic!("{e}"));
    let payloads: Vec<&str> = stored.iter().map(|e| e.payload.as_str()).collect();
    assert_eq!(
        payloads,
        lines.lines().collect::<Vec<_>>(),
        "the store holds the JSONL lines"
    );

    drop(sqlite);
    let reopened =
        SqliteStore::open(dir.path().join("memory.db")).unwrap_or_else(|e| panic!("{e}"));
    let (from_sqlite, _) =
        Session::resume(StoreLog::new(&reopened, id.clone())).unwrap_or_else(|e| panic!("{e}"));
    let (from_jsonl, _) =
        Session::resume(JsonlLog::new(dir.path(), &id).unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
    for policy in [
        ContextPolicy::default(),
        ContextPolicy::default().with_memory_style(MemoryStyle::native()),
        ContextPolicy::keen().with_system_prompt("You are a coding agent."),
    ] {
        let render = |s: &agent_memory_turns::History| {
            let view = s.model_view(&policy);
            [
                render::to_pretty_json(&render::openai_chat(&view)),
                render::to_pretty_json(&render::openai_responses(&view)),
                render::to_pretty_json(&render::genkit(&view)),
                render::to_pretty_json(&render::anthropic(&view)),
                render::to_pretty_json(&render::gemini(&view)),
            ]
        };
        let expected = render(jsonl.history());
        assert_eq!(render(from_sqlite.history()), expected);
        assert_eq!(render(from_jsonl.history()), expected);
    }
}

#[test]
fn corrupt_store_events_are_reported_with_their_position() {
    let store = InMemoryStore::new();
    let id = session_id("s");
    let start = r#"{"type":"session_started","session":"s","started_at":0}"#;
    let cases = [
        (
            StoredEvent::new("user_message", "{not json"),
            "key must be a string",
        ),
        (
            StoredEvent::new("assistant_turn", r#"{"type":"user_message","text":"x"}"#),
            "stored as \"assistant_turn\" but holds user_message",
        ),
    ];
    for (i, (bad, reason)) in cases.into_iter().enumerate() {
        let id = session_id(&format!("s{i}"));
        store
            .session_append(&id, &[StoredEvent::new("session_started", start), bad])
            .unwrap_or_else(|e| panic!("{e}"));
        let err = Session::resume(StoreLog::new(&store, id.clone()))
            .map(|_| ())
            .unwrap_err();
        assert!(
            matches!(&err, Error::CorruptEvent { index: 1, .. }),
            "{err}"
        );
        assert!(err.to_string().contains(reason), "{err}");
    }
    let missing = Session::resume(StoreLog::new(&store, id))
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(&missing, Error::Store(e) if e.is_not_found()),
        "{missing}"
    );
}

/// A stored log that does not begin with `session_started` is reported naming its session,
/// from the store and from a JSONL log of a known session; a log read without knowing whose it
/// is names no session at all (rather than an empty one).
#[test]
fn a_log_without_its_start_names_the_session() {
    let store = InMemoryStore::new();
    let id = session_id("headless");
    let user = r#"{"type":"user_message","text":"hi"}"#;
    store
        .session_append(&id, &[StoredEvent::new("user_message", user)])
        .unwrap_or_else(|e| panic!("{e}"));
    let expected = "session \"headless\" is inconsistent at event 0: \
                    log begins with user_message instead of session_started";
    let from_store = Session::resume(StoreLog::new(&store, id.clone()))
        .map(|_| ())
        .unwrap_err();
    assert_eq!(from_store.to_string(), expected);

    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let named = JsonlLog::new(dir.path(), &id).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(named.path(), format!("{user}\n")).unwrap_or_else(|e| panic!("{e}"));
    let from_file = Session::resume(named).map(|_| ()).unwrap_err();
    assert_eq!(from_file.to_string(), expected);

    let unnamed = JsonlLog::at(dir.path().join("headless.jsonl"));
    let anonymous = Session::resume(unnamed).map(|_| ()).unwrap_err();
    assert_eq!(
        anonymous.to_string(),
        "log begins with user_message instead of session_started"
    );
}
