//! The `ToolLogStore` contract on SQLite, and the canary check that a sensitive snapshot
//! entry leaves no value in the database file.

use agent_memory_core::store::tool_log::{
    MemorySnapshot, SnapshotEntry, SnapshotValue, ToolLogStore,
};
use agent_memory_core::testkit::tool_log;
use agent_memory_sqlite::SqliteStore;

#[test]
fn tool_log_store_contract() {
    crate::contract::check_on_sqlite(tool_log::SUITE, &tool_log::cases());
}

/// Every byte of the database file and its write-ahead log.
fn file_bytes(path: &std::path::Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {path:?}: {e}"));
    let wal = path.with_extension("db-wal");
    if let Ok(more) = std::fs::read(&wal) {
        bytes.extend(more);
    }
    bytes
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn sensitive_snapshot_entries_leave_only_their_key_in_the_file() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let path = dir.path().join("memory.db");
    let store = SqliteStore::open(&path).unwrap_or_else(|e| panic!("open: {e}"));
    let mut log = tool_log::sample_log("canary", "signIn", 1);
    log.parameters = r#"{"password":"${merchant_password}"}"#.to_owned();
    log.memory_snapshot = Some(MemorySnapshot {
        entries: vec![
            SnapshotEntry {
                key: "merchant_password".to_owned(),
                value: SnapshotValue::Sensitive,
                written_by: Some("merchantFactory_loadAccount".to_owned()),
                written_at: None,
                existed_before: true,
            },
            SnapshotEntry {
                key: "visible_marker".to_owned(),
                value: SnapshotValue::Plain("plainmarker77".to_owned()),
                written_by: None,
                written_at: None,
                existed_before: true,
            },
        ],
    });
    store
        .append_tool_log(&log)
        .unwrap_or_else(|e| panic!("append: {e}"));
    let bytes = file_bytes(&path);
    // The check can fail: a plain value and the sensitive key do reach the file.
    assert!(contains(&bytes, b"plainmarker77"), "plain value not found");
    assert!(
        contains(&bytes, b"merchant_password"),
        "sensitive key not found"
    );
    drop(store);
}
