//! The session's events: what the log stores, one JSON object per event.
//!
//! ```text
//! {"type":"session_started","session":"s1","started_at":1767225600000}
//! {"type":"user_message","text":"fix the tests"}
//! {"type":"assistant_turn","text":"Fixed.","memory":{"files_changed":["src/a.rs"]},"tool_activity":[…]}
//! {"type":"compaction_applied","summary":"…","compacted_entries":12,"memory":{…}}
//! {"type":"tool_history","mode":"full"}
//! ```
//!
//! Readers ignore fields they do not know, so a log written by a newer version that adds a
//! field still resumes; an unknown event type is an error.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::activity::{ToolActivity, ToolHistory};
use crate::capture::ToolEnd;
use crate::error::{Error, Result};
use crate::memory::TurnMemory;

/// One event of a session's append-only log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionEvent {
    /// The first event of every session.
    SessionStarted {
        /// The session's id.
        session: String,
        /// When it started, in milliseconds since the Unix epoch.
        started_at: i64,
    },
    /// What the user said.
    UserMessage {
        /// The message, verbatim.
        text: String,
    },
    /// One finished (or interrupted) assistant turn.
    AssistantTurn(AssistantTurn),
    /// Older entries were replaced by a summary.
    CompactionApplied(Compaction),
    /// The session's tool-history setting changed (Keen's `/tool-history`); it applies to
    /// the turns that start after it.
    #[serde(rename = "tool_history")]
    ToolHistorySet {
        /// `"full"` or `"none"`.
        mode: ToolHistory,
    },
}

impl SessionEvent {
    /// The event's kind, as stored next to it (`"assistant_turn"`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            SessionEvent::SessionStarted { .. } => "session_started",
            SessionEvent::UserMessage { .. } => "user_message",
            SessionEvent::AssistantTurn(_) => "assistant_turn",
            SessionEvent::CompactionApplied(_) => "compaction_applied",
            SessionEvent::ToolHistorySet { .. } => "tool_history",
        }
    }

    /// The event as one line of JSON, without the newline.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|source| Error::Encode {
            kind: self.kind(),
            source,
        })
    }

    /// Decodes one line of JSON; the error is serde_json's message.
    pub fn from_json(json: &[u8]) -> Result<Self, String> {
        // Every line this crate writes starts with its tag. Decoding the variant's body
        // directly (the body ignores the `type` key) skips the buffering serde needs for an
        // internally tagged enum, and halves the cost of a resume.
        let fast = match tag_prefix(json) {
            Some(b"user_message") => serde_json::from_slice::<UserMessageBody>(json)
                .map(|b| SessionEvent::UserMessage { text: b.text }),
            Some(b"assistant_turn") => {
                serde_json::from_slice(json).map(SessionEvent::AssistantTurn)
            }
            Some(b"compaction_applied") => {
                serde_json::from_slice(json).map(SessionEvent::CompactionApplied)
            }
            _ => serde_json::from_slice(json),
        };
        fast.map_err(|e| e.to_string())
    }

    /// The event as the session store keeps it: its kind and its JSON line.
    pub fn to_stored(&self) -> Result<agent_memory_core::SessionEvent> {
        Ok(agent_memory_core::SessionEvent::new(
            self.kind(),
            self.to_json()?,
        ))
    }
}

/// The assistant's side of one turn.
///
/// ```
/// use agent_memory_turns::AssistantTurn;
///
/// let turn = AssistantTurn::new("Stopped halfway.").with_interrupted(true);
/// assert!(turn.interrupted && turn.memory.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct AssistantTurn {
    /// The model's final text, verbatim, whatever it contains.
    pub text: String,
    /// Tool calls the agent chose to keep in history (many agents keep none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRecord>,
    /// What the turn changed and what failed, captured from its tool events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<TurnMemory>,
    /// Every tool call of the turn with its place in the text, for positional replay.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_activity: Vec<ToolActivity>,
    /// Whether the user interrupted the turn; its memory is kept all the same.
    #[serde(default, skip_serializing_if = "is_false")]
    pub interrupted: bool,
}

impl AssistantTurn {
    /// A turn with this text and nothing else.
    pub fn new(text: impl Into<String>) -> Self {
        AssistantTurn {
            text: text.into(),
            ..AssistantTurn::default()
        }
    }

    /// With this memory.
    pub fn with_memory(mut self, memory: Option<TurnMemory>) -> Self {
        self.memory = memory;
        self
    }

    /// With these kept tool calls.
    pub fn with_tool_calls(mut self, calls: Vec<ToolCallRecord>) -> Self {
        self.tool_calls = calls;
        self
    }

    /// With this tool activity.
    pub fn with_activity(mut self, activity: Vec<ToolActivity>) -> Self {
        self.tool_activity = activity;
        self
    }

    /// Marked interrupted (or not).
    pub fn with_interrupted(mut self, interrupted: bool) -> Self {
        self.interrupted = interrupted;
        self
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// A tool call kept in history, with its output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct ToolCallRecord {
    /// The provider's call id.
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments the model passed.
    #[cfg_attr(
        feature = "schemars",
        schemars(with = "serde_json::Map<String, Value>")
    )]
    pub input: Value,
    /// What the tool returned.
    pub output: String,
    /// Whether the tool reported an error.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_error: bool,
    /// A shell command's exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

impl ToolCallRecord {
    /// A successful call `id` of `tool` with this input and output.
    pub fn new(
        id: impl Into<String>,
        tool: impl Into<String>,
        input: Value,
        output: impl Into<String>,
    ) -> Self {
        ToolCallRecord {
            id: id.into(),
            tool: tool.into(),
            input,
            output: output.into(),
            is_error: false,
            exit_code: None,
        }
    }

    /// With the tool's error flag.
    pub fn with_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }

    /// With a shell command's exit code.
    pub fn with_exit_code(mut self, exit_code: Option<i32>) -> Self {
        self.exit_code = exit_code;
        self
    }

    /// The call as a tool-end event for capture.
    pub fn as_tool_end(&self) -> ToolEnd<'_> {
        ToolEnd {
            tool: &self.tool,
            input: &self.input,
            output: &self.output,
            is_error: self.is_error,
            exit_code: self.exit_code,
        }
    }
}

/// A compaction: the first `compacted_entries` entries of the history were replaced by
/// `summary`, and their turn memories by one cumulative `memory`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Compaction {
    /// The summary the caller supplied (usually written by an LLM).
    pub summary: String,
    /// How many entries of the history, from its start, it replaced.
    pub compacted_entries: usize,
    /// The cumulative memory of every compacted turn (and of an earlier compaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<TurnMemory>,
    /// The latest user message, kept verbatim beside the summary (automatic compaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_user_message: Option<String>,
}

/// The tag of a line that begins `{"type":"<tag>",`.
fn tag_prefix(json: &[u8]) -> Option<&[u8]> {
    let rest = json.strip_prefix(br#"{"type":""#)?;
    let end = rest.iter().position(|b| *b == b'"')?;
    rest.get(end + 1).filter(|b| **b == b',')?;
    Some(&rest[..end])
}

#[derive(Deserialize)]
struct UserMessageBody {
    text: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_path_decodes_like_the_tagged_enum() {
        let lines: [&[u8]; 6] = [
            br#"{"type":"user_message","text":"a \"quoted\" line"}"#,
            br#"{"text":"tag last","type":"user_message"}"#,
            br#"{"type":"assistant_turn","text":"t","memory":{"files_changed":["a"]},"interrupted":true}"#,
            br#"{"type":"compaction_applied","summary":"s","compacted_entries":2}"#,
            br#"{"type":"session_started","session":"s","started_at":5}"#,
            br#"{"type":"user_message","text":"x","added_later":1}"#,
        ];
        for line in lines {
            let slow: Result<SessionEvent, String> =
                serde_json::from_slice(line).map_err(|e| e.to_string());
            assert_eq!(
                SessionEvent::from_json(line),
                slow,
                "{}",
                String::from_utf8_lossy(line)
            );
            assert!(slow.is_ok());
        }
        for bad in [
            &br#"{"type":"user_message","txt":"x"}"#[..],
            br#"{"type":"assistant_turn","text":1}"#,
        ] {
            assert!(SessionEvent::from_json(bad).is_err());
        }
    }
}
