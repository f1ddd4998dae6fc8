//! Readers never wait: opening checks the schema in a read transaction, so a reader opens and
//! answers while another connection holds a write transaction; and a database on read-only
//! media (a read-only file in a read-only folder) opens and reads, and a write fails naming it.

use std::fs;
use std::path::Path;
use std::time::Duration;

use agent_memory_core::{MetaKey, MetaStore};
use agent_memory_sqlite::{SqliteOptions, SqliteStore};

/// Options whose busy timeout is zero: any wait for a lock fails at once with "database is
/// locked", so a test that succeeds shows no lock was waited for.
fn impatient(read_only: bool) -> SqliteOptions {
    SqliteOptions::default()
        .with_busy_timeout(Duration::ZERO)
        .with_read_only(read_only)
}

#[test]
fn a_reader_opens_and_answers_while_another_connection_writes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    let key = MetaKey::new("k").expect("key");
    SqliteStore::open(&path)
        .expect("create")
        .meta_set(&key, "committed")
        .expect("set");
    let writer = rusqlite::Connection::open(&path).expect("writer");
    writer
        .execute_batch("BEGIN IMMEDIATE; UPDATE meta SET value = 'uncommitted' WHERE key = 'k';")
        .expect("hold the write lock");
    for read_only in [false, true] {
        let store = SqliteStore::open_with(&path, &impatient(read_only))
            .unwrap_or_else(|e| panic!("open (read_only {read_only}) waited for the writer: {e}"));
        assert_eq!(
            store.meta_get(&key).expect("read").as_deref(),
            Some("committed"),
            "read_only {read_only}"
        );
        assert!(store.table_counts().is_ok(), "read_only {read_only}");
        // The lock is really held: a write from this store cannot have it.
        let write = store.meta_set(&key, "mine");
        assert!(
            write.is_err(),
            "read_only {read_only}: a second writer got the lock"
        );
    }
    writer.execute_batch("COMMIT").expect("commit");
    let store = SqliteStore::open_with(&path, &impatient(false)).expect("open");
    assert_eq!(
        store.meta_get(&key).expect("read").as_deref(),
        Some("uncommitted")
    );
}

/// A database of an earlier schema version still needs the write lock to migrate: opening it
/// while another connection writes fails (here at once, with no busy timeout) rather than
/// reading a schema it does not know.
#[test]
fn a_migration_still_takes_the_write_lock() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    drop(SqliteStore::open(&path).expect("create"));
    let writer = rusqlite::Connection::open(&path).expect("writer");
    writer
        .pragma_update(
            None,
            "user_version",
            agent_memory_sqlite::SCHEMA_VERSION - 1,
        )
        .expect("pretend an older version");
    writer
        .execute_batch("BEGIN IMMEDIATE; INSERT INTO meta (key, value) VALUES ('w', 'w');")
        .expect("hold the write lock");
    let err = SqliteStore::open_with(&path, &impatient(false))
        .expect_err("a migration cannot run while another connection writes");
    assert!(err.to_string().contains("locked"), "{err}");
    writer.execute_batch("COMMIT").expect("commit");
}

/// Makes `path` (a file or a folder) unwritable for this process: permission bits first, and
/// when they do not bind (as root) the immutable attribute, which binds everyone.
#[cfg(unix)]
fn make_unwritable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = if path.is_dir() { 0o555 } else { 0o444 };
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
    if !writable(path) {
        return;
    }
    let status = std::process::Command::new("chattr")
        .arg("+i")
        .arg(path)
        .status()
        .expect("run chattr");
    assert!(
        status.success() && !writable(path),
        "cannot make {} read-only here (neither permissions nor chattr +i bind)",
        path.display()
    );
}

#[cfg(unix)]
fn writable(path: &Path) -> bool {
    if path.is_dir() {
        let probe = path.join(".probe");
        let created = fs::File::create(&probe).is_ok();
        let _ = fs::remove_file(&probe);
        created
    } else {
        fs::OpenOptions::new().append(true).open(path).is_ok()
    }
}

#[cfg(unix)]
fn make_writable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::process::Command::new("chattr")
        .arg("-i")
        .arg(path)
        .status();
    let mode = if path.is_dir() { 0o755 } else { 0o644 };
    let _ = fs::set_permissions(path, fs::Permissions::from_mode(mode));
}

/// Read-only media: SQLite cannot create the `-shm` file a WAL database needs there. Both
/// opens read the data; a write fails naming the file; nothing on the media changes.
#[cfg(unix)]
#[test]
fn a_database_on_read_only_media_opens_and_reads() {
    let outer = tempfile::tempdir().expect("temp dir");
    let media = outer.path().join("media");
    fs::create_dir(&media).expect("folder");
    let path = media.join("memory.db");
    let key = MetaKey::new("k").expect("key");
    SqliteStore::open(&path)
        .expect("create")
        .meta_set(&key, "on the media")
        .expect("set"); // closing checkpoints the WAL into the file and removes it
    let before = fs::read(&path).expect("read");
    make_unwritable(&path);
    make_unwritable(&media);
    let outcome = std::panic::catch_unwind(|| {
        for read_only in [false, true] {
            let store = SqliteStore::open_with(&path, &impatient(read_only))
                .unwrap_or_else(|e| panic!("open (read_only {read_only}): {e}"));
            assert_eq!(
                store.meta_get(&key).expect("read").as_deref(),
                Some("on the media")
            );
            let err = store
                .meta_set(&key, "changed")
                .expect_err("a write on read-only media");
            let message = err.to_string();
            assert!(
                message.contains(&path.display().to_string()) && message.contains("read-only"),
                "{message}"
            );
        }
    });
    let files: Vec<_> = fs::read_dir(&media)
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    make_writable(&media);
    make_writable(&path);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    assert_eq!(fs::read(&path).expect("read"), before, "the file changed");
    assert_eq!(files, vec![std::ffi::OsString::from("memory.db")]);
}
