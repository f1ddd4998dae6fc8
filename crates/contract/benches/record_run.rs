//! The cost of the contract over the engine for one recorded run (workload W-bad): the same
//! finished runs recorded on one SQLite store holding the workload's N trajectories, in turns,
//! through `BrowserMemory::record_run` (the engine, the baseline) and through the contract's
//! `browser_record_run` from its JSON text to the JSON text of its answer, as the language
//! packages call it.
//!
//! Sizes come from `AGENT_MEMORY_BENCH_SIZES` (default: the smallest, 1,000). The medians are
//! appended to `<target>/bench-figures/W-bad.jsonl` (not under `cargo test`), where the Node
//! package's bench reads the contract's as the baseline of its own recorded run.

use std::sync::Arc;
use std::time::Instant;

use agent_memory_benchkit::{Figure, keep, keeps_figures, median, sizes};
use agent_memory_browser::{BrowserMemory, RunReport, tokenize};
use agent_memory_contract::files::FileAccess;
use agent_memory_contract::{Env, operations};
use agent_memory_core::store::browser::TrajectoryStore;
use agent_memory_core::{ManualClock, Scope, SeededIds};
use agent_memory_sqlite::SqliteStore;

#[path = "../../browser-memory/benches/workload/mod.rs"]
mod workload;

mod run_input;

use run_input::input;
use workload::{NOW, generate, report};

const WORKLOAD: &str = "W-bad";
const RUNS: usize = 2000;

fn main() {
    // `cargo test --benches` (CI's smoke run) makes a short run and keeps no figures.
    let runs = if keeps_figures() { RUNS } else { 20 };
    for n in sizes(&[1000]) {
        let w = generate(n);
        let dir = tempfile::tempdir().expect("temp dir");
        let sqlite = Arc::new(SqliteStore::open(dir.path().join("memory.db")).expect("open"));
        let scope = Scope::shared();
        for t in &w.trajectories {
            sqlite
                .trajectory_put(&scope, t, &tokenize(&t.goal))
                .expect("put");
        }
        let store: agent_memory_contract::database::Store = sqlite.clone();
        let record = operations::find("browser_record_run").expect("browser_record_run");
        let clock = ManualClock::new(NOW);
        let ids = SeededIds::new(1);
        let engine = BrowserMemory::new(&*sqlite, scope.clone(), &clock, &ids);
        let reports: Vec<(RunReport, String)> = (0..runs)
            .map(|i| {
                let r = report(&w, i);
                let text = input(
                    &r,
                    &format!(
                        "{}_contract",
                        r.manifest.as_ref().map_or("run", |m| m.run_id.as_str())
                    ),
                );
                (r, text)
            })
            .collect();
        let (mut ours, mut theirs) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
        // In turns, so that both meet the same store as it grows.
        for (r, text) in &reports {
            clock.advance(1);
            let start = Instant::now();
            engine.record_run(r).expect("record through the engine");
            theirs.push(start.elapsed().as_secs_f64() * 1e6);

            let start = Instant::now();
            let env = Env {
                client: None,
                store: &store,
                clock: Box::new(ManualClock::new(NOW)),
                ids: Box::new(agent_memory_core::RandomIds::new()),
                files: FileAccess::Any,
            };
            let answer = record
                .call_text(&env, text)
                .expect("record through the contract");
            std::hint::black_box(answer);
            ours.push(start.elapsed().as_secs_f64() * 1e6);
        }
        let engine_median = median(&mut theirs);
        let contract_median = median(&mut ours);
        keep(
            "W-bad.jsonl",
            &[
                Figure::new(
                    WORKLOAD,
                    "recorded run median through the engine on sqlite holding N trajectories, beside the contract",
                    n,
                    engine_median,
                    "us",
                ),
                Figure::new(
                    WORKLOAD,
                    "recorded run median through the contract on sqlite holding N trajectories",
                    n,
                    contract_median,
                    "us",
                )
                .against(engine_median),
            ],
        );
    }
}
