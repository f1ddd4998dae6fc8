//! Opening the database a command works on: a SQLite file (the default), or a PostgreSQL
//! database when `--db` is a `postgres://` (or `postgresql://`) URL.
//!
//! Commands see one type, [`Store`]: every store trait behind an `Arc`, whichever backend
//! serves it, so every command works the same on both.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::{Error, Result, ResultExt};
use agent_memory_core::store::browser::BrowserStore;
use agent_memory_core::{
    AuditStore, MetaStore, NoteStore, PatternStore, SessionStore, SharedClock, ToolLogStore,
};
use agent_memory_postgres::{PostgresOptions, PostgresStore};
use agent_memory_sqlite::{SqliteOptions, SqliteStore};

/// What a command needs of a backend: every store trait, and a description of itself.
pub trait AnyStore:
    MetaStore
    + SessionStore
    + ToolLogStore
    + PatternStore
    + BrowserStore
    + NoteStore
    + AuditStore
    + Inspect
{
}

impl<T> AnyStore for T where
    T: MetaStore
        + SessionStore
        + ToolLogStore
        + PatternStore
        + BrowserStore
        + NoteStore
        + AuditStore
        + Inspect
{
}

/// The store a command works on.
pub type Store = Arc<dyn AnyStore>;

/// What `stats` reports of a backend.
pub trait Inspect {
    /// The database: a file's path, or a server's host, port, database and schema (never a
    /// password).
    fn location(&self) -> String;
    /// The schema version it holds.
    fn schema_version(&self) -> agent_memory_core::Result<u32>;
    /// Its size in bytes.
    fn size_bytes(&self) -> agent_memory_core::Result<u64>;
    /// Every table with its rows.
    fn table_counts(&self) -> agent_memory_core::Result<Vec<(String, u64)>>;
    /// What the store's own checks find wrong, or `None` for a backend checked by its own
    /// tools (PostgreSQL's amcheck).
    fn check(&self) -> Option<agent_memory_core::Result<Vec<agent_memory_sqlite::Finding>>> {
        None
    }
}

impl Inspect for SqliteStore {
    fn location(&self) -> String {
        self.path().display().to_string()
    }
    fn schema_version(&self) -> agent_memory_core::Result<u32> {
        SqliteStore::schema_version(self)
    }
    fn size_bytes(&self) -> agent_memory_core::Result<u64> {
        self.file_size()
    }
    fn table_counts(&self) -> agent_memory_core::Result<Vec<(String, u64)>> {
        SqliteStore::table_counts(self)
    }
    fn check(&self) -> Option<agent_memory_core::Result<Vec<agent_memory_sqlite::Finding>>> {
        Some(SqliteStore::check(self))
    }
}

impl Inspect for PostgresStore {
    fn location(&self) -> String {
        format!("postgres://{} (schema {})", self.target(), self.schema())
    }
    fn schema_version(&self) -> agent_memory_core::Result<u32> {
        PostgresStore::schema_version(self)
    }
    fn size_bytes(&self) -> agent_memory_core::Result<u64> {
        PostgresStore::size_bytes(self)
    }
    fn table_counts(&self) -> agent_memory_core::Result<Vec<(String, u64)>> {
        PostgresStore::table_counts(self)
    }
}

/// Whether `--db` names a PostgreSQL database rather than a file.
pub fn is_postgres(db: &Path) -> bool {
    db.to_str()
        .is_some_and(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
}

/// `--db` as messages may show it: a URL loses every credential it carries.
///
/// The password of the userinfo is masked as the driver reads it (up to the first `@`, so raw
/// `/`, `?` and `#` belong to it, and further up to a raw `@` left in the host), and so is
/// the value of every query parameter whose name, percent-decoded and in any case, speaks of
/// a password or key (`password`, `sslpassword`, `passfile`, `sslkey`). Where the two
/// readings of a malformed URL differ, both are masked: showing too little is the safe side.
pub fn describe(db: &Path) -> String {
    let text = db.display().to_string();
    if !is_postgres(db) {
        return text;
    }
    redact(&text)
}

/// `url` with every byte of a credential replaced, each masked run shown as `***`.
fn redact(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let mut masked = vec![false; url.len()];
    let rest = &url[start..];
    if let Some(end) = credentials_end(rest)
        && let Some(colon) = rest[..end].find(':')
    {
        masked[start + colon + 1..start + end].fill(true);
    }
    if let Some(question) = rest.find('?') {
        let mut at = start + question + 1;
        for pair in url[at..].split('&') {
            if let Some((key, _)) = pair.split_once('=')
                && secret_parameter(key)
            {
                masked[at + key.len() + 1..at + pair.len()].fill(true);
            }
            at += pair.len() + 1;
        }
    }
    let mut shown = String::with_capacity(url.len());
    let mut hiding = false;
    for (i, c) in url.char_indices() {
        match (masked[i], hiding) {
            (true, false) => shown.push_str("***"),
            (false, _) => shown.push(c),
            (true, true) => {}
        }
        hiding = masked[i];
    }
    shown
}

/// Where the userinfo of `rest` (a URL after `://`) ends, as the driver reads it: the first
/// `@`, moved on past any `@` still in the host that follows (a raw `@` in a password).
fn credentials_end(rest: &str) -> Option<usize> {
    let mut end = rest.find('@')?;
    loop {
        let after = &rest[end + 1..];
        let host = &after[..after.find(['/', '?']).unwrap_or(after.len())];
        match host.rfind('@') {
            Some(more) => end += 1 + more,
            None => return Some(end),
        }
    }
}

/// Whether a query parameter named `key` (raw) carries a credential or names one.
fn secret_parameter(key: &str) -> bool {
    let key = percent_decoded(key).to_ascii_lowercase();
    key.contains("pass") || key.contains("sslkey")
}

/// `text` with `%XX` escapes decoded (invalid ones kept), lossily as UTF-8.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The name that opens a private SQLite database in memory instead of a file, as in SQLite.
pub const IN_MEMORY: &str = ":memory:";

/// Opens (creating if needed) the database `db`: a SQLite file (and its folder), a private
/// SQLite database in memory for [`IN_MEMORY`] (`":memory:"`, gone when the store is
/// dropped), or the memory in a PostgreSQL database (its schema created or migrated on first
/// use). The store stamps what it writes (a session event, a note) with `clock`'s time, so a
/// door's fixed "now" holds for every time it shows.
pub fn open(db: &Path, clock: &SharedClock) -> Result<Store> {
    if is_postgres(db) {
        return connect(db, false, clock);
    }
    if db == Path::new(IN_MEMORY) {
        return Ok(Arc::new(SqliteStore::open_in_memory_with(
            &sqlite_options(clock),
        )?));
    }
    Ok(Arc::new(open_file(db, clock)?))
}

fn sqlite_options(clock: &SharedClock) -> SqliteOptions {
    SqliteOptions::default().with_clock(clock.clone())
}

/// Opens the SQLite file at `path` (creating it and its folder if needed), its writes stamped
/// by `clock`.
pub fn open_file(path: &Path, clock: &SharedClock) -> Result<SqliteStore> {
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if folder.exists() && !folder.is_dir() {
            return Err(inside_a_file(folder, path));
        }
        std::fs::create_dir_all(folder).with_context(|| {
            format!(
                "cannot create folder {} for the database {}",
                folder.display(),
                path.display()
            )
        })?;
    }
    // The store's own error names the file and what is wrong with it.
    Ok(SqliteStore::open_with(path, &sqlite_options(clock))?)
}

/// Fails, as [`open_file`] would, when the database file `path` could never be created
/// because its folder, or a folder above it, is a file; creates nothing.
fn creatable(path: &Path) -> Result<()> {
    let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    if folder.exists() && !folder.is_dir() {
        return Err(inside_a_file(folder, path));
    }
    if let Some(file) = folder.ancestors().skip(1).find(|a| a.is_file()) {
        return Err(Error::new(
            crate::ErrorKind::Io,
            format!(
                "cannot create folder {} for the database {}: {} is a file",
                folder.display(),
                path.display(),
                file.display()
            ),
        )
        .about(path.display().to_string()));
    }
    Ok(())
}

/// The error of a database `path` whose `folder` is a file.
fn inside_a_file(folder: &Path, path: &Path) -> Error {
    Error::invalid(
        folder.display().to_string(),
        format!(
            "{} is a file, so the database {} cannot be created inside it",
            folder.display(),
            path.display()
        ),
    )
}

/// Opens the existing database `db` for reading only: a read never creates, migrates or
/// writes it. A missing file, or a PostgreSQL schema holding no memory, is an error naming
/// it.
pub fn open_existing(db: &Path) -> Result<Store> {
    if is_postgres(db) {
        return connect(db, true, &SharedClock::default());
    }
    must_exist(db)?;
    Ok(Arc::new(SqliteStore::open_read_only(db)?))
}

/// Opens the existing database `db` for a change that only makes sense on a database that
/// holds something (forgetting): a missing one is an error naming it, not a new one. Its
/// writes are stamped by `clock`.
pub fn open_existing_for_writing(db: &Path, clock: &SharedClock) -> Result<Store> {
    if is_postgres(db) {
        // The read-only check says whether the memory is there, without creating it.
        connect(db, true, clock)?;
        return connect(db, false, clock);
    }
    must_exist(db)?;
    Ok(Arc::new(SqliteStore::open_with(
        db,
        &sqlite_options(clock),
    )?))
}

/// A second store over `writer`'s database `db` for reads beside its writes: a SQLite file
/// opened again, read-only, with a page cache of `cache_kib` KiB, so its reads take their own
/// snapshot instead of queueing for the connection a long write holds; `writer` itself for
/// PostgreSQL (whose pool already gives each read its own connection) and for a private
/// database in memory (which no second connection can see).
pub fn open_reader(db: &Path, writer: &Store, cache_kib: u32) -> Result<Store> {
    if is_postgres(db) || db == Path::new(IN_MEMORY) {
        return Ok(Arc::clone(writer));
    }
    let options = SqliteOptions::default()
        .with_read_only(true)
        .with_cache_kib(cache_kib);
    Ok(Arc::new(SqliteStore::open_with(db, &options)?))
}

fn connect(db: &Path, read_only: bool, clock: &SharedClock) -> Result<Store> {
    let url = db.to_str().unwrap_or_default();
    let options = PostgresOptions::default()
        .with_clock(clock.clone())
        .with_read_only(read_only);
    match PostgresStore::connect_with(url, &options) {
        Ok(store) => Ok(Arc::new(store)),
        Err(agent_memory_postgres::Error::NeedsMigration {
            target,
            schema,
            found: 0,
            ..
        }) => Err(Error::not_found(
            describe(db),
            format!(
                "no memory in schema {schema} at {target} (check --db or AGENT_MEMORY_DB; a command that writes creates it)"
            ),
        )),
        Err(error) => Err(error.into()),
    }
}

/// Opens the database `db` for a read that should answer as on an empty memory when there is
/// none yet (an agent's first run on a fresh machine must not fail): the existing database
/// read-only, as [`open_existing`]; for a SQLite file that does not exist, or a PostgreSQL
/// schema that holds no memory, an empty memory in RAM, and `missing` is true. Nothing is
/// created, migrated or written.
pub fn open_for_reading(db: &Path) -> Result<ForReading> {
    match open_existing(db) {
        Ok(store) => Ok(ForReading {
            store,
            missing: false,
        }),
        Err(error) if error.kind() == crate::ErrorKind::NotFound => Ok(ForReading {
            store: empty()?,
            missing: true,
        }),
        Err(error) => Err(error),
    }
}

/// What [`open_for_reading`] opened.
pub struct ForReading {
    /// The store to read.
    pub store: Store,
    /// Whether the database does not exist yet, so `store` is an empty memory standing in for
    /// it.
    pub missing: bool,
}

/// An empty memory in RAM, never written to disk.
fn empty() -> Result<Store> {
    Ok(Arc::new(SqliteStore::open_in_memory_with(
        &SqliteOptions::default(),
    )?))
}

/// A database a door keeps for many calls (a language package's `Store`), created by the
/// first write and never by a read.
///
/// A SQLite file that exists, a private database in memory and a PostgreSQL database are
/// opened at once, as [`open`] opens them. A SQLite file that does not exist yet is left
/// alone: a read answers from an empty memory in RAM, as on a fresh database, and the first
/// write creates the file (and its folder). Once opened, the database serves every call.
pub struct Database {
    db: PathBuf,
    clock: SharedClock,
    opened: OnceLock<Store>,
    empty: OnceLock<Store>,
}

impl Database {
    /// The database `db`, its writes stamped by `clock`.
    pub fn new(db: &Path, clock: &SharedClock) -> Result<Database> {
        let database = Database {
            db: db.to_owned(),
            clock: clock.clone(),
            opened: OnceLock::new(),
            empty: OnceLock::new(),
        };
        if is_postgres(db) || db == Path::new(IN_MEMORY) || db.exists() {
            let _ = database.opened.set(open(db, clock)?);
        } else {
            // Refused now, not at the first write: nothing could ever create it.
            creatable(db)?;
        }
        Ok(database)
    }

    /// The database: the opened store's location, else the path as given.
    pub fn location(&self) -> String {
        match self.opened.get() {
            Some(store) => store.location(),
            None => describe(&self.db),
        }
    }

    /// The store once the database is opened; `None` while a SQLite file does not exist yet
    /// and nothing was written.
    pub fn opened(&self) -> Option<&Store> {
        self.opened.get()
    }

    /// The store for an operation of `effect`: the database, opened (and for a write,
    /// created) if it is not yet; for a read while the file does not exist, an empty memory.
    pub fn store(&self, effect: crate::operations::Effect) -> Result<&Store> {
        if let Some(store) = self.opened.get() {
            return Ok(store);
        }
        if effect == crate::operations::Effect::Reads && !self.db.exists() {
            if let Some(store) = self.empty.get() {
                return Ok(store);
            }
            let store = empty()?;
            return Ok(self.empty.get_or_init(|| store));
        }
        // Two threads may both open it; the store kept is the first, the other is dropped.
        let store = open(&self.db, &self.clock)?;
        Ok(self.opened.get_or_init(|| store))
    }
}

fn must_exist(path: &Path) -> Result<()> {
    if !path.exists() {
        return Err(Error::not_found(
            path.display().to_string(),
            format!(
                "database {} does not exist (check --db or AGENT_MEMORY_DB)",
                path.display()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_files_and_lose_their_password_in_messages() {
        assert!(is_postgres(Path::new("postgres://h/db")));
        assert!(is_postgres(Path::new("postgresql://h/db")));
        assert!(!is_postgres(Path::new("agent-memory.db")));
        assert!(!is_postgres(Path::new("./postgres://x")));
        assert_eq!(
            describe(Path::new(
                "postgres://agent:s3cret@db.internal:5432/memory?schema=a"
            )),
            "postgres://agent:***@db.internal:5432/memory?schema=a"
        );
        assert_eq!(
            describe(Path::new("postgres://agent@h/m")),
            "postgres://agent@h/m"
        );
        assert_eq!(describe(Path::new("memory.db")), "memory.db");
    }

    /// Every form a connection string can carry a credential in, and what messages show.
    #[test]
    fn no_credential_survives_describe() {
        let check = |url: &str, shown: &str| {
            let described = describe(Path::new(url));
            assert_eq!(described, shown, "{url}");
            let lower = described.to_lowercase();
            assert!(!lower.contains("xq7") && !lower.contains("zk9"), "{url}");
        };
        check("postgres://a:Xq7Zk9@h:5432/m", "postgres://a:***@h:5432/m");
        check("postgres://a:Xq7%2FZk9@h/m", "postgres://a:***@h/m");
        check("postgres://a:Xq7%40Zk9@h/m", "postgres://a:***@h/m");
        check(
            "postgres://a:Xq7/Zk9@h/m?schema=s",
            "postgres://a:***@h/m?schema=s",
        );
        check(
            "postgres://a:Xq7?Zk9@h/m?schema=s",
            "postgres://a:***@h/m?schema=s",
        );
        check("postgres://a:Xq7#Zk9@h/m", "postgres://a:***@h/m");
        check("postgres://a:Xq7@Zk9@h/m", "postgres://a:***@h/m");
        check("postgres://a:Xq7/Zk9@h", "postgres://a:***@h");
        check("postgresql://a:@h/m", "postgresql://a:@h/m");
        check(
            "postgres://a@h/m?password=Xq7Zk9&schema=s",
            "postgres://a@h/m?password=***&schema=s",
        );
        check(
            "postgres://h/m?schema=s&PassWord=Xq7%26Zk9",
            "postgres://h/m?schema=s&PassWord=***",
        );
        check(
            "postgres://h/m?pass%77ord=Xq7Zk9",
            "postgres://h/m?pass%77ord=***",
        );
        check(
            "postgres://h/m?sslpassword=Xq7Zk9",
            "postgres://h/m?sslpassword=***",
        );
        check(
            "postgres://h/m?passfile=/Xq7/Zk9",
            "postgres://h/m?passfile=***",
        );
        check(
            "postgres://h/m?sslkey=/Xq7/Zk9",
            "postgres://h/m?sslkey=***",
        );
        check(
            "postgres://h/m?password=Xq7@Zk9",
            "postgres://h/m?password=***",
        );
        // The driver would read `h:5432/m?password=Xq7` as userinfo; both readings are masked.
        check("postgres://h:5432/m?password=Xq7@Zk9", "postgres://h:***");
        check("postgres://h/m?user=a@b", "postgres://h/m?user=a@b");
    }

    #[test]
    fn memory_opens_a_private_database_in_memory_and_no_file() {
        use agent_memory_core::MetaKey;
        let first = open(Path::new(IN_MEMORY), &SharedClock::default()).expect("in memory");
        let second = open(Path::new(IN_MEMORY), &SharedClock::default()).expect("in memory");
        let key = MetaKey::new("probe").expect("key");
        first.meta_set(&key, "1").expect("write");
        assert_eq!(first.meta_get(&key).expect("read").as_deref(), Some("1"));
        assert_eq!(second.meta_get(&key).expect("read"), None);
        assert!(!Path::new(IN_MEMORY).exists());
    }

    /// A door's fixed "now" is the time a store stamps its writes with, so every time a door
    /// shows (a session's last write) is that "now", on a file as in memory.
    #[test]
    fn writes_are_stamped_with_the_clock_given() {
        use agent_memory_core::store::session::SessionEvent;
        use agent_memory_core::{ManualClock, SessionId, Timestamp};
        let at = Timestamp::from_millis(1_767_225_600_000);
        let clock = SharedClock::new(ManualClock::new(at));
        let folder = tempfile::tempdir().expect("folder");
        for db in [
            Path::new(IN_MEMORY).to_path_buf(),
            folder.path().join("m.db"),
        ] {
            let store = open(&db, &clock).expect("open");
            let session = SessionId::new("s1").expect("session id");
            store
                .session_append(&session, &[SessionEvent::new("note", "{}")])
                .expect("append");
            let listed = store.session_list().expect("list");
            assert_eq!(listed[0].last_write, Some(at), "{}", db.display());
        }
    }

    /// A read of a database that does not exist yet answers from an empty memory and creates
    /// nothing; a read of a folder that is a file is not found either, never created.
    #[test]
    fn a_read_of_a_missing_database_is_empty_and_creates_nothing() {
        let folder = tempfile::tempdir().expect("folder");
        let db = folder.path().join("sub").join("m.db");
        let read = open_for_reading(&db).expect("read");
        assert!(read.missing);
        assert!(read.store.partitions().expect("partitions").is_empty());
        assert!(!db.exists() && !folder.path().join("sub").exists());
        open(&db, &SharedClock::default()).expect("create");
        assert!(!open_for_reading(&db).expect("read").missing);
    }

    /// A door's database is created by its first write, never by a read; once opened it
    /// serves every call.
    #[test]
    fn a_database_is_created_by_the_first_write_only() {
        use crate::operations::Effect;
        use agent_memory_core::MetaKey;
        let folder = tempfile::tempdir().expect("folder");
        let db = folder.path().join("m.db");
        let database = Database::new(&db, &SharedClock::default()).expect("database");
        assert!(database.opened().is_none());
        let key = MetaKey::new("probe").expect("key");
        let read = database.store(Effect::Reads).expect("read");
        assert_eq!(read.meta_get(&key).expect("read"), None);
        assert!(!db.exists(), "a read created the file");
        database
            .store(Effect::Writes)
            .expect("write")
            .meta_set(&key, "1")
            .expect("set");
        assert!(db.exists());
        assert!(database.opened().is_some());
        let again = database.store(Effect::Reads).expect("read");
        assert_eq!(again.meta_get(&key).expect("read").as_deref(), Some("1"));
        // An existing file is opened at once.
        let reopened = Database::new(&db, &SharedClock::default()).expect("database");
        assert!(reopened.opened().is_some());
        // One inside a file could never be created: refused at once.
        let inside = db.join("deeper").join("m.db");
        let refused = Database::new(&inside, &SharedClock::default())
            .err()
            .expect("a database inside a file");
        assert_eq!(refused.kind(), crate::ErrorKind::Io);
        assert!(
            refused.message().contains("is a file"),
            "{}",
            refused.message()
        );
    }
}
