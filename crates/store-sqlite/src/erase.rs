//! Erasing forgotten rows from the file, and finishing an erasure another connection held up.
//!
//! A forget deletes rows in one transaction; SQLite would still keep their bytes in free pages
//! and in the write-ahead log. `VACUUM` rebuilds the database from the live rows only (into the
//! log), and a truncating checkpoint then copies the rebuilt pages over the file, cuts it to
//! size and empties the log. That checkpoint cannot finish while another connection (another
//! process, a backup, a `sqlite3` shell) reads a snapshot older than the forget: its snapshot
//! still needs the old pages. So the store waits for it, up to
//! [`SqliteOptions::erase_wait`](crate::SqliteOptions::erase_wait), and then reports the
//! erasure pending ([`Error::ErasePending`]): the rows are gone, their bytes are not yet.
//! A checkpoint holds the write lock while it waits for readers, so the store waits in short
//! attempts with pauses between them: another connection's writer waits for one attempt at
//! most, never for the whole wait (which, at its default, is as long as a writer's busy
//! timeout).
//!
//! The meta entry `store.erase_pending` says what is left to do (`vacuum` or `checkpoint`),
//! committed before the work, so the next write of any connection, or the next open for
//! writing, finishes it without waiting once the reader has ended.

use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::{Error, SqliteStore, to_core};

/// The meta key of a pending erasure.
const PENDING: &str = "store.erase_pending";

/// What a pending erasure still has to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Rebuild the file from the live rows (a forget committed, no `VACUUM` since).
    Vacuum,
    /// Copy the rebuilt pages over the file and empty the log.
    Checkpoint,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Vacuum => "vacuum",
            Stage::Checkpoint => "checkpoint",
        }
    }
}

/// The pending erasure the database records, if any.
pub(crate) fn pending(conn: &Connection) -> rusqlite::Result<Option<Stage>> {
    let value: Option<String> = conn
        .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([PENDING], |r| r.get(0))
        .optional()?;
    Ok(value.map(|v| match v.as_str() {
        "checkpoint" => Stage::Checkpoint,
        // Anything else is read as the whole work still to do.
        _ => Stage::Vacuum,
    }))
}

/// Records `stage` (or, with `None`, that nothing is pending) in its own transaction.
fn record(conn: &mut Connection, stage: Option<Stage>) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    match stage {
        Some(stage) => tx.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [PENDING, stage.name()],
        )?,
        None => tx.execute("DELETE FROM meta WHERE key = ?1", [PENDING])?,
    };
    tx.commit()
}

/// Does what is left of the erasure `stage` says, waiting at most `wait` for readers of an
/// older snapshot. Returns whether the bytes are erased.
pub(crate) fn finish(
    conn: &mut Connection,
    stage: Stage,
    wait: Duration,
    busy_timeout: Duration,
) -> rusqlite::Result<bool> {
    if stage == Stage::Vacuum {
        conn.execute_batch("VACUUM")?;
        record(conn, Some(Stage::Checkpoint))?;
    }
    if !truncate_log(conn, wait, busy_timeout)? {
        return Ok(false);
    }
    // The log is empty and the file holds only the rebuilt pages; this last write holds no
    // forgotten text.
    record(conn, None)?;
    Ok(true)
}

/// How long one attempt at the truncating checkpoint waits, through the busy handler, for
/// the write lock and for readers of older snapshots. The attempt holds the write lock while
/// it waits for readers, so this bounds how long it keeps other connections' writers waiting.
const CHECKPOINT_ATTEMPT: Duration = Duration::from_millis(10);

/// The pause between two attempts, holding no lock: four times an attempt, so a waiting
/// writer's busy handler, which retries on its own schedule, finds the lock free.
const CHECKPOINT_PAUSE: Duration = Duration::from_millis(40);

/// Copies the log into the file and truncates it, trying for `wait` at most; returns whether
/// it did. The connection's busy timeout is `busy_timeout` again afterwards.
fn truncate_log(
    conn: &Connection,
    wait: Duration,
    busy_timeout: Duration,
) -> rusqlite::Result<bool> {
    // A wait too long to add to the clock is no deadline at all.
    let deadline = Instant::now().checked_add(wait);
    let left = || {
        deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(Instant::now())
        })
    };
    loop {
        conn.busy_timeout(CHECKPOINT_ATTEMPT.min(left()))?;
        // `busy = 1` when the write lock or a reader of an older snapshot outlasted the
        // attempt.
        let checkpoint = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        });
        conn.busy_timeout(busy_timeout)?;
        if checkpoint? == 0 {
            return Ok(true);
        }
        let left = left();
        if left.is_zero() {
            return Ok(false);
        }
        std::thread::sleep(CHECKPOINT_PAUSE.min(left));
    }
}

impl SqliteStore {
    /// Leaves no copy of deleted rows in the file, after a forget: see the module's
    /// documentation. Forgetting is rare and asked for explicitly, so it pays for the rewrite;
    /// no other write does. The error [`Error::ErasePending`] means the rows are deleted and
    /// their bytes will be erased at the next write or open after the reader that holds them
    /// ends.
    pub(crate) fn erase_freed_pages(&self) -> agent_memory_core::Result<()> {
        let op = "erase forgotten rows";
        let mut conn = self.lock();
        record(&mut conn, Some(Stage::Vacuum)).map_err(|e| to_core(op, e))?;
        let erased = finish(&mut conn, Stage::Vacuum, self.erase_wait, self.busy_timeout)
            .map_err(|e| to_core(op, e))?;
        if erased {
            return Ok(());
        }
        Err(agent_memory_core::Error::backend(
            "sqlite",
            op,
            Error::ErasePending {
                path: self.path.clone(),
                waited: self.erase_wait,
            },
        ))
    }
}
