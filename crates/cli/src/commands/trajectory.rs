//! `agent-memory trajectory`: procedural memory (crate `trajectory`): record episodes,
//! crystallize them into patterns, recall what worked, and compute popoto's fingerprint.
//!
//! The configuration of a partition is chosen once: the first `record` into a partition
//! stores its fingerprint fields (from `--fields`, else the default), cluster threshold,
//! evidence cap and initial confidence (from their flags, else popoto's defaults) in the
//! database's meta store under `trajectory.<setting>.<partition>`, in the same transaction as
//! its episodes. Every later command on that partition reads them from there, so only the
//! first command needs the flags; a later flag that disagrees is refused. A partition stored
//! before the settings other than its fields were kept has popoto's defaults for them. The
//! rule lives once, in the operations (`ops::trajectory`), which these commands call and whose
//! outputs they print with `--json`; so do the fingerprint and the names of the ranking
//! weights.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use crate::GlobalArgs;
use crate::ops::trajectory::{self, EpisodeInput, PatternEntry, TimeInput};
use crate::output::{Table, print_json};
use crate::progress::Progress;

/// `trajectory` and its subcommands.
#[derive(Debug, clap::Args)]
pub(crate) struct TrajectoryArgs {
    #[command(subcommand)]
    command: TrajectoryCommand,
}

#[derive(Debug, clap::Subcommand)]
enum TrajectoryCommand {
    /// Record one episode from flags, or many from a JSONL file in one transaction.
    Record(RecordArgs),
    /// Crystallize the partition's new episodes; prints the patterns created or reinforced.
    Crystallize(CrystallizeArgs),
    /// The patterns matching a full or partial fingerprint, best first.
    Recall(RecallArgs),
    /// popoto's 16-hex fingerprint of a JSON object of features.
    Fingerprint(FingerprintArgs),
    /// Every pattern of a partition, no fingerprint needed.
    Patterns(PatternsArgs),
}

#[derive(Debug, clap::Args)]
struct PatternsArgs {
    /// The partition.
    #[arg(long)]
    partition: String,
}

/// Which partition, and its configuration.
#[derive(Debug, clap::Args)]
struct PartitionArgs {
    /// The tenant, agent or team the episodes belong to.
    #[arg(long)]
    partition: String,
    /// The fingerprint fields of the partition, comma-separated. Stored with the first
    /// record into a partition and read from the database afterwards; default
    /// `problem_topology,affected_layer`.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    fields: Vec<String>,
    /// Episodes a fingerprint group needs before it becomes a pattern (popoto's
    /// `cluster_threshold`). Stored with the first record into a partition; default 3.
    #[arg(long, value_name = "N")]
    threshold: Option<u64>,
    /// The evidence cap of the confidence rule. Stored with the first record into a
    /// partition; default 20.
    #[arg(long, value_name = "N")]
    evidence_cap: Option<u64>,
    /// A new pattern's confidence before its first observation, in [0, 1]. Stored with the
    /// first record into a partition; default 0.5.
    #[arg(long, value_name = "X")]
    initial_confidence: Option<f64>,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["file", "action", "trajectory"])))]
#[command(group(clap::ArgGroup::new("outcome").args(["success", "failure", "score"])))]
struct RecordArgs {
    #[command(flatten)]
    partition: PartitionArgs,
    /// A fingerprint value `name=value` (repeat for each field).
    #[arg(long = "field", value_parser = parse_pair, value_name = "NAME=VALUE")]
    values: Vec<(String, String)>,
    /// One action of the trajectory (repeat, in order).
    #[arg(long, requires = "outcome")]
    action: Vec<String>,
    /// The whole trajectory, comma-separated (an action holding a comma: --action)
    // A value whose commas may not all separate actions is a usage error (`parse_trajectory`).
    #[arg(
        long,
        value_parser = parse_trajectory,
        requires = "outcome",
        value_name = "A,B,C"
    )]
    trajectory: Vec<Actions>,
    /// The episode succeeded (`{"success": true}`).
    #[arg(long)]
    success: bool,
    /// The episode failed (`{"success": false}`).
    #[arg(long)]
    failure: bool,
    /// The episode's success as a number in [0, 1].
    #[arg(long, value_name = "X", value_parser = parse_score)]
    score: Option<f64>,
    /// A JSONL file, one episode a line:
    /// `{"fingerprint": {"name": "value"}, "trajectory": ["a", "b"], "outcome": {"success": true}}`.
    #[arg(long, conflicts_with_all = ["outcome", "values"], value_name = "PATH")]
    file: Option<PathBuf>,
    /// Who the episodes come from, kept as their writer: `user` (the default), `model:NAME`,
    /// `tool:NAME`, `import:FORMAT`, ...
    #[arg(long = "source", id = "writer_source", value_name = "SOURCE")]
    writer_source: Option<String>,
    /// The session or run that recorded them, kept with their writer.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
}

#[derive(Debug, clap::Args)]
struct CrystallizeArgs {
    #[command(flatten)]
    partition: PartitionArgs,
}

#[derive(Debug, clap::Args)]
struct RecallArgs {
    #[command(flatten)]
    partition: PartitionArgs,
    /// A fingerprint value `name=value` to match (repeat; a subset of the fields).
    #[arg(long = "field", value_parser = parse_pair, value_name = "NAME=VALUE", required = true)]
    values: Vec<(String, String)>,
    /// At most this many patterns (default 5).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Ranking weights, e.g. `confidence=0.6,recency=0.4` (default); naming weights replaces
    /// the default set, so a weight not named is 0, as popoto's `score_weights`. With no
    /// positive weight nothing is recalled.
    #[arg(long, value_parser = parse_weights, value_name = "confidence=X,recency=Y")]
    weights: Option<(f64, f64)>,
}

#[derive(Debug, clap::Args)]
struct FingerprintArgs {
    /// A JSON object of features, e.g. `{"task": "deploy", "env": "staging"}`.
    features: String,
}

/// `name=value`, both non-empty names.
fn parse_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("expected name=value, got {text:?}")),
    }
}

/// The actions of one `--trajectory` value.
#[derive(Debug, Clone)]
struct Actions(Vec<String>);

/// `a,b,c` as actions, refusing a value whose commas may not all separate actions: a comma
/// inside brackets or quotes (`click(a, b)`), a space beside a comma, an empty action.
fn parse_trajectory(text: &str) -> Result<Actions, String> {
    let mut depth = 0_i32;
    let mut quote: Option<char> = None;
    let mut nested_comma = false;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), ',') => nested_comma = true,
            (Some(_), _) => {}
            (None, '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth > 0 => nested_comma = true,
            _ => {}
        }
    }
    let actions: Vec<String> = text.split(',').map(str::to_owned).collect();
    let reason = if nested_comma {
        "it holds a comma inside brackets or quotes"
    } else if actions.iter().any(|a| a.is_empty()) {
        "an action would be empty"
    } else if actions.iter().any(|a| a.trim() != a) {
        "an action would begin or end with a space"
    } else {
        return Ok(Actions(actions));
    };
    Err(format!(
        "{text:?} is ambiguous: --trajectory splits actions at every comma, and {reason}; give each action with --action (repeat, in order) or record from a JSON file with --file"
    ))
}

/// A number in `[0, 1]`.
fn parse_score(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("expected a number from 0 to 1, got {text:?}")),
    }
}

/// `confidence=X,recency=Y` as a recall's confidence and recency weights, the names read by
/// the contract.
fn parse_weights(text: &str) -> Result<(f64, f64), String> {
    let mut pairs = Vec::new();
    for pair in text.split(',') {
        let (name, value) = parse_pair(pair)?;
        let value: f64 = value
            .parse()
            .map_err(|_| format!("weight {name} is not a number: {value:?}"))?;
        pairs.push((name, value));
    }
    trajectory::named_weights(pairs.iter().map(|(name, value)| (name.as_str(), *value)))
        .map_err(|e| e.to_string())
}

pub(crate) fn run(args: &TrajectoryArgs, global: &GlobalArgs) -> Result<()> {
    match &args.command {
        TrajectoryCommand::Record(record) => run_record(record, global),
        TrajectoryCommand::Crystallize(crystallize) => run_crystallize(crystallize, global),
        TrajectoryCommand::Recall(recall) => run_recall(recall, global),
        TrajectoryCommand::Fingerprint(fingerprint) => run_fingerprint(fingerprint, global),
        TrajectoryCommand::Patterns(patterns) => run_patterns(patterns, global),
    }
}

impl PartitionArgs {
    /// The configuration the flags give; the operations check it against the stored one.
    fn given(&self) -> trajectory::Settings {
        trajectory::Settings {
            fields: (!self.fields.is_empty()).then(|| self.fields.clone()),
            cluster_threshold: self.threshold,
            evidence_cap: self.evidence_cap,
            initial_confidence: self.initial_confidence,
        }
    }
}

/// The fingerprint of `--field` flags; a field named twice is an error.
fn fingerprint_of(values: &[(String, String)]) -> Result<BTreeMap<String, String>> {
    let mut fingerprint = BTreeMap::new();
    for (name, value) in values {
        if fingerprint.insert(name.clone(), value.clone()).is_some() {
            bail!("--field {name} is given more than once");
        }
    }
    Ok(fingerprint)
}

fn run_record(args: &RecordArgs, global: &GlobalArgs) -> Result<()> {
    let (episodes, lines) = match &args.file {
        Some(path) => read_episodes(path)?,
        None => {
            let outcome = if args.success {
                json!({"success": true})
            } else if args.failure {
                json!({"success": false})
            } else {
                json!({"success": args.score.unwrap_or(0.5)})
            };
            let trajectory = if args.action.is_empty() {
                args.trajectory.iter().flat_map(|a| a.0.clone()).collect()
            } else {
                args.action.clone()
            };
            let episode = EpisodeInput {
                fingerprint: fingerprint_of(&args.values)?,
                trajectory,
                outcome,
                recorded_at: None,
            };
            (vec![episode], Vec::new())
        }
    };
    let given = args.partition.given();
    let input = trajectory::RecordInput {
        partition: args.partition.partition.clone(),
        fields: given.fields,
        cluster_threshold: given.cluster_threshold,
        evidence_cap: given.evidence_cap,
        initial_confidence: given.initial_confidence,
        extra_fields: Default::default(),
        episodes,
        source: args.writer_source.clone(),
        session: args.session.clone(),
    };
    let store = global.open()?;
    let env = global.env(&store);
    let name = |i: usize| match (&args.file, lines.get(i)) {
        (Some(path), Some(line)) => format!("{}: line {line}", path.display()),
        _ => "the episode".to_owned(),
    };
    let progress = Progress::start(None, "recording episodes");
    let recorded = trajectory::record_naming(&env, &input, &name);
    progress.finish();
    // Every error names the line of the file, or the partition, already.
    let report = recorded?;
    if global.json {
        return print_json(&report);
    }
    println!(
        "recorded {} episode{} in partition {} (fingerprint fields: {})",
        report.episodes,
        if report.episodes == 1 { "" } else { "s" },
        report.partition,
        report.fields.join(", ")
    );
    Ok(())
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EpisodeLine {
    fingerprint: Map<String, Value>,
    trajectory: Vec<String>,
    outcome: Value,
    /// When the episode happened: RFC 3339 text or milliseconds since the epoch.
    #[serde(default)]
    recorded_at: Option<Value>,
}

/// The episodes of a JSONL file (blank lines skipped) with the 1-based line of each; an
/// error names the file and line.
fn read_episodes(path: &Path) -> Result<(Vec<EpisodeInput>, Vec<usize>)> {
    // A file, or `-` for standard input.
    let (_, text) = crate::input::read_text(path)?;
    let lines: Vec<&str> = text.lines().collect();
    let progress = Progress::start(Some(lines.len() as u64), "reading episodes");
    let mut episodes = Vec::with_capacity(lines.len());
    let mut numbers = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        progress.advance(1);
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{}: line {}", path.display(), i + 1);
        let parsed: EpisodeLine = serde_json::from_str(line).with_context(at)?;
        let mut fingerprint = BTreeMap::new();
        for (name, value) in parsed.fingerprint {
            match value {
                Value::String(value) => {
                    fingerprint.insert(name, value);
                }
                other => bail!(
                    "{}: fingerprint field {name:?} must be a string, got {other}",
                    at()
                ),
            }
        }
        let recorded_at = match parsed.recorded_at {
            None | Some(Value::Null) => None,
            Some(Value::Number(ms)) => match ms.as_i64() {
                Some(ms) => Some(TimeInput::Millis(ms)),
                None => bail!(
                    "{}: recorded_at {ms} is not a whole number of milliseconds",
                    at()
                ),
            },
            Some(Value::String(text)) => Some(TimeInput::Text(text)),
            Some(other) => bail!(
                "{}: recorded_at must be RFC 3339 text or milliseconds, got {other}",
                at()
            ),
        };
        episodes.push(EpisodeInput {
            fingerprint,
            trajectory: parsed.trajectory,
            outcome: parsed.outcome,
            recorded_at,
        });
        numbers.push(i + 1);
    }
    progress.finish();
    if episodes.is_empty() {
        bail!("{} holds no episodes", path.display());
    }
    Ok((episodes, numbers))
}

fn fingerprint_text(fingerprint: &BTreeMap<String, String>) -> String {
    fingerprint
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The patterns as a table, with a score column when they were recalled.
fn print_patterns(patterns: &[PatternEntry], empty: &str) {
    if patterns.is_empty() {
        println!("{empty}");
        return;
    }
    let cells = |entry: &PatternEntry| {
        [
            format!("{:.3}", entry.confidence),
            entry.evidence_count.to_string(),
            format!("{}/{}", entry.corroborations, entry.contradictions),
            fingerprint_text(&entry.fingerprint),
            entry.canonical_sequence.join(" → "),
        ]
    };
    if patterns.iter().any(|p| p.score.is_some()) {
        let mut table = Table::new([
            "score",
            "confidence",
            "evidence",
            "+/-",
            "fingerprint",
            "sequence",
        ]);
        for entry in patterns {
            let [c, e, pm, f, q] = cells(entry);
            let score = entry.score.map_or_else(String::new, |s| format!("{s:.3}"));
            table.row([score, c, e, pm, f, q]);
        }
        print!("{table}");
    } else {
        let mut table = Table::new(["confidence", "evidence", "+/-", "fingerprint", "sequence"]);
        for entry in patterns {
            table.row(cells(entry));
        }
        print!("{table}");
    }
}

fn run_crystallize(args: &CrystallizeArgs, global: &GlobalArgs) -> Result<()> {
    let store = global.open_existing_for_writing()?;
    let report = trajectory::crystallize(
        &global.env(&store),
        trajectory::CrystallizeInput {
            partition: args.partition.partition.clone(),
            given: args.partition.given(),
        },
    )?;
    if global.json {
        return print_json(&report);
    }
    note(report.note.as_deref());
    print_patterns(
        &report.patterns,
        &format!(
            "no pattern created or reinforced in partition {}",
            report.partition
        ),
    );
    if report.pending_groups.is_empty() {
        return Ok(());
    }
    let count = report.pending_groups.len();
    println!(
        "{count} group{} below the threshold of {} episodes:",
        if count == 1 { "" } else { "s" },
        report.threshold
    );
    let mut table = Table::new(["episodes", "fingerprint"]);
    for group in &report.pending_groups {
        table.row([
            format!("{}/{}", group.episodes, report.threshold),
            fingerprint_text(&group.fingerprint),
        ]);
    }
    print!("{table}");
    Ok(())
}

fn run_recall(args: &RecallArgs, global: &GlobalArgs) -> Result<()> {
    let store = global.open_for_reading()?;
    let (confidence_weight, recency_weight) = match args.weights {
        Some((confidence, recency)) => (Some(confidence), Some(recency)),
        None => (None, None),
    };
    let report = trajectory::recall(
        &global.env(&store),
        trajectory::RecallInput {
            partition: args.partition.partition.clone(),
            fingerprint: fingerprint_of(&args.values)?,
            limit: args.limit,
            confidence_weight,
            recency_weight,
            given: args.partition.given(),
        },
    )?;
    if global.json {
        return print_json(&report);
    }
    note(report.note.as_deref());
    print_patterns(&report.patterns, "no pattern matches");
    Ok(())
}

/// Why a result is empty (a partition that holds nothing yet), on stderr so stdout keeps the
/// result alone.
fn note(note: Option<&str>) {
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
}

fn run_fingerprint(args: &FingerprintArgs, global: &GlobalArgs) -> Result<()> {
    // A fingerprint needs no database: the operation runs on a private one in memory.
    let store = global.open_scratch()?;
    // The text itself, so an integer of any size hashes as Python prints it.
    let computed = trajectory::fingerprint(
        &global.env(&store),
        trajectory::FingerprintInput {
            features: Value::String(args.features.clone()),
        },
    )?;
    if global.json {
        return print_json(&computed);
    }
    println!("{}", computed.fingerprint);
    Ok(())
}

/// `trajectory patterns`: every pattern of the partition, best evidence first as stored.
fn run_patterns(args: &PatternsArgs, global: &GlobalArgs) -> Result<()> {
    let store = global.open_for_reading()?;
    let listed = trajectory::patterns(
        &global.env(&store),
        trajectory::PatternsInput {
            partition: args.partition.clone(),
        },
    )?;
    if global.json {
        return print_json(&listed);
    }
    note(listed.note.as_deref());
    if listed.patterns.is_empty() {
        println!("no pattern in partition {} yet", listed.partition);
        return Ok(());
    }
    let mut table = Table::new(["fingerprint", "trajectory", "confidence", "evidence"]);
    for p in &listed.patterns {
        let fingerprint: Vec<String> = p
            .fingerprint
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        table.row([
            fingerprint.join(","),
            p.canonical_sequence.join(","),
            format!("{:.4}", p.confidence),
            p.evidence_count.to_string(),
        ]);
    }
    print!("{table}");
    Ok(())
}
