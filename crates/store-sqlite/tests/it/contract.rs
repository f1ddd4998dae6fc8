//! Every contract suite of `memory-core`, run against SQLite (in memory and on a file).

use memory_core::testkit::{meta, run, session, trajectory};
use store_sqlite::SqliteStore;

fn in_memory() -> SqliteStore {
    SqliteStore::open_in_memory().unwrap_or_else(|e| panic!("open in memory: {e}"))
}

/// A store on a fresh file; the directory lives as long as the test process.
fn on_file() -> SqliteStore {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let store =
        SqliteStore::open(dir.path().join("memory.db")).unwrap_or_else(|e| panic!("open: {e}"));
    std::mem::forget(dir);
    store
}

#[test]
fn meta_store_contract() {
    for make in [in_memory as fn() -> SqliteStore, on_file] {
        if let Err(report) = run(meta::SUITE, &meta::cases(), make) {
            panic!("{report}");
        }
    }
}

#[test]
fn session_store_contract() {
    for make in [in_memory as fn() -> SqliteStore, on_file] {
        if let Err(report) = run(session::SUITE, &session::cases(), make) {
            panic!("{report}");
        }
    }
}

#[test]
fn trajectory_store_contract() {
    for make in [in_memory as fn() -> SqliteStore, on_file] {
        if let Err(report) = run(trajectory::SUITE, &trajectory::cases(), make) {
            panic!("{report}");
        }
    }
}

#[test]
fn browser_store_contract() {
    for make in [in_memory as fn() -> SqliteStore, on_file] {
        if let Err(report) = run(
            memory_core::testkit::browser::SUITE,
            &memory_core::testkit::browser::cases(),
            make,
        ) {
            panic!("{report}");
        }
    }
}
