//! Keen Code's session logs (`transcript_events.jsonl`), read as this crate's events.
//!
//! Keen writes one event per line, `{"seq":N,"kind":K,K:{…}}`, with the kinds
//! `session_started` (`session_id`, `created_at`, `cwd`), `user_message` (`content`),
//! `assistant_turn` (`message`, `turn_memory`, `interrupted`, …) and `compaction_applied`
//! (the `messages` that replace the conversation). Its turn memory comes in two shapes, both
//! read here:
//!
//! - up to 0.29 (0.2.3 among them): `{"files_changed":[…],"failed_bash":[{"command":…,
//!   "exit_code":…}]}`;
//! - from 0.30: `{"tool_activity":[{"text_offset":…,"tool":…,"input":{…},"status":…,
//!   "exit_code":…}]}` (0.32 to 0.35 write both); the current version adds each activity's
//!   `retained_output` (written under `/tool-history full`), kept here bounded.
//!
//! The conversion follows Keen's own reader: a line that does not decode is skipped (with a
//! [`Warning::SkippedLine`]), an assistant turn that said and did nothing is left out, an
//! activity with a negative offset is dropped (Keen's replay skips it without counting it),
//! and a compaction replaces everything before it. Two things differ, on purpose: the
//! compacted turns' memories are kept with the summary, and a turn whose memory is only
//! activity also gets the memory capture derives from it (files written, commands that
//! failed), so the text-block style shows it too.
//!
//! ```
//! use agent_memory_turns::{ContextPolicy, History, keen, render};
//!
//! let log = br#"{"seq":1,"kind":"session_started","session_started":{"session_id":"k1","created_at":"2026-07-30T09:00:00Z","cwd":"/work/app"}}
//! {"seq":2,"kind":"user_message","user_message":{"content":"Run the tests."}}
//! {"seq":3,"kind":"assistant_turn","assistant_turn":{"message":"Running them. One fails.","turn_memory":{"tool_activity":[{"text_offset":13,"tool":"bash","input":{"command":"go test ./..."},"status":"success","exit_code":1}]}}}
//! "#;
//! let loaded = keen::convert(log, "transcript_events.jsonl".as_ref())?;
//! let history = History::replay(loaded.events)?;
//! let view = history.model_view(&ContextPolicy::keen());
//! let messages = serde_json::to_value(render::openai_chat(&view))?;
//! assert_eq!(messages[1]["content"], "Running them.");
//! assert_eq!(messages[1]["tool_calls"][0]["id"], "historical_2_0");
//! assert_eq!(messages[2]["content"], r#"{"status":"success","exit_code":1}"#);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use agent_memory_core::{SessionId, Timestamp};

use crate::activity::{
    ActivityStatus, DEFAULT_MAX_RETAINED_OUTPUT_BYTES, ToolActivity, bound_retained,
};
use crate::capture::{CaptureConfig, CaptureRules, ToolEnd};
use crate::error::{Error, Result};
use crate::event::{AssistantTurn, Compaction, SessionEvent};
use crate::history::{History, memory_of};
use crate::log::{Loaded, Warning};
use crate::memory::{FailedCommand, TurnMemory};

/// Reads the Keen session log at `path` and converts it.
pub fn read(path: impl Into<PathBuf>) -> Result<Loaded> {
    let path = path.into();
    let bytes = std::fs::read(&path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => {
            agent_memory_core::Error::not_found("session log", path.display().to_string()).into()
        }
        _ => Error::Io {
            operation: "read",
            path: path.clone(),
            source,
        },
    })?;
    convert(&bytes, &path)
}

/// Converts the text of a Keen session log; `path` names it in warnings and errors, and its
/// folder names the session when the log has no `session_started` event (Keen's fallback).
pub fn convert(log: &[u8], path: &Path) -> Result<Loaded> {
    let mut warnings = Vec::new();
    let mut events: Vec<(usize, KeenEvent)> = Vec::new();
    for (index, line) in log.split(|b| *b == b'\n').enumerate() {
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        match decode(line) {
            Ok(event) => events.push((index + 1, event)),
            Err(reason) => warnings.push(Warning::SkippedLine {
                path: path.to_owned(),
                line: index + 1,
                reason,
            }),
        }
    }
    let start = events.iter().find_map(|(_, e)| e.session_started.as_ref());
    let (session, started_at, cwd) = match start {
        Some(start) => (
            start.session_id.clone(),
            start.created_at,
            start.cwd.clone(),
        ),
        None => fallback_start(path)?,
    };
    let session_id = SessionId::new(session.as_str()).map_err(|e| Error::Import {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    let mut import = Import::new(session_id, started_at, &cwd);
    for (_, event) in events {
        import.apply(event);
    }
    Ok(Loaded {
        events: import.events,
        warnings,
        writers: Vec::new(),
    })
}

/// The session's id and start when the log has none: its folder's name and the file's
/// modification time, as Keen lists such a session.
fn fallback_start(path: &Path) -> Result<(String, Timestamp, String)> {
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|name| name.to_str())
        .filter(|name| !name.is_empty())
        .ok_or_else(|| Error::Import {
            path: path.to_owned(),
            reason: "it has no session_started event and no folder to name the session".to_owned(),
        })?;
    let modified = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    Ok((
        folder.to_owned(),
        Timestamp::from_millis(modified),
        String::new(),
    ))
}

/// One line of a Keen log, decoded as Keen's Go structs decode it (unknown fields ignored).
#[derive(Debug, Deserialize)]
struct KeenEvent {
    #[serde(default)]
    kind: String,
    /// Read apart by [`decode`], which parses its time.
    #[serde(skip)]
    session_started: Option<KeenStart>,
    #[serde(default)]
    user_message: Option<KeenContent>,
    #[serde(default)]
    assistant_turn: Option<KeenTurn>,
    #[serde(default)]
    compaction_applied: Option<KeenCompaction>,
}

#[derive(Debug, Deserialize)]
struct KeenStartRaw {
    #[serde(default)]
    session_id: String,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    cwd: String,
}

#[derive(Debug)]
struct KeenStart {
    session_id: String,
    created_at: Timestamp,
    cwd: String,
}

#[derive(Debug, Deserialize)]
struct KeenContent {
    #[serde(default)]
    content: String,
}

#[derive(Debug, Deserialize)]
struct KeenTurn {
    #[serde(default)]
    message: String,
    #[serde(default)]
    turn_memory: Option<KeenMemory>,
    #[serde(default)]
    interrupted: bool,
}

#[derive(Debug, Default, Deserialize)]
struct KeenMemory {
    #[serde(default)]
    files_changed: Option<Vec<String>>,
    #[serde(default)]
    failed_bash: Option<Vec<KeenFailedBash>>,
    #[serde(default)]
    tool_activity: Option<Vec<KeenActivity>>,
}

#[derive(Debug, Deserialize)]
struct KeenFailedBash {
    #[serde(default)]
    command: String,
    #[serde(default)]
    exit_code: i32,
}

#[derive(Debug, Deserialize)]
struct KeenActivity {
    #[serde(default)]
    text_offset: i64,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    input: Option<Map<String, Value>>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    exit_code: Option<i32>,
    #[serde(default)]
    retained_output: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct KeenCompaction {
    #[serde(default)]
    messages: Option<Vec<KeenMessage>>,
}

/// A message of Keen's conversation. Keen writes its fields capitalized (`Role`, the Go
/// names); Go reads any case, so both spellings are read.
#[derive(Debug, Deserialize)]
struct KeenMessage {
    #[serde(default, alias = "Role")]
    role: String,
    #[serde(default, alias = "Content")]
    content: String,
    #[serde(default, alias = "TurnMemory", alias = "turnMemory")]
    turn_memory: Option<KeenMemory>,
}

/// Decodes one line; the error says why it was skipped.
fn decode(line: &[u8]) -> Result<KeenEvent, String> {
    let value: Value = serde_json::from_slice(line).map_err(|e| e.to_string())?;
    let mut start = None;
    if let Some(raw) = value.get("session_started").filter(|v| !v.is_null()) {
        let raw: KeenStartRaw =
            serde_json::from_value(raw.clone()).map_err(|e| format!("session_started: {e}"))?;
        let created_at = match raw.created_at.as_deref() {
            Some(text) => parse_rfc3339(text)
                .ok_or_else(|| format!("created_at {text:?} is not an RFC 3339 time"))?,
            None => Timestamp::from_millis(0),
        };
        start = Some(KeenStart {
            session_id: raw.session_id,
            created_at,
            cwd: raw.cwd,
        });
    }
    let mut object = value;
    if let Some(map) = object.as_object_mut() {
        map.remove("session_started");
    }
    let mut event: KeenEvent = serde_json::from_value(object).map_err(|e| e.to_string())?;
    event.session_started = start;
    Ok(event)
}

/// The conversion's state: the events so far and the history they build.
struct Import {
    events: Vec<SessionEvent>,
    history: History,
    rules: Option<CaptureRules>,
}

impl Import {
    fn new(session: SessionId, started_at: Timestamp, cwd: &str) -> Self {
        let (history, started) = History::start(session, started_at);
        // Memory derived from activity: the default tools, nothing recorded twice.
        let root = if cwd.starts_with('/') { cwd } else { "/" };
        let rules = CaptureRules::new(CaptureConfig::new(root).with_record_activity(false))
            .or_else(|_| CaptureRules::new(CaptureConfig::new("/").with_record_activity(false)))
            .ok();
        Import {
            events: vec![started],
            history,
            rules,
        }
    }

    /// Records `event`. The conversion only builds events the history accepts (a compaction
    /// covers the entries there are); the check keeps a mistake from producing a log that
    /// cannot be replayed.
    fn push(&mut self, event: SessionEvent) {
        if self.history.check(&event, self.events.len()).is_ok() {
            self.events.push(event.clone());
            self.history.apply_checked(event);
        }
    }

    fn apply(&mut self, event: KeenEvent) {
        match event.kind.as_str() {
            "user_message" => {
                if let Some(message) = event.user_message {
                    self.push(SessionEvent::UserMessage {
                        text: message.content,
                    });
                }
            }
            "assistant_turn" => {
                if let Some(turn) = event.assistant_turn {
                    let turn = self.turn(turn.message, turn.turn_memory, turn.interrupted);
                    if let Some(turn) = turn {
                        self.push(SessionEvent::AssistantTurn(turn));
                    }
                }
            }
            "compaction_applied" => {
                if let Some(compaction) = event.compaction_applied {
                    self.compaction(compaction.messages.unwrap_or_default());
                }
            }
            // `session_started` was read first; Keen's conversation ignores any other kind.
            _ => {}
        }
    }

    /// A Keen assistant turn as ours; `None` for one that said and did nothing, which Keen's
    /// conversation leaves out.
    fn turn(
        &self,
        text: String,
        memory: Option<KeenMemory>,
        interrupted: bool,
    ) -> Option<AssistantTurn> {
        let memory = memory.unwrap_or_default();
        let files = memory.files_changed.unwrap_or_default();
        let failed = memory.failed_bash.unwrap_or_default();
        let raw_activity = memory.tool_activity.unwrap_or_default();
        if text.is_empty() && files.is_empty() && failed.is_empty() && raw_activity.is_empty() {
            return None;
        }
        let activity: Vec<ToolActivity> = raw_activity
            .into_iter()
            .filter_map(|a| {
                Some(ToolActivity {
                    text_offset: usize::try_from(a.text_offset).ok()?,
                    tool: a.tool,
                    input: a.input.filter(|m| !m.is_empty()).map(Value::Object),
                    status: match a.status.as_deref() {
                        Some("success") => ActivityStatus::Success,
                        _ => ActivityStatus::Error,
                    },
                    exit_code: a.exit_code,
                    file_changed: None,
                    failed_command: None,
                    retained_output: a.retained_output.and_then(|output| {
                        bound_retained(output, DEFAULT_MAX_RETAINED_OUTPUT_BYTES)
                    }),
                })
            })
            .collect();
        let memory = if files.is_empty() && failed.is_empty() {
            self.derived_memory(&activity)
        } else {
            let memory = TurnMemory {
                files_changed: files,
                failed_commands: failed
                    .into_iter()
                    .map(|f| FailedCommand {
                        command: f.command,
                        exit_code: f.exit_code,
                    })
                    .collect(),
                dangerous_commands: Vec::new(),
            };
            (!memory.is_empty()).then_some(memory)
        };
        Some(
            AssistantTurn::new(text)
                .with_memory(memory)
                .with_activity(activity)
                .with_interrupted(interrupted),
        )
    }

    /// The memory capture keeps from a turn's activity.
    fn derived_memory(&self, activity: &[ToolActivity]) -> Option<TurnMemory> {
        let rules = self.rules.as_ref()?;
        let mut capture = rules.start_turn();
        let empty = Value::Object(Map::new());
        for a in activity {
            capture.observe(&ToolEnd {
                tool: &a.tool,
                input: a.input.as_ref().unwrap_or(&empty),
                output: "",
                is_error: a.status == ActivityStatus::Error,
                exit_code: a.exit_code,
            });
        }
        capture.finish()
    }

    /// Keen replaces the whole conversation by `messages` (a summary first); ours replaces
    /// the entries so far by the summary, keeping their memories, and records the other
    /// messages after it.
    fn compaction(&mut self, messages: Vec<KeenMessage>) {
        let mut messages: Vec<KeenMessage> = messages
            .into_iter()
            .filter(|m| m.role != "system")
            .collect();
        let compacted = self.history.entries().len();
        if compacted > 0 {
            let first = match messages.first() {
                Some(first) if first.role == "user" => messages.remove(0).content,
                _ => String::new(),
            };
            let (summary, last_user_message) = match automatic_parts(&first) {
                Some((summary, last)) => (summary.to_owned(), Some(last.to_owned())),
                None => (first, None),
            };
            let memory =
                TurnMemory::cumulative(self.history.entries().iter().filter_map(memory_of));
            self.push(SessionEvent::CompactionApplied(Compaction {
                summary,
                compacted_entries: compacted,
                memory,
                last_user_message,
            }));
        }
        for message in messages {
            match message.role.as_str() {
                "user" => self.push(SessionEvent::UserMessage {
                    text: message.content,
                }),
                "assistant" => {
                    if let Some(turn) = self.turn(message.content, message.turn_memory, false) {
                        self.push(SessionEvent::AssistantTurn(turn));
                    }
                }
                _ => {}
            }
        }
    }
}

/// The summary and the latest user message of an automatic compaction's message, which Keen
/// writes as `<compacted_context>\n{preamble}\n\n{summary}\n</compacted_context>\n\n
/// <last_user_message>\n{preamble}\n\n{message}\n</last_user_message>`; `None` for any other
/// message (a manual compaction's summary).
fn automatic_parts(message: &str) -> Option<(&str, &str)> {
    let rest = message.strip_prefix("<compacted_context>\n")?;
    let (context, rest) = rest.split_once("\n</compacted_context>\n\n<last_user_message>\n")?;
    let last = rest.strip_suffix("\n</last_user_message>")?;
    let (_, summary) = context.split_once("\n\n")?;
    let (_, last) = last.split_once("\n\n")?;
    Some((summary, last))
}

/// Milliseconds since the epoch of an RFC 3339 time (`2026-07-30T09:00:00.123456789Z`,
/// `…+02:00`), as Go writes `time.Time`.
fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(range)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let year = digits(0..4)?;
    let month = digits(5..7)?;
    let day = digits(8..10)?;
    let hour = digits(11..13)?;
    let minute = digits(14..16)?;
    let second = digits(17..19)?;
    if b.get(4) != Some(&b'-')
        || b.get(7) != Some(&b'-')
        || !matches!(b.get(10), Some(b'T' | b't'))
        || b.get(13) != Some(&b':')
        || b.get(16) != Some(&b':')
    {
        return None;
    }
    let mut at = 19;
    let mut millis = 0;
    if b.get(at) == Some(&b'.') {
        let start = at + 1;
        let mut end = start;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        if end == start {
            return None;
        }
        let fraction = &text[start..end.min(start + 3)];
        millis = format!("{fraction:0<3}").parse::<i64>().ok()?;
        at = end;
    }
    let offset_minutes = match b.get(at)? {
        b'Z' | b'z' if at + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if at + 6 == b.len() && b.get(at + 3) == Some(&b':') => {
            let minutes = digits(at + 1..at + 3)? * 60 + digits(at + 4..at + 6)?;
            if *sign == b'-' { -minutes } else { minutes }
        }
        _ => return None,
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let valid = (1..=12).contains(&month)
        && day >= 1
        && day <= month_days[usize::try_from(month - 1).ok()?]
        && hour < 24
        && minute < 60
        && second < 61;
    if !valid {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    Some(Timestamp::from_millis(seconds * 1_000 + millis))
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_read_as_go_writes_them() {
        for (text, millis) in [
            ("1970-01-01T00:00:00Z", Some(0)),
            ("2026-01-01T00:00:00Z", Some(1_767_225_600_000)),
            ("2026-01-01T00:00:00.5Z", Some(1_767_225_600_500)),
            ("2026-01-01T00:00:00.123456789Z", Some(1_767_225_600_123)),
            ("2026-01-01T02:00:00+02:00", Some(1_767_225_600_000)),
            ("2025-12-31T23:00:00-01:00", Some(1_767_225_600_000)),
            ("2024-02-29T00:00:00Z", Some(1_709_164_800_000)),
            ("1969-12-31T23:59:59Z", Some(-1_000)),
            ("2025-02-29T00:00:00Z", None),
            ("2026-01-01 00:00:00Z", None),
            ("2026-01-01T00:00:00", None),
            ("2026-01-01T00:00:00.Z", None),
            ("2026-13-01T00:00:00Z", None),
            ("2026-01-01T00:00:00Zjunk", None),
        ] {
            assert_eq!(
                parse_rfc3339(text).map(Timestamp::as_millis),
                millis,
                "{text}"
            );
        }
    }
}
