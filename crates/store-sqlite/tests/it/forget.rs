//! Forgetting leaves nothing behind: after each forget call, the forgotten text is in no byte
//! of the database file or its write-ahead log, while what was kept is still readable.

use std::path::Path;

use agent_memory_core::evidence::Writer;
use agent_memory_core::store::browser::{
    BrowserStore, FinishedRun, SiteMemoryStore, SiteObservation, Trajectory, TrajectoryStep,
    TrajectoryStore,
};
use agent_memory_core::store::tool_log::ToolLog;
use agent_memory_core::store::trajectory::{Fingerprint, NewEpisode};
use agent_memory_core::testkit::trajectory::counting_step;
use agent_memory_core::{
    EpisodeStore, Partition, PatternStore, Provenance, Scope, SessionEvent, SessionId,
    SessionStore, Source, Timestamp, ToolLogStore,
};
use agent_memory_sqlite::SqliteStore;

const CANARY: &str = "canary-7f3a9c-forget-me";

/// Every file SQLite keeps for `db`, concatenated.
fn file_bytes(db: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(db).expect("database file");
    for suffix in ["-wal", "-shm"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        if let Ok(more) = std::fs::read(Path::new(&name)) {
            bytes.extend(more);
        }
    }
    bytes
}

fn holds_canary(db: &Path) -> bool {
    file_bytes(db)
        .windows(CANARY.len())
        .any(|w| w == CANARY.as_bytes())
}

/// Writes `rows` pieces of ordinary memory around the canary, so the canary shares pages with
/// data that stays.
fn filler(store: &SqliteStore, rows: usize) {
    let keep = SessionId::new("keep").expect("id");
    let events: Vec<SessionEvent> = (0..rows)
        .map(|i| SessionEvent::new("user_message", format!(r#"{{"text":"kept {i}"}}"#)))
        .collect();
    store
        .session_append(&keep, &events)
        .expect("append kept events");
}

fn check(forget: impl FnOnce(&SqliteStore), write: impl FnOnce(&SqliteStore)) {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("memory.db");
    let store = SqliteStore::open(&db).expect("open");
    filler(&store, 200);
    write(&store);
    filler(&store, 200);
    assert!(
        holds_canary(&db),
        "the test must see the canary before the forget"
    );
    forget(&store);
    assert!(!holds_canary(&db), "forgotten text is still in the file");
    let kept = store
        .session_load(&SessionId::new("keep").expect("id"))
        .expect("kept events");
    assert_eq!(kept.len(), 400);
}

#[test]
fn a_forgotten_session_leaves_no_bytes() {
    let id = SessionId::new("secret-session").expect("id");
    check(
        |store| {
            assert_eq!(
                store
                    .session_forget(&id, &crate::forgetter())
                    .expect("forget"),
                1
            )
        },
        |store| {
            let event = SessionEvent::new("user_message", format!(r#"{{"text":"{CANARY}"}}"#));
            store.session_append(&id, &[event]).expect("append");
        },
    );
}

#[test]
fn forgotten_tool_logs_leave_no_bytes() {
    let id = SessionId::new("secret-logs").expect("id");
    check(
        |store| {
            assert_eq!(
                store
                    .forget_tool_logs(&id, &crate::forgetter())
                    .expect("forget"),
                1
            )
        },
        |store| {
            store
                .append_tool_log(&ToolLog {
                    session: id.clone(),
                    tool_name: "signIn".into(),
                    parameters: format!(r#"{{"email":"{CANARY}"}}"#),
                    success: true,
                    error: None,
                    duration_ms: 3,
                    timestamp: Timestamp::from_millis(1),
                    trace_id: None,
                    memory_snapshot: None,
                    provenance: None,
                })
                .expect("append");
        },
    );
}

#[test]
fn a_forgotten_partition_leaves_no_bytes() {
    let partition = Partition::new("secret-partition").expect("partition");
    check(
        |store| {
            assert_eq!(
                store
                    .forget_partition(&partition, &[], &crate::forgetter())
                    .expect("forget"),
                3
            )
        },
        |store| {
            let fingerprint = Fingerprint::new([("task", CANARY)]).expect("fingerprint");
            for at in 0..3 {
                store
                    .append_episodes(&[NewEpisode {
                        partition: partition.clone(),
                        fingerprint: fingerprint.clone(),
                        trajectory: vec![CANARY.to_owned()],
                        outcome: format!(r#"{{"note":"{CANARY}"}}"#),
                        recorded_at: Timestamp::from_millis(at),
                        provenance: None,
                    }])
                    .expect("append");
            }
        },
    );
}

/// A browser run `t1` whose goal and action hold the canary, stored by `provenance`.
fn canary_run(provenance: Option<Provenance>) -> Trajectory {
    Trajectory {
        id: "t1".into(),
        goal: format!("find {CANARY}"),
        origin: Some("https://shop.test".into()),
        steps: vec![TrajectoryStep {
            url: "https://shop.test/".into(),
            action: format!(r#"{{"action":"type","text":"{CANARY}"}}"#),
            snapshot_hash: "1".into(),
            verified: true,
            expected_effect: None,
        }],
        success: true,
        duration_ms: 10,
        model: "m".into(),
        timestamp: "2026-01-01T00:00:00.000Z".into(),
        recorded_at: Some(Timestamp::from_millis(1)),
        provenance,
    }
}

#[test]
fn a_forgotten_browser_scope_leaves_no_bytes() {
    let scope = Scope::new("secret-scope").expect("scope");
    check(
        |store| {
            let forgotten = store
                .forget_browser(&scope, None, &crate::forgetter())
                .expect("forget");
            assert_eq!((forgotten.trajectories, forgotten.sites), (1, 1));
            assert!(store.browser_scopes().expect("scopes").is_empty());
        },
        |store| {
            let trajectory = canary_run(None);
            store
                .record_run(
                    &scope,
                    &FinishedRun {
                        trajectory,
                        tokens: vec!["find".into(), CANARY.into()],
                        site: SiteObservation {
                            site: "shop.test".into(),
                            label: CANARY.into(),
                            ..SiteObservation::default()
                        },
                        manifest: None,
                        completes_stored: false,
                    },
                )
                .expect("record");
            assert!(store.trajectory_get(&scope, "t1").expect("get").is_some());
        },
    );
}

/// Forgetting a site's knowledge (`clearPatterns`, and with `sessions` `reset`) leaves none of
/// the forgotten facts, or sessions, in the file or its log; what stays is still read back.
#[test]
fn a_sites_forgotten_knowledge_leaves_no_bytes() {
    for sessions in [false, true] {
        let scope = Scope::new("shared").expect("scope");
        let session = |goal: &str| agent_memory_core::store::browser::SessionEntry {
            id: "s1".into(),
            goal: goal.into(),
            outcome: "done".into(),
            success: true,
            final_url: String::new(),
            timestamp: "2026-01-01T00:00:00.000Z".into(),
            turns_used: 1,
            duration_ms: 10,
        };
        check(
            |store| {
                let forgotten = store
                    .site_forget_knowledge(
                        &scope,
                        "shop.test",
                        sessions,
                        "2026-01-02T00:00:00.000Z",
                    )
                    .expect("forget knowledge");
                assert!(forgotten);
                let site = store
                    .site_get(&scope, "shop.test")
                    .expect("get")
                    .expect("the site stays");
                assert!(site.facts.is_empty());
                assert_eq!(site.sessions.len(), usize::from(!sessions));
                assert_eq!(site.selectors.len(), 1, "selectors stay");
            },
            |store| {
                // The canary is a fact's value and, when the sessions go too, a session's goal.
                let goal = if sessions { CANARY } else { "kept goal" };
                store
                    .site_observe(
                        &scope,
                        &SiteObservation {
                            site: "shop.test".into(),
                            label: "Shop".into(),
                            session: Some(session(goal)),
                            facts: vec![agent_memory_core::store::browser::FactObservation {
                                kind: agent_memory_core::store::browser::FactKind::Quirk,
                                key: "banner".into(),
                                value: CANARY.into(),
                            }],
                            selectors: vec![("cart".into(), "#cart".into())],
                            observed_at: "2026-01-01T00:00:00.000Z".into(),
                        },
                        Some(&crate::forgetter()),
                    )
                    .expect("observe");
            },
        );
    }
}

#[test]
fn a_run_forgotten_by_its_writer_leaves_no_bytes() {
    let scope = Scope::new("shared").expect("scope");
    check(
        |store| {
            let gone = store
                .trajectory_forget_by(
                    None,
                    &Writer::session("run-bad"),
                    &Provenance::new(Source::User, Timestamp::from_millis(2)),
                )
                .expect("forget by writer");
            assert_eq!(gone.runs, vec![(scope.clone(), "t1".to_owned())]);
        },
        |store| {
            let trajectory = canary_run(Some(
                Provenance::new(Source::Model("m".into()), Timestamp::from_millis(1))
                    .with_session("run-bad"),
            ));
            store
                .trajectory_put(&scope, &trajectory, &["find".into(), CANARY.into()])
                .expect("put");
        },
    );
}

#[test]
fn episodes_forgotten_by_their_writer_leave_no_bytes() {
    let partition = Partition::new("shared-partition").expect("partition");
    let writer = |session: &str, at: i64| {
        Some(
            Provenance::new(Source::Tool("fetch".into()), Timestamp::from_millis(at))
                .with_session(session),
        )
    };
    let episode = |task: &str, action: &str, session: &str, at: i64| NewEpisode {
        partition: partition.clone(),
        fingerprint: Fingerprint::new([("task", task)]).expect("fingerprint"),
        trajectory: vec![action.to_owned()],
        outcome: format!(r#"{{"success":true,"by":"{session}"}}"#),
        recorded_at: Timestamp::from_millis(at),
        provenance: writer(session, at),
    };
    check(
        |store| {
            let bad = Writer::session("run-bad");
            let forgotten = store
                .forget_episodes_by(&partition, &bad, &crate::forgetter(), &counting_step)
                .expect("forget by writer");
            assert_eq!(forgotten.episodes, 3);
            assert_eq!(forgotten.groups.len(), 2);
            // The kept group is rebuilt from the kept episodes alone; the writer's own group
            // is gone, fingerprint and all.
            let kept = Fingerprint::new([("task", "deploy")]).expect("fingerprint");
            let group = store
                .group(&partition, &kept)
                .expect("group")
                .expect("kept");
            assert_eq!(group.episode_count, 2);
            assert_eq!(
                group.canonical.map(|t| t.trajectory),
                Some(vec!["run".to_owned()])
            );
            assert!(
                store.check().expect("check").is_empty(),
                "the store must pass its checks after a forget by writer"
            );
        },
        |store| {
            store
                .append_episodes(&[
                    episode("deploy", "run", "run-good", 1),
                    episode("deploy", CANARY, "run-bad", 2),
                    episode("deploy", "run", "run-good", 3),
                    episode(CANARY, "open", "run-bad", 4),
                ])
                .expect("append");
            store
                .crystallize_with(&partition, &counting_step)
                .expect("crystallize");
            // One more, in a group of its own, that no crystallize has seen yet.
            store
                .append_episodes(&[episode(&format!("{CANARY}-new"), "open", "run-bad", 5)])
                .expect("append");
        },
    );
}

/// A store whose forget waits only briefly for older readers, and a session holding the
/// canary among kept events.
fn store_with_canary(db: &Path) -> SqliteStore {
    let options = agent_memory_sqlite::SqliteOptions::default()
        .with_erase_wait(std::time::Duration::from_millis(200));
    let store = SqliteStore::open_with(db, &options).expect("open");
    filler(&store, 200);
    let event = SessionEvent::new("user_message", format!(r#"{{"text":"{CANARY}"}}"#));
    store
        .session_append(&SessionId::new("secret-session").expect("id"), &[event])
        .expect("append");
    filler(&store, 200);
    store
}

/// Another connection (as another process would) holding a read transaction on `db`,
/// begun before the forget.
fn reader(db: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(db).expect("reader");
    conn.execute_batch("BEGIN").expect("begin");
    let events: i64 = conn
        .query_row("SELECT count(*) FROM session_events", [], |r| r.get(0))
        .expect("read");
    assert_eq!(events, 401);
    conn
}

/// A forget never reports success while the text is still on disk: with a reader of an older
/// snapshot, it reports the erasure pending (the rows are gone), and the next write after the
/// reader ends erases the bytes.
#[test]
fn a_forget_held_up_by_a_reader_says_so_and_the_next_write_erases() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("memory.db");
    let store = store_with_canary(&db);
    let reader = reader(&db);
    let error = store
        .session_forget(
            &SessionId::new("secret-session").expect("id"),
            &crate::forgetter(),
        )
        .expect_err("the erasure cannot finish while the reader holds the old pages");
    let message = error.to_string();
    assert!(
        message.contains("the forgotten rows are deleted")
            && message.contains("erased at the next write"),
        "{message}"
    );
    assert!(
        store
            .session_load(&SessionId::new("secret-session").expect("id"))
            .is_err_and(|e| e.is_not_found()),
        "the rows are gone"
    );
    assert!(
        holds_canary(&db),
        "what the error says: the bytes are still there"
    );
    // A write while the reader still holds them leaves the erasure pending.
    filler(&store, 1);
    assert!(holds_canary(&db));
    reader.execute_batch("COMMIT").expect("end the read");
    filler(&store, 1);
    assert!(
        !holds_canary(&db),
        "the next write erased the forgotten text"
    );
    drop(reader);
    assert_eq!(
        store
            .session_load(&SessionId::new("keep").expect("id"))
            .expect("kept")
            .len(),
        402
    );
}

/// The store that forgot is gone before the reader ends: the next open erases the bytes.
#[test]
fn a_pending_erasure_is_finished_at_the_next_open() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("memory.db");
    let store = store_with_canary(&db);
    let reader = reader(&db);
    store
        .session_forget(
            &SessionId::new("secret-session").expect("id"),
            &crate::forgetter(),
        )
        .expect_err("held up by the reader");
    drop(store);
    // The reader's connection stays open, so closing it cannot checkpoint for us.
    reader.execute_batch("COMMIT").expect("end the read");
    assert!(holds_canary(&db));
    let store = SqliteStore::open(&db).expect("reopen");
    assert!(!holds_canary(&db), "opening erased the forgotten text");
    drop(store);
    drop(reader);
}
