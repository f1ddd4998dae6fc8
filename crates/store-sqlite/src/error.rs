//! The error of opening and migrating a SQLite store. Calls through the store traits report
//! [`agent_memory_core::Error`]; this type converts into it.

use std::path::PathBuf;

/// Why a SQLite store could not be opened or migrated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The path names a directory.
    #[error("{path} is a directory, not a database file")]
    IsADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// The file exists but is not a SQLite database (a text file, an encrypted file, a
    /// file whose header was overwritten).
    #[error("{path} is not a SQLite database")]
    NotADatabase {
        /// The path given.
        path: PathBuf,
    },
    /// SQLite found the file damaged.
    #[error("database {path} is corrupt: {detail}")]
    Corrupt {
        /// The path given.
        path: PathBuf,
        /// What SQLite reported.
        detail: String,
    },
    /// The file is another application's SQLite database; it was not changed.
    #[error("{path} is not an agent-memory database: {reason}; it was left as it was")]
    NotOurs {
        /// The path given.
        path: PathBuf,
        /// How it was told apart.
        reason: String,
    },
    /// A write to a store that was opened read-only or whose file cannot be written.
    #[error("database {path} is read-only here")]
    ReadOnly {
        /// The path given.
        path: PathBuf,
    },
    /// The file was written by a newer build of this store.
    #[error(
        "database {path} has schema version {found}, newer than this build supports ({supported}); use a newer agent-memory"
    )]
    TooNew {
        /// The path given.
        path: PathBuf,
        /// The version found in the file.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },
    /// A read-only open found a database that needs migrating first.
    #[error(
        "database {path} has schema version {found}, older than this build ({supported}); open it read-write once to migrate it"
    )]
    NeedsMigration {
        /// The path given.
        path: PathBuf,
        /// The version found in the file.
        found: u32,
        /// The version this build needs.
        supported: u32,
    },
    /// A migration failed; the database is left at its previous version.
    #[error("migration {version} ({name}) of {path} failed: {source}")]
    Migration {
        /// The path given.
        path: PathBuf,
        /// The migration's version.
        version: u32,
        /// The migration's name.
        name: &'static str,
        /// What SQLite reported.
        source: rusqlite::Error,
    },
    /// A forget deleted its rows, but another connection reads a snapshot from before it, so
    /// their bytes stay in the file and its `-wal` until that reader ends; the next write or
    /// open after that erases them.
    #[error(
        "the forgotten rows are deleted, but their bytes stay in {path} and its -wal while another connection reads a snapshot from before the forget (waited {waited:?} for it to end); they are erased at the next write to or open of the database after it ends"
    )]
    ErasePending {
        /// The database file.
        path: PathBuf,
        /// How long the forget waited for the reader.
        waited: std::time::Duration,
    },
    /// Any other SQLite failure while opening.
    #[error("cannot open database {path}: {source}")]
    Open {
        /// The path given.
        path: PathBuf,
        /// What SQLite reported.
        source: rusqlite::Error,
    },
}

impl From<Error> for agent_memory_core::Error {
    fn from(error: Error) -> Self {
        agent_memory_core::Error::backend("sqlite", "open the database", error)
    }
}

/// Maps a SQLite failure during `operation` into the trait error, keeping corruption
/// recognisable as [`agent_memory_core::Error::Corrupt`].
pub(crate) fn to_core(operation: &str, error: rusqlite::Error) -> agent_memory_core::Error {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase, TooBig};
    match error.sqlite_error_code() {
        Some(TooBig) => agent_memory_core::Error::invalid_input(
            operation,
            format!(
                "a value is larger than the store's limit of {} bytes",
                crate::MAX_VALUE_BYTES
            ),
        ),
        Some(DatabaseCorrupt | NotADatabase) => {
            agent_memory_core::Error::corrupt("sqlite database", format!("{operation}: {error}"))
        }
        _ => agent_memory_core::Error::backend("sqlite", operation.to_owned(), error),
    }
}

/// Maps a SQLite failure while writing `item` (e.g. `tool log 3`) of a batch: a value over the
/// store's limit becomes [`agent_memory_core::Error::InvalidInput`] naming the item, anything
/// else is reported as [`to_core`] does for `operation`.
pub(crate) fn item_error(
    item: &str,
    operation: &str,
    error: rusqlite::Error,
) -> agent_memory_core::Error {
    match to_core(operation, error) {
        agent_memory_core::Error::InvalidInput { reason, .. } => {
            agent_memory_core::Error::invalid_input(item, reason)
        }
        other => other,
    }
}

/// Checks, before any write, that no value of `item` is over [`MAX_VALUE_BYTES`]: `values` are
/// `(field, value)` pairs. A row as a whole has the same limit, which the write itself
/// enforces (see [`item_error`]).
///
/// [`MAX_VALUE_BYTES`]: crate::MAX_VALUE_BYTES
pub(crate) fn check_sizes<'a>(
    item: impl Fn() -> String,
    values: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> agent_memory_core::Result<()> {
    let limit = crate::MAX_VALUE_BYTES as usize;
    for (field, value) in values {
        if value.len() > limit {
            return Err(agent_memory_core::Error::invalid_input(
                format!("{} {field}", item()),
                format!(
                    "{} bytes, over the store's limit of {limit} bytes (32 MiB)",
                    value.len()
                ),
            ));
        }
    }
    Ok(())
}
