//! Any bytes as a database file: opening and reading must give an error or data, never a
//! panic or a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;
use agent_memory_core::MetaStore;
use agent_memory_sqlite::SqliteStore;

fuzz_target!(|bytes: &[u8]| {
    let Ok(dir) = std::env::temp_dir().canonicalize() else { return };
    let path = dir.join(format!("agent-memory-fuzz-{}.db", std::process::id()));
    if std::fs::write(&path, bytes).is_err() {
        return;
    }
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    if let Ok(store) = SqliteStore::open(&path) {
        let _ = store.meta_list("");
        let _ = store.integrity_check();
    }
    let _ = std::fs::remove_file(&path);
});
