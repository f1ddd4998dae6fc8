//! `trajectory_record`, `trajectory_crystallize`, `trajectory_recall`,
//! `trajectory_patterns` and `trajectory_fingerprint`: procedural memory, "what worked last
//! time", and popoto's fingerprint of a task's features.
//!
//! The configuration of a partition (fingerprint fields, cluster threshold, evidence cap,
//! initial confidence) is chosen once: the first record into a partition stores it (as given,
//! else the defaults) under `trajectory.<setting>.<partition>` in the meta store, in the
//! transaction of its episodes, and every later operation on it reads it from there; a given
//! setting that disagrees is refused. The command line's `trajectory` commands use the same
//! rule through these operations.

use std::collections::BTreeMap;

use crate::{Error, Result};
use agent_memory_core::evidence::Writer;
use agent_memory_core::excerpt::{Excerpt, capped_list};
use agent_memory_core::store::trajectory::TrajectoryTally;
use agent_memory_core::{Clock, MetaKey, MetaStore, Partition, PatternStore, Source, Timestamp};
use agent_memory_trajectory::policy::{
    CanonicalAggregator, ModalTrajectory, SignalMapping, SuccessSignal,
};
use agent_memory_trajectory::{
    Config, EpisodeRecord, Fingerprint, Pattern, RecallOptions, TrajectoryMemory, Weights,
};

use agent_memory_core::screen::ScreenPolicy;
/// A caller's own signals and canonical sequences for [`crystallize_with_hooks`] (popoto's
/// extension points, overridden in a language package).
pub use agent_memory_trajectory::CrystallizeHooks;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Env, memory::setting_key, time};

/// The fingerprint fields of a partition when none are stored and none are given.
pub const DEFAULT_FIELDS: [&str; 2] = ["problem_topology", "affected_layer"];

/// Episodes to record into one partition, in one transaction.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordInput {
    /// The tenant, agent or team the episodes belong to.
    pub partition: String,
    /// The partition's fingerprint fields (default `problem_topology`, `affected_layer`),
    /// fixed by its first record.
    #[serde(default)]
    pub fields: Option<Vec<String>>,
    /// Episodes a fingerprint group needs to become a pattern (default 3); set by the
    /// partition's first record.
    #[serde(default)]
    pub cluster_threshold: Option<u64>,
    /// The evidence cap of the confidence rule (default 20); set by the partition's first
    /// record.
    #[serde(default)]
    pub evidence_cap: Option<u64>,
    /// A new pattern's confidence, from 0 to 1 (default 0.5); set by the partition's first
    /// record.
    #[serde(default)]
    pub initial_confidence: Option<f64>,
    /// What a fingerprint key that is not one of the partition's fields does: `refuse` the
    /// record (the default), or be `ignore`d, as popoto's `record_episode` ignores it.
    #[serde(default)]
    pub extra_fields: ExtraFields,
    /// The episodes, at least one; an `outcome` is `{"success": true}`, `{"success": false}`,
    /// `{"success": 0.7}` or a number from 0 to 1.
    pub episodes: Vec<EpisodeInput>,
    /// The episodes' writer: `user` (the default), `model:NAME`, `tool:NAME`, ...
    #[serde(default)]
    pub source: Option<String>,
    /// The session or run recording them.
    #[serde(default)]
    pub session: Option<String>,
}

impl RecordInput {
    /// The configuration this input gives.
    fn given(&self) -> Settings {
        Settings {
            fields: self.fields.clone(),
            cluster_threshold: self.cluster_threshold,
            evidence_cap: self.evidence_cap,
            initial_confidence: self.initial_confidence,
        }
    }
}

/// What a record does with a fingerprint key that is not one of the partition's fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExtraFields {
    /// Refuse the record, naming the key and the partition's fields: a key the partition
    /// does not have would be dropped from the fingerprint, and a recall naming it refused.
    #[default]
    Refuse,
    /// Drop the key from the fingerprint, as popoto 1.10.1 does (its drop-in records so).
    Ignore,
}

/// A partition's configuration as a caller gives it: each setting, when given, must agree
/// with the stored one (a partition keeps the configuration of its first record).
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// The fingerprint fields.
    pub fields: Option<Vec<String>>,
    /// popoto's `cluster_threshold`.
    pub cluster_threshold: Option<u64>,
    /// The evidence cap.
    pub evidence_cap: Option<u64>,
    /// The initial confidence.
    pub initial_confidence: Option<f64>,
}

/// One completed task: what it was, what the agent did, how it went.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodeInput {
    /// A value for every fingerprint field of the partition, e.g.
    /// `{"problem_topology": "flaky-test", "affected_layer": "ci"}`.
    pub fingerprint: BTreeMap<String, String>,
    /// The actions taken, in order.
    pub trajectory: Vec<String>,
    /// How it went: `{"success": true}`, `{"success": false}`, `{"success": 0.7}` or a bare
    /// number from 0 to 1.
    #[schemars(schema_with = "crate::portable::object_or_number")]
    pub outcome: Value,
    /// When the episode happened (default: now).
    #[serde(default)]
    pub recorded_at: Option<TimeInput>,
}

/// A time as an input gives it: RFC 3339 text or milliseconds since the epoch.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TimeInput {
    /// Milliseconds since the epoch.
    Millis(i64),
    /// RFC 3339, e.g. `2026-01-01T00:00:00Z`.
    Text(String),
}

/// What a record stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecordOutput {
    /// The partition.
    pub partition: String,
    /// Its fingerprint fields.
    pub fields: Vec<String>,
    /// Episodes recorded.
    pub episodes: u64,
}

/// Which partition to crystallize.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CrystallizeInput {
    /// The partition.
    pub partition: String,
    /// Settings the command line's flags give, checked against the stored ones; not part
    /// of the JSON input.
    #[serde(skip)]
    pub given: Settings,
}

/// What a crystallize changed, and what still needs episodes.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CrystallizeOutput {
    /// The partition.
    pub partition: String,
    /// The patterns created or reinforced by the episodes recorded since the last run.
    pub patterns: Vec<PatternEntry>,
    /// Episodes a fingerprint group needs to become a pattern (the partition's
    /// `cluster_threshold`).
    pub threshold: u64,
    /// Every fingerprint group still below the threshold, by fingerprint, with its episodes.
    pub pending_groups: Vec<PendingGroup>,
    /// Present when the partition holds nothing yet: why the result is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A fingerprint group that has not become a pattern yet.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PendingGroup {
    /// The group's fingerprint.
    pub fingerprint: BTreeMap<String, String>,
    /// Episodes it has (a pattern needs `threshold`).
    pub episodes: u64,
}

/// A recall: the patterns matching a full or partial fingerprint, best first.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallInput {
    /// The partition.
    pub partition: String,
    /// Fingerprint values to match: every fingerprint field or a subset of them.
    pub fingerprint: BTreeMap<String, String>,
    /// At most this many patterns (default 5).
    #[serde(default)]
    pub limit: Option<usize>,
    /// The weight of confidence in the ranking (default 0.6).
    #[serde(default)]
    pub confidence_weight: Option<f64>,
    /// The weight of recency in the ranking (default 0.4).
    #[serde(default)]
    pub recency_weight: Option<f64>,
    /// Settings the command line's flags give, checked against the stored ones; not part
    /// of the JSON input.
    #[serde(skip)]
    pub given: Settings,
}

/// The patterns a recall found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecallOutput {
    /// The partition.
    pub partition: String,
    /// The matching patterns, best first (empty when none matches).
    pub patterns: Vec<PatternEntry>,
    /// Present when the partition holds nothing yet: why the result is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Patterns left out because the write screen flags an action or a fingerprint value,
    /// under the store's `quarantine` policy.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub withheld: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Which partition's patterns to list.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatternsInput {
    /// The partition.
    pub partition: String,
}

/// Every pattern of a partition.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PatternsOutput {
    /// The partition.
    pub partition: String,
    /// Its fingerprint fields.
    pub fields: Vec<String>,
    /// Every pattern, by fingerprint.
    pub patterns: Vec<PatternEntry>,
    /// Present when the partition holds nothing yet: why the result is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A crystallized pattern: the sequence that worked for a fingerprint, and how sure it is.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PatternEntry {
    /// The ranking score of a recall (`confidence_weight * confidence + recency_weight *
    /// recency`); absent outside a recall.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// The fingerprint the pattern is for.
    pub fingerprint: BTreeMap<String, String>,
    /// The actions that worked, in order.
    pub canonical_sequence: Vec<String>,
    /// How reliable the pattern is, from 0 to 1.
    pub confidence: f64,
    /// Episodes observed.
    pub evidence_count: u64,
    /// Episodes that confirmed it.
    pub corroborations: u64,
    /// Episodes that went against it.
    pub contradictions: u64,
    /// When an episode last reinforced it.
    pub last_reinforced: String,
}

impl PatternEntry {
    /// The entry of `pattern`, which it takes apart rather than copy.
    fn new(pattern: Pattern, score: Option<f64>) -> Self {
        PatternEntry {
            score,
            fingerprint: pattern.fingerprint.into_pairs().into_iter().collect(),
            canonical_sequence: pattern.canonical_sequence,
            confidence: pattern.stats.confidence,
            evidence_count: pattern.stats.evidence_count,
            corroborations: pattern.stats.corroborations,
            contradictions: pattern.stats.contradictions,
            last_reinforced: time(pattern.stats.last_reinforced),
        }
    }
}

/// A partition's procedural memory with its configuration.
struct PartitionMemory<'a> {
    memory: TrajectoryMemory<&'a crate::database::Store, &'a dyn Clock>,
    partition: Partition,
    /// The configuration as `meta` entries, stored with the first record in its transaction.
    settings: Vec<(MetaKey, String)>,
    /// Whether the partition's fields are stored: its first record stored them with its
    /// episodes, and forgetting it deletes them, so it holds something.
    configured: bool,
}

impl PartitionMemory<'_> {
    /// [`empty_note`] of the partition, without listing every partition when its stored
    /// configuration already says it holds something (a recall's hot path).
    fn empty_note(&self, env: &Env<'_>) -> Result<Option<String>> {
        if self.configured {
            return Ok(None);
        }
        empty_note(env, &self.partition)
    }
}

/// The partition `name`; the store's error names it (cut short when it is long, so a
/// megabyte of name never fills a message).
fn partition_name(name: &str) -> Result<Partition> {
    Ok(Partition::new(name)?)
}

/// A setting of a partition: its name, its `meta` key, the caller's value and the default.
struct Candidate {
    setting: &'static str,
    key: MetaKey,
    given: Option<String>,
    default: String,
}

/// The partition's four settings as `given` gives them, the fields first; fails on fields
/// no partition can have.
fn candidates(partition: &Partition, given: &Settings) -> Result<Vec<Candidate>> {
    if let Some(fields) = &given.fields {
        if fields.is_empty() {
            return Err(Error::invalid(
                "fields",
                "give at least one fingerprint field",
            ));
        }
        if let Some(field) = fields.iter().find(|f| f.contains(',') || f.is_empty()) {
            return Err(Error::invalid(
                "fields",
                format!(
                    "fingerprint field {} is empty or contains a comma",
                    Excerpt::quoted(field)
                ),
            ));
        }
    }
    let defaults = Config::new(DEFAULT_FIELDS);
    [
        (
            "fields",
            given.fields.as_ref().map(|f| f.join(",")),
            DEFAULT_FIELDS.join(","),
        ),
        (
            "cluster_threshold",
            given.cluster_threshold.map(|n| n.to_string()),
            defaults.cluster_threshold.to_string(),
        ),
        (
            "evidence_cap",
            given.evidence_cap.map(|n| n.to_string()),
            defaults.evidence_cap.to_string(),
        ),
        (
            "initial_confidence",
            given.initial_confidence.map(|x| x.to_string()),
            defaults.initial_confidence.to_string(),
        ),
    ]
    .into_iter()
    .map(|(setting, given, default)| {
        Ok(Candidate {
            setting,
            key: setting_key(partition, setting)?,
            given,
            default,
        })
    })
    .collect()
}

/// The partition's memory with its configuration, by one rule for every caller: each
/// setting is the stored one (a partition whose fields are stored but not some other setting
/// was stored before that setting was kept, and has its default), else the given one, else
/// the default; a given setting that disagrees with the stored one is refused.
fn open_partition<'a>(
    env: &'a Env<'_>,
    name: &str,
    given: &Settings,
) -> Result<PartitionMemory<'a>> {
    let partition = partition_name(name)?;
    let candidates = candidates(&partition, given)?;
    // Every setting in one read: a record and a recall each read the configuration first.
    let stored = env
        .store
        .meta_get_all(&candidates.iter().map(|c| &c.key).collect::<Vec<_>>())?;
    // The first setting is the fields.
    let configured = stored[0].is_some();
    let mut settings = Vec::with_capacity(candidates.len());
    for (candidate, stored) in candidates.into_iter().zip(stored) {
        let Candidate {
            setting,
            key,
            given,
            default,
        } = candidate;
        let stored = stored.or_else(|| configured.then(|| default.clone()));
        let value = match (stored, given) {
            (Some(stored), Some(given)) if stored != given => {
                return Err(Error::invalid(
                    setting,
                    format!(
                        "partition {name} has {setting} {}, not {}; a partition keeps the configuration of its first record",
                        Excerpt::plain(&stored),
                        Excerpt::plain(&given),
                    ),
                ));
            }
            (Some(value), _) | (None, Some(value)) => value,
            (None, None) => default,
        };
        settings.push((key, value));
    }
    partition_memory(env, name, partition, settings, configured)
}

/// The partition's memory configured as `given` says, without reading the store, for a
/// record, which writes the settings in its own transaction and fails there, with nothing
/// written, on a stored setting that differs. `None` unless the fields are given and each
/// other given setting is its default: a stored partition whose other settings were kept
/// before some of them was stored has those settings' defaults, which a given value other
/// than the default must be refused against, not written (only [`open_partition`] knows
/// that rule). Its `configured` is false: the store was not asked.
fn presumed_partition<'a>(
    env: &'a Env<'_>,
    name: &str,
    given: &Settings,
) -> Result<Option<PartitionMemory<'a>>> {
    if given.fields.is_none() {
        return Ok(None);
    }
    let partition = partition_name(name)?;
    let candidates = candidates(&partition, given)?;
    if candidates[1..]
        .iter()
        .any(|c| c.given.as_ref().is_some_and(|given| *given != c.default))
    {
        return Ok(None);
    }
    let settings = candidates
        .into_iter()
        .map(|c| (c.key, c.given.unwrap_or(c.default)))
        .collect();
    partition_memory(env, name, partition, settings, false).map(Some)
}

/// The memory of `partition` with `settings` (its four settings, the fields first).
fn partition_memory<'a>(
    env: &'a Env<'_>,
    name: &str,
    partition: Partition,
    settings: Vec<(MetaKey, String)>,
    configured: bool,
) -> Result<PartitionMemory<'a>> {
    let unreadable = |i: usize| {
        let (key, value): &(MetaKey, String) = &settings[i];
        Error::invalid(
            key.as_str(),
            format!(
                "partition {name} has an unreadable setting {} (meta entry {key})",
                Excerpt::quoted(value)
            ),
        )
    };
    let config = Config::new(settings[0].1.split(','))
        .with_cluster_threshold(settings[1].1.parse().map_err(|_| unreadable(1))?)
        .with_evidence_cap(settings[2].1.parse().map_err(|_| unreadable(2))?)
        .with_initial_confidence(settings[3].1.parse().map_err(|_| unreadable(3))?);
    let memory = TrajectoryMemory::new(env.store, env.clock.as_ref(), config)?;
    Ok(PartitionMemory {
        memory,
        partition,
        settings,
        configured,
    })
}

/// Fails unless `partition` holds episodes or patterns, naming it.
/// `None` when the partition holds episodes, else the note its empty results carry: as
/// popoto and the library do, a read or crystallize of a partition nothing was recorded in
/// answers with nothing rather than failing (an agent's first run recalls before it records).
fn empty_note(env: &Env<'_>, partition: &Partition) -> Result<Option<String>> {
    let known = env
        .store
        .partitions()?
        .iter()
        .any(|p| p.partition == *partition);
    Ok((!known).then(|| {
        format!(
            "partition {} holds nothing yet (nothing was recorded in it)",
            partition.as_str()
        )
    }))
}

/// Checks a partition's configuration as its first record would, reading and writing
/// nothing: the fields no partition can hold and every rule of [`Config::validate`], each
/// problem reported together. A count below zero (another language's integer may hold one)
/// is refused as one below 1 is. The popoto drop-in runs it when it is constructed: popoto
/// accepts such a configuration, and every record would refuse it.
pub fn check_configuration(
    fields: &[String],
    cluster_threshold: Option<i64>,
    evidence_cap: Option<i64>,
    initial_confidence: Option<f64>,
) -> Result<()> {
    let mut problems = Vec::new();
    if let Some(field) = fields.iter().find(|f| f.contains(',')) {
        problems.push(format!(
            "fingerprint field {} contains a comma",
            Excerpt::quoted(field)
        ));
    }
    let defaults = Config::new(DEFAULT_FIELDS);
    let mut count = |setting: &str, given: Option<i64>, default: u64| match given {
        None => default,
        Some(n) => u64::try_from(n).unwrap_or_else(|_| {
            problems.push(format!("{setting} must be at least 1, got {n}"));
            1
        }),
    };
    let config = Config::new(fields.iter().map(String::as_str))
        .with_cluster_threshold(count(
            "cluster_threshold",
            cluster_threshold,
            defaults.cluster_threshold,
        ))
        .with_evidence_cap(count("evidence_cap", evidence_cap, defaults.evidence_cap))
        .with_initial_confidence(initial_confidence.unwrap_or(defaults.initial_confidence));
    if let Err(agent_memory_trajectory::Error::InvalidConfig(found)) = config.validate() {
        problems.extend(found);
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(agent_memory_trajectory::Error::InvalidConfig(problems).into())
}

/// Records the episodes in one transaction, and the partition's configuration on its first
/// record.
pub fn record(env: &Env<'_>, input: RecordInput) -> Result<RecordOutput> {
    record_naming(env, &input, &|i| format!("episode {i}"))
}

/// [`record`], naming episode `i` in errors with `name(i)` (the command line names the line
/// of its file).
pub fn record_naming(
    env: &Env<'_>,
    input: &RecordInput,
    name: &dyn Fn(usize) -> String,
) -> Result<RecordOutput> {
    if input.episodes.is_empty() {
        return Err(Error::invalid(
            "episodes",
            "give at least one episode to record",
        ));
    }
    let given = input.given();
    // Each episode keeps who recorded it: the caller's source and session, the door's client.
    let writer = Writer {
        source: Some(
            crate::evidence::source_input(input.source.as_deref())?.unwrap_or(Source::User),
        ),
        session: input.session.clone(),
        client: env.client.clone(),
    };
    // A record that gives its partition's fields, as a program's records do, skips reading
    // the configuration first: its write checks the settings it stores. Should it fail in
    // any way (a stored setting that differs, an episode that does not fit), nothing was
    // written, and the record runs again the way that reads first, which fails as it always
    // has, or succeeds under the stored configuration.
    if let Ok(Some(mut target)) = presumed_partition(env, &input.partition, &given) {
        target.memory = target.memory.with_writer(writer.clone());
        if let Ok(output) = record_into(&target, input, name) {
            return Ok(output);
        }
    }
    let mut target = open_partition(env, &input.partition, &given)?;
    target.memory = target.memory.with_writer(writer);
    record_into(&target, input, name)
}

/// Records `input`'s episodes into `target` in one transaction with its settings.
fn record_into(
    target: &PartitionMemory<'_>,
    input: &RecordInput,
    name: &dyn Fn(usize) -> String,
) -> Result<RecordOutput> {
    let fields = &target.memory.config().fingerprint_fields;
    let mut times = Vec::with_capacity(input.episodes.len());
    for (i, episode) in input.episodes.iter().enumerate() {
        let missing: Vec<&str> = fields
            .iter()
            .filter(|f| !episode.fingerprint.contains_key(*f))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(Error::invalid(
                format!("episodes[{i}].fingerprint"),
                format!(
                    "{}: fingerprint is missing field(s) {}",
                    name(i),
                    missing.join(", ")
                ),
            ));
        }
        // A field the partition does not have would be dropped from the fingerprint, and a
        // recall naming it refused: refuse it here, where the caller can still fix it,
        // unless the caller asked for popoto's rule (the key is dropped below).
        let unknown: Vec<&str> = match input.extra_fields {
            ExtraFields::Refuse => episode
                .fingerprint
                .keys()
                .filter(|k| !fields.contains(*k))
                .map(String::as_str)
                .collect(),
            ExtraFields::Ignore => Vec::new(),
        };
        if !unknown.is_empty() {
            return Err(Error::invalid(
                format!("episodes[{i}].fingerprint"),
                format!(
                    "{}: fingerprint field(s) {} not among the fields of partition {:?} ({})",
                    name(i),
                    capped_list(unknown.iter().map(|f| Excerpt::plain(f))),
                    input.partition,
                    capped_list(fields.iter().map(|f| Excerpt::plain(f)))
                ),
            ));
        }
        times.push(match &episode.recorded_at {
            None => None,
            Some(TimeInput::Millis(ms)) => Some(Timestamp::from_millis(*ms)),
            Some(TimeInput::Text(text)) => match chrono::DateTime::parse_from_rfc3339(text) {
                Ok(t) => Some(Timestamp::from_millis(t.timestamp_millis())),
                Err(e) => {
                    return Err(Error::invalid(
                        format!("episodes[{i}].recorded_at"),
                        format!(
                            "{}: recorded_at {} is not RFC 3339 ({e})",
                            name(i),
                            Excerpt::quoted(text)
                        ),
                    ));
                }
            },
        });
    }
    // Every episode's fingerprint pairs and steps in two flat lists, each episode a range of
    // them: two allocations for the batch, not two per episode.
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    let mut steps: Vec<&str> = Vec::new();
    let mut ranges = Vec::with_capacity(input.episodes.len());
    for e in &input.episodes {
        let (p, s) = (pairs.len(), steps.len());
        let all = e.fingerprint.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        match input.extra_fields {
            // Every key is a field: the check above refused any other.
            ExtraFields::Refuse => pairs.extend(all),
            ExtraFields::Ignore => pairs.extend(all.filter(|(k, _)| fields.iter().any(|f| f == k))),
        }
        steps.extend(e.trajectory.iter().map(String::as_str));
        ranges.push((p..pairs.len(), s..steps.len()));
    }
    let records: Vec<EpisodeRecord<'_>> = input
        .episodes
        .iter()
        .zip(ranges)
        .zip(&times)
        .map(|((e, (p, s)), at)| {
            let record = EpisodeRecord::new(&pairs[p], &steps[s], &e.outcome, &target.partition);
            match at {
                Some(at) => record.with_recorded_at(*at),
                None => record,
            }
        })
        .collect();
    // The configuration goes in the episodes' transaction: a concurrent first record with
    // other settings fails with nothing written instead of mixing fingerprints.
    let settings: Vec<(&MetaKey, &str)> = target
        .settings
        .iter()
        .map(|(key, value)| (key, value.as_str()))
        .collect();
    match target
        .memory
        .record_episodes_with_settings(&records, &settings)
    {
        Ok(_) => {}
        Err(agent_memory_trajectory::Error::Store(e)) if e.is_conflict() => {
            return Err(Error::from(e).context(format!(
                "partition {} was configured by another command at the same time, with other settings; nothing was recorded",
                input.partition
            )));
        }
        Err(e) => {
            return Err(Error::from(e).context(format!(
                "recording episodes in partition {}",
                input.partition
            )));
        }
    }
    Ok(RecordOutput {
        partition: input.partition.clone(),
        fields: fields.clone(),
        episodes: records.len() as u64,
    })
}

/// Crystallizes the partition's new episodes, and lists the groups still below the
/// threshold.
pub fn crystallize(env: &Env<'_>, input: CrystallizeInput) -> Result<CrystallizeOutput> {
    crystallize_with_hooks(env, &input, None)
}

/// [`crystallize`] with a caller's own signals and canonical sequences (popoto's extension
/// points, overridden in a language package): see
/// [`TrajectoryMemory::crystallize_with_hooks`].
pub fn crystallize_with_hooks(
    env: &Env<'_>,
    input: &CrystallizeInput,
    hooks: Option<&dyn CrystallizeHooks>,
) -> Result<CrystallizeOutput> {
    let target = open_partition(env, &input.partition, &input.given)?;
    if let Some(note) = target.empty_note(env)? {
        return Ok(CrystallizeOutput {
            partition: input.partition.clone(),
            patterns: Vec::new(),
            threshold: target.memory.config().cluster_threshold,
            pending_groups: Vec::new(),
            note: Some(note),
        });
    }
    let patterns = match hooks {
        Some(hooks) => target
            .memory
            .crystallize_with_hooks(&target.partition, hooks)?,
        None => target.memory.crystallize(&target.partition)?,
    };
    let pending_groups = env
        .store
        .pending_groups(&target.partition)?
        .into_iter()
        .map(|group| PendingGroup {
            fingerprint: group.fingerprint.pairs().iter().cloned().collect(),
            episodes: group.episode_count,
        })
        .collect();
    Ok(CrystallizeOutput {
        partition: input.partition.clone(),
        patterns: patterns
            .into_iter()
            .map(|p| PatternEntry::new(p, None))
            .collect(),
        threshold: target.memory.config().cluster_threshold,
        pending_groups,
        note: None,
    })
}

/// The patterns matching the fingerprint, ranked.
pub fn recall(env: &Env<'_>, input: RecallInput) -> Result<RecallOutput> {
    let target = open_partition(env, &input.partition, &input.given)?;
    if let Some(note) = target.empty_note(env)? {
        return Ok(RecallOutput {
            partition: input.partition.clone(),
            patterns: Vec::new(),
            note: Some(note),
            withheld: 0,
        });
    }
    let filter: Vec<(&str, &str)> = input
        .fingerprint
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    // As popoto's `score_weights`: naming some weights replaces the default set.
    let mut named: Vec<(&str, f64)> = Vec::new();
    if let Some(w) = input.confidence_weight {
        named.push(("confidence", w));
    }
    if let Some(w) = input.recency_weight {
        named.push(("recency", w));
    }
    let mut options = RecallOptions::new();
    if let Some(limit) = input.limit {
        options = options.with_limit(limit);
    }
    if !named.is_empty() {
        options = options.with_weights(Weights::from_named(named)?);
    }
    let mut scored = target
        .memory
        .recall_with(&filter, &target.partition, options)?;
    // Recalled actions are what an agent runs next: under `quarantine`, a pattern whose
    // action or fingerprint value the write screen flags is left out.
    let before = scored.len();
    // A person may have approved the flagged texts (`trajectory_approve_pattern`).
    if crate::evidence::policy(env)? == ScreenPolicy::Quarantine {
        let vouched =
            crate::review::vouched_in(env, crate::review::TRAJECTORY, target.partition.as_str())?;
        scored.retain(|s| !crate::review::pattern_held(&s.pattern, &vouched));
    }
    Ok(RecallOutput {
        partition: input.partition.clone(),
        withheld: (before - scored.len()) as u64,
        patterns: scored
            .into_iter()
            .map(|s| PatternEntry::new(s.pattern, Some(s.score)))
            .collect(),
        note: None,
    })
}

/// Every pattern of the partition, ordered by fingerprint.
pub fn patterns(env: &Env<'_>, input: PatternsInput) -> Result<PatternsOutput> {
    let target = open_partition(env, &input.partition, &Settings::default())?;
    let note = target.empty_note(env)?;
    let mut patterns = env
        .store
        .patterns(&target.partition, &Fingerprint::default())?;
    patterns.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
    Ok(PatternsOutput {
        partition: input.partition.clone(),
        fields: target.memory.config().fingerprint_fields.clone(),
        patterns: patterns
            .into_iter()
            .map(|p| PatternEntry::new(p, None))
            .collect(),
        note,
    })
}

/// The ranking weights `pairs` name, as popoto's `score_weights` takes them: `confidence` and
/// `recency` (or popoto's `last_reinforced`), a weight not named being 0; another name, or a
/// weight that is not finite, is refused. The pair is a recall's `confidence_weight` and
/// `recency_weight`, for a door that takes the weights by name (`--weights
/// confidence=0.6,recency=0.4`).
pub fn named_weights<'a>(pairs: impl IntoIterator<Item = (&'a str, f64)>) -> Result<(f64, f64)> {
    let weights = Weights::from_named(pairs)?;
    Ok((weights.confidence, weights.recency))
}

/// Features to fingerprint as popoto does.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FingerprintInput {
    /// The features: a JSON object such as `{"task": "deploy", "env": "staging"}`, or its
    /// JSON text, which keeps an integer of any size as Python prints it.
    #[schemars(schema_with = "crate::portable::object_or_string")]
    pub features: Value,
}

/// popoto's fingerprint of some features.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FingerprintOutput {
    /// The first 16 hex digits of the SHA-256 of the features as Python's
    /// `json.dumps(sort_keys=True)` writes them.
    pub fingerprint: String,
}

/// popoto's 16-hex fingerprint of the features. It reads and writes nothing.
pub fn fingerprint(_: &Env<'_>, input: FingerprintInput) -> Result<FingerprintOutput> {
    Ok(FingerprintOutput {
        fingerprint: fingerprint_of(&input.features)?,
    })
}

/// popoto's 16-hex fingerprint of `features`: a JSON object, or its JSON text (which keeps an
/// integer of any size as Python prints it). What `trajectory_fingerprint` answers.
pub fn fingerprint_of(features: &Value) -> Result<String> {
    Ok(match features {
        // Read from the text, so an integer of any size hashes as Python prints it.
        Value::String(text) => agent_memory_trajectory::compute_fingerprint_json(text)?,
        object @ Value::Object(_) => {
            agent_memory_trajectory::compute_fingerprint_json(&object.to_string())?
        }
        _ => {
            return Err(Error::invalid(
                "features",
                "features must be a JSON object".to_owned(),
            ));
        }
    })
}

/// popoto's mapping of an episode's `outcome` to a confidence signal in `[0, 1]`: the one
/// `trajectory_crystallize` applies to each new episode.
pub fn episode_signal(outcome: &Value) -> f64 {
    SuccessSignal.signal(outcome)
}

/// popoto's canonical sequence of a group's episodes, given as `(trajectory, recorded_at)` in
/// the order seen: the modal trajectory, ties to the one whose newest episode is the most
/// recent, then to the one seen first; the rule `trajectory_crystallize` applies. No episodes,
/// no sequence (empty).
pub fn canonical_sequence(
    episodes: impl IntoIterator<Item = (Vec<String>, Timestamp)>,
) -> Vec<String> {
    let mut tallies: Vec<TrajectoryTally> = Vec::new();
    for (seq, (trajectory, at)) in episodes.into_iter().enumerate() {
        match tallies.iter_mut().find(|t| t.trajectory == trajectory) {
            Some(tally) => {
                tally.count += 1;
                tally.newest = tally.newest.max(at);
            }
            None => tallies.push(TrajectoryTally {
                trajectory,
                count: 1,
                newest: at,
                first_seq: seq as u64,
            }),
        }
    }
    if tallies.is_empty() {
        return Vec::new();
    }
    let candidates: Vec<&TrajectoryTally> = tallies.iter().collect();
    let chosen = ModalTrajectory.choose(&candidates);
    tallies.swap_remove(chosen).trajectory
}

/// The most episodes `trajectory_timeline` replays.
pub const TIMELINE_MOST: u64 = 100_000;

/// Episodes read from the store at a time while a timeline is replayed.
const TIMELINE_READ: usize = 1_000;

/// The input of `trajectory_timeline`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimelineInput {
    /// The partition.
    pub partition: String,
    /// The group's whole fingerprint, every field as recorded.
    pub fingerprint: BTreeMap<String, String>,
    /// The most episodes replayed, oldest first: from 1 to 100,000 (the default).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// A group's confidence after each of its episodes.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TimelineOutput {
    /// The partition.
    pub partition: String,
    /// The confidence after each episode replayed, oldest first.
    pub points: Vec<TimelinePoint>,
    /// Whether the group holds more episodes than were replayed.
    pub truncated: bool,
}

/// The confidence after one episode.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TimelinePoint {
    /// When the episode was recorded (ISO 8601).
    pub at: String,
    /// The group's confidence after it, from 0 to 1.
    pub confidence: f64,
    /// Who recorded the episode; absent for one recorded before writers were kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_by: Option<crate::evidence::ProvenanceOutput>,
}

/// The confidence a group's pattern had after each of its episodes, replayed oldest first
/// with the partition's settings and the signal `trajectory_crystallize` applies. It reads
/// the episodes a page at a time and writes nothing.
pub fn timeline(env: &Env<'_>, input: TimelineInput) -> Result<TimelineOutput> {
    let limit = input.limit.unwrap_or(TIMELINE_MOST);
    if !(1..=TIMELINE_MOST).contains(&limit) {
        return Err(Error::invalid(
            "limit",
            format!("limit must be from 1 to {TIMELINE_MOST}, got {limit}"),
        ));
    }
    let target = open_partition(env, &input.partition, &Settings::default())?;
    let fingerprint = Fingerprint::new(input.fingerprint)?;
    let config = target.memory.config();
    let mut confidence = config.initial_confidence;
    let mut points = Vec::new();
    let mut truncated = false;
    let mut after = 0;
    'read: loop {
        let page =
            env.store
                .group_episodes(&target.partition, &fingerprint, after, TIMELINE_READ)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        let ended = page.len() < TIMELINE_READ;
        for episode in &page {
            if points.len() as u64 == limit {
                truncated = true;
                break 'read;
            }
            let outcome: Value =
                serde_json::from_str(&episode.episode.outcome).unwrap_or(Value::Null);
            confidence = agent_memory_trajectory::policy::update_confidence(
                confidence,
                points.len() as u64,
                episode_signal(&outcome),
                config.evidence_cap,
            );
            points.push(TimelinePoint {
                at: time(episode.episode.recorded_at),
                confidence,
                written_by: episode.episode.provenance.as_ref().map(Into::into),
            });
        }
        // A short page is the group's last: no need to ask for an empty one.
        if ended {
            break;
        }
    }
    Ok(TimelineOutput {
        partition: input.partition,
        points,
        truncated,
    })
}

/// `trajectory_forget_by`: what one writer recorded in a partition.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetByInput {
    /// The partition.
    pub partition: String,
    /// The writer's source, exactly (`tool:NAME`, `model:NAME`, `page:https://…`, `user`).
    #[serde(default)]
    pub source: Option<String>,
    /// The session or run the writer recorded in.
    #[serde(default)]
    pub session: Option<String>,
    /// The client.
    #[serde(default)]
    pub client: Option<String>,
}

/// A group a forget by writer rebuilt.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RebuiltGroup {
    /// The group's fingerprint.
    pub fingerprint: BTreeMap<String, String>,
    /// The episodes it was rebuilt from; 0: the group is gone, pattern and all.
    pub episodes: u64,
}

/// What `trajectory_forget_by` took.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ForgetByOutput {
    /// The partition.
    pub partition: String,
    /// The writer's episodes forgotten.
    pub episodes: u64,
    /// Each group the writer's episodes had been crystallized into, rebuilt from the
    /// episodes left, by fingerprint.
    pub groups: Vec<RebuiltGroup>,
}

/// Forgets every episode the writer recorded in the partition (every field given must
/// match; at least one is needed; an episode recorded before writers were kept matches
/// none), and rebuilds each pattern or group they had been crystallized into from the
/// episodes left, with the partition's settings, in one step with one audit entry: with
/// nothing pruned, the patterns end as if the writer had never recorded.
pub fn forget_by(env: &Env<'_>, input: ForgetByInput) -> Result<ForgetByOutput> {
    let writer = crate::evidence::WriterInput {
        source: input.source,
        session: input.session,
        client: input.client,
    }
    .writer()?;
    let by = crate::evidence::actor(env, None, None, None)?;
    let target = open_partition(env, &input.partition, &Settings::default())?;
    let forgotten = target.memory.forget_by(&target.partition, &writer, &by)?;
    Ok(ForgetByOutput {
        partition: input.partition,
        episodes: forgotten.episodes,
        groups: forgotten
            .groups
            .into_iter()
            .map(|(fingerprint, episodes)| RebuiltGroup {
                fingerprint: fingerprint.pairs().iter().cloned().collect(),
                episodes,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::env_on;

    fn episode(kind: &str, steps: &[&str], success: bool) -> EpisodeInput {
        EpisodeInput {
            fingerprint: [("task".to_owned(), kind.to_owned())].into(),
            trajectory: steps.iter().map(|s| (*s).to_owned()).collect(),
            outcome: serde_json::json!({ "success": success }),
            recorded_at: None,
        }
    }

    #[test]
    fn a_timeline_ends_at_the_confidence_crystallize_gives() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        record(
            &env,
            RecordInput {
                partition: "team".to_owned(),
                fields: Some(vec!["task".to_owned()]),
                cluster_threshold: None,
                evidence_cap: Some(3),
                initial_confidence: Some(0.4),
                extra_fields: Default::default(),
                source: None,
                session: None,
                episodes: [true, false, true, true, false, true]
                    .iter()
                    .map(|ok| episode("deploy", &["build", "ship"], *ok))
                    .collect(),
            },
        )
        .expect("record");
        let crystallized = crystallize(
            &env,
            CrystallizeInput {
                partition: "team".to_owned(),
                given: Settings::default(),
            },
        )
        .expect("crystallize");
        let input = |limit| TimelineInput {
            partition: "team".to_owned(),
            fingerprint: [("task".to_owned(), "deploy".to_owned())].into(),
            limit,
        };
        let whole = timeline(&env, input(None)).expect("timeline");
        assert_eq!(whole.points.len(), 6);
        assert!(!whole.truncated);
        // The partition's own settings: the first point starts from its initial confidence.
        let first = update_confidence_for_test(0.4, 0, 0.9, 3);
        assert!((whole.points[0].confidence - first).abs() < 1e-12);
        let last = whole.points.last().expect("a point").confidence;
        assert!((last - crystallized.patterns[0].confidence).abs() < 1e-12);
        let cut = timeline(&env, input(Some(2))).expect("timeline");
        assert_eq!(cut.points.len(), 2);
        assert!(cut.truncated);
        let unknown = timeline(
            &env,
            TimelineInput {
                fingerprint: [("task".to_owned(), "other".to_owned())].into(),
                ..input(None)
            },
        )
        .expect("timeline of a group with no episodes");
        assert!(unknown.points.is_empty());
        let refused = timeline(&env, input(Some(0))).expect_err("limit 0");
        assert_eq!(refused.input(), Some("limit"));
    }

    fn update_confidence_for_test(confidence: f64, count: u64, signal: f64, cap: u64) -> f64 {
        agent_memory_trajectory::policy::update_confidence(confidence, count, signal, cap)
    }

    #[test]
    fn the_canonical_sequence_is_the_modal_one_ties_to_the_newest() {
        let at = Timestamp::from_millis;
        let a = || vec!["a".to_owned()];
        let b = || vec!["b".to_owned()];
        assert_eq!(
            canonical_sequence([(a(), at(1)), (b(), at(2)), (a(), at(3))]),
            a()
        );
        assert_eq!(canonical_sequence([(a(), at(1)), (b(), at(2))]), b());
        assert_eq!(canonical_sequence([(a(), at(5)), (b(), at(2))]), a());
        assert!(canonical_sequence(Vec::new()).is_empty());
        assert_eq!(episode_signal(&serde_json::json!({"success": true})), 0.9);
        assert_eq!(episode_signal(&serde_json::json!({"success": false})), 0.1);
    }

    #[test]
    fn record_crystallize_recall_and_list_patterns() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        let recorded = record(
            &env,
            RecordInput {
                partition: "team".to_owned(),
                fields: Some(vec!["task".to_owned()]),
                cluster_threshold: None,
                evidence_cap: None,
                initial_confidence: None,
                extra_fields: Default::default(),
                source: None,
                session: None,
                episodes: (0..3)
                    .map(|_| episode("deploy", &["build", "ship"], true))
                    .collect(),
            },
        )
        .expect("record");
        assert_eq!(recorded.episodes, 3);
        assert_eq!(recorded.fields, ["task"]);
        let crystallized = crystallize(
            &env,
            CrystallizeInput {
                partition: "team".to_owned(),
                given: Settings::default(),
            },
        )
        .expect("crystallize");
        assert_eq!(crystallized.patterns.len(), 1);
        assert_eq!(
            crystallized.patterns[0].canonical_sequence,
            ["build", "ship"]
        );
        let recalled = recall(
            &env,
            RecallInput {
                partition: "team".to_owned(),
                fingerprint: [("task".to_owned(), "deploy".to_owned())].into(),
                limit: None,
                confidence_weight: None,
                recency_weight: None,
                given: Settings::default(),
            },
        )
        .expect("recall");
        assert_eq!(recalled.patterns.len(), 1);
        assert!(recalled.patterns[0].score.is_some());
        let listed = patterns(
            &env,
            PatternsInput {
                partition: "team".to_owned(),
            },
        )
        .expect("patterns");
        assert_eq!(listed.patterns.len(), 1);
        assert_eq!(
            listed.patterns[0].last_reinforced,
            "2026-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn bad_records_name_what_is_wrong_and_write_nothing() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        let mut incomplete = episode("deploy", &["a"], true);
        incomplete.fingerprint.clear();
        let error = record(
            &env,
            RecordInput {
                partition: "team".to_owned(),
                fields: Some(vec!["task".to_owned()]),
                cluster_threshold: None,
                evidence_cap: None,
                initial_confidence: None,
                extra_fields: Default::default(),
                source: None,
                session: None,
                episodes: vec![episode("deploy", &["a"], true), incomplete],
            },
        )
        .expect_err("missing field");
        assert_eq!(
            error.to_string(),
            "episode 1: fingerprint is missing field(s) task"
        );
        let mut extra = episode("deploy", &["a"], true);
        extra
            .fingerprint
            .insert("env".to_owned(), "prod".to_owned());
        let error = record(
            &env,
            RecordInput {
                partition: "team".to_owned(),
                fields: Some(vec!["task".to_owned()]),
                cluster_threshold: None,
                evidence_cap: None,
                initial_confidence: None,
                extra_fields: Default::default(),
                source: None,
                session: None,
                episodes: vec![extra],
            },
        )
        .expect_err("a field the partition does not have");
        assert_eq!(
            error.to_string(),
            "episode 0: fingerprint field(s) env not among the fields of partition \"team\" (task)"
        );
        let missing = recall(
            &env,
            RecallInput {
                partition: "team".to_owned(),
                fingerprint: [("task".to_owned(), "deploy".to_owned())].into(),
                limit: None,
                confidence_weight: None,
                recency_weight: None,
                given: Settings::default(),
            },
        )
        .expect("a partition nothing was recorded in recalls nothing");
        assert!(missing.patterns.is_empty());
        assert_eq!(
            missing.note.as_deref(),
            Some("partition team holds nothing yet (nothing was recorded in it)")
        );
    }

    #[test]
    fn crystallize_names_the_groups_below_the_threshold() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        let mut episodes: Vec<EpisodeInput> = (0..2)
            .map(|_| episode("deploy", &["build", "ship"], true))
            .collect();
        episodes.push(episode("test", &["run"], true));
        record(
            &env,
            RecordInput {
                partition: "team".to_owned(),
                fields: Some(vec!["task".to_owned()]),
                cluster_threshold: Some(3),
                evidence_cap: None,
                initial_confidence: None,
                extra_fields: Default::default(),
                source: None,
                session: None,
                episodes,
            },
        )
        .expect("record");
        let crystallized = crystallize(
            &env,
            CrystallizeInput {
                partition: "team".to_owned(),
                given: Settings::default(),
            },
        )
        .expect("crystallize");
        assert!(crystallized.patterns.is_empty());
        assert_eq!(crystallized.threshold, 3);
        let pending: Vec<(String, u64)> = crystallized
            .pending_groups
            .iter()
            .map(|g| (g.fingerprint["task"].clone(), g.episodes))
            .collect();
        assert_eq!(pending, [("deploy".to_owned(), 2), ("test".to_owned(), 1)]);
        let refused = crystallize(
            &env,
            CrystallizeInput {
                partition: "team".to_owned(),
                given: Settings {
                    cluster_threshold: Some(5),
                    ..Settings::default()
                },
            },
        )
        .expect_err("another threshold");
        assert_eq!(
            refused.to_string(),
            "partition team has cluster_threshold 3, not 5; a partition keeps the configuration of its first record"
        );
    }

    /// A record of `episodes` into `team` with the fields `task` and the settings given.
    fn record_with(
        env: &Env<'_>,
        threshold: Option<u64>,
        cap: Option<u64>,
        episodes: Vec<EpisodeInput>,
    ) -> Result<RecordOutput> {
        record(
            env,
            RecordInput {
                partition: "team".to_owned(),
                fields: Some(vec!["task".to_owned()]),
                cluster_threshold: threshold,
                evidence_cap: cap,
                initial_confidence: None,
                extra_fields: Default::default(),
                source: None,
                session: None,
                episodes,
            },
        )
    }

    /// The stored setting `setting` of `team`.
    fn stored(store: &crate::database::Store, setting: &str) -> Option<String> {
        let partition = Partition::new("team").expect("partition");
        store
            .meta_get(&setting_key(&partition, setting).expect("key"))
            .expect("meta")
    }

    #[test]
    fn a_record_giving_its_fields_keeps_the_stored_settings_and_refuses_others() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        let deploy = || episode("deploy", &["build"], true);
        record_with(&env, Some(2), Some(7), vec![deploy()]).expect("first record");
        // Settings not given are the stored ones, not the defaults.
        record_with(&env, None, None, vec![deploy()]).expect("no settings given");
        assert_eq!(stored(&store, "cluster_threshold").as_deref(), Some("2"));
        assert_eq!(stored(&store, "evidence_cap").as_deref(), Some("7"));
        // A given default that is not the stored value is refused by name, nothing written.
        let refused = record_with(&env, Some(3), None, vec![deploy()]).expect_err("threshold");
        assert_eq!(
            refused.to_string(),
            "partition team has cluster_threshold 2, not 3; a partition keeps the configuration of its first record"
        );
        let refused = record(
            &env,
            RecordInput {
                partition: "team".to_owned(),
                fields: Some(vec!["env".to_owned()]),
                cluster_threshold: None,
                evidence_cap: None,
                initial_confidence: None,
                extra_fields: Default::default(),
                source: None,
                session: None,
                episodes: vec![deploy()],
            },
        )
        .expect_err("other fields");
        assert_eq!(
            refused.to_string(),
            "partition team has fields task, not env; a partition keeps the configuration of its first record"
        );
        let missing = record_with(
            &env,
            None,
            None,
            vec![EpisodeInput {
                fingerprint: BTreeMap::new(),
                ..deploy()
            }],
        )
        .expect_err("a fingerprint without its field");
        assert_eq!(
            missing.to_string(),
            "episode 0: fingerprint is missing field(s) task"
        );
        let partition = Partition::new("team").expect("partition");
        let episodes = || {
            store
                .episodes_after(&partition, 0, usize::MAX)
                .expect("episodes")
                .len()
        };
        assert_eq!(episodes(), 2);
        // A partition whose threshold was stored before thresholds were kept has the default
        // (its other settings are the defaults too): a record giving the default is taken,
        // one giving another is refused, and neither stores another value.
        let old = crate::tests::in_memory();
        let env = env_on(&old);
        record_with(&env, None, None, vec![deploy()]).expect("first record");
        let key = setting_key(&partition, "cluster_threshold").expect("key");
        assert!(old.meta_delete(&key).expect("delete"));
        let refused =
            record_with(&env, Some(5), None, vec![deploy()]).expect_err("not the default");
        assert_eq!(
            refused.to_string(),
            "partition team has cluster_threshold 3, not 5; a partition keeps the configuration of its first record"
        );
        assert_eq!(stored(&old, "cluster_threshold"), None);
        record_with(&env, Some(3), None, vec![deploy()]).expect("the default");
        assert_eq!(stored(&old, "cluster_threshold").as_deref(), Some("3"));
        let count = old
            .episodes_after(&partition, 0, usize::MAX)
            .expect("episodes")
            .len();
        assert_eq!(count, 2);
    }
}
