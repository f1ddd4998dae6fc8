//! A forget never makes another connection's writer fail: forgetting a partition of many
//! groups holds the write lock for a time that follows what it erases, not the size of the
//! other partitions, and an erasure held up by an older reader waits for it without keeping
//! writers out.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agent_memory_core::store::trajectory::{Fingerprint, NewEpisode};
use agent_memory_core::testkit::trajectory::counting_step;
use agent_memory_core::{EpisodeStore, Partition, PatternStore, Timestamp};
use agent_memory_sqlite::{SqliteOptions, SqliteStore};

fn partition(name: &str) -> Partition {
    Partition::new(name).expect("partition")
}

/// Episode `i` of `partition`, in group `group`.
fn episode(partition: &Partition, group: usize, i: usize) -> NewEpisode {
    NewEpisode {
        partition: partition.clone(),
        fingerprint: Fingerprint::new([("task", format!("task-{group}")), ("env", "ci".into())])
            .expect("fingerprint"),
        trajectory: vec!["read_logs".into(), "patch".into(), "run_tests".into()],
        outcome: r#"{"success":true}"#.into(),
        recorded_at: Timestamp::from_millis(i as i64),
        provenance: None,
    }
}

/// Appends `episodes` episodes of `partition` spread over `groups` groups, 1,000 a batch.
fn fill(store: &SqliteStore, partition: &Partition, groups: usize, episodes: usize) {
    let all: Vec<NewEpisode> = (0..episodes)
        .map(|i| episode(partition, i % groups, i))
        .collect();
    for batch in all.chunks(1_000) {
        store.append_episodes(batch).expect("append");
    }
}

/// Appends one episode of `partition` at a time through its own connection until `done`,
/// returning how many it stored, or the first error.
fn keep_writing(db: &Path, partition: &Partition, done: &AtomicBool) -> Result<usize, String> {
    let store = SqliteStore::open(db).map_err(|e| format!("open: {e}"))?;
    let mut written = 0;
    while !done.load(Ordering::Relaxed) {
        store
            .append_episodes(&[episode(partition, written % 7, written)])
            .map_err(|e| format!("write {written}: {e}"))?;
        written += 1;
    }
    Ok(written)
}

/// 10,000 groups beside 50,000 episodes of another partition: before every reference to a
/// fingerprint was looked up through an index, this forget read every other episode once per
/// group and held the write lock for minutes, and a writer to the other partition failed
/// when its busy timeout (30 s, the default) ran out.
#[test]
fn a_writer_to_another_partition_never_fails_during_a_large_forget() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("memory.db");
    let store = SqliteStore::open(&db).expect("open");
    let (gone, kept) = (partition("gone"), partition("kept"));
    fill(&store, &gone, 10_000, 10_000);
    fill(&store, &kept, 100, 50_000);
    for p in [&gone, &kept] {
        store
            .crystallize_with(p, &counting_step)
            .expect("crystallize");
    }
    let done = AtomicBool::new(false);
    let (forgotten, written) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| keep_writing(&db, &kept, &done));
        let forgotten = store.forget_partition(&gone, &[], &crate::forgetter());
        done.store(true, Ordering::Relaxed);
        (forgotten, writer.join().expect("the writer ran"))
    });
    assert_eq!(forgotten.expect("forget"), 10_000);
    let written = written.unwrap_or_else(|e| panic!("a writer failed during the forget: {e}"));
    let partitions = store.partitions().expect("partitions");
    assert_eq!(
        partitions
            .iter()
            .map(|p| (p.partition.as_str(), p.episodes))
            .collect::<Vec<_>>(),
        [("kept", 50_000 + written as u64)]
    );
    assert_eq!(store.check().expect("check"), Vec::new());
}

/// While a reader of an older snapshot holds the forgotten pages, the forget waits for it (up
/// to `erase_wait`) in short attempts: a writer whose busy timeout is shorter than that wait
/// still gets the lock, every time. (A checkpoint holds the write lock while it waits for
/// readers, so one long wait kept every writer out for all of it.)
#[test]
fn an_erasure_waiting_for_a_reader_keeps_no_writer_out() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("memory.db");
    let options = SqliteOptions::default().with_erase_wait(Duration::from_secs(4));
    let store = SqliteStore::open_with(&db, &options).expect("open");
    let (gone, kept) = (partition("gone"), partition("kept"));
    fill(&store, &gone, 10, 100);
    fill(&store, &kept, 10, 100);
    let reader = rusqlite::Connection::open(&db).expect("reader");
    reader.execute_batch("BEGIN").expect("begin");
    let seen: i64 = reader
        .query_row("SELECT count(*) FROM trajectory_episode", [], |r| r.get(0))
        .expect("read");
    assert_eq!(seen, 200);
    let impatient = SqliteOptions::default().with_busy_timeout(Duration::from_millis(1_000));
    let writer = SqliteStore::open_with(&db, &impatient).expect("writer");
    let (forgotten, writes) = std::thread::scope(|scope| {
        let forget = scope.spawn(|| store.forget_partition(&gone, &[], &crate::forgetter()));
        // The deletion and `VACUUM` of 200 episodes take milliseconds; the erasure then waits
        // for the reader for 4 s, and these writes land in that wait.
        std::thread::sleep(Duration::from_millis(500));
        let writes: Vec<_> = (0..5)
            .map(|i| {
                let written = writer.append_episodes(&[episode(&kept, 0, 1_000 + i)]);
                std::thread::sleep(Duration::from_millis(200));
                written
            })
            .collect();
        (forget.join().expect("the forget ran"), writes)
    });
    for (i, written) in writes.into_iter().enumerate() {
        written.unwrap_or_else(|e| panic!("write {i} during the erasure's wait failed: {e}"));
    }
    let error = forgotten.expect_err("the reader outlasted the erasure's wait");
    assert!(
        error.to_string().contains("erased at the next write"),
        "{error}"
    );
    reader.execute_batch("COMMIT").expect("end the read");
    assert_eq!(
        store
            .partitions()
            .expect("partitions")
            .iter()
            .map(|p| (p.partition.as_str(), p.episodes))
            .collect::<Vec<_>>(),
        [("kept", 105)]
    );
}
