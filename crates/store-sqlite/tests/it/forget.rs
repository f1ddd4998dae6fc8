//! Forgetting leaves nothing behind: after each forget call, the forgotten text is in no byte
//! of the database file or its write-ahead log, while what was kept is still readable.

use std::path::Path;

use agent_memory_core::store::browser::{
    BrowserStore, FinishedRun, SiteObservation, Trajectory, TrajectoryStep, TrajectoryStore,
};
use agent_memory_core::store::tool_log::ToolLog;
use agent_memory_core::store::trajectory::{Fingerprint, NewEpisode};
use agent_memory_core::{
    EpisodeStore, Partition, PatternStore, Scope, SessionEvent, SessionId, SessionStore, Timestamp,
    ToolLogStore,
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
        |store| assert_eq!(store.session_forget(&id).expect("forget"), 1),
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
        |store| assert_eq!(store.forget_tool_logs(&id).expect("forget"), 1),
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
                })
                .expect("append");
        },
    );
}

#[test]
fn a_forgotten_partition_leaves_no_bytes() {
    let partition = Partition::new("secret-partition").expect("partition");
    check(
        |store| assert_eq!(store.forget_partition(&partition).expect("forget"), 3),
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
                    }])
                    .expect("append");
            }
        },
    );
}

#[test]
fn a_forgotten_browser_scope_leaves_no_bytes() {
    let scope = Scope::new("secret-scope").expect("scope");
    check(
        |store| {
            let forgotten = store.forget_browser(&scope, None).expect("forget");
            assert_eq!((forgotten.trajectories, forgotten.sites), (1, 1));
            assert!(store.browser_scopes().expect("scopes").is_empty());
        },
        |store| {
            let trajectory = Trajectory {
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
            };
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
                    },
                )
                .expect("record");
            assert!(store.trajectory_get(&scope, "t1").expect("get").is_some());
        },
    );
}
