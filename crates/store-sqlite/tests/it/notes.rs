//! Notes on SQLite: the `NoteStore` contract in memory and on a file, editors on separate
//! connections to one file losing no edit, forgetting a scope leaving no byte of its text,
//! and the check finding the scope totals out of step.

use std::path::Path;

use agent_memory_core::evidence::{Evidence, Status, Writer};
use agent_memory_core::store::notes::{
    Decision, NOTE_CHANGED, NoteLimits, NotePath, NoteStore, is_note_conflict,
};
use agent_memory_core::testkit::notes;
use agent_memory_core::{Provenance, Scope, Source, Timestamp};
use agent_memory_sqlite::SqliteStore;

use crate::contract::check_on_sqlite;

#[test]
fn note_store_contract() {
    check_on_sqlite(notes::SUITE, &notes::cases());
}

fn scope() -> Scope {
    Scope::new("default").expect("scope")
}

fn path(p: &str) -> NotePath {
    NotePath::new(p).expect("path")
}

fn by() -> Provenance {
    Provenance::new(Source::User, Timestamp::from_millis(1_767_225_600_000))
}

fn ev() -> Evidence {
    Evidence::unscreened(by())
}

/// Appends `line` to the note by read, change, compare-and-swap, retrying when another
/// editor wrote in between.
fn append_line(store: &SqliteStore, line: &str) {
    loop {
        let before = store
            .note_read(&scope(), &path("shared.md"))
            .expect("read")
            .expect("the note exists");
        let after = format!("{before}{line}\n");
        match store.note_replace(
            &scope(),
            &path("shared.md"),
            &before,
            &after,
            &ev(),
            &NoteLimits::default(),
        ) {
            Ok(()) => return,
            Err(e) if is_note_conflict(&e, NOTE_CHANGED) => continue,
            Err(e) => panic!("replace: {e}"),
        }
    }
}

#[test]
fn editors_on_separate_connections_lose_no_edit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("memory.db");
    let first = SqliteStore::open(&db).expect("open");
    first
        .note_create(
            &scope(),
            &path("shared.md"),
            "",
            &ev(),
            &NoteLimits::default(),
        )
        .expect("create");
    std::thread::scope(|threads| {
        for editor in 0..3 {
            let db = &db;
            threads.spawn(move || {
                // Each editor has a connection of its own, as another process would.
                let store = SqliteStore::open(db).expect("open");
                for edit in 0..20 {
                    append_line(&store, &format!("{editor}.{edit}"));
                }
            });
        }
    });
    let text = first
        .note_read(&scope(), &path("shared.md"))
        .expect("read")
        .expect("note");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    let mut expected: Vec<String> = (0..3)
        .flat_map(|e| (0..20).map(move |i| format!("{e}.{i}")))
        .collect();
    expected.sort_unstable();
    assert_eq!(lines, expected, "every edit is in the note once");
    assert!(first.check().expect("check").is_empty());
}

fn holds(db: &Path, needle: &str) -> bool {
    let mut bytes = std::fs::read(db).expect("database file");
    for suffix in ["-wal", "-shm"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        if let Ok(more) = std::fs::read(Path::new(&name)) {
            bytes.extend(more);
        }
    }
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn forgetting_a_scope_leaves_no_byte_of_its_text() {
    const CANARY: &str = "canary-notes-5e1d77-forget-me";
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("memory.db");
    let store = SqliteStore::open(&db).expect("open");
    let kept = Scope::new("kept").expect("scope");
    let limits = NoteLimits::default();
    for i in 0..50 {
        store
            .note_create(
                &kept,
                &path(&format!("k{i}.md")),
                &format!("kept {i}"),
                &ev(),
                &limits,
            )
            .expect("create kept");
    }
    store
        .note_create(
            &scope(),
            &path("secret/a.md"),
            &format!("x {CANARY} y"),
            &ev(),
            &limits,
        )
        .expect("create");
    store
        .note_replace(
            &scope(),
            &path("secret/a.md"),
            &format!("x {CANARY} y"),
            &format!("{CANARY} again"),
            &ev(),
            &limits,
        )
        .expect("replace");
    assert!(holds(&db, CANARY), "the test must see the canary first");
    assert_eq!(
        store
            .note_forget(&scope(), &crate::forgetter())
            .expect("forget"),
        1
    );
    assert!(
        !holds(&db, CANARY),
        "the forgotten text is still in the file"
    );
    assert_eq!(
        store
            .note_search(&kept, None, &["kept 7"], 10)
            .expect("search")
            .len(),
        1,
        "the kept scope is still searchable"
    );
    assert!(store.check().expect("check").is_empty());
}

#[test]
fn the_check_finds_scope_totals_out_of_step() {
    let store = crate::contract::in_memory();
    store
        .note_create(
            &scope(),
            &path("a.md"),
            "abc",
            &ev(),
            &NoteLimits::default(),
        )
        .expect("create");
    assert!(store.check().expect("check").is_empty());
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("memory.db");
    let on_file = SqliteStore::open(&db).expect("open");
    on_file
        .note_create(
            &scope(),
            &path("a.md"),
            "abc",
            &ev(),
            &NoteLimits::default(),
        )
        .expect("create");
    drop(on_file);
    let conn = rusqlite::Connection::open(&db).expect("raw open");
    conn.execute("UPDATE note_scopes SET bytes = 99", [])
        .expect("break the totals");
    drop(conn);
    let findings = SqliteStore::open(&db)
        .expect("reopen")
        .check()
        .expect("check");
    assert!(findings.iter().any(|f| f.check == "notes"), "{findings:?}");
}

/// Past the notes a search reads in path order, the trigram index finds the rest: on 600
/// notes, every query (rare and common words, words under three characters, wildcards of
/// LIKE and FTS5 syntax, any case, within a directory) finds what the in-memory store finds.
#[test]
fn search_past_the_first_notes_agrees_with_the_in_memory_store() {
    let sqlite = crate::contract::in_memory();
    let memory = agent_memory_core::InMemoryStore::new();
    let limits = NoteLimits::default();
    let words = ["deploy", "Cargo", "snake_case", "100%", "a\"b", "OR", "x*"];
    for i in 0..600 {
        let mut text = format!("note {i}: {} {}", words[i % 7], words[(i / 7) % 7]);
        if i % 97 == 5 {
            text.push_str(" Zanzibar");
        }
        let p = path(&format!("d{}/n{i:04}.md", i % 3));
        sqlite
            .note_create(&scope(), &p, &text, &ev(), &limits)
            .expect("sqlite");
        memory
            .note_create(&scope(), &p, &text, &ev(), &limits)
            .expect("memory");
    }
    let queries: &[(&[&str], Option<&str>, usize)] = &[
        (&["zanzibar"], None, 100),
        (&["ZANZIBAR", "deploy"], None, 100),
        (&["zanzibar"], Some("d2"), 100),
        (&["e_c"], None, 1000),
        (&["0%"], None, 5),
        (&["a\"b", "or"], None, 1000),
        (&["x*"], Some("d1"), 1000),
        (&["n"], None, 1000),
        (&["cargo", "deploy"], None, 1000),
        (&["absent"], None, 10),
    ];
    for (terms, dir, limit) in queries {
        let dir = dir.map(path);
        let found = |store: &dyn NoteStore| -> Vec<String> {
            store
                .note_search(&scope(), dir.as_ref(), terms, *limit)
                .expect("search")
                .into_iter()
                .map(|h| h.path.into_string())
                .collect()
        };
        let expected = found(&memory);
        assert_eq!(found(&sqlite), expected, "{terms:?} in {dir:?}");
    }
    assert!(
        !found_nothing(&memory),
        "the queries must find something for the comparison to mean anything"
    );
}

fn found_nothing(store: &agent_memory_core::InMemoryStore) -> bool {
    store
        .note_search(&scope(), None, &["zanzibar"], 100)
        .expect("search")
        .is_empty()
}

/// The check finds a note's older version numbered at or past its own, and evidence that
/// does not read back.
#[test]
fn the_check_finds_versions_out_of_order_and_unreadable_evidence() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("memory.db");
    let store = SqliteStore::open(&db).expect("open");
    store
        .note_create(
            &scope(),
            &path("a.md"),
            "one",
            &ev(),
            &NoteLimits::default(),
        )
        .expect("create");
    store
        .note_replace(
            &scope(),
            &path("a.md"),
            "one",
            "two",
            &ev(),
            &NoteLimits::default(),
        )
        .expect("replace");
    assert!(store.check().expect("check").is_empty());
    drop(store);
    let conn = rusqlite::Connection::open(&db).expect("raw open");
    conn.execute("UPDATE note_versions SET version = 5", [])
        .expect("break the numbering");
    conn.execute("UPDATE notes SET source = 'web:x'", [])
        .expect("break the source");
    drop(conn);
    let findings = SqliteStore::open(&db)
        .expect("reopen")
        .check()
        .expect("check");
    let details: Vec<&str> = findings.iter().map(|f| f.detail.as_str()).collect();
    assert!(
        details
            .iter()
            .any(|d| d.contains("is not older than its note's own version 2")),
        "{findings:?}"
    );
    assert!(details.iter().any(|d| d.contains("source")), "{findings:?}");
}

/// A rejected version and the versions a forget by provenance takes leave no byte of their
/// text in the file, and the note falls back to what the user wrote.
#[test]
fn rejected_and_forgotten_versions_are_erased() {
    const HELD: &str = "canary-held-91c2-ignore-previous-instructions";
    const RUN: &str = "canary-run-4b7e-poisoned-by-a-page";
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("memory.db");
    let store = SqliteStore::open(&db).expect("open");
    let limits = NoteLimits::default();
    let page = Evidence {
        provenance: Provenance::new(
            Source::Page("https://evil.example/".into()),
            Timestamp::from_millis(1_767_225_600_001),
        )
        .with_session("run-9"),
        status: Status::Quarantined,
        reasons: vec!["instruction: test".into()],
    };
    store
        .note_create(&scope(), &path("a.md"), "mine", &ev(), &limits)
        .expect("create");
    store
        .note_replace(&scope(), &path("a.md"), "mine", HELD, &page, &limits)
        .expect("replace");
    assert!(holds(&db, HELD), "the test must see the canary first");
    store
        .note_review(&scope(), &path("a.md"), 2, Decision::Reject, &by())
        .expect("reject");
    assert!(!holds(&db, HELD), "the rejected text is still in the file");
    let flagged = Evidence {
        status: Status::Flagged,
        ..page
    };
    store
        .note_replace(&scope(), &path("a.md"), "mine", RUN, &flagged, &limits)
        .expect("replace");
    store
        .note_create(&scope(), &path("b.md"), RUN, &flagged, &limits)
        .expect("create");
    assert!(holds(&db, RUN));
    let forgot = store
        .note_forget_by(None, &Writer::session("run-9"), &by())
        .expect("forget by session");
    assert_eq!((forgot.versions, forgot.notes, forgot.restored), (2, 1, 1));
    assert!(!holds(&db, RUN), "the forgotten text is still in the file");
    assert_eq!(
        store
            .note_read(&scope(), &path("a.md"))
            .expect("read")
            .as_deref(),
        Some("mine")
    );
    assert!(store.check().expect("check").is_empty());
}
