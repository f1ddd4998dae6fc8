//! The engines' floor under W-traj's recording: the same rows the stores write for an episode
//! (partition, fingerprint text, trajectory text, outcome JSON text, `recorded_at`), written by
//! bare `rusqlite` and bare `postgres` code with nothing else: no interning, no locks, no
//! validation. The stores are compared with it, so the report shows how close each comes to
//! the engine beneath it.
//!
//! - `W-traj/record-{batched,single}`, id `baseline`: SQLite (WAL, `synchronous = NORMAL`, as
//!   the SQLite store opens it; rows numbered by `INTEGER PRIMARY KEY`, as the store's episode
//!   table numbers them since it dropped `AUTOINCREMENT`, so no counter page is written),
//!   paired with the SQLite store's `ours` of the same groups;
//! - `W-traj-pg/record-{batched,single}`, id `baseline`: PostgreSQL over TCP on 127.0.0.1
//!   with its default durability (each commit waits for its WAL flush), for the PostgreSQL
//!   store's `ours` under the same names. The table and its inserts are benchkit's
//!   [`PgFloor`], which W-traj also runs in turns with the store, one record at a time.
//!
//! Batched: 1,000 rows per transaction (one multi-row `INSERT ... SELECT FROM unnest(...)` on
//! PostgreSQL, one prepared statement run per row on SQLite). Single: 100 rows, each its own
//! transaction (an autocommitted `INSERT`, the cheapest a transaction per row can be). Before
//! measuring, the table holds N rows, like the stores' benches hold N episodes.
//!
//! PostgreSQL: `AGENT_MEMORY_TEST_POSTGRES` when set (`cargo xtask bench` sets it to a
//! throwaway cluster over TCP), else a cluster the bench starts itself in
//! `target/pg-floor`; without server binaries the PostgreSQL half is skipped, saying so
//! (with `CI=true` it fails).

use std::time::Duration;

use agent_memory_benchkit::pg_floor::PgFloor;
use agent_memory_benchkit::{sizes, target_dir};
use agent_memory_postgres::cluster::Cluster;
use criterion::{BenchmarkId, Criterion, Throughput};

/// Rows per batched transaction (the stores' benches record in chunks of this size).
const CHUNK: usize = 1_000;
/// Rows per iteration one transaction each.
const SINGLES: usize = 100;
/// The partition every W-traj episode is in.
const PARTITION: &str = "bench";

/// W-traj's generator (`workloads.md`): splitmix64, eight draws per episode.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// One episode as the row's text columns.
struct Row {
    fingerprint: String,
    trajectory: String,
    outcome: &'static str,
}

fn trajectory_text(actions: &[u64]) -> String {
    let quoted: Vec<String> = actions.iter().map(|a| format!("\"a{a}\"")).collect();
    format!("[{}]", quoted.join(","))
}

/// The `n` episodes of W-traj, as rows.
fn episodes(n: usize) -> Vec<Row> {
    let canonical: Vec<String> = (0..100)
        .map(|f| {
            let mut rng = SplitMix64(1000 + f);
            let actions: Vec<u64> = (0..5).map(|_| rng.below(8)).collect();
            trajectory_text(&actions)
        })
        .collect();
    let mut rng = SplitMix64(42);
    (0..n)
        .map(|_| {
            let f = rng.below(100);
            let c = rng.below(100);
            let random: Vec<u64> = (0..5).map(|_| rng.below(8)).collect();
            let s = rng.below(100);
            Row {
                fingerprint: format!(
                    r#"{{"affected_layer":"l{}","problem_topology":"t{}"}}"#,
                    f % 10,
                    f / 10
                ),
                trajectory: if c < 70 {
                    canonical[f as usize].clone()
                } else {
                    trajectory_text(&random)
                },
                outcome: if s < 80 {
                    r#"{"success":true}"#
                } else {
                    r#"{"success":false}"#
                },
            }
        })
        .collect()
}

/// Where the next write starts in the workload, and the clock it stamps rows with.
struct Cursor {
    next: usize,
    recorded_at: i64,
}

impl Cursor {
    /// The workload's indices of the next `count` rows (cycling), and their timestamps.
    fn take(&mut self, count: usize, n: usize) -> Vec<(usize, i64)> {
        (0..count)
            .map(|_| {
                let i = self.next % n;
                self.next += 1;
                self.recorded_at += 1;
                (i, self.recorded_at)
            })
            .collect()
    }
}

mod sqlite {
    use super::{PARTITION, Row};
    use rusqlite::{Connection, params};

    const INSERT: &str = "INSERT INTO episode (partition, fingerprint, trajectory, outcome, recorded_at) \
         VALUES (?1, ?2, ?3, ?4, ?5)";

    pub(super) fn open(path: &std::path::Path) -> Connection {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        let conn = Connection::open(path).expect("open the floor database");
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             CREATE TABLE episode (
                 seq INTEGER PRIMARY KEY,
                 partition TEXT NOT NULL,
                 fingerprint TEXT NOT NULL,
                 trajectory TEXT NOT NULL,
                 outcome TEXT NOT NULL,
                 recorded_at INTEGER NOT NULL
             ) STRICT;
             CREATE INDEX episode_by_partition ON episode (partition, seq);",
        )
        .expect("create the floor table");
        conn
    }

    /// One transaction for all of `rows`.
    pub(super) fn batched(conn: &mut Connection, rows: &[Row], take: &[(usize, i64)]) {
        let tx = conn.transaction().expect("begin");
        single(&tx, rows, take);
        tx.commit().expect("commit");
    }

    /// One `INSERT` per row: outside a transaction, each its own (autocommitted) one.
    pub(super) fn single(conn: &Connection, rows: &[Row], take: &[(usize, i64)]) {
        let mut insert = conn.prepare_cached(INSERT).expect("prepare");
        for &(i, at) in take {
            let row = &rows[i];
            insert
                .execute(params![
                    PARTITION,
                    row.fingerprint,
                    row.trajectory,
                    row.outcome,
                    at
                ])
                .expect("insert");
        }
    }
}

/// The bare `postgres` side, on [`PgFloor`], fed the workload's rows.
mod pg {
    use super::{PARTITION, Row};
    use agent_memory_benchkit::pg_floor::PgFloor;

    /// One statement, one transaction, for all of `take`.
    pub(super) fn batched(floor: &mut PgFloor, rows: &[Row], take: &[(usize, i64)]) {
        let column =
            |f: fn(&Row) -> &str| -> Vec<&str> { take.iter().map(|&(i, _)| f(&rows[i])).collect() };
        let at: Vec<i64> = take.iter().map(|&(_, at)| at).collect();
        floor.insert_batch(
            PARTITION,
            &column(|r| &r.fingerprint),
            &column(|r| &r.trajectory),
            &column(|r| r.outcome),
            &at,
        );
    }

    /// Each row of `take` its own (autocommitted) transaction: one round trip each.
    pub(super) fn single(floor: &mut PgFloor, rows: &[Row], take: &[(usize, i64)]) {
        for &(i, at) in take {
            let row = &rows[i];
            floor.insert_one(
                PARTITION,
                &row.fingerprint,
                &row.trajectory,
                row.outcome,
                at,
            );
        }
    }
}

/// The PostgreSQL server to measure over: the one named by `AGENT_MEMORY_TEST_POSTGRES`, else
/// a cluster of our own (kept alive by the returned value), else none.
fn postgres_server() -> Option<(String, Option<Cluster>)> {
    if let Ok(url) = std::env::var("AGENT_MEMORY_TEST_POSTGRES")
        && !url.is_empty()
    {
        return Some((url, None));
    }
    match Cluster::start(target_dir().join("pg-floor")) {
        Ok(cluster) => Some((cluster.tcp_url(), Some(cluster))),
        Err(e) => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!ci, "CI=true and the PostgreSQL floor needs a server: {e}");
            eprintln!("skipping the PostgreSQL floor: {e}");
            None
        }
    }
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500))
        .configure_from_args();
    let dir = std::env::temp_dir().join(format!("am-floor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let server = postgres_server();
    let mut pg = server
        .as_ref()
        .map(|(url, _)| PgFloor::connect(url, "floor"));
    for n in sizes(&[1_000]) {
        let rows = episodes(n);

        let mut conn = sqlite::open(&dir.join(format!("floor-{n}.db")));
        let mut cursor = Cursor {
            next: 0,
            recorded_at: 1_700_000_000_000,
        };
        for _ in 0..n.div_ceil(CHUNK) {
            let take = cursor.take(CHUNK.min(n), n);
            sqlite::batched(&mut conn, &rows, &take);
        }
        let mut group = c.benchmark_group("W-traj/record-batched");
        group.throughput(Throughput::Elements(CHUNK as u64));
        group.bench_function(BenchmarkId::new("baseline", n), |b| {
            b.iter(|| sqlite::batched(&mut conn, &rows, &cursor.take(CHUNK, n)));
        });
        group.finish();
        let mut group = c.benchmark_group("W-traj/record-single");
        group.throughput(Throughput::Elements(SINGLES as u64));
        group.bench_function(BenchmarkId::new("baseline", n), |b| {
            b.iter(|| sqlite::single(&conn, &rows, &cursor.take(SINGLES, n)));
        });
        group.finish();
        drop(conn);

        let Some(floor) = pg.as_mut() else { continue };
        floor.clear();
        for _ in 0..n.div_ceil(CHUNK) {
            let take = cursor.take(CHUNK.min(n), n);
            pg::batched(floor, &rows, &take);
        }
        let mut group = c.benchmark_group("W-traj-pg/record-batched");
        group.throughput(Throughput::Elements(CHUNK as u64));
        group.bench_function(BenchmarkId::new("baseline", n), |b| {
            b.iter(|| pg::batched(floor, &rows, &cursor.take(CHUNK, n)));
        });
        group.finish();
        let mut group = c.benchmark_group("W-traj-pg/record-single");
        group.throughput(Throughput::Elements(SINGLES as u64));
        group.bench_function(BenchmarkId::new("baseline", n), |b| {
            b.iter(|| pg::single(floor, &rows, &cursor.take(SINGLES, n)));
        });
        group.finish();
    }
    drop(pg);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    c.final_summary();
}
