//! [`History`]: a session's messages rebuilt from its events, and its UI view.
//!
//! The history changes only by applying events, so a history rebuilt from the log is the
//! history that wrote it.

use agent_memory_core::{SessionId, Timestamp};

use crate::activity::ToolHistory;
use crate::error::{Error, Result};
use crate::event::{AssistantTurn, Compaction, SessionEvent};
use crate::memory::TurnMemory;

/// One entry of a history.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A user message.
    User {
        /// The message, verbatim.
        text: String,
    },
    /// An assistant turn.
    Assistant {
        /// The turn's number in the session, from 1, counted over every turn ever recorded
        /// (compaction does not renumber).
        number: u64,
        /// The turn.
        turn: AssistantTurn,
    },
    /// The summary that replaced older entries.
    Compaction {
        /// The compaction's number in the session, from 1.
        number: u64,
        /// The compaction.
        compaction: Compaction,
    },
}

/// Who speaks in the UI view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UiRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
    /// The summary of compacted entries.
    Summary,
}

/// One message as the user sees it: the model's text verbatim and never any turn memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct UiMessage<'a> {
    /// Who speaks.
    pub role: UiRole,
    /// The text, exactly as recorded.
    pub text: &'a str,
    /// Whether the turn was interrupted.
    pub interrupted: bool,
}

/// A session's history.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    session: SessionId,
    started_at: Timestamp,
    entries: Vec<Entry>,
    turns: u64,
    compactions: u64,
    /// The tool-history setting now, and the one in force for the turn under way (fixed
    /// when its user message arrived).
    tool_history: ToolHistory,
    turn_tool_history: ToolHistory,
}

impl History {
    /// An empty history for `session`, and the `session_started` event that begins its log.
    pub fn start(session: SessionId, started_at: Timestamp) -> (Self, SessionEvent) {
        let event = SessionEvent::SessionStarted {
            session: session.as_str().to_owned(),
            started_at: started_at.as_millis(),
        };
        let history = History {
            session,
            started_at,
            entries: Vec::new(),
            turns: 0,
            compactions: 0,
            tool_history: ToolHistory::None,
            turn_tool_history: ToolHistory::None,
        };
        (history, event)
    }

    /// Rebuilds a history from its events, which must begin with `session_started`. A log
    /// that does not is [`Error::Unstarted`], naming no session: use
    /// [`replay_of`](Self::replay_of) when the caller knows whose log it is.
    pub fn replay(events: impl IntoIterator<Item = SessionEvent>) -> Result<Self> {
        Self::replay_named(None, events)
    }

    /// Rebuilds the history of `session` from its log: as [`replay`](Self::replay), and a log
    /// that does not begin with `session_started` is [`Error::Inconsistent`] naming `session`.
    /// (Whether its `session_started` names `session` too is the caller's rule to apply.)
    pub fn replay_of(
        session: &SessionId,
        events: impl IntoIterator<Item = SessionEvent>,
    ) -> Result<Self> {
        Self::replay_named(Some(session), events)
    }

    fn replay_named(
        named: Option<&SessionId>,
        events: impl IntoIterator<Item = SessionEvent>,
    ) -> Result<Self> {
        let unstarted = |reason: String| match named {
            Some(session) => Error::Inconsistent {
                session: session.as_str().to_owned(),
                index: 0,
                reason,
            },
            None => Error::Unstarted { reason },
        };
        let mut events = events.into_iter();
        let mut history = match events.next() {
            Some(SessionEvent::SessionStarted {
                session,
                started_at,
            }) => {
                let id = SessionId::new(session.as_str()).map_err(|e| Error::Inconsistent {
                    session: session.clone(),
                    index: 0,
                    reason: e.to_string(),
                })?;
                History::start(id, Timestamp::from_millis(started_at)).0
            }
            Some(other) => {
                return Err(unstarted(format!(
                    "log begins with {} instead of session_started",
                    other.kind()
                )));
            }
            None => return Err(unstarted("log holds no event".to_owned())),
        };
        // Most events add one entry: reserving once spares the copies of a growing vector.
        history.entries.reserve(events.size_hint().0);
        for (i, event) in events.enumerate() {
            history.check(&event, i + 1)?;
            history.apply_checked(event);
        }
        Ok(history)
    }

    /// Whether `event` can follow this history; `index` names it in the error.
    pub(crate) fn check(&self, event: &SessionEvent, index: usize) -> Result<()> {
        let reason = match event {
            SessionEvent::SessionStarted { .. } => "a second session_started".to_owned(),
            SessionEvent::CompactionApplied(c) if c.compacted_entries == 0 => {
                "a compaction of no entry".to_owned()
            }
            SessionEvent::CompactionApplied(c) if c.compacted_entries > self.entries.len() => {
                format!(
                    "a compaction of {} entries, but the history holds {}",
                    c.compacted_entries,
                    self.entries.len()
                )
            }
            _ => return Ok(()),
        };
        Err(Error::Inconsistent {
            session: self.session.as_str().to_owned(),
            index,
            reason,
        })
    }

    /// Applies an event that passed [`check`](Self::check).
    pub(crate) fn apply_checked(&mut self, event: SessionEvent) {
        match event {
            SessionEvent::SessionStarted { .. } => {}
            SessionEvent::UserMessage { text } => {
                self.turn_tool_history = self.tool_history;
                self.entries.push(Entry::User { text });
            }
            SessionEvent::ToolHistorySet { mode } => self.tool_history = mode,
            SessionEvent::AssistantTurn(mut turn) => {
                // A turn that started under `none` keeps no output, whatever its host sent.
                if self.turn_tool_history == ToolHistory::None {
                    for activity in &mut turn.tool_activity {
                        activity.retained_output = None;
                    }
                }
                self.turns += 1;
                self.entries.push(Entry::Assistant {
                    number: self.turns,
                    turn,
                });
            }
            SessionEvent::CompactionApplied(compaction) => {
                self.compactions += 1;
                self.entries.drain(..compaction.compacted_entries);
                self.entries.insert(
                    0,
                    Entry::Compaction {
                        number: self.compactions,
                        compaction,
                    },
                );
            }
        }
    }

    /// The session's id.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// When the session started.
    pub fn started_at(&self) -> Timestamp {
        self.started_at
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The session's tool-history setting now; a turn that starts now runs under it (pass it
    /// to [`CaptureRules::start_turn_with`](crate::CaptureRules::start_turn_with)).
    pub fn tool_history(&self) -> ToolHistory {
        self.tool_history
    }

    /// The tool-history setting the turn under way runs under (the one in force when its
    /// user message arrived).
    pub fn turn_tool_history(&self) -> ToolHistory {
        self.turn_tool_history
    }

    /// How many assistant turns the session has recorded, compacted ones included.
    pub fn turns(&self) -> u64 {
        self.turns
    }

    /// The messages as the user sees them: user and assistant text verbatim, summaries of
    /// compactions; never a turn memory, never a tool call.
    pub fn ui_view(&self) -> impl Iterator<Item = UiMessage<'_>> {
        self.entries.iter().map(|entry| match entry {
            Entry::User { text } => UiMessage {
                role: UiRole::User,
                text,
                interrupted: false,
            },
            Entry::Assistant { turn, .. } => UiMessage {
                role: UiRole::Assistant,
                text: &turn.text,
                interrupted: turn.interrupted,
            },
            Entry::Compaction { compaction, .. } => UiMessage {
                role: UiRole::Summary,
                text: &compaction.summary,
                interrupted: false,
            },
        })
    }

    /// The compaction that keeps the last `keep_recent_turns` turns (and the user messages
    /// after the turn before them) and replaces everything older by `summary` (trimmed; a
    /// blank summary is refused), with the cumulative memory of the replaced turns. The
    /// history is not changed: record the returned event.
    pub fn plan_compaction(
        &self,
        summary: impl Into<String>,
        keep_recent_turns: usize,
    ) -> Result<SessionEvent> {
        let summary = summary.into();
        let trimmed = summary.trim();
        if trimmed.is_empty() {
            return Err(Error::Compaction {
                session: self.session.as_str().to_owned(),
                reason: "the summary is blank".to_owned(),
            });
        }
        let summary = if trimmed.len() == summary.len() {
            summary
        } else {
            trimmed.to_owned()
        };
        let cut = self
            .entries
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, entry)| matches!(entry, Entry::Assistant { .. }))
            .nth(keep_recent_turns)
            .map(|(i, _)| i + 1)
            .ok_or_else(|| Error::Compaction {
                session: self.session.as_str().to_owned(),
                reason: format!(
                    "it holds no turn older than the last {keep_recent_turns} to compact"
                ),
            })?;
        let memory = TurnMemory::cumulative(self.entries[..cut].iter().filter_map(memory_of));
        Ok(SessionEvent::CompactionApplied(Compaction {
            summary,
            compacted_entries: cut,
            memory,
            last_user_message: None,
        }))
    }
}

/// The memory an entry carries, if any.
pub(crate) fn memory_of(entry: &Entry) -> Option<&TurnMemory> {
    match entry {
        Entry::User { .. } => None,
        Entry::Assistant { turn, .. } => turn.memory.as_ref(),
        Entry::Compaction { compaction, .. } => compaction.memory.as_ref(),
    }
}
