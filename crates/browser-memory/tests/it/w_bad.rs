//! The W-bad generator reproduces the workload's spot checks and checksums, and the matcher
//! finds exactly the matches the reference finds on it.

use std::collections::HashMap;

use agent_memory_browser::{BrowserMemory, MatchOptions, find_best_match, tokenize};
use agent_memory_core::store::browser::{BrowserStore, RunFilter, RunStatus, TrajectoryStore};
use agent_memory_core::{InMemoryStore, ManualClock, Scope, SeededIds};
use agent_memory_sqlite::SqliteStore;

#[path = "../../benches/workload/mod.rs"]
mod workload;

use workload::{NOW, generate};

#[test]
fn generator_reproduces_the_spot_checks() {
    let w = generate(1000);
    assert_eq!((w.parts[0].2, w.parts[0].1.len()), (23, 433));
    assert!(w.parts[0].1.starts_with("w358 w264 w250 w62 w425"));
    assert_eq!(
        (w.facts[0].1.as_str(), w.facts[0].2.as_str()),
        ("key64", "value64-alt")
    );
    assert_eq!(
        w.selectors[0],
        ("link \"w10\"".to_owned(), "@e118".to_owned())
    );
    let run = &w.runs[0];
    assert_eq!(
        (
            run.domain.as_str(),
            run.goal.as_str(),
            run.success,
            run.turn_count
        ),
        (
            "site5.example.com",
            "w392 w403 w491 w369 w43 w377",
            false,
            13
        )
    );
    let t = &w.trajectories[0];
    assert_eq!(
        (
            t.id.as_str(),
            t.goal.as_str(),
            t.duration_ms,
            t.timestamp.as_str()
        ),
        (
            "traj_1766493387525_hh820c",
            "w110 w282 w463 w185 w289 w215",
            27558,
            "2025-12-23T12:36:27.525Z"
        )
    );
    assert_eq!(t.steps[0].snapshot_hash, "1403489727");
    assert_eq!(w.trajectories[999].id, "traj_1766734347115_77bhkp");
    assert_eq!(w.trajectories.iter().filter(|t| t.success).count(), 811);
    assert_eq!(w.queries[1].base, Some(901));
    assert_eq!(
        w.queries[1].goal,
        "w145 w416 w438 w57 w392 w194 w224 w385 w432"
    );
    let selectors: HashMap<&str, usize> =
        w.selectors.iter().fold(HashMap::new(), |mut m, (e, _)| {
            *m.entry(e.as_str()).or_default() += 1;
            m
        });
    assert_eq!(selectors.len(), 300);
    assert_eq!(selectors.get("button \"w282\""), Some(&47));
}

#[test]
fn matches_reproduce_the_reference_checksums() {
    let w = generate(1000);
    let store = InMemoryStore::new();
    let scope = Scope::shared();
    for t in &w.trajectories {
        store
            .trajectory_put(&scope, t, &tokenize(&t.goal))
            .expect("put");
    }
    let index: HashMap<&str, usize> = w
        .trajectories
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    for scoring in [false, true] {
        let options = MatchOptions::new().with_scoring(scoring);
        let mut matched = 0;
        let mut sum = 0;
        for q in &w.queries {
            if let Some(m) =
                find_best_match(&store, &scope, &q.goal, Some(&q.origin), &options, NOW)
                    .expect("match")
            {
                let i = index[m.trajectory.id.as_str()];
                assert_eq!(
                    q.base,
                    Some(i),
                    "a match comes from the query's own base trajectory"
                );
                matched += 1;
                sum += i;
            }
        }
        assert_eq!((matched, sum), (317, 165_272), "scoring {scoring}");
    }
}

/// Sections (b) to (d) of the workload through the memory: 10,000 facts and 10,000 selector
/// successes on one site, 1,000 runs started and completed. The selector and run checksums are
/// the reference's; its fact count (2,456) comes from its contradiction bug, fixed here, so the
/// facts are checked against what the generator drew and by agreement between the in-memory
/// store and SQLite.
#[test]
fn knowledge_selectors_and_runs_reproduce_the_reference_checksums() {
    let w = generate(1);
    let in_memory = InMemoryStore::new();
    let sqlite = SqliteStore::open_in_memory().expect("open");
    let site = workload::origin(0);
    let mut sites = Vec::new();
    for store in [&in_memory as &dyn BrowserStore, &sqlite] {
        let clock = ManualClock::new(NOW);
        let ids = SeededIds::new(7);
        let memory = BrowserMemory::new(store, Scope::shared(), &clock, &ids);
        for (kind, key, value) in &w.facts {
            clock.advance(1);
            memory.record_fact(&site, *kind, key, value).expect("fact");
        }
        for (element, selector) in &w.selectors {
            clock.advance(1);
            memory
                .record_selector(&site, element, selector)
                .expect("selector");
        }
        let runs = memory.runs();
        for run in &w.runs {
            clock.advance(1);
            let id = runs.start(run.start()).expect("start");
            runs.complete(&id, run.outcome()).expect("complete");
        }
        let by_domain: usize = (0..10)
            .map(|d| {
                let filter = RunFilter {
                    domain: Some(format!("site{d}.example.com")),
                    ..RunFilter::default()
                };
                runs.list(&filter).expect("list").len()
            })
            .sum();
        assert_eq!(by_domain, 1000);
        let completed = RunFilter {
            status: Some(RunStatus::Completed),
            ..RunFilter::default()
        };
        assert_eq!(runs.list(&completed).expect("list").len(), 795);
        let memory = memory.site(&site).expect("read").expect("site");
        assert_eq!(memory.selectors.len(), 300);
        let top = memory
            .selectors
            .iter()
            .max_by_key(|s| s.success_count)
            .expect("selectors");
        assert_eq!(
            (top.element.as_str(), top.success_count),
            ("button \"w282\"", 47)
        );
        let mut values: HashMap<&str, usize> = HashMap::new();
        for f in &memory.facts {
            *values.entry(f.key.as_str()).or_default() += 1;
        }
        assert!(values.values().all(|&n| n <= 2), "{values:?}");
        // Each (key, value) drawn is one fact: a value seen again confirms its fact, and a
        // second value only halves the first once, so nothing falls below the pruning
        // threshold and every observation is counted as a source.
        let drawn: std::collections::HashSet<(&str, &str)> = w
            .facts
            .iter()
            .map(|(_, k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(memory.facts.len(), drawn.len());
        assert_eq!(memory.facts.iter().map(|f| f.sources).sum::<u32>(), 10_000);
        sites.push(memory);
    }
    assert_eq!(sites[0], sites[1], "the in-memory store and SQLite agree");
}
