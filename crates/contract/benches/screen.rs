//! W-screen: what the write screen costs beside the write it guards. In one run, on the
//! workload W-bad (`record_run.rs`): `screen()` of a finished run's text, the JSON text a
//! language package sends to `browser_record_run` (ours), and the record of that run through
//! `BrowserMemory::record_run` on a SQLite store holding N trajectories (the baseline), so
//! the report's ratio says how many screens one recorded run costs.
//!
//! Beside them, `screen()` of two real memory texts kept as test data: the context block
//! browser-agent-driver renders from its memory files (1.8 kB, screened with its page's
//! host) and a Keen Code transcript (1.4 kB).
//!
//! Sizes come from `AGENT_MEMORY_BENCH_SIZES` (default: 1,000).

// `criterion_group!` defines a public function without a doc comment.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use agent_memory_benchkit::sizes;
use agent_memory_browser::{BrowserMemory, tokenize};
use agent_memory_core::screen::screen;
use agent_memory_core::store::browser::TrajectoryStore;
use agent_memory_core::{ManualClock, Scope, SeededIds, Source};
use agent_memory_sqlite::SqliteStore;
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

#[path = "../../browser-memory/benches/workload/mod.rs"]
mod workload;

mod run_input;

use run_input::input;
use workload::{NOW, generate, report};

/// The finished runs whose texts are screened in turn.
const TEXTS: usize = 200;

/// browser-agent-driver's rendered memory context, from its pages on one host.
const BROWSER_CONTEXT: &str =
    include_str!("../../browser-memory/tests/it/fixtures/bad-examples/rendered/extra-context.txt");

/// A Keen Code transcript: a coding agent's turns and tool calls, as JSON lines.
const KEEN_TRANSCRIPT: &str =
    include_str!("../../turn-memory/tests/data/keen/keen-0.2.3.transcript_events.jsonl");

fn bench(c: &mut Criterion) {
    for n in sizes(&[1000]) {
        let w = generate(n);
        let dir = tempfile::tempdir().expect("temp dir");
        let sqlite = SqliteStore::open(dir.path().join("memory.db")).expect("open");
        let scope = Scope::shared();
        for t in &w.trajectories {
            sqlite
                .trajectory_put(&scope, t, &tokenize(&t.goal))
                .expect("put");
        }
        let clock = ManualClock::new(NOW);
        let ids = SeededIds::new(1);
        let engine = BrowserMemory::new(&sqlite, scope, &clock, &ids);
        // Each run's text with the host of its start page, as a write would screen it.
        let texts: Vec<(String, Option<String>)> = (0..TEXTS)
            .map(|i| {
                let r = report(&w, i);
                let host = Source::Page(r.start_url.clone())
                    .host()
                    .map(|h| h.into_owned());
                (input(&r, &format!("run_{i}")), host)
            })
            .collect();

        let mut group = c.benchmark_group("W-screen/screen beside a recorded run");
        group
            .sample_size(20)
            .measurement_time(Duration::from_secs(3));
        group.bench_with_input(BenchmarkId::new("ours", n), &texts, |b, texts| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % texts.len();
                let (text, host) = &texts[i];
                black_box(screen(text, host.as_deref()))
            })
        });
        group.bench_function(BenchmarkId::new("baseline", n), |b| {
            let mut i = 0;
            b.iter_batched(
                || {
                    i += 1;
                    clock.advance(1);
                    report(&w, i)
                },
                |r| black_box(engine.record_run(&r).expect("record")),
                BatchSize::SmallInput,
            )
        });
        group.finish();
    }

    let mut group = c.benchmark_group("W-screen/screen of real memory");
    let real = [
        ("browser context", BROWSER_CONTEXT, Some("shop.example.com")),
        ("keen transcript", KEEN_TRANSCRIPT, None),
    ];
    for (name, text, host) in real {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| black_box(screen(black_box(text), host)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
