//! `SqliteStore::check`: a store written through every trait passes every check, and each
//! check finds the defect planted for it behind the store's back.

use std::fs;
use std::path::Path;

use agent_memory_core::store::browser::{
    BrowserStore, FactKind, FactObservation, FinishedRun, MemoryImage, SiteObservation, Trajectory,
    TrajectoryStep, TrajectoryStore,
};
use agent_memory_core::store::tool_log::{MemorySnapshot, SnapshotEntry, SnapshotValue};
use agent_memory_core::store::trajectory::{Fingerprint, NewEpisode};
use agent_memory_core::testkit::tool_log::sample_log;
use agent_memory_core::testkit::trajectory::counting_step;
use agent_memory_core::{
    EpisodeStore, MetaKey, MetaStore, Partition, PatternStore, Provenance, Scope, SessionEvent,
    SessionId, SessionStore, Source, Timestamp, ToolLogStore,
};
use agent_memory_sqlite::{CHECKS, SqliteStore};
use rusqlite::Connection;

fn trajectory(i: usize) -> Trajectory {
    Trajectory {
        id: format!("traj_{i:04}"),
        goal: format!("buy item{} from shop{}", i % 37, i % 5),
        origin: Some(format!("https://shop{}.test", i % 3)),
        steps: vec![TrajectoryStep {
            url: "https://shop.test/".to_owned(),
            action: r#"{"action":"click","selector":"@b1"}"#.to_owned(),
            snapshot_hash: "1".to_owned(),
            verified: true,
            expected_effect: None,
        }],
        success: !i.is_multiple_of(4),
        duration_ms: 10,
        model: "m".to_owned(),
        timestamp: "2026-01-01T00:00:00.000Z".to_owned(),
        recorded_at: (!i.is_multiple_of(7))
            .then(|| Timestamp::from_millis(1_767_225_600_000 + i as i64)),
        provenance: i.is_multiple_of(2).then(|| {
            Provenance::new(
                Source::Model("m".to_owned()),
                Timestamp::from_millis(1_767_225_600_000),
            )
            .with_session(format!("traj_{i:04}"))
            .with_client("cli")
        }),
    }
}

fn tokens(goal: &str) -> Vec<String> {
    let mut tokens: Vec<String> = goal.split(' ').map(str::to_owned).collect();
    tokens.sort();
    tokens.dedup();
    tokens
}

/// A file written through every store trait: enough browser runs that the token index has
/// merged postings into blocks and tails and still holds some pending.
fn populated(path: &Path) {
    let store = SqliteStore::open(path).expect("open");
    store
        .meta_set(&MetaKey::new("owner").expect("key"), "check")
        .expect("meta");
    let mut with_snapshot = sample_log("s", "inputText", 1);
    with_snapshot.memory_snapshot = Some(MemorySnapshot {
        entries: vec![
            SnapshotEntry {
                key: "email".to_owned(),
                value: SnapshotValue::Plain("a@b.test".to_owned()),
                written_by: None,
                written_at: None,
                existed_before: false,
            },
            SnapshotEntry {
                key: "password".to_owned(),
                value: SnapshotValue::Sensitive,
                written_by: None,
                written_at: None,
                existed_before: false,
            },
        ],
    });
    store
        .append_tool_logs(&[with_snapshot, sample_log("s", "tap", 2)])
        .expect("tool logs");
    let session = SessionId::new("turns").expect("session");
    store
        .session_create(
            &session,
            &[SessionEvent::new("a", "1"), SessionEvent::new("b", "2")],
        )
        .expect("create");
    store
        .session_append(&session, &[SessionEvent::new("c", "3")])
        .expect("append");
    store
        .session_append_at(
            &SessionId::new("started").expect("session"),
            0,
            &[
                SessionEvent::new("session_started", "{}"),
                SessionEvent::new("user_message", "{}"),
            ],
        )
        .expect("append at");
    let partition = Partition::new("team").expect("partition");
    let episodes = |n: usize| -> Vec<NewEpisode> {
        (0..n)
            .map(|i| NewEpisode {
                partition: partition.clone(),
                fingerprint: Fingerprint::new([("task", format!("t{}", i % 3))])
                    .expect("fingerprint"),
                trajectory: vec![format!("step{}", i % 2)],
                outcome: "{}".to_owned(),
                recorded_at: Timestamp::from_millis(i as i64),
                provenance: None,
            })
            .collect()
    };
    store.append_episodes(&episodes(20)).expect("episodes");
    store
        .crystallize_with(&partition, &counting_step)
        .expect("crystallize");
    store.append_episodes(&episodes(5)).expect("more episodes");
    let scope = Scope::shared();
    for i in 0..220 {
        let t = trajectory(i);
        store
            .record_run(
                &scope,
                &FinishedRun {
                    completes_stored: false,
                    tokens: tokens(&t.goal),
                    trajectory: t,
                    site: SiteObservation {
                        site: format!("shop{}.test", i % 3),
                        label: "shop".to_owned(),
                        session: None,
                        facts: vec![FactObservation {
                            kind: FactKind::Timing,
                            key: "load".to_owned(),
                            value: format!("{}s", i % 4),
                        }],
                        selectors: vec![("button \"Go\"".to_owned(), format!("@b{i}"))],
                        observed_at: format!("o{i}"),
                    },
                    manifest: None,
                },
            )
            .expect("record run");
    }
    let replaced = Trajectory {
        goal: "a different goal entirely".to_owned(),
        ..trajectory(3)
    };
    store
        .store_image(
            &scope,
            &MemoryImage {
                trajectories: vec![(replaced.clone(), tokens(&replaced.goal))],
                hints: Some(("h".to_owned(), "t".to_owned())),
                ..MemoryImage::default()
            },
            None,
        )
        .expect("image");
    store
        .trajectory_prune(&scope, Timestamp::from_millis(1_767_225_600_050))
        .expect("prune");
}

#[test]
fn a_store_written_through_every_trait_passes_every_check() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    populated(&path);
    let store = SqliteStore::open(&path).expect("reopen");
    assert_eq!(store.check().expect("check"), Vec::new());
    let counts = store.table_counts().expect("counts");
    let rows = |table: &str| {
        counts
            .iter()
            .find(|(t, _)| t == table)
            .map_or(0, |(_, n)| *n)
    };
    // The index is in all three of its forms, so the check read each.
    for table in [
        "browser_token_blocks",
        "browser_token_tails",
        "browser_trajectory_tokens_pending",
    ] {
        assert!(rows(table) > 0, "{table} is empty: {counts:?}");
    }
    assert_eq!(
        SqliteStore::open_in_memory()
            .expect("open")
            .check()
            .expect("check"),
        Vec::new()
    );
}

/// Each planted defect and the check that must find it.
const DEFECTS: &[(&str, &str)] = &[
    // A read-write open would mark the file ours again; the defects are checked read-only.
    ("schema", "PRAGMA application_id = 0"),
    (
        "watermarks",
        "UPDATE trajectory_watermark SET seq = seq + 1000",
    ),
    (
        "partition totals",
        "UPDATE trajectory_partition_totals SET bytes = bytes + 1",
    ),
    (
        "partition totals",
        "DELETE FROM trajectory_episode WHERE seq = (SELECT max(seq) FROM trajectory_episode)",
    ),
    (
        "evidence",
        "UPDATE trajectory_group SET episode_count = episode_count + 1 \
         WHERE fp_id = (SELECT min(fp_id) FROM trajectory_group)",
    ),
    (
        "evidence",
        "UPDATE trajectory_group SET corroborations = corroborations + 1 \
         WHERE fp_id = (SELECT max(fp_id) FROM trajectory_group)",
    ),
    (
        "token index",
        "DELETE FROM browser_trajectories WHERE id = (SELECT min(id) FROM browser_trajectories)",
    ),
    (
        "token index",
        "UPDATE browser_trajectories SET index_keys = index_keys || '5:extra' \
         WHERE id = (SELECT max(id) FROM browser_trajectories)",
    ),
    (
        "token index",
        "UPDATE browser_trajectories SET success = 1 - success \
         WHERE id = (SELECT min(id) FROM browser_trajectories)",
    ),
    (
        "session logs",
        "DELETE FROM session_events WHERE session = 'turns' AND seq = 1",
    ),
    // What two appends of one session's start that both passed their position check leave.
    (
        "session logs",
        "INSERT INTO session_events (session, seq, kind, payload) \
         SELECT session, seq + 2, kind, payload FROM session_events \
         WHERE session = 'started' AND seq < 2",
    ),
    // A log whose start is not its first event.
    (
        "session logs",
        "UPDATE session_events SET kind = 'user_message' WHERE session = 'started' AND seq = 0; \
         UPDATE session_events SET kind = 'session_started' WHERE session = 'started' AND seq = 1",
    ),
    ("tool logs", "UPDATE tool_logs SET has_snapshot = 0"),
    (
        "encoded lists",
        "UPDATE browser_trajectories SET steps = 'not a list' \
         WHERE id = (SELECT max(id) FROM browser_trajectories)",
    ),
    (
        "encoded lists",
        "UPDATE browser_sites SET next_seq = 0 WHERE site = 'shop1.test'",
    ),
    (
        "encoded lists",
        "UPDATE browser_trajectories SET source = 'nobody' WHERE source IS NOT NULL \
         AND id = (SELECT max(id) FROM browser_trajectories WHERE source IS NOT NULL)",
    ),
    (
        "encoded lists",
        "UPDATE session_events SET source = 'nobody' WHERE session = 'turns' AND seq = 0",
    ),
    (
        "encoded lists",
        "UPDATE tool_logs SET source = 'nobody' WHERE seq = (SELECT min(seq) FROM tool_logs)",
    ),
    (
        "fingerprint references",
        "UPDATE trajectory_episode SET fp_id = fp_id + 1000 \
         WHERE seq = (SELECT min(seq) FROM trajectory_episode)",
    ),
    // A field row filed under another partition than its fingerprint's.
    (
        "fingerprint references",
        "UPDATE trajectory_fingerprint_field SET partition = 'elsewhere' \
         WHERE fp_id = (SELECT min(fp_id) FROM trajectory_fingerprint_field)",
    ),
    // A table whose reference no index serves: deleting a fingerprint would read all of it.
    (
        "foreign key indexes",
        "CREATE TABLE trajectory_notes (fp_id INTEGER REFERENCES trajectory_fingerprint (id), \
                                        note TEXT)",
    ),
    (
        "foreign keys",
        "INSERT INTO browser_facts (scope, site, kind, key, seq, value, confidence, sources, last_seen) \
         VALUES ('shared', 'nowhere.test', 'timing', 'k', 0, 'v', 0.6, 1, 't')",
    ),
];

#[test]
fn each_check_finds_its_planted_defect() {
    let dir = tempfile::tempdir().expect("temp dir");
    let clean = dir.path().join("clean.db");
    populated(&clean);
    for (i, (check, sql)) in DEFECTS.iter().enumerate() {
        assert!(
            CHECKS.iter().any(|c| c.name == *check),
            "unknown check {check}"
        );
        let path = dir.path().join(format!("defect{i}.db"));
        fs::copy(&clean, &path).expect("copy");
        {
            let conn = Connection::open(&path).expect("plain connection");
            conn.execute_batch(&format!("PRAGMA foreign_keys = OFF; {sql}"))
                .expect("plant the defect");
        }
        let store = SqliteStore::open_read_only(&path).expect("open");
        let findings = store.check().expect("check");
        assert!(
            findings.iter().any(|f| f.check == *check),
            "{sql}: no {check} finding in {findings:#?}"
        );
    }
}

/// A page of an index overwritten on disk: SQLite's own integrity check reports it.
#[test]
fn integrity_finds_a_damaged_index_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    populated(&path);
    let (root, page_size): (i64, i64) = {
        let conn = Connection::open(&path).expect("plain connection");
        let root = conn
            .query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = 'browser_trajectories_by_age'",
                [],
                |r| r.get(0),
            )
            .expect("root page");
        let size = conn
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .expect("page size");
        (root, size)
    };
    let mut bytes = fs::read(&path).expect("read");
    let start = usize::try_from((root - 1) * page_size).expect("offset");
    let page = usize::try_from(page_size).expect("size");
    for (j, b) in bytes[start + 8..start + page].iter_mut().enumerate() {
        *b = (j * 31 % 251) as u8;
    }
    fs::write(&path, &bytes).expect("write");
    let store = SqliteStore::open_read_only(&path).expect("the header is intact");
    let findings = store
        .check()
        .expect("check reports damage rather than failing");
    assert!(
        findings.iter().all(|f| f.check == "integrity") && !findings.is_empty(),
        "{findings:#?}"
    );
}
