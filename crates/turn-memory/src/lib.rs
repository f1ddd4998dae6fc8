//! A coding agent's memory of each turn: which files it changed and which commands failed,
//! captured from tool events (never from model text), kept in the session history, sent to
//! the model for the last turns, and preserved through resume and compaction.
//!
//! - [`capture`]: [`CaptureRules`] and the per-turn accumulator [`TurnCapture`], which builds
//!   the turn's memory and its [`ToolActivity`] (every call with its place in the text);
//! - [`History`]: the session's messages rebuilt from [`SessionEvent`]s, with a UI view that
//!   never shows memory and a model view ([`History::model_view`]) that does, as a text block,
//!   as replayed calls, or as Keen Code replays them, each call at its place
//!   ([`MemoryStyle`]);
//! - [`render`]: OpenAI Chat Completions, OpenAI Responses, Genkit, Anthropic Messages and
//!   Gemini payloads;
//! - [`log`]: the append-only event log as JSONL files or in any
//!   [`SessionStore`](agent_memory_core::SessionStore), and [`Session`], which keeps a history and
//!   its log in step; [`keen`] reads Keen Code's session logs;
//! - compaction ([`Session::compact`]) that keeps the compacted turns' memories, and the cheap
//!   tiers ([`ContextPolicy`], [`History::fit_context`]) that come before it;
//! - Keen Code's current additions: the session's tool-history setting ([`ToolHistory`],
//!   `full` keeps each tool's output, bounded, as the activity's `retained_output`),
//!   [`compaction`] (automatic compaction as a policy the host asks after each tool turn,
//!   applied in one atomic step), [`compress`] (tool outputs shortened for the model) and
//!   [`ModelView::breakdown`] (tokens per part of the view);
//! - [`persistent`]: Keen Code's persistent memory (a global and a project `MEMORY.md`),
//!   its caps and secret refusal, and its section at the end of the system prompt
//!   ([`ContextPolicy::with_persistent_memory`]).
//!
//! ```
//! use agent_memory_core::{InMemoryStore, ManualClock, SessionId, Timestamp};
//! use serde_json::json;
//! use agent_memory_turns::{
//!     AssistantTurn, CaptureRules, ContextPolicy, Session, StoreLog, ToolEnd, render,
//! };
//!
//! let rules = CaptureRules::for_workspace("/work/app")?;
//! let mut turn = rules.start_turn();
//! let write = json!({ "path": "/work/app/src/lib.rs", "content": "…" });
//! let test = json!({ "command": "cargo test" });
//! turn.observe(&ToolEnd { tool: "write_file", input: &write, output: "ok", is_error: false, exit_code: None });
//! turn.observe(&ToolEnd { tool: "bash", input: &test, output: "2 failed", is_error: false, exit_code: Some(101) });
//!
//! let store = InMemoryStore::new();
//! let clock = ManualClock::new(Timestamp::from_millis(1_767_225_600_000));
//! let id = SessionId::new("s1")?;
//! let mut session = Session::start(StoreLog::new(&store, id.clone()), id, &clock)?;
//! session.user_message("make the tests pass")?;
//! session.assistant_turn(AssistantTurn::new("Two tests still fail.").with_memory(turn.finish()))?;
//!
//! let view = session.history().model_view(&ContextPolicy::default());
//! let messages = render::openai_chat(&view);
//! assert_eq!(
//!     serde_json::to_value(&messages[1])?,
//!     json!({
//!         "role": "assistant",
//!         "content": "Two tests still fail.\n\nTool memory:\n- Files changed: src/lib.rs\n- Failed bash: cargo test (exit 101)"
//!     })
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

mod activity;
pub mod capture;
pub mod compaction;
pub mod compress;
mod error;
mod event;
mod history;
pub mod keen;
pub mod log;
mod memory;
pub mod persistent;
pub mod render;
mod view;

pub use activity::{
    ActivityStatus, DEFAULT_MAX_INPUT_FIELD_BYTES, DEFAULT_MAX_RETAINED_OUTPUT_BYTES, ToolActivity,
    ToolHistory,
};
pub use capture::{CaptureConfig, CaptureRules, ToolEnd, TurnCapture};
pub use compaction::{
    AutoCompaction, AutoCompactionEvent, BytesOverThree, CompactionAction, CompactionAdvice,
    CompactionPlan, CompactionReason, ContextBudget, REMOVED_TOOL_RESULT, Reduction,
    SUMMARY_INSTRUCTIONS, SUMMARY_SECTIONS,
};
pub use error::{Error, Result};
pub use event::{AssistantTurn, Compaction, SessionEvent, ToolCallRecord};
pub use history::{Entry, History, UiMessage, UiRole};
pub use log::{EventLog, JsonlLog, Loaded, Session, StoreLog, Warning};
pub use memory::{DangerousCommand, FailedCommand, TurnMemory};
pub use view::{
    CharsOverFour, CheapTiers, ContextBreakdown, ContextFit, ContextPolicy,
    DEFAULT_MAX_FILES_LISTED, FlaggedOutput, HIDDEN_OUTPUT, INTERRUPTED_MARKER, MemoryStyle,
    ModelItem, ModelView, SUMMARY_PREFIX, SizeEstimator, Truncation, automatic_summary,
    memory_block, truncate, write_memory_block,
};
