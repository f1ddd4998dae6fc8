//! Crash safety: a child process writes through `SqliteStore` and is killed with SIGKILL at
//! random moments; after each kill the file must open, pass `PRAGMA integrity_check`, and hold
//! every write the child reported as committed (in this round and every earlier one), with
//! nothing half-written visible.
//!
//! The child is the writer of `agent_memory_core::testkit::crash::writes`, which cycles
//! through every kind of write the store takes (metadata, episode and session event batches,
//! tool logs, finished browser runs, and the batches `recording import` and `browser import`
//! write); its `Ledger` checks what the file holds. The file's soundness is judged first by
//! `SqliteStore::check` (SQLite's integrity check plus the store's own invariants).
//!
//! This binary has its own `main` (`harness = false`) because it re-executes itself as the
//! child: with `AGENT_MEMORY_CRASH_CHILD=<db path>` set, it is the writer. Kills and pauses come
//! from a fixed seed, so a failure reproduces. `AGENT_MEMORY_CRASH_KILLS` sets how many kills
//! (default 50).

use std::path::Path;
use std::process::ExitCode;

use agent_memory_core::testkit::crash::writes::{Ledger, OnError, Stores, write};
use agent_memory_core::testkit::crash::{CrashTest, KillLoop};
use agent_memory_sqlite::SqliteStore;

fn main() -> ExitCode {
    CrashTest {
        name: "sigkill_loses_no_committed_write",
        child,
    }
    .main(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        // Every round checks the writes of all earlier rounds too.
        let mut ledger = Ledger::default();
        KillLoop::from_env(0x5eed).run(&dir.path().join("memory.db"), |path, round, lines| {
            let committed = ledger
                .record(lines)
                .map_err(|e| format!("round {round}: {e}"))?;
            verify(path, round, &ledger).map_err(|e| format!("round {round}: {e}"))?;
            Ok(committed)
        })
    })
}

/// The writer: commits writes of every kind forever, reporting each on stdout once the call
/// returned.
fn child(path: &Path, round: u64) -> Result<(), String> {
    let store = SqliteStore::open(path).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    write(
        &Stores::with_browser(&store),
        round,
        OnError::Stop,
        None,
        &mut out,
    )
}

/// Checks the file after the kill of `round` against every write reported so far.
fn verify(path: &Path, round: u64, ledger: &Ledger) -> Result<(), String> {
    let store = SqliteStore::open(path).map_err(|e| format!("reopen: {e}"))?;
    let findings = store.check().map_err(|e| e.to_string())?;
    if !findings.is_empty() {
        return Err(format!("check: {findings:#?}"));
    }
    ledger.verify(&Stores::with_browser(&store), round)
}
