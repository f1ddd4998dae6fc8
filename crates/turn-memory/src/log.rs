//! Where a session's events are kept: [`JsonlLog`] (one JSON line per event, one file per
//! session) and [`StoreLog`] (any [`SessionStore`], e.g. SQLite), both behind [`EventLog`];
//! and [`Session`], which writes each event to its log before applying it to its history.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use agent_memory_core::{Clock, Provenance, SessionId, SessionStore};

use crate::activity::ToolHistory;
use crate::error::{Error, Result};
use crate::event::{AssistantTurn, SessionEvent};
use crate::history::History;

/// Something a caller should know about a log that loaded anyway.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// The last line had no newline and did not decode: a write cut short by a crash. It was
    /// skipped and removed from the file, so the next append starts on a fresh line.
    TornLastLine {
        /// The log file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// How many bytes were removed.
        bytes: usize,
    },
    /// A line of a foreign log (a Keen Code session log) that does not decode was skipped,
    /// as the log's own reader skips it.
    SkippedLine {
        /// The log file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// Why it was skipped.
        reason: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::TornLastLine { path, line, bytes } => write!(
                f,
                "skipped torn last line {line} of session log {} ({bytes} bytes)",
                path.display()
            ),
            Warning::SkippedLine { path, line, reason } => write!(
                f,
                "skipped line {line} of session log {}: {reason}",
                path.display()
            ),
        }
    }
}

/// The events of a log, with what was noticed while reading them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Loaded {
    /// Every event, in order.
    pub events: Vec<SessionEvent>,
    /// What was skipped or repaired.
    pub warnings: Vec<Warning>,
    /// Who appended each event, in the order of `events`, as a store keeps it; empty for a
    /// log that keeps no writers (a JSON-lines file).
    pub writers: Vec<Option<Provenance>>,
}

/// An append-only log of one session's events.
pub trait EventLog {
    /// Appends one event; when this returns `Ok`, the event is in the log.
    fn append(&mut self, event: &SessionEvent) -> Result<()>;

    /// Every event in the log, in order.
    fn load(&mut self) -> Result<Loaded>;

    /// Appends `events` in one atomic step: after a crash the log holds all of them or none.
    /// The default accepts one event at a time; logs that can do more override it.
    fn append_all(&mut self, events: &[SessionEvent]) -> Result<()> {
        match events {
            [] => Ok(()),
            [event] => self.append(event),
            _ => Err(Error::Unsupported {
                what: "appending several events in one atomic step to this log",
            }),
        }
    }

    /// The session the log belongs to, when the log knows it before reading its first event;
    /// errors about a log that does not begin with `session_started` name it.
    fn session(&self) -> Option<&SessionId> {
        None
    }
}

/// A session's log as a JSONL file, `<dir>/<session>.jsonl`: one event per line, each
/// appended with a single write and flushed.
#[derive(Debug)]
pub struct JsonlLog {
    path: PathBuf,
    session: Option<SessionId>,
    file: Option<File>,
    sync: bool,
    line: Vec<u8>,
}

impl JsonlLog {
    /// The log of `session` in `dir`. Nothing is opened until the first append or load.
    pub fn new(dir: impl AsRef<Path>, session: &SessionId) -> Result<Self> {
        let id = session.as_str();
        let reason = if id.contains(['/', '\\']) {
            Some("it holds a path separator")
        } else if id.starts_with('.') {
            Some("it starts with a dot")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(Error::InvalidSessionFile {
                session: id.to_owned(),
                reason,
            });
        }
        let mut log = JsonlLog::at(dir.as_ref().join(format!("{id}.jsonl")));
        log.session = Some(session.clone());
        Ok(log)
    }

    /// The log in the file at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        JsonlLog {
            path: path.into(),
            session: None,
            file: None,
            sync: false,
            line: Vec::new(),
        }
    }

    /// Also asks the operating system to write each event to disk (`fsync`) before
    /// `append` returns: survives power loss, at the cost of a disk flush per event.
    pub fn with_sync(mut self, sync: bool) -> Self {
        self.sync = sync;
        self
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, operation: &'static str) -> impl Fn(std::io::Error) -> Error + '_ {
        move |source| Error::Io {
            operation,
            path: self.path.clone(),
            source,
        }
    }

    fn file(&mut self) -> Result<&mut File> {
        if self.file.is_none() {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .read(true)
                .open(&self.path)
                .map_err(self.io("open"))?;
            self.file = Some(file);
        }
        // Just set when it was missing.
        self.file.as_mut().ok_or_else(|| Error::Io {
            operation: "open",
            path: self.path.clone(),
            source: std::io::Error::other("log file not open"),
        })
    }
}

impl EventLog for JsonlLog {
    fn session(&self) -> Option<&SessionId> {
        self.session.as_ref()
    }

    fn append(&mut self, event: &SessionEvent) -> Result<()> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        serde_json::to_writer(&mut line, event).map_err(|source| Error::Encode {
            kind: event.kind(),
            source,
        })?;
        line.push(b'\n');
        let sync = self.sync;
        let file = self.file()?;
        // One write of the whole line: a crash leaves at most one torn line, the last.
        let written = file
            .write_all(&line)
            .and_then(|()| file.flush())
            .and_then(|()| if sync { file.sync_data() } else { Ok(()) });
        self.line = line;
        written.map_err(self.io("append to"))
    }

    fn load(&mut self) -> Result<Loaded> {
        self.scan(true)
    }

    /// Writes the log and the new lines to a temporary file beside it, then renames it over
    /// the log: a crash leaves the old log or the new one, never half of the batch.
    fn append_all(&mut self, events: &[SessionEvent]) -> Result<()> {
        let mut lines = Vec::new();
        for event in events {
            serde_json::to_writer(&mut lines, event).map_err(|source| Error::Encode {
                kind: event.kind(),
                source,
            })?;
            lines.push(b'\n');
        }
        let mut bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(self.io("read")(e)),
        };
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(&lines);
        let mut temporary = self.path.clone().into_os_string();
        temporary.push(".compacting");
        let temporary = PathBuf::from(temporary);
        let written = File::create(&temporary)
            .and_then(|mut file| {
                file.write_all(&bytes)?;
                file.sync_data()
            })
            .and_then(|()| std::fs::rename(&temporary, &self.path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(self.io("append to")(e));
        }
        // The open handle points at the replaced file.
        self.file = None;
        Ok(())
    }
}

impl JsonlLog {
    /// Every event of the log file at `path`, read without changing the file: a torn last
    /// line is skipped with its warning but left in place (for viewers and importers;
    /// [`EventLog::load`], which a resume uses, removes it).
    pub fn read(path: impl Into<PathBuf>) -> Result<Loaded> {
        JsonlLog::at(path).scan(false)
    }

    /// Every event of `bytes`, the text of a log as a file holds it, read as
    /// [`JsonlLog::read`] reads the file (a torn last line skipped with its warning); `path`
    /// names it in warnings and errors. For a log whose text came from elsewhere (an upload,
    /// a file read under a server's rules).
    pub fn parse(bytes: &[u8], path: &Path) -> Result<Loaded> {
        Ok(scan_bytes(bytes, path)?.loaded)
    }

    /// Reads the file; with `repair`, removes a torn last line and restores a lost final
    /// newline, so the next append starts on a fresh line.
    fn scan(&mut self, repair: bool) -> Result<Loaded> {
        let mut bytes = Vec::new();
        match File::open(&self.path) {
            Ok(mut file) => {
                file.read_to_end(&mut bytes).map_err(self.io("read"))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(agent_memory_core::Error::not_found(
                    "session log",
                    self.path.display().to_string(),
                )
                .into());
            }
            Err(e) => return Err(self.io("open")(e)),
        }
        let scanned = scan_bytes(&bytes, &self.path)?;
        if repair {
            if scanned.unterminated {
                // A whole event that lost only its newline: restore it, so the next append
                // does not run on from it.
                self.file()?.write_all(b"\n").map_err(self.io("repair"))?;
            }
            if let Some(keep) = scanned.torn_at {
                self.truncate(keep)?;
            }
        }
        Ok(scanned.loaded)
    }
}

/// What reading a log's bytes found: its events and warnings, where a torn last line starts,
/// and whether the last whole event lost its newline.
struct Scanned {
    loaded: Loaded,
    torn_at: Option<usize>,
    unterminated: bool,
}

/// Reads the events of `bytes`, the text of the log at `path`, one a line.
fn scan_bytes(bytes: &[u8], path: &Path) -> Result<Scanned> {
    let mut events = Vec::new();
    let mut warnings = Vec::new();
    let mut torn_at = None;
    let mut unterminated = false;
    // A byte-order mark some editors put before the first line is not part of it.
    let mut start = if bytes.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let mut line_number = 0;
    while start < bytes.len() {
        line_number += 1;
        let (end, next, complete) = match memchr_newline(&bytes[start..]) {
            Some(at) => (start + at, start + at + 1, true),
            None => (bytes.len(), bytes.len(), false),
        };
        match SessionEvent::from_json(&bytes[start..end]) {
            Ok(event) => {
                events.push(event);
                unterminated = !complete;
            }
            Err(_) if !complete && cut_short(&bytes[start..end]) => {
                torn_at = Some(start);
                warnings.push(Warning::TornLastLine {
                    path: path.to_owned(),
                    line: line_number,
                    bytes: end - start,
                });
            }
            Err(reason) => {
                return Err(Error::CorruptLine {
                    path: path.to_owned(),
                    line: line_number,
                    reason,
                });
            }
        }
        start = next;
    }
    Ok(Scanned {
        loaded: Loaded {
            events,
            warnings,
            writers: Vec::new(),
        },
        torn_at,
        unterminated,
    })
}

impl JsonlLog {
    /// Cuts the file back to `keep` bytes, dropping a torn last line.
    fn truncate(&mut self, keep: usize) -> Result<()> {
        self.file = None;
        let file = OpenOptions::new()
            .write(true)
            .open(&self.path)
            .map_err(self.io("repair"))?;
        file.set_len(keep as u64).map_err(self.io("repair"))?;
        file.sync_data().map_err(self.io("repair"))
    }
}

/// Whether a last line without its newline failed to decode because it ends early (a write
/// cut short), rather than because it is whole and wrong (too deeply nested, not an event).
fn cut_short(line: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(line).is_err_and(|e| e.is_eof())
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

/// A session's log in a [`SessionStore`] (the SQLite store, the in-memory store, …).
/// Each event is stored as its kind and its JSON line, exactly the line a [`JsonlLog`] holds,
/// with who appended it when a writer is set ([`with_writer`](Self::with_writer)).
/// The store is taken by value: pass `&store` to borrow it, or an `Arc` to share it.
#[derive(Debug)]
pub struct StoreLog<S> {
    store: S,
    session: SessionId,
    writer: Option<Provenance>,
}

impl<S: SessionStore> StoreLog<S> {
    /// The log of `session` in `store`.
    pub fn new(store: S, session: SessionId) -> Self {
        StoreLog {
            store,
            session,
            writer: None,
        }
    }

    /// The same log, whose appends record `writer` as who appended them (the store keeps
    /// its own time).
    #[must_use]
    pub fn with_writer(mut self, writer: Provenance) -> Self {
        self.writer = Some(writer);
        self
    }

    /// `event` as the store keeps it, with this log's writer.
    fn stored(&self, event: &SessionEvent) -> Result<agent_memory_core::SessionEvent> {
        let stored = event.to_stored()?;
        Ok(match &self.writer {
            Some(writer) => stored.with_writer(writer.clone()),
            None => stored,
        })
    }
}

impl<S: SessionStore> EventLog for StoreLog<S> {
    fn append(&mut self, event: &SessionEvent) -> Result<()> {
        self.store
            .session_append(&self.session, &[self.stored(event)?])?;
        Ok(())
    }

    /// One store append of every event: each store writes a batch in one transaction.
    fn append_all(&mut self, events: &[SessionEvent]) -> Result<()> {
        let stored = events
            .iter()
            .map(|event| self.stored(event))
            .collect::<Result<Vec<_>>>()?;
        self.store.session_append(&self.session, &stored)?;
        Ok(())
    }

    fn load(&mut self) -> Result<Loaded> {
        let stored = self.store.session_load(&self.session)?;
        let events = stored
            .iter()
            .enumerate()
            .map(|(index, event)| {
                let decoded =
                    SessionEvent::from_json(event.payload.as_bytes()).map_err(|reason| {
                        Error::CorruptEvent {
                            session: self.session.as_str().to_owned(),
                            index,
                            reason,
                        }
                    })?;
                if decoded.kind() != event.kind {
                    return Err(Error::CorruptEvent {
                        session: self.session.as_str().to_owned(),
                        index,
                        reason: format!("stored as {:?} but holds {}", event.kind, decoded.kind()),
                    });
                }
                Ok(decoded)
            })
            .collect::<Result<_>>()?;
        Ok(Loaded {
            events,
            warnings: Vec::new(),
            writers: stored.into_iter().map(|event| event.written_by).collect(),
        })
    }

    fn session(&self) -> Option<&SessionId> {
        Some(&self.session)
    }
}

/// A history and its log, kept in step: every change is written to the log first, then
/// applied, so the log always holds at least what the history shows.
#[derive(Debug)]
pub struct Session<L> {
    history: History,
    log: L,
    events: usize,
}

impl<L: EventLog> Session<L> {
    /// Starts a new session, writing its `session_started` event. A log that already holds
    /// events is refused ([`Error::Store`] with a conflict): resume it instead.
    pub fn start(mut log: L, session: SessionId, clock: &dyn Clock) -> Result<Self> {
        match log.load() {
            Ok(loaded) if !loaded.events.is_empty() => {
                return Err(agent_memory_core::Error::conflict(
                    "session",
                    session.as_str(),
                    format!(
                        "already has {} events; resume it instead",
                        loaded.events.len()
                    ),
                )
                .into());
            }
            Ok(_) => {}
            Err(Error::Store(e)) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
        let (history, started) = History::start(session, clock.now());
        log.append(&started)?;
        Ok(Session {
            history,
            log,
            events: 1,
        })
    }

    /// Rebuilds a session from its log, with the log's warnings.
    pub fn resume(mut log: L) -> Result<(Self, Vec<Warning>)> {
        let Loaded {
            events, warnings, ..
        } = log.load()?;
        let count = events.len();
        let history = match log.session() {
            Some(session) => History::replay_of(session, events)?,
            None => History::replay(events)?,
        };
        let session = Session {
            history,
            log,
            events: count,
        };
        Ok((session, warnings))
    }

    /// Writes `event` to the log and applies it. A rejected event is neither written nor
    /// applied.
    pub fn record(&mut self, event: SessionEvent) -> Result<()> {
        self.history.check(&event, self.events)?;
        self.log.append(&event)?;
        self.history.apply_checked(event);
        self.events += 1;
        Ok(())
    }

    /// Writes `events` to the log in one atomic step and applies them; when any is rejected
    /// or the write fails, nothing is written or applied.
    pub fn record_all(&mut self, events: Vec<SessionEvent>) -> Result<()> {
        let mut next = self.history.clone();
        for (i, event) in events.iter().enumerate() {
            next.check(event, self.events + i)?;
            next.apply_checked(event.clone());
        }
        self.log.append_all(&events)?;
        self.history = next;
        self.events += events.len();
        Ok(())
    }

    /// Records a user message.
    pub fn user_message(&mut self, text: impl Into<String>) -> Result<()> {
        self.record(SessionEvent::UserMessage { text: text.into() })
    }

    /// Records an assistant turn. A turn that started under [`ToolHistory::None`] is written
    /// without retained outputs.
    pub fn assistant_turn(&mut self, mut turn: AssistantTurn) -> Result<()> {
        if self.history.turn_tool_history() == ToolHistory::None {
            for activity in &mut turn.tool_activity {
                activity.retained_output = None;
            }
        }
        self.record(SessionEvent::AssistantTurn(turn))
    }

    /// Records the session's tool-history setting (Keen's `/tool-history full|none`); turns
    /// that start after it run under it.
    pub fn set_tool_history(&mut self, mode: ToolHistory) -> Result<()> {
        self.record(SessionEvent::ToolHistorySet { mode })
    }

    /// Compacts everything older than the last `keep_recent_turns` turns into `summary`,
    /// keeping their memories as one cumulative memory.
    pub fn compact(&mut self, summary: impl Into<String>, keep_recent_turns: usize) -> Result<()> {
        let event = self.history.plan_compaction(summary, keep_recent_turns)?;
        self.record(event)
    }

    /// The history.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The log.
    pub fn log(&self) -> &L {
        &self.log
    }

    /// The history and the log, apart.
    pub fn into_parts(self) -> (History, L) {
        (self.history, self.log)
    }
}
