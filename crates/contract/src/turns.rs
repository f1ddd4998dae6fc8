//! `turns_append`, `turns_view`, `turns_import`, `turns_history`, `turns_compact` and
//! `turns_tool_history`: a coding session's events appended as they happen, the model view of
//! the session rendered for a provider, a session log imported, a session shown as the user
//! sees it or as a model is sent it, compacted into a summary, and its tool-history setting.
//!
//! Appending is idempotent by position: an event already stored at the same position with
//! the same content is skipped, so a client that retries after a lost answer changes nothing;
//! a gap or a different event at a stored position is an error naming the position. The
//! position check is part of the store's atomic append ([`SessionStore::session_append_at`]),
//! so this holds for appends sent at once from several processes, servers or hosts.
//!
//! A session is a stored one or, for `turns_history` and `turns_compact`, a JSON-lines log
//! file an input names (read through [`crate::files`]; compacting one writes it, which only a
//! caller allowed to write where it says may do).

use crate::{Error, ErrorKind, Result, ResultExt};
use agent_memory_core::excerpt::{Excerpt, bounded};
use agent_memory_core::screen::ScreenPolicy;
use agent_memory_core::{SessionId, SessionStore};
use agent_memory_turns::{
    AssistantTurn, AutoCompaction, BytesOverThree, Compaction, ContextPolicy, Entry, EventLog,
    History, INTERRUPTED_MARKER, JsonlLog, Loaded, MemoryStyle, SUMMARY_INSTRUCTIONS, Session,
    SessionEvent, StoreLog, ToolHistory, TurnMemory, UiRole, render,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Env;

/// Events to append to a session's log, in one transaction.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendInput {
    /// The session.
    pub session: String,
    /// The first event's position (0: `session_started`; default: after the last stored);
    /// events already stored alike are skipped.
    #[serde(default)]
    pub start: Option<u64>,
    /// The events, in order: `{"type": "session_started", "session": "s1", "started_at": 0}`,
    /// then `user_message` (`text`), `assistant_turn` (`text`, `memory`, `tool_activity`),
    /// `compaction_applied` (`summary`, `compacted_entries`) or `tool_history` (`mode`).
    // Read as objects, so a misfit names its place inside the event; typed in the schema.
    #[schemars(with = "Vec<agent_memory_turns::SessionEvent>")]
    pub events: Vec<Map<String, Value>>,
    /// Who wrote them (`user`, `model:NAME`, `tool:NAME`, ...); default by kind: turns and
    /// summaries `model`, the rest `user`.
    #[serde(default)]
    pub source: Option<String>,
}

/// Where in `object`, an event that does not fit, the misfit is. An event of a kind whose
/// fields are a type of their own (an assistant turn, a compaction) is read again as that
/// type, keeping track of the place (`tool_calls[0].name`): a tagged event read whole loses
/// the place inside it. Of the other kinds, the first of their fields ([`INLINE_FIELDS`])
/// that is there but not of its type is named. A missing field names no place: the message
/// names it.
fn misfit_place(object: &Map<String, Value>) -> Option<String> {
    let kind = object.get("type")?.as_str()?;
    let mut fields = object.clone();
    fields.remove("type");
    let fields = Value::Object(fields);
    let traced = match kind {
        "assistant_turn" => serde_path_to_error::deserialize::<_, AssistantTurn>(fields).err()?,
        "compaction_applied" => serde_path_to_error::deserialize::<_, Compaction>(fields).err()?,
        _ => {
            let (_, named) = INLINE_FIELDS.iter().find(|(k, _)| *k == kind)?;
            return named
                .iter()
                .find(|(name, fits)| object.get(*name).is_some_and(|value| !fits(value)))
                .map(|(name, _)| (*name).to_owned());
        }
    };
    Some(traced.path().to_string()).filter(|place| place != ".")
}

/// Whether `value` reads as a `T`.
fn reads_as<T: serde::de::DeserializeOwned>(value: &Value) -> bool {
    T::deserialize(value).is_ok()
}

/// A field of an event and whether a value fits it.
type FieldCheck = (&'static str, fn(&Value) -> bool);

/// The fields of the event kinds [`SessionEvent`] holds inline, by kind, as it reads them (a
/// test holds the two together).
const INLINE_FIELDS: &[(&str, &[FieldCheck])] = &[
    (
        "session_started",
        &[
            ("session", reads_as::<String>),
            ("started_at", reads_as::<i64>),
        ],
    ),
    ("user_message", &[("text", reads_as::<String>)]),
    ("tool_history", &[("mode", reads_as::<ToolHistory>)]),
];

/// Who appends events: the caller's source, or the one each event's kind implies, through
/// the door's client. (A store keeps its own write time, whatever time a writer gives.)
struct EventWriter<'e> {
    env: &'e Env<'e>,
    source: Option<agent_memory_core::Source>,
    /// The append's time, read once.
    at: agent_memory_core::Timestamp,
}

impl<'e> EventWriter<'e> {
    /// Who wrote `event`: the given source, else a model for what a model writes (a turn, a
    /// compaction's summary) and the user for the rest.
    fn of(&self, event: &SessionEvent) -> agent_memory_core::Provenance {
        let source = self.source.clone().unwrap_or_else(|| match event {
            SessionEvent::AssistantTurn(_) | SessionEvent::CompactionApplied(_) => {
                agent_memory_core::Source::Model(String::new())
            }
            _ => agent_memory_core::Source::User,
        });
        crate::evidence::door_writer(self.env, source, self.at)
    }
}

/// What an append did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AppendOutput {
    /// The session.
    pub session: String,
    /// Events written.
    pub appended: u64,
    /// Events skipped because the same event was already stored at their position.
    pub already_stored: u64,
    /// Events the session's log holds now.
    pub events: u64,
}

fn conflict(input: String, message: String) -> Error {
    Error::new(ErrorKind::Conflict, message).about(input)
}

pub(crate) fn session_id(name: &str) -> Result<SessionId> {
    SessionId::new(name).with_context(|| format!("session {}", Excerpt::quoted(name)))
}

/// The session's stored events, decoded; none when it has no log yet.
fn stored_events(env: &Env<'_>, session: &SessionId) -> Result<Vec<SessionEvent>> {
    match StoreLog::new(env.store, session.clone()).load() {
        Ok(loaded) => Ok(loaded.events),
        Err(agent_memory_turns::Error::Store(e)) if e.is_not_found() => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// Appends the events the log does not hold yet, after checking every one against it.
///
/// The log is read, the input checked against it, and the new events appended with
/// [`SessionStore::session_append_at`] at the length that was read: the store refuses them
/// when another writer (another process, another MCP server, another host) appended
/// meanwhile, and this operation then checks the input against the log as it is now. So a
/// retry, or several copies of one append sent at once, store each event once.
pub fn append(env: &Env<'_>, input: AppendInput) -> Result<AppendOutput> {
    let session = session_id(&input.session)?;
    let writer = EventWriter {
        env,
        source: crate::evidence::source_input(input.source.as_deref())?,
        at: env.clock.now(),
    };
    // When another writer appended between the read and the append, the store refuses ours;
    // one more plan sees its events and skips them or names the first that differs. A second
    // refusal is reported as the store words it (the session, both lengths).
    let mut attempts = 0;
    loop {
        attempts += 1;
        let plan = plan(env, &session, &input)?;
        let output = |appended: u64, events: u64| AppendOutput {
            session: input.session.clone(),
            appended,
            already_stored: input.events.len() as u64 - appended,
            events,
        };
        if plan.fresh.is_empty() {
            return Ok(output(0, plan.held));
        }
        let stored = plan
            .fresh
            .iter()
            .map(|event| Ok(event.to_stored()?.with_writer(writer.of(event))))
            .collect::<Result<Vec<_>>>()?;
        match env.store.session_append_at(&session, plan.held, &stored) {
            Ok(done) if done.already_stored => return Ok(output(0, done.events)),
            Ok(done) => return Ok(output(stored.len() as u64, done.events)),
            Err(e) if e.is_conflict() && attempts < 2 => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// What an append must write, given the log as it was read.
struct Plan {
    /// Events the log held.
    held: u64,
    /// The input's events the log does not hold yet.
    fresh: Vec<SessionEvent>,
}

/// Checks the input's events against the stored log: a gap or a different event at a stored
/// position is refused, and the log with the new events must form a session.
fn plan(env: &Env<'_>, session: &SessionId, input: &AppendInput) -> Result<Plan> {
    let held = stored_events(env, session)?;
    let held_len = held.len() as u64;
    let start = input.start.unwrap_or(held_len);
    if start > held_len {
        return Err(Error::invalid(
            "start",
            format!(
                "event at position {start} leaves a gap: session {:?} holds {held_len} event(s), so the next position is {held_len}",
                input.session
            ),
        ));
    }
    let mut fresh = Vec::new();
    for (i, object) in input.events.iter().enumerate() {
        let position = start + i as u64;
        let event: SessionEvent = serde_json::from_value(Value::Object(object.clone())).map_err(
            |e| match misfit_place(object) {
                Some(place) => Error::invalid(
                    format!("events[{i}].{place}"),
                    format!(
                        "event at position {position}: {place}: {}",
                        bounded(&e.to_string())
                    ),
                ),
                None => Error::invalid(
                    format!("events[{i}]"),
                    format!("event at position {position}: {}", bounded(&e.to_string())),
                ),
            },
        )?;
        match usize::try_from(position).ok().and_then(|p| held.get(p)) {
            Some(stored) if *stored == event => {}
            Some(stored) => {
                return Err(conflict(
                    format!("events[{i}]"),
                    format!(
                        "event at position {position} conflicts with the {} event stored there in session {:?}",
                        stored.kind(),
                        input.session
                    ),
                ));
            }
            None => fresh.push(event),
        }
    }
    if !fresh.is_empty() {
        // The whole log must still form a session: it starts with this session's
        // `session_started` and every event can follow the ones before it.
        let history = History::replay_of(session, held.iter().chain(&fresh).cloned())?;
        if history.session() != session {
            return Err(conflict(
                "events[0]".to_owned(),
                format!(
                    "event at position 0 starts session {:?}, not {:?}",
                    history.session().as_str(),
                    input.session
                ),
            ));
        }
    }
    Ok(Plan {
        held: held_len,
        fresh,
    })
}

/// The provider format of the model view.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// OpenAI Chat Completions `messages`.
    OpenaiChat,
    /// OpenAI Responses `input` items.
    OpenaiResponses,
    /// Genkit `messages`.
    Genkit,
    /// Anthropic Messages: the request's `system` and `messages`.
    Anthropic,
    /// Gemini `generateContent`: the request's `system_instruction` and `contents`.
    Gemini,
}

/// Which session to render, for which provider.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ViewInput {
    /// The session.
    pub session: String,
    /// The provider format.
    pub provider: Provider,
    /// Send the memories (files changed, failed commands) of the last this many turns
    /// (default 10).
    #[serde(default)]
    pub recent_memories: Option<usize>,
    /// Compress tool outputs for the model (default false).
    #[serde(default)]
    pub compress_outputs: Option<bool>,
    /// The context window in tokens: the answer then says whether to compact.
    #[serde(default)]
    pub context_window: Option<usize>,
    /// Each tool output inside a `<memory-item source="tool:NAME" trust=…>` data block.
    #[serde(default)]
    pub as_data: bool,
}

/// The model view of a session, ready to send.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ViewOutput {
    /// The session.
    pub session: String,
    /// The provider format.
    pub provider: Provider,
    /// Completed turns in the session.
    pub turns: u64,
    /// The payload in the provider's own format: a list of messages or input items (OpenAI,
    /// Genkit), or the request body that carries them with the system prompt apart
    /// (Anthropic's `system` and `messages`, Gemini's `system_instruction` and `contents`).
    #[schemars(schema_with = "crate::portable::array_or_object")]
    pub messages: Value,
    /// The session's tool-history setting, `full` or `none` (a `tool_history` event sets it).
    pub tool_history: String,
    /// The view's estimated tokens per part.
    pub breakdown: Breakdown,
    /// The automatic compaction policy's answer, when `context_window` is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionAnswer>,
    /// Tool outputs withheld because the write screen flags them, under the store's
    /// `quarantine` policy.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub withheld: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Estimated tokens per part of the model view (Keen Code's estimate: bytes / 3).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Breakdown {
    /// The system prompt.
    pub system_prompt_tokens: u64,
    /// User messages and summaries.
    pub user_message_tokens: u64,
    /// Assistant text.
    pub assistant_tokens: u64,
    /// Tool calls' inputs and results.
    pub tool_result_tokens: u64,
    /// The sum.
    pub total_estimated: u64,
}

/// Whether to compact now, by Keen Code's rules, treating the last turn as the new tool turn.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CompactionAnswer {
    /// `continue`, `reduce` (old tool results replaced by a marker) or `summarise`.
    pub action: String,
    /// `no_new_tool_turn`, `under_threshold`, `threshold`, `suppressed` or `over_budget`.
    pub reason: String,
    /// The view's estimate before reduction.
    pub estimated_tokens: u64,
    /// The context window less max(4096, 5%).
    pub input_budget: u64,
    /// 90% of the input budget.
    pub threshold: u64,
    /// Tool results the reducer replaces to fit the budget.
    pub removed_tool_results: u64,
    /// When summarising: the instructions for the summary's five sections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// When summarising: the latest user message, to keep verbatim beside the summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_user_message: Option<String>,
    /// When summarising: how many entries the compaction replaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compacted_entries: Option<u64>,
}

fn label<T: Serialize>(value: T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn compaction_answer(history: &History, policy: &ContextPolicy, window: usize) -> CompactionAnswer {
    let advice = AutoCompaction::new(window).after_recorded_turn(history, policy);
    let plan = advice.plan.as_ref();
    CompactionAnswer {
        action: label(advice.action),
        reason: label(advice.reason),
        estimated_tokens: count(advice.estimated_tokens),
        input_budget: count(advice.input_budget),
        threshold: count(advice.threshold),
        removed_tool_results: count(advice.reduction.removed_tool_results),
        instructions: plan.map(|_| SUMMARY_INSTRUCTIONS.to_owned()),
        last_user_message: plan.map(|p| p.last_user_message.clone()),
        compacted_entries: plan.map(|p| count(p.entries)),
    }
}

/// The session's model view, rendered for the provider.
pub fn view(env: &Env<'_>, input: ViewInput) -> Result<ViewOutput> {
    let session = session_id(&input.session)?;
    let events = stored_events(env, &session)?;
    if events.is_empty() {
        return Err(Error::not_found(
            input.session.as_str(),
            format!("session {:?} has no events", input.session),
        ));
    }
    let history = History::replay_of(&session, events)?;
    let mut policy =
        ContextPolicy::default().with_compressed_outputs(input.compress_outputs.unwrap_or(false));
    if let Some(recent) = input.recent_memories {
        policy.recent_memories = recent;
    }
    let screen = crate::evidence::policy(env)?;
    // Approvals change what is withheld, and the trust a data block shows.
    let approved = if screen == ScreenPolicy::Quarantine || input.as_data {
        crate::review::approved_calls(env, &session, &history)?
    } else {
        std::collections::HashSet::new()
    };
    let (model, withheld) = history
        .model_view(&policy)
        .guarded(screen, input.as_data, &|id| approved.contains(id));
    let parts = model.breakdown(&BytesOverThree, &[]);
    let breakdown = Breakdown {
        system_prompt_tokens: count(parts.system_prompt_tokens),
        user_message_tokens: count(parts.user_message_tokens),
        assistant_tokens: count(parts.assistant_tokens),
        tool_result_tokens: count(parts.tool_result_tokens),
        total_estimated: count(parts.total_estimated),
    };
    let compaction = input
        .context_window
        .map(|window| compaction_answer(&history, &policy, window));
    let messages = match input.provider {
        Provider::OpenaiChat => serde_json::to_value(render::openai_chat(&model)),
        Provider::OpenaiResponses => serde_json::to_value(render::openai_responses(&model)),
        Provider::Genkit => serde_json::to_value(render::genkit(&model)),
        Provider::Anthropic => serde_json::to_value(render::anthropic(&model)),
        Provider::Gemini => serde_json::to_value(render::gemini(&model)),
    }
    .context("rendering the model view")?;
    Ok(ViewOutput {
        session: input.session.clone(),
        provider: input.provider,
        turns: history.turns(),
        messages,
        tool_history: history.tool_history().as_str().to_owned(),
        breakdown,
        compaction,
        withheld: withheld as u64,
    })
}

/// A session log to import, from a file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportInput {
    /// The session log's file (for a server's clients, only inside the folders it allows).
    pub path: String,
    /// Its format: `agent_memory` (this library's JSON lines, the default) or `keen` (a Keen
    /// Code session log, converted).
    #[serde(default)]
    pub source: LogFormat,
}

/// The format of a session log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// This library's JSON lines: one event a line.
    #[default]
    AgentMemory,
    /// A Keen Code session log.
    Keen,
}

/// What an import stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ImportOutput {
    /// The session.
    pub session: String,
    /// Events stored.
    pub events: usize,
    /// Completed turns in the session.
    pub turns: u64,
    /// Whether the database already held exactly these events (nothing was written).
    pub already_imported: bool,
    /// What was skipped while reading the log (a torn last line, a line of a Keen log that
    /// does not decode), one sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Imports a session log into the store, in one transaction. A session stored with the same
/// events is already imported and stays as it is; one stored with other events is refused,
/// naming the first line (or event) that differs.
pub fn import(env: &Env<'_>, input: ImportInput) -> Result<ImportOutput> {
    let path = std::path::Path::new(&input.path);
    let text = crate::files::read_text(path, &env.files).map_err(|e| match e.kind() {
        ErrorKind::NotFound => Error::not_found(
            &input.path,
            format!("session log {:?} not found", input.path),
        ),
        _ => e,
    })?;
    let loaded = match input.source {
        LogFormat::AgentMemory => JsonlLog::parse(text.as_bytes(), path)?,
        LogFormat::Keen => agent_memory_turns::keen::convert(text.as_bytes(), path)?,
    };
    // Replaying checks the log forms a session before anything is written.
    let history = History::replay(loaded.events.iter().cloned())
        .with_context(|| format!("session log {}", input.path))?;
    let session = history.session().clone();
    // Every event is the import's: `import:agent_memory` or `import:keen`, by the door's client.
    let format = match input.source {
        LogFormat::AgentMemory => "agent_memory",
        LogFormat::Keen => "keen",
    };
    let source = agent_memory_core::Source::Import(format.to_owned());
    let writer = crate::evidence::door_writer(env, source, env.clock.now());
    let stored = loaded
        .events
        .iter()
        .map(|event| Ok(event.to_stored()?.with_writer(writer.clone())))
        .collect::<Result<Vec<_>>>()?;
    let mut held = held_events(env.store, &session)?;
    if held.is_empty() {
        match env.store.session_create(&session, &stored) {
            Ok(_) => {}
            // Another import stored the session meanwhile (nothing was written): compare
            // with what it stored.
            Err(agent_memory_core::Error::Conflict { .. }) => {
                held = held_events(env.store, &session)?;
            }
            Err(other) => return Err(other.into()),
        }
    }
    let already_imported = !held.is_empty();
    if already_imported && let Some((at, what)) = first_difference(&stored, &held) {
        // The line of each event, where the log holds one event a line (our own format,
        // nothing skipped); else the event's number.
        let lines = (input.source == LogFormat::AgentMemory && loaded.warnings.is_empty())
            .then(|| event_lines(&text));
        let place = match lines.as_ref().and_then(|l| l.get(at)) {
            Some(line) => format!("{}:{line}", input.path),
            None => format!("{}: event {}", input.path, at + 1),
        };
        return Err(conflict(
            input.path.clone(),
            format!(
                "{place}: session {:?} is already stored in {} with other events: {what}; nothing was imported",
                session.as_str(),
                env.store.location()
            ),
        ));
    }
    Ok(ImportOutput {
        session: session.as_str().to_owned(),
        events: stored.len(),
        turns: history.turns(),
        already_imported,
        warnings: loaded.warnings.iter().map(ToString::to_string).collect(),
    })
}

/// The events stored for `session`; none when the session is not stored.
fn held_events(
    store: &dyn SessionStore,
    session: &SessionId,
) -> Result<Vec<agent_memory_core::SessionEvent>> {
    match store.session_load(session) {
        Ok(events) => Ok(events),
        Err(agent_memory_core::Error::NotFound { .. }) => Ok(Vec::new()),
        Err(other) => Err(other.into()),
    }
}

/// The 1-based lines of a JSON-lines log that hold an event (its non-blank lines).
fn event_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, _)| i + 1)
        .collect()
}

/// The index of the first event of `file` that differs from the stored events `held`, and
/// what differs; `None` when they are the same. Payloads are not shown, only the kinds.
fn first_difference(
    file: &[agent_memory_core::SessionEvent],
    held: &[agent_memory_core::SessionEvent],
) -> Option<(usize, String)> {
    for (i, event) in file.iter().enumerate() {
        let Some(kept) = held.get(i) else {
            return Some((
                i,
                format!(
                    "the stored session ends before this event (it holds {} events)",
                    held.len()
                ),
            ));
        };
        if event.kind != kept.kind {
            return Some((
                i,
                format!(
                    "a {} event where the stored event {} is a {}",
                    event.kind,
                    i + 1,
                    kept.kind
                ),
            ));
        }
        if event.payload != kept.payload {
            return Some((
                i,
                format!(
                    "the {} event differs from the stored event {}",
                    event.kind,
                    i + 1
                ),
            ));
        }
    }
    (held.len() > file.len()).then(|| {
        (
            file.len().saturating_sub(1),
            format!(
                "the stored session holds {} more event(s) after this last one",
                held.len() - file.len()
            ),
        )
    })
}

/// How many recent turns' memories the model view sends unless told otherwise.
pub const DEFAULT_RECENT_MEMORIES: usize = 10;

/// How many recent turns `turns_compact` keeps as they are unless told otherwise.
pub const DEFAULT_KEEP_LAST: usize = 2;

/// Where a session's events are: the store, or a JSON-lines log file.
enum Source<'a> {
    /// A stored session.
    Stored(SessionId),
    /// A log file: this library's JSON lines.
    Log(&'a std::path::Path),
}

/// The session `session` or the log `log` names: exactly one of them.
fn source<'a>(session: Option<&str>, log: Option<&'a str>) -> Result<Source<'a>> {
    match (session, log) {
        // The store's own errors name an invalid session id; they stay as they are.
        (Some(id), None) => Ok(Source::Stored(SessionId::new(id)?)),
        (None, Some(path)) => Ok(Source::Log(std::path::Path::new(path))),
        (Some(_), Some(_)) => Err(Error::invalid(
            "log",
            "give a session or a log, not both".to_owned(),
        )),
        (None, None) => Err(Error::invalid(
            "session",
            "give a session or a log".to_owned(),
        )),
    }
}

/// Every event of the session at `source`, and what was skipped reading it. A stored
/// session's errors name the database; a log's name the file.
fn load(env: &Env<'_>, source: &Source<'_>) -> Result<Loaded> {
    match source {
        Source::Stored(id) => StoreLog::new(env.store, id.clone())
            .load()
            .with_context(|| env.store.location()),
        // The command line and the language packages read the whole log, as the crate reads
        // it; a server's clients read only a file inside the folders it allows, at most
        // `files::MAX_FILE_BYTES`.
        Source::Log(path) => match &env.files {
            crate::files::FileAccess::Any => Ok(JsonlLog::read(path)?),
            confined => {
                let text = crate::files::read_text(path, confined)?;
                Ok(JsonlLog::parse(text.as_bytes(), path)?)
            }
        },
    }
}

/// A session to show: a stored one or a log file, in the view and format asked for.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryInput {
    /// A stored session (give it or `log`).
    #[serde(default)]
    pub session: Option<String>,
    /// A session log file of this library's JSON lines, instead of a stored session (for a
    /// server's clients, only inside the folders it allows).
    #[serde(default)]
    pub log: Option<String>,
    /// `ui` (what the user sees, the default) or `model` (what the model is sent); a
    /// `provider` implies `model`.
    #[serde(default)]
    pub view: Option<HistoryView>,
    /// Render the model view as this provider's request instead of the neutral items.
    #[serde(default)]
    pub provider: Option<Provider>,
    /// Send the memories (files changed, failed commands) of the last this many turns
    /// (default 10).
    #[serde(default)]
    pub recent_memories: Option<usize>,
    /// How turn memories reach the model: `text` (a `Tool memory:` block, the default),
    /// `native` (changed files and failed commands replayed as tool calls) or `positional`
    /// (every call replayed at its place in the text, as Keen Code does).
    #[serde(default)]
    pub memory_style: Option<MemoryStyleInput>,
    /// The system prompt sent first (or apart, where the provider wants it apart).
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Mark interrupted turns to the model with "[Response interrupted by user]".
    #[serde(default)]
    pub mark_interrupted: bool,
    /// End the system prompt with the persistent memory as Keen Code does (`# Memory`, the
    /// global memory, then this project's).
    #[serde(default)]
    pub memory: Option<PromptMemory>,
}

/// Which persistent memories the system prompt ends with.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptMemory {
    /// The project whose memory follows the global one (the notes scope it is kept in).
    #[serde(default)]
    pub project: Option<String>,
}

/// Which view of a session's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HistoryView {
    /// What the user sees: the text, never a turn memory.
    Ui,
    /// What the model is sent: recent turn memories and kept tool calls included.
    Model,
}

/// How turn memories reach the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryStyleInput {
    /// A `Tool memory:` block after the turn's text.
    #[default]
    Text,
    /// Changed files and failed commands replayed as tool calls before the turn's text.
    Native,
    /// Every tool call replayed at its place in the text, as Keen Code does.
    Positional,
}

/// A session's history as the user sees it or as a model is sent it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(tag = "view", rename_all = "snake_case")]
pub enum HistoryOutput {
    /// What the user sees, message by message.
    Ui {
        /// The session.
        session: String,
        /// The messages, oldest first.
        messages: Vec<UiMessage>,
        /// Who appended the stored session's events, one entry per writer.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        writers: Vec<SessionWriter>,
        /// What was skipped reading a log file (a torn last line), one sentence each.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    },
    /// What the model is sent, item by item: the system prompt first, when there is one.
    Model {
        /// The session.
        session: String,
        /// The items, oldest first.
        items: Vec<ModelMessage>,
        /// Who appended the stored session's events, one entry per writer.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        writers: Vec<SessionWriter>,
        /// What was skipped reading a log file (a torn last line), one sentence each.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    },
    /// What the model is sent, as the provider's request.
    Provider {
        /// The session.
        session: String,
        /// The provider.
        provider: Provider,
        /// The payload in the provider's own format, as it is sent.
        #[schemars(schema_with = "crate::portable::array_or_object")]
        request: ProviderRequest,
        /// What was skipped reading a log file (a torn last line), one sentence each.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    },
}

impl HistoryOutput {
    /// The session shown.
    pub fn session(&self) -> &str {
        match self {
            HistoryOutput::Ui { session, .. }
            | HistoryOutput::Model { session, .. }
            | HistoryOutput::Provider { session, .. } => session,
        }
    }

    /// What was skipped reading a log file.
    pub fn warnings(&self) -> &[String] {
        match self {
            HistoryOutput::Ui { warnings, .. }
            | HistoryOutput::Model { warnings, .. }
            | HistoryOutput::Provider { warnings, .. } => warnings,
        }
    }
}

/// The events of a stored session one writer appended (the same source, session and
/// client).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SessionWriter {
    /// Who appended them; `at` is when the last of them was appended.
    pub written_by: crate::evidence::ProvenanceOutput,
    /// How many events.
    pub events: u64,
    /// The position of the first (0: `session_started`).
    pub first: u64,
    /// The position of the last.
    pub last: u64,
}

/// The writers of a session's events, `writers` one per event in order, in the order each
/// first appended; events without a writer are in none.
pub(crate) fn session_writers(
    writers: &[Option<agent_memory_core::Provenance>],
) -> Vec<SessionWriter> {
    // Per writer: its first and last positions, its count, and its latest provenance
    // (positions grow with time, so the last event's time is its last append's).
    let mut found: Vec<(u64, u64, u64, &agent_memory_core::Provenance)> = Vec::new();
    for (position, writer) in writers.iter().enumerate() {
        let Some(by) = writer else { continue };
        let position = position as u64;
        let same = |known: &agent_memory_core::Provenance| {
            (&known.source, &known.session, &known.client) == (&by.source, &by.session, &by.client)
        };
        match found.iter_mut().find(|(.., known)| same(known)) {
            Some((_, last, events, latest)) => {
                *last = position;
                *events += 1;
                *latest = by;
            }
            None => found.push((position, position, 1, by)),
        }
    }
    found
        .into_iter()
        .map(|(first, last, events, latest)| SessionWriter {
            written_by: latest.into(),
            events,
            first,
            last,
        })
        .collect()
}

/// A provider's request for a session's model view, rendered when it is written: as JSON it
/// is the provider's own payload, its keys in the order the provider documents them (a
/// `Value` would sort them).
#[derive(Debug, Clone)]
pub struct ProviderRequest {
    // Boxed: a history and a policy are large beside the other views' outputs.
    history: Box<History>,
    policy: Box<ContextPolicy>,
    provider: Provider,
    /// The store's screen policy: under `quarantine` a flagged tool output is withheld.
    screen: ScreenPolicy,
    /// The calls whose outputs a person approved.
    approved: std::collections::HashSet<String>,
}

impl Serialize for ProviderRequest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (model, _) = self
            .history
            .model_view(&self.policy)
            .guarded(self.screen, false, &|id| self.approved.contains(id));
        match self.provider {
            Provider::OpenaiChat => render::openai_chat(&model).serialize(serializer),
            Provider::OpenaiResponses => render::openai_responses(&model).serialize(serializer),
            Provider::Genkit => render::genkit(&model).serialize(serializer),
            Provider::Anthropic => render::anthropic(&model).serialize(serializer),
            Provider::Gemini => render::gemini(&model).serialize(serializer),
        }
    }
}

/// Who speaks in the user's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    /// The user.
    User,
    /// The assistant.
    Assistant,
    /// The summary of compacted entries.
    Summary,
}

impl Speaker {
    /// Its word: `user`, `assistant` or `summary`.
    pub fn as_str(self) -> &'static str {
        match self {
            Speaker::User => "user",
            Speaker::Assistant => "assistant",
            Speaker::Summary => "summary",
        }
    }
}

/// A message of the user's view.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UiMessage {
    /// Who speaks.
    pub role: Speaker,
    /// The text, exactly as recorded.
    pub text: String,
    /// Whether the turn was interrupted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// An item of the model's view: its role first, then its fields.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ModelMessage {
    /// The system prompt.
    System {
        /// Its text.
        text: String,
    },
    /// A user message (also the summary of a compaction).
    User {
        /// Its text.
        text: String,
    },
    /// Assistant text.
    Assistant {
        /// Its text.
        text: String,
    },
    /// A tool call the assistant made.
    ToolCall {
        /// The call id.
        id: String,
        /// The tool.
        name: String,
        /// Its arguments.
        #[schemars(schema_with = "crate::portable::json_object")]
        input: Value,
    },
    /// The result of the tool call with the same id.
    ToolResult {
        /// The call id.
        id: String,
        /// The tool.
        name: String,
        /// What it returned, maybe truncated or hidden.
        output: String,
        /// Whether the tool reported an error.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

impl From<&agent_memory_turns::ModelItem<'_>> for ModelMessage {
    fn from(item: &agent_memory_turns::ModelItem<'_>) -> Self {
        use agent_memory_turns::ModelItem as M;
        match item {
            M::User(text) => ModelMessage::User {
                text: text.to_string(),
            },
            M::Assistant(text) => ModelMessage::Assistant {
                text: text.to_string(),
            },
            M::ToolCall { id, name, input } => ModelMessage::ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                input: input.clone().into_owned(),
            },
            M::ToolResult {
                id,
                name,
                output,
                is_error,
            } => ModelMessage::ToolResult {
                id: id.to_string(),
                name: name.to_string(),
                output: output.to_string(),
                is_error: *is_error,
            },
        }
    }
}

/// A session as the user sees it or as a model is sent it: a stored session or a log file.
pub fn history(env: &Env<'_>, input: HistoryInput) -> Result<HistoryOutput> {
    let view = match (input.view, input.provider) {
        (Some(HistoryView::Ui), Some(_)) => {
            return Err(Error::invalid(
                "provider",
                "a provider renders the model view; drop view ui".to_owned(),
            ));
        }
        (Some(view), None) => view,
        (None, None) => HistoryView::Ui,
        (_, Some(_)) => HistoryView::Model,
    };
    let source = source(input.session.as_deref(), input.log.as_deref())?;
    let loaded = load(env, &source)?;
    let writers = session_writers(&loaded.writers);
    let history = match &source {
        // A stored session's errors name it already.
        Source::Stored(id) => History::replay_of(id, loaded.events)?,
        Source::Log(path) => History::replay(loaded.events)
            .with_context(|| format!("session log {}", path.display()))?,
    };
    let session = history.session().as_str().to_owned();
    let warnings = loaded.warnings.iter().map(ToString::to_string).collect();
    if view == HistoryView::Ui {
        let messages = history
            .ui_view()
            .map(|m| UiMessage {
                role: match m.role {
                    UiRole::User => Speaker::User,
                    UiRole::Assistant => Speaker::Assistant,
                    UiRole::Summary => Speaker::Summary,
                },
                text: m.text.to_owned(),
                interrupted: m.interrupted,
            })
            .collect();
        return Ok(HistoryOutput::Ui {
            session,
            messages,
            writers,
            warnings,
        });
    }
    let style = match input.memory_style.unwrap_or_default() {
        MemoryStyleInput::Text => MemoryStyle::Text,
        MemoryStyleInput::Native => MemoryStyle::native(),
        MemoryStyleInput::Positional => MemoryStyle::Positional,
    };
    let mut policy = ContextPolicy::default()
        .with_recent_memories(input.recent_memories.unwrap_or(DEFAULT_RECENT_MEMORIES))
        .with_memory_style(style)
        .with_interrupted_marker(
            input
                .mark_interrupted
                .then(|| INTERRUPTED_MARKER.to_owned()),
        );
    if let Some(prompt) = &input.system_prompt {
        policy = policy.with_system_prompt(prompt.as_str());
    }
    if let Some(memory) = &input.memory {
        policy = policy.with_persistent_memory(crate::persistent::prompt_memory(
            env,
            memory.project.as_deref(),
        )?);
    }
    // A stored session's tool outputs are read through the store's screen policy, as
    // `turns_view` reads them; a log file is the caller's own and is shown as it is.
    let (screen, approved) = match &source {
        Source::Stored(id) => match crate::evidence::policy(env)? {
            // Approvals change only what is withheld.
            ScreenPolicy::Quarantine => (
                ScreenPolicy::Quarantine,
                crate::review::approved_calls(env, id, &history)?,
            ),
            other => (other, std::collections::HashSet::new()),
        },
        Source::Log(_) => (ScreenPolicy::Off, std::collections::HashSet::new()),
    };
    if let Some(provider) = input.provider {
        return Ok(HistoryOutput::Provider {
            session,
            provider,
            request: ProviderRequest {
                history: Box::new(history),
                policy: Box::new(policy),
                provider,
                screen,
                approved,
            },
            warnings,
        });
    }
    let (model, _) = history
        .model_view(&policy)
        .guarded(screen, false, &|id| approved.contains(id));
    let system = model.system.as_deref().map(|text| ModelMessage::System {
        text: text.to_owned(),
    });
    let items = system
        .into_iter()
        .chain(model.items.iter().map(ModelMessage::from))
        .collect();
    Ok(HistoryOutput::Model {
        session,
        items,
        writers,
        warnings,
    })
}

/// A session to compact: all but its last turns replaced by a summary.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactInput {
    /// A stored session (give it or `log`).
    #[serde(default)]
    pub session: Option<String>,
    /// A session log file of this library's JSON lines, compacted in place, instead of a
    /// stored session (a server's clients may not name one).
    #[serde(default)]
    pub log: Option<String>,
    /// The summary that replaces the compacted entries (trimmed; not blank).
    pub summary: String,
    /// How many recent turns to keep as they are (default 2).
    #[serde(default)]
    pub keep_last: Option<usize>,
}

/// What a compaction did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CompactOutput {
    /// The session.
    pub session: String,
    /// Entries folded into the summary.
    pub compacted_entries: usize,
    /// Entries kept after it.
    pub kept_entries: usize,
    /// What the compacted turns retained (files changed, failed and dangerous commands).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub memory: Option<TurnMemory>,
    /// What was skipped or repaired reading the log (a torn last line), one sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The memory kept with a summary as the model reads it: the `Tool memory:` block.
pub fn memory_text(memory: &TurnMemory) -> String {
    agent_memory_turns::memory_block(memory, agent_memory_turns::DEFAULT_MAX_FILES_LISTED)
}

/// Replaces all but the last turns of a session by a summary, keeping their memories, in one
/// write: the `compaction_applied` event appended to the stored session, or to the log file
/// (whose torn last line is repaired first).
pub fn compact(env: &Env<'_>, input: CompactInput) -> Result<CompactOutput> {
    let keep_last = input.keep_last.unwrap_or(DEFAULT_KEEP_LAST);
    match source(input.session.as_deref(), input.log.as_deref())? {
        Source::Stored(id) => compact_log(StoreLog::new(env.store, id), &input.summary, keep_last)
            .with_context(|| env.store.location()),
        Source::Log(path) => {
            crate::files::may_write(path, &env.files)?;
            compact_log(JsonlLog::at(path), &input.summary, keep_last)
        }
    }
}

fn compact_log<L: EventLog>(log: L, summary: &str, keep_last: usize) -> Result<CompactOutput> {
    let (mut session, warnings) = Session::resume(log)?;
    session.compact(summary, keep_last)?;
    let history = session.history();
    let (compacted_entries, memory) = match history.entries().first() {
        Some(Entry::Compaction { compaction, .. }) => {
            (compaction.compacted_entries, compaction.memory.clone())
        }
        _ => {
            return Err(Error::new(
                ErrorKind::Other,
                format!("the compaction of {} was not applied", history.session()),
            ));
        }
    };
    Ok(CompactOutput {
        session: history.session().as_str().to_owned(),
        compacted_entries,
        kept_entries: history.entries().len() - 1,
        memory,
        warnings: warnings.iter().map(ToString::to_string).collect(),
    })
}

/// A session's tool-history setting to read, or to set.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolHistoryInput {
    /// The stored session.
    pub session: String,
    /// The new setting for the turns that start after it: `full` (tool outputs kept, bounded)
    /// or `none`; absent, the setting is only read.
    #[serde(default)]
    #[schemars(schema_with = "tool_history_mode")]
    pub mode: Option<String>,
}

/// The schema of a tool-history mode: `full` or `none` (read by [`ToolHistory`]'s own
/// parser, whose refusal names the mode given).
fn tool_history_mode(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": ["full", "none"]})
}

/// Sets a session's tool-history setting (a `tool_history` event appended, as `turns_append`
/// appends it) when a mode is given, then answers as `turns_view` does for OpenAI Chat, with
/// the setting.
pub fn tool_history(env: &Env<'_>, input: ToolHistoryInput) -> Result<ViewOutput> {
    if let Some(mode) = &input.mode {
        let mode: ToolHistory = mode
            .parse()
            .map_err(|reason: String| Error::invalid("mode", reason))?;
        let mut event = Map::new();
        event.insert("type".to_owned(), Value::from("tool_history"));
        event.insert("mode".to_owned(), Value::from(mode.as_str()));
        append(
            env,
            AppendInput {
                session: input.session.clone(),
                start: None,
                events: vec![event],
                source: None,
            },
        )?;
    }
    view(
        env,
        ViewInput {
            session: input.session,
            provider: Provider::OpenaiChat,
            recent_memories: None,
            compress_outputs: None,
            context_window: None,
            as_data: false,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::env_on;
    use serde_json::json;

    fn events(values: &[Value]) -> Vec<Map<String, Value>> {
        values
            .iter()
            .map(|v| v.as_object().expect("object").clone())
            .collect()
    }

    fn opening() -> Vec<Value> {
        vec![
            json!({"type": "session_started", "session": "s1", "started_at": 1_767_225_600_000_i64}),
            json!({"type": "user_message", "text": "fix the tests"}),
            json!({"type": "assistant_turn", "text": "Fixed.", "memory": {"files_changed": ["src/a.rs"]}}),
        ]
    }

    fn append_at(env: &Env<'_>, start: Option<u64>, values: &[Value]) -> Result<AppendOutput> {
        append(
            env,
            AppendInput {
                session: "s1".to_owned(),
                start,
                events: events(values),
                source: None,
            },
        )
    }

    #[test]
    fn appending_again_is_a_no_op_and_a_gap_or_conflict_names_the_position() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        let first = append_at(&env, None, &opening()).expect("append");
        assert_eq!(
            (first.appended, first.already_stored, first.events),
            (3, 0, 3)
        );
        let again = append_at(&env, Some(0), &opening()).expect("retry");
        assert_eq!(
            (again.appended, again.already_stored, again.events),
            (0, 3, 3)
        );
        let next = json!({"type": "user_message", "text": "thanks"});
        let overlapping = [opening()[2].clone(), next.clone()];
        let more = append_at(&env, Some(2), &overlapping).expect("overlap");
        assert_eq!((more.appended, more.already_stored, more.events), (1, 1, 4));
        let gap = append_at(&env, Some(6), std::slice::from_ref(&next)).expect_err("gap");
        assert_eq!(
            gap.to_string(),
            "event at position 6 leaves a gap: session \"s1\" holds 4 event(s), so the next position is 4"
        );
        let other = json!({"type": "user_message", "text": "something else"});
        let conflicting = append_at(&env, Some(3), &[other]).expect_err("conflict");
        assert_eq!(
            conflicting.to_string(),
            "event at position 3 conflicts with the user_message event stored there in session \"s1\""
        );
        assert_eq!(
            store
                .session_load(&session_id("s1").expect("id"))
                .expect("load")
                .len(),
            4
        );
    }

    /// An event that does not fit names the place inside it where its kind's fields are a
    /// type of their own, and the event where they are not; nothing is appended.
    #[test]
    fn an_event_that_does_not_fit_names_the_place_in_it() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        let failure = |event: Value| {
            let mut values = opening();
            values.push(event);
            let error = append_at(&env, None, &values).expect_err("a misfit");
            (
                error.input().expect("input").to_owned(),
                error.message().to_owned(),
            )
        };
        let (place, message) = failure(json!({"type": "assistant_turn", "text": "Ran it.",
            "tool_calls": [{"id": "c1", "tool": 7, "input": {}, "output": ""}]}));
        assert_eq!(place, "events[3].tool_calls[0].tool");
        assert!(
            message
                .starts_with("event at position 3: tool_calls[0].tool: invalid type: integer `7`"),
            "{message}"
        );
        let (place, message) = failure(json!({"type": "compaction_applied", "summary": "s",
            "compacted_entries": "two"}));
        assert_eq!(place, "events[3].compacted_entries");
        assert!(
            message.contains(": compacted_entries: invalid type"),
            "{message}"
        );
        let (place, message) = failure(json!({"type": "user_message", "text": 3}));
        assert_eq!(place, "events[3].text");
        assert!(
            message.starts_with("event at position 3: text: invalid type: integer `3`"),
            "{message}"
        );
        let (place, _) = failure(json!({"type": "tool_history", "mode": "some"}));
        assert_eq!(place, "events[3].mode");
        let (place, _) = failure(json!({"type": "session_started", "session": "s1",
            "started_at": "noon"}));
        assert_eq!(place, "events[3].started_at");
        // A missing field names the event; the message names the field.
        let (place, message) = failure(json!({"type": "user_message"}));
        assert_eq!(place, "events[3]");
        assert!(message.contains("missing field `text`"), "{message}");
        assert!(matches!(
            store.session_load(&session_id("s1").expect("id")),
            Err(agent_memory_core::Error::NotFound { .. })
        ));
    }

    #[test]
    fn the_inline_fields_checked_are_the_fields_of_those_events() {
        let events = [
            SessionEvent::SessionStarted {
                session: "s1".into(),
                started_at: 1_767_225_600_000,
            },
            SessionEvent::UserMessage { text: "hi".into() },
            SessionEvent::ToolHistorySet {
                mode: ToolHistory::Full,
            },
        ];
        assert_eq!(events.len(), INLINE_FIELDS.len());
        for event in events {
            let Value::Object(mut written) = serde_json::to_value(&event).expect("encode") else {
                panic!("{event:?} is not written as an object");
            };
            written.remove("type");
            let (_, checks) = INLINE_FIELDS
                .iter()
                .find(|(kind, _)| *kind == event.kind())
                .expect("the kind is listed");
            let listed: Vec<&str> = checks.iter().map(|(name, _)| *name).collect();
            let mut fields: Vec<&str> = written.keys().map(String::as_str).collect();
            fields.sort_unstable();
            let mut sorted = listed.clone();
            sorted.sort_unstable();
            assert_eq!(fields, sorted, "{}", event.kind());
            for (name, fits) in *checks {
                assert!(fits(&written[*name]), "{}.{name}", event.kind());
                assert!(!fits(&json!([])), "{}.{name} takes anything", event.kind());
            }
        }
    }

    #[test]
    fn a_log_that_does_not_form_a_session_is_refused_whole() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        let headless = append_at(&env, None, &opening()[1..]).expect_err("no session_started");
        assert_eq!(
            headless.to_string(),
            "session \"s1\" is inconsistent at event 0: log begins with user_message instead of session_started"
        );
        let mut foreign = opening();
        foreign[0] = json!({"type": "session_started", "session": "s2", "started_at": 0});
        let error = append_at(&env, None, &foreign).expect_err("another session");
        assert_eq!(
            error.to_string(),
            "event at position 0 starts session \"s2\", not \"s1\""
        );
        let unknown = append_at(&env, None, &[json!({"type": "shout"})]).expect_err("bad event");
        assert!(
            unknown.to_string().starts_with("event at position 0: "),
            "{unknown}"
        );
        assert!(store.session_list().expect("list").is_empty());
    }

    #[test]
    fn the_view_reports_the_setting_the_breakdown_and_the_compaction_answer() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        let read = json!({"text_offset": 0, "tool": "read_file", "status": "success",
            "retained_output": {"content": "x".repeat(900), "bytes_read": 900}});
        let mut events = opening();
        events.extend([
            json!({"type": "tool_history", "mode": "full"}),
            json!({"type": "user_message", "text": "read it"}),
            json!({"type": "assistant_turn", "text": "Read.", "tool_activity": [read],
                "tool_calls": [{"id": "c1", "tool": "read_file", "input": {},
                    "output": json!({"content": "y".repeat(900), "bytes_read": 900, "lines_read": 1}).to_string()}]}),
        ]);
        append_at(&env, None, &events).expect("append");
        let input = |window, compress| ViewInput {
            session: "s1".to_owned(),
            provider: Provider::OpenaiChat,
            recent_memories: None,
            compress_outputs: Some(compress),
            context_window: window,
            as_data: false,
        };
        let plain = view(&env, input(None, false)).expect("view");
        assert_eq!(plain.tool_history, "full");
        assert!(plain.compaction.is_none());
        let b = &plain.breakdown;
        assert_eq!(
            b.total_estimated,
            b.system_prompt_tokens
                + b.user_message_tokens
                + b.assistant_tokens
                + b.tool_result_tokens
        );
        let compressed = view(&env, input(None, true)).expect("view");
        assert!(compressed.breakdown.tool_result_tokens < b.tool_result_tokens);
        // (context window, action, reason)
        for (window, action, reason) in [
            (200_000, "continue", "under_threshold"),
            (4_400, "summarise", "threshold"),
        ] {
            let answer = view(&env, input(Some(window), false))
                .expect("view")
                .compaction
                .expect("an answer");
            assert_eq!(
                (answer.action.as_str(), answer.reason.as_str()),
                (action, reason)
            );
            assert_eq!(answer.last_user_message.is_some(), action == "summarise");
        }
    }

    #[test]
    fn the_model_view_is_rendered_for_each_provider() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        append_at(&env, None, &opening()).expect("append");
        for (provider, first_role) in [
            (Provider::OpenaiChat, "user"),
            (Provider::OpenaiResponses, "user"),
            (Provider::Genkit, "user"),
        ] {
            let viewed = view(
                &env,
                ViewInput {
                    session: "s1".to_owned(),
                    provider,
                    recent_memories: None,
                    compress_outputs: None,
                    context_window: None,
                    as_data: false,
                },
            )
            .expect("view");
            assert_eq!(viewed.turns, 1);
            assert_eq!(viewed.messages[0]["role"], first_role, "{provider:?}");
            assert!(
                viewed.messages.to_string().contains("src/a.rs"),
                "{provider:?}"
            );
        }
        let missing = view(
            &env,
            ViewInput {
                session: "nobody".to_owned(),
                provider: Provider::Genkit,
                recent_memories: None,
                compress_outputs: None,
                context_window: None,
                as_data: false,
            },
        )
        .expect_err("no such session");
        assert_eq!(missing.to_string(), "session \"nobody\" has no events");
    }
}
