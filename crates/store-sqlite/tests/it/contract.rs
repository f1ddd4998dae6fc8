//! Every contract suite of `memory-core`, run against SQLite (in memory and on a file).

use agent_memory_core::testkit::{TestClock, meta, run, session, trajectory};
use agent_memory_sqlite::{SqliteOptions, SqliteStore};

/// The suites check the times a store stamps its writes with: their clock is the test clock.
fn options() -> SqliteOptions {
    SqliteOptions::default().with_clock(TestClock)
}

pub(crate) fn in_memory() -> SqliteStore {
    SqliteStore::open_in_memory_with(&options()).unwrap_or_else(|e| panic!("open in memory: {e}"))
}

/// A store on a fresh file; the directory lives as long as the test process.
pub(crate) fn on_file() -> SqliteStore {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let store = SqliteStore::open_with(dir.path().join("memory.db"), &options())
        .unwrap_or_else(|e| panic!("open: {e}"));
    std::mem::forget(dir);
    store
}

/// Runs a contract suite against SQLite in memory and on a file, failing with its report.
pub(crate) fn check_on_sqlite(
    suite: &'static str,
    cases: &[agent_memory_core::testkit::Case<SqliteStore>],
) {
    for make in [in_memory as fn() -> SqliteStore, on_file] {
        if let Err(report) = run(suite, cases, make) {
            panic!("{report}");
        }
    }
}

#[test]
fn meta_store_contract() {
    check_on_sqlite(meta::SUITE, &meta::cases());
}

#[test]
fn session_store_contract() {
    check_on_sqlite(session::SUITE, &session::cases());
}

#[test]
fn trajectory_store_contract() {
    check_on_sqlite(trajectory::SUITE, &trajectory::cases());
}

#[test]
fn browser_store_contract() {
    check_on_sqlite(
        agent_memory_core::testkit::browser::SUITE,
        &agent_memory_core::testkit::browser::cases(),
    );
}
