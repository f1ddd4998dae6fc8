//! [`ToolLogStore`]: the log of every tool call an agent session made, each with an optional
//! snapshot of the agent's memory taken after the call. Recordings are generated from it.
//!
//! A snapshot entry marked sensitive carries its key and provenance but never its value:
//! [`SnapshotValue::Sensitive`] has no field to put a secret in, so no store can persist one.

use crate::error::{Error, Result};
use crate::names::SessionId;
use crate::provenance::Provenance;
use crate::store::Page;
use crate::time::Timestamp;

/// One tool call of a session, as logged after it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolLog {
    /// The session the call belongs to.
    pub session: SessionId,
    /// The tool's name, e.g. `inputText`.
    pub tool_name: String,
    /// The call's parameters as JSON text, as the tool received them.
    pub parameters: String,
    /// Whether the tool reported success.
    pub success: bool,
    /// The tool's error message when it failed.
    pub error: Option<String>,
    /// How long the call took, in milliseconds (at most `i64::MAX`).
    pub duration_ms: u64,
    /// When the call finished.
    pub timestamp: Timestamp,
    /// The trace the call belongs to; several log entries of one execution share it.
    pub trace_id: Option<String>,
    /// The agent's memory after the call; `None` in logs written before snapshots existed.
    pub memory_snapshot: Option<MemorySnapshot>,
    /// Who logged the call: the source (the tool by default), the session or run, the
    /// client. Its time is `timestamp`: a store keeps one time per log and answers
    /// `at == timestamp`. `None` for a log written before writers were kept, or without one.
    pub provenance: Option<Provenance>,
}

/// The agent's memory as it was right after one tool call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemorySnapshot {
    /// One entry per key, each key at most once.
    pub entries: Vec<SnapshotEntry>,
}

/// One key of a [`MemorySnapshot`] with its provenance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotEntry {
    /// The memory key.
    pub key: String,
    /// The value, or the mark that it is sensitive and was not kept.
    pub value: SnapshotValue,
    /// The name of the tool whose call last wrote the key, when known.
    pub written_by: Option<String>,
    /// When the key was last written, when known.
    pub written_at: Option<Timestamp>,
    /// Whether the key existed before the call (false: this call created it).
    pub existed_before: bool,
}

/// The value of a snapshot entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotValue {
    /// An ordinary value, kept as is.
    Plain(String),
    /// A sensitive value: only the fact that the key held a secret is kept.
    Sensitive,
}

impl SnapshotValue {
    /// The value when it is not sensitive.
    pub fn plain(&self) -> Option<&str> {
        match self {
            SnapshotValue::Plain(value) => Some(value),
            SnapshotValue::Sensitive => None,
        }
    }
}

impl ToolLog {
    /// The bytes of its tool name, parameters and error: what
    /// [`ToolLogSessionSummary::bytes`] adds up.
    pub fn stored_bytes(&self) -> u64 {
        (self.tool_name.len() + self.parameters.len() + self.error.as_ref().map_or(0, String::len))
            as u64
    }

    /// Checks what every store requires of a log: a tool name that is a valid name, a
    /// duration that fits a signed 64-bit integer, and each snapshot key at most once.
    pub fn validate(&self) -> Result<()> {
        if self.tool_name.is_empty() || self.tool_name.chars().any(char::is_control) {
            return Err(Error::invalid_input(
                "tool_name",
                format!(
                    "{:?} must be non-empty without control characters",
                    self.tool_name
                ),
            ));
        }
        if i64::try_from(self.duration_ms).is_err() {
            return Err(Error::invalid_input(
                "duration_ms",
                format!("{} exceeds i64::MAX", self.duration_ms),
            ));
        }
        if let Some(snapshot) = &self.memory_snapshot {
            let mut keys: Vec<&str> = snapshot.entries.iter().map(|e| e.key.as_str()).collect();
            keys.sort_unstable();
            if let Some(pair) = keys.windows(2).find(|pair| pair[0] == pair[1]) {
                return Err(Error::invalid_input(
                    "memory_snapshot",
                    format!("key {:?} appears more than once", pair[0]),
                ));
            }
        }
        Ok(())
    }
}

/// Append-only storage of tool logs, listed per session in the order they were appended.
pub trait ToolLogStore: Send + Sync {
    /// Validates (see [`ToolLog::validate`]) and appends `log`; on error nothing is stored.
    fn append_tool_log(&self, log: &ToolLog) -> Result<()>;

    /// Validates every log, then appends them all, in order, in one atomic write: on error
    /// (an invalid log, a value over the store's limits) nothing is stored.
    fn append_tool_logs(&self, logs: &[ToolLog]) -> Result<()>;

    /// Like [`append_tool_logs`](Self::append_tool_logs), but only into sessions that hold no
    /// logs yet: when one of the sessions already does, the call fails with
    /// [`Error::Conflict`] naming it ([`tool_logs_already_held`]) and nothing is stored. The
    /// check and the writes are one atomic step, so of several concurrent imports of the same
    /// logs exactly one stores them.
    fn import_tool_logs(&self, logs: &[ToolLog]) -> Result<()>;

    /// Every log of `session`, in the order they were appended.
    fn list_tool_logs(&self, session: &SessionId) -> Result<Vec<ToolLog>>;

    /// Up to `limit` logs of `session` from position `from` (0: the first), in the order
    /// they were appended, with how many the session holds (an empty page of 0 when none).
    /// The default slices [`list_tool_logs`](Self::list_tool_logs); a store on disk reads
    /// only the page.
    fn tool_log_page(&self, session: &SessionId, from: u64, limit: usize) -> Result<Page<ToolLog>> {
        Ok(Page::at(self.list_tool_logs(session)?, from, limit))
    }

    /// Every session that holds tool logs, by session id, with its number of logs.
    fn tool_log_sessions(&self) -> Result<Vec<ToolLogSessionSummary>>;

    /// Deletes every log of `session` in one atomic call; returns how many there were. In the
    /// same transaction it appends the forget to the audit trail (memory `recording`, scope
    /// [`NO_SCOPE`](crate::evidence::NO_SCOPE), item the session, action `forget`, by `by`).
    fn forget_tool_logs(&self, session: &SessionId, by: &Provenance) -> Result<u64>;

    /// Deletes every log whose [`provenance`](ToolLog::provenance) `writer` matches (a log
    /// kept without one never does), with its memory snapshot, in one atomic step that also
    /// appends one forget per session it took logs from to the audit trail (memory
    /// `recording`, scope [`NO_SCOPE`](crate::evidence::NO_SCOPE), item the session, detail
    /// `N tool logs`, by `by`). Answers each such session with how many of its logs went,
    /// ordered by session. Fails on a filter naming nothing ([`Writer::check`](crate::evidence::Writer::check)).
    fn forget_tool_logs_by(
        &self,
        writer: &crate::evidence::Writer,
        by: &Provenance,
    ) -> Result<Vec<(SessionId, u64)>>;
}

/// One session's tool logs, as [`ToolLogStore::tool_log_sessions`] lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolLogSessionSummary {
    /// The session.
    pub session: SessionId,
    /// How many tool logs it holds.
    pub logs: u64,
    /// The bytes of their tool names, parameters and errors as stored.
    pub bytes: u64,
    /// The newest log's timestamp (the log's own time).
    pub last_write: Option<Timestamp>,
}

/// The conflict [`ToolLogStore::import_tool_logs`] reports for a session that already holds
/// `held` logs. Shared by backends so every implementation words it the same way.
pub fn tool_logs_already_held(session: &SessionId, held: usize) -> Error {
    Error::conflict(
        "tool log session",
        session.as_str(),
        format!("already holds {held} tool log(s)"),
    )
}

/// Every log of `logs` checked with [`ToolLog::validate`]; the error names the log's position
/// in the batch (counting from 1).
pub fn validate_all(logs: &[ToolLog]) -> Result<()> {
    for (i, log) in logs.iter().enumerate() {
        log.validate().map_err(|e| match e {
            Error::InvalidInput { field, reason } => {
                Error::invalid_input(format!("tool log {} {field}", i + 1), reason)
            }
            other => other,
        })?;
    }
    Ok(())
}
