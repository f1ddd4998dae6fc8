//! Inspecting a store: row counts of every table and the size of the database.

use agent_memory_core::{MetaKey, MetaStore};
use agent_memory_sqlite::SqliteStore;

#[test]
fn table_counts_follow_the_rows_written() {
    let store = SqliteStore::open_in_memory().expect("open");
    let before = store.table_counts().expect("counts");
    let meta_rows = |counts: &[(String, u64)]| {
        counts
            .iter()
            .find(|(table, _)| table == "meta")
            .map(|(_, rows)| *rows)
    };
    let start = meta_rows(&before).expect("the meta table is listed");
    for i in 0..5 {
        let key = MetaKey::new(format!("stats.k{i}")).expect("key");
        store.meta_set(&key, "v").expect("set");
    }
    let after = store.table_counts().expect("counts");
    assert_eq!(meta_rows(&after), Some(start + 5));
    let names: Vec<&str> = after.iter().map(|(table, _)| table.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "tables are listed by name");
    assert!(
        names.iter().all(|name| !name.starts_with("sqlite_")),
        "{names:?}"
    );
}

#[test]
fn file_size_grows_with_the_data_and_matches_whole_pages() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path().join("memory.db")).expect("open");
    let empty = store.file_size().expect("size");
    assert!(empty > 0 && empty.is_multiple_of(512), "{empty}");
    for i in 0..200 {
        let key = MetaKey::new(format!("stats.k{i}")).expect("key");
        store.meta_set(&key, &"x".repeat(1000)).expect("set");
    }
    let full = store.file_size().expect("size");
    assert!(full >= empty + 200 * 1000, "{empty} -> {full}");
}
