//! [`SessionStore`]: the append-only event log of agent sessions (a coding agent's
//! conversation, its turns and compactions), one ordered list of events per session.
//!
//! `memory-core` knows nothing about JSON: an event is a kind tag plus its payload as text,
//! which the feature crate that owns the event format (`turn-memory`) encodes and decodes.

use crate::error::{Error, Result};
use crate::names::SessionId;
use crate::provenance::Provenance;
use crate::store::Page;
use crate::time::Timestamp;

/// One event of a session's log, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionEvent {
    /// What kind of event this is, e.g. `"assistant_turn"`. Non-empty, no control characters.
    pub kind: String,
    /// The event's content, usually JSON text. Stored and returned byte for byte.
    pub payload: String,
    /// Who appended it: the source, the session or run, the client. A store keeps its own
    /// write time: the `at` given is not kept, and a loaded event's writer answers the time
    /// the store appended it. `None` for an event appended before writers were kept, or
    /// without one. Not part of the event's content: [`same_content`](Self::same_content)
    /// leaves it out.
    pub written_by: Option<Provenance>,
}

impl SessionEvent {
    /// An event of `kind` carrying `payload`.
    pub fn new(kind: impl Into<String>, payload: impl Into<String>) -> Self {
        SessionEvent {
            kind: kind.into(),
            payload: payload.into(),
            written_by: None,
        }
    }

    /// The same event, appended by `writer`.
    #[must_use]
    pub fn with_writer(mut self, writer: Provenance) -> Self {
        self.written_by = Some(writer);
        self
    }

    /// Whether `other` is the same event: the same kind and payload, whoever appended either.
    pub fn same_content(&self, other: &SessionEvent) -> bool {
        self.kind == other.kind && self.payload == other.payload
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

/// The kind of the event that opens a session's log (`turn-memory`'s `session_started`). A
/// log that holds one holds it once, as its first event; the stores' own checks report a log
/// that does not (two processes that both appended a session's start, say).
pub const SESSION_STARTED: &str = "session_started";

/// The longest event kind a store accepts, in bytes.
pub const MAX_KIND_BYTES: usize = 64;

/// What [`SessionStore::session_list`] reports about one session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionSummary {
    /// The session.
    pub id: SessionId,
    /// How many events its log holds.
    pub events: u64,
    /// The bytes of their kinds and payloads as stored.
    pub bytes: u64,
    /// When its last event was appended, by the store's clock; `None` when its events were
    /// written before the store began keeping the time.
    pub last_write: Option<Timestamp>,
}

/// Append-only event logs, one per session.
pub trait SessionStore: Send + Sync {
    /// Appends `events` to the end of `session`'s log, in order, creating the session when it
    /// has none. All or nothing: when one event is invalid, nothing is written. Returns the
    /// number of events the log holds afterwards.
    fn session_append(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64>;

    /// Appends `events` to `session`'s log only where the caller expects them: when the log
    /// holds exactly `expected_len` events (0 for a session that has none). The position
    /// check and the write are one atomic step, so of several concurrent appends at one
    /// position exactly one writes, whatever process or host it runs in. The others see:
    ///
    /// - the same `events` already stored at `expected_len` (a retry, or a concurrent twin of
    ///   the append that won): success, nothing written, [`SessionAppended::already_stored`]
    ///   set. "The same" is [`SessionEvent::same_content`]: a retry through another client
    ///   stores nothing, and the stored events keep the writer that appended them first;
    /// - anything else: [`Error::Conflict`] ([`session_moved`]) naming the session, the
    ///   expected and the actual length, and nothing written.
    ///
    /// Events are checked as [`session_append`](Self::session_append) checks them, before any
    /// write. An empty `events` writes nothing; it succeeds when `expected_len` is at most the
    /// log's length.
    fn session_append_at(
        &self,
        session: &SessionId,
        expected_len: u64,
        events: &[SessionEvent],
    ) -> Result<SessionAppended>;

    /// Creates `session` with `events` as its log, all or nothing. When the session already
    /// has events, fails with [`Error::Conflict`] ([`session_already_exists`]) and writes
    /// nothing; the check and the write are one atomic step, so of several concurrent imports
    /// of one session exactly one stores it. An empty `events` is [`Error::InvalidInput`]: a
    /// session exists only with events. Returns the number of events stored.
    fn session_create(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64>;

    /// Every event of `session`, in the order they were appended.
    /// [`Error::NotFound`] when the session has no events.
    fn session_load(&self, session: &SessionId) -> Result<Vec<SessionEvent>>;

    /// Up to `limit` events of `session` from position `from` (0: the first), in the order
    /// they were appended, with how many its log holds. [`Error::NotFound`] when the session
    /// has no events. The default slices [`session_load`](Self::session_load); a store on
    /// disk reads only the page.
    fn session_page(
        &self,
        session: &SessionId,
        from: u64,
        limit: usize,
    ) -> Result<Page<SessionEvent>> {
        Ok(Page::at(self.session_load(session)?, from, limit))
    }

    /// Every session with at least one event, ordered by id (byte order).
    fn session_list(&self) -> Result<Vec<SessionSummary>>;

    /// Deletes `session`'s whole log in one atomic call; returns how many events it held
    /// (0 when there was no such session). In the same transaction it appends the forget to
    /// the audit trail (memory `turns`, scope [`NO_SCOPE`](crate::evidence::NO_SCOPE), item
    /// the session, action `forget`, by `by`), whether or not there was one.
    fn session_forget(&self, session: &SessionId, by: &Provenance) -> Result<u64>;

    /// Deletes, whole, every session holding an event whose
    /// [`written_by`](SessionEvent::written_by) `writer` matches (an event kept without a
    /// writer never does), in one atomic step that also appends one forget per session to the
    /// audit trail (memory `turns`, scope [`NO_SCOPE`](crate::evidence::NO_SCOPE), item the
    /// session, detail `N events`, by `by`). A session's log is positional (its events are
    /// numbered, and an append names the length it expects), so a session never loses events
    /// from its middle: what the writer touched goes with the rest of its log. Answers each
    /// session with how many events it held, ordered by session. Fails on a filter naming
    /// nothing ([`Writer::check`](crate::evidence::Writer::check)).
    fn session_forget_by(
        &self,
        writer: &crate::evidence::Writer,
        by: &Provenance,
    ) -> Result<Vec<(SessionId, u64)>>;
}

/// Sessions a store read back by name, each with a count (what a forget by writer took),
/// checked as [`SessionId`]s: a name that is none is reported as a corrupt row of `table`,
/// alike in every store.
pub fn counted_sessions(
    rows: impl IntoIterator<Item = (String, u64)>,
    table: &str,
) -> Result<Vec<(SessionId, u64)>> {
    rows.into_iter()
        .map(|(name, n)| {
            let session = SessionId::new(name)
                .map_err(|e| crate::Error::corrupt(format!("{table} table"), e.to_string()))?;
            Ok((session, n))
        })
        .collect()
}

/// What [`SessionStore::session_append_at`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionAppended {
    /// How many events the log holds afterwards.
    pub events: u64,
    /// Whether the events were already stored at the expected position, so nothing was
    /// written.
    pub already_stored: bool,
}

/// What [`SessionStore::session_append_at`] answers when the log does not hold exactly
/// `expected_len` events: `held` is the log's length, `stored` the events it holds from
/// `expected_len` on (at most as many as were offered). Every store calls this inside its
/// atomic step, so they all answer alike.
pub fn append_at_outcome(
    session: &SessionId,
    expected_len: u64,
    held: u64,
    stored: &[SessionEvent],
    events: &[SessionEvent],
) -> Result<SessionAppended> {
    let same =
        stored.len() == events.len() && stored.iter().zip(events).all(|(s, e)| s.same_content(e));
    if expected_len <= held && same {
        return Ok(SessionAppended {
            events: held,
            already_stored: true,
        });
    }
    Err(session_moved(session, expected_len, held))
}

/// The conflict of [`SessionStore::session_append_at`]: the log of `session` holds `held`
/// events, not the `expected_len` the caller appended after (and not the offered events at
/// that position).
pub fn session_moved(session: &SessionId, expected_len: u64, held: u64) -> Error {
    Error::conflict(
        "session",
        session.as_str(),
        format!("expected {expected_len} event(s) before the appended ones, found {held}"),
    )
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
