//! Automatic compaction as a policy, as Keen Code runs it inside its tool loop: the host
//! calls [`AutoCompaction::after_tool_turn`] after each tool turn, and the answer says
//! whether to go on, which old tool results the local reducer replaces, or what to summarise.
//! The host's model writes the summary; [`AutoCompaction::apply`] writes the checkpoint and
//! the compaction in one atomic step.
//!
//! The rules are Keen's:
//!
//! - the input budget is the context window minus `max(4096, 5% of the window)`, and
//!   compaction starts at 90% of it ([`ContextBudget`]), estimated as Keen estimates
//!   (`(bytes + 2) / 3` tokens per text, [`BytesOverThree`]);
//! - only after a new tool turn: a call that follows no new tool call (a retry after a
//!   provider's context-length error, say) never starts one;
//! - below the trigger, the reducer replaces the oldest tool results by
//!   [`REMOVED_TOOL_RESULT`] until the view fits; one that still does not fit is summarised;
//! - the summary has five sections ([`SUMMARY_SECTIONS`], asked for by
//!   [`SUMMARY_INSTRUCTIONS`]), and the latest user message is kept verbatim outside it;
//! - a cancelled or failed attempt leaves the history as it was, and no other starts until a
//!   new tool turn.
//!
//! ```
//! use agent_memory_core::{InMemoryStore, ManualClock, SessionId, Timestamp};
//! use agent_memory_turns::{
//!     AssistantTurn, AutoCompaction, AutoCompactionEvent, CompactionAction, ContextPolicy,
//!     Session, StoreLog, ToolActivity,
//! };
//!
//! let store = InMemoryStore::new();
//! let clock = ManualClock::new(Timestamp::from_millis(1_767_225_600_000));
//! let id = SessionId::new("s1")?;
//! let mut session = Session::start(StoreLog::new(&store, id.clone()), id, &clock)?;
//! session.user_message("rename the crate")?;
//! let pending = AssistantTurn::new("Reading the manifests. ".repeat(400))
//!     .with_activity(vec![ToolActivity::new(0, "read_file")]);
//!
//! let mut policy = AutoCompaction::new(4_500);
//! let advice = policy.after_tool_turn(session.history(), &pending, &ContextPolicy::keen());
//! assert_eq!(advice.action, CompactionAction::Summarise);
//! let plan = advice.plan.expect("a plan");
//! assert_eq!(plan.last_user_message, "rename the crate");
//! // The host's model answers `plan.request` with the five sections.
//! let summary = "## Goal\nRename the crate.\n\n## Key Instructions\n-\n\n## Discoveries\n-\n\n## Accomplished\nRead the manifests.\n\n## Relevant Files\nCargo.toml";
//! let event = policy.apply(&mut session, &plan, summary);
//! assert!(matches!(event, AutoCompactionEvent::AutoCompactionApplied { .. }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::event::{AssistantTurn, Compaction, SessionEvent};
use crate::history::{Entry, History, memory_of};
use crate::log::{EventLog, Session};
use crate::memory::TurnMemory;
use crate::view::{ContextPolicy, ModelItem, ModelView, SizeEstimator};

/// What replaces an old tool result the reducer removes (Keen's marker).
pub const REMOVED_TOOL_RESULT: &str = "Tool result removed to fit context.";

/// The context window Keen assumes when a model's is unknown (0).
pub const DEFAULT_CONTEXT_WINDOW: usize = 200_000;

/// The five sections of a compaction summary, in order.
pub const SUMMARY_SECTIONS: [&str; 5] = [
    "Goal",
    "Key Instructions",
    "Discoveries",
    "Accomplished",
    "Relevant Files",
];

/// The instructions the host's model gets to write an automatic compaction's summary.
pub const SUMMARY_INSTRUCTIONS: &str = "\
You are writing a private checkpoint of the conversation so far, so that the work can go on \
in a smaller context. Write only the summary, with no preamble, in exactly these sections:

## Goal
What the user wants.

## Key Instructions
The user's constraints and preferences that still apply.

## Discoveries
Facts learned about the code base and the requirements.

## Accomplished
What is done, what is under way, what remains, and the next action.

## Relevant Files
Files, commands, errors and tool results that matter.

Keep the tool results and progress of the current turn. Leave out the latest user message: \
it is kept verbatim beside the summary.";

/// Keen's token estimate: `(bytes + 2) / 3`, at least 1 for a text that is not empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BytesOverThree;

impl SizeEstimator for BytesOverThree {
    fn tokens(&self, text: &str) -> usize {
        text.len().div_ceil(3)
    }
}

/// A model's context budget: its window less a safety margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ContextBudget {
    /// The model's context window in tokens (0 means [`DEFAULT_CONTEXT_WINDOW`]).
    pub context_window: usize,
}

impl ContextBudget {
    /// The budget of a model with this context window.
    pub fn new(context_window: usize) -> Self {
        ContextBudget { context_window }
    }

    /// The input budget: the window less `max(4096, 5% of the window)`, at least 1.
    pub fn input_budget(self) -> usize {
        let window = match self.context_window {
            0 => DEFAULT_CONTEXT_WINDOW,
            window => window,
        };
        window.saturating_sub((window / 20).max(4096)).max(1)
    }

    /// Where automatic compaction starts: 90% of the input budget.
    pub fn threshold(self) -> usize {
        let budget = self.input_budget();
        budget - budget / 10
    }

    /// Whether `tokens` reach the threshold.
    pub fn should_compact(self, tokens: usize) -> bool {
        tokens >= self.threshold()
    }
}

/// What the local reducer did to a view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Reduction {
    /// The estimate before.
    pub original_tokens: usize,
    /// The estimate after.
    pub reduced_tokens: usize,
    /// How many tool results were replaced by [`REMOVED_TOOL_RESULT`].
    pub removed_tool_results: usize,
    /// Whether the reduced view fits the input budget.
    pub fits_budget: bool,
}

impl ModelView<'_> {
    /// Replaces the oldest tool results by [`REMOVED_TOOL_RESULT`] until the view fits in
    /// `budget` tokens as `estimator` counts them; results no larger than the marker, and
    /// results already replaced, are left alone.
    pub fn reduce_tool_results(
        &mut self,
        budget: usize,
        estimator: &dyn SizeEstimator,
    ) -> Reduction {
        let original = self.estimate(estimator);
        let marker = estimator.tokens(REMOVED_TOOL_RESULT);
        let mut reduction = Reduction {
            original_tokens: original,
            reduced_tokens: original,
            removed_tool_results: 0,
            fits_budget: original <= budget,
        };
        for item in &mut self.items {
            if reduction.reduced_tokens <= budget {
                break;
            }
            let ModelItem::ToolResult { output, .. } = item else {
                continue;
            };
            let tokens = estimator.tokens(output);
            if output.as_ref() == REMOVED_TOOL_RESULT || tokens <= marker {
                continue;
            }
            *output = Cow::Borrowed(REMOVED_TOOL_RESULT);
            reduction.reduced_tokens = reduction.reduced_tokens - tokens + marker;
            reduction.removed_tool_results += 1;
        }
        reduction.fits_budget = reduction.reduced_tokens <= budget;
        reduction
    }
}

/// What the host should do after a tool turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionAction {
    /// Send the view as it is.
    Continue,
    /// Send the view with old tool results replaced (render with the reducer).
    Reduce,
    /// Have the model summarise [`CompactionPlan::request`], then [`AutoCompaction::apply`].
    Summarise,
}

/// Why the policy answered as it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionReason {
    /// No tool turn since the last call: compaction never starts then.
    NoNewToolTurn,
    /// The view is under the threshold.
    UnderThreshold,
    /// The view reached 90% of the budget.
    Threshold,
    /// An attempt failed or was cancelled since the last tool turn.
    Suppressed,
    /// Even reduced, the view does not fit the budget.
    OverBudget,
}

/// The policy's answer after a tool turn.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompactionAdvice {
    /// What to do.
    pub action: CompactionAction,
    /// Why.
    pub reason: CompactionReason,
    /// The estimate of the view with the turn under way, before reduction.
    pub estimated_tokens: usize,
    /// The input budget.
    pub input_budget: usize,
    /// Where compaction starts.
    pub threshold: usize,
    /// What the reducer would do to fit the budget.
    pub reduction: Reduction,
    /// What to summarise, when the action is [`CompactionAction::Summarise`].
    pub plan: Option<CompactionPlan>,
}

/// What to summarise and how the result is applied.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompactionPlan {
    /// The request for the host's model: [`SUMMARY_INSTRUCTIONS`] as the system prompt, and
    /// the conversation with the turn under way, old tool results reduced.
    pub request: ModelView<'static>,
    /// The latest user message, kept verbatim beside the summary.
    pub last_user_message: String,
    /// The turn under way, written as a checkpoint before the compaction (`None` when it
    /// said and did nothing yet).
    pub checkpoint: Option<AssistantTurn>,
    /// How many entries the history held when the plan was made.
    pub entries: usize,
}

/// A lifecycle event of an automatic compaction, with Keen's names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AutoCompactionEvent {
    /// The host asked its model for a summary.
    AutoCompactionStarted,
    /// The checkpoint and the compaction were written.
    AutoCompactionApplied {
        /// How many entries the compaction replaced.
        compacted_entries: usize,
    },
    /// The host cancelled the summary.
    AutoCompactionCancelled,
    /// The summary could not be used or written; the history is unchanged.
    AutoCompactionFailed {
        /// Why.
        reason: String,
    },
}

/// Keen's automatic compaction for one model: its budget, and what it remembers between tool
/// turns (where the last call was, and whether an attempt failed since).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoCompaction {
    budget: ContextBudget,
    seen: Option<(u64, usize)>,
    suppressed: bool,
}

impl AutoCompaction {
    /// The policy for a model with this context window (0: [`DEFAULT_CONTEXT_WINDOW`]).
    pub fn new(context_window: usize) -> Self {
        AutoCompaction {
            budget: ContextBudget::new(context_window),
            seen: None,
            suppressed: false,
        }
    }

    /// The budget.
    pub fn budget(&self) -> ContextBudget {
        self.budget
    }

    /// The answer after a tool turn of `pending`, the turn under way (not yet recorded), on
    /// top of `history`, rendered under `policy`.
    pub fn after_tool_turn(
        &mut self,
        history: &History,
        pending: &AssistantTurn,
        policy: &ContextPolicy,
    ) -> CompactionAdvice {
        let progress = (history.turns(), pending.tool_activity.len());
        let new_tool_turn = !pending.tool_activity.is_empty() && self.note_progress(progress);
        let with_pending = with_turn(history, pending);
        let checkpoint = (!pending.text.is_empty() || !pending.tool_activity.is_empty())
            .then(|| pending.clone());
        self.advise(&with_pending, history, checkpoint, new_tool_turn, policy)
    }

    /// The answer for a history whose last entry is the turn that just ran its tools (a host
    /// that records each tool turn as it ends, or asks about a stored session): that turn is
    /// the new tool turn when it made calls, and a compaction replaces it with the rest.
    pub fn after_recorded_turn(
        &mut self,
        history: &History,
        policy: &ContextPolicy,
    ) -> CompactionAdvice {
        let last_made_calls = matches!(
            history.entries().last(),
            Some(Entry::Assistant { turn, .. }) if !turn.tool_activity.is_empty()
        );
        let new_tool_turn = last_made_calls && self.note_progress((history.turns(), 0));
        self.advise(history, history, None, new_tool_turn, policy)
    }

    /// Records `progress`; whether it is past what was seen (a new tool turn), which lifts a
    /// suppression.
    fn note_progress(&mut self, progress: (u64, usize)) -> bool {
        if self.seen >= Some(progress) {
            return false;
        }
        self.seen = Some(progress);
        self.suppressed = false;
        true
    }

    fn advise(
        &self,
        viewed: &History,
        history: &History,
        checkpoint: Option<AssistantTurn>,
        new_tool_turn: bool,
        policy: &ContextPolicy,
    ) -> CompactionAdvice {
        let mut reduced = viewed.model_view(policy);
        let reduction = reduced.reduce_tool_results(self.budget.input_budget(), &BytesOverThree);
        let estimated = reduction.original_tokens;
        let (action, reason) = if !new_tool_turn {
            let action = if reduction.removed_tool_results > 0 {
                CompactionAction::Reduce
            } else {
                CompactionAction::Continue
            };
            (action, CompactionReason::NoNewToolTurn)
        } else if self.suppressed {
            (CompactionAction::Reduce, CompactionReason::Suppressed)
        } else if self.budget.should_compact(estimated) {
            (CompactionAction::Summarise, CompactionReason::Threshold)
        } else if !reduction.fits_budget {
            (CompactionAction::Summarise, CompactionReason::OverBudget)
        } else if reduction.removed_tool_results > 0 {
            (CompactionAction::Reduce, CompactionReason::UnderThreshold)
        } else {
            (CompactionAction::Continue, CompactionReason::UnderThreshold)
        };
        let (action, plan) = match (action, last_user_message(history)) {
            (CompactionAction::Summarise, Some(last)) => {
                let plan = CompactionPlan {
                    request: owned_view(reduced).with_system(SUMMARY_INSTRUCTIONS),
                    last_user_message: last.to_owned(),
                    checkpoint,
                    entries: history.entries().len(),
                };
                (CompactionAction::Summarise, Some(plan))
            }
            // Keen needs a user message to keep beside the summary; without one, reduce.
            (CompactionAction::Summarise, None) => (CompactionAction::Reduce, None),
            (action, _) => (action, None),
        };
        CompactionAdvice {
            action,
            reason,
            estimated_tokens: estimated,
            input_budget: self.budget.input_budget(),
            threshold: self.budget.threshold(),
            reduction,
            plan,
        }
    }

    /// The host started the summary.
    pub fn start(&mut self) -> AutoCompactionEvent {
        AutoCompactionEvent::AutoCompactionStarted
    }

    /// The host cancelled the summary: nothing changes, and no attempt starts again before a
    /// new tool turn.
    pub fn cancel(&mut self) -> AutoCompactionEvent {
        self.suppressed = true;
        AutoCompactionEvent::AutoCompactionCancelled
    }

    /// Writes the plan's checkpoint and the compaction by `summary` in one atomic step, or,
    /// when the summary is blank, the history moved since the plan, or the log refuses the
    /// write, changes nothing and suppresses attempts until a new tool turn.
    pub fn apply<L: EventLog>(
        &mut self,
        session: &mut Session<L>,
        plan: &CompactionPlan,
        summary: &str,
    ) -> AutoCompactionEvent {
        match apply_plan(session, plan, summary) {
            Ok(compacted_entries) => {
                self.seen = None;
                AutoCompactionEvent::AutoCompactionApplied { compacted_entries }
            }
            Err(error) => {
                self.suppressed = true;
                AutoCompactionEvent::AutoCompactionFailed {
                    reason: error.to_string(),
                }
            }
        }
    }
}

fn apply_plan<L: EventLog>(
    session: &mut Session<L>,
    plan: &CompactionPlan,
    summary: &str,
) -> Result<usize> {
    let history = session.history();
    let refuse = |reason: String| Error::Compaction {
        session: history.session().as_str().to_owned(),
        reason,
    };
    let summary = summary.trim();
    if summary.is_empty() {
        return Err(refuse("the summary is blank".to_owned()));
    }
    if history.entries().len() != plan.entries {
        return Err(refuse(format!(
            "the history holds {} entries, the plan was made at {}",
            history.entries().len(),
            plan.entries
        )));
    }
    let compacted = plan.entries + usize::from(plan.checkpoint.is_some());
    let memory = TurnMemory::cumulative(
        history
            .entries()
            .iter()
            .filter_map(memory_of)
            .chain(plan.checkpoint.iter().filter_map(|t| t.memory.as_ref())),
    );
    let mut events = Vec::with_capacity(2);
    if let Some(checkpoint) = &plan.checkpoint {
        events.push(SessionEvent::AssistantTurn(checkpoint.clone()));
    }
    events.push(SessionEvent::CompactionApplied(Compaction {
        summary: summary.to_owned(),
        compacted_entries: compacted,
        memory,
        last_user_message: Some(plan.last_user_message.clone()),
    }));
    session.record_all(events)?;
    Ok(compacted)
}

/// The history with `turn` recorded.
fn with_turn(history: &History, turn: &AssistantTurn) -> History {
    let mut history = history.clone();
    if !turn.text.is_empty() || !turn.tool_activity.is_empty() || turn.memory.is_some() {
        history.apply_checked(SessionEvent::AssistantTurn(turn.clone()));
    }
    history
}

/// The text of the latest user message, or the one an earlier compaction kept.
fn last_user_message(history: &History) -> Option<&str> {
    history
        .entries()
        .iter()
        .rev()
        .find_map(|entry| match entry {
            Entry::User { text } => Some(text.as_str()),
            Entry::Compaction { compaction, .. } => compaction.last_user_message.as_deref(),
            Entry::Assistant { .. } => None,
        })
}

/// The view with every borrowed part copied.
fn owned_view(view: ModelView<'_>) -> ModelView<'static> {
    let owned = |text: Cow<'_, str>| Cow::Owned(text.into_owned());
    let items = view
        .items
        .into_iter()
        .map(|item| match item {
            ModelItem::User(text) => ModelItem::User(owned(text)),
            ModelItem::Assistant(text) => ModelItem::Assistant(owned(text)),
            ModelItem::ToolCall { id, name, input } => ModelItem::ToolCall {
                id: owned(id),
                name: owned(name),
                input: Cow::Owned(input.into_owned()),
            },
            ModelItem::ToolResult {
                id,
                name,
                output,
                is_error,
            } => ModelItem::ToolResult {
                id: owned(id),
                name: owned(name),
                output: owned(output),
                is_error,
            },
        })
        .collect();
    ModelView::new(items)
}
