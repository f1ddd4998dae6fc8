//! [`EpisodeStore`] and [`PatternStore`]: procedural memory's episodes (what an agent did and
//! how it went) and the patterns crystallized from them.
//!
//! Episodes are append-only; the store numbers them with a sequence number that only grows
//! (per store, so per partition too). Crystallize reads a partition's episodes above the
//! partition's **watermark** (the highest sequence number already crystallized), hands them
//! with the state of the groups they touch to a pure function supplied by the caller, writes
//! what the function returns and advances the watermark, all in one atomic step. Concurrent
//! crystallizers therefore observe each episode exactly once, whatever the writers' clocks
//! say, and a run costs in proportion to the new episodes, not to the history.
//!
//! Fingerprints, trajectories and group keys are plain text here; the `trajectory` crate owns
//! the policy (signals, confidence, canonical choice) and the JSON outcome format.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::evidence::Writer;
use crate::names::{MetaKey, Partition};
use crate::provenance::Provenance;
use crate::store::Page;
use crate::time::Timestamp;

/// A store-assigned sequence number: unique in the store, growing in recording order.
pub type Seq = u64;

/// The fingerprint of an episode or pattern: `(field, value)` pairs, sorted by field name,
/// fields unique.
///
/// Shared and immutable: a clone is a reference-count increment, and the canonical key is
/// computed once, when the fingerprint is made, so the hot paths (recording, crystallizing,
/// recall) never rebuild it per episode.
#[derive(Clone)]
pub struct Fingerprint(Arc<FingerprintData>);

struct FingerprintData {
    pairs: Vec<(String, String)>,
    key: String,
}

impl Fingerprint {
    /// A fingerprint from `(field, value)` pairs in any order; a field named twice is an error.
    pub fn new<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self> {
        let mut pairs: Vec<(String, String)> = pairs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        pairs.sort();
        if let Some(w) = pairs.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(Error::invalid_input(
                format!("fingerprint.{}", w[0].0),
                "field given more than once",
            ));
        }
        let key = encode_texts(pairs.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()]));
        Ok(Fingerprint(Arc::new(FingerprintData { pairs, key })))
    }

    /// The `(field, value)` pairs, sorted by field.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.0.pairs
    }

    /// The value of `field`, if present.
    pub fn get(&self, field: &str) -> Option<&str> {
        let pairs = &self.0.pairs;
        pairs
            .binary_search_by(|(k, _)| k.as_str().cmp(field))
            .ok()
            .map(|i| pairs[i].1.as_str())
    }

    /// Whether every pair of `filter` is in this fingerprint (an empty filter matches all).
    pub fn matches(&self, filter: &Fingerprint) -> bool {
        filter
            .pairs()
            .iter()
            .all(|(k, v)| self.get(k) == Some(v.as_str()))
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.0.pairs.is_empty()
    }

    /// The canonical text key of the fingerprint: equal fingerprints, equal keys; backends
    /// index it for exact recall.
    pub fn key(&self) -> String {
        self.0.key.clone()
    }

    /// [`Fingerprint::key`] borrowed, without a copy.
    pub fn as_key(&self) -> &str {
        &self.0.key
    }

    /// The fingerprint back from [`Fingerprint::key`]. A key as `key` makes it (its pairs
    /// sorted, fields unique) is kept as it is, not encoded again: stores read a pattern's
    /// fingerprint this way for every pattern a recall returns.
    pub fn from_key(key: &str) -> Result<Self> {
        let corrupt = || Error::corrupt("fingerprint key", key);
        let mut pairs = Vec::with_capacity(4);
        let mut text = key;
        while !text.is_empty() {
            let (field, rest) = next_text(text).ok_or_else(corrupt)?;
            let (value, rest) = next_text(rest).ok_or_else(corrupt)?;
            pairs.push((field.to_owned(), value.to_owned()));
            text = rest;
        }
        if pairs.windows(2).all(|w| w[0].0 < w[1].0) {
            let key = key.to_owned();
            return Ok(Fingerprint(Arc::new(FingerprintData { pairs, key })));
        }
        Fingerprint::new(pairs)
    }

    /// The `(field, value)` pairs, sorted by field, taken out of the fingerprint (copied when
    /// another clone of it still holds them).
    pub fn into_pairs(self) -> Vec<(String, String)> {
        match Arc::try_unwrap(self.0) {
            Ok(data) => data.pairs,
            Err(shared) => shared.pairs.clone(),
        }
    }
}

/// The first text of `text` as [`encode_texts`] writes them, and what follows it (`None`
/// when `text` does not begin with such an item): a list is walked without copying its items.
pub fn next_text(text: &str) -> Option<(&str, &str)> {
    let colon = text.find(':')?;
    let len: usize = text[..colon].parse().ok()?;
    let rest = &text[colon + 1..];
    Some((rest.get(..len)?, &rest[len..]))
}

impl Default for Fingerprint {
    fn default() -> Self {
        Fingerprint(Arc::new(FingerprintData {
            pairs: Vec::new(),
            key: String::new(),
        }))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Fingerprint").field(&self.0.pairs).finish()
    }
}

// The key encodes the sorted pairs injectively, so comparing keys compares pairs.
impl PartialEq for Fingerprint {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.key == other.0.key
    }
}

impl Eq for Fingerprint {}

impl Hash for Fingerprint {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.key.hash(state);
    }
}

// Ordered by pairs (field, then value), not by key: recall breaks ties in this order.
impl PartialOrd for Fingerprint {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Fingerprint {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.pairs.cmp(&other.0.pairs)
    }
}

/// Encodes a list of texts as one text: each item as `<byte length>:<item>`. Unambiguous for
/// any content, cheap to decode, and it needs no JSON in `memory-core`.
pub fn encode_texts<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::with_capacity(64);
    for item in items {
        push_decimal(&mut out, item.len());
        out.push(':');
        out.push_str(item);
    }
    out
}

/// Appends `n` in decimal (on the hot path of every key and trajectory, where the
/// formatting machinery of `write!` costs more than the text itself).
fn push_decimal(out: &mut String, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

/// Decodes [`encode_texts`]; `None` when the text is not such an encoding.
pub fn decode_texts(mut text: &str) -> Option<Vec<String>> {
    let mut items = Vec::new();
    while !text.is_empty() {
        let (item, rest) = next_text(text)?;
        items.push(item.to_owned());
        text = rest;
    }
    Some(items)
}

/// Encodes the pending observations of a group as one text (with [`encode_texts`]): each
/// signal as the 16 hex digits of its bits (exact, whatever the float), then its time in
/// milliseconds. Backends store it as is; [`decode_pending`] reads it back.
pub fn encode_pending(pending: &[PendingObservation]) -> String {
    let parts: Vec<String> = pending
        .iter()
        .flat_map(|p| {
            [
                format!("{:016x}", p.signal.to_bits()),
                p.recorded_at.as_millis().to_string(),
            ]
        })
        .collect();
    encode_texts(parts.iter().map(String::as_str))
}

/// Decodes [`encode_pending`]; `None` when the text is not such an encoding.
pub fn decode_pending(text: &str) -> Option<Vec<PendingObservation>> {
    let parts = decode_texts(text)?;
    if parts.len() % 2 != 0 {
        return None;
    }
    parts
        .chunks(2)
        .map(|pair| {
            Some(PendingObservation {
                signal: f64::from_bits(u64::from_str_radix(&pair[0], 16).ok()?),
                recorded_at: Timestamp::from_millis(pair[1].parse().ok()?),
            })
        })
        .collect()
}

/// An episode to record: one completed trajectory and how it went.
#[derive(Clone, Debug, PartialEq)]
pub struct NewEpisode {
    /// The tenant, agent or team the episode belongs to.
    pub partition: Partition,
    /// The values of the configured fingerprint fields.
    pub fingerprint: Fingerprint,
    /// The ordered actions taken.
    pub trajectory: Vec<String>,
    /// The outcome as JSON text (the feature crate owns the format).
    pub outcome: String,
    /// When the episode was recorded, by the writer's clock.
    pub recorded_at: Timestamp,
    /// Who recorded it: the source, the session or run, the client. Its time is
    /// `recorded_at`: a store keeps one time per episode and answers `at == recorded_at`.
    /// `None` for an episode recorded before writers were kept, or without one.
    pub provenance: Option<Provenance>,
}

/// A recorded episode.
#[derive(Clone, Debug, PartialEq)]
pub struct Episode {
    /// The store-assigned sequence number (also the episode's id).
    pub seq: Seq,
    /// What was recorded.
    pub episode: NewEpisode,
}

impl Episode {
    /// `episodes` paired, in order, with the sequence numbers a store answered for them
    /// ([`EpisodeStore::append_episodes`]); a corrupt-store error unless it answered one
    /// number per episode.
    pub fn numbered(episodes: Vec<NewEpisode>, seqs: Vec<Seq>) -> Result<Vec<Episode>> {
        if seqs.len() != episodes.len() {
            return Err(Error::corrupt(
                "append_episodes",
                format!(
                    "{} sequence numbers for {} episodes",
                    seqs.len(),
                    episodes.len()
                ),
            ));
        }
        Ok(episodes
            .into_iter()
            .zip(seqs)
            .map(|(episode, seq)| Episode { seq, episode })
            .collect())
    }
}

/// One distinct trajectory of a group and how often and how lately it was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrajectoryTally {
    /// The actions.
    pub trajectory: Vec<String>,
    /// How many episodes of the group took it.
    pub count: u64,
    /// The newest `recorded_at` among them.
    pub newest: Timestamp,
    /// The sequence number of the first of them.
    pub first_seq: Seq,
}

/// The capped-evidence statistics of a crystallized pattern.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PatternStats {
    /// Confidence in `[0, 1]`.
    pub confidence: f64,
    /// Episodes observed.
    pub evidence_count: u64,
    /// Observed episodes whose signal was at least 0.5.
    pub corroborations: u64,
    /// Observed episodes whose signal was below 0.5.
    pub contradictions: u64,
    /// The newest `recorded_at` among the observed episodes.
    pub last_reinforced: Timestamp,
}

/// An episode counted in a group that has not reached the clustering threshold yet: it will
/// be observed, in order, when the group does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PendingObservation {
    /// The episode's signal in `[0, 1]`.
    pub signal: f64,
    /// The episode's `recorded_at`.
    pub recorded_at: Timestamp,
}

/// Everything a store keeps about one fingerprint group of a partition.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The group's fingerprint.
    pub fingerprint: Fingerprint,
    /// Episodes of the group crystallized so far.
    pub episode_count: u64,
    /// The current canonical trajectory's tally (`None` before the first episode).
    pub canonical: Option<TrajectoryTally>,
    /// Signals of episodes not yet observed (the group is below the threshold).
    pub pending: Vec<PendingObservation>,
    /// The pattern's statistics, once the group reached the threshold.
    pub pattern: Option<PatternStats>,
}

/// A crystallized pattern, as recall returns it.
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    /// The partition it belongs to.
    pub partition: Partition,
    /// Its fingerprint.
    pub fingerprint: Fingerprint,
    /// The canonical ("what worked") sequence.
    pub canonical_sequence: Vec<String>,
    /// Its statistics.
    pub stats: PatternStats,
}

impl Pattern {
    /// The pattern of `group` in `partition`, if the group has one.
    pub fn of_group(partition: &Partition, group: &Group) -> Option<Pattern> {
        Some(Pattern {
            partition: partition.clone(),
            fingerprint: group.fingerprint.clone(),
            canonical_sequence: group
                .canonical
                .as_ref()
                .map(|t| t.trajectory.clone())
                .unwrap_or_default(),
            stats: group.pattern?,
        })
    }
}

/// What crystallize hands the caller's step function.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CrystallizeInput {
    /// The partition's episodes above its watermark, in sequence order.
    pub episodes: Vec<Episode>,
    /// The stored state of every group those episodes belong to (absent: a new group).
    pub groups: Vec<Group>,
    /// The stored tally of every `(group, trajectory)` pair among those episodes, keyed by the
    /// group's [`Fingerprint::key`] (absent: a trajectory new to its group).
    pub tallies: Vec<(String, TrajectoryTally)>,
}

/// What the step function returns for the store to write.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CrystallizeOutput {
    /// The new state of every group that changed.
    pub groups: Vec<Group>,
    /// The new tally of every `(group key, trajectory)` that changed.
    pub tallies: Vec<(String, TrajectoryTally)>,
    /// The fingerprints of the patterns created or reinforced, for the caller's result.
    pub reinforced: Vec<Fingerprint>,
}

/// What a store's crystallize run in pages ([`PatternStore::crystallize_in_pages`]) keeps
/// between its pages to answer as one step over all of them would: the order in which the
/// run's episodes first touched each group, and the latest state of every group a page
/// reinforced. It grows with the groups touched, not with the episodes.
#[derive(Debug, Default)]
pub struct ReinforcedPatterns {
    /// Each group touched so far, by key, with its place in first-touched order.
    order: std::collections::HashMap<String, usize>,
    /// The latest state of each group some page reinforced, by key.
    latest: std::collections::HashMap<String, Group>,
}

impl ReinforcedPatterns {
    /// Notes the groups a page's `episodes` (in sequence order) touch, before its step.
    pub fn touch(&mut self, episodes: &[Episode]) {
        for e in episodes {
            let key = e.episode.fingerprint.as_key();
            if !self.order.contains_key(key) {
                let next = self.order.len();
                self.order.insert(key.to_owned(), next);
            }
        }
    }

    /// Notes what a page's step returned, as written: a group it names as reinforced, or one
    /// an earlier page reinforced, is kept in its new state (a later state of a group in one
    /// output wins over an earlier one).
    pub fn written(&mut self, output: &CrystallizeOutput) {
        let named: std::collections::HashSet<&str> =
            output.reinforced.iter().map(Fingerprint::as_key).collect();
        for group in &output.groups {
            let key = group.fingerprint.as_key();
            if named.contains(key) || self.latest.contains_key(key) {
                self.latest.insert(key.to_owned(), group.clone());
            }
        }
    }

    /// The patterns of the reinforced groups, in the order the run first touched them.
    pub fn patterns(self, partition: &Partition) -> Vec<Pattern> {
        let order = self.order;
        let mut groups: Vec<(usize, Group)> = self
            .latest
            .into_iter()
            .map(|(key, group)| (order.get(&key).copied().unwrap_or(usize::MAX), group))
            .collect();
        groups.sort_by_key(|(at, _)| *at);
        groups
            .iter()
            .filter_map(|(_, group)| Pattern::of_group(partition, group))
            .collect()
    }
}

/// The pure function a crystallize run applies: from the new episodes and the state they
/// touch, the new state. It may be called more than once if the backend retries, so it must
/// not have effects of its own.
pub type CrystallizeStep<'a> = &'a dyn Fn(&CrystallizeInput) -> Result<CrystallizeOutput>;

/// The conflict reported when a setting given to
/// [`EpisodeStore::append_episodes_with_settings`] is already stored with another value.
/// Shared by backends so every implementation words it the same way.
pub fn settings_conflict(key: &MetaKey, wanted: &str, found: &str) -> Error {
    Error::conflict(
        "meta entry",
        key.as_str(),
        format!("already set to {found:?}, not {wanted:?}"),
    )
}

/// Append-only storage of episodes.
pub trait EpisodeStore: Send + Sync {
    /// Appends `episodes` in order, in one atomic write, and returns their sequence numbers,
    /// one per episode in the same order (ascending). The caller, which holds the episodes,
    /// pairs them up ([`Episode`]) if it needs to: the store copies nothing back. Provided:
    /// [`append_episodes_with_settings`] without settings.
    ///
    /// [`append_episodes_with_settings`]: Self::append_episodes_with_settings
    fn append_episodes(&self, episodes: &[NewEpisode]) -> Result<Vec<Seq>> {
        self.append_episodes_with_settings(episodes, &[])
    }

    /// [`append_episodes`](Self::append_episodes) that also settles `settings`, meta entries
    /// (as [`MetaStore`](crate::MetaStore) reads them), in the same atomic write: an entry not
    /// set yet is set; one already set to the same value stays; one set to another value
    /// fails the call with [`Error::Conflict`] (see [`settings_conflict`]) and nothing at all
    /// is written. A tool stores the configuration of a partition this way with its first
    /// episodes, so two first writers with different configurations cannot both store
    /// episodes.
    fn append_episodes_with_settings(
        &self,
        episodes: &[NewEpisode],
        settings: &[(&MetaKey, &str)],
    ) -> Result<Vec<Seq>>;

    /// Up to `limit` episodes of `partition` with a sequence number above `after`, ascending.
    fn episodes_after(
        &self,
        partition: &Partition,
        after: Seq,
        limit: usize,
    ) -> Result<Vec<Episode>>;

    /// Up to `limit` episodes of the group `fingerprint` of `partition` with a sequence number
    /// above `after` (0: from the first), ascending by sequence number, so a reader can go
    /// through a long group a page at a time. The default reads the partition's episodes in
    /// pages; a store on disk asks for the group's alone.
    fn group_episodes(
        &self,
        partition: &Partition,
        fingerprint: &Fingerprint,
        after: Seq,
        limit: usize,
    ) -> Result<Vec<Episode>> {
        let mut found = Vec::new();
        let mut after = after;
        while found.len() < limit {
            let page = self.episodes_after(partition, after, 10_000)?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            found.extend(
                page.into_iter()
                    .filter(|e| &e.episode.fingerprint == fingerprint)
                    .take(limit - found.len()),
            );
        }
        Ok(found)
    }

    /// Removes the episodes of `partition` recorded before `before` that crystallize has
    /// already observed (at or below the watermark); returns how many. Patterns keep every
    /// count, so nothing they say changes.
    fn prune_episodes(&self, partition: &Partition, before: Timestamp) -> Result<u64>;
}

/// Crystallized state: groups, tallies and patterns, with the atomic crystallize step.
pub trait PatternStore: EpisodeStore {
    /// In one atomic step: reads the episodes of `partition` above its watermark and the
    /// state of the groups they touch, applies `step`, writes its output and advances the
    /// watermark to the last episode read. Returns the patterns `step` named as reinforced,
    /// as written. With no new episodes, `step` is not called and nothing changes.
    fn crystallize_with(
        &self,
        partition: &Partition,
        step: CrystallizeStep<'_>,
    ) -> Result<Vec<Pattern>>;

    /// [`crystallize_with`](Self::crystallize_with), reading the new episodes at most `page`
    /// at a time: `step` is applied to each page in turn, with the state of its groups as
    /// the pages before it left them, and the whole run is still one atomic step. A run then
    /// holds one page of episodes, not all of them. The result is the same as one step over
    /// every new episode when `step` is incremental (its output for episodes `a` then `b`,
    /// taken page by page, is its output for `a` and `b` at once), as crystallizing is: a
    /// run after every page would have reached it too. The patterns returned are those some
    /// page reinforced, in the order their groups first appear among the run's episodes,
    /// each as the run left it. The default reads every episode at once (a store in memory
    /// holds them anyway); a store on disk reads a page at a time.
    fn crystallize_in_pages(
        &self,
        partition: &Partition,
        page: usize,
        step: CrystallizeStep<'_>,
    ) -> Result<Vec<Pattern>> {
        let _ = page;
        self.crystallize_with(partition, step)
    }

    /// The highest sequence number crystallized in `partition` (0 before the first run).
    fn watermark(&self, partition: &Partition) -> Result<Seq>;

    /// Every pattern of `partition` whose fingerprint matches `filter` (a subset of the
    /// pairs; empty matches all), in no particular order.
    fn patterns(&self, partition: &Partition, filter: &Fingerprint) -> Result<Vec<Pattern>>;

    /// The stored state of one group, patterns and pending groups alike.
    fn group(&self, partition: &Partition, fingerprint: &Fingerprint) -> Result<Option<Group>>;

    /// Every group of `partition` still below the threshold of evidence to become a pattern
    /// (crystallized at least once, no pattern yet), ordered by fingerprint. A tool says
    /// with it which groups need more episodes, and how many each has.
    fn pending_groups(&self, partition: &Partition) -> Result<Vec<Group>>;

    /// Up to `limit` patterns of `partition` whose fingerprint's [key](Fingerprint::key)
    /// comes after `after`'s (every pattern when `None`), in key order (byte order), with
    /// how many patterns the partition holds: a reader holds one page at a time. The default
    /// sorts [`patterns`](Self::patterns); a store on disk reads only the page.
    fn patterns_page(
        &self,
        partition: &Partition,
        after: Option<&Fingerprint>,
        limit: usize,
    ) -> Result<Page<Pattern>> {
        let mut all = self.patterns(partition, &Fingerprint::default())?;
        all.sort_by(|a, b| a.fingerprint.as_key().cmp(b.fingerprint.as_key()));
        Ok(Page::after(
            all,
            after.map(Fingerprint::as_key),
            |p| p.fingerprint.as_key(),
            limit,
        ))
    }

    /// [`pending_groups`](Self::pending_groups) a page at a time: up to `limit` of them
    /// whose fingerprint's key comes after `after`'s (all when `None`), in key order, with
    /// how many the partition holds. The default sorts the whole list; a store on disk reads
    /// only the page.
    fn pending_groups_page(
        &self,
        partition: &Partition,
        after: Option<&Fingerprint>,
        limit: usize,
    ) -> Result<Page<Group>> {
        let mut all = self.pending_groups(partition)?;
        all.sort_by(|a, b| a.fingerprint.as_key().cmp(b.fingerprint.as_key()));
        Ok(Page::after(
            all,
            after.map(Fingerprint::as_key),
            |g| g.fingerprint.as_key(),
            limit,
        ))
    }

    /// Every partition that holds episodes or groups, ordered by name, with its counts.
    fn partitions(&self) -> Result<Vec<PartitionSummary>>;

    /// Deletes everything of `partition` (episodes, groups, patterns, watermark) in one
    /// atomic call, with the meta entries `settings` (the partition's configuration, as its
    /// first episodes stored it: only the caller knows their keys); returns how many episodes
    /// it held. Other partitions are untouched. In the same transaction it appends the forget
    /// to the audit trail (memory `trajectory`, scope
    /// [`NO_SCOPE`](crate::evidence::NO_SCOPE), item the partition, action `forget`, by `by`).
    fn forget_partition(
        &self,
        partition: &Partition,
        settings: &[&MetaKey],
        by: &Provenance,
    ) -> Result<u64>;

    /// Forgets every episode of `partition` that `writer` recorded (every field it names must
    /// match; a [`Writer`] naming nothing is refused; an episode recorded without a writer
    /// matches none), and takes back what they taught, in one atomic step:
    ///
    /// - each group one of them had already been crystallized into (at or below the
    ///   watermark) is rebuilt from scratch: its state and tallies are deleted, and the
    ///   group's episodes left at or below the watermark are folded again through `step`, in
    ///   order, a page at a time, as a crystallize run folds new ones. With nothing pruned,
    ///   the group ends as if the writer had never recorded in it; pruned episodes are gone
    ///   with their writers, so their evidence does not come back. A group with no episode
    ///   left is gone, pattern and all;
    /// - the writer's episodes above the watermark are deleted, never observed;
    /// - the watermark stays, so the episodes above it are crystallized as they would have
    ///   been.
    ///
    /// In the same transaction it appends one entry to the audit trail (memory `trajectory`,
    /// scope [`NO_SCOPE`](crate::evidence::NO_SCOPE), item the partition, action `forget`,
    /// detail [`episodes_forgotten_detail`], by `by`), even when nothing matched. Sequence
    /// numbers of deleted episodes are never given again.
    fn forget_episodes_by(
        &self,
        partition: &Partition,
        writer: &Writer,
        by: &Provenance,
        step: CrystallizeStep<'_>,
    ) -> Result<EpisodesForgotten>;
}

/// What [`PatternStore::forget_episodes_by`] took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EpisodesForgotten {
    /// The writer's episodes deleted.
    pub episodes: u64,
    /// Each group rebuilt, in fingerprint order, with the episodes it was rebuilt from
    /// (0: the group is gone).
    pub groups: Vec<(Fingerprint, u64)>,
}

/// The audit detail of a [`PatternStore::forget_episodes_by`], alike in every store:
/// `N episodes, M groups rebuilt`.
pub fn episodes_forgotten_detail(forgotten: &EpisodesForgotten) -> String {
    crate::evidence::forget_detail(&[
        (forgotten.episodes, "episode", "episodes"),
        (
            forgotten.groups.len() as u64,
            "group rebuilt",
            "groups rebuilt",
        ),
    ])
}

/// What a partition holds, as [`PatternStore::partitions`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionSummary {
    /// The partition.
    pub partition: Partition,
    /// Episodes stored (pruned ones are gone).
    pub episodes: u64,
    /// Groups that are patterns (at or above the threshold when last crystallized).
    pub patterns: u64,
    /// Groups still below the threshold.
    pub pending_groups: u64,
    /// The sequence number of the last episode crystallize observed.
    pub watermark: Seq,
    /// The bytes of its episodes' trajectories and outcomes as stored (their encoded text).
    pub bytes: u64,
    /// When its newest episode was recorded (the episode's own time); `None` when it holds
    /// no episode.
    pub last_write: Option<Timestamp>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_encoded_as_decimal_length_colon_text() {
        // Stored keys depend on these exact bytes.
        let ten = "0123456789";
        let long = "x".repeat(1234);
        let encoded = encode_texts(["", "a", ten, "é", &long]);
        assert_eq!(
            encoded,
            format!("0:1:a10:{ten}2:é1234:{long}"),
            "lengths in UTF-8 bytes, in decimal"
        );
        assert_eq!(
            decode_texts(&encoded),
            Some(vec![
                String::new(),
                "a".to_owned(),
                ten.to_owned(),
                "é".to_owned(),
                long
            ])
        );
        assert_eq!(encode_texts([] as [&str; 0]), "");
    }

    #[test]
    fn a_fingerprint_comes_back_from_its_key_and_a_bad_key_is_refused() {
        let fp = Fingerprint::new([("b", "2"), ("a", "1:x"), ("c", "")]).expect("fingerprint");
        let back = Fingerprint::from_key(fp.as_key()).expect("its key");
        assert_eq!(back, fp);
        assert_eq!(back.as_key(), fp.as_key());
        // A key whose pairs are out of order (not one `key` makes) is read into the canonical
        // fingerprint, with the canonical key.
        let unsorted = encode_texts(["b", "2", "a", "1:x", "c", ""]);
        let read = Fingerprint::from_key(&unsorted).expect("unsorted pairs");
        assert_eq!(read, fp);
        assert_eq!(read.as_key(), fp.as_key());
        assert_eq!(
            Fingerprint::from_key(&Fingerprint::default().key()).expect("empty"),
            Fingerprint::default()
        );
        for bad in [
            encode_texts(["a"]),
            "1:a1:".to_owned(),
            "x:a".to_owned(),
            "9:a".to_owned(),
            encode_texts(["a", "1", "a", "2"]),
        ] {
            assert!(Fingerprint::from_key(&bad).is_err(), "{bad:?}");
        }
        let shared = fp.clone();
        assert_eq!(shared.into_pairs(), fp.pairs());
        assert_eq!(
            back.into_pairs(),
            [
                ("a".to_owned(), "1:x".to_owned()),
                ("b".to_owned(), "2".to_owned()),
                ("c".to_owned(), String::new())
            ]
        );
    }

    #[test]
    fn pending_observations_round_trip_exactly_and_bad_text_is_refused() {
        let pending = vec![
            PendingObservation {
                signal: 0.1 + 0.2,
                recorded_at: Timestamp::from_millis(-5),
            },
            PendingObservation {
                signal: 1.0,
                recorded_at: Timestamp::from_millis(1_767_225_600_000),
            },
        ];
        let text = encode_pending(&pending);
        assert_eq!(decode_pending(&text), Some(pending));
        assert_eq!(decode_pending(""), Some(Vec::new()));
        let odd = encode_texts(["3fb999999999999a"]);
        assert_eq!(decode_pending(&odd), None);
        assert_eq!(decode_pending("2:zz1:0"), None);
    }

    #[test]
    fn episodes_are_numbered_in_order_and_only_one_number_each() {
        let episode = |step: &str| NewEpisode {
            partition: Partition::new("p").expect("partition"),
            fingerprint: Fingerprint::new([("f", "1")]).expect("fingerprint"),
            trajectory: vec![step.to_owned()],
            outcome: "true".to_owned(),
            recorded_at: Timestamp::from_millis(1),
            provenance: None,
        };
        let numbered = Episode::numbered(vec![episode("a"), episode("b")], vec![7, 9])
            .expect("one number each");
        let pairs: Vec<(Seq, &str)> = numbered
            .iter()
            .map(|e| (e.seq, e.episode.trajectory[0].as_str()))
            .collect();
        assert_eq!(pairs, [(7, "a"), (9, "b")]);
        for seqs in [vec![7], vec![7, 9, 11]] {
            let error = Episode::numbered(vec![episode("a"), episode("b")], seqs)
                .expect_err("a number missing or left over");
            assert!(
                error
                    .to_string()
                    .contains("sequence numbers for 2 episodes"),
                "{error}"
            );
        }
    }
}
