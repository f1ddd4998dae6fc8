//! Crash safety of `.agent-memory/` export: a child process exports a memory over the same
//! directory again and again, each export a new version of every file, and is killed with
//! SIGKILL at random moments. After each kill the directory must import without an error
//! (no torn or half-replaced file), hold every file, and every file must be at least as new as
//! the last export the child reported finished. Leftover temporary files are ignored.
//!
//! This binary has its own `main` (`harness = false`) because it re-executes itself as the
//! child. Kills and pauses come from a fixed seed, so a failure reproduces.
//! `AGENT_MEMORY_CRASH_KILLS` sets how many kills (default 50).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use agent_memory_browser::{MemoryRoot, export_dir, import_dir};
use agent_memory_core::store::browser::{
    RunFilter, RunManifest, RunManifestStore, RunStatus, Trajectory, TrajectoryStep,
    TrajectoryStore,
};
use agent_memory_core::testkit::crash::{CrashTest, KillLoop};
use agent_memory_core::{InMemoryStore, Scope, Timestamp};

/// Trajectory files per export.
const TRAJECTORIES: u64 = 12;
/// Manifest files per export.
const RUNS: u64 = 4;

fn main() -> ExitCode {
    CrashTest {
        name: "sigkill_never_tears_an_export",
        child,
    }
    .main(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let root = dir.path().join("agent-memory");
        // The newest version the child reported exported, over all rounds so far.
        let mut finished: Option<u64> = None;
        KillLoop::from_env(0xe4).run(&root, |path, round, lines| {
            for line in lines {
                let version = line
                    .strip_prefix("exported ")
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("round {round}: bad child line {line:?}"))?;
                finished = Some(version);
            }
            verify(path, finished).map_err(|e| format!("round {round}: {e}"))?;
            Ok(lines.len() as u64)
        })
    })
}

/// Version `seq` of round `round`: grows across rounds, so "at least as new" is `>=`.
fn version(round: u64, seq: u64) -> u64 {
    round * 1_000_000 + seq
}

/// The memory of one version: every trajectory and manifest carries the version, and each
/// trajectory is large enough (about 48 KiB) that a kill often lands inside a write.
fn memory(version: u64) -> Result<InMemoryStore, String> {
    let store = InMemoryStore::new();
    let scope = Scope::shared();
    let filler = "x".repeat(48 * 1024);
    for i in 0..TRAJECTORIES {
        let goal = format!("export crash trajectory {i}");
        let trajectory = Trajectory {
            id: format!("traj_{i}"),
            goal: goal.clone(),
            origin: Some("https://crash.test".to_owned()),
            steps: vec![TrajectoryStep {
                url: "https://crash.test/".to_owned(),
                action: format!(r#"{{"action":"type","selector":"@t1","text":"{filler}"}}"#),
                snapshot_hash: "1".to_owned(),
                verified: true,
                expected_effect: None,
            }],
            success: true,
            duration_ms: version,
            model: "m".to_owned(),
            timestamp: "2026-01-01T00:00:00.000Z".to_owned(),
            recorded_at: Some(Timestamp::from_millis(1_767_225_600_000)),
        };
        let tokens = agent_memory_browser::tokenize(&goal);
        store
            .trajectory_put(&scope, &trajectory, &tokens)
            .map_err(|e| e.to_string())?;
    }
    for i in 0..RUNS {
        store
            .run_put(
                &scope,
                &RunManifest {
                    run_id: format!("run_{i}"),
                    session_id: None,
                    parent_run_id: None,
                    status: RunStatus::Completed,
                    goal: "g".to_owned(),
                    domain: "crash.test".to_owned(),
                    start_url: None,
                    current_url: None,
                    final_url: None,
                    started_at: "2026-01-01T00:00:00.000Z".to_owned(),
                    updated_at: "2026-01-01T00:00:01.000Z".to_owned(),
                    completed_at: None,
                    success: Some(true),
                    summary: None,
                    artifact_paths: Vec::new(),
                    turn_count: u32::try_from(version)
                        .map_err(|_| format!("version {version} too large"))?,
                    result: None,
                    reason: None,
                },
            )
            .map_err(|e| e.to_string())?;
    }
    Ok(store)
}

/// The writer: exports version after version over the same directory, reporting each once
/// `export_dir` returned.
fn child(path: &Path, round: u64) -> Result<(), String> {
    let root = MemoryRoot::new(path);
    let mut out = std::io::stdout().lock();
    for seq in 0.. {
        let v = version(round, seq);
        let store = memory(v)?;
        export_dir(&store, &Scope::shared(), &root).map_err(|e| e.to_string())?;
        writeln!(out, "exported {v}").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Imports the directory after a kill and checks every file against the last finished export.
fn verify(path: &Path, finished: Option<u64>) -> Result<(), String> {
    if !path.exists() {
        return match finished {
            None => Ok(()),
            Some(v) => Err(format!("export {v} finished but the directory is gone")),
        };
    }
    let store = InMemoryStore::new();
    let scope = Scope::shared();
    import_dir(
        &store,
        &scope,
        &MemoryRoot::new(path),
        Timestamp::from_millis(1_767_225_600_000),
    )
    .map_err(|e| format!("import after kill: {e}"))?;
    let trajectories = store.trajectory_list(&scope).map_err(|e| e.to_string())?;
    let runs = store
        .run_list(&scope, &RunFilter::default())
        .map_err(|e| e.to_string())?;
    let Some(finished) = finished else {
        // Nothing finished yet: whatever is there imported whole, which is all we can ask.
        return Ok(());
    };
    if trajectories.len() as u64 != TRAJECTORIES || runs.len() as u64 != RUNS {
        return Err(format!(
            "export {finished} finished but {} trajectories and {} manifests are there",
            trajectories.len(),
            runs.len()
        ));
    }
    for t in &trajectories {
        if t.duration_ms < finished {
            return Err(format!(
                "{} is version {}, older than finished export {finished}",
                t.id, t.duration_ms
            ));
        }
    }
    for r in &runs {
        if u64::from(r.turn_count) < finished {
            return Err(format!(
                "{} is version {}, older than finished export {finished}",
                r.run_id, r.turn_count
            ));
        }
    }
    Ok(())
}
