//! Laws, property-tested: confidence order invariance within the cap, idempotence,
//! partition isolation, incremental crystallize equal to one full run, and a run read in pages
//! equal to one step over all its episodes.

use std::sync::Arc;

use agent_memory_core::store::trajectory::PatternStore;
use agent_memory_core::{InMemoryStore, ManualClock, Partition, Timestamp};
use agent_memory_sqlite::SqliteStore;
use agent_memory_trajectory::policy::update_confidence;
use agent_memory_trajectory::{Config, EpisodeRecord, Pattern, TrajectoryMemory};
use proptest::prelude::*;
use serde_json::json;

#[derive(Clone, Debug)]
struct Ep {
    f: u8,
    traj: u8,
    success: bool,
    partition: bool,
    lag: i64,
}

fn episodes() -> impl Strategy<Value = Vec<Ep>> {
    prop::collection::vec(
        (0u8..4, 0u8..3, any::<bool>(), any::<bool>(), -50i64..50).prop_map(
            |(f, traj, success, partition, lag)| Ep {
                f,
                traj,
                success,
                partition,
                lag,
            },
        ),
        0..60,
    )
}

fn memory<S: PatternStore>(store: S) -> TrajectoryMemory<S, Arc<ManualClock>> {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
    let mut config = Config::new(["kind"]);
    config.cluster_threshold = 2;
    config.evidence_cap = 5;
    TrajectoryMemory::new(store, clock, config).expect("config")
}

fn record<S: PatternStore>(m: &TrajectoryMemory<S, Arc<ManualClock>>, e: &Ep) {
    let kind = format!("k{}", e.f);
    let actions = [["a"].as_slice(), &["b", "c"], &["c"]][e.traj as usize];
    let part = Partition::new(if e.partition { "a" } else { "b" }).expect("partition");
    // The clock jumps back and forth, as writers' clocks do.
    m.record_episode_at_offset(&kind, actions, e.success, &part, e.lag);
}

trait RecordAt {
    fn record_episode_at_offset(
        &self,
        kind: &str,
        actions: &[&str],
        success: bool,
        part: &Partition,
        lag: i64,
    );
}

impl<S: PatternStore> RecordAt for TrajectoryMemory<S, Arc<ManualClock>> {
    fn record_episode_at_offset(
        &self,
        kind: &str,
        actions: &[&str],
        success: bool,
        part: &Partition,
        lag: i64,
    ) {
        self.clock().advance(lag);
        self.record_episode(
            &[("kind", kind)],
            actions,
            &json!({"success": success}),
            part,
        )
        .expect("record");
    }
}

fn all_patterns<S: PatternStore, C: agent_memory_core::Clock>(
    m: &TrajectoryMemory<S, C>,
    part: &str,
) -> Vec<Pattern> {
    let mut found = m
        .store()
        .patterns(
            &Partition::new(part).expect("partition"),
            &Default::default(),
        )
        .expect("patterns");
    found.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
    found
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn confidence_is_order_invariant_within_the_cap(
        signals in prop::collection::vec(0.0f64..=1.0, 1..20),
        seed in any::<u64>(),
    ) {
        let run = |s: &[f64]| s.iter().enumerate().fold(0.5, |c, (n, &x)| update_confidence(c, n as u64, x, 20));
        let mut shuffled = signals.clone();
        let mut rng = agent_memory_core::SplitMix64::new(seed);
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, rng.below(i as u64 + 1) as usize);
        }
        prop_assert!((run(&signals) - run(&shuffled)).abs() <= 1e-12);
    }

    #[test]
    fn crystallize_is_idempotent(eps in episodes()) {
        let m = memory(InMemoryStore::new());
        for e in &eps { record(&m, e); }
        let part = Partition::new("a").expect("partition");
        m.crystallize(&part).expect("crystallize");
        let before = all_patterns(&m, "a");
        prop_assert!(m.crystallize(&part).expect("crystallize").is_empty());
        prop_assert_eq!(all_patterns(&m, "a"), before);
    }

    #[test]
    fn partitions_are_isolated(eps in episodes()) {
        let mixed = memory(InMemoryStore::new());
        let alone = memory(InMemoryStore::new());
        for e in &eps {
            record(&mixed, e);
            if e.partition {
                record(&alone, e);
            } else {
                alone.clock().advance(e.lag); // same times for the episodes that are kept
            }
        }
        for m in [&mixed, &alone] {
            m.crystallize(&Partition::new("a").expect("partition")).expect("crystallize");
        }
        prop_assert_eq!(all_patterns(&mixed, "a"), all_patterns(&alone, "a"));
    }

    #[test]
    fn one_batch_stores_what_one_call_per_episode_stores(eps in episodes()) {
        // A batch shares its fingerprint slices and outcome values across records (the
        // memory builds each distinct one once); the stored episodes must not show it.
        let kinds: Vec<[(&str, String); 1]> = (0..4).map(|f| [("kind", format!("k{f}"))]).collect();
        let fps: Vec<[(&str, &str); 1]> = kinds.iter().map(|k| [(k[0].0, k[0].1.as_str())]).collect();
        let outcomes = [json!({"success": false}), json!({"success": true})];
        let actions = [["a"].as_slice(), &["b", "c"], &["c"]];
        let parts = [Partition::new("b").expect("partition"), Partition::new("a").expect("partition")];
        let records: Vec<EpisodeRecord<'_>> = eps
            .iter()
            .map(|e| EpisodeRecord::new(
                &fps[e.f as usize],
                actions[e.traj as usize],
                &outcomes[usize::from(e.success)],
                &parts[usize::from(e.partition)],
            ))
            .collect();
        let batched = memory(InMemoryStore::new());
        let single = memory(InMemoryStore::new());
        let stored = batched.record_episodes(&records).expect("batch");
        let one_by_one: Vec<_> = records
            .iter()
            .map(|r| single.record_episodes(std::slice::from_ref(r)).expect("one").remove(0))
            .collect();
        prop_assert_eq!(stored.len(), eps.len());
        for ((b, s), e) in stored.iter().zip(&one_by_one).zip(&eps) {
            prop_assert_eq!(&b.episode, &s.episode);
            let kind = format!("k{}", e.f);
            prop_assert_eq!(b.episode.fingerprint.get("kind"), Some(kind.as_str()));
            prop_assert_eq!(&b.episode.outcome, &outcomes[usize::from(e.success)].to_string());
        }
    }

    #[test]
    fn forgetting_a_writer_reads_as_if_it_never_recorded(
        eps in episodes(),
        bad in prop::collection::vec(any::<bool>(), 60),
        cuts in prop::collection::vec(any::<bool>(), 60),
    ) {
        use agent_memory_core::evidence::Writer;
        use agent_memory_core::{Provenance, Source};
        let writer = Writer {
            source: Some(Source::Tool("scraper".to_owned())),
            session: Some("run-bad".to_owned()),
            client: None,
        };
        let store = SqliteStore::open_in_memory().expect("open");
        let good = memory(&store);
        let clock = Arc::clone(good.clock());
        let poisoned = TrajectoryMemory::new(&store, Arc::clone(&clock), good.config().clone())
            .expect("config")
            .with_writer(writer.clone());
        let clean = memory(InMemoryStore::new());
        let part = Partition::new("a").expect("partition");
        for ((e, is_bad), cut) in eps.iter().zip(&bad).zip(&cuts) {
            if *is_bad {
                record(&poisoned, e);
                clean.clock().advance(e.lag); // the same times for the episodes that are kept
            } else {
                record(&good, e);
                record(&clean, e);
            }
            if *cut {
                good.crystallize(&part).expect("crystallize");
                clean.crystallize(&part).expect("crystallize");
            }
        }
        let by = Provenance::new(Source::User, Timestamp::from_millis(1));
        let forgotten = good.forget_by(&part, &writer, &by).expect("forget by writer");
        let recorded = eps.iter().zip(&bad).filter(|(e, b)| **b && e.partition).count();
        prop_assert_eq!(forgotten.episodes, recorded as u64);
        good.crystallize(&part).expect("crystallize");
        clean.crystallize(&part).expect("crystallize");
        prop_assert_eq!(all_patterns(&good, "a"), all_patterns(&clean, "a"));
        // Groups below the threshold too, by what they hold (sequence numbers differ).
        let pending = |groups: Vec<agent_memory_core::store::trajectory::Group>| {
            groups
                .into_iter()
                .map(|g| (g.fingerprint.key(), g.episode_count, g.pending, g.canonical.map(|t| (t.trajectory, t.count, t.newest))))
                .collect::<Vec<_>>()
        };
        prop_assert_eq!(
            pending(good.store().pending_groups(&part).expect("pending")),
            pending(clean.store().pending_groups(&part).expect("pending"))
        );
    }

    #[test]
    fn incremental_equals_full_recomputation(eps in episodes(), cuts in prop::collection::vec(any::<bool>(), 60)) {
        let full = memory(InMemoryStore::new());
        let step = memory(SqliteStore::open_in_memory().expect("open"));
        let part = Partition::new("a").expect("partition");
        for (e, cut) in eps.iter().zip(&cuts) {
            record(&full, e);
            record(&step, e);
            if *cut {
                step.crystallize(&part).expect("crystallize");
            }
        }
        full.crystallize(&part).expect("crystallize");
        step.crystallize(&part).expect("crystallize");
        prop_assert_eq!(all_patterns(&full, "a"), all_patterns(&step, "a"));
    }

    #[test]
    fn a_run_in_pages_equals_one_step_over_every_episode(
        eps in episodes(),
        cuts in prop::collection::vec(any::<bool>(), 60),
        page in 1usize..8,
    ) {
        // Some groups are stored before the last run (an earlier run at each cut), some are
        // created by it; the last run reads its episodes `page` at a time on one store and
        // all at once on the other.
        let whole = memory(SqliteStore::open_in_memory().expect("open"));
        let paged = memory(SqliteStore::open_in_memory().expect("open"));
        let part = Partition::new("a").expect("partition");
        let cut_at = eps.len() / 2;
        for (i, (e, cut)) in eps.iter().zip(&cuts).enumerate() {
            record(&whole, e);
            record(&paged, e);
            if i < cut_at && *cut {
                whole.crystallize(&part).expect("crystallize");
                paged.crystallize(&part).expect("crystallize");
            }
        }
        let at_once = whole
            .store()
            .crystallize_with(&part, &|input| whole.step(input))
            .expect("crystallize");
        let in_pages = paged
            .store()
            .crystallize_in_pages(&part, page, &|input| paged.step(input))
            .expect("crystallize");
        // The same patterns answered, in the same order, and the same state stored.
        prop_assert_eq!(in_pages, at_once);
        prop_assert_eq!(all_patterns(&paged, "a"), all_patterns(&whole, "a"));
        prop_assert_eq!(
            paged.store().pending_groups(&part).expect("pending"),
            whole.store().pending_groups(&part).expect("pending")
        );
        prop_assert_eq!(
            paged.store().watermark(&part).expect("watermark"),
            whole.store().watermark(&part).expect("watermark")
        );
        // The tallies stored agree too: the next run chooses the same canonical sequences.
        for e in &eps {
            record(&whole, e);
            record(&paged, e);
        }
        let next_whole = whole.crystallize(&part).expect("crystallize");
        let next_paged = paged.crystallize(&part).expect("crystallize");
        prop_assert_eq!(next_paged, next_whole);
    }
}
