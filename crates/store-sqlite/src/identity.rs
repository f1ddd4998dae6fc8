//! Whose file this is, and what opening it must write.
//!
//! Our databases carry [`APPLICATION_ID`] in SQLite's `application_id` header field. Opening
//! first reads, in one read transaction and without the write lock, what it needs to decide:
//! the schema version, the application id, the tables, and whether the store's own
//! bookkeeping (the creator entry, a full pending list of the token index) wants a write. A
//! non-empty file that is not ours is refused before anything touches it; a file of ours that
//! is current needs no write at all, so opening never waits for another process's writer.

use std::collections::BTreeSet;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::schema::{self, SCHEMA_VERSION};
use crate::token_index::{PENDING_COUNT, PENDING_POSTINGS};

/// The `application_id` of every agent-memory database: the bytes `AMEM` (`0x414D454D`), set
/// when a file is created and by every migration. `file(1)` and other tools can tell our files
/// by it; opening refuses a database whose id is another one.
pub const APPLICATION_ID: u32 = 0x414D_454D;

/// What opening reads about a file before deciding anything.
#[derive(Debug)]
pub(crate) struct FileState {
    pub(crate) user_version: u32,
    pub(crate) application_id: u32,
    /// Every table, SQLite's own excepted, sorted.
    pub(crate) tables: BTreeSet<String>,
    /// How many objects (tables, indexes, views, triggers) the schema holds.
    pub(crate) objects: u64,
    /// Whose the file is.
    pub(crate) ownership: Ownership,
    /// Whether `meta` holds the `store.created_by` entry (read only from a file of ours).
    pub(crate) creator_recorded: bool,
    /// Whether the token index's pending list is due for a merge.
    pub(crate) pending_full: bool,
}

/// Whether a file may be used as a store.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ownership {
    /// Ours: marked with our id, or an earlier version of ours written before the id existed.
    Ours,
    /// Empty: nothing to lose; it becomes ours.
    Empty,
    /// Another application's database; the text says how it was told apart.
    Foreign(String),
}

/// Reads the state of the file in one deferred (read) transaction.
pub(crate) fn read_state(conn: &mut Connection) -> rusqlite::Result<FileState> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
    let user_version = schema::user_version(&tx)?;
    let application_id: i64 = tx.pragma_query_value(None, "application_id", |r| r.get(0))?;
    // The header holds the id as 32 bits; SQLite reports them as a signed integer.
    let application_id = application_id as i32 as u32;
    let objects: i64 = tx.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    let tables: BTreeSet<String> = tx
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' \
             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut state = FileState {
        user_version,
        application_id,
        tables,
        objects: u64::try_from(objects).unwrap_or(0),
        ownership: Ownership::Empty,
        creator_recorded: false,
        pending_full: false,
    };
    state.ownership = state.judge()?;
    if state.ownership != Ownership::Ours {
        tx.commit()?;
        return Ok(state);
    }
    state.creator_recorded = state.tables.contains("meta")
        && tx
            .query_row(
                "SELECT 1 FROM meta WHERE key = 'store.created_by'",
                [],
                |_| Ok(()),
            )
            .optional()?
            .is_some();
    state.pending_full = user_version == SCHEMA_VERSION
        && state.tables.contains("browser_trajectory_tokens_pending")
        && pending_full(&tx)?;
    tx.commit()?;
    Ok(state)
}

impl FileState {
    /// Whether the file is ours, empty, or another application's.
    fn judge(&self) -> rusqlite::Result<Ownership> {
        if self.application_id == APPLICATION_ID {
            return Ok(Ownership::Ours);
        }
        if self.application_id != 0 {
            return Ok(Ownership::Foreign(format!(
                "its application_id is {:#010x}, not agent-memory's {APPLICATION_ID:#010x}",
                self.application_id
            )));
        }
        if self.user_version == 0 {
            return Ok(if self.objects == 0 {
                Ownership::Empty
            } else {
                Ownership::Foreign(format!("it holds its own tables ({})", self.some_tables()))
            });
        }
        if self.user_version > SCHEMA_VERSION {
            return Ok(Ownership::Foreign(format!(
                "it has user_version {} and no agent-memory application_id",
                self.user_version
            )));
        }
        // Before the id existed, a file of ours at version N held every table the first N
        // migrations create.
        let expected = schema::tables_at(self.user_version)?;
        let missing: Vec<&str> = expected
            .iter()
            .filter(|t| !self.tables.contains(*t))
            .map(String::as_str)
            .collect();
        Ok(if missing.is_empty() {
            Ownership::Ours
        } else {
            Ownership::Foreign(format!(
                "it has user_version {} but not the agent-memory tables of that version ({} missing)",
                self.user_version,
                missing.join(", ")
            ))
        })
    }

    /// Whether opening for writing has anything to write.
    pub(crate) fn needs_write(&self) -> bool {
        self.user_version < SCHEMA_VERSION
            || self.application_id != APPLICATION_ID
            || !self.creator_recorded
            || self.pending_full
    }

    /// Up to five table names, for an error message.
    fn some_tables(&self) -> String {
        let names: Vec<&str> = self.tables.iter().take(5).map(String::as_str).collect();
        let more = self.tables.len().saturating_sub(names.len());
        match (names.is_empty(), more) {
            (true, _) => "no tables, but other schema objects".to_owned(),
            (false, 0) => names.join(", "),
            (false, more) => format!("{} and {more} more", names.join(", ")),
        }
    }
}

/// Whether the pending list of the token index holds [`PENDING_POSTINGS`] postings or more.
fn pending_full(conn: &Connection) -> rusqlite::Result<bool> {
    let pending: i64 = conn.query_row(PENDING_COUNT, [], |r| r.get(0))?;
    Ok(pending >= PENDING_POSTINGS)
}

/// The bookkeeping an open for writing does after the migrations, in one immediate
/// transaction: the application id on a file from before it existed, the creator entry, and
/// a merge of postings a migration left pending.
pub(crate) fn settle(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    schema::mark_ours(&tx)?;
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('store.created_by', ?1) ON CONFLICT (key) DO NOTHING",
        [concat!("store-sqlite ", env!("CARGO_PKG_VERSION"))],
    )?;
    // A migration may leave far more than a step pending: opening merges them all, once.
    if pending_full(&tx)? {
        crate::token_index::merge_pending(&tx, None)?;
    }
    tx.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqliteStore;

    /// A file of ours at every earlier version, written before the id existed, opens, is
    /// migrated, and gets the id.
    #[test]
    fn every_earlier_version_of_ours_opens_and_gets_the_id() {
        for version in 1..=SCHEMA_VERSION {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("memory.db");
            {
                let mut conn = Connection::open(&path).expect("open");
                schema::migrate_to(&mut conn, version)
                    .map_err(|(m, e)| format!("{}: {e}", m.name))
                    .expect("migrate");
                conn.pragma_update(None, "application_id", 0)
                    .expect("clear the id");
                let state = read_state(&mut conn).expect("state");
                assert_eq!(state.ownership, Ownership::Ours, "version {version}");
            }
            let store = SqliteStore::open(&path)
                .unwrap_or_else(|e| panic!("version {version} does not open: {e}"));
            assert_eq!(store.schema_version().expect("version"), SCHEMA_VERSION);
            drop(store);
            let mut conn = Connection::open(&path).expect("reopen");
            let state = read_state(&mut conn).expect("state");
            assert_eq!(state.application_id, APPLICATION_ID, "version {version}");
            assert!(!state.needs_write(), "version {version}: {state:?}");
        }
    }

    #[test]
    fn a_current_file_of_ours_needs_no_write() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("memory.db");
        drop(SqliteStore::open(&path).expect("create"));
        let mut conn = Connection::open(&path).expect("reopen");
        let state = read_state(&mut conn).expect("state");
        assert_eq!(state.ownership, Ownership::Ours);
        assert!(!state.needs_write(), "{state:?}");
        conn.pragma_update(None, "application_id", 0)
            .expect("clear");
        assert!(read_state(&mut conn).expect("state").needs_write());
    }
}
