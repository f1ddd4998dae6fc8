//! Whose file it is: our databases carry `APPLICATION_ID`; another application's database is
//! refused, naming it, and left byte for byte as it was; our files from before the id existed
//! still open and get it.

use std::fs;
use std::path::Path;

use agent_memory_core::{MetaKey, MetaStore};
use agent_memory_sqlite::{APPLICATION_ID, Error, SCHEMA_VERSION, SqliteStore};
use rusqlite::Connection;

/// The application id in a database file's header (offset 68, big-endian).
fn header_id(path: &Path) -> u32 {
    let bytes = fs::read(path).expect("read");
    u32::from_be_bytes([bytes[68], bytes[69], bytes[70], bytes[71]])
}

/// Opening `path` must fail as `NotOurs` naming it and `detail`, by either open, and leave
/// the file byte for byte as it was; the read-write open (the command line's) also leaves no
/// file beside it. (A read-only connection to a WAL database cannot remove the `-wal` and
/// `-shm` files SQLite creates for reading, so only the database file is compared then.)
fn refused_and_untouched(path: &Path, detail: &str) {
    let before = fs::read(path).expect("read");
    let listing = || {
        let mut names: Vec<String> = fs::read_dir(path.parent().expect("folder"))
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let files = listing();
    for how in ["read-write", "read-only"] {
        let opened = match how {
            "read-write" => SqliteStore::open(path),
            _ => SqliteStore::open_read_only(path),
        };
        let err = match opened {
            Ok(_) => panic!("{how} open of another application's database succeeded"),
            Err(e) => e,
        };
        assert!(matches!(err, Error::NotOurs { .. }), "{how}: {err:?}");
        let message = err.to_string();
        assert!(
            message.starts_with(&format!(
                "{} is not an agent-memory database: ",
                path.display()
            )),
            "{how}: {message}"
        );
        assert!(message.contains(detail), "{how}: {message}");
        assert_eq!(
            fs::read(path).expect("read"),
            before,
            "{how}: the file changed"
        );
        if how == "read-write" {
            assert_eq!(listing(), files, "{how}: files appeared or went");
        }
    }
}

#[test]
fn a_fresh_file_carries_our_application_id() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    drop(SqliteStore::open(&path).expect("open"));
    assert_eq!(header_id(&path), APPLICATION_ID);
    assert_eq!(&APPLICATION_ID.to_be_bytes(), b"AMEM");
}

#[test]
fn another_applications_tables_are_refused_and_left_byte_for_byte() {
    for journal in ["DELETE", "WAL"] {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("notes.db");
        {
            let conn = Connection::open(&path).expect("plain connection");
            conn.pragma_update(None, "journal_mode", journal)
                .expect("journal");
            conn.execute_batch(
                "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
                 CREATE TABLE tags (note INTEGER, tag TEXT);
                 INSERT INTO notes (body) VALUES ('buy milk'), ('call home');",
            )
            .expect("create");
        }
        refused_and_untouched(&path, "it holds its own tables (notes, tags)");
    }
}

#[test]
fn another_application_id_is_refused_even_on_an_empty_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("other.db");
    {
        let conn = Connection::open(&path).expect("plain connection");
        conn.pragma_update(None, "application_id", 0x1234_5678)
            .expect("id");
    }
    refused_and_untouched(&path, "its application_id is 0x12345678");
}

#[test]
fn a_user_version_without_our_tables_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("versioned.db");
    {
        let conn = Connection::open(&path).expect("plain connection");
        conn.execute_batch("CREATE TABLE meta (k, v); PRAGMA user_version = 3;")
            .expect("create");
    }
    refused_and_untouched(
        &path,
        "it has user_version 3 but not the agent-memory tables of that version (",
    );
    {
        let conn = Connection::open(&path).expect("plain connection");
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 40)
            .expect("version");
    }
    refused_and_untouched(
        &path,
        &format!(
            "it has user_version {} and no agent-memory application_id",
            SCHEMA_VERSION + 40
        ),
    );
}

/// A current database of ours written before the id existed (its id is 0) opens, keeps its
/// data, and gets the id; so does every earlier version (a unit test of the schema upgrades
/// those from each version).
#[test]
fn our_database_from_before_the_id_opens_and_gets_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    let key = MetaKey::new("kept").expect("key");
    SqliteStore::open(&path)
        .expect("create")
        .meta_set(&key, "yes")
        .expect("set");
    {
        let conn = Connection::open(&path).expect("plain connection");
        conn.pragma_update(None, "application_id", 0)
            .expect("clear id");
    }
    assert_eq!(header_id(&path), 0);
    let store = SqliteStore::open(&path).expect("an older file of ours opens");
    assert_eq!(store.meta_get(&key).expect("get").as_deref(), Some("yes"));
    drop(store);
    assert_eq!(header_id(&path), APPLICATION_ID);
}
