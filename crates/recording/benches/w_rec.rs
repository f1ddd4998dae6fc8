//! Workload W-rec: reverse templating of a session of T tool calls under a snapshot of K
//! keys (ours: a value index built once per snapshot; baseline: every parameter compared
//! with every key), interpolation back, and YAML generation.
//!
//! Sizes: `AGENT_MEMORY_BENCH_SIZES` (comma-separated). Unset: K = 10 only, T = 1,000 (a
//! smoke run). Set: K in 10, 100, 1,000, and T = 10,000 when the list holds 10000, else
//! 1,000. Besides criterion's groups, the run appends calls/s and ratios to
//! `<target>/bench-figures/W-rec.jsonl` (not in `--test` mode).

// `criterion_group!` defines a public function without a doc comment.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use agent_memory_benchkit::{Figure, SIZES_VAR, keep, keeps_figures, sizes as benchkit_sizes};
use agent_memory_core::{SplitMix64, Timestamp};
use agent_memory_recording::{
    DeviceRecordings, MissingKeys, Snapshot, SnapshotIndex, SnapshotItem, Step, StepKind,
    TemplatePolicy, ToolCall, Trail, UnifiedTrail, baseline, interpolate,
};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

const SEED: u64 = 42;

fn random_value(rng: &mut SplitMix64) -> String {
    const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let len = 4 + rng.below(37);
    (0..len)
        .map(|_| char::from(ALPHABET[rng.below(36) as usize]))
        .collect()
}

struct Workload {
    snapshot: Snapshot,
    calls: Vec<(String, Value)>,
}

fn workload(keys: u64, calls: u64) -> Workload {
    let mut rng = SplitMix64::new(SEED);
    let mut values = Vec::new();
    let entries = (0..keys)
        .map(|i| {
            let value = random_value(&mut rng);
            let known = rng.below(10) == 0;
            let sensitive = rng.below(20) == 0;
            values.push(value.clone());
            let item = if sensitive {
                SnapshotItem::secret(value)
            } else {
                SnapshotItem::new(value)
            };
            let item = item
                .with_writer(if known { "rememberText" } else { "tapOn" })
                .with_written_at(Timestamp::from_millis(i as i64));
            (format!("k{i}"), item)
        })
        .collect();
    let string = |rng: &mut SplitMix64| {
        if rng.below(2) == 0 {
            values[rng.below(keys) as usize].clone()
        } else {
            random_value(rng)
        }
    };
    let calls = (0..calls)
        .map(|_| {
            let tool = format!("tool{}", rng.below(20));
            let params = json!({
                "first": string(&mut rng),
                "second": string(&mut rng),
                "object": {"x": string(&mut rng), "y": string(&mut rng)},
                "array": [string(&mut rng), string(&mut rng)],
                "count": rng.below(1000),
            });
            (tool, params)
        })
        .collect();
    Workload {
        snapshot: Snapshot::from_entries(entries),
        calls,
    }
}

fn ours(w: &Workload, policy: &TemplatePolicy) -> Vec<Value> {
    let index = SnapshotIndex::new(&w.snapshot, policy);
    let mut report = Vec::new();
    w.calls
        .iter()
        .enumerate()
        .map(
            |(i, (_, params))| match index.templatize(params, i, &mut report) {
                Ok(templated) => templated.into_owned(),
                Err(e) => panic!("templatize: {e}"),
            },
        )
        .collect()
}

fn baseline(w: &Workload, policy: &TemplatePolicy) -> Vec<Value> {
    w.calls
        .iter()
        .map(|(_, params)| baseline::templatize(params, &w.snapshot, policy))
        .collect()
}

fn to_trail(w: &Workload, templated: &[Value]) -> Trail {
    let calls = w
        .calls
        .iter()
        .zip(templated)
        .map(
            |((tool, _), params)| match ToolCall::from_json(tool.clone(), params) {
                Ok(call) => call,
                Err(e) => panic!("{e}"),
            },
        )
        .collect();
    let mut recordings = DeviceRecordings::new();
    recordings.insert("android", calls);
    let step = Step::new(StepKind::Step, "session").with_recording(recordings);
    Trail::Unified(UnifiedTrail::new(vec![step]))
}

/// The key counts K and the calls T: K = 10 alone unless `AGENT_MEMORY_BENCH_SIZES` is set,
/// then K = 10, 100 and 1,000; T = 10,000 when it names 10,000, else 1,000.
fn sizes() -> (Vec<u64>, u64) {
    if std::env::var_os(SIZES_VAR).is_none() {
        return (vec![10], 1_000);
    }
    let calls = if benchkit_sizes(&[]).contains(&10_000) {
        10_000
    } else {
        1_000
    };
    (vec![10, 100, 1_000], calls)
}

fn bench(c: &mut Criterion) {
    let (key_counts, calls) = sizes();
    let policy = TemplatePolicy::default();
    let workloads: Vec<(u64, Workload)> = key_counts
        .iter()
        .map(|&k| (k, workload(k, calls)))
        .collect();

    let mut group = c.benchmark_group("W-rec/templatize");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Elements(calls));
    for (k, w) in &workloads {
        group.bench_with_input(BenchmarkId::new("ours", k), w, |b, w| {
            b.iter(|| black_box(ours(w, &policy)))
        });
        group.bench_with_input(BenchmarkId::new("baseline", k), w, |b, w| {
            b.iter(|| black_box(baseline(w, &policy)))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("W-rec/interpolate");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(calls));
    for (k, w) in &workloads {
        let templated = ours(w, &policy);
        group.bench_with_input(BenchmarkId::new("ours", k), &templated, |b, t| {
            b.iter(|| {
                for params in t {
                    match interpolate(params, &w.snapshot, MissingKeys::Fail) {
                        Ok(v) => {
                            black_box(v);
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("W-rec/yaml");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(calls));
    for (k, w) in &workloads {
        let templated = ours(w, &policy);
        group.bench_with_input(BenchmarkId::new("ours", k), &templated, |b, t| {
            b.iter(|| match to_trail(w, t).to_yaml_string() {
                Ok(text) => black_box(text.len()),
                Err(e) => panic!("{e}"),
            })
        });
    }
    group.finish();

    // Only `cargo bench` keeps figures; the smoke run (`cargo test --benches`) measures none.
    if keeps_figures() {
        write_figures(&workloads, calls, &policy);
    }
}

/// Calls per second of `f`, best of five runs.
fn calls_per_second(calls: u64, mut f: impl FnMut()) -> f64 {
    let best = (0..5)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap_or(Duration::from_secs(1));
    calls as f64 / best.as_secs_f64().max(1e-9)
}

fn write_figures(workloads: &[(u64, Workload)], calls: u64, policy: &TemplatePolicy) {
    let mut figures = Vec::new();
    let mut ours_rates = Vec::new();
    for (k, w) in workloads {
        let fast = calls_per_second(calls, || {
            black_box(ours(w, policy));
        });
        let slow = calls_per_second(calls, || {
            black_box(baseline(w, policy));
        });
        ours_rates.push((*k, fast));
        let n = *k as usize;
        figures.push(
            Figure::new(
                "W-rec",
                &format!("templatize calls/s, K={k}, T={calls}"),
                n,
                fast.round(),
                "calls/s",
            )
            .against(slow.round())
            .higher_is_better(),
        );
        figures.push(
            Figure::new(
                "W-rec",
                &format!("templatize speedup over naive, K={k}"),
                n,
                (fast / slow * 100.0).round() / 100.0,
                "x",
            )
            .higher_is_better(),
        );
    }
    if let (Some((_, small)), Some((k, large))) = (ours_rates.first(), ours_rates.last()) {
        figures.push(Figure::new(
            "W-rec",
            &format!("templatize time at K={k} over time at K=10"),
            *k as usize,
            (small / large * 1000.0).round() / 1000.0,
            "x",
        ));
    }
    keep("W-rec.jsonl", &figures);
}

criterion_group!(benches, bench);
criterion_main!(benches);
