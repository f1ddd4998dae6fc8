//! The six fixes of popoto defects, each shown on popoto's own failure case.

use std::sync::{Arc, Mutex, PoisonError};

use agent_memory_core::store::trajectory::{
    CrystallizeStep, Episode, EpisodeStore, Fingerprint, Group, NewEpisode, PartitionSummary,
    Pattern, PatternStore, Seq,
};
use agent_memory_core::{
    InMemoryStore, MILLIS_PER_DAY, ManualClock, MetaKey, Partition, Result, Timestamp,
};
use agent_memory_sqlite::SqliteStore;
use agent_memory_trajectory::{Config, RecallOptions, TrajectoryMemory};
use serde_json::{Value, json};

use crate::reference_line;

const T0: i64 = 1_767_225_600_000;

fn p(name: &str) -> Partition {
    Partition::new(name).expect("partition")
}

fn memory<S: PatternStore>(
    store: S,
    clock: &Arc<ManualClock>,
) -> TrajectoryMemory<S, Arc<ManualClock>> {
    TrajectoryMemory::new(
        store,
        clock.clone(),
        Config::new(["problem_topology", "affected_layer"]),
    )
    .expect("config")
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(Timestamp::from_millis(T0)))
}

fn fp<'a>(t: &'a str, l: &'a str) -> [(&'a str, &'a str); 2] {
    [("problem_topology", t), ("affected_layer", l)]
}

fn ok(success: bool) -> Value {
    json!({ "success": success })
}

fn evidence<S: PatternStore, C: agent_memory_core::Clock>(
    m: &TrajectoryMemory<S, C>,
    part: &str,
    t: &str,
    l: &str,
) -> u64 {
    m.recall(&fp(t, l), &p(part))
        .expect("recall")
        .first()
        .map_or(0, |s| s.pattern.stats.evidence_count)
}

/// Divergence 1: popoto cuts to the top `limit` of the partition before filtering by fingerprint.
#[test]
fn recall_filters_before_it_ranks_and_limits() {
    let popoto = reference_line("7_limit_before_filter");
    assert_eq!(
        popoto["recall_y_limit_1"],
        json!([]),
        "popoto's failure case"
    );
    let c = clock();
    let m = memory(InMemoryStore::new(), &c);
    for _ in 0..3 {
        m.record_episode(&fp("x", "l"), &["good"], &ok(true), &p("p2"))
            .expect("record");
    }
    for _ in 0..3 {
        m.record_episode(&fp("y", "l"), &["bad"], &ok(false), &p("p2"))
            .expect("record");
    }
    m.crystallize(&p("p2")).expect("crystallize");
    let y = m
        .recall_with(&fp("y", "l"), &p("p2"), RecallOptions::new().with_limit(1))
        .expect("recall");
    assert_eq!(y.len(), 1);
    assert_eq!(y[0].pattern.canonical_sequence, ["bad"]);
}

/// Divergence 2: popoto's confidence arm spans every partition, so other tenants' patterns take the
/// top slots of a partition's recall.
#[test]
fn scoring_never_crosses_partitions() {
    let popoto = reference_line("7b_cross_partition_confidence_arm");
    assert_eq!(
        popoto["recall_weak_default_limit"],
        json!([]),
        "popoto's failure case"
    );
    let c = clock();
    let alone = memory(InMemoryStore::new(), &c);
    let crowded = memory(InMemoryStore::new(), &c);
    for m in [&alone, &crowded] {
        for _ in 0..3 {
            m.record_episode(&fp("weak", "l"), &["w"], &ok(false), &p("q"))
                .expect("record");
        }
        m.crystallize(&p("q")).expect("crystallize");
    }
    for t in 0..5 {
        for _ in 0..3 {
            let topology = format!("s{t}");
            crowded
                .record_episode(&fp(&topology, "l"), &["s"], &ok(true), &p("other"))
                .expect("record");
        }
    }
    crowded.crystallize(&p("other")).expect("crystallize");
    c.advance(400 * MILLIS_PER_DAY);
    let found = crowded
        .recall(&[("problem_topology", "weak")], &p("q"))
        .expect("recall");
    assert_eq!(found.len(), 1, "the weak pattern is recalled");
    let lonely = alone
        .recall(&[("problem_topology", "weak")], &p("q"))
        .expect("recall");
    assert_eq!(
        found, lonely,
        "other partitions change neither results nor scores"
    );
    let wide = crowded
        .recall(&[("affected_layer", "l")], &p("q"))
        .expect("recall");
    assert_eq!(wide.len(), 1, "no pattern of another partition is returned");
}

/// Divergence 3: popoto watermarks on episode time, so an episode from a lagging clock, or one that
/// shares the watermark's timestamp, is skipped forever.
#[test]
fn lagging_and_equal_clocks_are_observed() {
    let c = clock();
    let m = memory(InMemoryStore::new(), &c);
    let part = p("p");
    for _ in 0..3 {
        m.record_episode(&fp("a", "b"), &["x"], &ok(true), &part)
            .expect("record");
    }
    m.crystallize(&part).expect("crystallize");
    let last = m.recall(&fp("a", "b"), &part).expect("recall")[0]
        .pattern
        .stats
        .last_reinforced;
    // Same millisecond as the watermark's episodes, then a writer an hour behind.
    m.record_episode(&fp("a", "b"), &["x"], &ok(true), &part)
        .expect("record");
    c.advance(-3_600_000);
    m.record_episode(&fp("a", "b"), &["x"], &ok(false), &part)
        .expect("record");
    let reinforced = m.crystallize(&part).expect("crystallize");
    assert_eq!(reinforced.len(), 1);
    assert_eq!(reinforced[0].stats.evidence_count, 5, "both observed");
    assert_eq!(reinforced[0].stats.contradictions, 1);
    assert_eq!(
        reinforced[0].stats.last_reinforced, last,
        "last_reinforced keeps the newest episode time"
    );
}

/// Divergence 4: Two crystallizers on one partition double-count in popoto. Here they run at once
/// on one SQLite file, each through its own connection.
#[test]
fn concurrent_crystallizers_on_sqlite_observe_each_episode_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    let c = clock();
    let writers = 4;
    let per_writer = 60;
    std::thread::scope(|scope| {
        for w in 0..writers {
            let path = &path;
            let c = &c;
            scope.spawn(move || {
                let m = memory(SqliteStore::open(path).expect("open"), c);
                for i in 0..per_writer {
                    let layer = format!("l{}", (i + w) % 4);
                    m.record_episode(&fp("t", &layer), &["x"], &ok(i % 3 != 0), &p("p"))
                        .expect("record");
                    m.crystallize(&p("p")).expect("crystallize");
                }
            });
        }
    });
    let m = memory(SqliteStore::open(&path).expect("open"), &c);
    m.crystallize(&p("p")).expect("crystallize");
    let total: u64 = (0..4)
        .map(|l| evidence(&m, "p", "t", &format!("l{l}")))
        .sum();
    assert_eq!(total, (writers * per_writer) as u64);
}

/// A store that reports how many episodes each crystallize step was handed.
struct Counting<S> {
    inner: S,
    seen: Mutex<Vec<usize>>,
}

impl<S: EpisodeStore> EpisodeStore for Counting<S> {
    fn append_episodes(&self, episodes: &[NewEpisode]) -> Result<Vec<Seq>> {
        self.inner.append_episodes(episodes)
    }
    fn append_episodes_with_settings(
        &self,
        episodes: &[NewEpisode],
        settings: &[(&MetaKey, &str)],
    ) -> Result<Vec<Seq>> {
        self.inner.append_episodes_with_settings(episodes, settings)
    }
    fn episodes_after(
        &self,
        partition: &Partition,
        after: Seq,
        limit: usize,
    ) -> Result<Vec<Episode>> {
        self.inner.episodes_after(partition, after, limit)
    }
    fn prune_episodes(&self, partition: &Partition, before: Timestamp) -> Result<u64> {
        self.inner.prune_episodes(partition, before)
    }
}

impl<S: PatternStore> PatternStore for Counting<S> {
    fn crystallize_with(
        &self,
        partition: &Partition,
        step: CrystallizeStep<'_>,
    ) -> Result<Vec<Pattern>> {
        self.inner.crystallize_with(partition, &|input| {
            self.seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(input.episodes.len() + input.groups.len() + input.tallies.len());
            step(input)
        })
    }
    fn watermark(&self, partition: &Partition) -> Result<Seq> {
        self.inner.watermark(partition)
    }
    fn patterns(&self, partition: &Partition, filter: &Fingerprint) -> Result<Vec<Pattern>> {
        self.inner.patterns(partition, filter)
    }
    fn group(&self, partition: &Partition, fingerprint: &Fingerprint) -> Result<Option<Group>> {
        self.inner.group(partition, fingerprint)
    }
    fn partitions(&self) -> Result<Vec<PartitionSummary>> {
        self.inner.partitions()
    }
    fn pending_groups(&self, partition: &Partition) -> Result<Vec<Group>> {
        self.inner.pending_groups(partition)
    }
    fn forget_partition(
        &self,
        partition: &Partition,
        settings: &[&agent_memory_core::MetaKey],
        by: &agent_memory_core::Provenance,
    ) -> Result<u64> {
        self.inner.forget_partition(partition, settings, by)
    }
    fn forget_episodes_by(
        &self,
        partition: &Partition,
        writer: &agent_memory_core::evidence::Writer,
        by: &agent_memory_core::Provenance,
        step: CrystallizeStep<'_>,
    ) -> Result<agent_memory_core::store::trajectory::EpisodesForgotten> {
        self.inner.forget_episodes_by(partition, writer, by, step)
    }
}

/// Divergence 5: popoto rereads the whole partition on every run; here a run is handed only the new
/// episodes and the state of the groups and tallies they touch.
#[test]
fn crystallize_reads_only_what_is_new() {
    let c = clock();
    let m = memory(
        Counting {
            inner: SqliteStore::open_in_memory().expect("open"),
            seen: Mutex::default(),
        },
        &c,
    );
    let part = p("p");
    let w = agent_memory_trajectory::workload::generate(2_000);
    for e in &w.episodes {
        let traj: Vec<&str> = e.trajectory.iter().map(String::as_str).collect();
        m.record_episode(&fp(&e.topology, &e.layer), &traj, &ok(e.success), &part)
            .expect("record");
    }
    m.crystallize(&part).expect("crystallize");
    for e in w.episodes.iter().take(10) {
        let traj: Vec<&str> = e.trajectory.iter().map(String::as_str).collect();
        m.record_episode(&fp(&e.topology, &e.layer), &traj, &ok(e.success), &part)
            .expect("record");
    }
    m.crystallize(&part).expect("crystallize");
    let seen = m
        .store()
        .seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    assert_eq!(seen.len(), 2);
    assert!(seen[0] >= 2_000, "first run reads the history: {seen:?}");
    assert!(
        seen[1] <= 30,
        "second run: 10 episodes, at most 10 groups and 10 tallies: {seen:?}"
    );
}

/// Divergence 6: Observed episodes older than the retention are pruned; no pattern changes, and later
/// runs give what they would have given without pruning.
#[test]
fn retention_prunes_without_changing_patterns() {
    let c = clock();
    let mut config = Config::new(["problem_topology", "affected_layer"]);
    config.retention_millis = Some(MILLIS_PER_DAY);
    let pruned = TrajectoryMemory::new(InMemoryStore::new(), c.clone(), config).expect("config");
    let kept = memory(SqliteStore::open_in_memory().expect("open"), &c);
    let part = p("p");
    let both = |traj: &[&str], success: bool| {
        for m in [&pruned as &dyn Recorder, &kept as &dyn Recorder] {
            m.rec(traj, success);
        }
    };
    both(&["a", "b"], true);
    both(&["a", "b"], false);
    both(&["c"], true);
    pruned.crystallize(&part).expect("crystallize");
    kept.crystallize(&part).expect("crystallize");
    c.advance(2 * MILLIS_PER_DAY);
    both(&["c"], true); // recorded after the run: not observed, so never pruned
    let before = pruned.recall(&fp("t", "l"), &part).expect("recall");
    assert_eq!(pruned.prune(&part).expect("prune"), 3);
    assert_eq!(pruned.recall(&fp("t", "l"), &part).expect("recall"), before);
    assert_eq!(
        pruned
            .store()
            .episodes_after(&part, 0, 10)
            .expect("episodes")
            .len(),
        1
    );
    both(&["c"], false);
    pruned.crystallize(&part).expect("crystallize");
    kept.crystallize(&part).expect("crystallize");
    let a = pruned.recall(&fp("t", "l"), &part).expect("recall");
    let b = kept.recall(&fp("t", "l"), &part).expect("recall");
    assert_eq!(a, b, "pruning changed nothing a pattern says");
    assert_eq!(a[0].pattern.canonical_sequence, ["c"]);
    assert_eq!(a[0].pattern.stats.evidence_count, 5);
}

trait Recorder {
    fn rec(&self, traj: &[&str], success: bool);
}

impl<S: PatternStore> Recorder for TrajectoryMemory<S, Arc<ManualClock>> {
    fn rec(&self, traj: &[&str], success: bool) {
        self.record_episode(&fp("t", "l"), traj, &ok(success), &p("p"))
            .expect("record");
    }
}
