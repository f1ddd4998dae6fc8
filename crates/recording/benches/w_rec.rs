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
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

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

fn sizes() -> (Vec<u64>, u64) {
    match std::env::var("AGENT_MEMORY_BENCH_SIZES") {
        Ok(list) => {
            let asked: Vec<u64> = list
                .split(',')
                .filter_map(|n| n.trim().parse().ok())
                .collect();
            let calls = if asked.contains(&10_000) {
                10_000
            } else {
                1_000
            };
            (vec![10, 100, 1_000], calls)
        }
        Err(_) => (vec![10], 1_000),
    }
}

/// Criterion's test mode: `cargo test --benches` runs the binary without `--bench` (and
/// may pass `--test`); only `cargo bench` passes `--bench`.
fn test_mode() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--test") || !args.iter().any(|a| a == "--bench")
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

    if !test_mode() {
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
    let mut lines = Vec::new();
    let mut ours_rates = Vec::new();
    for (k, w) in workloads {
        let fast = calls_per_second(calls, || {
            black_box(ours(w, policy));
        });
        let slow = calls_per_second(calls, || {
            black_box(baseline(w, policy));
        });
        ours_rates.push((*k, fast));
        lines.push(format!(
            r#"{{"workload":"W-rec","figure":"templatize calls/s, K={k}, T={calls}","n":{k},"value":{fast:.0},"unit":"calls/s","baseline":{slow:.0},"lower_is_better":false}}"#
        ));
        lines.push(format!(
            r#"{{"workload":"W-rec","figure":"templatize speedup over naive, K={k}","n":{k},"value":{:.2},"unit":"x","baseline":null,"lower_is_better":false}}"#,
            fast / slow
        ));
    }
    if let (Some((_, small)), Some((k, large))) = (ours_rates.first(), ours_rates.last()) {
        lines.push(format!(
            r#"{{"workload":"W-rec","figure":"templatize time at K={k} over time at K=10","n":{k},"value":{:.3},"unit":"x","baseline":null,"lower_is_better":true}}"#,
            small / large
        ));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = target.join("bench-figures");
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("W-rec.jsonl"))?;
        lines.iter().try_for_each(|line| writeln!(file, "{line}"))
    });
    match written {
        Ok(()) => lines.iter().for_each(|line| eprintln!("{line}")),
        Err(e) => eprintln!("cannot write W-rec figures to {}: {e}", dir.display()),
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
