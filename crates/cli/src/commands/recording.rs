//! `agent-memory recording ...`: tool logs to trail YAML with memory tokens (`templatize`),
//! a trail resolved under new memory values (`replay`), literals that should be tokens
//! (`lint`), and tool logs copied into the database (`import`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use agent_memory_core::store::tool_log::{ToolLog, ToolLogStore};
use agent_memory_core::{Error as CoreError, SessionId, Timestamp};
use agent_memory_recording::{
    GenerationPolicy, Memory, Objective, Origin, Provenance, RecordingError, Snapshot, StepAction,
    StepKind, TemplatePolicy, Trail, lint_trail, plan_replay, tool_log_from_json,
};
use agent_memory_sqlite::SqliteStore;
use anyhow::{Context, Result, bail};
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
    /// List literals in a trail that equal memory values (recordings that go stale).
    Lint(LintArgs),
    /// Copy tool logs from a JSONL file into the database.
    Import(ImportArgs),
}

/// Where the tool logs come from: a file or the database.
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
struct LogSource {
    /// A JSONL file of tool logs, one JSON document per line.
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
    /// {"verify": "...", "started_at": 3500}]`. Without it, one step holds every call.
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
}

/// Memory values from the command line and a file.
#[derive(Debug, clap::Args)]
struct MemoryValues {
    /// A memory value; repeat for more. Wins over `--memory`.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    set: Vec<(String, String)>,
    /// A JSON file holding one object of memory values: `{"merchant_email": "..."}`.
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
    /// The device classifier; the closest recording wins (`android-phone`, then `android`).
    #[arg(long, value_name = "CLASSIFIER")]
    device: String,
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
        RecordingCommand::Import(args) => import(&args, global),
    }
}

fn read_text(path: &Path) -> Result<String> {
    let text = std::fs::read_to_string(path)
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
fn store_logs<'a>(
    store: &SqliteStore,
    path: &Path,
    text: &str,
    logs: &'a [ToolLog],
    db: &Path,
) -> Result<BTreeMap<&'a str, usize>> {
    refuse_empty(path, logs)?;
    let mut sessions: BTreeMap<&str, usize> = BTreeMap::new();
    for log in logs {
        *sessions.entry(log.session.as_str()).or_default() += 1;
    }
    match store.import_tool_logs(logs) {
        Ok(()) => Ok(sessions),
        Err(CoreError::Conflict { key, reason, .. }) => bail!(
            "session {key:?} {reason} in {}; importing {} again would repeat them",
            db.display(),
            path.display()
        ),
        Err(CoreError::InvalidInput { field, reason }) => {
            // The store names a log by its place in the batch: name its line instead.
            let line = field.strip_prefix("tool log ").and_then(|rest| {
                let (number, what) = rest.split_once(' ').unwrap_or((rest, ""));
                let index = number.parse::<usize>().ok()?.checked_sub(1)?;
                Some((log_lines(text).get(index).copied()?, what.to_owned()))
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

/// Reads every tool log of the JSONL `text` of `path`; an error names the file and the line.
fn parse_logs(path: &Path, text: &str, progress: Option<&Progress>) -> Result<Vec<ToolLog>> {
    let mut logs = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if let Some(progress) = progress {
            progress.advance(1);
        }
        if line.trim().is_empty() {
            continue;
        }
        let log = tool_log_from_json(line)
            .with_context(|| format!("{}:{}", path.display(), index + 1))?;
        logs.push(log);
    }
    Ok(logs)
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
    let text = std::fs::read_to_string(path)
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
            Ok(Objective {
                kind,
                text,
                started_at: Timestamp::from_millis(d.started_at),
            })
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

#[derive(Serialize)]
struct SubstitutionRow {
    tool_index: usize,
    path: String,
    key: String,
    reason: String,
}

#[derive(Serialize)]
struct TemplatizeReport {
    #[serde(skip_serializing_if = "Option::is_none")]
    trail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    out: Option<String>,
    steps: usize,
    substitutions: Vec<SubstitutionRow>,
}

fn templatize(args: &TemplatizeArgs, global: &GlobalArgs) -> Result<()> {
    let (logs, name) = match (&args.source.logs, &args.source.session) {
        (Some(path), _) => {
            let logs = parse_logs(path, &read_text(path)?, None)?;
            let sessions: BTreeSet<&str> = logs.iter().map(|l| l.session.as_str()).collect();
            if sessions.len() > 1 {
                bail!(
                    "{} holds the tool logs of {} sessions ({}); import it and templatize one with --session",
                    path.display(),
                    sessions.len(),
                    sessions.into_iter().collect::<Vec<_>>().join(", ")
                );
            }
            (logs, path.display().to_string())
        }
        (None, Some(id)) => {
            let session = session_id(id)?;
            let store = database::open(&global.db)?;
            let logs = store.list_tool_logs(&session)?;
            if logs.is_empty() {
                bail!("session {id:?} has no tool logs in {}", global.db.display());
            }
            (logs, format!("session {id}"))
        }
        (None, None) => bail!("give a file of tool logs or --session"),
    };
    let objectives = match &args.objectives {
        Some(path) => read_objectives(path)?,
        None => vec![Objective {
            kind: StepKind::Step,
            text: format!("Replay {name}"),
            started_at: Timestamp::from_millis(i64::MIN),
        }],
    };
    let mut policy = GenerationPolicy::for_classifier(args.device.clone());
    policy.template.min_chars = args.min_chars;
    policy.template.dry_run = args.dry_run;
    let generated = agent_memory_recording::generate_recording(&objectives, &logs, &policy)
        .with_context(|| format!("templatizing {name}"))?;
    let rows: Vec<SubstitutionRow> = generated
        .substitutions
        .iter()
        .map(|s| SubstitutionRow {
            tool_index: s.tool_index,
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
            row.tool_index.to_string(),
            row.path.clone(),
            row.key.clone(),
            row.reason.clone(),
        ]);
    }
    table.to_string()
}

/// The memory values of `--memory` then `--set`, by key.
fn memory_values(values: &MemoryValues) -> Result<BTreeMap<String, String>> {
    let mut memory = BTreeMap::new();
    if let Some(path) = &values.memory {
        let text = std::fs::read_to_string(path)
            .map(without_bom)
            .with_context(|| format!("cannot read memory values {}", path.display()))?;
        let object: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).map_err(|e| json_error(path, &e))?;
        for (key, value) in object {
            let value = match value {
                serde_json::Value::String(text) => text,
                serde_json::Value::Number(n) => n.to_string(),
                serde_json::Value::Bool(b) => b.to_string(),
                other => bail!(
                    "{}: memory value of {key:?} is {other}, not a string, number or boolean",
                    path.display()
                ),
            };
            memory.insert(key, value);
        }
    }
    for (key, value) in &values.set {
        memory.insert(key.clone(), value.clone());
    }
    Ok(memory)
}

#[derive(Serialize)]
struct PlannedStepRow {
    kind: Option<&'static str>,
    text: Option<String>,
    classifier: Option<String>,
    action: &'static str,
    calls: Vec<CallRow>,
}

#[derive(Serialize)]
struct CallRow {
    tool: String,
    parameters: serde_json::Value,
}

#[derive(Serialize)]
struct UnresolvedRow<'a> {
    key: &'a str,
    path: &'a str,
}

fn kind_name(kind: StepKind) -> &'static str {
    match kind {
        StepKind::Step => "step",
        StepKind::Verify => "verify",
    }
}

fn replay(args: &ReplayArgs, global: &GlobalArgs) -> Result<()> {
    let trail = Trail::read(&args.trail)?;
    let memory = memory_values(&args.values)?;
    let plan = match plan_replay(&trail, &args.device, &memory) {
        Ok(plan) => plan,
        Err(RecordingError::Unresolved { missing }) => {
            if global.json {
                let rows: Vec<UnresolvedRow<'_>> = missing
                    .iter()
                    .map(|m| UnresolvedRow {
                        key: &m.key,
                        path: &m.path,
                    })
                    .collect();
                print_json(&serde_json::json!({ "unresolved": rows }))?;
            } else {
                let mut table = Table::new(["key", "path"]);
                for m in &missing {
                    table.row([m.key.clone(), m.path.clone()]);
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
        Err(other) => return Err(other.into()),
    };
    let rows: Vec<PlannedStepRow> = plan
        .into_iter()
        .map(|step| {
            let (action, calls) = match step.action {
                StepAction::Replay(calls) => ("replay", calls),
                StepAction::Agent => ("agent", Vec::new()),
            };
            PlannedStepRow {
                kind: step.objective.as_ref().map(|(k, _)| kind_name(*k)),
                text: step.objective.map(|(_, text)| text),
                classifier: step.classifier,
                action,
                calls: calls
                    .into_iter()
                    .map(|c| CallRow {
                        tool: c.tool,
                        parameters: c.parameters,
                    })
                    .collect(),
            }
        })
        .collect();
    if global.json {
        return print_json(&rows);
    }
    for (i, step) in rows.iter().enumerate() {
        let title = match (step.kind, &step.text) {
            (Some(kind), Some(text)) => format!("{kind}: {text}"),
            _ => "tools".to_owned(),
        };
        let how = match (step.action, &step.classifier) {
            ("agent", _) => format!("no recording for {}: the agent drives it", args.device),
            (_, Some(classifier)) => format!("replayed from {classifier}"),
            _ => "replayed".to_owned(),
        };
        println!("{}. {title} ({how})", i + 1);
        for call in &step.calls {
            println!("   {} {}", call.tool, call.parameters);
        }
    }
    Ok(())
}

#[derive(Serialize)]
struct StaleRow {
    location: String,
    key: String,
    reason: String,
    found_in: String,
}

fn lint(args: &LintArgs, global: &GlobalArgs) -> Result<()> {
    let trail = Trail::read(&args.trail)?;
    let mut memory = Memory::new();
    for (key, value) in memory_values(&args.values)? {
        memory.remember(key, value, Provenance::unknown(Timestamp::from_millis(0)));
    }
    let policy = TemplatePolicy {
        min_chars: args.min_chars,
        ..TemplatePolicy::default()
    };
    // Each past snapshot with the index of the tool log that holds it.
    let past: Vec<(usize, Snapshot)> = match &args.session {
        Some(id) => {
            let store = database::open(&global.db)?;
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
            key: f.key,
            reason: f.reason.to_string(),
            found_in: match f.origin {
                Origin::Current => "current memory".to_owned(),
                Origin::Past(i) => match (past.get(i), &args.session) {
                    (Some((tool, _)), Some(id)) => format!("session {id}, after tool {tool}"),
                    _ => format!("past snapshot {i}"),
                },
            },
        })
        .collect();
    if global.json {
        print_json(&rows)?;
    } else if rows.is_empty() {
        println!("{}: no literal equals a memory value", args.trail.display());
    } else {
        let mut table = Table::new(["location", "token", "reason", "found in"]);
        for row in &rows {
            table.row([
                row.location.clone(),
                format!("${{{}}}", row.key),
                row.reason.clone(),
                row.found_in.clone(),
            ]);
        }
        print!("{table}");
    }
    if args.deny && !rows.is_empty() {
        bail!(
            "{}: {} literal(s) equal memory values",
            args.trail.display(),
            rows.len()
        );
    }
    Ok(())
}

#[derive(Serialize)]
struct ImportedSession {
    session: String,
    logs: usize,
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
    let report: Vec<ImportedSession> = sessions
        .into_iter()
        .map(|(session, logs)| ImportedSession {
            session: session.to_owned(),
            logs,
        })
        .collect();
    if global.json {
        return print_json(&report);
    }
    let mut table = Table::new(["session", "tool logs"]);
    for row in &report {
        table.row([row.session.clone(), row.logs.to_string()]);
    }
    print!("{table}");
    Ok(())
}
