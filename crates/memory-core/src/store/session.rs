//! [`SessionStore`]: the append-only event log of agent sessions (a coding agent's
//! conversation, its turns and compactions), one ordered list of events per session.
//!
//! `memory-core` knows nothing about JSON: an event is a kind tag plus its payload as text,
//! which the feature crate that owns the event format (`turn-memory`) encodes and decodes.

use crate::error::{Error, Result};
use crate::names::SessionId;

/// One event of a session's log, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionEvent {
    /// What kind of event this is, e.g. `"assistant_turn"`. Non-empty, no control characters.
    pub kind: String,
    /// The event's content, usually JSON text. Stored and returned byte for byte.
    pub payload: String,
}

impl SessionEvent {
    /// An event of `kind` carrying `payload`.
    pub fn new(kind: impl Into<String>, payload: impl Into<String>) -> Self {
        SessionEvent {
            kind: kind.into(),
            payload: payload.into(),
        }
    }

    /// Checks the rules every store enforces before writing: a non-empty kind of at most
    /// 64 bytes without control characters.
    pub fn validate(&self) -> Result<()> {
        let reason = if self.kind.is_empty() {
            "must not be empty"
        } else if self.kind.len() > MAX_KIND_BYTES {
            "must be at most 64 bytes"
        } else if self.kind.chars().any(char::is_control) {
            "must not contain control characters"
        } else {
            return Ok(());
        };
        Err(Error::invalid_input(
            format!("session event kind {:?}", self.kind),
            reason,
        ))
    }
}

/// The longest event kind a store accepts, in bytes.
pub const MAX_KIND_BYTES: usize = 64;

/// What [`SessionStore::session_list`] reports about one session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionSummary {
    /// The session.
    pub id: SessionId,
    /// How many events its log holds.
    pub events: u64,
}

/// Append-only event logs, one per session.
pub trait SessionStore: Send + Sync {
    /// Appends `events` to the end of `session`'s log, in order, creating the session when it
    /// has none. All or nothing: when one event is invalid, nothing is written. Returns the
    /// number of events the log holds afterwards.
    fn session_append(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64>;

    /// Creates `session` with `events` as its log, all or nothing. When the session already
    /// has events, fails with [`Error::Conflict`] ([`session_already_exists`]) and writes
    /// nothing; the check and the write are one atomic step, so of several concurrent imports
    /// of one session exactly one stores it. An empty `events` is [`Error::InvalidInput`]: a
    /// session exists only with events. Returns the number of events stored.
    fn session_create(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64>;

    /// Every event of `session`, in the order they were appended.
    /// [`Error::NotFound`] when the session has no events.
    fn session_load(&self, session: &SessionId) -> Result<Vec<SessionEvent>>;

    /// Every session with at least one event, ordered by id (byte order).
    fn session_list(&self) -> Result<Vec<SessionSummary>>;

    /// Deletes `session`'s whole log in one atomic call; returns how many events it held
    /// (0 when there was no such session).
    fn session_forget(&self, session: &SessionId) -> Result<u64>;
}

/// The error every store returns when a session is missing, worded the same everywhere.
pub fn session_not_found(session: &SessionId) -> Error {
    Error::not_found("session", session.as_str())
}

/// The conflict every store returns from [`SessionStore::session_create`] when the session
/// already holds `held` events.
pub fn session_already_exists(session: &SessionId, held: u64) -> Error {
    Error::conflict(
        "session",
        session.as_str(),
        format!("already holds {held} event(s)"),
    )
}

/// Checks what [`SessionStore::session_create`] requires of its events before any write: at
/// least one, each valid.
pub fn validate_new_session(session: &SessionId, events: &[SessionEvent]) -> Result<()> {
    if events.is_empty() {
        return Err(Error::invalid_input(
            format!("events of new session {:?}", session.as_str()),
            "a session needs at least one event",
        ));
    }
    events.iter().try_for_each(SessionEvent::validate)
}
