//! Benchmarks of workload W-bad: matching a goal (ours on the in-memory store and on SQLite,
//! the reference's linear scan as the baseline in the same run), recording a finished run on
//! SQLite, cold open plus first match, analysing the stored trajectories into hints, and
//! building the context.
//!
//! Sizes come from `AGENT_MEMORY_BENCH_SIZES` (default: the smallest, 1,000). Latency
//! percentiles, throughput and cold start are appended as JSON lines to
//! `<target>/bench-figures/W-bad.jsonl` (under `cargo bench` only).

use std::time::{Duration, Instant};

use agent_memory_benchkit::{Figure, keep, percentile, sizes};
use agent_memory_browser::baseline::linear_scan_match;
use agent_memory_browser::{
    BrowserMemory, Budget, ContextBudget, MatchOptions, Policy, RunReport, find_best_match,
    tokenize,
};
use agent_memory_core::screen::ScreenPolicy;
use agent_memory_core::store::browser::{BrowserStore, MemoryImage, RunFilter, TrajectoryStore};
use agent_memory_core::{InMemoryStore, ManualClock, Scope, SeededIds};
use agent_memory_postgres::{PostgresOptions, PostgresStore};
use agent_memory_sqlite::SqliteStore;
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_main};

mod workload;

use workload::{NOW, Workload, generate, report};

const WORKLOAD: &str = "W-bad";

fn test_mode() -> bool {
    std::env::args().any(|a| a == "--test")
}

/// Keeps one W-bad figure (see [`keep`]).
fn figure(
    name: &str,
    n: usize,
    value: f64,
    unit: &str,
    baseline: Option<f64>,
    lower_is_better: bool,
) {
    let mut figure = Figure::new(WORKLOAD, name, n, value, unit).against(baseline);
    if !lower_is_better {
        figure = figure.higher_is_better();
    }
    keep("W-bad.jsonl", &[figure]);
}

/// A store in a fresh schema of the PostgreSQL server `cargo xtask bench` starts
/// (`AGENT_MEMORY_TEST_POSTGRES`, over loopback); `None`, after saying so, without one. Not in
/// test mode (the smoke run), which measures nothing.
fn postgres(name: &str) -> Option<PostgresStore> {
    if test_mode() {
        return None;
    }
    let Ok(url) = std::env::var("AGENT_MEMORY_TEST_POSTGRES") else {
        eprintln!("AGENT_MEMORY_TEST_POSTGRES is not set: W-bad on PostgreSQL skipped");
        return None;
    };
    let schema = format!("w_bad_{name}_{}", std::process::id());
    let options = PostgresOptions::default().with_schema(schema);
    Some(PostgresStore::connect_with(&url, &options).expect("connect to PostgreSQL"))
}

/// Stores every trajectory of the workload in batches of 1,000 (one transaction each).
fn fill_in_batches<S: BrowserStore>(store: &S, w: &Workload) {
    for chunk in w.trajectories.chunks(1_000) {
        let image = MemoryImage {
            trajectories: chunk
                .iter()
                .map(|t| (t.clone(), tokenize(&t.goal)))
                .collect(),
            ..MemoryImage::default()
        };
        store
            .store_image(&Scope::shared(), &image, None)
            .expect("store trajectories");
    }
}

fn fill<S: TrajectoryStore>(store: &S, w: &Workload) {
    let scope = Scope::shared();
    for t in &w.trajectories {
        store
            .trajectory_put(&scope, t, &tokenize(&t.goal))
            .expect("put");
    }
}

/// p50 and p99 in microseconds of matching every query (or the first `limit`).
fn latencies(limit: usize, w: &Workload, mut run: impl FnMut(&str, &str)) -> (f64, f64) {
    let mut samples: Vec<f64> = w
        .queries
        .iter()
        .take(limit)
        .map(|q| {
            let start = Instant::now();
            run(&q.goal, &q.origin);
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    (
        percentile(&mut samples, 0.5),
        percentile(&mut samples, 0.99),
    )
}

fn bench_match(c: &mut Criterion) {
    for n in sizes(&[1000]) {
        let w = generate(n);
        let memory = InMemoryStore::new();
        fill(&memory, &w);
        let dir = tempfile::tempdir().expect("temp dir");
        let sqlite = SqliteStore::open(dir.path().join("memory.db")).expect("open");
        fill(&sqlite, &w);
        let on_postgres = postgres(&format!("match_{n}"));
        if let Some(store) = &on_postgres {
            fill_in_batches(store, &w);
        }
        let scope = Scope::shared();
        for scoring in [false, true] {
            let options = MatchOptions::new().with_scoring(scoring);
            let label = if scoring { "scoring on" } else { "scoring off" };
            // The linear scan re-tokenizes every stored goal per query; at large N a sample of
            // the queries keeps the run in minutes.
            let baseline_queries = if n > 10_000 { 40 } else { 200 };
            let base = latencies(baseline_queries, &w, |goal, origin| {
                std::hint::black_box(linear_scan_match(
                    &w.trajectories,
                    goal,
                    Some(origin),
                    &options,
                    NOW,
                ));
            });
            let ours = latencies(1000, &w, |goal, origin| {
                std::hint::black_box(
                    find_best_match(&memory, &scope, goal, Some(origin), &options, NOW)
                        .expect("match"),
                );
            });
            let on_sqlite = latencies(1000, &w, |goal, origin| {
                std::hint::black_box(
                    find_best_match(&sqlite, &scope, goal, Some(origin), &options, NOW)
                        .expect("match"),
                );
            });
            figure(
                &format!("match p50, {label}"),
                n,
                ours.0,
                "us",
                Some(base.0),
                true,
            );
            figure(
                &format!("match p99, {label}"),
                n,
                ours.1,
                "us",
                Some(base.1),
                true,
            );
            figure(
                &format!("match p50 on sqlite, {label}"),
                n,
                on_sqlite.0,
                "us",
                Some(base.0),
                true,
            );
            figure(
                &format!("match p99 on sqlite, {label}"),
                n,
                on_sqlite.1,
                "us",
                Some(base.1),
                true,
            );
            if let Some(store) = &on_postgres {
                let on_server = latencies(1000, &w, |goal, origin| {
                    std::hint::black_box(
                        find_best_match(store, &scope, goal, Some(origin), &options, NOW)
                            .expect("match"),
                    );
                });
                figure(
                    &format!("match p50 on postgres, {label}"),
                    n,
                    on_server.0,
                    "us",
                    Some(base.0),
                    true,
                );
                figure(
                    &format!("match p99 on postgres, {label}"),
                    n,
                    on_server.1,
                    "us",
                    Some(base.1),
                    true,
                );
            }
        }
        if let Some(store) = on_postgres {
            store.drop_schema().expect("drop bench schema");
        }
        let mut group = c.benchmark_group("W-bad/match");
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(2))
            .warm_up_time(Duration::from_millis(300));
        let options = MatchOptions::default();
        let mut next = 0usize;
        group.bench_function(BenchmarkId::new("ours", n), |b| {
            b.iter(|| {
                let q = &w.queries[next % w.queries.len()];
                next += 1;
                find_best_match(&memory, &scope, &q.goal, Some(&q.origin), &options, NOW)
                    .expect("match")
            });
        });
        let mut next = 0usize;
        group.bench_function(BenchmarkId::new("baseline", n), |b| {
            b.iter(|| {
                let q = &w.queries[next % w.queries.len()];
                next += 1;
                linear_scan_match(&w.trajectories, &q.goal, Some(&q.origin), &options, NOW)
                    .map(|t| t.id.len())
            });
        });
        group.finish();

        // Cold: open the file and match the first query.
        drop(sqlite);
        let start = Instant::now();
        let cold = SqliteStore::open(dir.path().join("memory.db")).expect("reopen");
        let q = &w.queries[0];
        std::hint::black_box(
            find_best_match(&cold, &scope, &q.goal, Some(&q.origin), &options, NOW).expect("match"),
        );
        let cold_ms = start.elapsed().as_secs_f64() * 1e3;
        figure(
            "cold open + first match on sqlite",
            n,
            cold_ms,
            "ms",
            None,
            true,
        );

        // Hints from every stored trajectory: one read of the whole scope, then the analysis.
        let clock = ManualClock::new(NOW);
        let ids = SeededIds::new(1);
        let start = Instant::now();
        let hints = BrowserMemory::new(&cold, scope.clone(), &clock, &ids)
            .analyse_trajectories()
            .expect("analyse");
        std::hint::black_box(hints);
        figure(
            "analyse every stored trajectory into hints on sqlite",
            n,
            start.elapsed().as_secs_f64() * 1e3,
            "ms",
            None,
            true,
        );

        // Recording into a store that already holds the workload's N trajectories: bigger
        // B-trees and a token index whose merges touch more blocks than on an empty store.
        let (rate, median) =
            record_rate(&cold, &ManualClock::new(NOW), &SeededIds::new(1), &w, 2000);
        figure(
            "recorded runs per second on sqlite holding N trajectories (one transaction each)",
            n,
            rate,
            "runs/s",
            None,
            false,
        );
        figure(
            "recorded run median on sqlite holding N trajectories",
            n,
            median,
            "us",
            None,
            true,
        );
    }
}

/// Runs per second of recording `runs` finished runs one at a time (one transaction each),
/// and the median call in microseconds;
/// the reports are the workload's input, built before the clock starts.
fn record_rate<S: BrowserStore>(
    store: &S,
    clock: &ManualClock,
    ids: &SeededIds,
    w: &Workload,
    runs: usize,
) -> (f64, f64) {
    let memory = BrowserMemory::new(store, Scope::shared(), clock, ids);
    let reports: Vec<RunReport> = (0..runs).map(|i| report(w, i)).collect();
    let mut calls = Vec::with_capacity(runs);
    let start = Instant::now();
    for r in &reports {
        clock.advance(1);
        let call = Instant::now();
        memory.record_run(r).expect("record");
        calls.push(call.elapsed().as_secs_f64() * 1e6);
    }
    let rate = runs as f64 / start.elapsed().as_secs_f64();
    (rate, percentile(&mut calls, 0.5))
}

fn bench_record(c: &mut Criterion) {
    let n = sizes(&[1000]).into_iter().min().unwrap_or(1000);
    let w = generate(n.min(10_000));
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path().join("memory.db")).expect("open");
    let clock = ManualClock::new(NOW);
    let ids = SeededIds::new(1);
    let runs = 2000;
    let (rate, _) = record_rate(&store, &clock, &ids, &w, runs);
    let memory = BrowserMemory::new(&store, Scope::shared(), &clock, &ids);
    figure(
        "recorded runs per second on sqlite, empty store (one transaction each)",
        runs,
        rate,
        "runs/s",
        None,
        false,
    );
    if let Some(server) = postgres("record") {
        let (rate, _) = record_rate(
            &server,
            &ManualClock::new(NOW),
            &SeededIds::new(1),
            &w,
            runs,
        );
        figure(
            "recorded runs per second on postgres, empty store (one transaction each)",
            runs,
            rate,
            "runs/s",
            None,
            false,
        );
        server.drop_schema().expect("drop bench schema");
    }
    // N is the runs already in the store, as in the figure above.
    let mut group = c.benchmark_group("W-bad/record run on sqlite");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(1));
    let mut i = runs;
    group.bench_function(BenchmarkId::new("ours", runs), |b| {
        b.iter_batched(
            || {
                i += 1;
                report(&w, i)
            },
            |r| {
                clock.advance(1);
                memory.record_run(&r).expect("record")
            },
            BatchSize::SmallInput,
        );
    });
    // The same record with the write screen on (policy `quarantine`): every text of the run
    // screened before it is stored, in the same run as the baseline above.
    let mut screened = BrowserMemory::new(&store, Scope::shared(), &clock, &ids);
    screened.guard.policy = ScreenPolicy::Quarantine;
    group.bench_function(BenchmarkId::new("ours, screened", runs), |b| {
        b.iter_batched(
            || {
                i += 1;
                report(&w, i)
            },
            |r| {
                clock.advance(1);
                screened.record_or_hold(&r).expect("record")
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

/// Sections (b) to (d) of the workload on SQLite, one transaction per call as the reference
/// saves after each call: 10,000 facts and 10,000 selector successes on one site, 1,000 runs
/// started and completed, then the runs of each domain listed.
fn bench_site_and_runs(c: &mut Criterion) {
    let w = generate(1);
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path().join("memory.db")).expect("open");
    let clock = ManualClock::new(NOW);
    let ids = SeededIds::new(1);
    let memory = BrowserMemory::new(&store, Scope::shared(), &clock, &ids);
    let site = workload::origin(0);
    // Each loop's rate, and its median call: one call of a loop also pays for the WAL
    // checkpoint (tens of ms) when the log reaches its size there, which moves a rate by
    // half, not the median.
    let timed = |count: usize, call: &mut dyn FnMut(usize)| -> (f64, f64) {
        let mut calls = Vec::with_capacity(count);
        let start = Instant::now();
        for i in 0..count {
            clock.advance(1);
            let one = Instant::now();
            call(i);
            calls.push(one.elapsed().as_secs_f64() * 1e6);
        }
        let rate = count as f64 / start.elapsed().as_secs_f64();
        (rate, percentile(&mut calls, 0.5))
    };
    let facts = timed(w.facts.len(), &mut |i| {
        let (kind, key, value) = &w.facts[i];
        memory.record_fact(&site, *kind, key, value).expect("fact");
    });
    let selectors = timed(w.selectors.len(), &mut |i| {
        let (element, selector) = &w.selectors[i];
        memory
            .record_selector(&site, element, selector)
            .expect("selector");
    });
    let runs = memory.runs();
    let pairs = timed(w.runs.len(), &mut |i| {
        let run = &w.runs[i];
        let id = runs.start(run.start()).expect("start");
        runs.complete(&id, run.outcome()).expect("complete");
    });
    let domains: Vec<RunFilter> = (0..10)
        .map(|d| RunFilter {
            domain: Some(format!("site{d}.example.com")),
            ..RunFilter::default()
        })
        .collect();
    let start = Instant::now();
    let listed: usize = domains
        .iter()
        .map(|f| runs.list(f).expect("list").len())
        .sum();
    let list_ms = start.elapsed().as_secs_f64() * 1e3 / domains.len() as f64;
    assert_eq!(listed, w.runs.len(), "every run is listed under its domain");
    for (name, (rate, median), unit) in [
        (
            "record a fact on sqlite (one transaction each)",
            facts,
            "facts/s",
        ),
        (
            "record a selector success on sqlite (one transaction each)",
            selectors,
            "calls/s",
        ),
        ("start + complete a run on sqlite", pairs, "pairs/s"),
    ] {
        figure(name, w.runs.len(), rate, unit, None, false);
        figure(
            &format!("{name}, median call"),
            w.runs.len(),
            median,
            "us",
            None,
            true,
        );
    }
    figure(
        "list the runs of one domain among 1,000",
        w.runs.len(),
        list_ms,
        "ms",
        None,
        true,
    );

    // N is the workload's runs, as in the figures above.
    let mut group = c.benchmark_group("W-bad/site and runs on sqlite");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(1))
        .warm_up_time(Duration::from_millis(300));
    let mut i = 0usize;
    group.bench_function(BenchmarkId::new("record fact", w.runs.len()), |b| {
        b.iter(|| {
            let (kind, key, value) = &w.facts[i % w.facts.len()];
            i += 1;
            memory.record_fact(&site, *kind, key, value).expect("fact");
        });
    });
    let mut i = 0usize;
    group.bench_function(BenchmarkId::new("record selector", w.runs.len()), |b| {
        b.iter(|| {
            let (element, selector) = &w.selectors[i % w.selectors.len()];
            i += 1;
            memory
                .record_selector(&site, element, selector)
                .expect("selector");
        });
    });
    // Before the next bench adds runs: the list is over the workload's 1,000.
    let mut i = 0usize;
    group.bench_function(
        BenchmarkId::new("list runs of a domain", w.runs.len()),
        |b| {
            b.iter(|| {
                i += 1;
                runs.list(&domains[i % domains.len()]).expect("list").len()
            });
        },
    );
    let mut i = 0usize;
    group.bench_function(
        BenchmarkId::new("start + complete run", w.runs.len()),
        |b| {
            b.iter(|| {
                let run = &w.runs[i % w.runs.len()];
                i += 1;
                let mut start = run.start();
                start.run_id = format!("{}_{i}", run.run_id);
                let id = runs.start(start).expect("start");
                runs.complete(&id, run.outcome()).expect("complete")
            });
        },
    );
    group.finish();
}

fn bench_context(c: &mut Criterion) {
    let w = generate(1);
    let mut context = ContextBudget::new();
    for (label, content, priority) in &w.parts {
        context.add(label.clone(), content.clone(), *priority);
    }
    let mut group = c.benchmark_group("W-bad/context build");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(1));
    group.bench_function(BenchmarkId::new("ours", 20), |b| {
        b.iter(|| {
            context
                .build(Budget::Chars(8000), Policy::StopAtOverflow)
                .len()
        });
    });
    group.finish();
}

mod group {
    #![allow(missing_docs)] // `criterion_group!` defines an undocumented public function.
    use super::{bench_context, bench_match, bench_record, bench_site_and_runs};
    criterion::criterion_group!(
        benches,
        bench_context,
        bench_site_and_runs,
        bench_record,
        bench_match
    );
}
use group::benches;
criterion_main!(benches);
