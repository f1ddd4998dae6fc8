//! `agent-memory turns ...`: a coding session's history as the user sees it or as a model is
//! sent it (`show`), compaction that keeps the turns' memories (`compact`), and JSONL session
//! logs, ours or Keen Code's, copied into the database (`import`).

use std::path::PathBuf;

use anyhow::Result;
use schemars::{JsonSchema, Schema};
use serde::Serialize;

use crate::ops::turns::{self as ops_turns, HistoryOutput, ModelMessage, Provider, UiMessage};
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
    /// Who wrote them (`user`, `model:NAME`, `tool:NAME`, ...); default by kind: turns and
    /// summaries `model`, the rest `user`.
    #[arg(long, value_name = "SOURCE")]
    source: Option<String>,
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
    #[arg(long, default_value_t = ops_turns::DEFAULT_RECENT_MEMORIES, value_name = "N")]
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
    /// End the system prompt with the persistent memory, as Keen Code does: the global
    /// memory, then this project's (`--memory-project`).
    #[arg(long)]
    with_memory: bool,
    /// The project whose memory follows the global one (implies `--with-memory`).
    #[arg(long, value_name = "PROJECT")]
    memory_project: Option<String>,
}

#[derive(Debug, clap::Args)]
struct CompactArgs {
    #[command(flatten)]
    source: SessionSource,
    /// The summary that replaces the compacted entries.
    #[arg(long)]
    summary: String,
    /// How many recent turns to keep as they are.
    #[arg(long, default_value_t = ops_turns::DEFAULT_KEEP_LAST, value_name = "N")]
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
) -> Result<ops_turns::ViewOutput> {
    Ok(ops_turns::view(
        &global.env(store),
        ops_turns::ViewInput {
            session: session.to_owned(),
            provider: ops_turns::Provider::OpenaiChat,
            recent_memories: None,
            compress_outputs: Some(compress),
            context_window,
            as_data: false,
        },
    )?)
}

/// `turns context`: the setting, the breakdown and the compaction answer of `turns_view`.
fn context(args: &ContextArgs, global: &GlobalArgs) -> Result<()> {
    let store = global.open_for_reading()?;
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

/// `turns tool-history`: the setting, after setting it when a mode is given.
fn tool_history(args: &ToolHistoryArgs, global: &GlobalArgs) -> Result<()> {
    let store = match args.mode {
        Some(_) => global.open()?,
        None => global.open_for_reading()?,
    };
    let viewed = ops_turns::tool_history(
        &global.env(&store),
        ops_turns::ToolHistoryInput {
            session: args.session.clone(),
            mode: args.mode.clone(),
        },
    )?;
    if global.json {
        return print_json(&viewed);
    }
    println!("{}", viewed.tool_history);
    Ok(())
}

/// `turns append`: the events of the file after the session's stored ones, in one write.
fn append(args: &AppendArgs, global: &GlobalArgs) -> Result<()> {
    let events: Vec<serde_json::Map<String, serde_json::Value>> = crate::input::lines(&args.file)?;
    let store = global.open()?;
    let appended = ops_turns::append(
        &global.env(&store),
        ops_turns::AppendInput {
            session: args.session.clone(),
            start: args.start,
            events,
            source: args.source.clone(),
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
    let store = global.open_for_reading()?;
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

/// The database a session's source needs, and the source as the operations take it (a
/// stored session, a log file): a stored session opens the database (for `writes`, creating
/// it), a log file needs none, so it runs on a private one in memory and creates no file.
fn opened(
    source: &SessionSource,
    global: &GlobalArgs,
    writes: bool,
) -> Result<(database::Store, Option<String>, Option<String>)> {
    let log = source.log.as_ref().map(|path| path.display().to_string());
    let store = match (&log, writes) {
        (Some(_), _) => global.open_scratch()?,
        (None, true) => global.open()?,
        (None, false) => global.open_for_reading()?,
    };
    Ok((store, source.session.clone(), log))
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
    let provider = match args.format {
        Format::Text => None,
        Format::Openai => Some(Provider::OpenaiChat),
        Format::Responses => Some(Provider::OpenaiResponses),
        Format::Genkit => Some(Provider::Genkit),
        Format::Anthropic => Some(Provider::Anthropic),
        Format::Gemini => Some(Provider::Gemini),
    };
    let (store, session, log) = opened(&args.source, global, false)?;
    let shown = ops_turns::history(
        &global.env(&store),
        ops_turns::HistoryInput {
            session,
            log,
            view: Some(match view {
                View::Ui => ops_turns::HistoryView::Ui,
                View::Model => ops_turns::HistoryView::Model,
            }),
            provider,
            recent_memories: Some(args.recent_memories),
            memory_style: Some(match args.style {
                Style::Text => ops_turns::MemoryStyleInput::Text,
                Style::Native => ops_turns::MemoryStyleInput::Native,
                Style::Positional => ops_turns::MemoryStyleInput::Positional,
            }),
            system_prompt: args.system_prompt.clone(),
            mark_interrupted: args.mark_interrupted,
            memory: (args.with_memory || args.memory_project.is_some()).then(|| {
                ops_turns::PromptMemory {
                    project: args.memory_project.clone(),
                }
            }),
        },
    )?;
    for warning in shown.warnings() {
        eprintln!("warning: {warning}");
    }
    match shown {
        HistoryOutput::Ui { messages, .. } if global.json => {
            print_json(&ShownSession::Ui(messages))
        }
        HistoryOutput::Ui { messages, .. } => {
            for message in &messages {
                let role = message.role.as_str();
                let label = match message.interrupted {
                    true => format!("{role} (interrupted)"),
                    false => role.to_owned(),
                };
                print!("{}", labelled(&label, &message.text));
            }
            Ok(())
        }
        HistoryOutput::Model { items, .. } if global.json => {
            print_json(&ShownSession::Model(items))
        }
        HistoryOutput::Model { items, .. } => {
            for item in &items {
                print!("{}", model_item_text(item));
            }
            Ok(())
        }
        // The provider's own JSON, as it is sent; with `--json`, inside a document that says
        // what it is, so every `--json` output has one schema.
        HistoryOutput::Provider { request, .. } if !global.json => print_json(&request),
        HistoryOutput::Provider {
            session,
            provider,
            request,
            ..
        } => print_json(&ShownSession::Provider(ProviderView {
            session,
            format: format_word(provider),
            request,
        })),
    }
}

/// The `--format` word of a provider.
fn format_word(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenaiChat => "openai",
        Provider::OpenaiResponses => "responses",
        Provider::Genkit => "genkit",
        Provider::Anthropic => "anthropic",
        Provider::Gemini => "gemini",
    }
}

/// `turns show --json`: the user's view (`--view ui`) or the model's (`--view model`); the
/// provider formats (`--format openai`, ...) print the provider's own JSON instead.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
enum ShownSession {
    /// What the user sees, message by message.
    Ui(Vec<UiMessage>),
    /// What the model is sent, item by item.
    Model(Vec<ModelMessage>),
    /// What the model is sent, in a provider's format (`--format openai`, ...).
    Provider(ProviderView),
}

/// `turns show --json --format <provider>`: the provider's payload and what it is.
#[derive(Serialize, JsonSchema)]
struct ProviderView {
    /// The session.
    session: String,
    /// The provider format: `openai`, `responses`, `genkit`, `anthropic` or `gemini`.
    format: &'static str,
    /// The payload in the provider's own format, as it is sent.
    #[schemars(schema_with = "crate::ops::portable::array_or_object")]
    request: ops_turns::ProviderRequest,
}

/// A model item as text: its role (and call) as the label.
fn model_item_text(item: &ModelMessage) -> String {
    match item {
        ModelMessage::System { text } => labelled("system", text),
        ModelMessage::User { text } => labelled("user", text),
        ModelMessage::Assistant { text } => labelled("assistant", text),
        ModelMessage::ToolCall { id, name, input } => {
            labelled(&format!("tool call {id}"), &format!("{name} {input}"))
        }
        ModelMessage::ToolResult {
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

fn compact(args: &CompactArgs, global: &GlobalArgs) -> Result<()> {
    let (store, session, log) = opened(&args.source, global, true)?;
    let report = ops_turns::compact(
        &global.env(&store),
        ops_turns::CompactInput {
            session,
            log,
            summary: args.summary.clone(),
            keep_last: Some(args.keep_last),
        },
    )?;
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
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
            ops_turns::memory_text(memory)
        ),
        None => println!("\nthe compacted turns retained no memory"),
    }
    Ok(())
}

/// The schemas of what `turns` prints with `--json` beyond the operations' outputs.
pub(super) fn schemas() -> Vec<(String, Schema)> {
    use super::output;
    vec![
        output::<ShownSession>("turns_show.output"),
        output::<Vec<crate::ops::memory::TurnSessionEntry>>("turns_sessions.output"),
    ]
}

fn import(args: &ImportArgs, global: &GlobalArgs) -> Result<()> {
    let progress = Progress::start(None, "reading the session log");
    let store = global.open()?;
    let report = ops_turns::import(
        &global.env(&store),
        ops_turns::ImportInput {
            path: args.log.display().to_string(),
            source: match args.source {
                Source::AgentMemory => ops_turns::LogFormat::AgentMemory,
                Source::Keen => ops_turns::LogFormat::Keen,
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
