//! `agent-memory recording ...`: tool logs to trail YAML with memory tokens (`templatize`),
//! a trail replayed under new memory values (`replay`, `replay --step`), literals that should
//! be tokens (`lint`), trails rewritten in canonical form (`fmt`), and tool logs copied into
//! the database (`import`, `append`). Tool logs are this crate's JSON documents or
//! Trailblaze's `TrailblazeLog` documents. Steps and tools are numbered from 1 in everything
//! printed.
//!
//! Every rule is the contract's (`recording_templatize`, `recording_replay`,
//! `recording_next_call`, `recording_lint`, `recording_fmt`, `recording_import`,
//! `recording_append`): a command reads its flags and standard input into an operation's
//! input, calls it, prints its output, and writes the files its user named (`--out`, `fmt`'s
//! rewrite in place).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use schemars::{JsonSchema, Schema};
use serde::Serialize;
use serde_json::Value;

use crate::ops::files::FileAccess;
use crate::ops::recording::{self as op, PlannedAction, UnresolvedToken};
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
    #[arg(long, default_value = op::DEFAULT_DEVICE, value_name = "CLASSIFIER")]
    device: String,
    /// The fewest characters an ordinary value needs to become a token.
    #[arg(long, default_value_t = op::DEFAULT_MIN_CHARS, value_name = "N")]
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
    #[arg(long, default_value_t = op::DEFAULT_MIN_CHARS, value_name = "N")]
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
    /// Who logged them (`tool:NAME`, `model:NAME`, `user`, ...); default each call's own
    /// tool.
    #[arg(long, value_name = "SOURCE")]
    source: Option<String>,
}

/// `recording append`: the logs after the session's stored ones, all or none.
fn append(args: &AppendArgs, global: &GlobalArgs) -> Result<()> {
    let logs: Vec<crate::ops::recording::ToolLogDocument> = crate::input::lines(&args.file)?;
    let store = global.open()?;
    let appended = crate::ops::recording::append(
        &global.env(&store),
        crate::ops::recording::AppendInput {
            session: args.session.clone(),
            logs,
            source: args.source.clone(),
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

/// The store of a command whose operation reads no memory (a file's tool logs, a trail): a
/// private one in memory, so such a command neither needs nor creates a database.
fn no_database() -> Result<database::Store> {
    Ok(database::open(
        Path::new(database::IN_MEMORY),
        &agent_memory_core::SharedClock::default(),
    )?)
}

/// `path` as an operation's input names it.
fn named(path: &Path) -> String {
    path.display().to_string()
}

/// Tells stderr which documents of `path` were not kept as tool logs, when some were not.
fn report_skipped(path: &Path, skipped: &[op::SkippedDocument]) {
    if !skipped.is_empty() {
        eprintln!(
            "{}: skipped {} document(s) as Trailblaze's recording generator does: {}",
            path.display(),
            skipped.len(),
            op::skip_summary(skipped)
        );
    }
}

/// A substitution of `recording templatize`, its tool numbered from 1.
#[derive(Serialize, JsonSchema)]
struct SubstitutionRow {
    tool: u64,
    path: String,
    key: String,
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
    steps: u64,
    substitutions: Vec<SubstitutionRow>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    skipped: Vec<op::SkippedDocument>,
}

fn templatize(args: &TemplatizeArgs, global: &GlobalArgs) -> Result<()> {
    let store = match &args.source.session {
        Some(_) => global.open_for_reading()?,
        None => no_database()?,
    };
    let input = op::TemplatizeInput {
        session: args.source.session.clone(),
        logs: None,
        logs_path: args.source.logs.as_deref().map(named),
        objectives: Vec::new(),
        objectives_path: args.objectives.as_deref().map(named),
        device: Some(args.device.clone()),
        min_chars: Some(args.min_chars),
        dry_run: args.dry_run,
        inside: args.inside,
        title: args.title.clone(),
    };
    let generated = op::templatize(&global.env(&store), input)?;
    if let (Some(path), false) = (&args.source.logs, global.json) {
        report_skipped(path, &generated.skipped);
    }
    let rows: Vec<SubstitutionRow> = generated
        .substitutions
        .into_iter()
        .map(|s| SubstitutionRow {
            tool: s.tool_index + 1,
            path: s.path,
            key: s.key,
            reason: s.reason,
        })
        .collect();
    let mut report = TemplatizeReport {
        trail: None,
        out: None,
        steps: generated.steps,
        substitutions: rows,
        skipped: generated.skipped,
    };
    let Some(yaml) = generated.trail else {
        // A dry run: the report only.
        if global.json {
            return print_json(&report);
        }
        print!("{}", substitution_table(&report.substitutions));
        return Ok(());
    };
    let Some(out) = &args.out else {
        if global.json {
            report.trail = Some(yaml);
            return print_json(&report);
        }
        print!("{yaml}");
        return Ok(());
    };
    std::fs::write(out, &yaml).with_context(|| format!("cannot write trail {}", out.display()))?;
    if global.json {
        report.out = Some(named(out));
        return print_json(&report);
    }
    println!(
        "wrote {} ({} step(s), {} substitution(s))",
        out.display(),
        report.steps,
        report.substitutions.len()
    );
    if !report.substitutions.is_empty() {
        print!("\n{}", substitution_table(&report.substitutions));
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

/// The memory values of `--memory`, `--set` and `--secret`, as an operation takes them.
struct MemoryInput {
    memory_path: Option<String>,
    memory: BTreeMap<String, String>,
    secrets: BTreeMap<String, String>,
}

/// `values` as an operation's input: a later `--set` or `--secret` wins over an earlier one
/// on a key.
fn memory_input(values: &MemoryValues) -> Result<MemoryInput> {
    let mut secrets = BTreeMap::new();
    for (i, text) in values.secret.iter().enumerate() {
        let Some((key, value)) = text.split_once('=').filter(|(key, _)| !key.is_empty()) else {
            bail!(
                "--secret number {} is not KEY=VALUE with a non-empty key (its text is not shown: it may be the secret)",
                i + 1
            );
        };
        secrets.insert(key.to_owned(), value.to_owned());
    }
    Ok(MemoryInput {
        memory_path: values.memory.as_deref().map(named),
        memory: values.set.iter().cloned().collect(),
        secrets,
    })
}

/// `recording replay --json`: the planned steps, or the memory keys nothing resolves.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
enum ReplayReport<'a> {
    /// Every step with its calls, parameters masked.
    Steps(&'a [op::PlannedStepEntry]),
    /// The keys the replay could not resolve (the command fails).
    Unresolved {
        /// Each unresolved key and where it is used.
        unresolved: &'a [UnresolvedToken],
    },
}

/// Prints `missing` (a table, or JSON lines in a step session) and fails naming the keys.
fn report_unresolved(
    args: &ReplayArgs,
    global: &GlobalArgs,
    missing: &[UnresolvedToken],
) -> Result<()> {
    if args.step {
        println!(
            "{}",
            serde_json::json!({ "event": "unresolved", "unresolved": missing })
        );
    } else if global.json {
        print_json(&ReplayReport::Unresolved {
            unresolved: missing,
        })?;
    } else {
        let mut table = Table::new(["key", "step", "tool", "path"]);
        for m in missing {
            table.row([
                m.key.clone(),
                m.step.map_or_else(String::new, |s| s.to_string()),
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

fn replay(args: &ReplayArgs, global: &GlobalArgs) -> Result<()> {
    let values = memory_input(&args.values)?;
    let trail_args: BTreeMap<String, String> = args.args.iter().cloned().collect();
    let store = no_database()?;
    let env = global.env(&store);
    let plan = op::replay(
        &env,
        op::ReplayInput {
            trail: None,
            trail_path: Some(named(&args.trail)),
            device: args.device.clone(),
            memory_path: values.memory_path.clone(),
            memory: values.memory.clone(),
            secrets: values.secrets.clone(),
            args: trail_args.clone(),
        },
    )?;
    if !plan.unresolved.is_empty() {
        return report_unresolved(args, global, &plan.unresolved);
    }
    if args.step {
        let next_call = |writes: Vec<Value>| op::NextCallInput {
            trail: None,
            trail_path: Some(named(&args.trail)),
            device: args.device.clone(),
            memory_path: values.memory_path.clone(),
            memory: values.memory.clone(),
            secrets: values.secrets.clone(),
            args: trail_args.clone(),
            writes,
        };
        return step_session(args, global, &env, next_call);
    }
    if global.json {
        return print_json(&ReplayReport::Steps(&plan.steps));
    }
    for step in &plan.steps {
        let title = match (step.kind, &step.objective) {
            (Some(kind), Some(text)) if step.trailhead => {
                format!("trailhead {}: {text}", kind.as_str())
            }
            (Some(kind), Some(text)) => format!("{}: {text}", kind.as_str()),
            _ => "tools".to_owned(),
        };
        let how = match (step.action, &step.classifier, step.calls.len()) {
            (PlannedAction::Agent, _, _) => {
                format!("no recording for {}: the agent drives it", args.device)
            }
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

/// The `--step` session: one JSON line out per dispatch, one JSON line of memory writes in,
/// each dispatch the contract's next call (`input` of the writes so far). A line that is not
/// valid writes gets an `error` event and the same dispatch stays pending; stdin closing
/// before the end is an error.
fn step_session(
    args: &ReplayArgs,
    global: &GlobalArgs,
    env: &crate::ops::Env<'_>,
    input: impl Fn(Vec<Value>) -> op::NextCallInput,
) -> Result<()> {
    use std::io::BufRead;
    let emit = |value: Value| println!("{value}");
    let mut writes: Vec<Value> = Vec::new();
    let mut next = op::next_call(env, input(Vec::new()))?;
    emit(serde_json::json!({
        "event": "start",
        "device": args.device,
        "dispatches": next.dispatches_total,
    }));
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut line_number = 0;
    loop {
        if !next.unresolved.is_empty() {
            return report_unresolved(args, global, &next.unresolved);
        }
        let Some(dispatch) = &next.next else {
            break;
        };
        emit(dispatch_event(dispatch)?);
        loop {
            line_number += 1;
            let Some(line) = lines.next() else {
                bail!(
                    "stdin closed after {} of {} dispatches; send the memory writes of each, `{{}}` for none",
                    writes.len(),
                    next.dispatches_total
                );
            };
            let line = line.context("cannot read stdin")?;
            let error = |message: String| serde_json::json!({"event": "error", "line": line_number, "message": message});
            let value = match serde_json::from_str::<Value>(&line) {
                Ok(value) => value,
                Err(e) => {
                    emit(error(format!("not JSON: {}", json_message(&e))));
                    continue;
                }
            };
            writes.push(value);
            let these = format!("writes[{}]", writes.len() - 1);
            match op::next_call(env, input(writes.clone())) {
                Ok(answer) => {
                    next = answer;
                    break;
                }
                // The line's writes are not what a replay reads: the dispatch stays pending.
                Err(refused) if refused.input() == Some(these.as_str()) => {
                    writes.pop();
                    emit(error(refused.message().to_owned()));
                }
                Err(other) => return Err(other.into()),
            }
        }
    }
    emit(serde_json::json!({
        "event": "done",
        "dispatches": writes.len(),
    }));
    Ok(())
}

/// A dispatch (the contract's `next`) as a session event, numbered from 1 like every step
/// and tool the command prints: `{"event": "dispatch", "dispatch": 1, "step": 1, ...}`.
fn dispatch_event(dispatch: &Value) -> Result<Value> {
    let Value::Object(fields) = dispatch else {
        bail!("a dispatch is a JSON object");
    };
    let number = |key: &str| {
        fields
            .get(key)
            .and_then(Value::as_u64)
            .map_or(Value::Null, |n| (n + 1).into())
    };
    let mut event = serde_json::Map::new();
    event.insert("event".to_owned(), "dispatch".into());
    event.insert("dispatch".to_owned(), number("index"));
    event.insert("step".to_owned(), number("step"));
    for (key, value) in fields {
        if key != "index" && key != "step" {
            event.insert(key.clone(), value.clone());
        }
    }
    Ok(Value::Object(event))
}

/// A serde_json error's message without its position suffix.
fn json_message(error: &serde_json::Error) -> String {
    let message = error.to_string();
    message
        .find(" at line ")
        .map_or(message.clone(), |cut| message[..cut].to_owned())
}

fn lint(args: &LintArgs, global: &GlobalArgs) -> Result<()> {
    let values = memory_input(&args.values)?;
    let store = match &args.session {
        Some(_) => global.open_for_reading()?,
        None => no_database()?,
    };
    let report = op::lint(
        &global.env(&store),
        op::LintInput {
            trail: None,
            trail_path: Some(named(&args.trail)),
            memory_path: values.memory_path,
            memory: values.memory,
            secrets: values.secrets,
            session: args.session.clone(),
            min_chars: Some(args.min_chars),
        },
    )?;
    let rows = &report.findings;
    if global.json {
        print_json(rows)?;
    } else if rows.is_empty() {
        println!(
            "{}: no literal equals or holds a memory value",
            args.trail.display()
        );
    } else {
        let mut table = Table::new(["location", "kind", "token", "reason", "found in"]);
        for row in rows {
            table.row([
                row.location.clone(),
                row.kind.as_str().to_owned(),
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

/// `fmt`: every file parsed first by the operation (a trail Trailblaze would refuse is an
/// error and nothing is written), then each rewritten in canonical form, printed, or checked.
fn fmt(args: &FmtArgs, global: &GlobalArgs) -> Result<()> {
    let store = no_database()?;
    let formatted = op::fmt(
        &global.env(&store),
        op::FmtInput {
            trail: None,
            paths: args.trails.iter().map(|p| named(p)).collect(),
        },
    )?;
    let mut report = Vec::new();
    for (path, trail) in args.trails.iter().zip(&formatted.trails) {
        if args.stdout {
            print!("{}", trail.formatted);
        } else if !args.check && !trail.canonical {
            std::fs::write(path, &trail.formatted)
                .with_context(|| format!("cannot write trail {}", path.display()))?;
        }
        report.push(FormattedTrail {
            file: trail.file.clone(),
            canonical: trail.canonical,
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

/// The schemas of what `recording` prints with `--json` beyond the operations' outputs:
/// `templatize` numbers tools from 1 and says where it wrote the trail, and `replay`, `lint`,
/// `fmt` and `import` print a list from their operation's output.
pub(super) fn schemas() -> Vec<(String, Schema)> {
    use super::output;
    vec![
        output::<TemplatizeReport>("recording_templatize_report.output"),
        output::<ReplayReport<'static>>("recording_replay_report.output"),
        output::<Vec<op::LintFinding>>("recording_lint_report.output"),
        output::<Vec<FormattedTrail>>("recording_fmt_report.output"),
        output::<Vec<op::ImportedSession>>("recording_import_report.output"),
    ]
}

fn import(args: &ImportArgs, global: &GlobalArgs) -> Result<()> {
    let input = op::ImportInput {
        path: named(&args.logs),
    };
    let progress = Progress::start(None, "importing tool logs");
    // Every document is read and checked before the database is opened, so a file refused
    // creates no database. The user names their own files.
    let read = op::ToolLogImport::read(&input, &FileAccess::Any)?;
    report_skipped(&args.logs, read.skipped());
    let store = global.open()?;
    let imported = read.store(&global.env(&store))?;
    progress.finish();
    if global.json {
        return print_json(&imported.sessions);
    }
    let mut table = Table::new(["session", "tool logs", ""]);
    for row in &imported.sessions {
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
