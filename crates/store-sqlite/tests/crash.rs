//! Crash safety: a child process writes through `SqliteStore` and is killed with SIGKILL at
//! random moments; after each kill the file must open, pass `PRAGMA integrity_check`, and hold
//! every write the child reported as committed (in this round and every earlier one), with
//! nothing half-written visible.
//!
//! The child cycles through every kind of write the store takes: metadata batches, episode
//! batches, tool logs, session event batches, finished browser runs (trajectory, site
//! observation and manifest in one call), and the two batches the imports use: a batch of
//! tool logs into a new session (`recording import`) and a memory image of trajectories and a
//! run manifest (`browser import`). Each multi-row write carries its own row count, so the
//! check can tell a whole write from a torn one. The file's soundness is judged by
//! `SqliteStore::check` (SQLite's integrity check plus the store's own invariants).
//!
//! This binary has its own `main` (`harness = false`) because it re-executes itself as the
//! child: with `AGENT_MEMORY_CRASH_CHILD=<db path>` set, it is the writer. Kills and pauses come
//! from a fixed seed, so a failure reproduces. `AGENT_MEMORY_CRASH_KILLS` sets how many kills
//! (default 50).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use agent_memory_core::store::browser::{
    BrowserStore, FactKind, FactObservation, FinishedRun, MemoryImage, RunFilter, RunManifest,
    RunManifestStore, RunStatus, SiteObservation, Trajectory, TrajectoryStep, TrajectoryStore,
};
use agent_memory_core::store::tool_log::ToolLog;
use agent_memory_core::store::trajectory::{Fingerprint, NewEpisode};
use agent_memory_core::testkit::crash::{CrashTest, KillLoop};
use agent_memory_core::{
    EpisodeStore, MetaKey, MetaStore, Partition, Scope, SessionEvent, SessionId, SessionStore,
    SplitMix64, Timestamp, ToolLogStore,
};
use agent_memory_sqlite::SqliteStore;

fn main() -> ExitCode {
    CrashTest {
        name: "sigkill_loses_no_committed_write",
        child,
    }
    .main(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        // Every round checks the writes of all earlier rounds too.
        let mut history: Vec<Committed> = Vec::new();
        KillLoop::from_env(0x5eed).run(&dir.path().join("memory.db"), |path, round, lines| {
            for line in lines {
                history.push(Committed::parse(line).map_err(|e| format!("round {round}: {e}"))?);
            }
            verify(path, round, &history).map_err(|e| format!("round {round}: {e}"))?;
            Ok(lines.len() as u64)
        })
    })
}

/// The kinds of write, in the order the child cycles through them.
const KINDS: [&str; 7] = [
    "meta",
    "episodes",
    "tool_log",
    "events",
    "run",
    "tool_logs",
    "image",
];

/// One write the child reported as committed.
#[derive(Debug, Clone, Copy)]
struct Committed {
    kind: usize,
    round: u64,
    seq: u64,
    rows: u64,
}

impl Committed {
    fn line(&self) -> String {
        format!(
            "committed {} {} {} {}",
            KINDS[self.kind], self.round, self.seq, self.rows
        )
    }

    fn parse(line: &str) -> Result<Committed, String> {
        let bad = || format!("bad child line {line:?}");
        let fields: Vec<&str> = line
            .strip_prefix("committed ")
            .ok_or_else(bad)?
            .split(' ')
            .collect();
        let [kind, round, seq, rows] = fields[..] else {
            return Err(bad());
        };
        Ok(Committed {
            kind: KINDS.iter().position(|k| *k == kind).ok_or_else(bad)?,
            round: round.parse().map_err(|_| bad())?,
            seq: seq.parse().map_err(|_| bad())?,
            rows: rows.parse().map_err(|_| bad())?,
        })
    }
}

fn partition() -> Partition {
    Partition::new("crash").expect("valid partition")
}

fn session(round: u64) -> SessionId {
    SessionId::new(format!("crash-{round}")).expect("valid session id")
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The writer: commits writes of every kind forever, reporting each on stdout once the call
/// returned.
fn child(path: &Path, round: u64) -> Result<(), String> {
    let store = SqliteStore::open(path).map_err(err)?;
    let mut out = std::io::stdout().lock();
    let mut rng = SplitMix64::new(round);
    for seq in 0.. {
        let kind = (seq % KINDS.len() as u64) as usize;
        let rows = match KINDS[kind] {
            "meta" | "episodes" | "events" | "tool_logs" | "image" => 1 + rng.below(8),
            _ => 1,
        };
        let write = Committed {
            kind,
            round,
            seq,
            rows,
        };
        match KINDS[kind] {
            "meta" => {
                let keys: Vec<MetaKey> = (0..rows)
                    .map(|i| MetaKey::new(format!("crash/{round}/{seq}/{i}")))
                    .collect::<Result<_, _>>()
                    .map_err(err)?;
                let value = rows.to_string();
                let entries: Vec<(&MetaKey, &str)> =
                    keys.iter().map(|k| (k, value.as_str())).collect();
                store.meta_set_all(&entries).map_err(err)?;
            }
            "episodes" => {
                let fingerprint = Fingerprint::new([
                    ("round", round.to_string()),
                    ("seq", seq.to_string()),
                    ("rows", rows.to_string()),
                ])
                .map_err(err)?;
                let episodes: Vec<NewEpisode> = (0..rows)
                    .map(|i| NewEpisode {
                        partition: partition(),
                        fingerprint: fingerprint.clone(),
                        trajectory: vec![format!("step{i}"), "done".to_owned()],
                        outcome: r#"{"success":true}"#.to_owned(),
                        recorded_at: Timestamp::from_millis(seq as i64),
                    })
                    .collect();
                store.append_episodes(&episodes).map_err(err)?;
            }
            "tool_log" => {
                store
                    .append_tool_log(&ToolLog {
                        session: session(round),
                        tool_name: "inputText".to_owned(),
                        parameters: format!(r#"{{"seq":{seq}}}"#),
                        success: true,
                        error: None,
                        duration_ms: 3,
                        timestamp: Timestamp::from_millis(seq as i64),
                        trace_id: None,
                        memory_snapshot: None,
                    })
                    .map_err(err)?;
            }
            "events" => {
                let events: Vec<SessionEvent> = (0..rows)
                    .map(|i| SessionEvent::new("turn", format!("{seq}/{i}/{rows}")))
                    .collect();
                store
                    .session_append(&session(round), &events)
                    .map_err(err)?;
            }
            "tool_logs" => {
                let logs: Vec<ToolLog> = (0..rows)
                    .map(|i| ToolLog {
                        session: batch_session(round, seq),
                        tool_name: "inputText".to_owned(),
                        parameters: format!(r#"{{"rows":{rows},"i":{i}}}"#),
                        success: true,
                        error: None,
                        duration_ms: 3,
                        timestamp: Timestamp::from_millis(seq as i64),
                        trace_id: None,
                        memory_snapshot: None,
                    })
                    .collect();
                store.import_tool_logs(&logs).map_err(err)?;
            }
            "image" => {
                store
                    .store_image(&Scope::shared(), &image(round, seq, rows))
                    .map_err(err)?;
            }
            _ => store
                .record_run(&Scope::shared(), &finished_run(round, seq))
                .map_err(err)?,
        }
        writeln!(out, "{}", write.line()).map_err(err)?;
        out.flush().map_err(err)?;
    }
    Ok(())
}

/// The session of a batch of tool logs: a new one per write, as `recording import` needs.
fn batch_session(round: u64, seq: u64) -> SessionId {
    SessionId::new(format!("batch-{round}-{seq}")).expect("valid session id")
}

/// A memory image of `rows` trajectories (`img-<round>-<seq>-<i>-of-<rows>`) and one run
/// manifest (`imgrun-<round>-<seq>-of-<rows>`), with steps large enough that a kill often
/// lands inside the write.
fn image(round: u64, seq: u64, rows: u64) -> MemoryImage {
    let run = finished_run(round, seq);
    let trajectories = (0..rows)
        .map(|i| {
            let mut t = run.trajectory.clone();
            t.id = format!("img-{round}-{seq}-{i}-of-{rows}");
            t.steps[0].action = format!(r#"{{"action":"type","text":"{}"}}"#, "x".repeat(4096));
            (t, vec!["image".to_owned(), format!("{round}x{seq}")])
        })
        .collect();
    let mut manifest = run.manifest.expect("finished runs have a manifest");
    manifest.run_id = format!("imgrun-{round}-{seq}-of-{rows}");
    MemoryImage {
        trajectories,
        runs: vec![manifest],
        ..MemoryImage::default()
    }
}

fn finished_run(round: u64, seq: u64) -> FinishedRun {
    let goal = format!("crash round {round} write {seq}");
    FinishedRun {
        trajectory: Trajectory {
            id: format!("traj-{round}-{seq}"),
            goal: goal.clone(),
            origin: Some("https://crash.test".to_owned()),
            steps: vec![TrajectoryStep {
                url: "https://crash.test/".to_owned(),
                action: r#"{"action":"click","selector":"@b1"}"#.to_owned(),
                snapshot_hash: "1".to_owned(),
                verified: true,
                expected_effect: None,
            }],
            success: true,
            duration_ms: 10,
            model: "m".to_owned(),
            timestamp: "2026-01-01T00:00:00.000Z".to_owned(),
            recorded_at: Some(Timestamp::from_millis(1_767_225_600_000)),
        },
        tokens: vec!["crash".to_owned(), format!("{round}"), format!("{seq}")],
        site: SiteObservation {
            site: "crash.test".to_owned(),
            label: "crash".to_owned(),
            session: None,
            facts: vec![FactObservation {
                kind: FactKind::Timing,
                key: "page-load".to_owned(),
                value: format!("{seq}ms"),
            }],
            selectors: vec![("button \"Go\"".to_owned(), "@b1".to_owned())],
            observed_at: format!("o{round}-{seq}"),
        },
        manifest: Some(RunManifest {
            run_id: format!("run-{round}-{seq}"),
            session_id: None,
            parent_run_id: None,
            status: RunStatus::Completed,
            goal,
            domain: "crash.test".to_owned(),
            start_url: None,
            current_url: None,
            final_url: None,
            started_at: "s".to_owned(),
            updated_at: format!("u{round:04}-{seq:08}"),
            completed_at: None,
            success: Some(true),
            summary: None,
            artifact_paths: Vec::new(),
            turn_count: 1,
            result: None,
            reason: None,
        }),
    }
}

/// What the file holds, per kind: `(round, seq)` to the number of rows found and the row
/// count the write itself declared.
type Found = BTreeMap<(u64, u64), (u64, u64)>;

/// `(round, seq, rows)` of an image record's id `<prefix><round>-<seq>-[<i>-]of-<rows>`.
fn image_ids(id: &str, prefix: &str) -> Result<(u64, u64, u64), String> {
    let bad = || format!("unexpected image id {id:?}");
    let rest = id.strip_prefix(prefix).ok_or_else(bad)?;
    let (head, rows) = rest.split_once("-of-").ok_or_else(bad)?;
    let mut parts = head.split('-');
    let num = |p: Option<&str>| p.and_then(|p| p.parse().ok()).ok_or_else(bad);
    Ok((
        num(parts.next())?,
        num(parts.next())?,
        rows.parse().map_err(|_| bad())?,
    ))
}

/// Reads everything the child may have written in rounds `0..=round`.
fn stored(store: &SqliteStore, round: u64, history: &[Committed]) -> Result<[Found; 7], String> {
    let mut found: [Found; 7] = Default::default();
    let num = |s: &str| s.parse::<u64>().map_err(|_| format!("not a number: {s:?}"));
    for (key, value) in store.meta_list("crash/").map_err(err)? {
        let parts: Vec<&str> = key.as_str().split('/').collect();
        let entry = found[0]
            .entry((num(parts[1])?, num(parts[2])?))
            .or_insert((0, num(&value)?));
        entry.0 += 1;
    }
    for episode in store
        .episodes_after(&partition(), 0, usize::MAX)
        .map_err(err)?
    {
        let fp = &episode.episode.fingerprint;
        let field = |f: &str| num(fp.get(f).unwrap_or_default());
        let entry = found[1]
            .entry((field("round")?, field("seq")?))
            .or_insert((0, field("rows")?));
        entry.0 += 1;
    }
    let sessions: BTreeSet<String> = store
        .session_list()
        .map_err(err)?
        .into_iter()
        .map(|s| s.id.as_str().to_owned())
        .collect();
    for r in 0..=round {
        for log in store.list_tool_logs(&session(r)).map_err(err)? {
            let seq = log
                .parameters
                .trim_start_matches(r#"{"seq":"#)
                .trim_end_matches('}');
            found[2].entry((r, num(seq)?)).or_insert((0, 1)).0 += 1;
        }
        if sessions.contains(session(r).as_str()) {
            for event in store.session_load(&session(r)).map_err(err)? {
                let parts: Vec<&str> = event.payload.split('/').collect();
                let entry = found[3]
                    .entry((r, num(parts[0])?))
                    .or_insert((0, num(parts[2])?));
                entry.0 += 1;
            }
        }
    }
    // A run is whole when its trajectory and its manifest are both there.
    let scope = Scope::shared();
    let ids = |id: &str, prefix: &str| -> Result<(u64, u64), String> {
        let rest = id
            .strip_prefix(prefix)
            .ok_or(format!("unexpected id {id:?}"))?;
        let (r, s) = rest
            .split_once('-')
            .ok_or(format!("unexpected id {id:?}"))?;
        Ok((num(r)?, num(s)?))
    };
    // An image is whole when its trajectories and its manifest are all there.
    for trajectory in store.trajectory_list(&scope).map_err(err)? {
        if trajectory.id.starts_with("img-") {
            let (r, s, rows) = image_ids(&trajectory.id, "img-")?;
            found[6].entry((r, s)).or_insert((0, rows + 1)).0 += 1;
            continue;
        }
        found[4]
            .entry(ids(&trajectory.id, "traj-")?)
            .or_insert((0, 2))
            .0 += 1;
    }
    for manifest in store.run_list(&scope, &RunFilter::default()).map_err(err)? {
        if manifest.run_id.starts_with("imgrun-") {
            let (r, s, rows) = image_ids(&manifest.run_id, "imgrun-")?;
            found[6].entry((r, s)).or_insert((0, rows + 1)).0 += 1;
            continue;
        }
        found[4]
            .entry(ids(&manifest.run_id, "run-")?)
            .or_insert((0, 2))
            .0 += 1;
    }
    // Batches of tool logs, each in its own session: every write the child may have reached
    // (it cycles through the kinds, so up to one cycle past the last one reported).
    let batch = KINDS
        .iter()
        .position(|k| *k == "tool_logs")
        .ok_or("no batch kind")?;
    for r in 0..=round {
        let last = history
            .iter()
            .filter(|c| c.round == r)
            .map(|c| c.seq)
            .max()
            .unwrap_or(0);
        for seq in
            (0..=last + 2 * KINDS.len() as u64).filter(|s| *s % KINDS.len() as u64 == batch as u64)
        {
            for log in store.list_tool_logs(&batch_session(r, seq)).map_err(err)? {
                let rows = log
                    .parameters
                    .strip_prefix(r#"{"rows":"#)
                    .and_then(|rest| rest.split(',').next())
                    .ok_or(format!("unexpected batch log {:?}", log.parameters))?;
                found[5].entry((r, seq)).or_insert((0, num(rows)?)).0 += 1;
            }
        }
    }
    Ok(found)
}

/// Checks the file after the kill of `round` against every write reported so far.
fn verify(path: &Path, round: u64, history: &[Committed]) -> Result<(), String> {
    let store = SqliteStore::open(path).map_err(|e| format!("reopen: {e}"))?;
    let findings = store.check().map_err(err)?;
    if !findings.is_empty() {
        return Err(format!("check: {findings:#?}"));
    }
    let found = stored(&store, round, history)?;
    for write in history {
        let want = match KINDS[write.kind] {
            "run" => 2,
            "image" => write.rows + 1,
            _ => write.rows,
        };
        match found[write.kind].get(&(write.round, write.seq)) {
            Some((rows, _)) if *rows == want => {}
            Some((rows, _)) => {
                return Err(format!(
                    "committed {} write {}/{} has {rows} of {want} rows",
                    KINDS[write.kind], write.round, write.seq
                ));
            }
            None => {
                return Err(format!(
                    "committed {} write {}/{} is missing",
                    KINDS[write.kind], write.round, write.seq
                ));
            }
        }
    }
    // Nothing half-written: every write present is present whole, reported or not (the kill
    // may land between the commit and the report).
    for (kind, writes) in found.iter().enumerate() {
        for ((r, s), (rows, declared)) in writes {
            if rows != declared {
                return Err(format!(
                    "{} write {r}/{s} is half-written ({rows} of {declared} rows)",
                    KINDS[kind]
                ));
            }
        }
    }
    Ok(())
}
