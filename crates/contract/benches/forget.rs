//! W-forget: forgetting a partition of N fingerprint groups (one episode each, crystallized)
//! beside another partition of N episodes (in N/100 groups, crystallized), through the
//! contract's `memory_forget` as `agent-memory forget --partition` runs it: on a SQLite file,
//! with PostgreSQL's time for the same forget in the same run as its baseline. The target:
//! under 2 s on SQLite at N = 100,000.
//!
//! A forget on SQLite ends with the erasure of the deleted text (`VACUUM`, then a truncating
//! checkpoint); forgetting a partition that holds nothing right after does only that
//! erasure, so its time is reported too: the part of the forget that follows the size of the
//! whole file rather than what it deletes.
//!
//! Each store forgets the partition three times (recorded and crystallized again before each),
//! and the medians are appended to `<target>/bench-figures/W-forget.jsonl`. Sizes come from
//! `AGENT_MEMORY_BENCH_SIZES` (default 100,000); `cargo test --benches` (CI's smoke run)
//! forgets 200 groups once and keeps no figures. PostgreSQL is the server
//! `AGENT_MEMORY_TEST_POSTGRES` names (set by `cargo xtask bench`), each size in a fresh
//! schema; without it the PostgreSQL half is skipped, saying so.

use std::sync::Arc;
use std::time::Instant;

use agent_memory_benchkit::{Figure, keep, keeps_figures, median, sizes};
use agent_memory_contract::database::Store;
use agent_memory_contract::files::FileAccess;
use agent_memory_contract::{Env, operations};
use agent_memory_core::{ManualClock, SeededIds, Timestamp};
use agent_memory_postgres::{PostgresOptions, PostgresStore};
use agent_memory_sqlite::SqliteStore;
use serde_json::{Value, json};

const WORKLOAD: &str = "W-forget";
/// Episodes per `trajectory_record` call while filling.
const BATCH: usize = 5_000;
/// 2026-01-01T00:00:00Z: every episode is recorded at or after it.
const START: i64 = 1_767_225_600_000;

fn call(env: &Env<'_>, operation: &str, input: Value) -> Value {
    operations::find(operation)
        .unwrap_or_else(|| panic!("no operation {operation}"))
        .call(env, input)
        .unwrap_or_else(|e| panic!("{operation}: {e:#}"))
}

fn env(store: &Store) -> Env<'_> {
    Env {
        client: None,
        store,
        clock: Box::new(ManualClock::new(Timestamp::from_millis(START))),
        ids: Box::new(SeededIds::new(7)),
        files: FileAccess::Any,
    }
}

/// Records `episodes` episodes of `partition` in `groups` groups, then crystallizes it.
fn fill(env: &Env<'_>, partition: &str, groups: usize, episodes: usize) {
    for start in (0..episodes).step_by(BATCH) {
        let batch: Vec<Value> = (start..(start + BATCH).min(episodes))
            .map(|i| {
                json!({
                    "fingerprint": {"task": format!("{partition}-{}", i % groups), "env": "ci"},
                    "trajectory": ["read_logs", "patch", "run_tests"],
                    "outcome": {"success": i % 5 != 0},
                    "recorded_at": START + i as i64,
                })
            })
            .collect();
        call(
            env,
            "trajectory_record",
            json!({"partition": partition, "fields": ["task", "env"], "episodes": batch}),
        );
    }
    call(
        env,
        "trajectory_crystallize",
        json!({"partition": partition}),
    );
}

/// Milliseconds `memory_forget` takes to forget `partition`, checking what it deleted.
fn forget(env: &Env<'_>, partition: &str, episodes: u64) -> f64 {
    let start = Instant::now();
    let answer = call(env, "memory_forget", json!({"partition": partition}));
    let took = start.elapsed().as_secs_f64() * 1e3;
    assert_eq!(answer["episodes"], episodes, "{answer}");
    took
}

/// The forget's times (ms) on `store`, each after recording and crystallizing the partition
/// again, and (with `erasure_too`) the time of the erasure alone after each.
fn measure(store: &Store, n: usize, runs: usize, erasure_too: bool) -> (Vec<f64>, Vec<f64>) {
    let env = env(store);
    fill(&env, "kept", (n / 100).max(1), n);
    let (mut forgets, mut erasures) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        fill(&env, "gone", n, n);
        forgets.push(forget(&env, "gone", n as u64));
        if erasure_too {
            erasures.push(forget(&env, "nothing", 0));
        }
    }
    (forgets, erasures)
}

/// A store in a fresh schema of the server `AGENT_MEMORY_TEST_POSTGRES` names; `None`, after
/// saying so, without one.
fn postgres(n: usize) -> Option<Arc<PostgresStore>> {
    let Ok(url) = std::env::var("AGENT_MEMORY_TEST_POSTGRES") else {
        eprintln!("AGENT_MEMORY_TEST_POSTGRES is not set: W-forget on PostgreSQL skipped");
        return None;
    };
    let schema = format!("w_forget_{n}_{}", std::process::id());
    let options = PostgresOptions::default().with_schema(schema);
    Some(Arc::new(
        PostgresStore::connect_with(&url, &options).expect("connect to PostgreSQL"),
    ))
}

fn show(name: &str, n: usize, times: &[f64]) {
    let each: Vec<String> = times.iter().map(|t| format!("{t:.1}")).collect();
    eprintln!("{WORKLOAD} {name} n={n}: {} ms", each.join(", "));
}

fn main() {
    let (sizes, runs) = if keeps_figures() {
        (sizes(&[100_000]), 3)
    } else {
        (vec![200], 1)
    };
    for n in sizes {
        let dir = tempfile::tempdir().expect("temp dir");
        let sqlite: Store =
            Arc::new(SqliteStore::open(dir.path().join("memory.db")).expect("open"));
        let (mut forgets, mut erasures) = measure(&sqlite, n, runs, true);
        show("sqlite forget", n, &forgets);
        show("sqlite erasure alone", n, &erasures);
        let postgres_median = postgres(n).map(|pg| {
            let store: Store = pg.clone();
            let (mut forgets, _) = measure(&store, n, runs, false);
            show("postgres forget", n, &forgets);
            pg.drop_schema().expect("drop the bench schema");
            median(&mut forgets)
        });
        keep(
            "W-forget.jsonl",
            &[
                Figure::new(
                    WORKLOAD,
                    "forget N groups beside N other episodes on sqlite, postgres as baseline",
                    n,
                    median(&mut forgets),
                    "ms",
                )
                .against(postgres_median),
                Figure::new(
                    WORKLOAD,
                    "the erasure alone (VACUUM, checkpoint) after it on sqlite",
                    n,
                    median(&mut erasures),
                    "ms",
                ),
            ],
        );
    }
}
