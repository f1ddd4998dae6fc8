//! Writers and crystallizers in separate processes on one SQLite file: every episode is
//! stored once and observed exactly once, and no caller ever sees the file locked. The test
//! binary re-executes itself as the child processes.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_memory_core::store::trajectory::{EpisodeStore, Fingerprint, PatternStore};
use agent_memory_core::{Partition, SystemClock};
use agent_memory_sqlite::SqliteStore;
use agent_memory_trajectory::{Config, EpisodeRecord, TrajectoryMemory};
use serde_json::{Value, json};

const CHILD_DB: &str = "TRAJECTORY_TEST_CHILD_DB";
/// For a writer child: the file it reports each committed episode to.
const CHILD_REPORT: &str = "TRAJECTORY_TEST_CHILD_REPORT";
/// For a writer or crystallizer child: how long it runs, in milliseconds.
const CHILD_MILLIS: &str = "TRAJECTORY_TEST_CHILD_MILLIS";
const CHILDREN: usize = 3;
const BATCHES: usize = 40;
const BATCH: usize = 5;
const LAYERS: usize = 4;

fn memory(path: &Path) -> TrajectoryMemory<SqliteStore, SystemClock> {
    TrajectoryMemory::new(
        SqliteStore::open(path).expect("open"),
        SystemClock,
        Config::new(["problem_topology", "affected_layer"]),
    )
    .expect("config")
}

/// The child's work: record batches and crystallize after each, racing the others. Runs
/// only when the parent test starts this binary with the database path in the environment.
#[test]
fn crystallizer_child_process() {
    let Some(path) = std::env::var_os(CHILD_DB) else {
        return;
    };
    let m = memory(std::path::Path::new(&path));
    let part = Partition::new("shared").expect("partition");
    for b in 0..BATCHES {
        for i in 0..BATCH {
            let layer = format!("l{}", (b + i) % LAYERS);
            let fp = [
                ("problem_topology", "t"),
                ("affected_layer", layer.as_str()),
            ];
            m.record_episode(&fp, &["x", "y"], &json!({"success": i % 2 == 0}), &part)
                .expect("record");
        }
        m.crystallize(&part).expect("crystallize");
    }
}

/// Starts this test binary running only the child test `name`, with `env` set.
fn spawn_child(name: &str, env: &[(&str, &std::ffi::OsStr)]) -> Child {
    let exe = std::env::current_exe().expect("test binary");
    let mut command = Command::new(exe);
    command
        .args(["--exact", name, "--test-threads=1"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    for (key, value) in env {
        command.env(key, value);
    }
    command.spawn().expect("spawn child")
}

/// Waits for every child to succeed, killing them all past `limit`.
fn wait_all(children: &mut [Child], limit: Duration) {
    let deadline = Instant::now() + limit;
    for i in 0..children.len() {
        loop {
            if let Some(status) = children[i].try_wait().expect("wait") {
                assert!(status.success(), "child {i} failed: {status}");
                break;
            }
            if Instant::now() > deadline {
                for child in children.iter_mut() {
                    let _ = child.kill();
                }
                panic!("child {i} did not finish in time");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn crystallizer_processes_observe_each_episode_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    drop(SqliteStore::open(&path).expect("create")); // migrate once, before the race
    let mut children: Vec<_> = (0..CHILDREN)
        .map(|_| {
            spawn_child(
                "processes::crystallizer_child_process",
                &[(CHILD_DB, path.as_os_str())],
            )
        })
        .collect();
    wait_all(&mut children, Duration::from_secs(120));
    let m = memory(&path);
    let part = Partition::new("shared").expect("partition");
    m.crystallize(&part).expect("final crystallize");
    let episodes = m
        .store()
        .episodes_after(&part, 0, usize::MAX)
        .expect("episodes");
    assert_eq!(episodes.len(), CHILDREN * BATCHES * BATCH);
    for l in 0..LAYERS {
        let layer = format!("l{l}");
        let recorded = episodes
            .iter()
            .filter(|e| e.episode.fingerprint.get("affected_layer") == Some(layer.as_str()))
            .count() as u64;
        let fp = [
            ("problem_topology", "t"),
            ("affected_layer", layer.as_str()),
        ];
        let found = m.recall(&fp, &part).expect("recall");
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].pattern.stats.evidence_count, recorded,
            "layer {layer}"
        );
        let stats = found[0].pattern.stats;
        assert_eq!(stats.corroborations + stats.contradictions, recorded);
    }
    assert_eq!(m.store().check().expect("check"), Vec::new());
}

const WRITERS: usize = 4;
const CRYSTALLIZERS: usize = 2;
const RACE_MILLIS: u64 = 3_000;
const RACE_LAYERS: usize = 5;

fn child_deadline() -> Instant {
    let millis = std::env::var(CHILD_MILLIS)
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(RACE_MILLIS);
    Instant::now() + Duration::from_millis(millis)
}

/// A writer child: until its time is up, records rounds of one to four episodes, each
/// tagged with `(writer, n)` in its outcome, and reports every committed episode as
/// `writer n seq` once its call returned. Any error fails the child, so a `database is
/// locked` reaching the caller fails the test.
#[test]
fn writer_child_process() {
    let (Some(path), Some(report)) = (std::env::var_os(CHILD_DB), std::env::var_os(CHILD_REPORT))
    else {
        return;
    };
    let writer: u64 = std::env::var("TRAJECTORY_TEST_WRITER")
        .expect("writer number")
        .parse()
        .expect("writer number");
    let m = memory(Path::new(&path));
    let part = Partition::new("shared").expect("partition");
    let mut report = std::fs::File::create(report).expect("report file");
    let deadline = child_deadline();
    let mut n = 0u64;
    let mut round = 0usize;
    while Instant::now() < deadline {
        let size = 1 + round % 4;
        let layers: Vec<String> = (0..size)
            .map(|i| format!("l{}", (round + i) % RACE_LAYERS))
            .collect();
        let fps: Vec<[(&str, &str); 2]> = layers
            .iter()
            .map(|l| [("problem_topology", "t"), ("affected_layer", l.as_str())])
            .collect();
        let outcomes: Vec<Value> = (0..size as u64)
            .map(|i| json!({"success": !(n + i).is_multiple_of(3), "writer": writer, "n": n + i}))
            .collect();
        let records: Vec<EpisodeRecord<'_>> = (0..size)
            .map(|i| EpisodeRecord::new(&fps[i], &["x", "y"], &outcomes[i], &part))
            .collect();
        let stored = if size == 1 {
            vec![
                m.record_episode(&fps[0], &["x", "y"], &outcomes[0], &part)
                    .expect("record one"),
            ]
        } else {
            m.record_episodes(&records).expect("record batch")
        };
        for (i, e) in stored.iter().enumerate() {
            writeln!(report, "{writer} {} {}", n + i as u64, e.seq).expect("report");
        }
        report.flush().expect("report");
        n += size as u64;
        round += 1;
    }
}

/// A crystallizer child: crystallizes until its time is up; any error fails the child.
#[test]
fn racing_crystallizer_child_process() {
    let (Some(path), None) = (std::env::var_os(CHILD_DB), std::env::var_os(CHILD_REPORT)) else {
        return;
    };
    if std::env::var_os(CHILD_MILLIS).is_none() {
        return;
    }
    let m = memory(Path::new(&path));
    let part = Partition::new("shared").expect("partition");
    let deadline = child_deadline();
    while Instant::now() < deadline {
        m.crystallize(&part).expect("crystallize");
    }
}

/// Four writers and two crystallizers on one file at once: every reported write is stored
/// exactly once with the sequence number its writer was given, nothing unreported is stored,
/// and after a final run every group counts each of its episodes exactly once.
#[test]
fn writers_and_crystallizers_share_one_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    drop(SqliteStore::open(&path).expect("create")); // migrate once, before the race
    let millis = RACE_MILLIS.to_string();
    let millis = std::ffi::OsStr::new(&millis);
    let reports: Vec<_> = (0..WRITERS)
        .map(|w| dir.path().join(format!("writer-{w}.txt")))
        .collect();
    let mut children: Vec<Child> = Vec::new();
    for (w, report) in reports.iter().enumerate() {
        let number = w.to_string();
        children.push(spawn_child(
            "processes::writer_child_process",
            &[
                (CHILD_DB, path.as_os_str()),
                (CHILD_REPORT, report.as_os_str()),
                (CHILD_MILLIS, millis),
                ("TRAJECTORY_TEST_WRITER", std::ffi::OsStr::new(&number)),
            ],
        ));
    }
    for _ in 0..CRYSTALLIZERS {
        children.push(spawn_child(
            "processes::racing_crystallizer_child_process",
            &[(CHILD_DB, path.as_os_str()), (CHILD_MILLIS, millis)],
        ));
    }
    wait_all(&mut children, Duration::from_secs(120));

    // Every reported episode, by (writer, n), with the sequence number it was given.
    let mut reported: HashMap<(u64, u64), u64> = HashMap::new();
    for report in &reports {
        let text = std::fs::read_to_string(report).expect("report");
        for line in text.lines() {
            let fields: Vec<u64> = line
                .split(' ')
                .map(|f| f.parse().expect("report number"))
                .collect();
            let [writer, n, seq] = fields[..] else {
                panic!("bad report line {line:?}");
            };
            assert!(
                reported.insert((writer, n), seq).is_none(),
                "reported twice: {line}"
            );
        }
    }
    assert!(
        reported.len() >= WRITERS,
        "every writer committed something"
    );

    let m = memory(&path);
    let part = Partition::new("shared").expect("partition");
    m.crystallize(&part).expect("final crystallize");
    let episodes = m
        .store()
        .episodes_after(&part, 0, usize::MAX)
        .expect("episodes");
    let mut stored: HashMap<(u64, u64), u64> = HashMap::new();
    let mut per_layer: HashMap<String, u64> = HashMap::new();
    for e in &episodes {
        let outcome: Value = serde_json::from_str(&e.episode.outcome).expect("outcome");
        let tag = (
            outcome["writer"].as_u64().expect("writer"),
            outcome["n"].as_u64().expect("n"),
        );
        assert!(stored.insert(tag, e.seq).is_none(), "stored twice: {tag:?}");
        let layer = e.episode.fingerprint.get("affected_layer").expect("layer");
        *per_layer.entry(layer.to_owned()).or_default() += 1;
    }
    // Nothing lost, nothing duplicated, nothing stored that was not reported.
    assert_eq!(stored, reported);

    for (layer, count) in &per_layer {
        let fp = Fingerprint::new([
            ("problem_topology", "t"),
            ("affected_layer", layer.as_str()),
        ])
        .expect("fingerprint");
        let group = m
            .store()
            .group(&part, &fp)
            .expect("group")
            .expect("group exists");
        assert_eq!(group.episode_count, *count, "layer {layer}");
        let stats = group.pattern.expect("pattern");
        assert_eq!(stats.evidence_count, *count, "layer {layer}");
        assert_eq!(stats.corroborations + stats.contradictions, *count);
    }
    assert_eq!(per_layer.len(), RACE_LAYERS);
    // And the store's own invariants hold (watermarks, evidence counts, SQLite's checks).
    assert_eq!(m.store().check().expect("check"), Vec::new());
}

/// For a first-record child: the partition it records into and the fields it configures.
const CHILD_PARTITION: &str = "TRAJECTORY_TEST_CHILD_PARTITION";
const CHILD_FIELDS: &str = "TRAJECTORY_TEST_CHILD_FIELDS";
/// For a first-record child: the file whose appearance starts the race.
const CHILD_GO: &str = "TRAJECTORY_TEST_CHILD_GO";
const FIRST_RECORDERS: usize = 8;
const FIRST_RECORD_ROUNDS: usize = 20;
const FIRST_RECORD_EPISODES: usize = 3;

fn fields_key(partition: &str) -> agent_memory_core::MetaKey {
    agent_memory_core::MetaKey::new(format!("test.fields.{partition}")).expect("meta key")
}

/// A first-record child: waits for the start signal, then records a batch into a fresh
/// partition with its own fingerprint fields, stored as the partition's setting in the same
/// call, and reports `stored` or `conflict`. Any other error fails the child.
#[test]
fn first_record_child_process() {
    let (Some(path), Some(report), Some(go)) = (
        std::env::var_os(CHILD_DB),
        std::env::var_os(CHILD_REPORT),
        std::env::var_os(CHILD_GO),
    ) else {
        return;
    };
    let partition = std::env::var(CHILD_PARTITION).expect("partition");
    let fields = std::env::var(CHILD_FIELDS).expect("fields");
    let names: Vec<&str> = fields.split(',').collect();
    let m = TrajectoryMemory::new(
        SqliteStore::open(Path::new(&path)).expect("open"),
        SystemClock,
        Config::new(names.iter().copied()),
    )
    .expect("config");
    let part = Partition::new(partition.clone()).expect("partition");
    let fp: Vec<(&str, &str)> = names.iter().map(|n| (*n, "v")).collect();
    let outcome = json!({"success": true});
    let records: Vec<EpisodeRecord<'_>> = (0..FIRST_RECORD_EPISODES)
        .map(|_| EpisodeRecord::new(&fp, &["x"], &outcome, &part))
        .collect();
    while !Path::new(&go).exists() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let key = fields_key(&partition);
    let verdict = match m.record_episodes_with_settings(&records, &[(&key, fields.as_str())]) {
        Ok(stored) => {
            assert_eq!(stored.len(), FIRST_RECORD_EPISODES);
            "stored"
        }
        Err(agent_memory_trajectory::Error::Store(e)) if e.is_conflict() => "conflict",
        Err(e) => panic!("first record failed: {e}"),
    };
    std::fs::write(&report, verdict).expect("report");
}

/// Eight processes make the first record of a fresh partition at once, half with one set
/// of fingerprint fields and half with another, twenty rounds over: in every round the
/// stored fields are those of the processes that stored episodes, every stored episode has
/// exactly those fields, and every other process got a conflict with nothing stored.
#[test]
fn first_records_with_other_fields_store_one_configuration() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    let store = SqliteStore::open(&path).expect("create"); // migrate once, before the races
    let choices = ["problem_topology,affected_layer", "task,env,layer"];
    for round in 0..FIRST_RECORD_ROUNDS {
        let partition = format!("round{round}");
        let go = dir.path().join(format!("go{round}"));
        let reports: Vec<_> = (0..FIRST_RECORDERS)
            .map(|i| dir.path().join(format!("report{round}-{i}")))
            .collect();
        let mut children: Vec<_> = reports
            .iter()
            .enumerate()
            .map(|(i, report)| {
                let fields = std::ffi::OsString::from(choices[(i + round) % 2]);
                let partition = std::ffi::OsString::from(&partition);
                spawn_child(
                    "processes::first_record_child_process",
                    &[
                        (CHILD_DB, path.as_os_str()),
                        (CHILD_REPORT, report.as_os_str()),
                        (CHILD_GO, go.as_os_str()),
                        (CHILD_PARTITION, partition.as_os_str()),
                        (CHILD_FIELDS, fields.as_os_str()),
                    ],
                )
            })
            .collect();
        std::fs::write(&go, "").expect("start signal");
        wait_all(&mut children, Duration::from_secs(120));
        let stored_fields = agent_memory_core::MetaStore::meta_get(&store, &fields_key(&partition))
            .expect("read setting")
            .expect("the partition has its fields");
        let mut winners = 0;
        for (i, report) in reports.iter().enumerate() {
            let verdict = std::fs::read_to_string(report).expect("child report");
            let fields = choices[(i + round) % 2];
            match verdict.as_str() {
                "stored" => {
                    assert_eq!(
                        fields, stored_fields,
                        "round {round}: child {i} stored other fields"
                    );
                    winners += 1;
                }
                "conflict" => {
                    assert_ne!(
                        fields, stored_fields,
                        "round {round}: child {i} refused its own fields"
                    )
                }
                other => panic!("round {round}: child {i} reported {other:?}"),
            }
        }
        assert_eq!(winners, FIRST_RECORDERS / 2, "round {round}");
        let part = Partition::new(partition).expect("partition");
        let episodes = store
            .episodes_after(&part, 0, usize::MAX)
            .expect("episodes");
        assert_eq!(
            episodes.len(),
            winners * FIRST_RECORD_EPISODES,
            "round {round}"
        );
        let names: Vec<&str> = stored_fields.split(',').collect();
        for e in &episodes {
            let mut fields: Vec<&str> = e
                .episode
                .fingerprint
                .pairs()
                .iter()
                .map(|(k, _)| k.as_str())
                .collect();
            let mut expected = names.clone();
            fields.sort_unstable();
            expected.sort_unstable();
            assert_eq!(
                fields, expected,
                "round {round}: an episode of the losing fields"
            );
        }
    }
}
