//! Crash safety: a child process writes through `SqliteStore` and is killed with SIGKILL at
//! random moments; after each kill the file must open, pass `PRAGMA integrity_check`, and hold
//! every write the child reported as committed, with nothing half-written visible.
//!
//! This binary has its own `main` (`harness = false`) because it re-executes itself as the
//! child: with `AGENT_MEMORY_CRASH_CHILD=<db path>` set, it is the writer. Kills and pauses come
//! from a fixed seed, so a failure reproduces. `AGENT_MEMORY_CRASH_KILLS` sets how many kills
//! (default 50).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use memory_core::testkit::crash::{CrashTest, KillLoop};
use memory_core::{MetaKey, MetaStore, SplitMix64};
use store_sqlite::SqliteStore;

fn main() -> ExitCode {
    CrashTest {
        name: "sigkill_loses_no_committed_write",
        child,
    }
    .main(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        KillLoop::from_env(0x5eed).run(&dir.path().join("memory.db"), verify)
    })
}

/// One logical write of the child: `rows` entries that must appear all together or not at all.
fn batch_keys(round: u64, seq: u64, rows: u64) -> Vec<String> {
    (0..rows)
        .map(|i| format!("crash/{round}/{seq}/{i}"))
        .collect()
}

/// The writer: commits batches forever, reporting each on stdout once the call returned.
fn child(path: &Path, round: u64) -> Result<(), String> {
    let store = SqliteStore::open(path).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    let mut rng = SplitMix64::new(round);
    for seq in 0.. {
        let rows = 1 + rng.below(8);
        let keys: Vec<MetaKey> = batch_keys(round, seq, rows)
            .into_iter()
            .map(MetaKey::new)
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        // One batch is one transaction: a kill must leave all of its rows or none.
        let value = format!("{round}:{seq}");
        let entries: Vec<(&MetaKey, &str)> = keys.iter().map(|k| (k, value.as_str())).collect();
        store.meta_set_all(&entries).map_err(|e| e.to_string())?;
        writeln!(out, "committed {round} {seq} {rows}").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Checks the file after a kill; returns how many committed batches were verified.
fn verify(path: &Path, round: u64, lines: &[String]) -> Result<u64, String> {
    let store = SqliteStore::open(path).map_err(|e| format!("round {round}: reopen: {e}"))?;
    let problems = store.integrity_check().map_err(|e| e.to_string())?;
    if !problems.is_empty() {
        return Err(format!("round {round}: integrity_check: {problems:?}"));
    }
    let stored = store
        .meta_list(&format!("crash/{round}/"))
        .map_err(|e| e.to_string())?;
    let mut reported = 0;
    for line in lines {
        let fields: Vec<u64> = line
            .strip_prefix("committed ")
            .ok_or_else(|| format!("round {round}: bad child line {line:?}"))?
            .split(' ')
            .map(|f| {
                f.parse()
                    .map_err(|_| format!("round {round}: bad child line {line:?}"))
            })
            .collect::<Result<_, _>>()?;
        let [r, seq, rows] = fields[..] else {
            return Err(format!("round {round}: bad child line {line:?}"));
        };
        for key in batch_keys(r, seq, rows) {
            if !stored.iter().any(|(k, _)| k.as_str() == key) {
                return Err(format!("round {round}: committed write {key} is missing"));
            }
        }
        reported += 1;
    }
    // Nothing half-written: every batch present is present whole.
    let mut batches = std::collections::BTreeMap::<(u64, u64), u64>::new();
    for (key, _) in &stored {
        let parts: Vec<&str> = key.as_str().split('/').collect();
        let seq = parts.get(2).and_then(|s| s.parse().ok()).ok_or("bad key")?;
        *batches.entry((round, seq)).or_default() += 1;
    }
    let mut rng = SplitMix64::new(round);
    let mut expected_rows = Vec::new();
    for _ in 0..=batches.keys().map(|(_, s)| *s).max().unwrap_or(0) {
        expected_rows.push(1 + rng.below(8));
    }
    for ((_, seq), count) in &batches {
        let want = expected_rows[*seq as usize];
        if *count != want {
            return Err(format!(
                "round {round}: batch {seq} is half-written ({count} of {want} rows)"
            ));
        }
    }
    Ok(reported)
}
