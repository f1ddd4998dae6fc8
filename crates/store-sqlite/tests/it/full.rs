//! A full disk: the write that does not fit fails with SQLite's "database or disk is full",
//! stores nothing of its batch, and everything committed before stays readable and sound;
//! once there is room again, writes succeed.
//!
//! Two ways to fill the disk: SQLite's page limit (`SqliteOptions::max_pages`, the
//! `max_page_count` pragma), which every test run uses; and a real 4 MiB tmpfs, where the
//! write-ahead log itself meets `ENOSPC`, which needs root to mount and runs when
//! `AGENT_MEMORY_TMPFS_TESTS=1` is set.

use std::path::Path;
use std::process::Command;

use agent_memory_core::store::tool_log::{ToolLog, ToolLogStore};
use agent_memory_core::testkit::tool_log::sample_log;
use agent_memory_core::{SessionId, Timestamp};
use agent_memory_sqlite::{SqliteOptions, SqliteStore};

/// A batch of `n` logs of session `session`, each carrying about 8 KiB.
fn batch(session: &str, n: usize) -> Vec<ToolLog> {
    (0..n)
        .map(|i| {
            let mut log = sample_log(session, "inputText", i as i64);
            log.parameters = format!("{{\"text\":\"{}\",\"i\":{i}}}", "x".repeat(8 * 1024));
            log.timestamp = Timestamp::from_millis(i as i64);
            log
        })
        .collect()
}

fn logs(store: &SqliteStore, session: &str) -> usize {
    store
        .list_tool_logs(&SessionId::new(session).expect("session"))
        .expect("list")
        .len()
}

/// Imports batches of 16 logs, each into a new session, until one fails; checks that the
/// failure is the full disk, that the failed batch left nothing, and that every batch before
/// it is whole and the file sound. Returns how many batches fit.
fn fill(store: &SqliteStore) -> usize {
    for round in 0.. {
        let session = format!("s{round}");
        match store.import_tool_logs(&batch(&session, 16)) {
            Ok(()) => continue,
            Err(e) => {
                let message = e.to_string();
                assert!(message.contains("database or disk is full"), "{message}");
                assert_eq!(logs(store, &session), 0, "the failed batch left logs");
                for earlier in 0..round {
                    assert_eq!(logs(store, &format!("s{earlier}")), 16, "batch {earlier}");
                }
                assert_eq!(store.check().expect("check"), Vec::new());
                assert!(round > 0, "not even one batch fit");
                return round;
            }
        }
    }
    unreachable!("the loop only ends by returning")
}

#[test]
fn a_full_database_refuses_the_write_and_keeps_everything() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    drop(SqliteStore::open(&path).expect("create"));
    let limited = SqliteOptions::default().with_max_pages(Some(400));
    let store = SqliteStore::open_with(&path, &limited).expect("open with a page limit");
    let fitted = fill(&store);
    drop(store);
    // Without the limit there is room again: the refused batch now imports.
    let store = SqliteStore::open(&path).expect("reopen");
    store
        .import_tool_logs(&batch(&format!("s{fitted}"), 16))
        .expect("room again");
    assert_eq!(store.check().expect("check"), Vec::new());
}

/// Mounts a tmpfs of `size` at `at`; `false` when this process may not mount.
fn mount_tmpfs(at: &Path, size: &str) -> bool {
    Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(at)
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_full_file_system_refuses_the_write_and_keeps_everything() {
    if std::env::var("AGENT_MEMORY_TMPFS_TESTS").as_deref() != Ok("1") {
        eprintln!("set AGENT_MEMORY_TMPFS_TESTS=1 (as root) to fill a real tmpfs");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    assert!(
        mount_tmpfs(dir.path(), "4m"),
        "AGENT_MEMORY_TMPFS_TESTS=1 but mounting a tmpfs failed (it needs root)"
    );
    let path = dir.path().join("memory.db");
    let outcome = std::panic::catch_unwind(|| {
        let store = SqliteStore::open(&path).expect("create");
        let fitted = fill(&store);
        drop(store);
        // Reopening on the full file system reads everything back.
        let store = SqliteStore::open(&path).expect("reopen on a full disk");
        for round in 0..fitted {
            assert_eq!(logs(&store, &format!("s{round}")), 16, "batch {round}");
        }
        assert_eq!(store.check().expect("check"), Vec::new());
        fitted
    });
    let _ = Command::new("umount").arg(dir.path()).status();
    let fitted = outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    eprintln!("{fitted} batches of 16 logs fitted on a 4 MiB tmpfs");
}
