//! The contract of [`SessionStore`].

use crate::names::SessionId;
use crate::store::session::{SessionEvent, SessionStore, SessionSummary};
use crate::testkit::{Case, CaseResult};
use crate::{ensure, ensure_eq};

/// The suite's name in reports.
pub const SUITE: &str = "SessionStore";

/// Every case of the [`SessionStore`] contract.
pub fn cases<S: SessionStore>() -> Vec<Case<S>> {
    vec![
        Case {
            name: "unknown session is not found",
            run: unknown_session_is_not_found,
        },
        Case {
            name: "events load in append order",
            run: events_load_in_append_order,
        },
        Case {
            name: "append returns the log length",
            run: append_returns_the_log_length,
        },
        Case {
            name: "sessions are isolated",
            run: sessions_are_isolated,
        },
        Case {
            name: "list in id order with counts",
            run: list_in_id_order,
        },
        Case {
            name: "invalid event writes nothing",
            run: invalid_event_writes_nothing,
        },
        Case {
            name: "payloads keep any text",
            run: payloads_keep_any_text,
        },
        Case {
            name: "forget deletes one session's log only",
            run: forget_deletes_one_session_only,
        },
        Case {
            name: "create stores a new session whole",
            run: create_stores_a_new_session,
        },
        Case {
            name: "create refuses a session with events and writes nothing",
            run: create_refuses_an_existing_session,
        },
        Case {
            name: "create checks every event first",
            run: create_checks_every_event_first,
        },
    ]
}

fn forget_deletes_one_session_only<S: SessionStore>(store: &S) -> CaseResult {
    store.session_append(&session("keep"), &[event("user_message", "{}")])?;
    store.session_append(
        &session("drop"),
        &[event("user_message", "{}"), event("assistant_turn", "{}")],
    )?;
    ensure_eq!(store.session_forget(&session("drop"))?, 2);
    ensure!(
        matches!(store.session_load(&session("drop")), Err(e) if e.is_not_found()),
        "a forgotten session must be not found"
    );
    ensure_eq!(store.session_load(&session("keep"))?.len(), 1);
    ensure_eq!(store.session_forget(&session("drop"))?, 0);
    let ids: Vec<String> = store
        .session_list()?
        .into_iter()
        .map(|s| s.id.as_str().to_owned())
        .collect();
    ensure_eq!(ids, vec!["keep".to_owned()]);
    // Appending after a forget starts a new log.
    ensure_eq!(
        store.session_append(&session("drop"), &[event("user_message", "{}")])?,
        1
    );
    Ok(())
}

fn session(name: &str) -> SessionId {
    // The names used here are literals that satisfy every rule.
    SessionId::new(name).unwrap_or_else(|e| panic!("test session {name:?}: {e}"))
}

fn event(kind: &str, payload: &str) -> SessionEvent {
    SessionEvent::new(kind, payload)
}

fn unknown_session_is_not_found<S: SessionStore>(store: &S) -> CaseResult {
    let found = store.session_load(&session("absent"));
    ensure!(
        matches!(&found, Err(e) if e.is_not_found()),
        "loading an unknown session should be not found, got {found:?}"
    );
    ensure_eq!(
        store.session_list()?,
        vec![],
        "a fresh store lists no session"
    );
    Ok(())
}

fn events_load_in_append_order<S: SessionStore>(store: &S) -> CaseResult {
    let s = session("s1");
    let written: Vec<SessionEvent> = (0..25)
        .map(|i| {
            event(
                if i % 2 == 0 { "even" } else { "odd" },
                &format!("{{\"i\":{i}}}"),
            )
        })
        .collect();
    store.session_append(&s, &written[..1])?;
    store.session_append(&s, &written[1..10])?;
    for one in &written[10..] {
        store.session_append(&s, std::slice::from_ref(one))?;
    }
    ensure_eq!(store.session_load(&s)?, written);
    Ok(())
}

fn append_returns_the_log_length<S: SessionStore>(store: &S) -> CaseResult {
    let s = session("s1");
    ensure_eq!(store.session_append(&s, &[event("a", "1")])?, 1);
    ensure_eq!(
        store.session_append(&s, &[event("a", "2"), event("a", "3")])?,
        3
    );
    ensure_eq!(
        store.session_append(&s, &[])?,
        3,
        "an empty append changes nothing"
    );
    Ok(())
}

fn sessions_are_isolated<S: SessionStore>(store: &S) -> CaseResult {
    store.session_append(&session("a"), &[event("k", "a1")])?;
    store.session_append(&session("b"), &[event("k", "b1")])?;
    store.session_append(&session("a"), &[event("k", "a2")])?;
    ensure_eq!(
        store.session_load(&session("a"))?,
        vec![event("k", "a1"), event("k", "a2")]
    );
    ensure_eq!(store.session_load(&session("b"))?, vec![event("k", "b1")]);
    Ok(())
}

fn list_in_id_order<S: SessionStore>(store: &S) -> CaseResult {
    store.session_append(&session("zeta"), &[event("k", "1")])?;
    store.session_append(&session("alpha"), &[event("k", "1"), event("k", "2")])?;
    store.session_append(&session("Beta"), &[event("k", "1")])?;
    store.session_append(&session("empty"), &[])?;
    let summary = |id: &str, events| SessionSummary {
        id: session(id),
        events,
    };
    ensure_eq!(
        store.session_list()?,
        vec![summary("Beta", 1), summary("alpha", 2), summary("zeta", 1)]
    );
    Ok(())
}

fn invalid_event_writes_nothing<S: SessionStore>(store: &S) -> CaseResult {
    let s = session("s1");
    store.session_append(&s, &[event("k", "kept")])?;
    for bad in ["", "new\nline", &"k".repeat(65)] {
        let result = store.session_append(&s, &[event("k", "lost"), event(bad, "x")]);
        ensure!(
            result.is_err(),
            "kind {bad:?} should be refused, got {result:?}"
        );
    }
    ensure_eq!(
        store.session_load(&s)?,
        vec![event("k", "kept")],
        "a refused append left events behind"
    );
    let fresh = store.session_append(&session("s2"), &[event("", "x")]);
    ensure!(fresh.is_err(), "empty kind accepted: {fresh:?}");
    ensure!(
        store.session_load(&session("s2")).is_err(),
        "a refused append created the session"
    );
    Ok(())
}

fn payloads_keep_any_text<S: SessionStore>(store: &S) -> CaseResult {
    let s = session("text");
    let payloads = [
        "",
        "{\"text\":\"line one\\nline two\"}",
        "raw\nnewline\r\n and 'quotes' \"; DROP TABLE session_events; --",
        "ünïcødé \u{1F600} <tool_memory>x</tool_memory>",
    ];
    let written: Vec<SessionEvent> = payloads.iter().map(|p| event("k", p)).collect();
    store.session_append(&s, &written)?;
    ensure_eq!(store.session_load(&s)?, written);
    Ok(())
}

fn create_stores_a_new_session<S: SessionStore>(store: &S) -> CaseResult {
    let s = session("new");
    let events = vec![
        event("started", "1"),
        event("turn", "2"),
        event("turn", "3"),
    ];
    ensure_eq!(store.session_create(&s, &events)?, 3);
    ensure_eq!(store.session_load(&s)?, events);
    Ok(())
}

fn create_refuses_an_existing_session<S: SessionStore>(store: &S) -> CaseResult {
    let s = session("held");
    store.session_append(&s, &[event("started", "1"), event("turn", "2")])?;
    let again = store.session_create(&s, &[event("started", "again")]);
    ensure!(
        matches!(&again, Err(e) if e.is_conflict() && e.to_string().contains("already holds 2 event(s)")),
        "creating a session that has events should be a conflict, got {again:?}"
    );
    ensure_eq!(
        store.session_load(&s)?,
        vec![event("started", "1"), event("turn", "2")],
        "a refused create changed the log"
    );
    Ok(())
}

fn create_checks_every_event_first<S: SessionStore>(store: &S) -> CaseResult {
    let s = session("checked");
    let bad = store.session_create(&s, &[event("started", "1"), event("", "x")]);
    ensure!(
        matches!(bad, Err(crate::Error::InvalidInput { .. })),
        "an invalid event should be refused, got {bad:?}"
    );
    let empty = store.session_create(&s, &[]);
    ensure!(
        matches!(empty, Err(crate::Error::InvalidInput { .. })),
        "a session without events should be refused, got {empty:?}"
    );
    ensure!(
        store.session_load(&s).is_err(),
        "a refused create left a session behind"
    );
    Ok(())
}
