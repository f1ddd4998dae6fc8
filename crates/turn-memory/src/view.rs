//! The model view: what a provider is sent, built from a history by a [`ContextPolicy`].
//!
//! The view is provider-neutral ([`ModelItem`]s and a system prompt); [`render`](crate::render)
//! turns it into OpenAI Chat, OpenAI Responses, Genkit, Anthropic Messages or Gemini payloads.
//! The cheap context tiers (truncating large tool outputs, hiding old ones) are part of the
//! policy: they change what is sent, never what is logged, so a resumed session renders the
//! same view.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::LazyLock;

use agent_memory_core::Source;
use agent_memory_core::screen::{ScreenPolicy, as_data_block, screen};
use serde_json::{Map, Value, json};

use crate::activity::{ActivityStatus, ToolActivity};
use crate::event::{AssistantTurn, ToolCallRecord};
use crate::history::{Entry, History};
use crate::memory::TurnMemory;

/// How a turn memory reaches the model.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryStyle {
    /// The `Tool memory:` text block appended to the assistant content.
    Text,
    /// Each retained activity replayed as a tool call and its result, with synthetic ids,
    /// before the turn's text.
    Native {
        /// The tool name a changed file is replayed as (default `write_file`).
        file_tool: String,
        /// The tool name a command is replayed as (default `bash`).
        shell_tool: String,
    },
    /// Keen Code's replay (0.30 and later): every call of the turn's [`ToolActivity`]
    /// replayed as a native tool call at its place in the text, with its bounded input, a
    /// `{"status":…}` result and the id `historical_<message>_<i>` (`<message>` counts the
    /// messages Keen sends, its system prompt first). Calls at one offset share a message;
    /// offsets past the text, inside a character or before an earlier call are skipped, as
    /// Keen skips them. A turn without activity (an older log) and a compaction's summary fall
    /// back to the text block.
    Positional,
}

impl MemoryStyle {
    /// Native replay with the default tool names.
    pub fn native() -> Self {
        MemoryStyle::Native {
            file_tool: "write_file".to_owned(),
            shell_tool: "bash".to_owned(),
        }
    }
}

/// Large tool outputs cut to their head and tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Truncation {
    /// Outputs longer than this many characters are cut.
    pub max_chars: usize,
    /// Characters kept from the start.
    pub head_chars: usize,
    /// Characters kept from the end.
    pub tail_chars: usize,
}

impl Truncation {
    /// Outputs longer than `max_chars` cut to `head_chars` and `tail_chars`.
    pub fn new(max_chars: usize, head_chars: usize, tail_chars: usize) -> Self {
        Truncation {
            max_chars,
            head_chars,
            tail_chars,
        }
    }
}

impl Default for Truncation {
    fn default() -> Self {
        Truncation::new(4_000, 1_500, 1_500)
    }
}

/// What the model view holds.
///
/// ```
/// use agent_memory_turns::{ContextPolicy, MemoryStyle};
///
/// let policy = ContextPolicy::default()
///     .with_recent_memories(5)
///     .with_memory_style(MemoryStyle::Positional)
///     .with_system_prompt("You are a careful coding agent.");
/// assert_eq!(policy.recent_memories, 5);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContextPolicy {
    /// Memories of the last this many turns are sent (default 10); older ones stay in the log.
    pub recent_memories: usize,
    /// How memories are sent.
    pub memory_style: MemoryStyle,
    /// The `Files changed` line lists at most this many files, then `(+N more)` (default 8).
    pub max_files_listed: usize,
    /// Tier 1: cut kept tool outputs to head and tail.
    pub truncate_outputs: Option<Truncation>,
    /// Tier 2: hide the outputs of tool calls older than the last this many turns.
    pub outputs_of_last_turns: Option<usize>,
    /// The system prompt sent before the messages (none by default). It is not part of the
    /// log: the agent supplies it on every render, as it does to the provider.
    pub system_prompt: Option<String>,
    /// Keen Code's persistent memory, sent after the system prompt as its `# Memory`
    /// section (none by default); like the system prompt, never part of the log. Boxed, as
    /// a policy is carried by value (in [`ContextFit`]) and is rarely given one.
    pub persistent_memory: Option<Box<crate::persistent::PersistentMemory>>,
    /// Appended to the text of an interrupted turn as the model sees it (none by default, the
    /// format of Keen Code 0.2.3; [`ContextPolicy::keen`] sets [`INTERRUPTED_MARKER`]).
    pub interrupted_marker: Option<String>,
    /// Compress tool outputs as Keen does before they reach the model (off by default):
    /// see [`compress`](crate::compress).
    pub compress_outputs: bool,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        ContextPolicy {
            recent_memories: 10,
            memory_style: MemoryStyle::Text,
            max_files_listed: DEFAULT_MAX_FILES_LISTED,
            truncate_outputs: None,
            outputs_of_last_turns: None,
            system_prompt: None,
            persistent_memory: None,
            interrupted_marker: None,
            compress_outputs: false,
        }
    }
}

impl ContextPolicy {
    /// The default policy: text blocks for the last 10 turns, no tier, no system prompt.
    pub fn new() -> Self {
        ContextPolicy::default()
    }

    /// What Keen Code sends today: [`MemoryStyle::Positional`] and the
    /// [`INTERRUPTED_MARKER`] (memories of the last 10 turns, a deliberate divergence: Keen
    /// replays every turn).
    pub fn keen() -> Self {
        ContextPolicy::default()
            .with_memory_style(MemoryStyle::Positional)
            .with_interrupted_marker(Some(INTERRUPTED_MARKER.to_owned()))
    }

    /// With memories of the last `turns` turns.
    pub fn with_recent_memories(mut self, turns: usize) -> Self {
        self.recent_memories = turns;
        self
    }

    /// With this memory style.
    pub fn with_memory_style(mut self, style: MemoryStyle) -> Self {
        self.memory_style = style;
        self
    }

    /// With at most `files` files listed in a text block.
    pub fn with_max_files_listed(mut self, files: usize) -> Self {
        self.max_files_listed = files;
        self
    }

    /// With tool outputs truncated (tier 1), or not.
    pub fn with_truncated_outputs(mut self, cut: Option<Truncation>) -> Self {
        self.truncate_outputs = cut;
        self
    }

    /// With outputs of tool calls older than the last `turns` turns hidden (tier 2), or not.
    pub fn with_outputs_of_last_turns(mut self, turns: Option<usize>) -> Self {
        self.outputs_of_last_turns = turns;
        self
    }

    /// With tool outputs compressed for the model (or not).
    pub fn with_compressed_outputs(mut self, compress: bool) -> Self {
        self.compress_outputs = compress;
        self
    }

    /// With this system prompt.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// With Keen Code's persistent memory at the end of the system prompt (or, without a
    /// system prompt, as the whole of it), as Keen's `Build` places it: after the
    /// instructions, so it reads as context below them.
    pub fn with_persistent_memory(mut self, memory: crate::persistent::PersistentMemory) -> Self {
        self.persistent_memory = Some(Box::new(memory));
        self
    }

    /// With this marker after the text of interrupted turns, or none.
    pub fn with_interrupted_marker(mut self, marker: Option<String>) -> Self {
        self.interrupted_marker = marker;
        self
    }
}

/// How many files the `Files changed` line lists before `(+N more)`: enough for a typical
/// turn, few enough that a sweeping refactor still fits on one line.
pub const DEFAULT_MAX_FILES_LISTED: usize = 8;

/// Keen Code's marker after the text of an interrupted turn, exactly.
pub const INTERRUPTED_MARKER: &str = "\n\n[Response interrupted by user]";

/// One provider-neutral message of the model view. Assistant text directly followed by tool
/// calls is one step of the model (renderers put them in one message where the provider
/// allows). Exhaustive on purpose: a renderer must handle every kind of item, so a new kind
/// is a breaking change.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelItem<'a> {
    /// A user message (also the summary of a compaction).
    User(Cow<'a, str>),
    /// Assistant text.
    Assistant(Cow<'a, str>),
    /// A tool call the assistant made.
    ToolCall {
        /// The call id.
        id: Cow<'a, str>,
        /// The tool.
        name: Cow<'a, str>,
        /// Its arguments.
        input: Cow<'a, Value>,
    },
    /// The result of the tool call with the same id.
    ToolResult {
        /// The call id.
        id: Cow<'a, str>,
        /// The tool.
        name: Cow<'a, str>,
        /// What it returned, maybe truncated or hidden.
        output: Cow<'a, str>,
        /// Whether the tool reported an error.
        is_error: bool,
    },
}

/// A tool output the write screen flags, as [`ModelView::flagged_outputs`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlaggedOutput<'v> {
    /// The call's id.
    pub call_id: &'v str,
    /// The tool.
    pub tool: &'v str,
    /// The output, as the view holds it.
    pub output: &'v str,
    /// What the screen found, one reason per finding (`KIND: REASON`).
    pub reasons: Vec<String>,
}

/// Estimates how many tokens a text costs, to decide when to compact.
pub trait SizeEstimator {
    /// The estimated token count of `text`.
    fn tokens(&self, text: &str) -> usize;
}

/// The default estimator: one token per four characters, rounded up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CharsOverFour;

impl SizeEstimator for CharsOverFour {
    fn tokens(&self, text: &str) -> usize {
        text.chars().count().div_ceil(4)
    }
}

impl<F: Fn(&str) -> usize> SizeEstimator for F {
    fn tokens(&self, text: &str) -> usize {
        self(text)
    }
}

/// The model view of a history under a policy.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelView<'a> {
    /// The system prompt, sent apart from (or before) the messages.
    pub system: Option<Cow<'a, str>>,
    /// The messages, oldest first.
    pub items: Vec<ModelItem<'a>>,
}

impl<'a> ModelView<'a> {
    /// A view of these items, without a system prompt.
    pub fn new(items: Vec<ModelItem<'a>>) -> Self {
        ModelView {
            system: None,
            items,
        }
    }

    /// With this system prompt.
    pub fn with_system(mut self, system: impl Into<Cow<'a, str>>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// The view with each tool result's output read as evidence, never as instructions: under
    /// [`ScreenPolicy::Quarantine`] an output the write screen flags is replaced by a line
    /// saying it was withheld and why, unless `approved` says a person approved the output of
    /// that call (by its id);
    /// with `as_data` every output goes inside a `<memory-item source="tool:NAME" trust=…>`
    /// block (`flagged` when the screen finds something, `approved` when it does and the
    /// output is approved, else `external`), its delimiters escaped inside. The links of an output
    /// whose call's input names a `url` are judged against that page's host
    /// ([`flagged_outputs`](Self::flagged_outputs) lists what the screen finds). Returns the
    /// view and how many outputs were withheld. User and assistant text is the user's and the
    /// model's own, and stays as it is.
    pub fn guarded(
        mut self,
        policy: ScreenPolicy,
        as_data: bool,
        approved: &dyn Fn(&str) -> bool,
    ) -> (Self, usize) {
        let hosts = self.fetched_hosts();
        let mut withheld = 0;
        for item in &mut self.items {
            let ModelItem::ToolResult {
                id, name, output, ..
            } = item
            else {
                continue;
            };
            let findings = match policy {
                ScreenPolicy::Off if !as_data => continue,
                ScreenPolicy::Off => Vec::new(),
                _ => screen(output, hosts.get(id.as_ref()).map(String::as_str)),
            };
            let approved = !findings.is_empty() && approved(id);
            let source = Source::Tool(name.to_string());
            if policy == ScreenPolicy::Quarantine && !findings.is_empty() && !approved {
                withheld += 1;
                let reasons: Vec<String> = findings.iter().map(ToString::to_string).collect();
                *output = Cow::Owned(format!(
                    "[output withheld: the memory's write screen found {}]",
                    reasons.join("; ")
                ));
                continue;
            }
            if as_data {
                let trust = if findings.is_empty() {
                    "external"
                } else if approved {
                    "approved"
                } else {
                    "flagged"
                };
                *output = Cow::Owned(as_data_block(output, &source, trust));
            }
        }
        (self, withheld)
    }

    /// Each tool output of the view the write screen flags, in order, judged as
    /// [`guarded`](Self::guarded) judges them: its call's id, the tool, the output, and one
    /// reason per finding (`KIND: REASON`).
    pub fn flagged_outputs(&self) -> Vec<FlaggedOutput<'_>> {
        let hosts = self.fetched_hosts();
        self.items
            .iter()
            .filter_map(|item| {
                let ModelItem::ToolResult {
                    id, name, output, ..
                } = item
                else {
                    return None;
                };
                let findings = screen(output, hosts.get(id.as_ref()).map(String::as_str));
                (!findings.is_empty()).then(|| FlaggedOutput {
                    call_id: id,
                    tool: name,
                    output,
                    reasons: findings.iter().map(ToString::to_string).collect(),
                })
            })
            .collect()
    }

    /// The host of the page each call fetched, by call id: a call whose input names a `url`
    /// fetched that page, so its output's links are judged against the page's host.
    fn fetched_hosts(&self) -> std::collections::HashMap<String, String> {
        self.items
            .iter()
            .filter_map(|item| match item {
                ModelItem::ToolCall { id, input, .. } => {
                    let url = input.get("url").and_then(Value::as_str)?;
                    let host = Source::Page(url.to_owned()).host()?.into_owned();
                    Some((id.to_string(), host))
                }
                _ => None,
            })
            .collect()
    }

    /// The estimated token count of the system prompt and every text, argument and output in
    /// the view.
    pub fn estimate(&self, estimator: &dyn SizeEstimator) -> usize {
        let system = self.system.as_deref().map_or(0, |s| estimator.tokens(s));
        system
            + self
                .items
                .iter()
                .map(|item| match item {
                    ModelItem::User(text) | ModelItem::Assistant(text) => estimator.tokens(text),
                    ModelItem::ToolCall { name, input, .. } => {
                        estimator.tokens(name) + estimator.tokens(&input.to_string())
                    }
                    ModelItem::ToolResult { output, .. } => estimator.tokens(output),
                })
                .sum::<usize>()
    }
}

/// How many tokens each part of a model view costs, with Keen's parts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ContextBreakdown {
    /// The system prompt.
    pub system_prompt_tokens: usize,
    /// How many tool definitions were counted.
    pub tool_definition_count: usize,
    /// The tool definitions (name, description and input schema).
    pub tool_def_tokens: usize,
    /// User messages, compaction summaries included.
    pub user_message_tokens: usize,
    /// Assistant text.
    pub assistant_tokens: usize,
    /// Tool calls' inputs and tool results.
    pub tool_result_tokens: usize,
    /// The sum of the parts.
    pub total_estimated: usize,
}

impl ModelView<'_> {
    /// The view's cost per part as `estimator` counts it, with the tool definitions the
    /// request will carry (JSON objects with `name`, `description` and `input_schema`).
    pub fn breakdown(
        &self,
        estimator: &dyn SizeEstimator,
        tool_definitions: &[Value],
    ) -> ContextBreakdown {
        let mut b = ContextBreakdown {
            system_prompt_tokens: self.system.as_deref().map_or(0, |s| estimator.tokens(s)),
            tool_definition_count: tool_definitions.len(),
            ..ContextBreakdown::default()
        };
        for definition in tool_definitions {
            let text = |key: &str| definition.get(key).and_then(Value::as_str).unwrap_or("");
            b.tool_def_tokens += estimator.tokens(text("name"))
                + estimator.tokens(text("description"))
                + definition
                    .get("input_schema")
                    .map_or(0, |schema| estimator.tokens(&schema.to_string()));
        }
        for item in &self.items {
            match item {
                ModelItem::User(text) => b.user_message_tokens += estimator.tokens(text),
                ModelItem::Assistant(text) => b.assistant_tokens += estimator.tokens(text),
                ModelItem::ToolCall { input, .. } => {
                    b.tool_result_tokens += estimator.tokens(&input.to_string());
                }
                ModelItem::ToolResult { output, .. } => {
                    b.tool_result_tokens += estimator.tokens(output);
                }
            }
        }
        b.total_estimated = b.system_prompt_tokens
            + b.tool_def_tokens
            + b.user_message_tokens
            + b.assistant_tokens
            + b.tool_result_tokens;
        b
    }
}

/// The prefix of the user message that carries a compaction's summary.
pub const SUMMARY_PREFIX: &str = "Summary of the earlier conversation:\n\n";

/// The user message of an automatic compaction, in Keen's form: the summary in
/// `<compacted_context>`, then the latest user message verbatim in `<last_user_message>`.
pub fn automatic_summary(summary: &str, last_user_message: &str) -> String {
    format!(
        "<compacted_context>\nThe earlier conversation was compacted automatically to fit the \
         context window; this summary keeps its goals, constraints, progress, discoveries, tool \
         results and pending work.\n\n{summary}\n</compacted_context>\n\n<last_user_message>\n\
         The latest user message follows: it is the current task, and its requirements \
         prevail.\n\n{last_user_message}\n</last_user_message>"
    )
}

impl History {
    /// The model view under `policy`.
    pub fn model_view(&self, policy: &ContextPolicy) -> ModelView<'_> {
        let turns = self.turns();
        let memory_from = turns.saturating_sub(policy.recent_memories as u64);
        let outputs_from = policy
            .outputs_of_last_turns
            .map_or(0, |k| turns.saturating_sub(k as u64));
        let mut items = Vec::with_capacity(self.entries().len() + 8);
        // Keen's index of the message an entry becomes, for the ids of positional replay:
        // its system prompt is message 0, whether or not this view has one.
        let mut message = 1_u64;
        for entry in self.entries() {
            match entry {
                Entry::User { text } => {
                    items.push(ModelItem::User(Cow::Borrowed(text)));
                    message += 1;
                }
                Entry::Assistant { number, turn } => {
                    let recent = *number > memory_from;
                    let marker = policy
                        .interrupted_marker
                        .as_deref()
                        .filter(|_| turn.interrupted);
                    if recent
                        && policy.memory_style == MemoryStyle::Positional
                        && !turn.tool_activity.is_empty()
                    {
                        push_positional(&mut items, message, turn, marker);
                    } else {
                        let memory = turn.memory.as_ref().filter(|_| recent);
                        let hide_outputs = *number <= outputs_from;
                        push_turn(
                            &mut items,
                            policy,
                            *number,
                            turn,
                            memory,
                            marker,
                            hide_outputs,
                        );
                    }
                    // Keen keeps no message for a turn that said and did nothing.
                    if !turn.text.is_empty()
                        || !turn.tool_activity.is_empty()
                        || turn.memory.is_some()
                    {
                        message += 1;
                    }
                }
                Entry::Compaction { number, compaction } => {
                    let text = match &compaction.last_user_message {
                        Some(last) => automatic_summary(&compaction.summary, last),
                        None => {
                            let mut text = String::with_capacity(
                                SUMMARY_PREFIX.len() + compaction.summary.len(),
                            );
                            text.push_str(SUMMARY_PREFIX);
                            text.push_str(&compaction.summary);
                            text
                        }
                    };
                    let id = ('c', *number);
                    push_with_memory(
                        &mut items,
                        policy,
                        id,
                        compaction.memory.as_ref(),
                        text,
                        ModelItem::User,
                    );
                    message += 1;
                }
            }
        }
        if policy.compress_outputs {
            compress_results(&mut items);
        }
        ModelView {
            system: match &policy.persistent_memory {
                Some(memory) => {
                    crate::persistent::with_memory_section(policy.system_prompt.as_deref(), memory)
                        .map(Cow::Owned)
                }
                None => policy
                    .system_prompt
                    .as_deref()
                    .map(|s| Cow::Owned(s.to_owned())),
            },
            items,
        }
    }
}

/// Replaces each tool result that compression shortens.
fn compress_results(items: &mut [ModelItem<'_>]) {
    for item in items {
        if let ModelItem::ToolResult { name, output, .. } = item
            && let Some(compact) = crate::compress::text_for_model(name, output)
        {
            *output = Cow::Owned(compact);
        }
    }
}

fn push_turn<'a>(
    items: &mut Vec<ModelItem<'a>>,
    policy: &ContextPolicy,
    number: u64,
    turn: &'a AssistantTurn,
    memory: Option<&TurnMemory>,
    marker: Option<&str>,
    hide_outputs: bool,
) {
    for call in &turn.tool_calls {
        push_call(items, policy, call, hide_outputs);
    }
    let text = match marker {
        Some(marker) => Cow::Owned(format!("{}{marker}", turn.text)),
        None => Cow::Borrowed(turn.text.as_str()),
    };
    push_with_memory(
        items,
        policy,
        ('t', number),
        memory,
        text,
        ModelItem::Assistant,
    );
}

/// The input replayed for an activity that kept none.
static NO_INPUT: LazyLock<Value> = LazyLock::new(|| Value::Object(Map::new()));

/// Pushes `turn` as Keen replays it: its text cut at the offsets of its activity, each piece
/// followed by the calls made there and their results; `marker` after the last piece.
fn push_positional<'a>(
    items: &mut Vec<ModelItem<'a>>,
    message: u64,
    turn: &'a AssistantTurn,
    marker: Option<&str>,
) {
    let text = turn.text.as_str();
    let mut cursor = 0;
    let mut step: Vec<(String, &'a ToolActivity)> = Vec::new();
    let mut next_id = 0_usize;
    for activity in &turn.tool_activity {
        let offset = activity.text_offset;
        if offset < cursor
            || offset > text.len()
            || activity.tool.is_empty()
            || !text.is_char_boundary(offset)
        {
            continue;
        }
        let id = format!("historical_{message}_{next_id}");
        next_id += 1;
        if !step.is_empty() && offset == cursor {
            step.push((id, activity));
            continue;
        }
        push_step(items, &mut step);
        if offset > cursor {
            items.push(ModelItem::Assistant(Cow::Borrowed(&text[cursor..offset])));
        }
        step.push((id, activity));
        cursor = offset;
    }
    push_step(items, &mut step);
    let rest = &text[cursor..];
    let rest = match marker {
        Some(marker) => Cow::Owned(format!("{rest}{marker}")),
        None => Cow::Borrowed(rest),
    };
    if !rest.is_empty() {
        items.push(ModelItem::Assistant(rest));
    }
}

/// Pushes the calls of one step, then their results, and empties it.
fn push_step<'a>(items: &mut Vec<ModelItem<'a>>, step: &mut Vec<(String, &'a ToolActivity)>) {
    for (id, activity) in step.iter() {
        items.push(ModelItem::ToolCall {
            id: Cow::Owned(id.clone()),
            name: Cow::Borrowed(&activity.tool),
            input: Cow::Borrowed(activity.input.as_ref().unwrap_or(&NO_INPUT)),
        });
    }
    for (id, activity) in step.drain(..) {
        items.push(ModelItem::ToolResult {
            id: Cow::Owned(id),
            name: Cow::Borrowed(&activity.tool),
            output: activity.result(),
            is_error: activity.status == ActivityStatus::Error,
        });
    }
}

/// Pushes `text` as a message made by `message`, with `memory` as a text block appended to
/// it, or as replayed tool calls: after a summary (the calls belong to what it summarizes),
/// before a turn's text (the calls happened before the model's final words). An empty text
/// without a block is left out.
fn push_with_memory<'a>(
    items: &mut Vec<ModelItem<'a>>,
    policy: &ContextPolicy,
    id: (char, u64),
    memory: Option<&TurnMemory>,
    text: impl Into<Cow<'a, str>>,
    message: fn(Cow<'a, str>) -> ModelItem<'a>,
) {
    let mut text = text.into();
    let text_first = id.0 == 'c';
    let mut replayed = Vec::new();
    match (&policy.memory_style, memory) {
        (MemoryStyle::Text | MemoryStyle::Positional, Some(memory)) => {
            let text = text.to_mut();
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            write_memory_block(text, memory, policy.max_files_listed);
        }
        (
            MemoryStyle::Native {
                file_tool,
                shell_tool,
            },
            Some(memory),
        ) => replay(&mut replayed, id, memory, file_tool, shell_tool),
        (_, None) => {}
    }
    if text_first && !text.is_empty() {
        items.push(message(text));
        items.append(&mut replayed);
        return;
    }
    items.append(&mut replayed);
    if !text.is_empty() {
        items.push(message(text));
    }
}

fn push_call<'a>(
    items: &mut Vec<ModelItem<'a>>,
    policy: &ContextPolicy,
    call: &'a ToolCallRecord,
    hide_outputs: bool,
) {
    items.push(ModelItem::ToolCall {
        id: Cow::Borrowed(&call.id),
        name: Cow::Borrowed(&call.tool),
        input: Cow::Borrowed(&call.input),
    });
    let output = if hide_outputs {
        Cow::Borrowed(HIDDEN_OUTPUT)
    } else {
        match policy.truncate_outputs {
            Some(cut) => truncate(&call.output, cut),
            None => Cow::Borrowed(call.output.as_str()),
        }
    };
    items.push(ModelItem::ToolResult {
        id: Cow::Borrowed(&call.id),
        name: Cow::Borrowed(&call.tool),
        output,
        is_error: call.is_error,
    });
}

/// What replaces a hidden tool output.
pub const HIDDEN_OUTPUT: &str = "[output hidden to save context; run the tool again if needed]";

/// `output` cut to its head and tail when it is longer than `cut.max_chars` characters.
pub fn truncate(output: &str, cut: Truncation) -> Cow<'_, str> {
    // Bytes bound characters from above: most outputs are short and skip the count.
    if output.len() <= cut.max_chars {
        return Cow::Borrowed(output);
    }
    let chars = output.chars().count();
    if chars <= cut.max_chars || chars <= cut.head_chars + cut.tail_chars {
        return Cow::Borrowed(output);
    }
    let head_end = output
        .char_indices()
        .nth(cut.head_chars)
        .map_or(output.len(), |(i, _)| i);
    let tail_start = output
        .char_indices()
        .nth(chars - cut.tail_chars)
        .map_or(output.len(), |(i, _)| i);
    let omitted = chars - cut.head_chars - cut.tail_chars;
    Cow::Owned(format!(
        "{}\n[… {omitted} characters omitted …]\n{}",
        &output[..head_end],
        &output[tail_start..]
    ))
}

/// Appends the `Tool memory:` block (no leading blank line) to `out`. Paths and commands are
/// written on one line each, control characters escaped.
pub fn write_memory_block(out: &mut String, memory: &TurnMemory, max_files: usize) {
    out.push_str("Tool memory:");
    if !memory.files_changed.is_empty() {
        out.push_str("\n- Files changed: ");
        let shown = max_files.max(1).min(memory.files_changed.len());
        for (i, file) in memory.files_changed[..shown].iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            push_one_line(out, file);
        }
        let more = memory.files_changed.len() - shown;
        if more > 0 {
            // Writing to a String cannot fail.
            let _ = write!(out, " (+{more} more)");
        }
    }
    for failed in &memory.failed_commands {
        out.push_str("\n- Failed bash: ");
        push_one_line(out, &failed.command);
        let _ = write!(out, " (exit {})", failed.exit_code);
    }
    for dangerous in &memory.dangerous_commands {
        out.push_str("\n- Dangerous bash: ");
        push_one_line(out, &dangerous.command);
        if let Some(code) = dangerous.exit_code {
            let _ = write!(out, " (exit {code})");
        }
    }
}

/// Appends `text` with its control characters escaped (`\n`, `\r`, `\t`, `\u{..}`), so a
/// multi-line command (a heredoc, say) or an odd file name stays on its own line of the block
/// and cannot start a line that reads as another entry.
fn push_one_line(out: &mut String, text: &str) {
    if !text.contains(char::is_control) {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
}

/// The `Tool memory:` block of `memory` as a string.
pub fn memory_block(memory: &TurnMemory, max_files: usize) -> String {
    let mut out = String::new();
    write_memory_block(&mut out, memory, max_files);
    out
}

fn replay(
    items: &mut Vec<ModelItem<'_>>,
    (kind, number): (char, u64),
    memory: &TurnMemory,
    file_tool: &str,
    shell_tool: &str,
) {
    let mut pair = |k: usize, name: &str, input: Value, output: String| {
        let id = format!("memory-{kind}{number}-{k}");
        items.push(ModelItem::ToolCall {
            id: Cow::Owned(id.clone()),
            name: Cow::Owned(name.to_owned()),
            input: Cow::Owned(input),
        });
        items.push(ModelItem::ToolResult {
            id: Cow::Owned(id),
            name: Cow::Owned(name.to_owned()),
            output: Cow::Owned(output),
            is_error: false,
        });
    };
    let mut k = 0;
    for file in &memory.files_changed {
        k += 1;
        pair(k, file_tool, json!({ "path": file }), "changed".to_owned());
    }
    for failed in &memory.failed_commands {
        k += 1;
        pair(
            k,
            shell_tool,
            json!({ "command": failed.command }),
            format!("exit {}", failed.exit_code),
        );
    }
    for dangerous in &memory.dangerous_commands {
        k += 1;
        let output = dangerous.exit_code.map_or_else(
            || "did not finish".to_owned(),
            |code| format!("exit {code}"),
        );
        pair(
            k,
            shell_tool,
            json!({ "command": dangerous.command, "is_dangerous": true }),
            output,
        );
    }
}

/// Whether a history's model view fits a token budget, and under which tiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextFit {
    /// It fits under this policy (the given one, or one with cheap tiers switched on).
    Fits {
        /// The policy to render with.
        policy: ContextPolicy,
        /// The estimated size.
        tokens: usize,
    },
    /// Even with every cheap tier it does not fit: compact with a summary.
    NeedsSummary {
        /// The estimated size with every cheap tier.
        tokens: usize,
    },
}

/// The cheap tiers to try, in order, before asking for a summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheapTiers {
    /// Tier 1: truncate large tool outputs.
    pub truncate: Truncation,
    /// Tier 2: keep tool outputs of the last this many turns only.
    pub outputs_of_last_turns: usize,
}

impl CheapTiers {
    /// Tier 1 cutting outputs by `truncate`, tier 2 keeping outputs of the last
    /// `outputs_of_last_turns` turns.
    pub fn new(truncate: Truncation, outputs_of_last_turns: usize) -> Self {
        CheapTiers {
            truncate,
            outputs_of_last_turns,
        }
    }
}

impl Default for CheapTiers {
    fn default() -> Self {
        CheapTiers::new(Truncation::default(), 5)
    }
}

impl History {
    /// Tries `policy`, then tier 1, then tiers 1 and 2, and reports the first that fits in
    /// `budget` tokens as estimated by `estimator`.
    pub fn fit_context(
        &self,
        policy: &ContextPolicy,
        tiers: CheapTiers,
        budget: usize,
        estimator: &dyn SizeEstimator,
    ) -> ContextFit {
        let truncated = ContextPolicy {
            truncate_outputs: Some(tiers.truncate),
            ..policy.clone()
        };
        let hidden = ContextPolicy {
            outputs_of_last_turns: Some(tiers.outputs_of_last_turns),
            ..truncated.clone()
        };
        let mut tokens = 0;
        for candidate in [policy.clone(), truncated, hidden] {
            tokens = self.model_view(&candidate).estimate(estimator);
            if tokens <= budget {
                return ContextFit::Fits {
                    policy: candidate,
                    tokens,
                };
            }
        }
        ContextFit::NeedsSummary { tokens }
    }
}
