//! `agent-memory turns ...`: a coding session's history as the user sees it or as a model is
//! sent it (`show`), compaction that keeps the turns' memories (`compact`), and JSONL session
//! logs, ours or Keen Code's, copied into the database (`import`).

use std::path::PathBuf;

use agent_memory_core::SessionId;
use agent_memory_turns::{
    ContextPolicy, EventLog, History, INTERRUPTED_MARKER, JsonlLog, MemoryStyle, ModelItem,
    SessionEvent, StoreLog, UiRole, render,
};
use anyhow::{Context, Result, bail};
use schemars::{JsonSchema, Schema};
use serde::Serialize;
use serde_json::Value;

use crate::output::{Table, print_json};
use crate::{GlobalArgs, database, progress::Progress};

/// `turns` and its subcommands.
#[derive(Debug, clap::Args)]
pub(crate) struct TurnsArgs {
    #[command(subcommand)]
    command: TurnsCommand,
}

#[derive(Debug, clap::Subcommand)]
enum TurnsCommand {
    /// Show a session as the user sees it, or as the model is sent it.
    Show(ShowArgs),
    /// Replace all but the last turns by a summary, keeping their memories.
    Compact(CompactArgs),
    /// Copy a JSONL session log (ours or Keen Code's) into the database.
    ///
    /// One transaction. A session already stored with the same events is left as it is
    /// (and reported as already imported); one stored with other events is refused, naming
    /// the file's first differing line.
    Import(ImportArgs),
    /// Append session events as they happen (JSON lines, `--file PATH` or `-` for stdin);
    /// an event already stored at its position is skipped, a conflicting one refused.
    Append(AppendArgs),
    /// Every session the database holds, with its number of events.
    Sessions,
    /// The session's tool-history setting, the model view's tokens per part and, with
    /// `--context-window`, whether to compact now (Keen Code's automatic compaction rules).
    Context(ContextArgs),
    /// Show the session's tool-history setting, or set it (`full` or `none`) for the turns
    /// that start after it.
    ToolHistory(ToolHistoryArgs),
}

#[derive(Debug, clap::Args)]
struct ContextArgs {
    /// The session in the database.
    #[arg(value_name = "SESSION")]
    session: String,
    /// The model's context window in tokens.
    #[arg(long, value_name = "TOKENS")]
    context_window: Option<usize>,
    /// Count tool outputs compressed as Keen Code compresses them.
    #[arg(long)]
    compress: bool,
}

#[derive(Debug, clap::Args)]
struct ToolHistoryArgs {
    /// The session in the database.
    #[arg(value_name = "SESSION")]
    session: String,
    /// The new setting; absent, the current one is shown.
    #[arg(value_name = "full|none")]
    mode: Option<String>,
}

#[derive(Debug, clap::Args)]
struct AppendArgs {
    /// The session to append to.
    #[arg(long)]
    session: String,
    /// The position of the first event in the session's log (0: its `session_started`);
    /// default: after the last stored event.
    #[arg(long, value_name = "N")]
    start: Option<u64>,
    /// The events as JSON lines (or one JSON array): a file, or `-` for standard input.
    #[arg(long, value_name = "PATH")]
    file: PathBuf,
}

/// Where the session's events are: the database or a JSONL file.
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
struct SessionSource {
    /// A session in the database.
    #[arg(value_name = "SESSION")]
    session: Option<String>,
    /// A JSONL session log instead of the database.
    #[arg(long, value_name = "FILE.jsonl")]
    log: Option<PathBuf>,
}

/// Which view of the history to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum View {
    /// What the user sees: the text, never a turn memory.
    Ui,
    /// What the model is sent: recent turn memories and kept tool calls included.
    Model,
}

/// How to print the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// Readable text.
    Text,
    /// OpenAI Chat Completions `messages` (model view).
    Openai,
    /// OpenAI Responses `input` items (model view).
    Responses,
    /// Genkit `messages` (model view).
    Genkit,
    /// An Anthropic Messages request: `system` and `messages` (model view).
    Anthropic,
    /// A Gemini request: `systemInstruction` and `contents` (model view).
    Gemini,
}

/// How turn memories reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Style {
    /// A `Tool memory:` block after the turn's text.
    Text,
    /// Changed files and failed commands replayed as tool calls before the turn's text.
    Native,
    /// Every tool call replayed at its place in the text, as Keen Code does.
    Positional,
}

/// Where a log to import comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Source {
    /// This tool's own event log.
    AgentMemory,
    /// A Keen Code session log (`transcript_events.jsonl`), old or current format.
    Keen,
}

#[derive(Debug, clap::Args)]
struct ShowArgs {
    #[command(flatten)]
    source: SessionSource,
    /// The view; provider formats always show the model view.
    #[arg(long, value_enum)]
    view: Option<View>,
    /// The output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Send the memories of the last this many turns.
    #[arg(long, default_value_t = ContextPolicy::default().recent_memories, value_name = "N")]
    recent_memories: usize,
    /// How turn memories reach the model.
    #[arg(long, value_enum, default_value = "text")]
    style: Style,
    /// The system prompt to send first (or apart, where the provider wants it apart).
    #[arg(long, value_name = "TEXT")]
    system_prompt: Option<String>,
    /// Mark interrupted turns to the model with "[Response interrupted by user]".
    #[arg(long)]
    mark_interrupted: bool,
}

#[derive(Debug, clap::Args)]
struct CompactArgs {
    #[command(flatten)]
    source: SessionSource,
    /// The summary that replaces the compacted entries.
    #[arg(long)]
    summary: String,
    /// How many recent turns to keep as they are.
    #[arg(long, default_value_t = 2, value_name = "N")]
    keep_last: usize,
}

#[derive(Debug, clap::Args)]
struct ImportArgs {
    /// The JSONL session log; the session's id is the one it starts with.
    #[arg(value_name = "FILE.jsonl")]
    log: PathBuf,
    /// The log's format.
    #[arg(long = "from", value_enum, default_value = "agent-memory")]
    source: Source,
}

pub(crate) fn run(args: TurnsArgs, global: &GlobalArgs) -> Result<()> {
    match args.command {
        TurnsCommand::Show(args) => show(&args, global),
        TurnsCommand::Compact(args) => compact(&args, global),
        TurnsCommand::Import(args) => import(&args, global),
        TurnsCommand::Append(args) => append(&args, global),
        TurnsCommand::Sessions => sessions(global),
        TurnsCommand::Context(args) => context(&args, global),
        TurnsCommand::ToolHistory(args) => tool_history(&args, global),
    }
}

/// The contract's `turns_view` of a stored session, for the reports below.
fn report(
    store: &database::Store,
    global: &GlobalArgs,
    session: &str,
    compress: bool,
    context_window: Option<usize>,
) -> Result<crate::ops::turns::ViewOutput> {
    Ok(crate::ops::turns::view(
        &global.env(store),
        crate::ops::turns::ViewInput {
            session: session.to_owned(),
            provider: crate::ops::turns::Provider::OpenaiChat,
            recent_memories: None,
            compress_outputs: Some(compress),
            context_window,
        },
    )?)
}

/// `turns context`: the setting, the breakdown and the compaction answer of `turns_view`.
fn context(args: &ContextArgs, global: &GlobalArgs) -> Result<()> {
    let store = database::open_existing(&global.db)?;
    let viewed = report(
        &store,
        global,
        &args.session,
        args.compress,
        args.context_window,
    )?;
    if global.json {
        return print_json(&viewed);
    }
    let b = &viewed.breakdown;
    println!(
        "session {}: tool history {}",
        viewed.session, viewed.tool_history
    );
    let mut table = Table::new(["part", "tokens"]);
    for (part, tokens) in [
        ("system prompt", b.system_prompt_tokens),
        ("user messages", b.user_message_tokens),
        ("assistant", b.assistant_tokens),
        ("tool calls and results", b.tool_result_tokens),
        ("total", b.total_estimated),
    ] {
        table.row([part.to_owned(), tokens.to_string()]);
    }
    print!("{table}");
    if let Some(c) = &viewed.compaction {
        println!(
            "compaction: {} ({}); {} of {} tokens, threshold {}, {} old tool result(s) to replace",
            c.action,
            c.reason,
            c.estimated_tokens,
            c.input_budget,
            c.threshold,
            c.removed_tool_results
        );
    }
    Ok(())
}

/// `turns tool-history`: the setting, after appending a `tool_history` event through the
/// contract's `turns_append` when a mode is given.
fn tool_history(args: &ToolHistoryArgs, global: &GlobalArgs) -> Result<()> {
    let mode = args
        .mode
        .as_deref()
        .map(str::parse::<agent_memory_turns::ToolHistory>)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let store = match mode {
        Some(_) => database::open(&global.db)?,
        None => database::open_existing(&global.db)?,
    };
    if let Some(mode) = mode {
        let mut event = serde_json::Map::new();
        event.insert("type".to_owned(), Value::from("tool_history"));
        event.insert("mode".to_owned(), Value::from(mode.as_str()));
        crate::ops::turns::append(
            &global.env(&store),
            crate::ops::turns::AppendInput {
                session: args.session.clone(),
                start: None,
                events: vec![event],
            },
        )?;
    }
    let viewed = report(&store, global, &args.session, false, None)?;
    if global.json {
        return print_json(&viewed);
    }
    println!("{}", viewed.tool_history);
    Ok(())
}

/// `turns append`: the events of the file after the session's stored ones, in one write.
fn append(args: &AppendArgs, global: &GlobalArgs) -> Result<()> {
    let events: Vec<serde_json::Map<String, serde_json::Value>> = crate::input::lines(&args.file)?;
    let store = database::open(&global.db)?;
    let appended = crate::ops::turns::append(
        &global.env(&store),
        crate::ops::turns::AppendInput {
            session: args.session.clone(),
            start: args.start,
            events,
        },
    )?;
    if global.json {
        return print_json(&appended);
    }
    println!(
        "session {}: {} event(s) appended, {} already stored; {} in all",
        appended.session, appended.appended, appended.already_stored, appended.events
    );
    Ok(())
}

/// `turns sessions`: every session with its number of events.
fn sessions(global: &GlobalArgs) -> Result<()> {
    let store = database::open_existing(&global.db)?;
    let list = crate::ops::memory::list(&global.env(&store), Default::default())?;
    if global.json {
        return print_json(&list.turn_sessions);
    }
    let mut table = crate::output::Table::new(["session", "events"]);
    for s in &list.turn_sessions {
        table.row([s.session.clone(), s.events.to_string()]);
    }
    print!("{table}");
    Ok(())
}

/// Every event of the session, from the database or the file, warnings printed.
fn load_events(source: &SessionSource, global: &GlobalArgs) -> Result<Vec<SessionEvent>> {
    let loaded = match (&source.session, &source.log) {
        (_, Some(path)) => JsonlLog::read(path)?,
        (Some(id), None) => {
            let store = database::open_existing(&global.db)?;
            StoreLog::new(&store, SessionId::new(id.as_str())?)
                .load()
                .with_context(|| global.db.display().to_string())?
        }
        (None, None) => bail!("give a session or --log"),
    };
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    Ok(loaded.events)
}

/// The session's source, as errors name it.
fn source_name(source: &SessionSource) -> String {
    match (&source.session, &source.log) {
        (_, Some(path)) => format!("session log {}", path.display()),
        (Some(id), None) => format!("session {id:?}"),
        (None, None) => "no session".to_owned(),
    }
}

fn role_name(role: UiRole) -> &'static str {
    match role {
        UiRole::User => "user",
        UiRole::Assistant => "assistant",
        UiRole::Summary => "summary",
    }
}

/// `label: text`, continuation lines indented under the text.
fn labelled(label: &str, text: &str) -> String {
    let indent = " ".repeat(label.len() + 2);
    let mut out = format!("{label}: ");
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            out.push('\n');
            if !line.is_empty() {
                out.push_str(&indent);
            }
        }
        out.push_str(line);
    }
    out.push('\n');
    out
}

fn show(args: &ShowArgs, global: &GlobalArgs) -> Result<()> {
    let view = match (args.view, args.format) {
        (
            Some(View::Ui),
            Format::Openai
            | Format::Responses
            | Format::Genkit
            | Format::Anthropic
            | Format::Gemini,
        ) => {
            use clap::CommandFactory;
            let mut cli = crate::Cli::command();
            cli.build();
            let mut command = cli
                .find_subcommand_mut("turns")
                .and_then(|turns| turns.find_subcommand_mut("show"))
                .cloned()
                .unwrap_or(cli);
            command
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    "--format openai, responses, genkit, anthropic and gemini render the model view; drop --view ui",
                )
                .exit()
        }
        (Some(view), Format::Text) => view,
        (None, Format::Text) => View::Ui,
        (_, _) => View::Model,
    };
    let events = load_events(&args.source, global)?;
    let history = match (&args.source.session, &args.source.log) {
        // A stored session's errors name it already.
        (Some(id), None) => History::replay_of(&SessionId::new(id.as_str())?, events)?,
        _ => History::replay(events).with_context(|| source_name(&args.source))?,
    };
    if view == View::Ui {
        return show_ui(&history, global);
    }
    let style = match args.style {
        Style::Text => MemoryStyle::Text,
        Style::Native => MemoryStyle::native(),
        Style::Positional => MemoryStyle::Positional,
    };
    let mut policy = ContextPolicy::default()
        .with_recent_memories(args.recent_memories)
        .with_memory_style(style)
        .with_interrupted_marker(args.mark_interrupted.then(|| INTERRUPTED_MARKER.to_owned()));
    if let Some(prompt) = &args.system_prompt {
        policy = policy.with_system_prompt(prompt.as_str());
    }
    let model = history.model_view(&policy);
    // The provider's own JSON, as it is sent; with `--json`, inside the contract's document,
    // so every `--json` output has one schema.
    let session = history.session().as_str();
    match args.format {
        Format::Openai => return provider(global, session, "openai", render::openai_chat(&model)),
        Format::Responses => {
            return provider(
                global,
                session,
                "responses",
                render::openai_responses(&model),
            );
        }
        Format::Genkit => return provider(global, session, "genkit", render::genkit(&model)),
        Format::Anthropic => {
            return provider(global, session, "anthropic", render::anthropic(&model));
        }
        Format::Gemini => return provider(global, session, "gemini", render::gemini(&model)),
        Format::Text => {}
    }
    // Text: with `--json`, the items as the contract's rows.
    match global.json {
        true => {
            let system = model
                .system
                .as_deref()
                .map(|text| ModelRow::System { text });
            let items: Vec<ModelRow<'_>> = system
                .into_iter()
                .chain(model.items.iter().map(model_row))
                .collect();
            print_json(&ShownSession::<Value>::Model(items))
        }
        false => {
            if let Some(system) = model.system.as_deref() {
                print!("{}", labelled("system", system));
            }
            for item in &model.items {
                print!("{}", model_item_text(item));
            }
            Ok(())
        }
    }
}

/// `turns show --json`: the user's view (`--view ui`) or the model's (`--view model`); the
/// provider formats (`--format openai`, ...) print the provider's own JSON instead.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
#[schemars(bound = "")]
enum ShownSession<'a, R = Value> {
    /// What the user sees, message by message.
    Ui(Vec<UiRow<'a>>),
    /// What the model is sent, item by item.
    Model(Vec<ModelRow<'a>>),
    /// What the model is sent, in a provider's format (`--format openai`, ...).
    Provider(ProviderView<R>),
}

/// Prints a provider's request as it is sent; with `--json`, inside the contract's document,
/// so every `--json` output has one schema.
fn provider<R: Serialize>(
    global: &GlobalArgs,
    session: &str,
    format: &'static str,
    request: R,
) -> Result<()> {
    if !global.json {
        return print_json(&request);
    }
    print_json(&ShownSession::<R>::Provider(ProviderView {
        session: session.to_owned(),
        format,
        request,
    }))
}

/// `turns show --json --format <provider>`: the provider's payload and what it is.
#[derive(Serialize, JsonSchema)]
#[schemars(bound = "")]
struct ProviderView<R> {
    /// The session.
    session: String,
    /// The provider format: `openai`, `responses`, `genkit`, `anthropic` or `gemini`.
    format: &'static str,
    /// The payload in the provider's own format, as it is sent.
    #[schemars(schema_with = "agent_memory_contract::portable::array_or_object")]
    request: R,
}

/// A message of the user's view.
#[derive(Serialize, JsonSchema)]
struct UiRow<'a> {
    role: &'static str,
    text: &'a str,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    interrupted: bool,
}

fn show_ui(history: &History, global: &GlobalArgs) -> Result<()> {
    if global.json {
        let rows: Vec<UiRow<'_>> = history
            .ui_view()
            .map(|m| UiRow {
                role: role_name(m.role),
                text: m.text,
                interrupted: m.interrupted,
            })
            .collect();
        return print_json(&ShownSession::<Value>::Ui(rows));
    }
    for message in history.ui_view() {
        let label = if message.interrupted {
            format!("{} (interrupted)", role_name(message.role))
        } else {
            role_name(message.role).to_owned()
        };
        print!("{}", labelled(&label, message.text));
    }
    Ok(())
}

/// A model item with `--json`: its role first, then its fields.
#[derive(Serialize, JsonSchema)]
#[serde(tag = "role", rename_all = "snake_case")]
enum ModelRow<'a> {
    System {
        text: &'a str,
    },
    User {
        text: &'a str,
    },
    Assistant {
        text: &'a str,
    },
    ToolCall {
        id: &'a str,
        name: &'a str,
        #[schemars(schema_with = "agent_memory_contract::portable::json_object")]
        input: &'a Value,
    },
    ToolResult {
        id: &'a str,
        name: &'a str,
        output: &'a str,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

fn model_row<'a>(item: &'a ModelItem<'_>) -> ModelRow<'a> {
    match item {
        ModelItem::User(text) => ModelRow::User { text },
        ModelItem::Assistant(text) => ModelRow::Assistant { text },
        ModelItem::ToolCall { id, name, input } => ModelRow::ToolCall { id, name, input },
        ModelItem::ToolResult {
            id,
            name,
            output,
            is_error,
        } => ModelRow::ToolResult {
            id,
            name,
            output,
            is_error: *is_error,
        },
    }
}

fn model_item_text(item: &ModelItem<'_>) -> String {
    match item {
        ModelItem::User(text) => labelled("user", text),
        ModelItem::Assistant(text) => labelled("assistant", text),
        ModelItem::ToolCall { id, name, input } => {
            labelled(&format!("tool call {id}"), &format!("{name} {input}"))
        }
        ModelItem::ToolResult {
            id,
            name,
            output,
            is_error,
        } => {
            let error = if *is_error { ", error" } else { "" };
            labelled(&format!("tool result {id} ({name}{error})"), output)
        }
    }
}

/// `turns compact --json`.
#[derive(Serialize, JsonSchema)]
struct CompactReport {
    /// The session.
    session: String,
    /// Entries folded into the summary.
    compacted_entries: usize,
    /// Entries kept after it.
    kept_entries: usize,
    /// What the compacted turns retained (files changed, failed and dangerous commands).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    memory: Option<agent_memory_turns::TurnMemory>,
}

fn compact(args: &CompactArgs, global: &GlobalArgs) -> Result<()> {
    let report = match (&args.source.session, &args.source.log) {
        (_, Some(path)) => compact_log(JsonlLog::at(path), args)?,
        (Some(id), None) => {
            let store = database::open(&global.db)?;
            compact_log(StoreLog::new(&store, SessionId::new(id.as_str())?), args)
                .with_context(|| global.db.display().to_string())?
        }
        (None, None) => bail!("give a session or --log"),
    };
    if global.json {
        return print_json(&report);
    }
    let mut table = Table::new(["", ""]).without_header();
    table.row(["session".to_owned(), report.session.clone()]);
    table.row([
        "compacted".to_owned(),
        format!("{} entries into the summary", report.compacted_entries),
    ]);
    table.row([
        "kept".to_owned(),
        format!(
            "{} entries after it (the last {} turn(s))",
            report.kept_entries, args.keep_last
        ),
    ]);
    print!("{table}");
    match &report.memory {
        Some(memory) => print!(
            "\nkept with the summary:\n{}\n",
            agent_memory_turns::memory_block(memory, agent_memory_turns::DEFAULT_MAX_FILES_LISTED)
        ),
        None => println!("\nthe compacted turns retained no memory"),
    }
    Ok(())
}

fn compact_log<L: EventLog>(log: L, args: &CompactArgs) -> Result<CompactReport> {
    let (mut session, warnings) = agent_memory_turns::Session::resume(log)?;
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }
    session.compact(args.summary.as_str(), args.keep_last)?;
    let history = session.history();
    let (compacted_entries, memory) = match history.entries().first() {
        Some(agent_memory_turns::Entry::Compaction { compaction, .. }) => {
            (compaction.compacted_entries, compaction.memory.clone())
        }
        _ => bail!("the compaction of {} was not applied", history.session()),
    };
    Ok(CompactReport {
        session: history.session().as_str().to_owned(),
        compacted_entries,
        kept_entries: history.entries().len() - 1,
        memory,
    })
}

/// The schemas of what `turns` prints with `--json` beyond the operations' outputs.
pub(super) fn schemas() -> Vec<(String, Schema)> {
    use super::output;
    vec![
        output::<ShownSession<'static, Value>>("turns_show.output"),
        output::<CompactReport>("turns_compact.output"),
        output::<Vec<crate::ops::memory::TurnSessionEntry>>("turns_sessions.output"),
    ]
}

fn import(args: &ImportArgs, global: &GlobalArgs) -> Result<()> {
    let progress = Progress::start(None, "reading the session log");
    let store = database::open(&global.db)?;
    let report = crate::ops::turns::import(
        &global.env(&store),
        crate::ops::turns::ImportInput {
            path: args.log.display().to_string(),
            source: match args.source {
                Source::AgentMemory => crate::ops::turns::LogFormat::AgentMemory,
                Source::Keen => crate::ops::turns::LogFormat::Keen,
            },
        },
    )?;
    progress.finish();
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
    if global.json {
        return print_json(&report);
    }
    if report.already_imported {
        println!(
            "session {} is already imported ({} events, {} turns); nothing changed",
            report.session, report.events, report.turns
        );
        return Ok(());
    }
    println!(
        "imported session {} ({} events, {} turns) from {}",
        report.session,
        report.events,
        report.turns,
        args.log.display()
    );
    Ok(())
}
