//! The error of connecting to and migrating a PostgreSQL store, and the mapping of the
//! driver's errors into [`agent_memory_core::Error`] for calls through the store traits.

/// Why a PostgreSQL store could not be opened.
///
/// No variant carries the connection string's password: the target is named by host, port
/// and database only.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The connection string could not be read.
    #[error("invalid connection string: {reason}")]
    InvalidUrl {
        /// What was wrong with it.
        reason: String,
    },
    /// The schema name is not a plain lowercase identifier.
    #[error(
        "invalid schema name {schema:?}: use 1 to 63 characters of a-z, 0-9 and _, starting with a letter or _"
    )]
    InvalidSchema {
        /// The name given.
        schema: String,
    },
    /// The server could not be reached or refused the connection.
    #[error("cannot connect to PostgreSQL at {target}: {source}")]
    Connect {
        /// Host, port and database, without credentials.
        target: String,
        /// What the driver or the pool reported.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The schema was written by a newer build of this store.
    #[error(
        "schema {schema} at {target} has version {found}, newer than this build supports ({supported}); use a newer agent-memory"
    )]
    TooNew {
        /// Host, port and database.
        target: String,
        /// The schema.
        schema: String,
        /// The version found.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },
    /// A read-only open found no memory in the schema, or one that needs migrating first.
    #[error(
        "schema {schema} at {target} has version {found}, not {supported}; open it read-write once to create or migrate it"
    )]
    NeedsMigration {
        /// Host, port and database.
        target: String,
        /// The schema.
        schema: String,
        /// The version found (0: no memory there yet).
        found: u32,
        /// The version this build needs.
        supported: u32,
    },
    /// A migration failed; the schema is left at its previous version.
    #[error("migration {version} ({name}) of schema {schema} at {target} failed: {source}")]
    Migration {
        /// Host, port and database.
        target: String,
        /// The schema.
        schema: String,
        /// The migration's version.
        version: u32,
        /// The migration's name.
        name: &'static str,
        /// What the server reported.
        source: postgres::Error,
    },
}

impl From<Error> for agent_memory_core::Error {
    fn from(error: Error) -> Self {
        agent_memory_core::Error::backend("postgres", "open the database", error)
    }
}

/// A failure inside a store call: a domain error the call decided on, or the driver's.
#[derive(Debug)]
pub(crate) enum Fail {
    /// A domain error (a conflict, invalid input); never retried.
    Core(agent_memory_core::Error),
    /// What the driver reported; retried when [`retryable`] says so.
    Pg(postgres::Error),
}

impl From<postgres::Error> for Fail {
    fn from(error: postgres::Error) -> Self {
        Fail::Pg(error)
    }
}

impl From<agent_memory_core::Error> for Fail {
    fn from(error: agent_memory_core::Error) -> Self {
        Fail::Core(error)
    }
}

/// How a driver error may be handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// The server rolled the transaction back (a serialization failure, a deadlock): running
    /// it again is safe.
    RolledBack,
    /// The connection was lost (the server restarted, the network dropped): the transaction
    /// did not commit unless the loss happened during the commit itself.
    ConnectionLost,
    /// Anything else: reported as it is.
    No,
}

/// Classifies a driver error for the retry loop.
pub(crate) fn retryable(error: &postgres::Error) -> Retry {
    use postgres::error::SqlState;
    if let Some(code) = error.code() {
        if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED
        {
            return Retry::RolledBack;
        }
        if *code == SqlState::ADMIN_SHUTDOWN
            || *code == SqlState::CRASH_SHUTDOWN
            || *code == SqlState::CANNOT_CONNECT_NOW
        {
            return Retry::ConnectionLost;
        }
        return Retry::No;
    }
    if error.is_closed() || source_is_io(error) {
        Retry::ConnectionLost
    } else {
        Retry::No
    }
}

fn source_is_io(error: &postgres::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        if inner.is::<std::io::Error>() {
            return true;
        }
        source = inner.source();
    }
    false
}

/// Maps a driver error during `operation` into the trait error: a value PostgreSQL cannot
/// hold becomes [`agent_memory_core::Error::InvalidInput`], anything else a backend error.
pub(crate) fn to_core(operation: &str, error: postgres::Error) -> agent_memory_core::Error {
    use postgres::error::SqlState;
    if let Some(code) = error.code()
        && (*code == SqlState::PROGRAM_LIMIT_EXCEEDED
            || *code == SqlState::CHARACTER_NOT_IN_REPERTOIRE
            || *code == SqlState::UNTRANSLATABLE_CHARACTER)
    {
        // The server's message names the limit; its detail may quote the value, so only
        // the message is kept.
        let reason = error
            .as_db_error()
            .map(|db| db.message().to_owned())
            .unwrap_or_else(|| code.code().to_owned());
        return agent_memory_core::Error::invalid_input(operation, reason);
    }
    agent_memory_core::Error::backend("postgres", operation.to_owned(), Redacted::of(&error))
}

/// A driver error reduced to its code and message: PostgreSQL's `DETAIL` may quote a row's
/// values, which must not reach an error message.
#[derive(Debug)]
pub(crate) struct Redacted(String);

impl Redacted {
    pub(crate) fn of(error: &postgres::Error) -> Self {
        match error.as_db_error() {
            Some(db) => Redacted(format!(
                "{} {}: {}",
                db.severity(),
                db.code().code(),
                db.message()
            )),
            None => Redacted(error.to_string()),
        }
    }
}

impl std::fmt::Display for Redacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Redacted {}

/// Checks, before any write, that no text of `item` holds a NUL character, which PostgreSQL's
/// `text` cannot store (SQLite can: this is where the two stores differ). `values` are
/// `(field, value)` pairs.
pub(crate) fn check_texts<'a>(
    item: impl Fn() -> String,
    values: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> agent_memory_core::Result<()> {
    for (field, value) in values {
        if value.contains('\0') {
            return Err(agent_memory_core::Error::invalid_input(
                format!("{} {field}", item()),
                "contains a NUL character, which PostgreSQL text cannot hold",
            ));
        }
    }
    Ok(())
}
