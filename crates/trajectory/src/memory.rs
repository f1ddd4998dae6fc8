//! [`TrajectoryMemory`]: record episodes, crystallize patterns, recall what worked.

use std::collections::{HashMap, HashSet};

use agent_memory_core::evidence::Writer;
use agent_memory_core::store::trajectory::{
    CrystallizeInput, CrystallizeOutput, Episode, EpisodesForgotten, Fingerprint, Group,
    NewEpisode, Pattern, PatternStats, PatternStore, PendingObservation, TrajectoryTally,
};
use agent_memory_core::{Clock, MetaKey, Partition, Provenance, Source, Timestamp};
use serde_json::Value;

use crate::config::{Config, Weights};
use crate::error::{Error, Result};
use crate::policy::{
    CanonicalAggregator, ModalTrajectory, SignalMapping, SuccessSignal, observe, recency,
};

/// One episode for [`TrajectoryMemory::record_episodes`].
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct EpisodeRecord<'a> {
    /// Values of the fingerprint fields (extra fields are ignored).
    pub fingerprint: &'a [(&'a str, &'a str)],
    /// The ordered actions taken.
    pub trajectory: &'a [&'a str],
    /// How it went, e.g. `{"success": true}`.
    pub outcome: &'a Value,
    /// The tenant, agent or team.
    pub partition: &'a Partition,
    /// When the episode happened; `None`: now, by the memory's clock. An episode imported
    /// from an earlier run keeps its own time, which feeds recency and `last_reinforced`
    /// (never the watermark, which is a sequence number).
    pub recorded_at: Option<Timestamp>,
}

impl<'a> EpisodeRecord<'a> {
    /// An episode of `partition`: the values of the fingerprint fields, the actions taken in
    /// order, and how it went.
    pub fn new(
        fingerprint: &'a [(&'a str, &'a str)],
        trajectory: &'a [&'a str],
        outcome: &'a Value,
        partition: &'a Partition,
    ) -> Self {
        EpisodeRecord {
            fingerprint,
            trajectory,
            outcome,
            partition,
            recorded_at: None,
        }
    }

    /// The same episode, recorded at `at` instead of now.
    pub fn with_recorded_at(mut self, at: Timestamp) -> Self {
        self.recorded_at = Some(at);
        self
    }
}

/// Per-call recall settings; `RecallOptions::default()` uses the configuration's.
///
/// ```
/// use agent_memory_trajectory::{RecallOptions, Weights};
///
/// let options = RecallOptions::new().with_limit(1).with_weights(Weights::new(1.0, 0.0));
/// assert_eq!(options.limit, Some(1));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct RecallOptions {
    /// At most this many patterns (`None`: the configured limit).
    pub limit: Option<usize>,
    /// Ranking weights (`None`: the configured weights).
    pub weights: Option<Weights>,
}

impl RecallOptions {
    /// The configuration's limit and weights.
    pub fn new() -> Self {
        RecallOptions::default()
    }

    /// At most `limit` patterns.
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Ranked by `weights`.
    pub fn with_weights(mut self, weights: Weights) -> Self {
        self.weights = Some(weights);
        self
    }
}

/// A recalled pattern and the composite score it was ranked by.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ScoredPattern {
    /// The pattern.
    pub pattern: Pattern,
    /// `w_confidence * confidence + w_recency * recency`.
    pub score: f64,
}

/// A caller's own rules for one crystallize run (see
/// [`TrajectoryMemory::crystallize_with_hooks`]): popoto's two extension points.
pub trait CrystallizeHooks {
    /// The signal in `[0, 1]` of each of the run's new `episodes`, in their order; `None`:
    /// each is mapped from its outcome as configured.
    fn signals(&self, episodes: &[Episode]) -> agent_memory_core::Result<Option<Vec<f64>>>;

    /// The canonical sequence of each of `patterns` (the patterns the run's new `episodes`
    /// created or reinforced), in their order; `None` for one keeps the aggregator's choice.
    fn canonical(
        &self,
        episodes: &[Episode],
        patterns: &[&Fingerprint],
    ) -> agent_memory_core::Result<Vec<Option<Vec<String>>>>;
}

/// How many new episodes [`TrajectoryMemory::crystallize`] reads and steps at a time: a
/// page of this many episodes is about 10 MB in memory, and the run's per-page costs (each
/// touched group read and written once per page) are spread over enough episodes to vanish.
pub const CRYSTALLIZE_PAGE: usize = 10_000;

/// Procedural memory over a [`PatternStore`].
pub struct TrajectoryMemory<S, C> {
    store: S,
    clock: C,
    config: Config,
    signal: Box<dyn SignalMapping>,
    aggregator: Box<dyn CanonicalAggregator>,
    writer: Option<Writer>,
}

impl<S: PatternStore, C: Clock> TrajectoryMemory<S, C> {
    /// Procedural memory on `store`, with time from `clock`; fails listing every problem of
    /// `config`.
    pub fn new(store: S, clock: C, config: Config) -> Result<Self> {
        config.validate()?;
        Ok(TrajectoryMemory {
            store,
            clock,
            config,
            signal: Box::new(SuccessSignal),
            aggregator: Box::new(ModalTrajectory),
            writer: None,
        })
    }

    /// Replaces the outcome-to-signal mapping.
    pub fn with_signal_mapping(mut self, mapping: impl SignalMapping + 'static) -> Self {
        self.signal = Box::new(mapping);
        self
    }

    /// With the writer each recorded episode keeps as its provenance (its time is the
    /// episode's `recorded_at`): the source, `user` when left out, the session or run and
    /// the client. Without one, episodes are recorded with no writer.
    pub fn with_writer(mut self, writer: Writer) -> Self {
        self.writer = Some(writer);
        self
    }

    /// Replaces the canonical-trajectory aggregator.
    pub fn with_aggregator(mut self, aggregator: impl CanonicalAggregator + 'static) -> Self {
        self.aggregator = Box::new(aggregator);
        self
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Records one completed trajectory; cheap, no clustering happens here.
    pub fn record_episode(
        &self,
        fingerprint: &[(&str, &str)],
        trajectory: &[&str],
        outcome: &Value,
        partition: &Partition,
    ) -> Result<Episode> {
        let mut stored = self.record_episodes(&[EpisodeRecord::new(
            fingerprint,
            trajectory,
            outcome,
            partition,
        )])?;
        stored.pop().ok_or_else(|| {
            agent_memory_core::Error::corrupt("append episodes", "no episode returned").into()
        })
    }

    /// Records many episodes in one atomic write; none is written if any is invalid.
    pub fn record_episodes(&self, records: &[EpisodeRecord<'_>]) -> Result<Vec<Episode>> {
        self.record_episodes_with_settings(records, &[])
    }

    /// [`record_episodes`](Self::record_episodes) that also settles `settings` (meta entries
    /// of the store) in the same atomic write: an entry not set yet is set, one set to the
    /// same value stays, and one set to another value fails the call with a conflict
    /// ([`Error::Store`]) with nothing written. A tool stores the configuration of a
    /// partition this way with its first episodes (see
    /// [`EpisodeStore::append_episodes_with_settings`](agent_memory_core::store::trajectory::EpisodeStore::append_episodes_with_settings)).
    pub fn record_episodes_with_settings(
        &self,
        records: &[EpisodeRecord<'_>],
        settings: &[(&MetaKey, &str)],
    ) -> Result<Vec<Episode>> {
        let now = self.clock.now();
        // A batch repeats its fingerprints: each distinct one is built once and shared. An
        // outcome is serialized once for a run of records that point to the same value (the
        // records borrow it for the whole call, so an address stands for one value); records
        // that each hold their own, as the contract's do, are serialized one by one, with
        // nothing to look up.
        let mut fingerprints: HashMap<&[(&str, &str)], Fingerprint> = HashMap::new();
        let mut episodes: Vec<NewEpisode> = Vec::with_capacity(records.len());
        let mut previous: Option<&Value> = None;
        for r in records {
            let fingerprint = match fingerprints.get(r.fingerprint) {
                Some(fp) => fp.clone(),
                None => {
                    let fp = self.episode_fingerprint(r.fingerprint)?;
                    fingerprints.insert(r.fingerprint, fp.clone());
                    fp
                }
            };
            let outcome = match (episodes.last(), previous) {
                (Some(last), Some(before)) if std::ptr::eq(before, r.outcome) => {
                    last.outcome.clone()
                }
                _ => r.outcome.to_string(),
            };
            previous = Some(r.outcome);
            let recorded_at = r.recorded_at.unwrap_or(now);
            let provenance = self.writer.as_ref().map(|w| Provenance {
                source: w.source.clone().unwrap_or(Source::User),
                session: w.session.clone(),
                client: w.client.clone(),
                at: recorded_at,
            });
            episodes.push(NewEpisode {
                partition: r.partition.clone(),
                fingerprint,
                trajectory: r.trajectory.iter().map(|s| (*s).to_owned()).collect(),
                outcome,
                recorded_at,
                provenance,
            });
        }
        let seqs = self
            .store
            .append_episodes_with_settings(&episodes, settings)?;
        Ok(Episode::numbered(episodes, seqs)?)
    }

    fn episode_fingerprint(&self, given: &[(&str, &str)]) -> Result<Fingerprint> {
        let mut pairs = Vec::with_capacity(self.config.fingerprint_fields.len());
        let mut missing = Vec::new();
        for field in &self.config.fingerprint_fields {
            match given.iter().find(|(k, _)| k == field) {
                Some((_, v)) => pairs.push((field.as_str(), *v)),
                None => missing.push(field.clone()),
            }
        }
        if !missing.is_empty() {
            return Err(Error::MissingFields {
                missing,
                expected: self.config.fingerprint_fields.clone(),
            });
        }
        Ok(Fingerprint::new(pairs)?)
    }

    /// Crystallizes `partition`: every episode recorded since the last run is observed once,
    /// into the pattern of its fingerprint group (created when the group reaches the
    /// threshold). Returns the patterns created or reinforced.
    ///
    /// The new episodes are read [`CRYSTALLIZE_PAGE`] at a time, each page stepped with the
    /// state the pages before it left, all in one atomic step: the step is incremental, so
    /// the result is that of one step over them all, and a run's memory stays bounded
    /// however many episodes wait.
    pub fn crystallize(&self, partition: &Partition) -> Result<Vec<Pattern>> {
        Ok(self
            .store
            .crystallize_in_pages(partition, CRYSTALLIZE_PAGE, &|input| self.step(input))?)
    }

    /// [`crystallize`](Self::crystallize) with the caller's `hooks` deciding each new
    /// episode's signal and each reinforced pattern's canonical sequence, inside the same
    /// atomic step (how a subclass of popoto's recipe in another language, overriding
    /// `_episode_signal` or `_canonical_sequence`, takes part). The hooks run again when the
    /// backend retries the step; an error from a hook fails the call with nothing written.
    pub fn crystallize_with_hooks(
        &self,
        partition: &Partition,
        hooks: &dyn CrystallizeHooks,
    ) -> Result<Vec<Pattern>> {
        Ok(self.store.crystallize_with(partition, &|input| {
            let signals = hooks.signals(&input.episodes)?;
            if let Some(signals) = &signals
                && signals.len() != input.episodes.len()
            {
                return Err(agent_memory_core::Error::invalid_input(
                    "signals",
                    format!(
                        "{} signals for {} episodes",
                        signals.len(),
                        input.episodes.len()
                    ),
                ));
            }
            let mut out = self.step_with(input, signals.as_deref())?;
            let reinforced: Vec<&Fingerprint> = out
                .groups
                .iter()
                .filter(|g| g.pattern.is_some())
                .map(|g| &g.fingerprint)
                .collect();
            if reinforced.is_empty() {
                return Ok(out);
            }
            let chosen = hooks.canonical(&input.episodes, &reinforced)?;
            if chosen.len() != reinforced.len() {
                return Err(agent_memory_core::Error::invalid_input(
                    "canonical",
                    format!(
                        "{} canonical sequences for {} patterns",
                        chosen.len(),
                        reinforced.len()
                    ),
                ));
            }
            let CrystallizeOutput {
                groups, tallies, ..
            } = &mut out;
            let patterns = groups.iter_mut().filter(|g| g.pattern.is_some());
            for (group, sequence) in patterns.zip(chosen) {
                let Some(sequence) = sequence else {
                    continue;
                };
                let key = group.fingerprint.key();
                // The tally of the chosen trajectory when the group took it; a sequence no
                // episode of the group took is kept with a count of none.
                let tally = tallies
                    .iter()
                    .chain(&input.tallies)
                    .find(|(k, t)| *k == key && t.trajectory == sequence)
                    .map(|(_, t)| t.clone())
                    .unwrap_or(TrajectoryTally {
                        trajectory: sequence,
                        count: 0,
                        newest: Timestamp::from_millis(0),
                        first_seq: 0,
                    });
                group.canonical = Some(tally);
            }
            Ok(out)
        })?)
    }

    /// The pure crystallize step: from the new episodes and the state they touch, the new
    /// state. Public so a test can run it over a whole history at once and compare.
    pub fn step(&self, input: &CrystallizeInput) -> agent_memory_core::Result<CrystallizeOutput> {
        self.step_with(input, None)
    }

    /// [`step`](Self::step), with each new episode's signal given (in the order of
    /// `input.episodes`) instead of mapped from its outcome.
    fn step_with(
        &self,
        input: &CrystallizeInput,
        given: Option<&[f64]>,
    ) -> agent_memory_core::Result<CrystallizeOutput> {
        let cfg = &self.config;
        let mut groups: HashMap<&str, Group> = input
            .groups
            .iter()
            .map(|g| (g.fingerprint.as_key(), g.clone()))
            .collect();
        // Tallies by (group key, trajectory), each with whether this run changed it.
        let mut tallies: HashMap<(&str, &[String]), (TrajectoryTally, bool)> = HashMap::new();
        for (key, tally) in &input.tallies {
            tallies.insert(
                (key.as_str(), tally.trajectory.as_slice()),
                (tally.clone(), false),
            );
        }
        // Groups in first-touched order, so the output order is deterministic.
        let mut touched: Vec<&str> = Vec::new();
        let mut changed: HashMap<&str, Vec<&[String]>> = HashMap::new();
        let mut reinforced: HashSet<&str> = HashSet::new();
        let mut signals: HashMap<&str, f64> = HashMap::new();
        for (i, e) in input.episodes.iter().enumerate() {
            let ep = &e.episode;
            let key = ep.fingerprint.as_key();
            let signal = match (given, signals.get(ep.outcome.as_str())) {
                (Some(given), _) => given[i],
                (None, Some(&s)) => s,
                (None, None) => {
                    let outcome: Value = serde_json::from_str(&ep.outcome).map_err(|err| {
                        agent_memory_core::Error::corrupt(
                            format!("episode {} outcome", e.seq),
                            err.to_string(),
                        )
                    })?;
                    let s = self.signal.signal(&outcome);
                    signals.insert(ep.outcome.as_str(), s);
                    s
                }
            };
            let (tally, was_changed) = tallies
                .entry((key, ep.trajectory.as_slice()))
                .or_insert_with(|| {
                    let tally = TrajectoryTally {
                        trajectory: ep.trajectory.clone(),
                        count: 0,
                        newest: ep.recorded_at,
                        first_seq: e.seq,
                    };
                    (tally, false)
                });
            tally.count += 1;
            tally.newest = tally.newest.max(ep.recorded_at);
            let group_changes = changed.entry(key).or_insert_with(|| {
                touched.push(key);
                Vec::new()
            });
            if !*was_changed {
                *was_changed = true;
                group_changes.push(ep.trajectory.as_slice());
            }
            let group = groups.entry(key).or_insert_with(|| Group {
                fingerprint: ep.fingerprint.clone(),
                episode_count: 0,
                canonical: None,
                pending: Vec::new(),
                pattern: None,
            });
            group.episode_count += 1;
            let observed = match &mut group.pattern {
                Some(stats) => {
                    observe(stats, signal, ep.recorded_at, cfg.evidence_cap);
                    true
                }
                None => {
                    group.pending.push(PendingObservation {
                        signal,
                        recorded_at: ep.recorded_at,
                    });
                    if group.episode_count >= cfg.cluster_threshold {
                        let mut stats = PatternStats {
                            confidence: cfg.initial_confidence,
                            evidence_count: 0,
                            corroborations: 0,
                            contradictions: 0,
                            last_reinforced: ep.recorded_at,
                        };
                        for p in group.pending.drain(..) {
                            observe(&mut stats, p.signal, p.recorded_at, cfg.evidence_cap);
                        }
                        group.pattern = Some(stats);
                        true
                    } else {
                        false
                    }
                }
            };
            if observed {
                reinforced.insert(key);
            }
        }
        let mut out = CrystallizeOutput::default();
        for &key in &touched {
            let Some(mut group) = groups.remove(key) else {
                continue;
            };
            let changes = changed.get(key).map(Vec::as_slice).unwrap_or_default();
            let current = group
                .canonical
                .as_ref()
                .map(|c| {
                    tallies
                        .get(&(key, c.trajectory.as_slice()))
                        .map_or(c, |(t, _)| t)
                })
                .filter(|c| !changes.contains(&c.trajectory.as_slice()));
            let candidates: Vec<&TrajectoryTally> = current
                .into_iter()
                .chain(
                    changes
                        .iter()
                        .filter_map(|t| tallies.get(&(key, *t)).map(|(t, _)| t)),
                )
                .collect();
            if !candidates.is_empty() {
                let chosen = self
                    .aggregator
                    .choose(&candidates)
                    .min(candidates.len() - 1);
                group.canonical = Some(candidates[chosen].clone());
            }
            for t in changes {
                if let Some((tally, _)) = tallies.get(&(key, *t)) {
                    out.tallies.push((key.to_owned(), tally.clone()));
                }
            }
            if reinforced.contains(key) {
                out.reinforced.push(group.fingerprint.clone());
            }
            out.groups.push(group);
        }
        Ok(out)
    }

    /// The patterns of `partition` matching `fingerprint` (a subset of the fingerprint
    /// fields), best first, with the configured limit and weights.
    pub fn recall(
        &self,
        fingerprint: &[(&str, &str)],
        partition: &Partition,
    ) -> Result<Vec<ScoredPattern>> {
        self.recall_with(fingerprint, partition, RecallOptions::default())
    }

    /// [`recall`](Self::recall) with per-call limit and weights. Filters by fingerprint
    /// first, ranks within the partition, then cuts to the limit.
    ///
    /// As popoto: a limit of 0 or an empty fingerprint returns nothing before any other
    /// check; a field that is not a fingerprint field is an error; weights none of which is
    /// positive return nothing. A weight that is not finite is an error (popoto drops a NaN
    /// weight and scores an infinite one as infinity).
    pub fn recall_with(
        &self,
        fingerprint: &[(&str, &str)],
        partition: &Partition,
        options: RecallOptions,
    ) -> Result<Vec<ScoredPattern>> {
        let limit = options.limit.unwrap_or(self.config.recall_limit);
        if limit == 0 || fingerprint.is_empty() {
            return Ok(Vec::new());
        }
        let fields = &self.config.fingerprint_fields;
        let unknown: Vec<String> = fingerprint
            .iter()
            .filter(|(k, _)| !fields.iter().any(|f| f == k))
            .map(|(k, _)| (*k).to_owned())
            .collect();
        if !unknown.is_empty() {
            return Err(Error::UnknownFields {
                unknown,
                expected: fields.clone(),
            });
        }
        let weights = options.weights.unwrap_or(self.config.weights);
        weights.check()?;
        if !weights.any_positive() {
            return Ok(Vec::new());
        }
        let filter = Fingerprint::new(fingerprint.iter().copied())?;
        let now = self.clock.now();
        let mut scored: Vec<ScoredPattern> = self
            .store
            .patterns(partition, &filter)?
            .into_iter()
            .map(|pattern| {
                let score = self.score(&pattern.stats, now, weights);
                ScoredPattern { pattern, score }
            })
            .collect();
        scored.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(
                    b.pattern
                        .stats
                        .confidence
                        .total_cmp(&a.pattern.stats.confidence),
                )
                .then(
                    b.pattern
                        .stats
                        .last_reinforced
                        .cmp(&a.pattern.stats.last_reinforced),
                )
                .then_with(|| a.pattern.fingerprint.cmp(&b.pattern.fingerprint))
        });
        scored.truncate(limit);
        Ok(scored)
    }

    /// The composite score of a pattern at `now`.
    pub fn score(
        &self,
        stats: &PatternStats,
        now: agent_memory_core::Timestamp,
        weights: Weights,
    ) -> f64 {
        let mut score = 0.0;
        if weights.confidence > 0.0 {
            score += weights.confidence * stats.confidence;
        }
        if weights.recency > 0.0 {
            let r = recency(
                now.days_since(stats.last_reinforced),
                stats.confidence,
                self.config.decay_rate,
                self.config.modulation_strength,
                self.config.initial_confidence,
            );
            score += weights.recency * r;
        }
        score
    }

    /// Prunes the observed episodes of `partition` older than the configured retention;
    /// patterns do not change. Returns how many were removed (0 without a retention).
    pub fn prune(&self, partition: &Partition) -> Result<u64> {
        let Some(retention) = self.config.retention_millis else {
            return Ok(0);
        };
        let before = self.clock.now().add_millis(-retention);
        Ok(self.store.prune_episodes(partition, before)?)
    }

    /// Forgets every episode of `partition` that `writer` recorded (the cleanup after a
    /// poisoned run, session or tool), and rebuilds each pattern or group they had been
    /// crystallized into from the episodes left, with this memory's policy: with nothing
    /// pruned, the patterns end as if the writer had never recorded; a group with no episode
    /// left is gone. One atomic step, one audit entry by `by` (see
    /// [`PatternStore::forget_episodes_by`]). A group once crystallized with caller hooks
    /// ([`crystallize_with_hooks`](Self::crystallize_with_hooks)) is rebuilt without them.
    pub fn forget_by(
        &self,
        partition: &Partition,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<EpisodesForgotten> {
        Ok(self
            .store
            .forget_episodes_by(partition, writer, by, &|input| self.step(input))?)
    }
}
