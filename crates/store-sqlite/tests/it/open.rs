//! Opening: options, schema versions, and files that are not sound databases.

use std::fs;

use agent_memory_core::{MetaKey, MetaStore};
use agent_memory_sqlite::{Error, SCHEMA_VERSION, SqliteOptions, SqliteStore, Synchronous};

fn open_err(path: &std::path::Path) -> Error {
    match SqliteStore::open(path) {
        Ok(_) => panic!("opening {} should fail", path.display()),
        Err(e) => e,
    }
}

#[test]
fn a_fresh_file_is_migrated_and_in_wal_mode() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    let store = SqliteStore::open(&path).expect("open");
    assert_eq!(store.schema_version().expect("version"), SCHEMA_VERSION);
    assert!(store.integrity_check().expect("check").is_empty());
    let created_by = store
        .meta_get(&MetaKey::new("store.created_by").expect("key"))
        .expect("get");
    assert!(created_by.is_some_and(|v| v.starts_with("store-sqlite ")));
    drop(store);
    assert!(dir.path().join("memory.db").exists());
    // WAL leaves its marker in the header: bytes 18 and 19 are 2 for WAL.
    let header = fs::read(&path).expect("read");
    assert_eq!((header[18], header[19]), (2, 2));
}

/// A file still in rollback mode (a new file, or one another tool left so) with a writer in it:
/// switching to WAL needs the file to itself, and SQLite refuses at once rather than call the busy
/// handler (waiting could deadlock). Opening waits for the writer instead of failing with
/// "database is locked", which is what several processes opening one new file together ran into.
#[test]
fn opening_waits_for_a_writer_before_switching_to_wal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    drop(SqliteStore::open(&path).expect("create"));
    let writer = rusqlite::Connection::open(&path).expect("plain connection");
    writer
        .pragma_update(None, "journal_mode", "DELETE")
        .expect("back to rollback mode");
    // Hold the write lock, as another process opening the file and switching it does.
    writer
        .execute_batch("BEGIN IMMEDIATE; INSERT INTO meta (key, value) VALUES ('k', 'v');")
        .expect("write");
    let (opened, released) = std::thread::scope(|scope| {
        let opening = scope.spawn(|| SqliteStore::open(&path).map(|store| store.schema_version()));
        std::thread::sleep(std::time::Duration::from_millis(200));
        let released = !opening.is_finished();
        writer.execute_batch("COMMIT").expect("end the write");
        (opening.join().expect("opening thread"), released)
    });
    assert!(released, "open returned while the writer held its lock");
    assert_eq!(opened.expect("open").expect("version"), SCHEMA_VERSION);
    let header = fs::read(&path).expect("read");
    assert_eq!((header[18], header[19]), (2, 2), "the file is in WAL mode");
}

#[test]
fn data_survives_reopening_with_full_sync() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    let key = MetaKey::new("k").expect("key");
    {
        let options = SqliteOptions::default().with_synchronous(Synchronous::Full);
        let store = SqliteStore::open_with(&path, &options).expect("open");
        store.meta_set(&key, "v").expect("set");
    }
    let store = SqliteStore::open(&path).expect("reopen");
    assert_eq!(store.meta_get(&key).expect("get").as_deref(), Some("v"));
}

#[test]
fn a_text_file_is_not_a_database() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("notes.txt");
    fs::write(&path, "these are my notes, not a database\n".repeat(200)).expect("write");
    let err = open_err(&path);
    assert!(matches!(err, Error::NotADatabase { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("{} is not a SQLite database", path.display())
    );
    // The file is left as it was.
    assert!(
        fs::read_to_string(&path)
            .expect("read")
            .starts_with("these are my notes")
    );
}

#[test]
fn a_corrupt_database_is_reported_with_its_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    {
        let store = SqliteStore::open(&path).expect("open");
        for i in 0..200 {
            let key = MetaKey::new(format!("key{i}")).expect("key");
            store.meta_set(&key, &"x".repeat(500)).expect("set");
        }
    }
    // Overwrite everything after the first page's header with garbage.
    let mut bytes = fs::read(&path).expect("read");
    for (i, b) in bytes.iter_mut().enumerate().skip(100) {
        *b = (i * 7 % 251) as u8;
    }
    fs::write(&path, &bytes).expect("write");
    let message = match SqliteStore::open(&path) {
        Err(e) => e.to_string(),
        Ok(store) => match store.meta_list("") {
            Err(e) => e.to_string(),
            Ok(rows) => panic!("a corrupt file read back {} rows", rows.len()),
        },
    };
    assert!(
        message.contains("corrupt") || message.contains("not a SQLite database"),
        "{message}"
    );
}

#[test]
fn a_truncated_database_is_reported_with_its_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    drop(SqliteStore::open(&path).expect("open"));
    fs::write(&path, b"SQLite format 3\0\x10\0").expect("truncate");
    let err = open_err(&path);
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[test]
fn a_directory_is_not_a_database() {
    let dir = tempfile::tempdir().expect("temp dir");
    let err = open_err(dir.path());
    assert!(matches!(err, Error::IsADirectory { .. }), "{err:?}");
    assert!(
        err.to_string()
            .ends_with("is a directory, not a database file")
    );
}

#[test]
fn a_newer_database_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    drop(SqliteStore::open(&path).expect("open"));
    set_user_version(&path, SCHEMA_VERSION + 7);
    let err = open_err(&path);
    assert!(
        matches!(err, Error::TooNew { found, supported, .. } if found == SCHEMA_VERSION + 7 && supported == SCHEMA_VERSION),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&format!("schema version {}", SCHEMA_VERSION + 7)),
        "{message}"
    );
    assert!(
        message.contains(&format!("({SCHEMA_VERSION})")),
        "{message}"
    );
}

/// Sets `user_version` by editing the header bytes directly (offset 60, big-endian), as a
/// newer build would have left it, without needing SQLite in this test crate.
fn set_user_version(path: &std::path::Path, version: u32) {
    let mut bytes = fs::read(path).expect("read");
    bytes[60..64].copy_from_slice(&version.to_be_bytes());
    fs::write(path, &bytes).expect("write");
}

#[test]
fn read_only_open_reads_but_refuses_writes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    let key = MetaKey::new("k").expect("key");
    SqliteStore::open(&path)
        .expect("open")
        .meta_set(&key, "v")
        .expect("set");
    let store = SqliteStore::open_read_only(&path).expect("open read-only");
    assert_eq!(store.meta_get(&key).expect("get").as_deref(), Some("v"));
    assert!(store.meta_set(&key, "w").is_err());
    assert_eq!(store.meta_get(&key).expect("get").as_deref(), Some("v"));
}

#[test]
fn read_only_open_of_a_missing_file_names_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("absent.db");
    let err = SqliteStore::open_read_only(&path).expect_err("missing file");
    assert!(err.to_string().contains("absent.db"), "{err}");
    assert!(!path.exists(), "a read-only open must not create the file");
}

#[test]
fn a_huge_value_is_refused_and_changes_nothing() {
    let store = SqliteStore::open_in_memory().expect("open");
    let key = MetaKey::new("big").expect("key");
    store.meta_set(&key, "small").expect("set");
    let huge = "z".repeat(100 * 1024 * 1024);
    let err = store.meta_set(&key, &huge).expect_err("100 MB value");
    let message = err.to_string();
    assert!(
        message.starts_with("invalid write meta entry: a value is larger than the store's limit"),
        "{message}"
    );
    assert_eq!(store.meta_get(&key).expect("get").as_deref(), Some("small"));
}

/// Makes `path` unwritable for this process: permissions first, and when they do not bind
/// (running as root) the immutable attribute. `false` when neither can be set here.
#[cfg(unix)]
fn make_unwritable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o444)).expect("chmod");
    let writable = || fs::OpenOptions::new().append(true).open(path).is_ok();
    if !writable() {
        return true;
    }
    let immutable = std::process::Command::new("chattr")
        .arg("+i")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    immutable && !writable()
}

#[cfg(unix)]
fn make_writable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::process::Command::new("chattr")
        .arg("-i")
        .arg(path)
        .status();
    let _ = fs::set_permissions(path, fs::Permissions::from_mode(0o644));
}

#[cfg(unix)]
#[test]
fn a_read_only_file_is_an_error_naming_it_and_stays_as_it_was() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    let key = MetaKey::new("k").expect("key");
    {
        let store = SqliteStore::open(&path).expect("open");
        store.meta_set(&key, "v").expect("set");
    } // the last connection checkpoints the WAL into the file and removes it
    if !make_unwritable(&path) {
        eprintln!("skipped: this file system cannot make a file read-only for this user");
        return;
    }
    let before = fs::read(&path).expect("read");
    let message = match SqliteStore::open(&path) {
        Err(e) => e.to_string(),
        Ok(store) => match store.meta_set(&key, "w") {
            Err(e) => e.to_string(),
            Ok(_) => {
                make_writable(&path);
                panic!("writing to a read-only file succeeded")
            }
        },
    };
    // The store can still be read through a read-only open.
    let read = SqliteStore::open_read_only(&path)
        .map_err(|e| e.to_string())
        .and_then(|s| s.meta_get(&key).map_err(|e| e.to_string()));
    make_writable(&path);
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(
        message.contains("readonly") || message.contains("read-only"),
        "{message}"
    );
    assert_eq!(fs::read(&path).expect("read"), before, "the file changed");
    assert_eq!(read.expect("read-only open").as_deref(), Some("v"));
}
