//! The contract of [`SessionStore`].

use crate::names::SessionId;
use crate::store::AuditStore;
use crate::store::session::{SessionAppended, SessionEvent, SessionStore};
use crate::testkit::{
    Case, CaseResult, Violation, forgets_of, forgetter, forgot, set_now, writes_of,
};
use crate::time::Timestamp;
use crate::{ensure, ensure_eq};

/// The suite's name in reports.
pub const SUITE: &str = "SessionStore";

/// Every case of the [`SessionStore`] contract.
pub fn cases<S: SessionStore + AuditStore>() -> Vec<Case<S>> {
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
            name: "events page from a position, with the log's length",
            run: events_page_from_a_position,
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
            name: "list stamps each session's last write",
            run: list_stamps_the_last_write,
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
        Case {
            name: "append at the expected length writes",
            run: append_at_the_expected_length_writes,
        },
        Case {
            name: "append at a stale length of the stored events is already stored",
            run: append_at_a_stale_length_is_already_stored,
        },
        Case {
            name: "append at another length is a conflict naming both and writes nothing",
            run: append_at_another_length_is_a_conflict,
        },
        Case {
            name: "append at checks every event first",
            run: append_at_checks_every_event_first,
        },
        Case {
            name: "each writer's run of events is one entry of the audit trail",
            run: each_run_of_events_is_audited,
        },
        Case {
            name: "an event keeps who appended it, at the store's time",
            run: events_keep_their_writer,
        },
        Case {
            name: "concurrent appends at one position write once",
            run: concurrent_appends_at_one_position_write_once,
        },
        Case {
            name: "forget by writer takes every session the writer appended to, whole",
            run: forget_by_writer_takes_whole_sessions,
        },
    ]
}

fn forget_by_writer_takes_whole_sessions<S: SessionStore + AuditStore>(store: &S) -> CaseResult {
    use crate::evidence::Writer;
    use crate::provenance::{Provenance, Source};
    let page = || Source::Page("https://evil.test/".to_owned());
    let by = |source: Source, client: &str| {
        Provenance::new(source, Timestamp::from_millis(1))
            .with_session("run-3")
            .with_client(client)
    };
    let user = by(Source::User, "cli");
    let poisoned = by(page(), "mcp:agent");
    store.session_append(
        &session("a"),
        &[
            event("user_message", "hi").with_writer(user.clone()),
            event("tool_result", "page text").with_writer(poisoned.clone()),
            event("assistant_turn", "ok").with_writer(user.clone()),
        ],
    )?;
    store.session_append(
        &session("b"),
        &[event("tool_result", "x").with_writer(poisoned)],
    )?;
    store.session_append(
        &session("c"),
        &[event("user_message", "mine").with_writer(user)],
    )?;
    store.session_append(&session("d"), &[event("user_message", "no writer")])?;
    ensure!(
        store
            .session_forget_by(&Writer::default(), &forgetter())
            .is_err(),
        "a filter naming nothing was accepted"
    );
    let writer = Writer {
        source: Some(page()),
        ..Writer::default()
    };
    ensure_eq!(
        store.session_forget_by(&writer, &forgetter())?,
        vec![(session("a"), 3), (session("b"), 1)]
    );
    for gone in ["a", "b"] {
        ensure!(
            matches!(store.session_load(&session(gone)), Err(e) if e.is_not_found()),
            "session {gone} kept some of its log"
        );
    }
    ensure_eq!(store.session_load(&session("c"))?.len(), 1);
    ensure_eq!(
        store.session_load(&session("d"))?.len(),
        1,
        "an event without a writer"
    );
    ensure_eq!(store.session_forget_by(&writer, &forgetter())?, Vec::new());
    ensure_eq!(
        forgets_of(store, "turns")?,
        vec![forgot("", "a", "3 events"), forgot("", "b", "1 event")]
    );
    Ok(())
}

fn forget_deletes_one_session_only<S: SessionStore + AuditStore>(store: &S) -> CaseResult {
    store.session_append(&session("keep"), &[event("user_message", "{}")])?;
    store.session_append(
        &session("drop"),
        &[event("user_message", "{}"), event("assistant_turn", "{}")],
    )?;
    ensure_eq!(store.session_forget(&session("drop"), &forgetter())?, 2);
    ensure!(
        matches!(store.session_load(&session("drop")), Err(e) if e.is_not_found()),
        "a forgotten session must be not found"
    );
    ensure_eq!(store.session_load(&session("keep"))?.len(), 1);
    ensure_eq!(store.session_forget(&session("drop"), &forgetter())?, 0);
    // Each forget is in the audit trail with who asked, the second too.
    ensure_eq!(
        forgets_of(store, "turns")?,
        vec![
            forgot("", "drop", "2 events"),
            forgot("", "drop", "0 events")
        ]
    );
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

fn events_page_from_a_position<S: SessionStore>(store: &S) -> CaseResult {
    let s = session("s1");
    let missing = store.session_page(&s, 0, 10);
    ensure!(
        matches!(&missing, Err(e) if e.is_not_found()),
        "a page of an unknown session should be not found, got {missing:?}"
    );
    let written: Vec<SessionEvent> = (0..7)
        .map(|i| event("e", &format!("{{\"i\":{i}}}")))
        .collect();
    store.session_append(&s, &written[..3])?;
    store.session_append(&s, &written[3..])?;
    store.session_append(&session("other"), &written[..2])?;
    let mut walked = Vec::new();
    let mut from = 0;
    loop {
        let page = store.session_page(&s, from, 3)?;
        ensure_eq!(page.total, 7, "the log's length on every page");
        if page.items.is_empty() {
            break;
        }
        from += page.items.len() as u64;
        walked.extend(page.items);
    }
    ensure_eq!(walked, written, "the log, a page at a time");
    ensure_eq!(store.session_page(&s, 5, 10)?.items, written[5..].to_vec());
    ensure_eq!(store.session_page(&s, 2, 0)?.items, Vec::new());
    ensure_eq!(store.session_page(&s, u64::MAX, 10)?.items, Vec::new());
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
    let listed: Vec<(String, u64, u64)> = store
        .session_list()?
        .into_iter()
        .map(|s| (s.id.as_str().to_owned(), s.events, s.bytes))
        .collect();
    // Bytes are each event's kind and payload.
    ensure_eq!(
        listed,
        vec![
            ("Beta".to_owned(), 1, 2),
            ("alpha".to_owned(), 2, 4),
            ("zeta".to_owned(), 1, 2)
        ]
    );
    Ok(())
}

fn each_run_of_events_is_audited<S: SessionStore + AuditStore>(store: &S) -> CaseResult {
    use crate::provenance::{Provenance, Source};
    let at = Timestamp::from_millis;
    let writer = |source: Source| {
        Provenance::new(source, at(1))
            .with_session("run-7")
            .with_client("cli")
    };
    let user = writer(Source::User);
    let model = writer(Source::Model("claude".to_owned()));
    let s = session("s");
    set_now(at(1_000));
    store.session_create(
        &s,
        &[
            event("session_started", "{}").with_writer(user.clone()),
            event("user_message", "hi").with_writer(user.clone()),
        ],
    )?;
    set_now(at(2_000));
    store.session_append(
        &s,
        &[event("assistant_turn", "a").with_writer(model.clone())],
    )?;
    set_now(at(3_000));
    store.session_append(
        &s,
        &[
            event("assistant_turn", "b").with_writer(model.clone()),
            event("user_message", "c").with_writer(user.clone()),
        ],
    )?;
    set_now(at(4_000));
    store.session_append_at(
        &s,
        5,
        &[event("user_message", "d").with_writer(user.clone())],
    )?;
    set_now(at(4_500));
    let conflict = store.session_append_at(
        &s,
        2,
        &[event("user_message", "x").with_writer(model.clone())],
    );
    ensure!(conflict.is_err(), "an append at a stale length wrote");
    set_now(at(5_000));
    store.session_append(&session("t"), &[event("note", "bare")])?;
    store.session_forget(&s, &forgetter())?;
    set_now(at(6_000));
    store.session_append(&s, &[event("user_message", "e").with_writer(user.clone())])?;
    let entry = |name: &str, writer: &Provenance, ms: i64| {
        let by = Provenance {
            at: at(ms),
            ..writer.clone()
        };
        (String::new(), name.to_owned(), by, "events".to_owned())
    };
    ensure_eq!(
        writes_of(store, "turns")?,
        vec![
            entry("s", &user, 1_000),
            entry("s", &model, 2_000),
            entry("s", &user, 3_000),
            entry("t", &Provenance::new(Source::Unknown, at(0)), 5_000),
            entry("s", &user, 6_000),
        ],
        "one write entry per writer's run, at the store's time"
    );
    Ok(())
}

fn events_keep_their_writer<S: SessionStore>(store: &S) -> CaseResult {
    use crate::provenance::{Provenance, Source};
    let at = Timestamp::from_millis;
    let writer = |source: Source, client: &str| {
        // The time given is the writer's own; the store keeps its clock's.
        Provenance::new(source, at(1))
            .with_session("run-7")
            .with_client(client)
    };
    let user = writer(Source::User, "cli");
    let model = writer(Source::Model("claude".to_owned()), "mcp:agent");
    set_now(at(1_000));
    store.session_create(
        &session("s"),
        &[
            event("session_started", "{}").with_writer(user.clone()),
            event("user_message", "hi").with_writer(user.clone()),
        ],
    )?;
    set_now(at(2_000));
    store.session_append(
        &session("s"),
        &[event("assistant_turn", "yes").with_writer(model.clone())],
    )?;
    set_now(at(3_000));
    store.session_append_at(&session("s"), 3, &[event("note", "bare")])?;
    let stamped = |writer: &Provenance, ms: i64| {
        Some(Provenance {
            at: at(ms),
            ..writer.clone()
        })
    };
    let writers = |events: Vec<SessionEvent>| -> Vec<Option<Provenance>> {
        events.into_iter().map(|e| e.written_by).collect()
    };
    let expected = vec![
        stamped(&user, 1_000),
        stamped(&user, 1_000),
        stamped(&model, 2_000),
        None,
    ];
    ensure_eq!(
        writers(store.session_load(&session("s"))?),
        expected,
        "each event keeps its writer, at the time the store appended it"
    );
    ensure_eq!(
        writers(store.session_page(&session("s"), 1, 2)?.items),
        expected[1..3].to_vec(),
        "a page reads the writers too"
    );
    // A retry of the same events through another client stores nothing: the stored events
    // keep their first writer.
    set_now(at(4_000));
    let retried = store.session_append_at(
        &session("s"),
        2,
        &[event("assistant_turn", "yes").with_writer(writer(Source::User, "python"))],
    )?;
    ensure!(
        retried.already_stored,
        "the same events from another writer are already stored"
    );
    ensure_eq!(writers(store.session_load(&session("s"))?), expected);
    Ok(())
}

fn list_stamps_the_last_write<S: SessionStore>(store: &S) -> CaseResult {
    let at = Timestamp::from_millis;
    set_now(at(1_000));
    store.session_append(&session("first"), &[event("k", "1")])?;
    set_now(at(2_000));
    store.session_create(&session("second"), &[event("session_started", "{}")])?;
    set_now(at(3_000));
    store.session_append_at(&session("second"), 1, &[event("k", "2")])?;
    let listed = |store: &S| -> Result<Vec<(String, Option<Timestamp>)>, Violation> {
        Ok(store
            .session_list()?
            .into_iter()
            .map(|s| (s.id.as_str().to_owned(), s.last_write))
            .collect())
    };
    ensure_eq!(
        listed(store)?,
        vec![
            ("first".to_owned(), Some(at(1_000))),
            ("second".to_owned(), Some(at(3_000)))
        ],
        "each session's last write is its last append's time, by the store's clock"
    );
    // A retry that writes nothing and a refused append are not writes.
    set_now(at(4_000));
    store.session_append_at(&session("second"), 1, &[event("k", "2")])?;
    let moved = store.session_append_at(&session("second"), 0, &[event("k", "3")]);
    ensure!(
        moved.is_err(),
        "an append at a stale position must be refused"
    );
    set_now(at(5_000));
    store.session_append(&session("first"), &[event("k", "3")])?;
    ensure_eq!(
        listed(store)?,
        vec![
            ("first".to_owned(), Some(at(5_000))),
            ("second".to_owned(), Some(at(3_000)))
        ]
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

fn appended(events: u64, already_stored: bool) -> SessionAppended {
    SessionAppended {
        events,
        already_stored,
    }
}

fn append_at_the_expected_length_writes<S: SessionStore>(store: &S) -> CaseResult {
    let s = session("at");
    let first = [event("started", "1"), event("turn", "2")];
    ensure_eq!(store.session_append_at(&s, 0, &first)?, appended(2, false));
    ensure_eq!(
        store.session_append_at(&s, 2, &[event("turn", "3")])?,
        appended(3, false)
    );
    ensure_eq!(
        store.session_append_at(&s, 3, &[])?,
        appended(3, false),
        "an empty append at the end changes nothing"
    );
    ensure_eq!(
        store.session_load(&s)?,
        vec![
            event("started", "1"),
            event("turn", "2"),
            event("turn", "3")
        ]
    );
    ensure!(
        store.session_append_at(&session("none"), 0, &[])?.events == 0
            && store.session_list()?.len() == 1,
        "an empty append created a session"
    );
    Ok(())
}

fn append_at_a_stale_length_is_already_stored<S: SessionStore>(store: &S) -> CaseResult {
    let s = session("retried");
    let log = [
        event("started", "1"),
        event("turn", "2"),
        event("turn", "3"),
    ];
    store.session_append_at(&s, 0, &log)?;
    // The same append again, as a client retries after a lost answer.
    ensure_eq!(store.session_append_at(&s, 0, &log)?, appended(3, true));
    // A later part of the log, at its own position.
    ensure_eq!(
        store.session_append_at(&s, 1, &log[1..])?,
        appended(3, true)
    );
    ensure_eq!(
        store.session_append_at(&s, 2, &log[2..])?,
        appended(3, true)
    );
    ensure_eq!(
        store.session_load(&s)?,
        log.to_vec(),
        "a retry changed the log"
    );
    Ok(())
}

fn append_at_another_length_is_a_conflict<S: SessionStore>(store: &S) -> CaseResult {
    let s = session("moved");
    let log = [event("started", "1"), event("turn", "2")];
    store.session_append_at(&s, 0, &log)?;
    let attempts: [(u64, Vec<SessionEvent>); 4] = [
        // Other events at a stored position.
        (0, vec![event("started", "other")]),
        (1, vec![event("turn", "other")]),
        // The stored events and one more: the position is taken, the batch is not there.
        (1, vec![event("turn", "2"), event("turn", "3")]),
        // A gap.
        (5, vec![event("turn", "3")]),
    ];
    for (expected, events) in attempts {
        let result = store.session_append_at(&s, expected, &events);
        ensure!(
            matches!(&result, Err(e) if e.is_conflict()
                && e.to_string().contains("\"moved\"")
                && e.to_string().contains(&format!("expected {expected} event(s)"))
                && e.to_string().contains("found 2")),
            "appending at {expected} to a log of 2 should be a conflict naming the session and both lengths, got {result:?}"
        );
    }
    ensure_eq!(
        store.session_load(&s)?,
        log.to_vec(),
        "a refused append changed the log"
    );
    let fresh = store.session_append_at(&session("fresh"), 1, &[event("turn", "1")]);
    ensure!(
        matches!(&fresh, Err(e) if e.is_conflict() && e.to_string().contains("found 0")),
        "appending at 1 to a session without events should be a conflict, got {fresh:?}"
    );
    ensure!(
        store.session_load(&session("fresh")).is_err(),
        "a refused append created the session"
    );
    Ok(())
}

fn append_at_checks_every_event_first<S: SessionStore>(store: &S) -> CaseResult {
    let s = session("checked");
    let bad = store.session_append_at(&s, 0, &[event("started", "1"), event("", "x")]);
    ensure!(
        matches!(bad, Err(crate::Error::InvalidInput { .. })),
        "an invalid event should be refused, got {bad:?}"
    );
    ensure!(
        store.session_load(&s).is_err(),
        "a refused append left events behind"
    );
    Ok(())
}

/// Several threads append the same events at the start of one new session at once, round
/// after round: each round exactly one writes, the others find their events already stored.
fn concurrent_appends_at_one_position_write_once<S: SessionStore>(store: &S) -> CaseResult {
    const THREADS: usize = 6;
    const ROUNDS: usize = 8;
    for round in 0..ROUNDS {
        let s = session(&format!("raced{round}"));
        let log = [event("started", &format!("{round}")), event("turn", "1")];
        let barrier = std::sync::Barrier::new(THREADS);
        let results: Vec<std::thread::Result<_>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        store.session_append_at(&s, 0, &log)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        let mut written = 0;
        for result in results {
            let Ok(result) = result else {
                return Err(Violation(format!(
                    "round {round}: an appending thread panicked"
                )));
            };
            let done: SessionAppended = result?;
            ensure_eq!(done.events, 2, "round {round}: the log length reported");
            written += usize::from(!done.already_stored);
        }
        ensure_eq!(written, 1, "round {round}: appends that wrote");
        ensure_eq!(
            store.session_load(&s)?,
            log.to_vec(),
            "round {round}: the log"
        );
    }
    Ok(())
}
