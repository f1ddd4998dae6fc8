//! Crash safety of `.agent-memory/` export and import.
//!
//! Export: a child process exports a memory over the same directory again and again, each
//! export a new version of every file, and is killed with SIGKILL at random moments. After
//! each kill the directory must import without an error (no torn or half-replaced file), hold
//! every file, and every file must be at least as new as the last export the child reported
//! finished. Leftover temporary files are ignored.
//!
//! Import: a child process imports directory after directory into one SQLite file (each a new
//! version: new trajectory ids and manifests) and is killed at random moments. After each kill
//! the file must pass `SqliteStore::check`, every directory the child reported imported must be
//! there whole, and every other directory whole or not at all.
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
use agent_memory_sqlite::SqliteStore;

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
        let exported = export_loop()?;
        let imported = import_loop()?;
        Ok(format!("export: {exported}; import: {imported}"))
    })
}

/// The child: imports when its path is a database file, exports otherwise.
fn child(path: &Path, round: u64) -> Result<(), String> {
    if path.extension().is_some_and(|e| e == "db") {
        import_child(path, round)
    } else {
        export_child(path, round)
    }
}

fn export_loop() -> Result<String, String> {
    {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let root = dir.path().join("agent-memory");
        // The newest version the child reported exported, over all rounds so far.
        let mut finished: Option<u64> = None;
        KillLoop::from_env(0xe4)
            .pauses(20, 600)
            .run(&root, |path, round, lines| {
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
    }
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
            provenance: None,
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
                None,
            )
            .map_err(|e| e.to_string())?;
    }
    Ok(store)
}

/// The writer: exports version after version over the same directory, reporting each once
/// `export_dir` returned.
fn export_child(path: &Path, round: u64) -> Result<(), String> {
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
        None,
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

/// Directories per import round are written next to the database, one per version.
fn import_dir_of(db: &Path, version: u64) -> std::path::PathBuf {
    db.with_file_name(format!("import-{version}"))
}

/// The trajectory ids of an imported version: `traj_<version>_<i>`.
fn import_version(id: &str) -> Option<u64> {
    id.strip_prefix("traj_")?.split('_').next()?.parse().ok()
}

/// Directories each import round's child imports.
const DIRECTORIES_PER_ROUND: u64 = 8;

/// Writes the directories of `round` next to the database (before its child starts, so the
/// child spends its time importing): version after version, each the same memory under ids of
/// its own, so versions never replace each other.
fn prepare_round(db: &Path, round: u64) -> Result<(), String> {
    let scope = Scope::shared();
    for seq in 0..DIRECTORIES_PER_ROUND {
        let v = version(round, seq);
        let memory = memory(v)?;
        let renamed = InMemoryStore::new();
        for mut t in memory.trajectory_list(&scope).map_err(|e| e.to_string())? {
            t.id = format!("traj_{v}_{}", t.id.trim_start_matches("traj_"));
            let tokens = agent_memory_browser::tokenize(&t.goal);
            renamed
                .trajectory_put(&scope, &t, &tokens)
                .map_err(|e| e.to_string())?;
        }
        for mut run in memory
            .run_list(&scope, &RunFilter::default())
            .map_err(|e| e.to_string())?
        {
            run.run_id = format!("run_{v}_{}", run.run_id.trim_start_matches("run_"));
            renamed
                .run_put(&scope, &run, None)
                .map_err(|e| e.to_string())?;
        }
        export_dir(&renamed, &scope, &MemoryRoot::new(import_dir_of(db, v)))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The writer: imports the directories of its round one after another into the database,
/// saying "importing v" before each and "imported v" once `import_dir` returned.
fn import_child(db: &Path, round: u64) -> Result<(), String> {
    let store = SqliteStore::open(db).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    for seq in 0..DIRECTORIES_PER_ROUND {
        let v = version(round, seq);
        writeln!(out, "importing {v}").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
        import_dir(
            &store,
            &Scope::shared(),
            &MemoryRoot::new(import_dir_of(db, v)),
            Timestamp::from_millis(1_767_225_600_000),
            None,
        )
        .map_err(|e| e.to_string())?;
        writeln!(out, "imported {v}").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn import_loop() -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let db = dir.path().join("memory.db");
    prepare_round(&db, 0)?;
    let mut reported: Vec<u64> = Vec::new();
    let mut absent = std::collections::BTreeSet::new();
    // Kills that landed inside `import_dir`: after "importing v", before "imported v".
    let mut inside = 0u64;
    let summary = KillLoop::from_env(0x1e4)
        .pauses(20, 400)
        .run(&db, |path, round, lines| {
            let bad = |line: &str| format!("round {round}: bad child line {line:?}");
            let mut started = None;
            for line in lines {
                if let Some(v) = line.strip_prefix("importing ") {
                    started = Some(v.parse::<u64>().map_err(|_| bad(line))?);
                    continue;
                }
                let version = line
                    .strip_prefix("imported ")
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| bad(line))?;
                reported.push(version);
                started = None;
            }
            inside += u64::from(started.is_some());
            absent
                .extend(verify_import(path, &reported).map_err(|e| format!("round {round}: {e}"))?);
            prepare_round(path, round + 1)?;
            Ok(lines.iter().filter(|l| l.starts_with("imported ")).count() as u64)
        })?;
    Ok(format!(
        "{summary}, {inside} kills inside an import, {} directories left out whole, none half-imported",
        absent.len()
    ))
}

/// Checks the database after a kill: sound, every reported version whole, every version
/// whole or absent. Returns the versions of the finished rounds that are absent (the kill
/// came before their commit).
fn verify_import(db: &Path, reported: &[u64]) -> Result<Vec<u64>, String> {
    if !db.exists() {
        return Ok(Vec::new());
    }
    let store = SqliteStore::open(db).map_err(|e| format!("reopen: {e}"))?;
    let findings = store.check().map_err(|e| e.to_string())?;
    if !findings.is_empty() {
        return Err(format!("check: {findings:#?}"));
    }
    let scope = Scope::shared();
    let mut trajectories: std::collections::BTreeMap<u64, u64> = Default::default();
    for t in store.trajectory_list(&scope).map_err(|e| e.to_string())? {
        let v = import_version(&t.id).ok_or(format!("unexpected id {:?}", t.id))?;
        *trajectories.entry(v).or_default() += 1;
    }
    let mut runs: std::collections::BTreeMap<u64, u64> = Default::default();
    for r in store
        .run_list(&scope, &RunFilter::default())
        .map_err(|e| e.to_string())?
    {
        let v = r
            .run_id
            .strip_prefix("run_")
            .and_then(|rest| rest.split('_').next())
            .and_then(|v| v.parse().ok())
            .ok_or(format!("unexpected run id {:?}", r.run_id))?;
        *runs.entry(v).or_default() += 1;
    }
    for (v, count) in &trajectories {
        let manifests = runs.get(v).copied().unwrap_or(0);
        if *count != TRAJECTORIES || manifests != RUNS {
            return Err(format!(
                "version {v} is half-imported: {count} of {TRAJECTORIES} trajectories, {manifests} of {RUNS} manifests"
            ));
        }
    }
    if let Some(v) = runs.keys().find(|v| !trajectories.contains_key(v)) {
        return Err(format!("version {v} has manifests but no trajectories"));
    }
    for v in reported {
        if !trajectories.contains_key(v) {
            return Err(format!("version {v} was reported imported but is missing"));
        }
    }
    // Versions whose directory exists but whose import did not commit.
    let mut absent = Vec::new();
    for entry in std::fs::read_dir(db.parent().ok_or("no folder")?).map_err(|e| e.to_string())? {
        let name = entry.map_err(|e| e.to_string())?.file_name();
        let Some(v) = name
            .to_str()
            .and_then(|n| n.strip_prefix("import-"))
            .and_then(|v| v.parse::<u64>().ok())
        else {
            continue;
        };
        if !trajectories.contains_key(&v) {
            absent.push(v);
        }
    }
    Ok(absent)
}
