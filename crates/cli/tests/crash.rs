//! Crash safety of the imports, through the command line: `agent-memory recording import` and
//! `agent-memory browser import` are killed with SIGKILL at random moments, each round a new
//! input (a JSONL file of 3,000 tool logs in three sessions, or a directory of 250 trajectories,
//! 4 sites and 4 run manifests). After every kill the database must pass `SqliteStore::check`
//! and hold every earlier round's input whole or not at all, and whole when the command
//! reported it imported. An input the kill left out is imported again, to the end: it must
//! not be refused as half there.
//!
//! This binary has its own `main` (`harness = false`), as the crash harness wants. Kills and
//! pauses come from a fixed seed; `AGENT_MEMORY_CRASH_KILLS` sets how many (default 50).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use agent_memory_core::store::browser::{RunManifestStore, SiteMemoryStore, TrajectoryStore};
use agent_memory_core::testkit::crash::{CrashTest, KillLoop};
use agent_memory_core::{Scope, SessionId, ToolLogStore};
use agent_memory_sqlite::SqliteStore;

/// Tool logs per session, and sessions per recording input.
const LOGS: usize = 1000;
const SESSIONS: [&str; 3] = ["a", "b", "c"];
/// Trajectories, sites and manifests per directory.
const TRAJECTORIES: usize = 250;
const SITES: usize = 4;
const RUNS: usize = 4;

fn main() -> ExitCode {
    CrashTest {
        name: "sigkill_never_leaves_half_an_import",
        // The children are the agent-memory binary, never this one.
        child: |_, _| Err("this test's children are agent-memory processes".to_owned()),
    }
    .main(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let work = dir.path().to_path_buf();
        let db = work.join("memory.db");
        let mut tally = Tally::default();
        prepare(&work, 0)?;
        let summary = KillLoop::from_env(0x1337).pauses(5, 250).run_commands(
            &db,
            |db, round| import_command(db, &work, round),
            |db, round, lines| {
                let outcome = verify(db, &work, round, !lines.is_empty())?;
                tally.count(outcome);
                prepare(&work, round + 1)?;
                Ok(u64::from(!lines.is_empty()))
            },
        )?;
        Ok(format!(
            "{summary}; recording import: {} whole, {} absent and imported again; browser import: {} whole, {} absent and imported again; never half",
            tally.recording.0, tally.recording.1, tally.browser.0, tally.browser.1
        ))
    })
}

/// Even rounds import tool logs, odd rounds a directory.
fn recording(round: u64) -> bool {
    round.is_multiple_of(2)
}

fn logs_file(work: &Path, round: u64) -> PathBuf {
    work.join(format!("logs-{round}.jsonl"))
}

fn memory_dir(work: &Path, round: u64) -> PathBuf {
    work.join(format!("memory-{round}"))
}

fn import_command(db: &Path, work: &Path, round: u64) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agent-memory"));
    command.arg("--db").arg(db).env_remove("AGENT_MEMORY_DB");
    if recording(round) {
        command
            .args(["recording", "import"])
            .arg(logs_file(work, round));
    } else {
        command
            .args(["browser", "import"])
            .arg(memory_dir(work, round));
    }
    command
}

fn session(round: u64, name: &str) -> String {
    format!("r{round}-{name}")
}

/// Writes round `round`'s input.
fn prepare(work: &Path, round: u64) -> Result<(), String> {
    let err = |e: std::io::Error| e.to_string();
    if recording(round) {
        let mut text = String::new();
        for i in 0..LOGS {
            for name in SESSIONS {
                let _ = writeln!(
                    text,
                    r#"{{"session":"{}","toolName":"inputText","parameters":{{"text":"{}","i":{i}}},"successful":true,"durationMs":3,"timestamp":{i},"memorySnapshot":[{{"key":"email","value":"e{i}@shop.test","writtenAt":{i}}},{{"key":"password","sensitive":true}}]}}"#,
                    session(round, name),
                    "x".repeat(200),
                );
            }
        }
        return fs::write(logs_file(work, round), text).map_err(err);
    }
    let dir = memory_dir(work, round);
    fs::create_dir_all(dir.join("agent-runs")).map_err(err)?;
    for i in 0..TRAJECTORIES {
        let step = format!(
            r#"{{"url": "https://shop{s}.test/", "action": {{"action": "type", "selector": "@t1", "text": "{filler}"}}, "snapshotHash": "1", "verified": true}}"#,
            s = i % SITES,
            filler = "y".repeat(2000)
        );
        let trajectory = format!(
            r#"{{"id": "traj_r{round}_{i}", "goal": "buy item {i} of round {round}", "origin": "https://shop{s}.test", "steps": [{step}, {step}], "success": true, "durationMs": 100, "model": "m", "timestamp": "2026-01-01T00:00:00.000Z"}}"#,
            s = i % SITES
        );
        fs::write(dir.join(format!("traj_r{round}_{i}.json")), trajectory).map_err(err)?;
    }
    for s in 0..SITES {
        let site = dir.join("domains").join(format!("r{round}-shop{s}.test"));
        fs::create_dir_all(&site).map_err(err)?;
        let knowledge = format!(
            r#"{{"domain": "https://shop{s}.test/", "facts": [{{"type": "timing", "key": "load", "value": "{s}s", "confidence": 0.6, "sources": 1, "lastSeen": "t"}}], "sessions": [], "updatedAt": "t"}}"#
        );
        fs::write(site.join("knowledge.json"), knowledge).map_err(err)?;
    }
    for r in 0..RUNS {
        let manifest = format!(
            r#"{{"runId": "run_r{round}_{r}", "status": "completed", "goal": "g", "domain": "shop.test", "startedAt": "s", "updatedAt": "u{r}"}}"#
        );
        fs::write(
            dir.join(format!("agent-runs/run_r{round}_{r}.json")),
            manifest,
        )
        .map_err(err)?;
    }
    Ok(())
}

/// How a round's input was found after its kill.
#[derive(Clone, Copy)]
struct Outcome {
    /// A `recording import` (else a `browser import`).
    recording: bool,
    /// Absent (then imported again), else whole.
    absent: bool,
}

/// `(whole, absent)` after a kill, per command.
#[derive(Default)]
struct Tally {
    recording: (u64, u64),
    browser: (u64, u64),
}

impl Tally {
    fn count(&mut self, outcome: Outcome) {
        let pair = if outcome.recording {
            &mut self.recording
        } else {
            &mut self.browser
        };
        if outcome.absent {
            pair.1 += 1;
        } else {
            pair.0 += 1;
        }
    }
}

/// How many records of each round's input the store holds, read once per kill: tool logs by
/// their session's round, trajectories, manifests and sites by the round in their names.
fn held(store: &SqliteStore, rounds: u64) -> Result<Vec<usize>, String> {
    let err = |e: agent_memory_core::Error| e.to_string();
    let mut held = vec![0; usize::try_from(rounds).map_err(|e| e.to_string())?];
    let round_of = |name: &str, prefix: &str| -> Option<usize> {
        let rest = name.strip_prefix(prefix)?;
        rest.split(['_', '-']).next()?.parse().ok()
    };
    let scope = Scope::shared();
    let names = store
        .trajectory_list(&scope)
        .map_err(err)?
        .into_iter()
        .filter_map(|t| round_of(&t.id, "traj_r"))
        .chain(
            store
                .run_list(&scope, &Default::default())
                .map_err(err)?
                .into_iter()
                .filter_map(|r| round_of(&r.run_id, "run_r")),
        )
        .chain(
            store
                .site_list(&scope)
                .map_err(err)?
                .into_iter()
                .filter_map(|s| round_of(&s, "r")),
        );
    for round in names {
        if let Some(count) = held.get_mut(round) {
            *count += 1;
        }
    }
    for round in (0..rounds).filter(|r| recording(*r)) {
        for name in SESSIONS {
            let id = SessionId::new(session(round, name)).map_err(err)?;
            let logs = store.list_tool_logs(&id).map_err(err)?.len();
            held[usize::try_from(round).map_err(|e| e.to_string())?] += logs;
        }
    }
    Ok(held)
}

/// The records of round `round`'s input.
fn whole(round: u64) -> usize {
    if recording(round) {
        LOGS * SESSIONS.len()
    } else {
        TRAJECTORIES + RUNS + SITES
    }
}

/// Checks the database after the kill of round `round` (`reported`: the command printed its
/// report, so it had committed), then imports the round's input again if it is absent.
fn verify(db: &Path, work: &Path, round: u64, reported: bool) -> Result<Outcome, String> {
    let at = |e: String| format!("round {round}: {e}");
    if !db.exists() {
        // Killed before SQLite created the file: nothing to check yet.
        return retry(db, work, round).map_err(at);
    }
    let store = SqliteStore::open(db).map_err(|e| at(format!("reopen: {e}")))?;
    let findings = store.check().map_err(|e| at(e.to_string()))?;
    if !findings.is_empty() {
        return Err(at(format!("check: {findings:#?}")));
    }
    let held = held(&store, round + 1).map_err(at)?;
    for (earlier, found) in (0..=round).zip(held.iter().copied()) {
        if found != 0 && found != whole(earlier) {
            return Err(at(format!(
                "round {earlier}'s input is half there: {found} of {} records",
                whole(earlier)
            )));
        }
        if earlier < round && found == 0 {
            return Err(at(format!("round {earlier}'s input is gone")));
        }
    }
    let found = held.last().copied().unwrap_or(0);
    drop(store);
    if found == 0 {
        if reported {
            return Err(at(
                "the command reported its import, but none of it is there".to_owned(),
            ));
        }
        return retry(db, work, round).map_err(at);
    }
    Ok(Outcome {
        recording: recording(round),
        absent: false,
    })
}

/// Runs round `round`'s import to the end: it must succeed and store the input whole.
fn retry(db: &Path, work: &Path, round: u64) -> Result<Outcome, String> {
    let output = import_command(db, work, round)
        .output()
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(format!(
            "importing again after the kill failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let store = SqliteStore::open(db).map_err(|e| e.to_string())?;
    let found = held(&store, round + 1)?.last().copied().unwrap_or(0);
    if found != whole(round) {
        return Err(format!(
            "imported again, {found} of {} records are there",
            whole(round)
        ));
    }
    Ok(Outcome {
        recording: recording(round),
        absent: true,
    })
}
