//! The embedded default store: every `memory-core` store trait on one SQLite file.
//!
//! ```
//! use agent_memory_core::{MetaKey, MetaStore};
//! use agent_memory_sqlite::SqliteStore;
//!
//! let dir = std::env::temp_dir().join(format!("store-sqlite-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let store = SqliteStore::open(dir.join("memory.db"))?;
//! store.meta_set(&MetaKey::new("owner")?, "docs")?;
//! assert_eq!(store.meta_get(&MetaKey::new("owner")?)?.as_deref(), Some("docs"));
//! # drop(store);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Opening reads the file's state in a read transaction (so it never waits for another
//! process's writer), refuses another application's database ([`APPLICATION_ID`] marks ours)
//! without touching it, sets WAL journaling, `synchronous = NORMAL` (or `FULL`), a checkpoint
//! every [`SqliteOptions::checkpoint_pages`] pages of WAL, a 32 MiB page cache, temporary
//! tables in memory, foreign keys, a busy timeout and a prepared-statement cache, and takes
//! the write lock only to migrate the schema forward when it is behind. A file on read-only
//! media opens for reading. Reads run in one deferred transaction per call. Every trait
//! method that writes runs in one immediate transaction, so a failed call leaves nothing
//! half-written and concurrent processes queue for the write lock instead of failing.

#![deny(missing_docs)]

mod browser;
mod check;
mod codec;
mod erase;
mod error;
mod identity;
mod meta;
mod notes;
mod schema;
mod session;
mod stats;
mod token_index;
mod tool_log;
mod trajectory;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agent_memory_core::{Clock, SharedClock};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

pub use check::{CHECKS, Check, Finding};
pub use error::Error;
pub use identity::APPLICATION_ID;
pub use schema::SCHEMA_VERSION;

use identity::Ownership;

pub(crate) use error::{check_sizes, item_error, to_core};

/// How durable a commit is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// WAL with `synchronous = NORMAL`: a commit survives a process crash; the last commits
    /// may be lost on power failure. The default.
    #[default]
    Normal,
    /// `synchronous = FULL`: a commit also survives power failure, at the cost of an fsync
    /// per commit.
    Full,
}

/// Options for opening a store. `SqliteOptions::default()` is what [`SqliteStore::open`] uses;
/// the `with_*` setters change one option each.
///
/// ```
/// use agent_memory_sqlite::{SqliteOptions, Synchronous};
///
/// let options = SqliteOptions::default().with_synchronous(Synchronous::Full).with_read_only(true);
/// assert!(options.read_only);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// Durability of commits.
    pub synchronous: Synchronous,
    /// How long a call waits for another connection's write lock before failing.
    pub busy_timeout: Duration,
    /// The page cache of the connection, in KiB. Default 32 MiB (SQLite's own default is
    /// 2 MiB), so the token index and recent pages stay in memory between calls.
    pub cache_kib: u32,
    /// How many prepared statements each connection keeps. Default 256: recording a browser
    /// run alone uses dozens, and a statement evicted from the cache is parsed again.
    pub statement_cache: usize,
    /// Open without write access; no migration is attempted.
    pub read_only: bool,
    /// The WAL is checkpointed into the database file once it holds this many pages (4 KiB
    /// each). Larger means fewer checkpoints, each copying a page once however often it
    /// changed since the last, at the cost of a larger `-wal` file. Default 10,000 (about
    /// 40 MiB); SQLite's own default is 1,000.
    pub checkpoint_pages: u32,
    /// The most pages (4 KiB each) the database may grow to; a write that would need more
    /// fails as a full disk does and changes nothing. `None` (the default): no limit beyond
    /// the disk.
    pub max_pages: Option<u32>,
    /// How long a forget waits for other connections still reading a snapshot from before it
    /// (their snapshot holds the forgotten bytes) before it reports the erasure pending
    /// ([`Error::ErasePending`]). Default 30 s.
    pub erase_wait: Duration,
    /// What stamps the writes that carry no time of their own (session events, notes), for
    /// the last write the summaries report. Default: the system clock.
    pub clock: SharedClock,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            synchronous: Synchronous::Normal,
            busy_timeout: Duration::from_secs(30),
            cache_kib: 32 * 1024,
            statement_cache: 256,
            read_only: false,
            checkpoint_pages: 10_000,
            max_pages: None,
            erase_wait: Duration::from_secs(30),
            clock: SharedClock::default(),
        }
    }
}

impl SqliteOptions {
    /// With commits as durable as `synchronous` says.
    pub fn with_synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// Waiting at most `timeout` for another connection's write lock.
    pub fn with_busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// With a page cache of `kib` KiB.
    pub fn with_cache_kib(mut self, kib: u32) -> Self {
        self.cache_kib = kib;
        self
    }

    /// Keeping `statements` prepared statements.
    pub fn with_statement_cache(mut self, statements: usize) -> Self {
        self.statement_cache = statements;
        self
    }

    /// Read-only (`true`) or read-write.
    pub fn with_read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Checkpointing the WAL every `pages` pages.
    pub fn with_checkpoint_pages(mut self, pages: u32) -> Self {
        self.checkpoint_pages = pages;
        self
    }

    /// Growing to at most `pages` pages (`None`: no limit beyond the disk).
    pub fn with_max_pages(mut self, pages: Option<u32>) -> Self {
        self.max_pages = pages;
        self
    }

    /// A forget waiting at most `wait` for older readers before reporting its erasure
    /// pending.
    pub fn with_erase_wait(mut self, wait: Duration) -> Self {
        self.erase_wait = wait;
        self
    }

    /// Stamping session and note writes with `clock`.
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = SharedClock::new(clock);
        self
    }
}

/// A memory store on one SQLite file. `Send + Sync`: share it behind an `Arc`.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
    path: PathBuf,
    /// False for a read-only open and for a file SQLite could only open for reading.
    writable: bool,
    fingerprint_ids: trajectory::FingerprintIds,
    /// [`SqliteOptions::busy_timeout`] and [`SqliteOptions::erase_wait`].
    busy_timeout: Duration,
    erase_wait: Duration,
    /// [`SqliteOptions::clock`].
    clock: SharedClock,
}

const IN_MEMORY: &str = ":memory:";

/// The largest single value (a text or a blob) a row may hold: 32 MiB. A write of a larger one
/// fails with [`agent_memory_core::Error::InvalidInput`] and changes nothing.
pub const MAX_VALUE_BYTES: i32 = 32 * 1024 * 1024;

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        SqliteStore::open_with(path, &SqliteOptions::default())
    }

    /// Opens an existing database without write access.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, Error> {
        let options = SqliteOptions {
            read_only: true,
            ..SqliteOptions::default()
        };
        SqliteStore::open_with(path, &options)
    }

    /// A private database in memory, gone when the store is dropped.
    pub fn open_in_memory() -> Result<Self, Error> {
        SqliteStore::open_in_memory_with(&SqliteOptions::default())
    }

    /// A private database in memory with `options`, gone when the store is dropped.
    pub fn open_in_memory_with(options: &SqliteOptions) -> Result<Self, Error> {
        let path = PathBuf::from(IN_MEMORY);
        let conn = Connection::open_in_memory().map_err(|source| Error::Open {
            path: path.clone(),
            source,
        })?;
        SqliteStore::prepare(conn, path, options)
    }

    /// Opens the database at `path` with `options`.
    ///
    /// Opening reads the file's state in one read transaction and takes the write lock only
    /// when something must be written (a migration, the application id of a file from an
    /// earlier version, the creator entry), so it does not wait for another process's writer.
    /// A non-empty database that is not ours is refused ([`Error::NotOurs`]) before anything
    /// touches it. A file that cannot be written (read-only media, an immutable file) opens
    /// for reading, and a write then fails naming the file.
    pub fn open_with(path: impl AsRef<Path>, options: &SqliteOptions) -> Result<Self, Error> {
        let path = path.as_ref().to_path_buf();
        if path.is_dir() {
            return Err(Error::IsADirectory { path });
        }
        let flags = if options.read_only {
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
        };
        let conn =
            Connection::open_with_flags(&path, flags).map_err(|source| classify(&path, source))?;
        match SqliteStore::prepare(conn, path.clone(), options) {
            Err(Error::Open { source, .. }) if read_only_media(&path, &source) => {
                SqliteStore::open_immutable(path, options)
            }
            opened => opened,
        }
    }

    /// Opens a file on read-only media: SQLite cannot create the shared-memory file a WAL
    /// database needs, so the file is opened `immutable` (no locks, no shared memory). Only
    /// when no `-wal` or `-shm` file lies beside it: then no process has it open for writing
    /// and no committed write waits in a log.
    fn open_immutable(path: PathBuf, options: &SqliteOptions) -> Result<Self, Error> {
        let uri = format!("file:{}?immutable=1", uri_path(&path));
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn =
            Connection::open_with_flags(&uri, flags).map_err(|source| classify(&path, source))?;
        let options = SqliteOptions {
            read_only: true,
            ..options.clone()
        };
        SqliteStore::prepare(conn, path, &options)
    }

    fn prepare(
        mut conn: Connection,
        path: PathBuf,
        options: &SqliteOptions,
    ) -> Result<Self, Error> {
        let fail = |source| classify(&path, source);
        conn.busy_timeout(options.busy_timeout).map_err(fail)?;
        conn.set_prepared_statement_cache_capacity(options.statement_cache);
        // The query planner stability guarantee: a cached statement keeps its plan whatever
        // values are bound. Without it SQLite marks every statement whose plan looked at a
        // bound value (any `LIMIT ?`) expired on each new binding and compiles it again on
        // its next step: every store call paid a parse and a plan for each such statement.
        // No plan here depends on a bound value (no `LIKE ?`, partial indexes name their
        // literals, no statistics are gathered), so the plans are the ones chosen today.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .map_err(fail)?;
        // A runaway value is refused with a clear error instead of growing the file by
        // hundreds of megabytes.
        conn.set_limit(
            rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH,
            MAX_VALUE_BYTES,
        )
        .map_err(fail)?;
        if let Some(pages) = options.max_pages {
            conn.pragma_update(None, "max_page_count", pages)
                .map_err(fail)?;
        }
        // SQLite opens a file it may not write read-only even when asked for read-write.
        let writable = !options.read_only && !conn.is_readonly(rusqlite::MAIN_DB).map_err(fail)?;
        // The first statements that read the file: a text file or a damaged header fails
        // here. Nothing is written before the file is known to be ours.
        let state = identity::read_state(&mut conn).map_err(fail)?;
        if let Ownership::Foreign(reason) = state.ownership {
            return Err(Error::NotOurs { path, reason });
        }
        let found = state.user_version;
        if found > SCHEMA_VERSION {
            return Err(Error::TooNew {
                path,
                found,
                supported: SCHEMA_VERSION,
            });
        }
        if writable {
            // WAL lets readers proceed while one writer commits, across processes.
            enable_wal(&conn, options.busy_timeout).map_err(fail)?;
            let sync = match options.synchronous {
                Synchronous::Normal => "NORMAL",
                Synchronous::Full => "FULL",
            };
            conn.pragma_update(None, "synchronous", sync)
                .map_err(fail)?;
            conn.pragma_update(None, "wal_autocheckpoint", options.checkpoint_pages)
                .map_err(fail)?;
            if state.needs_write() {
                SqliteStore::upgrade(&mut conn, &path)?;
            }
            // A forget's erasure that a reader held up is finished now, if that reader has
            // ended; if not, it stays pending for a later write.
            if let Ok(Some(stage)) = erase::pending(&conn) {
                let _ = erase::finish(&mut conn, stage, Duration::ZERO, options.busy_timeout);
            }
        } else {
            if found < SCHEMA_VERSION {
                return Err(Error::NeedsMigration {
                    path,
                    found,
                    supported: SCHEMA_VERSION,
                });
            }
            conn.pragma_update(None, "query_only", true).map_err(fail)?;
        }
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(fail)?;
        conn.pragma_update(None, "cache_size", -i64::from(options.cache_kib))
            .map_err(fail)?;
        // Sorts and statement journals stay in memory instead of temporary files.
        conn.pragma_update(None, "temp_store", "MEMORY")
            .map_err(fail)?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            path,
            writable,
            fingerprint_ids: trajectory::FingerprintIds::default(),
            busy_timeout: options.busy_timeout,
            erase_wait: options.erase_wait,
            clock: options.clock.clone(),
        })
    }

    /// The writes an open may need, each in its own immediate transaction: the migrations
    /// (each also marks the file ours), then the bookkeeping of [`identity::settle`].
    fn upgrade(conn: &mut Connection, path: &Path) -> Result<(), Error> {
        schema::migrate_to(conn, SCHEMA_VERSION).map_err(|(migration, source)| {
            match classify(path, source) {
                Error::Open { source, .. } => Error::Migration {
                    path: path.to_path_buf(),
                    version: migration.version,
                    name: migration.name,
                    source,
                },
                other => other,
            }
        })?;
        identity::settle(conn).map_err(|source| classify(path, source))
    }

    /// The file this store is on (`:memory:` for an in-memory database).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> agent_memory_core::Result<u32> {
        self.read("read the schema version", schema::user_version)
    }

    /// Runs SQLite's `PRAGMA integrity_check`; an empty list means the file is sound.
    pub fn integrity_check(&self) -> agent_memory_core::Result<Vec<String>> {
        self.read("check integrity", |conn| {
            let mut stmt = conn.prepare("PRAGMA integrity_check")?;
            let rows = stmt.query_map([], |row| row.get::<_, String>(0))?;
            let problems: Vec<String> = rows.collect::<rusqlite::Result<_>>()?;
            Ok(problems.into_iter().filter(|line| line != "ok").collect())
        })
    }

    /// Runs `f` on the connection for a read. `operation` names it in errors.
    pub(crate) fn read<T>(
        &self,
        operation: &str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> agent_memory_core::Result<T> {
        self.read_with(|conn| f(conn).map_err(|e| to_core(operation, e)))
    }

    /// Runs `f` on the connection for a read that reports domain errors itself. The read is
    /// one deferred transaction: every statement sees the same snapshot, and the file lock
    /// is taken once rather than per statement. Its `BEGIN` and `COMMIT` are cached
    /// statements, not parsed again for every read (a recall is two reads, and parsing them
    /// was a tenth of its time).
    pub(crate) fn read_with<T>(
        &self,
        f: impl FnOnce(&Connection) -> agent_memory_core::Result<T>,
    ) -> agent_memory_core::Result<T> {
        let conn = self.lock();
        let read = CachedTransaction::begin(&conn, "BEGIN DEFERRED")
            .map_err(|e| to_core("begin read", e))?;
        let value = f(&conn)?;
        read.commit().map_err(|e| to_core("end read", e))?;
        Ok(value)
    }

    /// Runs `f` in one immediate transaction and commits when it returns `Ok`; on `Err` the
    /// transaction rolls back and the store is unchanged. `operation` names it in errors.
    /// Its `BEGIN IMMEDIATE` and `COMMIT` are cached statements, as a read's are: parsing
    /// them again took about 4 k instructions of every write.
    pub(crate) fn write<T>(
        &self,
        operation: &str,
        f: impl FnOnce(&Connection) -> agent_memory_core::Result<T>,
    ) -> agent_memory_core::Result<T> {
        if !self.writable {
            return Err(agent_memory_core::Error::backend(
                "sqlite",
                operation.to_owned(),
                Error::ReadOnly {
                    path: self.path.clone(),
                },
            ));
        }
        let mut conn = self.lock();
        let tx = CachedTransaction::begin(&conn, "BEGIN IMMEDIATE")
            .map_err(|e| to_core(operation, e))?;
        let value = f(&conn)?;
        // A point read of one meta key: whether an earlier forget's erasure is still pending.
        let pending = erase::pending(&conn).map_err(|e| to_core(operation, e))?;
        tx.commit().map_err(|e| to_core(operation, e))?;
        if let Some(stage) = pending {
            // The write is committed whatever happens here; a reader that still holds the
            // forgotten bytes leaves the erasure pending for a later write.
            let _ = erase::finish(&mut conn, stage, Duration::ZERO, self.busy_timeout);
        }
        Ok(value)
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic inside a transaction drops it, which rolls back: the connection is usable.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A transaction begun with a cached statement (`BEGIN DEFERRED` for a read, `BEGIN
/// IMMEDIATE` for a write); dropped without [`commit`](Self::commit) (an error, or a panic
/// unwinding), it rolls back, as rusqlite's `Transaction` does, so the connection is left
/// outside any transaction and a failed write leaves the store unchanged.
struct CachedTransaction<'c> {
    conn: &'c Connection,
    open: bool,
}

impl<'c> CachedTransaction<'c> {
    fn begin(conn: &'c Connection, begin: &'static str) -> rusqlite::Result<Self> {
        conn.prepare_cached(begin)?.execute([])?;
        Ok(CachedTransaction { conn, open: true })
    }

    fn commit(mut self) -> rusqlite::Result<()> {
        self.conn.prepare_cached("COMMIT")?.execute([])?;
        self.open = false;
        Ok(())
    }
}

impl Drop for CachedTransaction<'_> {
    fn drop(&mut self) {
        // A write's changes are undone; a read has nothing to undo, and rolling back only
        // ends it. After a failed COMMIT SQLite may already have ended it, which this
        // ignores.
        if self.open && !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

/// Switches the file to WAL unless it already is (the mode is stored in the file).
///
/// The switch needs the file to itself, and SQLite reports a conflict at once instead of calling
/// the busy handler (it would deadlock if that connection were waiting for this one). When several
/// processes open a new file together, one of them switches it and the others see `BUSY` here;
/// they wait, up to the busy timeout, and then find the file in WAL mode.
/// The pauses grow from 1 ms to 50 ms.
fn enable_wal(conn: &Connection, timeout: Duration) -> rusqlite::Result<()> {
    let start = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        let mode: String = conn.pragma_query_value(None, "journal_mode", |row| row.get(0))?;
        if mode.eq_ignore_ascii_case("wal") {
            return Ok(());
        }
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(())) {
            // An in-memory database keeps its `memory` mode: nothing to wait for.
            Ok(_) => return Ok(()),
            // Past the timeout, SQLite's own "database is locked" is the error.
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && start.elapsed() < timeout => {}
            Err(e) => return Err(e),
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Whether `error`, on reading the file at `path`, means the file lies where SQLite cannot
/// create the shared-memory file of a WAL database (read-only media) and nothing else has it
/// open: no `-wal` and no `-shm` beside it.
fn read_only_media(path: &Path, error: &rusqlite::Error) -> bool {
    let beside = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    error.sqlite_error_code() == Some(rusqlite::ErrorCode::CannotOpen)
        && path.is_file()
        && !beside("-wal").exists()
        && !beside("-shm").exists()
}

/// `path` as the path part of a SQLite `file:` URI: `%`, `?` and `#` (and anything that is not
/// printable ASCII) percent-encoded.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'%' | b'?' | b'#' => out.push_str(&format!("%{byte:02X}")),
            0x21..=0x7e => out.push(char::from(*byte)),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// Turns a SQLite error on opening into an error that says what is wrong with the file.
fn classify(path: &Path, source: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode;
    let path = path.to_path_buf();
    match source.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => Error::NotADatabase { path },
        Some(ErrorCode::DatabaseCorrupt) => Error::Corrupt {
            path,
            detail: source.to_string(),
        },
        _ => Error::Open { path, source },
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::OptionalExtension;

    use super::*;

    fn written(store: &SqliteStore) -> Option<String> {
        store
            .read("read back", |conn| {
                conn.query_row("SELECT value FROM meta WHERE key = 'written'", [], |r| {
                    r.get(0)
                })
                .optional()
            })
            .expect("read")
    }

    #[test]
    fn a_failed_write_is_undone_and_ends_its_transaction() {
        let store = SqliteStore::open_in_memory().expect("open");
        let failed: agent_memory_core::Result<()> = store.write("test write", |conn| {
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('written', 'yes')",
                [],
            )
            .map_err(|e| to_core("insert", e))?;
            Err(agent_memory_core::Error::invalid_input("x", "refused"))
        });
        assert!(failed.is_err());
        assert!(store.lock().is_autocommit(), "the transaction is over");
        assert_eq!(written(&store), None, "the insert is undone");
        // The next write begins and commits with the same cached statements.
        store
            .write("test write", |conn| {
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('written', 'yes')",
                    [],
                )
                .map_err(|e| to_core("insert", e))?;
                Ok(())
            })
            .expect("write");
        assert!(store.lock().is_autocommit());
        assert_eq!(written(&store).as_deref(), Some("yes"));
    }
}
