//! Crystallizers in separate processes on one SQLite file: every episode is observed
//! exactly once. The test binary re-executes itself as the child processes.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memory_core::store::trajectory::EpisodeStore;
use memory_core::{Partition, SystemClock};
use serde_json::json;
use store_sqlite::SqliteStore;
use trajectory::{Config, TrajectoryMemory};

const CHILD_DB: &str = "TRAJECTORY_TEST_CHILD_DB";
const CHILDREN: usize = 3;
const BATCHES: usize = 40;
const BATCH: usize = 5;
const LAYERS: usize = 4;

fn memory(path: &std::path::Path) -> TrajectoryMemory<SqliteStore, SystemClock> {
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

#[test]
fn crystallizer_processes_observe_each_episode_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    drop(SqliteStore::open(&path).expect("create")); // migrate once, before the race
    let exe = std::env::current_exe().expect("test binary");
    let mut children: Vec<_> = (0..CHILDREN)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "processes::crystallizer_child_process",
                    "--test-threads=1",
                ])
                .env(CHILD_DB, &path)
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("spawn child")
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    for child in &mut children {
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                assert!(status.success(), "child failed: {status}");
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("child crystallizer did not finish in time");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
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
}
