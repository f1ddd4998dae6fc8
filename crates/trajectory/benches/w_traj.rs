//! W-traj on SQLite files: record (single and batched), first crystallize (beside the same
//! run as one step over every episode, its baseline), second crystallize, crystallize after 1%
//! new episodes, recall; plus the figures criterion cannot express
//! (recall p50/p99, database bytes per episode) appended to `bench-figures/W-traj.jsonl`.
//!
//! The same figures are measured on PostgreSQL in the same run (workload
//! `W-traj-pg`), over TCP loopback: to the server `AGENT_MEMORY_TEST_POSTGRES` (set by
//! `cargo xtask bench`) or `AGENT_MEMORY_BENCH_POSTGRES` names, or to
//! a throwaway cluster the bench starts from the server binaries on the machine. Without
//! either, the PostgreSQL figures are skipped with a message (an error with `CI=true`).
//! Beside each recall query the PostgreSQL run also times the store's bare round trip
//! (`PostgresStore::ping`, one `SELECT 1`), reported as `round trip p50/p99`: the floor
//! beneath recall's latency, under the same conditions at the same moments. Criterion's
//! `W-traj-pg/record-{batched,single}` (id `ours`) pair with the bare `postgres` floor of the
//! same names in `store-postgres/benches/floor.rs`; since those two run minutes apart and a
//! durable commit's flush varies that much, `record, single, in turns with bare postgres`
//! also measures one record call at a time in turns with the bare driver's `INSERT` in this
//! process, each the other's baseline (see [`single_in_turns`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_memory_benchkit::pg_floor::PgFloor;
use agent_memory_benchkit::{Figure, keep, percentile_of_sorted, sizes};
use agent_memory_core::evidence::Writer;
use agent_memory_core::{Partition, PatternStore, Source, SystemClock};
use agent_memory_postgres::{PostgresOptions, PostgresStore};
use agent_memory_sqlite::SqliteStore;
use agent_memory_trajectory::workload::{self, FIELDS, PARTITION, Workload};
use agent_memory_trajectory::{Config, EpisodeRecord, TrajectoryMemory};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};
use serde_json::{Value, json};

type Memory = TrajectoryMemory<SqliteStore, SystemClock>;
type MemoryOn<S> = TrajectoryMemory<S, SystemClock>;

const CHUNK: usize = 1_000;

fn test_mode() -> bool {
    std::env::args().any(|a| a == "--test")
}

fn open(path: &Path) -> Memory {
    memory(SqliteStore::open(path).expect("open bench database"))
}

fn memory<S: PatternStore>(store: S) -> MemoryOn<S> {
    let mut config = Config::new(FIELDS);
    config.cluster_threshold = 3;
    TrajectoryMemory::new(store, SystemClock, config).expect("config")
}

struct Prepared {
    fps: Vec<[(&'static str, String); 2]>,
    trajs: Vec<Vec<String>>,
    outcomes: [Value; 2],
}

fn prepare(w: &Workload) -> Prepared {
    Prepared {
        fps: w
            .episodes
            .iter()
            .map(|e| {
                [
                    (FIELDS[0], e.topology.clone()),
                    (FIELDS[1], e.layer.clone()),
                ]
            })
            .collect(),
        trajs: w.episodes.iter().map(|e| e.trajectory.clone()).collect(),
        outcomes: [json!({"success": false}), json!({"success": true})],
    }
}

/// Records episodes `range` of the workload (cycling), in batches of `batch`.
fn record<S: PatternStore>(
    m: &MemoryOn<S>,
    w: &Workload,
    p: &Prepared,
    range: std::ops::Range<usize>,
    batch: usize,
) {
    let part = Partition::new(PARTITION).expect("partition");
    let n = w.episodes.len();
    let indices: Vec<usize> = range.map(|i| i % n).collect();
    for chunk in indices.chunks(batch) {
        let fps: Vec<[(&str, &str); 2]> = chunk
            .iter()
            .map(|&i| {
                [
                    (p.fps[i][0].0, p.fps[i][0].1.as_str()),
                    (p.fps[i][1].0, p.fps[i][1].1.as_str()),
                ]
            })
            .collect();
        let trajs: Vec<Vec<&str>> = chunk
            .iter()
            .map(|&i| p.trajs[i].iter().map(String::as_str).collect())
            .collect();
        let records: Vec<EpisodeRecord<'_>> = chunk
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                EpisodeRecord::new(
                    &fps[k],
                    &trajs[k],
                    &p.outcomes[usize::from(w.episodes[i].success)],
                    &part,
                )
            })
            .collect();
        m.record_episodes(&records).expect("record");
    }
}

fn crystallized(dir: &Path, w: &Workload, p: &Prepared) -> (PathBuf, Memory) {
    let path = dir.join(format!("crystallized-{}.db", w.episodes.len()));
    let m = open(&path);
    record(&m, w, p, 0..w.episodes.len(), CHUNK);
    m.crystallize(&Partition::new(PARTITION).expect("partition"))
        .expect("crystallize");
    (path, m)
}

/// Removes a database file of an earlier iteration (and its WAL), if any.
fn remove_db(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// 1% of `n`, at least one episode.
fn one_percent(n: usize) -> usize {
    (n / 100).max(1)
}

fn figure(figure: &str, n: usize, value: f64, unit: &str, lower_is_better: bool) {
    figure_of("W-traj", figure, n, value, unit, lower_is_better);
}

/// Keeps one figure of `workload` (see [`keep`]).
fn figure_of(
    workload: &str,
    figure: &str,
    n: usize,
    value: f64,
    unit: &str,
    lower_is_better: bool,
) {
    let mut figure = Figure::new(workload, figure, n, value, unit);
    if !lower_is_better {
        figure = figure.higher_is_better();
    }
    keep("W-traj.jsonl", &[figure]);
}

/// The figures measured with `Instant`: record rates, crystallize times, recall p50/p99,
/// bytes per episode.
fn custom_figures(dir: &Path, n: usize, w: &Workload, p: &Prepared) {
    let path = dir.join(format!("figures-{n}.db"));
    let m = open(&path);
    let episodes = timed_figures("W-traj", &m, n, w, p, None);
    drop(m); // the last connection checkpoints the WAL into the file
    let bytes: u64 = ["", "-wal"]
        .iter()
        .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", path.display())).ok())
        .map(|meta| meta.len())
        .sum();
    figure(
        "database bytes per episode",
        n,
        bytes as f64 / episodes as f64,
        "bytes",
        true,
    );
}

/// The timed figures of `workload` on memory `m`; returns how many episodes it recorded.
/// `round_trip`, for a server store, is its bare round trip: timed after each recall query,
/// so its p50/p99 (the floor beneath recall's, under the same conditions) are reported next
/// to recall's.
fn timed_figures<S: PatternStore>(
    workload: &str,
    m: &MemoryOn<S>,
    n: usize,
    w: &Workload,
    p: &Prepared,
    round_trip: Option<&dyn Fn()>,
) -> usize {
    let figure = |name: &str, n: usize, value: f64, unit: &str, lower: bool| {
        figure_of(workload, name, n, value, unit, lower);
    };
    let part = Partition::new(PARTITION).expect("partition");
    let start = Instant::now();
    record(m, w, p, 0..n, CHUNK);
    figure(
        "record, batched",
        n,
        n as f64 / start.elapsed().as_secs_f64(),
        "episodes/s",
        false,
    );
    let start = Instant::now();
    m.crystallize(&part).expect("crystallize");
    figure(
        "first crystallize",
        n,
        start.elapsed().as_secs_f64() * 1e3,
        "ms",
        true,
    );
    let start = Instant::now();
    m.crystallize(&part).expect("crystallize");
    figure(
        "second crystallize",
        n,
        start.elapsed().as_secs_f64() * 1e3,
        "ms",
        true,
    );
    let singles = CHUNK.min(n);
    let start = Instant::now();
    record(m, w, p, 0..singles, 1);
    figure(
        "record, single",
        n,
        singles as f64 / start.elapsed().as_secs_f64(),
        "episodes/s",
        false,
    );
    m.crystallize(&part).expect("crystallize");
    // Exactly 1% new on the crystallized history.
    record(m, w, p, 0..one_percent(n), CHUNK);
    let start = Instant::now();
    m.crystallize(&part).expect("crystallize");
    figure(
        "crystallize after 1% new",
        n,
        start.elapsed().as_secs_f64() * 1e3,
        "ms",
        true,
    );
    for (kind, queries) in [
        (
            "exact",
            w.exact
                .iter()
                .map(|(t, l)| vec![(FIELDS[0], t.as_str()), (FIELDS[1], l.as_str())])
                .collect::<Vec<_>>(),
        ),
        (
            "partial",
            w.partial
                .iter()
                .map(|l| vec![(FIELDS[1], l.as_str())])
                .collect(),
        ),
    ] {
        let mut floor = Vec::new();
        let mut micros: Vec<f64> = queries
            .iter()
            .map(|q| {
                let start = Instant::now();
                let found = m.recall(q, &part).expect("recall");
                std::hint::black_box(found);
                let took = start.elapsed().as_secs_f64() * 1e6;
                if let Some(round_trip) = round_trip {
                    let start = Instant::now();
                    round_trip();
                    floor.push(start.elapsed().as_secs_f64() * 1e6);
                }
                took
            })
            .collect();
        micros.sort_by(f64::total_cmp);
        if !floor.is_empty() {
            floor.sort_by(f64::total_cmp);
            for (name, q) in [("p50", 0.5), ("p99", 0.99)] {
                figure(
                    &format!("round trip {name}, beside {kind} recall"),
                    n,
                    percentile_of_sorted(&floor, q),
                    "us",
                    true,
                );
            }
        }
        figure(
            &format!("recall p50, {kind}"),
            n,
            percentile_of_sorted(&micros, 0.5),
            "us",
            true,
        );
        figure(
            &format!("recall p99, {kind}"),
            n,
            percentile_of_sorted(&micros, 0.99),
            "us",
            true,
        );
    }
    n + singles + one_percent(n)
}

/// The PostgreSQL server the figures are measured on: `AGENT_MEMORY_TEST_POSTGRES` (which
/// `cargo xtask bench` sets to a throwaway cluster over loopback) or
/// `AGENT_MEMORY_BENCH_POSTGRES`, else a throwaway cluster started here (kept alive by the
/// returned guard).
fn postgres_server() -> Option<(String, Option<agent_memory_postgres::cluster::Cluster>)> {
    for var in ["AGENT_MEMORY_TEST_POSTGRES", "AGENT_MEMORY_BENCH_POSTGRES"] {
        if let Ok(url) = std::env::var(var) {
            return Some((url, None));
        }
    }
    let dir = std::env::temp_dir().join(format!("w-traj-pg-{}", std::process::id()));
    match agent_memory_postgres::cluster::Cluster::start(&dir) {
        Ok(cluster) => Some((cluster.tcp_url(), Some(cluster))),
        Err(e) => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!ci, "W-traj on PostgreSQL needs a server: {e}");
            eprintln!("skipping W-traj on PostgreSQL: {e}");
            None
        }
    }
}

/// The W-traj figures on PostgreSQL, in a fresh schema per size, plus the bytes its tables
/// take per episode.
fn postgres_figures(url: &str, n: usize, w: &Workload, p: &Prepared) {
    let schema = format!("w_traj_{n}_{}", std::process::id());
    let options = PostgresOptions::default().with_schema(&schema);
    let store = PostgresStore::connect_with(url, &options).expect("connect to PostgreSQL");
    let m = memory(store);
    let ping = || m.store().ping().expect("ping");
    let episodes = timed_figures("W-traj-pg", &m, n, w, p, Some(&ping));
    let episodes = episodes + single_in_turns(url, &m, n, w, p);
    let store = m.store();
    let bytes = store.size_bytes().expect("table sizes");
    figure_of(
        "W-traj-pg",
        "database bytes per episode",
        n,
        bytes as f64 / episodes as f64,
        "bytes",
        true,
    );
    store.drop_schema().expect("drop bench schema");
}

/// `W-traj-pg/record-{batched,single}`, id `ours`: recording on PostgreSQL holding `n`
/// episodes, paired in the report with the bare `postgres` floor of the same names
/// (`store-postgres/benches/floor.rs`).
fn postgres_records(c: &mut Criterion, url: &str, n: usize, w: &Workload, p: &Prepared) {
    let schema = format!("w_traj_records_{n}_{}", std::process::id());
    let options = PostgresOptions::default().with_schema(&schema);
    let store = PostgresStore::connect_with(url, &options).expect("connect to PostgreSQL");
    let m = memory(store);
    record(&m, w, p, 0..n, CHUNK);
    settle_disk();
    let mut group = c.benchmark_group("W-traj-pg/record-batched");
    group.throughput(Throughput::Elements(CHUNK as u64));
    group.bench_function(BenchmarkId::new("ours", n), |b| {
        b.iter(|| record(&m, w, p, 0..CHUNK, CHUNK));
    });
    group.finish();
    let mut group = c.benchmark_group("W-traj-pg/record-single");
    group.throughput(Throughput::Elements(100));
    group.bench_function(BenchmarkId::new("ours", n), |b| {
        b.iter(|| record(&m, w, p, 0..100, 1));
    });
    group.finish();
    m.store().drop_schema().expect("drop bench schema");
}

/// Calls per side and turn, and turns, of [`single_in_turns`].
const TURN_CALLS: usize = 25;
const TURNS: usize = 20;

/// One record call at a time on the PostgreSQL store, in turns with the bare driver writing
/// the same episode's row (`INSERT` of the floor's five columns, autocommitted, on a prepared
/// statement, into a table of the same shape holding as many rows) on its own connection to
/// the same server: `TURNS` turns of `TURN_CALLS` calls each side, the side that goes first
/// alternating. A durable commit's wait for its WAL flush varies from second to second on a
/// shared disk; calls measured in turns meet the same disk, so their ratio is the store's
/// cost over the engine's floor, not the disk's mood. Reports each side's p50 and its rate
/// (calls over the time spent in them); returns how many episodes the store recorded.
fn single_in_turns<S: PatternStore>(
    url: &str,
    m: &MemoryOn<S>,
    n: usize,
    w: &Workload,
    p: &Prepared,
) -> usize {
    let mut floor = bare_floor(url, n, w);
    let (mut ours, mut bare) = (Vec::new(), Vec::new());
    let mut next = 0;
    for turn in 0..TURNS {
        let range = next..next + TURN_CALLS;
        next += TURN_CALLS;
        let ours_turn = |times: &mut Vec<f64>| {
            for i in range.clone() {
                let start = Instant::now();
                record(m, w, p, i..i + 1, 1);
                times.push(start.elapsed().as_secs_f64() * 1e6);
            }
        };
        if turn % 2 == 0 {
            ours_turn(&mut ours);
            insert_each(&mut floor, w, range.clone(), &mut bare);
        } else {
            insert_each(&mut floor, w, range.clone(), &mut bare);
            ours_turn(&mut ours);
        }
    }
    let rate = |times: &[f64]| times.len() as f64 / (times.iter().sum::<f64>() / 1e6);
    let (ours_rate, bare_rate) = (rate(&ours), rate(&bare));
    ours.sort_by(f64::total_cmp);
    bare.sort_by(f64::total_cmp);
    let p50 = |sorted: &[f64]| percentile_of_sorted(sorted, 0.5);
    keep(
        "W-traj.jsonl",
        &[
            Figure::new(
                "W-traj-pg",
                "record, single, in turns with bare postgres",
                n,
                ours_rate,
                "episodes/s",
            )
            .higher_is_better()
            .against(bare_rate),
            Figure::new(
                "W-traj-pg",
                "record, single, in turns with bare postgres, p50",
                n,
                p50(&ours),
                "us",
            )
            .against(p50(&bare)),
        ],
    );
    TURNS * TURN_CALLS
}

/// The bare driver's side of [`single_in_turns`]: a [`PgFloor`] holding the workload's `n`
/// rows.
fn bare_floor(url: &str, n: usize, w: &Workload) -> PgFloor {
    let mut floor = PgFloor::connect(url, &format!("w_traj_floor_{n}"));
    let rows: Vec<_> = (0..n).map(|i| floor_row(w, i)).collect();
    let fingerprints: Vec<&str> = rows.iter().map(|(f, _, _)| f.as_str()).collect();
    let trajectories: Vec<&str> = rows.iter().map(|(_, t, _)| t.as_str()).collect();
    let outcomes: Vec<&str> = rows.iter().map(|&(_, _, o)| o).collect();
    floor.insert_batch(
        PARTITION,
        &fingerprints,
        &trajectories,
        &outcomes,
        &vec![0; n],
    );
    floor
}

/// Episode `i` (cycling) as the floor row's fingerprint, trajectory and outcome texts.
fn floor_row(w: &Workload, i: usize) -> (String, String, &'static str) {
    let e = &w.episodes[i % w.episodes.len()];
    let fingerprint = json!({FIELDS[0]: e.topology, FIELDS[1]: e.layer}).to_string();
    let trajectory = json!(e.trajectory).to_string();
    let outcome = if e.success {
        r#"{"success":true}"#
    } else {
        r#"{"success":false}"#
    };
    (fingerprint, trajectory, outcome)
}

/// Inserts episodes `range` into `floor` one autocommitted statement each, pushing each
/// call's time in microseconds (the row's texts are formed before its clock starts).
fn insert_each(
    floor: &mut PgFloor,
    w: &Workload,
    range: std::ops::Range<usize>,
    times: &mut Vec<f64>,
) {
    for i in range {
        let (fingerprint, trajectory, outcome) = floor_row(w, i);
        let at = i64::try_from(i).expect("an index fits i64");
        let start = Instant::now();
        floor.insert_one(PARTITION, &fingerprint, &trajectory, outcome, at);
        times.push(start.elapsed().as_secs_f64() * 1e6);
    }
}

/// Flushes every dirty page of the machine (`sync`) before a timed phase, so a durable
/// commit measured next waits for its own data, not for the writeback of what the build or an
/// earlier phase left in the page cache (on ext4, a commit's flush can wait for other files'
/// data). Without `sync` on the machine the figures are taken as they come.
fn settle_disk() {
    if let Err(e) = std::process::Command::new("sync").status() {
        eprintln!("could not run sync before a timed phase ({e}); figures may include writeback");
    }
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500))
        .configure_from_args();
    let dir = tempfile::tempdir().expect("temp dir");
    let part = Partition::new(PARTITION).expect("partition");
    let server = if test_mode() { None } else { postgres_server() };
    for n in sizes(&[1_000]) {
        let w = workload::generate(n);
        let p = prepare(&w);
        if !test_mode() {
            settle_disk();
            custom_figures(dir.path(), n, &w, &p);
            if let Some((url, _)) = &server {
                settle_disk();
                postgres_figures(url, n, &w, &p);
            }
        }
        let (_, m) = crystallized(dir.path(), &w, &p);

        let mut group = c.benchmark_group("W-traj/record-batched");
        group.throughput(Throughput::Elements(CHUNK as u64));
        group.bench_function(BenchmarkId::new("ours", n), |b| {
            b.iter(|| record(&m, &w, &p, 0..CHUNK, CHUNK));
        });
        group.finish();

        let mut group = c.benchmark_group("W-traj/record-single");
        group.throughput(Throughput::Elements(100));
        group.bench_function(BenchmarkId::new("ours", n), |b| {
            b.iter(|| record(&m, &w, &p, 0..100, 1));
        });
        // The same records, each episode keeping its writer as every door records them.
        let written = memory(m.store()).with_writer(Writer {
            source: Some(Source::Tool("ci".to_owned())),
            session: Some("nightly-12".to_owned()),
            client: Some("python".to_owned()),
        });
        group.bench_function(BenchmarkId::new("ours with writer", n), |b| {
            b.iter(|| record(&written, &w, &p, 0..100, 1));
        });
        group.finish();
        if let Some((url, _)) = &server {
            postgres_records(&mut c, url, n, &w, &p);
        }
        m.crystallize(&part).expect("crystallize");

        let mut group = c.benchmark_group("W-traj/crystallize-first");
        group.throughput(Throughput::Elements(n as u64));
        let mut fresh = 0;
        group.bench_function(BenchmarkId::new("ours", n), |b| {
            b.iter_batched(
                || {
                    remove_db(&dir.path().join(format!("first-{n}-{fresh}.db")));
                    fresh += 1;
                    let fm = open(&dir.path().join(format!("first-{n}-{fresh}.db")));
                    record(&fm, &w, &p, 0..n, CHUNK);
                    fm
                },
                |fm| fm.crystallize(&part).expect("crystallize"),
                BatchSize::PerIteration,
            );
        });
        // The same run as one step over every episode, as crystallize ran before it read
        // them a page at a time: the baseline of the row above, measured in the same run.
        group.bench_function(BenchmarkId::new("one-step", n), |b| {
            b.iter_batched(
                || {
                    remove_db(&dir.path().join(format!("first-{n}-{fresh}.db")));
                    fresh += 1;
                    let fm = open(&dir.path().join(format!("first-{n}-{fresh}.db")));
                    record(&fm, &w, &p, 0..n, CHUNK);
                    fm
                },
                |fm| {
                    fm.store()
                        .crystallize_with(&part, &|input| fm.step(input))
                        .expect("crystallize")
                },
                BatchSize::PerIteration,
            );
        });
        group.finish();

        let mut group = c.benchmark_group("W-traj/crystallize-second");
        group.bench_function(BenchmarkId::new("ours", n), |b| {
            b.iter(|| m.crystallize(&part).expect("crystallize"));
        });
        group.finish();

        // Each iteration starts from a copy of the same crystallized history of exactly `n`
        // episodes and records exactly 1% new ones, so the figure does not drift as the
        // iterations add episodes.
        let base = dir.path().join(format!("base-{n}.db"));
        {
            let bm = open(&base);
            record(&bm, &w, &p, 0..n, CHUNK);
            bm.crystallize(&part).expect("crystallize");
        } // the last connection checkpoints the WAL into the file
        let mut group = c.benchmark_group("W-traj/crystallize-after-1pct");
        let new = one_percent(n);
        group.throughput(Throughput::Elements(new as u64));
        let mut copy = 0;
        group.bench_function(BenchmarkId::new("ours", n), |b| {
            b.iter_batched(
                || {
                    remove_db(&dir.path().join(format!("after-{n}-{copy}.db")));
                    copy += 1;
                    let path = dir.path().join(format!("after-{n}-{copy}.db"));
                    std::fs::copy(&base, &path).expect("copy history");
                    let cm = open(&path);
                    record(&cm, &w, &p, 0..new, CHUNK);
                    cm
                },
                |cm| cm.crystallize(&part).expect("crystallize"),
                BatchSize::PerIteration,
            );
        });
        group.finish();

        let mut group = c.benchmark_group("W-traj/recall");
        let mut q = 0;
        group.bench_function(BenchmarkId::new("ours", n), |b| {
            b.iter(|| {
                q = (q + 1) % w.exact.len();
                let (t, l) = &w.exact[q];
                m.recall(&[(FIELDS[0], t), (FIELDS[1], l)], &part)
                    .expect("recall")
            });
        });
        group.finish();
    }
    c.final_summary();
}
