//! Batch writes are whole or nothing on SQLite too when the store itself refuses a record: a
//! value over the 32 MiB limit in the middle or at the end of a batch leaves nothing of the
//! batch behind, and the error names the record.

use agent_memory_core::store::browser::{
    BrowserStore, HintStore, MemoryImage, RunManifestStore, SiteMemory, SiteMemoryStore,
    Trajectory, TrajectoryStore,
};
use agent_memory_core::testkit::tool_log::sample_log;
use agent_memory_core::{Scope, SessionEvent, SessionId, SessionStore, ToolLogStore};
use agent_memory_sqlite::{MAX_VALUE_BYTES, SqliteStore};

fn too_big() -> String {
    "x".repeat(MAX_VALUE_BYTES as usize + 8 * 1024 * 1024)
}

fn store() -> SqliteStore {
    SqliteStore::open_in_memory().expect("open")
}

#[test]
fn a_tool_log_batch_with_a_value_over_the_limit_stores_nothing() {
    let store = store();
    let mut huge = sample_log("s", "third", 3);
    huge.parameters = format!("{{\"text\":\"{}\"}}", too_big());
    let batch = [
        sample_log("s", "first", 1),
        sample_log("s", "second", 2),
        huge,
        sample_log("s", "fourth", 4),
    ];
    for import in [false, true] {
        let result = if import {
            store.import_tool_logs(&batch)
        } else {
            store.append_tool_logs(&batch)
        };
        let message = result.expect_err("a value over the limit").to_string();
        assert!(
            message.starts_with("invalid tool log 3 parameters: ")
                && message.ends_with(" bytes, over the store's limit of 33554432 bytes (32 MiB)"),
            "{message}"
        );
        let session = SessionId::new("s").expect("session");
        assert!(store.list_tool_logs(&session).expect("list").is_empty());
    }
    // The corrected batch is not refused as "already there".
    store
        .import_tool_logs(&batch[..2])
        .expect("the corrected batch imports");
}

#[test]
fn a_new_session_with_an_event_over_the_limit_is_not_created() {
    let store = store();
    let session = SessionId::new("s").expect("session");
    let events = [
        SessionEvent::new("session_started", "{}"),
        SessionEvent::new("user_message", too_big()),
    ];
    let message = store
        .session_create(&session, &events)
        .expect_err("a value over the limit")
        .to_string();
    assert_eq!(
        message,
        "invalid session event 2 payload: 41943040 bytes, over the store's limit of 33554432 bytes (32 MiB)"
    );
    assert!(store.session_list().expect("list").is_empty());
}

#[test]
fn an_image_with_a_goal_over_the_limit_in_a_later_record_stores_nothing() {
    let store = store();
    let scope = Scope::shared();
    let trajectory = |id: &str, goal: String| Trajectory {
        id: id.to_owned(),
        goal,
        origin: None,
        steps: Vec::new(),
        success: true,
        duration_ms: 1,
        model: "m".to_owned(),
        timestamp: "t".to_owned(),
        recorded_at: None,
        provenance: None,
    };
    let image = MemoryImage {
        trajectories: vec![
            (
                trajectory("traj_1", "buy a watch".to_owned()),
                vec!["watch".to_owned()],
            ),
            (trajectory("traj_2", too_big()), vec!["x".to_owned()]),
        ],
        sites: vec![SiteMemory {
            site: "shop.test".to_owned(),
            label: "shop".to_owned(),
            ..SiteMemory::default()
        }],
        site_logs: Default::default(),
        runs: Vec::new(),
        hints: Some(("h".to_owned(), "t".to_owned())),
        suite_summaries: Vec::new(),
    };
    let message = store
        .store_image(&scope, &image, None)
        .expect_err("a goal over the limit")
        .to_string();
    assert!(
        message.starts_with("invalid trajectory \"traj_2\": a value is larger"),
        "{message}"
    );
    assert!(store.trajectory_list(&scope).expect("list").is_empty());
    assert!(store.site_list(&scope).expect("sites").is_empty());
    assert!(store.hints_get(&scope).expect("hints").is_none());
    assert!(
        store
            .run_list(&scope, &Default::default())
            .expect("runs")
            .is_empty()
    );
}

#[test]
fn a_batch_of_episodes_past_the_last_sequence_number_is_refused_whole() {
    use agent_memory_core::store::trajectory::{EpisodeStore, Fingerprint, NewEpisode};
    use agent_memory_core::{Partition, Timestamp};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    let episode = |step: &str| NewEpisode {
        partition: Partition::new("p").expect("partition"),
        fingerprint: Fingerprint::new([("f", "1")]).expect("fingerprint"),
        trajectory: vec![step.to_owned()],
        outcome: "true".to_owned(),
        recorded_at: Timestamp::from_millis(1),
        provenance: None,
    };
    let store = SqliteStore::open(&path).expect("open");
    store.append_episodes(&[episode("first")]).expect("append");
    // A file whose highest number given was set two numbers short of the end of i64.
    rusqlite::Connection::open(&path)
        .and_then(|conn| {
            conn.execute(
                "INSERT INTO trajectory_seq_floor (only, seq) VALUES (0, ?1)",
                [i64::MAX - 2],
            )
        })
        .expect("set the counter");
    let batch = [episode("a"), episode("b"), episode("c")];
    let message = store
        .append_episodes(&batch)
        .expect_err("no numbers left")
        .to_string();
    assert!(
        message.contains("no sequence numbers left for 3 episodes"),
        "{message}"
    );
    let p = Partition::new("p").expect("partition");
    assert_eq!(store.episodes_after(&p, 0, 10).expect("read").len(), 1);
    let seqs = store
        .append_episodes(&batch[..2])
        .expect("two numbers are left");
    assert_eq!(seqs, vec![i64::MAX as u64 - 1, i64::MAX as u64]);
}
