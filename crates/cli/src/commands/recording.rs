//! `agent-memory recording ...`: tool logs to trail YAML with memory tokens (`templatize`),
//! a trail replayed under new memory values (`replay`, `replay --step`), literals that should
//! be tokens (`lint`), trails rewritten in canonical form (`fmt`), and tool logs copied into
//! the database (`import`). Tool logs are this crate's JSON documents or Trailblaze's
//! `TrailblazeLog` documents. Steps and tools are numbered from 1 in everything printed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use agent_memory_core::store::tool_log::{ToolLog, ToolLogStore};
use agent_memory_core::{Error as CoreError, SessionId, Timestamp};
use agent_memory_recording::{
    Action, GenerationPolicy, Memory, MemoryWrites, MissingKey, MissingKeys, Objective, Origin,
    Provenance, ReplayOptions, Replayer, Seeds, Snapshot, StepAction, StepKind, TemplatePolicy,
    ToolLogFile, Trail, lint_trail, read_tool_logs,
};
use anyhow::{Context, Result, bail};
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};

use crate::output::{Table, print_json};
use crate::{GlobalArgs, database, progress::Progress};

/// `recording` and its subcommands.
#[derive(Debug, clap::Args)]
pub(crate) struct RecordingArgs {
    #[command(subcommand)]
    command: RecordingCommand,
}

#[derive(Debug, clap::Subcommand)]
enum RecordingCommand {
    /// Turn a session's tool logs into trail YAML whose literals from memory are `${key}` tokens.
    Templatize(TemplatizeArgs),
    /// Resolve a trail's calls for a device under new memory values.
    Replay(ReplayArgs),
    /// List literals in a trail that equal or hold memory values (recordings that go stale).
    Lint(LintArgs),
    /// Rewrite trails in canonical form, in place (like `cargo fmt` for trails).
    Fmt(FmtArgs),
    /// Copy tool logs from a JSONL file into the database.
    ///
    /// One transaction. A session already stored with the same logs is left as it is (and
    /// reported as already imported); one stored with other logs is refused, naming the
    /// file's first differing line.
    Import(ImportArgs),
    /// Append tool logs (with their memory snapshots) to a session, in one transaction:
    /// JSON lines or one JSON array, `--file PATH` or `-` for stdin.
    Append(AppendArgs),
}

/// Where the tool logs come from: a file or the database.
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
struct LogSource {
    /// A file of tool logs: one JSON document per line, or pretty-printed documents one after
    /// another (this crate's or Trailblaze's).
    #[arg(value_name = "LOGS.jsonl")]
    logs: Option<PathBuf>,
    /// A session whose tool logs the database holds.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
}

#[derive(Debug, clap::Args)]
struct TemplatizeArgs {
    #[command(flatten)]
    source: LogSource,
    /// A JSON file listing the objectives: `[{"step": "Sign in", "started_at": 1500},
    /// {"verify": "...", "started_at": 3500}]`. Without it, the objectives Trailblaze logged,
    /// or else one step holds every call.
    #[arg(long, value_name = "FILE")]
    objectives: Option<PathBuf>,
    /// The device classifier the recordings are filed under.
    #[arg(long, default_value = "android-phone", value_name = "CLASSIFIER")]
    device: String,
    /// The fewest characters an ordinary value needs to become a token.
    #[arg(long, default_value_t = TemplatePolicy::default().min_chars, value_name = "N")]
    min_chars: usize,
    /// Write the trail to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print only the substitution report; write no trail.
    #[arg(long)]
    dry_run: bool,
    /// Also template a known writer's value standing inside a longer string
    /// (`Welcome, ${merchant_name}`), when it has at least `--min-chars` characters.
    #[arg(long)]
    inside: bool,
    /// The trail's title, in its `config:` block.
    #[arg(long, value_name = "TEXT")]
    title: Option<String>,
}

/// Memory values from the command line and a file.
#[derive(Debug, clap::Args)]
struct MemoryValues {
    /// A memory value; repeat for more. Wins over `--memory`.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    set: Vec<(String, String)>,
    /// A sensitive memory value, masked as its `${KEY}` token in everything printed; repeat
    /// for more. Wins over `--set` and `--memory`.
    // Split here rather than by a clap value parser: clap's error would quote the value.
    #[arg(long = "secret", value_name = "KEY=VALUE")]
    secret: Vec<String>,
    /// A JSON file holding one object of memory values: `{"merchant_email": "...",
    /// "pin": {"value": "...", "sensitive": true}}`.
    #[arg(long, value_name = "FILE.json")]
    memory: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct ReplayArgs {
    /// The trail file (legacy or unified form).
    #[arg(value_name = "TRAIL.yaml")]
    trail: PathBuf,
    #[command(flatten)]
    values: MemoryValues,
    /// A value for an argument the trail declares under `config.args`; repeat for more.
    #[arg(long = "arg", value_name = "NAME=VALUE", value_parser = parse_key_value)]
    args: Vec<(String, String)>,
    /// The device classifier; the closest recording wins (`android-phone`, then `android`).
    #[arg(long, value_name = "CLASSIFIER")]
    device: String,
    /// Run a JSON-lines session: print one dispatch per line, read the memory it wrote
    /// (`{"set": {...}, "secrets": {...}, "delete": [...]}`) from stdin, then print the next.
    #[arg(long)]
    step: bool,
}

#[derive(Debug, clap::Args)]
struct LintArgs {
    /// The trail file (legacy or unified form).
    #[arg(value_name = "TRAIL.yaml")]
    trail: PathBuf,
    #[command(flatten)]
    values: MemoryValues,
    /// Also check against the memory snapshots a stored session logged (past values).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// The fewest characters a value needs to count.
    #[arg(long, default_value_t = TemplatePolicy::default().min_chars, value_name = "N")]
    min_chars: usize,
    /// Exit with 1 when a stale literal is found.
    #[arg(long)]
    deny: bool,
}

#[derive(Debug, clap::Args)]
struct FmtArgs {
    /// The trail files.
    #[arg(value_name = "TRAIL.yaml", required = true)]
    trails: Vec<PathBuf>,
    /// Write nothing; exit with 1 when a file is not in canonical form.
    #[arg(long, conflicts_with = "stdout")]
    check: bool,
    /// Print the canonical form instead of writing it.
    #[arg(long)]
    stdout: bool,
}

#[derive(Debug, clap::Args)]
struct ImportArgs {
    /// A JSONL file of tool logs, one JSON document per line.
    #[arg(value_name = "LOGS.jsonl")]
    logs: PathBuf,
}

/// `key=value`, the key non-empty.
fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!(
            "expected KEY=VALUE with a non-empty key, got {text:?}"
        )),
    }
}

pub(crate) fn run(args: RecordingArgs, global: &GlobalArgs) -> Result<()> {
    match args.command {
        RecordingCommand::Templatize(args) => templatize(&args, global),
        RecordingCommand::Replay(args) => replay(&args, global),
        RecordingCommand::Lint(args) => lint(&args, global),
        RecordingCommand::Fmt(args) => fmt(&args, global),
        RecordingCommand::Import(args) => import(&args, global),
        RecordingCommand::Append(args) => append(&args, global),
    }
}

#[derive(Debug, clap::Args)]
struct AppendArgs {
    /// The session to append to.
    #[arg(long)]
    session: String,
    /// The tool logs (schemas/recording_append.input.json, `logs`): a file, or `-` for stdin.
    #[arg(long, value_name = "PATH")]
    file: PathBuf,
}

/// `recording append`: the logs after the session's stored ones, all or none.
fn append(args: &AppendArgs, global: &GlobalArgs) -> Result<()> {
    let logs: Vec<crate::ops::recording::ToolLogDocument> = crate::input::lines(&args.file)?;
    let store = database::open(&global.db)?;
    let appended = crate::ops::recording::append(
        &global.env(&store),
        crate::ops::recording::AppendInput {
            session: args.session.clone(),
            logs,
        },
    )?;
    if global.json {
        return print_json(&appended);
    }
    println!(
        "session {}: {} tool log(s) appended; {} in all",
        appended.session, appended.appended, appended.logs
    );
    Ok(())
}

/// The trail file at `path`, read as `Trail::read` does but never more than 4 MiB of it.
fn read_trail(path: &Path) -> Result<Trail> {
    let file = path.display().to_string();
    let text =
        crate::ops::files::read_string(path).with_context(|| format!("trail file {file}"))?;
    Ok(Trail::from_yaml_str(without_bom(text).as_str(), &file)?)
}

fn read_text(path: &Path) -> Result<String> {
    let text = crate::ops::files::read_regular(path)
        .with_context(|| format!("cannot read tool logs {}", path.display()))?;
    Ok(without_bom(text))
}

/// `text` without the byte-order mark some editors put at its start.
fn without_bom(text: String) -> String {
    match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    }
}

/// Stores every log of the file `path` (whose text is `text`) in one transaction, into
/// sessions that hold no logs yet: all of them or, on any error, none. Returns the number of
/// logs of each session. An error about one log names its line.
fn store_logs(
    store: &crate::database::Store,
    path: &Path,
    text: &str,
    logs: &[ToolLog],
    db: &Path,
) -> Result<Vec<ImportedSession>> {
    match store_new_sessions(store, path, text, logs, db)? {
        Some(report) => Ok(report),
        // Another import stored one of the sessions between the comparison and the write
        // (nothing was written): compare again with what it stored.
        None => store_new_sessions(store, path, text, logs, db)?.ok_or_else(|| {
            anyhow::anyhow!(
                "the sessions of {} changed in {} while importing; nothing was imported",
                path.display(),
                db.display()
            )
        }),
    }
}

/// Stores the sessions of `logs` that the database does not hold, after checking that the
/// ones it holds hold the same logs; `None` when another import stored one of the new
/// sessions meanwhile (and nothing was written).
fn store_new_sessions(
    store: &crate::database::Store,
    path: &Path,
    text: &str,
    logs: &[ToolLog],
    db: &Path,
) -> Result<Option<Vec<ImportedSession>>> {
    refuse_empty(path, logs)?;
    let lines = log_lines(text);
    // Each session's logs with the line of the file that holds each.
    let mut sessions: BTreeMap<&str, Vec<(usize, &ToolLog)>> = BTreeMap::new();
    for (i, log) in logs.iter().enumerate() {
        let line = lines.get(i).copied().unwrap_or(i + 1);
        sessions
            .entry(log.session.as_str())
            .or_default()
            .push((line, log));
    }
    // A session stored with the same logs is already imported and stays as it is; one
    // stored with other logs is refused, naming the first line that differs.
    let mut report = Vec::with_capacity(sessions.len());
    let mut new_logs: Vec<ToolLog> = Vec::new();
    let mut new_lines: Vec<usize> = Vec::new();
    for (session, file_logs) in &sessions {
        let stored = store.list_tool_logs(&file_logs[0].1.session)?;
        let already_imported = !stored.is_empty();
        if already_imported {
            if let Some((line, what)) = first_difference(file_logs, &stored) {
                bail!(
                    "{}:{line}: session {session:?} is already stored in {} with other tool logs: {what}; nothing was imported",
                    path.display(),
                    db.display()
                );
            }
        } else {
            new_logs.extend(file_logs.iter().map(|(_, log)| (*log).clone()));
            new_lines.extend(file_logs.iter().map(|(line, _)| *line));
        }
        report.push(ImportedSession {
            session: (*session).to_owned(),
            logs: file_logs.len(),
            already_imported,
        });
    }
    if new_logs.is_empty() {
        return Ok(Some(report));
    }
    match store.import_tool_logs(&new_logs) {
        Ok(()) => Ok(Some(report)),
        Err(CoreError::Conflict { .. }) => Ok(None),
        Err(CoreError::InvalidInput { field, reason }) => {
            // The store names a log by its place in the batch: name its line instead.
            let line = field.strip_prefix("tool log ").and_then(|rest| {
                let (number, what) = rest.split_once(' ').unwrap_or((rest, ""));
                let index = number.parse::<usize>().ok()?.checked_sub(1)?;
                Some((new_lines.get(index).copied()?, what.to_owned()))
            });
            match line {
                Some((line, what)) if what.is_empty() => {
                    bail!("{}:{line}: {reason}", path.display())
                }
                Some((line, what)) => bail!("{}:{line}: {what}: {reason}", path.display()),
                None => bail!("{}: invalid {field}: {reason}", path.display()),
            }
        }
        Err(other) => Err(other.into()),
    }
}

/// The first line of a session's logs in a file (with the line of each) that differs from
/// the stored logs of the session, and what differs; `None` when they are the same. Values
/// are not shown (parameters and snapshots may hold secrets), only which field differs.
fn first_difference(file: &[(usize, &ToolLog)], stored: &[ToolLog]) -> Option<(usize, String)> {
    for (i, (line, log)) in file.iter().enumerate() {
        let Some(kept) = stored.get(i) else {
            return Some((
                *line,
                format!(
                    "the stored session ends before this log (it holds {} tool log(s))",
                    stored.len()
                ),
            ));
        };
        let what = if log.tool_name != kept.tool_name {
            format!(
                "tool {:?} where the stored log {} has {:?}",
                log.tool_name,
                i + 1,
                kept.tool_name
            )
        } else {
            let fields = [
                ("parameters", log.parameters != kept.parameters),
                ("success", log.success != kept.success),
                ("error", log.error != kept.error),
                ("duration_ms", log.duration_ms != kept.duration_ms),
                ("timestamp", log.timestamp != kept.timestamp),
                ("trace_id", log.trace_id != kept.trace_id),
                (
                    "memory snapshot",
                    log.memory_snapshot != kept.memory_snapshot,
                ),
            ];
            let differing: Vec<&str> = fields
                .iter()
                .filter(|(_, differs)| *differs)
                .map(|(name, _)| *name)
                .collect();
            if differing.is_empty() {
                continue;
            }
            format!(
                "{} of {} differ from the stored log {}",
                differing.join(", "),
                log.tool_name,
                i + 1
            )
        };
        return Some((*line, what));
    }
    let last = file.last().map_or(1, |(line, _)| *line);
    (stored.len() > file.len()).then(|| {
        (
            last,
            format!(
                "the stored session holds {} more tool log(s) after this last one",
                stored.len() - file.len()
            ),
        )
    })
}

/// An input without a tool log is refused, as the other imports refuse an empty input.
fn refuse_empty(path: &Path, logs: &[ToolLog]) -> Result<()> {
    if logs.is_empty() {
        bail!("{} holds no tool logs; nothing to import", path.display());
    }
    Ok(())
}

/// The 1-based numbers of the lines of `text` that hold a log (the lines
/// [`parse_logs`] reads), in order.
fn log_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, _)| index + 1)
        .collect()
}

/// Reads the tool log documents of `text`, the contents of `path`; an error names the file,
/// the line and the field. A file with no tool log to keep is an error.
fn read_logs(path: &Path, text: &str) -> Result<ToolLogFile> {
    let file = read_tool_logs(text, &path.display().to_string())?;
    if file.logs.is_empty() {
        let skipped = if file.skipped.is_empty() {
            String::new()
        } else {
            format!(
                " ({} document(s) skipped: {})",
                file.skipped.len(),
                skip_summary(&file)
            )
        };
        bail!(
            "{} holds no tool logs; nothing to import{skipped}",
            path.display()
        );
    }
    Ok(file)
}

/// How many documents were skipped for each reason: `2 nested in another call, 1 not recordable`.
fn skip_summary(file: &ToolLogFile) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for skipped in &file.skipped {
        *counts.entry(skipped.reason.describe()).or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(reason, n)| format!("{n} {reason}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Tells stderr which documents were not kept as tool logs, when some were not.
fn report_skipped(path: &Path, file: &ToolLogFile) {
    if !file.skipped.is_empty() {
        eprintln!(
            "{}: skipped {} document(s) as Trailblaze's recording generator does: {}",
            path.display(),
            file.skipped.len(),
            skip_summary(file)
        );
    }
}

/// Reads every tool log of `text`, the contents of `path`, for storing.
fn parse_logs(path: &Path, text: &str, progress: Option<&Progress>) -> Result<Vec<ToolLog>> {
    let file = read_logs(path, text)?;
    if let Some(progress) = progress {
        progress.advance(text.lines().count() as u64);
    }
    report_skipped(path, &file);
    Ok(file.logs)
}

fn session_id(id: &str) -> Result<SessionId> {
    Ok(SessionId::new(id)?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ObjectiveDocument {
    step: Option<String>,
    verify: Option<String>,
    started_at: i64,
}

fn read_objectives(path: &Path) -> Result<Vec<Objective>> {
    let text = crate::ops::files::read_string(path)
        .map(without_bom)
        .with_context(|| format!("cannot read objectives {}", path.display()))?;
    let documents: Vec<ObjectiveDocument> =
        serde_json::from_str(&text).map_err(|e| json_error(path, &e))?;
    documents
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let (kind, text) = match (d.step, d.verify) {
                (Some(text), None) => (StepKind::Step, text),
                (None, Some(text)) => (StepKind::Verify, text),
                _ => bail!(
                    "{}: objective {i} needs exactly one of `step` and `verify`",
                    path.display()
                ),
            };
            Ok(Objective::new(
                kind,
                text,
                Timestamp::from_millis(d.started_at),
            ))
        })
        .collect()
}

/// A serde_json error as `file:line:column: message`.
fn json_error(path: &Path, error: &serde_json::Error) -> anyhow::Error {
    let message = error.to_string();
    let message = message
        .find(" at line ")
        .map_or(message.as_str(), |cut| &message[..cut]);
    anyhow::anyhow!(
        "{}:{}:{}: {message}",
        path.display(),
        error.line(),
        error.column()
    )
}

#[derive(Serialize, JsonSchema)]
struct SubstitutionRow {
    tool: usize,
    path: String,
    key: String,
    reason: String,
}

#[derive(Serialize, JsonSchema)]
struct SkippedRow {
    line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<String>,
    reason: String,
}

/// `recording templatize --json`: the trail written (or not, with `--dry-run`) and what
/// became a template.
#[derive(Serialize, JsonSchema)]
struct TemplatizeReport {
    #[serde(skip_serializing_if = "Option::is_none")]
    trail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    out: Option<String>,
    steps: usize,
    substitutions: Vec<SubstitutionRow>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    skipped: Vec<SkippedRow>,
}

fn templatize(args: &TemplatizeArgs, global: &GlobalArgs) -> Result<()> {
    let (logs, logged_objectives, skipped, name) = match (&args.source.logs, &args.source.session) {
        (Some(path), _) => {
            let file = read_logs(path, &read_text(path)?)?;
            let sessions: BTreeSet<&str> = file.logs.iter().map(|l| l.session.as_str()).collect();
            if sessions.len() > 1 {
                bail!(
                    "{} holds the tool logs of {} sessions ({}); import it and templatize one with --session",
                    path.display(),
                    sessions.len(),
                    sessions.into_iter().collect::<Vec<_>>().join(", ")
                );
            }
            if !global.json {
                report_skipped(path, &file);
            }
            let objectives = file
                .logs
                .first()
                .map(|log| file.objectives_of(&log.session))
                .unwrap_or_default();
            let skipped = file
                .skipped
                .iter()
                .map(|s| SkippedRow {
                    line: s.line,
                    tool: s.tool.clone(),
                    reason: s.reason.describe(),
                })
                .collect();
            (file.logs, objectives, skipped, path.display().to_string())
        }
        (None, Some(id)) => {
            let session = session_id(id)?;
            let store = database::open_existing(&global.db)?;
            let logs = store.list_tool_logs(&session)?;
            if logs.is_empty() {
                bail!("session {id:?} has no tool logs in {}", global.db.display());
            }
            (logs, Vec::new(), Vec::new(), format!("session {id}"))
        }
        (None, None) => bail!("give a file of tool logs or --session"),
    };
    let objectives = match &args.objectives {
        Some(path) => read_objectives(path)?,
        None if !logged_objectives.is_empty() => logged_objectives,
        None => {
            let session = logs
                .first()
                .map(|l| l.session.to_string())
                .unwrap_or_default();
            vec![Objective::new(
                StepKind::Step,
                format!("Replay the tool calls of session {session}"),
                Timestamp::from_millis(i64::MIN),
            )]
        }
    };
    let mut policy = GenerationPolicy::for_classifier(args.device.clone()).with_template(
        TemplatePolicy::default()
            .with_min_chars(args.min_chars)
            .with_dry_run(args.dry_run)
            .with_inside(args.inside),
    );
    if let Some(title) = &args.title {
        policy = policy.with_config("title", title.as_str());
    }
    let generated = agent_memory_recording::generate_recording(&objectives, &logs, &policy)
        .with_context(|| format!("templatizing {name}"))?;
    let rows: Vec<SubstitutionRow> = generated
        .substitutions
        .iter()
        .map(|s| SubstitutionRow {
            tool: s.tool_index + 1,
            path: s.path.clone(),
            key: s.key.clone(),
            reason: s.reason.to_string(),
        })
        .collect();
    let steps = objectives.len();
    if args.dry_run {
        if global.json {
            return print_json(&TemplatizeReport {
                trail: None,
                out: None,
                steps,
                substitutions: rows,
                skipped,
            });
        }
        print!("{}", substitution_table(&rows));
        return Ok(());
    }
    let yaml = generated.trail.to_yaml_string()?;
    match &args.out {
        Some(out) => {
            std::fs::write(out, &yaml)
                .with_context(|| format!("cannot write trail {}", out.display()))?;
            if global.json {
                return print_json(&TemplatizeReport {
                    trail: None,
                    out: Some(out.display().to_string()),
                    steps,
                    substitutions: rows,
                    skipped,
                });
            }
            println!(
                "wrote {} ({steps} step(s), {} substitution(s))",
                out.display(),
                rows.len()
            );
            if !rows.is_empty() {
                print!("\n{}", substitution_table(&rows));
            }
        }
        None if global.json => print_json(&TemplatizeReport {
            trail: Some(yaml),
            out: None,
            steps,
            substitutions: rows,
            skipped,
        })?,
        None => print!("{yaml}"),
    }
    Ok(())
}

fn substitution_table(rows: &[SubstitutionRow]) -> String {
    if rows.is_empty() {
        return "no substitutions\n".to_owned();
    }
    let mut table = Table::new(["tool", "path", "key", "reason"]);
    for row in rows {
        table.row([
            row.tool.to_string(),
            row.path.clone(),
            row.key.clone(),
            row.reason.clone(),
        ]);
    }
    table.to_string()
}

/// One value of a memory file: a string, number or boolean, or `{"value": ..., "sensitive":
/// true}`. Errors name the file and key, never the value.
fn memory_file_value(path: &Path, key: &str, value: serde_json::Value) -> Result<(String, bool)> {
    use serde_json::Value;
    let scalar = |value: Value| match value {
        Value::String(text) => Some(text),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let kind = |value: &Value| match value {
        Value::Null => "null",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
        _ => "a scalar",
    };
    match value {
        Value::Object(mut entry) => {
            let sensitive = match entry.remove("sensitive") {
                None => false,
                Some(Value::Bool(flag)) => flag,
                Some(_) => bail!(
                    "{}: `sensitive` of memory value {key:?} must be true or false",
                    path.display()
                ),
            };
            if let Some(field) = entry.keys().find(|k| *k != "value") {
                bail!(
                    "{}: memory value {key:?} has an unknown field {field:?}; the fields are `value` and `sensitive`",
                    path.display()
                );
            }
            let Some(value) = entry.remove("value") else {
                bail!("{}: memory value {key:?} has no `value`", path.display());
            };
            let shape = kind(&value);
            let text = scalar(value).with_context(|| {
                format!(
                    "{}: `value` of memory value {key:?} is {shape}, not a string, number or boolean",
                    path.display()
                )
            })?;
            Ok((text, sensitive))
        }
        other => {
            let shape = kind(&other);
            let text = scalar(other).with_context(|| {
                format!(
                    "{}: memory value {key:?} is {shape}, not a string, number, boolean or {{\"value\": ..., \"sensitive\": true}}",
                    path.display()
                )
            })?;
            Ok((text, false))
        }
    }
}

/// The memory values of `--memory`, then `--set`, then `--secret`, as replay seeds: later
/// sources win on a key, and a key marked sensitive anywhere stays sensitive.
fn memory_values(values: &MemoryValues) -> Result<Seeds> {
    let mut seeds = Seeds::new();
    if let Some(path) = &values.memory {
        let text = crate::ops::files::read_string(path)
            .map(without_bom)
            .with_context(|| format!("cannot read memory values {}", path.display()))?;
        let object: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).map_err(|e| json_error(path, &e))?;
        for (key, value) in object {
            let (text, sensitive) = memory_file_value(path, &key, value)?;
            if sensitive {
                seeds.secrets.insert(key, text);
            } else {
                seeds.memory.insert(key, text);
            }
        }
    }
    for (key, value) in &values.set {
        if seeds.secrets.contains_key(key) {
            seeds.secrets.insert(key.clone(), value.clone());
        } else {
            seeds.memory.insert(key.clone(), value.clone());
        }
    }
    for (i, text) in values.secret.iter().enumerate() {
        let Some((key, value)) = text.split_once('=').filter(|(key, _)| !key.is_empty()) else {
            bail!(
                "--secret number {} is not KEY=VALUE with a non-empty key (its text is not shown: it may be the secret)",
                i + 1
            );
        };
        seeds.memory.remove(key);
        seeds.secrets.insert(key.to_owned(), value.to_owned());
    }
    Ok(seeds)
}

/// The seeds as a memory with provenance, secrets marked sensitive (for lint).
fn seeds_memory(seeds: &Seeds) -> Memory {
    let mut memory = Memory::new();
    let at = || Provenance::unknown(Timestamp::from_millis(0));
    for (key, value) in &seeds.memory {
        memory.remember(key.clone(), value.clone(), at());
    }
    for (key, value) in &seeds.secrets {
        memory.remember_secret(key.clone(), value.clone(), at());
    }
    memory
}

/// `recording replay --json`: the planned steps, or the memory keys nothing resolves.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
enum ReplayReport<'a> {
    /// Every step with its calls, parameters masked.
    Steps(Vec<PlannedStepRow>),
    /// The keys the replay could not resolve (the command fails).
    Unresolved {
        /// Each unresolved key and where it is used.
        unresolved: Vec<UnresolvedRow<'a>>,
    },
}

#[derive(Serialize, JsonSchema)]
struct PlannedStepRow {
    step: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    objective: Option<String>,
    trailhead: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    classifier: Option<String>,
    action: &'static str,
    calls: Vec<CallRow>,
}

#[derive(Serialize, JsonSchema)]
struct CallRow {
    tool: String,
    #[schemars(schema_with = "agent_memory_contract::portable::json_object")]
    parameters: serde_json::Value,
    location: String,
}

#[derive(Serialize, JsonSchema)]
struct UnresolvedRow<'a> {
    key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a str>,
    path: &'a str,
}

fn unresolved_rows(missing: &[MissingKey]) -> Vec<UnresolvedRow<'_>> {
    missing
        .iter()
        .map(|m| UnresolvedRow {
            key: &m.key,
            step: m.step.map(|s| s + 1),
            tool: m.tool.as_deref(),
            path: &m.path,
        })
        .collect()
}

/// Prints `missing` (a table, or JSON lines in a step session) and fails naming the keys.
fn report_unresolved(args: &ReplayArgs, global: &GlobalArgs, missing: &[MissingKey]) -> Result<()> {
    let rows = unresolved_rows(missing);
    if args.step {
        println!(
            "{}",
            serde_json::json!({ "event": "unresolved", "unresolved": rows })
        );
    } else if global.json {
        print_json(&ReplayReport::Unresolved { unresolved: rows })?;
    } else {
        let mut table = Table::new(["key", "step", "tool", "path"]);
        for m in missing {
            table.row([
                m.key.clone(),
                m.step.map_or_else(String::new, |s| (s + 1).to_string()),
                m.tool.clone().unwrap_or_default(),
                m.path.clone(),
            ]);
        }
        print!("{table}");
    }
    let keys: BTreeSet<&str> = missing.iter().map(|m| m.key.as_str()).collect();
    bail!(
        "{}: {} unresolved memory token(s) on {}; set {}",
        args.trail.display(),
        missing.len(),
        args.device,
        keys.into_iter().collect::<Vec<_>>().join(", ")
    );
}

fn kind_name(kind: StepKind) -> &'static str {
    kind.key()
}

fn replay(args: &ReplayArgs, global: &GlobalArgs) -> Result<()> {
    let trail = read_trail(&args.trail)?;
    let mut seeds = memory_values(&args.values)?;
    for (name, value) in &args.args {
        seeds
            .args
            .insert(name.clone(), serde_json::Value::String(value.clone()));
    }
    let options = if args.step {
        ReplayOptions::default()
    } else {
        // The plan shows each call as memory stands before the run: a token a known writer
        // produces later stays a token.
        ReplayOptions::default().with_missing(MissingKeys::Leave)
    };
    let mut replayer = Replayer::new(&trail, &args.device, &seeds, options)
        .with_context(|| format!("replaying {}", args.trail.display()))?;
    let missing = replayer.analysis()?;
    if !missing.is_empty() {
        return report_unresolved(args, global, &missing);
    }
    if args.step {
        return step_session(args, global, &mut replayer);
    }
    let mut rows: Vec<PlannedStepRow> = replayer
        .outline()
        .iter()
        .enumerate()
        .map(|(i, step)| PlannedStepRow {
            step: i + 1,
            kind: step.objective.as_ref().map(|(k, _)| kind_name(*k)),
            objective: step.objective.as_ref().map(|(_, text)| text.clone()),
            trailhead: step.trailhead,
            classifier: step.classifier.clone(),
            action: match step.action {
                StepAction::Replay(_) => "replay",
                StepAction::Agent => "agent",
            },
            calls: Vec::new(),
        })
        .collect();
    while let Some(dispatch) = replayer.next_dispatch()? {
        if let (Action::Call(call), Some(row)) = (&dispatch.action, rows.get_mut(dispatch.step)) {
            row.calls.push(CallRow {
                tool: call.tool.clone(),
                parameters: call.masked_parameters().clone(),
                location: call.location.clone(),
            });
        }
        replayer.complete(MemoryWrites::new())?;
    }
    if global.json {
        return print_json(&ReplayReport::Steps(rows));
    }
    for step in &rows {
        let title = match (step.kind, &step.objective) {
            (Some(kind), Some(text)) if step.trailhead => format!("trailhead {kind}: {text}"),
            (Some(kind), Some(text)) => format!("{kind}: {text}"),
            _ => "tools".to_owned(),
        };
        let how = match (step.action, &step.classifier, step.calls.len()) {
            ("agent", _, _) => format!("no recording for {}: the agent drives it", args.device),
            (_, _, 0) => "a deliberate no-op".to_owned(),
            (_, Some(classifier), _) => format!("replayed from {classifier}"),
            _ => "replayed".to_owned(),
        };
        println!("{}. {title} ({how})", step.step);
        for call in &step.calls {
            println!("   {} {}", call.tool, call.parameters);
        }
    }
    Ok(())
}

/// The `--step` session: one JSON line out per dispatch, one JSON line of memory writes in.
/// A line that is not valid writes gets an `error` event and the same dispatch stays
/// pending; stdin closing before the end is an error.
fn step_session(args: &ReplayArgs, global: &GlobalArgs, replayer: &mut Replayer<'_>) -> Result<()> {
    use std::io::BufRead;
    let emit = |value: serde_json::Value| println!("{value}");
    emit(serde_json::json!({
        "event": "start",
        "device": args.device,
        "dispatches": replayer.len(),
    }));
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut line_number = 0;
    loop {
        let dispatch = match replayer.next_dispatch() {
            Ok(Some(dispatch)) => dispatch,
            Ok(None) => break,
            Err(agent_memory_recording::Error::Unresolved { missing }) => {
                return report_unresolved(args, global, &missing);
            }
            Err(other) => return Err(other.into()),
        };
        emit(dispatch_event(&dispatch)?);
        loop {
            line_number += 1;
            let Some(line) = lines.next() else {
                bail!(
                    "stdin closed after {} of {} dispatches; send the memory writes of each, `{{}}` for none",
                    replayer.completed().len(),
                    replayer.len()
                );
            };
            let line = line.context("cannot read stdin")?;
            let parsed = serde_json::from_str::<serde_json::Value>(&line)
                .map_err(|e| anyhow::anyhow!("not JSON: {}", json_message(&e)))
                .and_then(|value| Ok(MemoryWrites::from_json(&value)?));
            match parsed {
                Ok(writes) => {
                    replayer.complete(writes)?;
                    break;
                }
                Err(e) => emit(serde_json::json!({
                    "event": "error",
                    "line": line_number,
                    "message": format!("{e:#}"),
                })),
            }
        }
    }
    emit(serde_json::json!({
        "event": "done",
        "dispatches": replayer.completed().len(),
    }));
    Ok(())
}

/// A dispatch as a session event, numbered from 1 like every step and tool the command
/// prints: `{"event": "dispatch", "dispatch": 1, "step": 1, ...}`.
fn dispatch_event(dispatch: &agent_memory_recording::Dispatch) -> Result<serde_json::Value> {
    let serde_json::Value::Object(fields) = serde_json::to_value(dispatch)? else {
        bail!("a dispatch serializes as a JSON object");
    };
    let mut event = serde_json::Map::new();
    event.insert("event".to_owned(), "dispatch".into());
    event.insert("dispatch".to_owned(), (dispatch.index + 1).into());
    event.insert("step".to_owned(), (dispatch.step + 1).into());
    for (key, value) in fields {
        if key != "index" && key != "step" {
            event.insert(key, value);
        }
    }
    Ok(serde_json::Value::Object(event))
}

/// A serde_json error's message without its position suffix.
fn json_message(error: &serde_json::Error) -> String {
    let message = error.to_string();
    message
        .find(" at line ")
        .map_or(message.clone(), |cut| message[..cut].to_owned())
}

/// A finding of `recording lint --json`.
#[derive(Serialize, JsonSchema)]
struct StaleRow {
    location: String,
    kind: &'static str,
    key: String,
    reason: String,
    found_in: String,
}

fn lint(args: &LintArgs, global: &GlobalArgs) -> Result<()> {
    let trail = read_trail(&args.trail)?;
    let memory = seeds_memory(&memory_values(&args.values)?);
    let policy = TemplatePolicy::default().with_min_chars(args.min_chars);
    // Each past snapshot with the index of the tool log that holds it.
    let past: Vec<(usize, Snapshot)> = match &args.session {
        Some(id) => {
            let store = database::open_existing(&global.db)?;
            let logs = store.list_tool_logs(&session_id(id)?)?;
            if logs.is_empty() {
                bail!("session {id:?} has no tool logs in {}", global.db.display());
            }
            logs.iter()
                .enumerate()
                .filter_map(|(i, log)| {
                    Some((i, Snapshot::from_stored(log.memory_snapshot.as_ref()?)))
                })
                .collect()
        }
        None => Vec::new(),
    };
    let snapshots: Vec<Snapshot> = past.iter().map(|(_, s)| s.clone()).collect();
    let findings = lint_trail(&trail, &memory.snapshot(), &snapshots, &policy)?;
    let rows: Vec<StaleRow> = findings
        .into_iter()
        .map(|f| StaleRow {
            location: f.location,
            kind: f.found.name(),
            key: f.key,
            reason: f.reason.to_string(),
            found_in: match f.origin {
                Origin::Current => "current memory".to_owned(),
                Origin::Past(i) => match (past.get(i), &args.session) {
                    (Some((tool, _)), Some(id)) => {
                        format!("session {id}, after tool {}", tool + 1)
                    }
                    _ => format!("past snapshot {i}"),
                },
            },
        })
        .collect();
    if global.json {
        print_json(&rows)?;
    } else if rows.is_empty() {
        println!(
            "{}: no literal equals or holds a memory value",
            args.trail.display()
        );
    } else {
        let mut table = Table::new(["location", "kind", "token", "reason", "found in"]);
        for row in &rows {
            table.row([
                row.location.clone(),
                row.kind.to_owned(),
                format!("${{{}}}", row.key),
                row.reason.clone(),
                row.found_in.clone(),
            ]);
        }
        print!("{table}");
    }
    if args.deny && !rows.is_empty() {
        bail!(
            "{}: {} literal(s) equal or hold memory values",
            args.trail.display(),
            rows.len()
        );
    }
    Ok(())
}

/// A trail of `recording fmt --json`.
#[derive(Serialize, JsonSchema)]
struct FormattedTrail {
    file: String,
    canonical: bool,
}

/// `fmt`: every file parsed first (a trail Trailblaze would refuse is an error and nothing
/// is written), then each rewritten in canonical form, printed, or checked.
fn fmt(args: &FmtArgs, global: &GlobalArgs) -> Result<()> {
    let mut formatted = Vec::new();
    for path in &args.trails {
        let text = crate::ops::files::read_string(path)
            .with_context(|| format!("cannot read trail {}", path.display()))?;
        let trail = Trail::from_yaml_str(&text, &path.display().to_string())?;
        let canonical = trail.to_yaml_string()?;
        formatted.push((path, text, canonical));
    }
    let mut report = Vec::new();
    for (path, text, canonical) in &formatted {
        let same = text == canonical;
        if args.stdout {
            print!("{canonical}");
        } else if !args.check && !same {
            std::fs::write(path, canonical)
                .with_context(|| format!("cannot write trail {}", path.display()))?;
        }
        report.push(FormattedTrail {
            file: path.display().to_string(),
            canonical: same,
        });
    }
    if args.stdout {
        return Ok(());
    }
    if global.json {
        print_json(&report)?;
    } else {
        for row in &report {
            let state = match (row.canonical, args.check) {
                (true, _) => "canonical",
                (false, true) => "not canonical",
                (false, false) => "rewritten",
            };
            println!("{}: {state}", row.file);
        }
    }
    let off = report.iter().filter(|r| !r.canonical).count();
    if args.check && off > 0 {
        bail!(
            "{off} of {} trail(s) not in canonical form; run `agent-memory recording fmt` on them",
            report.len()
        );
    }
    Ok(())
}

/// The schemas of what `recording` prints with `--json` beyond the operations' outputs
/// (`templatize` and `lint` read files and print more than the operations of that name).
pub(super) fn schemas() -> Vec<(String, Schema)> {
    use super::output;
    vec![
        output::<TemplatizeReport>("recording_templatize_report.output"),
        output::<ReplayReport<'static>>("recording_replay.output"),
        output::<Vec<StaleRow>>("recording_lint_report.output"),
        output::<Vec<FormattedTrail>>("recording_fmt.output"),
        output::<Vec<ImportedSession>>("recording_import.output"),
    ]
}

/// A session of `recording import --json`.
#[derive(Serialize, JsonSchema)]
struct ImportedSession {
    /// The session.
    session: String,
    /// Its tool logs in the file.
    logs: usize,
    /// Whether the database already held exactly these logs (nothing was written for it).
    already_imported: bool,
}

fn import(args: &ImportArgs, global: &GlobalArgs) -> Result<()> {
    let text = read_text(&args.logs)?;
    // Every line is read and checked before the first write.
    let lines = text.lines().count() as u64;
    let progress = Progress::start(Some(lines * 2), "importing tool logs");
    let logs = parse_logs(&args.logs, &text, Some(&progress))?;
    refuse_empty(&args.logs, &logs)?;
    let store = database::open(&global.db)?;
    let sessions = store_logs(&store, &args.logs, &text, &logs, &global.db)?;
    progress.advance(logs.len() as u64);
    progress.finish();
    let report = sessions;
    if global.json {
        return print_json(&report);
    }
    let mut table = Table::new(["session", "tool logs", ""]);
    for row in &report {
        let state = if row.already_imported {
            "already imported, unchanged"
        } else {
            "imported"
        };
        table.row([row.session.clone(), row.logs.to_string(), state.to_owned()]);
    }
    print!("{table}");
    Ok(())
}
