//! `agent-memory trajectory`: procedural memory (crate `trajectory`): record episodes,
//! crystallize them into patterns, recall what worked, and compute popoto's fingerprint.
//!
//! The configuration of a partition is chosen once: the first `record` into a partition
//! stores its fingerprint fields (from `--fields`, else the default), cluster threshold,
//! evidence cap and initial confidence (from their flags, else popoto's defaults) in the
//! database's meta store under `trajectory.<setting>.<partition>`, in the same transaction as
//! its episodes. Every later command on that partition reads them from there, so only the
//! first command needs the flags; a later flag that disagrees is refused. A partition stored
//! before the settings other than its fields were kept has popoto's defaults for them.

use std::path::{Path, PathBuf};

use agent_memory_core::{Clock, MetaKey, MetaStore, Partition, Timestamp};
use agent_memory_trajectory::{
    Config, EpisodeRecord, Pattern, RecallOptions, TrajectoryMemory, Weights,
};
use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::output::{Table, print_json};
use crate::progress::Progress;
use crate::{GlobalArgs, database};

/// The fingerprint fields of a partition when none are stored and `--fields` is not given.
const DEFAULT_FIELDS: [&str; 2] = ["problem_topology", "affected_layer"];

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
    /// The whole trajectory, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        requires = "outcome",
        value_name = "A,B,C"
    )]
    trajectory: Vec<String>,
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
    weights: Option<Weights>,
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

/// A number in `[0, 1]`.
fn parse_score(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("expected a number from 0 to 1, got {text:?}")),
    }
}

fn parse_weights(text: &str) -> Result<Weights, String> {
    let mut pairs = Vec::new();
    for pair in text.split(',') {
        let (name, value) = parse_pair(pair)?;
        let value: f64 = value
            .parse()
            .map_err(|_| format!("weight {name} is not a number: {value:?}"))?;
        pairs.push((name, value));
    }
    Weights::from_named(pairs.iter().map(|(name, value)| (name.as_str(), *value)))
        .map_err(|e| e.to_string())
}

pub(crate) fn run(args: &TrajectoryArgs, global: &GlobalArgs) -> Result<()> {
    let clock = global.clock();
    match &args.command {
        TrajectoryCommand::Record(record) => run_record(record, global, clock),
        TrajectoryCommand::Crystallize(crystallize) => run_crystallize(crystallize, global, clock),
        TrajectoryCommand::Recall(recall) => run_recall(recall, global, clock),
        TrajectoryCommand::Fingerprint(fingerprint) => run_fingerprint(fingerprint, global),
        TrajectoryCommand::Patterns(patterns) => run_patterns(patterns, global),
    }
}

/// The partition's memory, with its stored configuration (or that of the flags and the
/// defaults), and the settings to store with its first episodes.
struct PartitionMemory {
    memory: TrajectoryMemory<crate::database::Store, Box<dyn Clock>>,
    partition: Partition,
    settings: Vec<(MetaKey, String)>,
}

/// One stored setting of a partition's configuration.
struct Setting<'a> {
    /// The name in the meta key (`trajectory.<name>.<partition>`).
    name: &'static str,
    /// The flag that sets it.
    flag: &'static str,
    /// The value the flag gives, as stored.
    given: Option<String>,
    /// popoto's default, as stored.
    default: String,
    /// Parses a stored value.
    parse: &'a dyn Fn(&str) -> bool,
}

/// What a command does with the partition it opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Use {
    /// Records episodes: the database and the partition may be new.
    Record,
    /// Writes to a partition that must exist (crystallize).
    Existing,
    /// Only reads: a read-only open of an existing database and partition.
    Read,
}

fn open_partition(
    args: &PartitionArgs,
    global: &GlobalArgs,
    clock: Box<dyn Clock>,
    use_: Use,
) -> Result<PartitionMemory> {
    let partition = Partition::new(args.partition.clone())
        .with_context(|| format!("partition {:?}", args.partition))?;
    if let Some(field) = args.fields.iter().find(|f| f.contains(',')) {
        bail!("fingerprint field {field:?} contains a comma");
    }
    let defaults = Config::new(DEFAULT_FIELDS);
    let is_u64 = |text: &str| text.parse::<u64>().is_ok();
    let is_f64 = |text: &str| text.parse::<f64>().is_ok();
    let is_fields = |text: &str| !text.is_empty();
    let settings = [
        Setting {
            name: "fields",
            flag: "--fields",
            given: (!args.fields.is_empty()).then(|| args.fields.join(",")),
            default: DEFAULT_FIELDS.join(","),
            parse: &is_fields,
        },
        Setting {
            name: "cluster_threshold",
            flag: "--threshold",
            given: args.threshold.map(|n| n.to_string()),
            default: defaults.cluster_threshold.to_string(),
            parse: &is_u64,
        },
        Setting {
            name: "evidence_cap",
            flag: "--evidence-cap",
            given: args.evidence_cap.map(|n| n.to_string()),
            default: defaults.evidence_cap.to_string(),
            parse: &is_u64,
        },
        Setting {
            name: "initial_confidence",
            flag: "--initial-confidence",
            given: args.initial_confidence.map(|x| x.to_string()),
            default: defaults.initial_confidence.to_string(),
            parse: &is_f64,
        },
    ];
    let store = match use_ {
        Use::Record => database::open(&global.db)?,
        Use::Existing => database::open_existing_for_writing(&global.db)?,
        Use::Read => database::open_existing(&global.db)?,
    };
    let key = |name: &str| crate::ops::memory::setting_key(&partition, name);
    // A partition is configured once its fields are stored; a setting it has no entry for
    // was stored before such settings were kept, and has its default.
    let configured = store.meta_get(&key("fields")?)?.is_some();
    if !configured && use_ != Use::Record {
        return Err(crate::ops::Failure::not_found(
            partition.as_str(),
            format!(
                "partition {} does not exist: nothing was recorded in it",
                partition.as_str()
            ),
        )
        .into());
    }
    let mut chosen: Vec<(MetaKey, String)> = Vec::with_capacity(settings.len());
    for setting in &settings {
        let key = key(setting.name)?;
        let stored = store.meta_get(&key)?;
        if let Some(text) = &stored {
            if !(setting.parse)(text) {
                bail!(
                    "partition {} has an unreadable {} setting {text:?} (meta entry {})",
                    partition.as_str(),
                    setting.name,
                    key.as_str()
                );
            }
        }
        let stored = stored.or_else(|| configured.then(|| setting.default.clone()));
        let value = match (stored, &setting.given) {
            (Some(stored), Some(given)) if stored != *given => bail!(
                "partition {} has {} {stored}, not {} {given}; a partition keeps the configuration of its first record",
                partition.as_str(),
                setting.name,
                setting.flag
            ),
            (Some(stored), _) => stored,
            (None, Some(given)) => given.clone(),
            (None, None) => setting.default.clone(),
        };
        chosen.push((key, value));
    }
    let value_of = |name: &str| {
        settings
            .iter()
            .zip(&chosen)
            .find(|(s, _)| s.name == name)
            .map(|(_, (_, value))| value.as_str())
            .unwrap_or_default()
    };
    // Every value parses: it came from a flag or passed its setting's check above.
    let config = Config::new(value_of("fields").split(','))
        .with_cluster_threshold(value_of("cluster_threshold").parse().unwrap_or_default())
        .with_evidence_cap(value_of("evidence_cap").parse().unwrap_or_default())
        .with_initial_confidence(value_of("initial_confidence").parse().unwrap_or(f64::NAN));
    let memory = TrajectoryMemory::new(store, clock, config)?;
    Ok(PartitionMemory {
        memory,
        partition,
        settings: chosen,
    })
}

impl PartitionMemory {
    /// Records `records` and, in the same transaction, stores the partition's configuration
    /// if it is not stored yet. A concurrent first record with another configuration makes
    /// this fail with nothing written, instead of mixing fingerprints.
    fn record(&self, records: &[EpisodeRecord<'_>]) -> Result<()> {
        let settings: Vec<(&MetaKey, &str)> = self
            .settings
            .iter()
            .map(|(key, value)| (key, value.as_str()))
            .collect();
        match self
            .memory
            .record_episodes_with_settings(records, &settings)
        {
            Ok(_) => Ok(()),
            Err(agent_memory_trajectory::Error::Store(e)) if e.is_conflict() => bail!(
                "partition {} was configured by another command at the same time, with other settings ({e}); nothing was recorded",
                self.partition.as_str()
            ),
            Err(e) => Err(e.into()),
        }
    }
}

/// One episode read from flags or a JSONL line.
struct OwnedEpisode {
    /// The 1-based line of the JSONL file it came from.
    line: Option<usize>,
    fingerprint: Vec<(String, String)>,
    trajectory: Vec<String>,
    outcome: Value,
    /// Its own time (a line's `recorded_at`), else now.
    recorded_at: Option<Timestamp>,
}

#[derive(Debug, Serialize)]
struct Recorded {
    partition: String,
    fields: Vec<String>,
    episodes: usize,
}

fn run_record(args: &RecordArgs, global: &GlobalArgs, clock: Box<dyn Clock>) -> Result<()> {
    let episodes = match &args.file {
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
                args.trajectory.clone()
            } else {
                args.action.clone()
            };
            vec![OwnedEpisode {
                line: None,
                fingerprint: args.values.clone(),
                trajectory,
                outcome,
                recorded_at: None,
            }]
        }
    };
    let target = open_partition(&args.partition, global, clock, Use::Record)?;
    if let Some(path) = &args.file {
        name_incomplete_line(path, &episodes, &target.memory.config().fingerprint_fields)?;
    }
    let fingerprints: Vec<Vec<(&str, &str)>> = episodes
        .iter()
        .map(|e| {
            e.fingerprint
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect()
        })
        .collect();
    let trajectories: Vec<Vec<&str>> = episodes
        .iter()
        .map(|e| e.trajectory.iter().map(String::as_str).collect())
        .collect();
    let records: Vec<EpisodeRecord<'_>> = episodes
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let record = EpisodeRecord::new(
                &fingerprints[i],
                &trajectories[i],
                &e.outcome,
                &target.partition,
            );
            match e.recorded_at {
                Some(at) => record.with_recorded_at(at),
                None => record,
            }
        })
        .collect();
    let what = match &args.file {
        Some(path) => format!("recording the episodes of {}", path.display()),
        None => "recording the episode".to_owned(),
    };
    let progress = Progress::start(None, "recording episodes");
    let written = target.record(&records);
    progress.finish();
    written.with_context(|| what.clone())?;
    let report = Recorded {
        partition: target.partition.as_str().to_owned(),
        fields: target.memory.config().fingerprint_fields.clone(),
        episodes: records.len(),
    };
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

/// Fails naming the first line of `path` whose fingerprint lacks one of `fields`.
fn name_incomplete_line(path: &Path, episodes: &[OwnedEpisode], fields: &[String]) -> Result<()> {
    for episode in episodes {
        let missing: Vec<&str> = fields
            .iter()
            .filter(|f| !episode.fingerprint.iter().any(|(name, _)| name == *f))
            .map(String::as_str)
            .collect();
        if let (false, Some(line)) = (missing.is_empty(), episode.line) {
            bail!(
                "{}: line {line}: fingerprint is missing field(s) {}",
                path.display(),
                missing.join(", ")
            );
        }
    }
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

/// The episodes of a JSONL file (blank lines skipped); an error names the file and line.
fn read_episodes(path: &Path) -> Result<Vec<OwnedEpisode>> {
    // A file, or `-` for standard input.
    let (_, text) = crate::input::read_text(path)?;
    let lines: Vec<&str> = text.lines().collect();
    let progress = Progress::start(Some(lines.len() as u64), "reading episodes");
    let mut episodes = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        progress.advance(1);
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{}: line {}", path.display(), i + 1);
        let parsed: EpisodeLine = serde_json::from_str(line).with_context(at)?;
        let mut fingerprint = Vec::with_capacity(parsed.fingerprint.len());
        for (name, value) in parsed.fingerprint {
            match value {
                Value::String(value) => fingerprint.push((name, value)),
                other => bail!(
                    "{}: fingerprint field {name:?} must be a string, got {other}",
                    at()
                ),
            }
        }
        let recorded_at = match &parsed.recorded_at {
            None | Some(Value::Null) => None,
            Some(Value::Number(ms)) => match ms.as_i64() {
                Some(ms) => Some(Timestamp::from_millis(ms)),
                None => bail!(
                    "{}: recorded_at {ms} is not a whole number of milliseconds",
                    at()
                ),
            },
            Some(Value::String(text)) => match chrono::DateTime::parse_from_rfc3339(text) {
                Ok(t) => Some(Timestamp::from_millis(t.timestamp_millis())),
                Err(e) => bail!("{}: recorded_at {text:?} is not RFC 3339 ({e})", at()),
            },
            Some(other) => bail!(
                "{}: recorded_at must be RFC 3339 text or milliseconds, got {other}",
                at()
            ),
        };
        episodes.push(OwnedEpisode {
            line: Some(i + 1),
            fingerprint,
            trajectory: parsed.trajectory,
            outcome: parsed.outcome,
            recorded_at,
        });
    }
    progress.finish();
    if episodes.is_empty() {
        bail!("{} holds no episodes", path.display());
    }
    Ok(episodes)
}

/// A pattern as printed with `--json`.
#[derive(Debug, Serialize)]
struct PatternView {
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<f64>,
    fingerprint: Map<String, Value>,
    canonical_sequence: Vec<String>,
    confidence: f64,
    evidence_count: u64,
    corroborations: u64,
    contradictions: u64,
    last_reinforced_ms: i64,
}

impl PatternView {
    fn new(pattern: &Pattern, score: Option<f64>) -> Self {
        PatternView {
            score,
            fingerprint: pattern
                .fingerprint
                .pairs()
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
            canonical_sequence: pattern.canonical_sequence.clone(),
            confidence: pattern.stats.confidence,
            evidence_count: pattern.stats.evidence_count,
            corroborations: pattern.stats.corroborations,
            contradictions: pattern.stats.contradictions,
            last_reinforced_ms: pattern.stats.last_reinforced.as_millis(),
        }
    }

    fn fingerprint_text(&self) -> String {
        self.fingerprint
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn print_patterns(views: &[PatternView], global: &GlobalArgs, empty: &str) -> Result<()> {
    if global.json {
        return print_json(&views);
    }
    if views.is_empty() {
        println!("{empty}");
        return Ok(());
    }
    let cells = |view: &PatternView| {
        [
            format!("{:.3}", view.confidence),
            view.evidence_count.to_string(),
            format!("{}/{}", view.corroborations, view.contradictions),
            view.fingerprint_text(),
            view.canonical_sequence.join(" → "),
        ]
    };
    if views.iter().any(|v| v.score.is_some()) {
        let mut table = Table::new([
            "score",
            "confidence",
            "evidence",
            "+/-",
            "fingerprint",
            "sequence",
        ]);
        for view in views {
            let [c, e, pm, f, q] = cells(view);
            let score = view.score.map_or_else(String::new, |s| format!("{s:.3}"));
            table.row([score, c, e, pm, f, q]);
        }
        print!("{table}");
    } else {
        let mut table = Table::new(["confidence", "evidence", "+/-", "fingerprint", "sequence"]);
        for view in views {
            table.row(cells(view));
        }
        print!("{table}");
    }
    Ok(())
}

fn run_crystallize(
    args: &CrystallizeArgs,
    global: &GlobalArgs,
    clock: Box<dyn Clock>,
) -> Result<()> {
    let target = open_partition(&args.partition, global, clock, Use::Existing)?;
    let patterns = target.memory.crystallize(&target.partition)?;
    let views: Vec<PatternView> = patterns.iter().map(|p| PatternView::new(p, None)).collect();
    print_patterns(
        &views,
        global,
        &format!(
            "no pattern created or reinforced in partition {}",
            target.partition.as_str()
        ),
    )
}

fn run_recall(args: &RecallArgs, global: &GlobalArgs, clock: Box<dyn Clock>) -> Result<()> {
    let target = open_partition(&args.partition, global, clock, Use::Read)?;
    let filter: Vec<(&str, &str)> = args
        .values
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut options = RecallOptions::new();
    if let Some(limit) = args.limit {
        options = options.with_limit(limit);
    }
    if let Some(weights) = args.weights {
        options = options.with_weights(weights);
    }
    let scored = target
        .memory
        .recall_with(&filter, &target.partition, options)?;
    let views: Vec<PatternView> = scored
        .iter()
        .map(|s| PatternView::new(&s.pattern, Some(s.score)))
        .collect();
    print_patterns(&views, global, "no pattern matches")
}

#[derive(Debug, Serialize)]
struct FingerprintView {
    fingerprint: String,
}

fn run_fingerprint(args: &FingerprintArgs, global: &GlobalArgs) -> Result<()> {
    // Read from the text, so an integer of any size hashes as Python prints it.
    let fingerprint = agent_memory_trajectory::compute_fingerprint_json(&args.features)?;
    if global.json {
        return print_json(&FingerprintView { fingerprint });
    }
    println!("{fingerprint}");
    Ok(())
}

/// `trajectory patterns`: every pattern of the partition, best evidence first as stored.
fn run_patterns(args: &PatternsArgs, global: &GlobalArgs) -> Result<()> {
    let store = database::open_existing(&global.db)?;
    let listed = crate::ops::trajectory::patterns(
        &global.env(&store),
        &crate::ops::trajectory::PatternsInput {
            partition: args.partition.clone(),
        },
    )?;
    if global.json {
        return print_json(&listed);
    }
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
