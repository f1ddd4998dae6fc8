//! [`Error`]: everything that can go wrong in `turn-memory`, each naming its input.

use std::path::PathBuf;

/// What went wrong. Messages are lowercase and name the offending input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A capture configuration broke one or more rules; every problem is listed.
    #[error("invalid capture configuration: {}", problems.join("; "))]
    InvalidConfig {
        /// Each broken rule, in the order the fields are declared.
        problems: Vec<String>,
    },
    /// A session id cannot name a log file (it holds a path separator or starts with a dot).
    #[error("session id {session:?} cannot name a log file: {reason}")]
    InvalidSessionFile {
        /// The session id.
        session: String,
        /// Which rule it broke.
        reason: &'static str,
    },
    /// A line of a JSONL log, other than a torn last line, could not be read.
    #[error("corrupt session log {}: line {line}: {reason}", path.display())]
    CorruptLine {
        /// The log file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What was wrong with it.
        reason: String,
    },
    /// An event read from a store could not be decoded.
    #[error("corrupt session event {index} of session {session:?}: {reason}")]
    CorruptEvent {
        /// The session.
        session: String,
        /// The 0-based position of the event in the session's log.
        index: usize,
        /// What was wrong with it.
        reason: String,
    },
    /// Events that do not form a session: no `session_started` first, a second one, or a
    /// compaction of more entries than the history holds.
    #[error("session {session:?} is inconsistent at event {index}: {reason}")]
    Inconsistent {
        /// The session.
        session: String,
        /// The 0-based position of the offending event.
        index: usize,
        /// What was wrong.
        reason: String,
    },
    /// Events that do not begin with `session_started`, read where the session they belong
    /// to is not known (the caller names the log, e.g. its file).
    #[error("{reason}")]
    Unstarted {
        /// What the log holds instead.
        reason: String,
    },
    /// A foreign session log (Keen Code's) that cannot be converted.
    #[error("cannot import session log {}: {reason}", path.display())]
    Import {
        /// The log file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A compaction request that cannot be carried out.
    #[error("cannot compact session {session:?}: {reason}")]
    Compaction {
        /// The session.
        session: String,
        /// Why.
        reason: String,
    },
    /// Reading or writing a log file failed.
    #[error("cannot {operation} session log {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. `"append to"`.
        operation: &'static str,
        /// The log file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Encoding an event as JSON failed.
    #[error("cannot encode {kind} event: {source}")]
    Encode {
        /// The event's kind.
        kind: &'static str,
        /// serde_json's error.
        source: serde_json::Error,
    },
    /// The log cannot do what was asked of it.
    #[error("unsupported: {what}")]
    Unsupported {
        /// What was asked.
        what: &'static str,
    },
    /// A persistent memory's text looks like it holds a secret; the text itself is never
    /// kept in the error, only the kind of secret.
    #[error(
        "refusing to write {scope} memory: content appears to contain a secret, token, or credential ({kind})"
    )]
    SecretInMemory {
        /// Which memory.
        scope: crate::persistent::PersistentScope,
        /// What it seems to hold.
        kind: crate::persistent::SecretKind,
    },
    /// The session store failed.
    #[error(transparent)]
    Store(#[from] agent_memory_core::Error),
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
