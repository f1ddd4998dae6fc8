//! Editors on separate SQLite connections to one file, each running `str_replace` and
//! `insert` on one note at the same time: no edit is lost and none overwrites another.

use agent_memory_core::Scope;
use agent_memory_notes::Notes;
use agent_memory_sqlite::SqliteStore;

use crate::support::*;

#[test]
fn concurrent_editors_of_one_note_lose_no_edit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("memory.db");
    let scope = || Scope::new("default").expect("scope");
    let editors = 3;
    let edits = 15;
    let slots: String = (0..editors)
        .flat_map(|e| (0..edits).map(move |i| format!("slot {e}.{i}: open\n")))
        .collect();
    let first = Notes::new(SqliteStore::open(&db).expect("open"), scope());
    assert_eq!(
        answer(&first, &create("/memories/shared.md", &slots)),
        "File created successfully at: /memories/shared.md"
    );
    std::thread::scope(|threads| {
        for editor in 0..editors {
            let db = &db;
            threads.spawn(move || {
                // A connection of its own, as another process would have.
                let notes = Notes::new(SqliteStore::open(db).expect("open"), scope());
                for edit in 0..edits {
                    let done = notes.execute(&replace(
                        "/memories/shared.md",
                        &format!("slot {editor}.{edit}: open"),
                        &format!("slot {editor}.{edit}: done"),
                    ));
                    assert!(done.is_ok(), "str_replace: {done:?}");
                    let logged = notes.execute(&insert(
                        "/memories/shared.md",
                        0,
                        &format!("log {editor}.{edit}"),
                    ));
                    assert!(logged.is_ok(), "insert: {logged:?}");
                }
            });
        }
    });
    let text = first.view("/memories/shared.md", None).expect("view");
    for editor in 0..editors {
        for edit in 0..edits {
            assert!(
                text.contains(&format!("slot {editor}.{edit}: done")),
                "lost str_replace {editor}.{edit}"
            );
            assert!(
                text.contains(&format!("\tlog {editor}.{edit}\n")),
                "lost insert {editor}.{edit}"
            );
        }
    }
    assert!(!text.contains(": open"), "an edit was overwritten:\n{text}");
    // A str_replace of text another editor already changed fails; it never writes.
    assert_eq!(
        answer(
            &first,
            &replace("/memories/shared.md", "slot 0.0: open", "slot 0.0: again")
        ),
        "error: No replacement was performed, old_str `slot 0.0: open` did not appear verbatim in /memories/shared.md."
    );
}
