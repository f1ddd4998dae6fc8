//! The W-bad workload generator (`workloads.md`, `w_bad.md`): one splitmix64 stream seeded
//! 42, consumed in a fixed order: 20 context parts, 10,000 facts, 10,000 selector successes,
//! 1,000 runs, N trajectories, 1,000 match queries.

#![allow(dead_code)]

use agent_memory_browser::compat::{iso, snapshot_hash};
use agent_memory_browser::{RunOutcome, RunReport, RunStart, Turn};
use agent_memory_core::store::browser::{
    FactKind, RunManifest, RunStatus, Trajectory, TrajectoryStep,
};
use agent_memory_core::{MILLIS_PER_DAY, SplitMix64, Timestamp};

/// The workload's frozen "now": 2026-01-01T00:00:00.000Z.
pub(crate) const NOW: Timestamp = Timestamp::from_millis(1_767_225_600_000);
const B36: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";

pub(crate) fn origin(j: u64) -> String {
    format!("https://site{j}.example.com")
}

fn word(i: u64) -> String {
    format!("w{i}")
}

fn goal_words(rng: &mut SplitMix64) -> Vec<String> {
    let len = 5 + rng.below(8);
    (0..len).map(|_| word(rng.below(500))).collect()
}

pub(crate) struct Run {
    pub(crate) run_id: String,
    pub(crate) domain: String,
    pub(crate) goal: String,
    pub(crate) success: bool,
    pub(crate) turn_count: u32,
    pub(crate) final_url: String,
    pub(crate) start_url: String,
}

impl Run {
    /// How the run is started in the registry.
    pub(crate) fn start(&self) -> RunStart {
        RunStart::new(&self.run_id, &self.goal, &self.domain).with_start_url(&self.start_url)
    }

    /// How the run completes.
    pub(crate) fn outcome(&self) -> RunOutcome {
        RunOutcome::new(self.success, self.turn_count).with_final_url(&self.final_url)
    }
}

pub(crate) struct Query {
    pub(crate) goal: String,
    pub(crate) origin: String,
    /// The trajectory a perturbed query was made from.
    pub(crate) base: Option<usize>,
}

pub(crate) struct Workload {
    pub(crate) parts: Vec<(String, String, i32)>,
    pub(crate) facts: Vec<(FactKind, String, String)>,
    pub(crate) selectors: Vec<(String, String)>,
    pub(crate) runs: Vec<Run>,
    pub(crate) trajectories: Vec<Trajectory>,
    pub(crate) queries: Vec<Query>,
}

pub(crate) fn generate(n: usize) -> Workload {
    let mut rng = SplitMix64::new(42);
    let parts = (0..20)
        .map(|p| {
            let priority = rng.below(101) as i32;
            let len = 100 + rng.below(901) as usize;
            let mut c = String::new();
            while c.len() < len {
                c.push_str(&word(rng.below(500)));
                c.push(' ');
            }
            c.truncate(len);
            (format!("part{p}"), c, priority)
        })
        .collect();
    let kinds = [
        FactKind::Timing,
        FactKind::Selector,
        FactKind::Pattern,
        FactKind::Quirk,
    ];
    let facts = (0..10_000)
        .map(|_| {
            let k = rng.below(200);
            let alt = rng.below(100) >= 80;
            let value = format!("value{k}-{}", if alt { "alt" } else { "main" });
            (kinds[(k % 4) as usize], format!("key{k}"), value)
        })
        .collect();
    let roles = ["button", "link", "textbox"];
    let selectors = (0..10_000)
        .map(|_| {
            let e = rng.below(300);
            let element = format!("{} \"w{e}\"", roles[(e % 3) as usize]);
            (element, format!("@e{}", rng.below(1000)))
        })
        .collect();
    let runs = (0..1000)
        .map(|i| {
            let d = rng.below(10);
            let goal = goal_words(&mut rng).join(" ");
            let success = rng.below(100) < 80;
            let turn_count = 1 + rng.below(30) as u32;
            let final_url = format!("{}/p{}", origin(d), rng.below(5));
            Run {
                run_id: format!("run_{i:06}"),
                domain: format!("site{d}.example.com"),
                goal,
                success,
                turn_count,
                final_url,
                start_url: format!("{}/", origin(d)),
            }
        })
        .collect();
    let mut trajectories = Vec::with_capacity(n);
    for _ in 0..n {
        let o = rng.below(10);
        let goal = goal_words(&mut rng).join(" ");
        let steps = (0..8)
            .map(|s| {
                let kind = rng.below(2);
                let k = rng.below(50);
                let action = if kind == 0 {
                    format!(r#"{{"action":"click","selector":"@e{k}"}}"#)
                } else {
                    format!(
                        r#"{{"action":"type","selector":"@e{k}","text":"{}"}}"#,
                        word(rng.below(500))
                    )
                };
                let url = format!("{}/p{}", origin(o), rng.below(5));
                let verified = rng.below(100) < 90;
                let snapshot = format!("page {url} step {s} ref e{k}");
                TrajectoryStep {
                    url,
                    action,
                    snapshot_hash: snapshot_hash(&snapshot).to_string(),
                    verified,
                    expected_effect: None,
                }
            })
            .collect();
        let success = rng.below(100) < 80;
        let duration_ms = 10_000 + rng.below(110_001);
        let ts = NOW.add_millis(-(rng.below(20 * MILLIS_PER_DAY as u64) as i64));
        let suffix: String = (0..6)
            .map(|_| char::from(B36[rng.below(36) as usize]))
            .collect();
        trajectories.push(Trajectory {
            id: format!("traj_{}_{suffix}", ts.as_millis()),
            goal,
            origin: Some(origin(o)),
            steps,
            success,
            duration_ms,
            model: "bench-model".to_owned(),
            timestamp: iso(ts),
            recorded_at: Some(ts),
            provenance: None,
        });
    }
    let queries = (0..1000)
        .map(|q| {
            if q % 2 == 0 {
                let o = rng.below(10);
                Query {
                    goal: goal_words(&mut rng).join(" "),
                    origin: origin(o),
                    base: None,
                }
            } else {
                let i = rng.below(n as u64) as usize;
                let mut words: Vec<String> =
                    trajectories[i].goal.split(' ').map(str::to_owned).collect();
                for _ in 0..2 {
                    let pos = rng.below(words.len() as u64) as usize;
                    words[pos] = word(rng.below(500));
                }
                Query {
                    goal: words.join(" "),
                    origin: trajectories[i].origin.clone().unwrap_or_default(),
                    base: Some(i),
                }
            }
        })
        .collect();
    Workload {
        parts,
        facts,
        selectors,
        runs,
        trajectories,
        queries,
    }
}

/// The `i`th finished run the record benches store: a trajectory's turns, two selectors and
/// the completed manifest of a run of the registry.
pub(crate) fn report(w: &Workload, i: usize) -> RunReport {
    let t = &w.trajectories[i % w.trajectories.len()];
    let run = &w.runs[i % w.runs.len()];
    let turns: Vec<Turn> = t
        .steps
        .iter()
        .map(|s| Turn {
            url: s.url.clone(),
            snapshot: s.snapshot_hash.clone(),
            action: s.action.clone(),
            verified: s.verified,
            duration_ms: t.duration_ms / 8,
            ..Turn::default()
        })
        .collect();
    RunReport::new(t.goal.clone(), run.start_url.clone())
        .with_turns(turns)
        .with_success(t.success)
        .with_model(t.model.clone())
        .with_outcome(format!("finished {}", run.goal))
        .with_selectors(vec![
            w.selectors[i % w.selectors.len()].clone(),
            w.selectors[(i + 1) % w.selectors.len()].clone(),
        ])
        .with_final_url(run.final_url.clone())
        .with_completed_manifest(RunManifest {
            run_id: format!("{}_{i}", run.run_id),
            session_id: None,
            parent_run_id: None,
            status: if t.success {
                RunStatus::Completed
            } else {
                RunStatus::Failed
            },
            goal: t.goal.clone(),
            domain: run.domain.clone(),
            start_url: Some(run.start_url.clone()),
            current_url: None,
            final_url: Some(run.final_url.clone()),
            started_at: t.timestamp.clone(),
            updated_at: t.timestamp.clone(),
            completed_at: Some(t.timestamp.clone()),
            success: Some(t.success),
            summary: None,
            artifact_paths: Vec::new(),
            turn_count: run.turn_count,
            result: None,
            reason: None,
        })
}
