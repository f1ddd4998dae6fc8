//! The writer and the check of a crash test, for any store that implements the store traits.
//!
//! The writer cycles through every kind of write the stores take: metadata batches, episode
//! batches, tool logs, session event batches, a batch of tool logs into a new session (what
//! `recording import` writes) and, when the store has browser memory, finished browser runs
//! (trajectory, site observation and manifest in one call) and memory images of trajectories
//! and a run manifest (what `browser import` writes). It prints one line per write once the
//! call returned (`committed <kind> <round> <seq> <rows>`), or, when told to go on after an
//! error, one line per failed write (`failed <kind> <round> <seq> <rows>: <error>`). Each
//! multi-row write carries its own row count, so the check can tell a whole write from a torn
//! one.
//!
//! The [`Ledger`] collects those lines round after round and checks a store against them:
//! every committed write present and whole, and every write present (committed, failed, or
//! cut short by the kill before it was reported) whole.
//!
//! ```
//! use agent_memory_core::InMemoryStore;
//! use agent_memory_core::testkit::crash::writes::{Ledger, OnError, Stores, write};
//!
//! let store = InMemoryStore::new();
//! let stores = Stores::with_browser(&store);
//! let mut out = Vec::new();
//! write(&stores, 0, OnError::Stop, Some(20), &mut out).expect("writes");
//! let lines: Vec<String> = String::from_utf8(out).unwrap().lines().map(str::to_owned).collect();
//! let mut ledger = Ledger::default();
//! assert_eq!(ledger.record(&lines).expect("parses"), 20);
//! ledger.verify(&stores, 0).expect("every write whole");
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use crate::store::browser::{
    BrowserStore, FactKind, FactObservation, FinishedRun, MemoryImage, RunFilter, RunManifest,
    RunStatus, SiteObservation, Trajectory, TrajectoryStep,
};
use crate::store::tool_log::ToolLog;
use crate::store::trajectory::{Fingerprint, NewEpisode};
use crate::{
    EpisodeStore, MetaKey, MetaStore, Partition, Scope, SessionEvent, SessionId, SessionStore,
    SplitMix64, Timestamp, ToolLogStore,
};

/// The stores a crash test writes to and checks: one store seen through each trait.
#[derive(Clone, Copy)]
pub struct Stores<'a> {
    /// Metadata.
    pub meta: &'a dyn MetaStore,
    /// Episodes.
    pub episodes: &'a dyn EpisodeStore,
    /// Session event logs.
    pub sessions: &'a dyn SessionStore,
    /// Tool logs.
    pub tool_logs: &'a dyn ToolLogStore,
    /// Browser memory, when the store has it; without it the browser writes are left out.
    pub browser: Option<&'a dyn BrowserStore>,
}

impl<'a> Stores<'a> {
    /// Every trait but browser memory.
    pub fn core<S: MetaStore + EpisodeStore + SessionStore + ToolLogStore>(store: &'a S) -> Self {
        Stores {
            meta: store,
            episodes: store,
            sessions: store,
            tool_logs: store,
            browser: None,
        }
    }

    /// Every trait, browser memory included.
    pub fn with_browser<S>(store: &'a S) -> Self
    where
        S: MetaStore + EpisodeStore + SessionStore + ToolLogStore + BrowserStore,
    {
        Stores {
            browser: Some(store),
            ..Stores::core(store)
        }
    }

    /// The kinds of write these stores take, in the order the writer cycles through them.
    pub fn kinds(&self) -> &'static [Kind] {
        if self.browser.is_some() {
            &Kind::ALL
        } else {
            &Kind::CORE
        }
    }
}

/// A kind of write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A batch of metadata entries (`meta_set_all`).
    Meta,
    /// A batch of episodes (`append_episodes`).
    Episodes,
    /// One tool log (`append_tool_log`).
    ToolLog,
    /// A batch of session events (`session_append`).
    Events,
    /// A finished browser run (`record_run`): a trajectory and a manifest among others.
    Run,
    /// A batch of tool logs into a new session (`import_tool_logs`).
    ToolLogs,
    /// A memory image of trajectories and a run manifest (`store_image`).
    Image,
}

impl Kind {
    /// Every kind, in the writer's order.
    pub const ALL: [Kind; 7] = [
        Kind::Meta,
        Kind::Episodes,
        Kind::ToolLog,
        Kind::Events,
        Kind::Run,
        Kind::ToolLogs,
        Kind::Image,
    ];

    /// The kinds a store without browser memory takes, in the writer's order.
    pub const CORE: [Kind; 5] = [
        Kind::Meta,
        Kind::Episodes,
        Kind::ToolLog,
        Kind::Events,
        Kind::ToolLogs,
    ];

    /// The kind's name in the writer's lines.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Meta => "meta",
            Kind::Episodes => "episodes",
            Kind::ToolLog => "tool_log",
            Kind::Events => "events",
            Kind::Run => "run",
            Kind::ToolLogs => "tool_logs",
            Kind::Image => "image",
        }
    }

    fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// What the writer does when a write fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// Stop and return the error (a store that should not fail, as when only the client is
    /// killed).
    Stop,
    /// Report the write as failed and go on with the next one (the server is being stopped
    /// and restarted under the writer).
    Report,
}

/// One write of the writer, as its line names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Written {
    kind: Kind,
    round: u64,
    seq: u64,
    rows: u64,
}

impl Written {
    fn fields(&self) -> String {
        format!(
            "{} {} {} {}",
            self.kind.name(),
            self.round,
            self.seq,
            self.rows
        )
    }

    /// A writer's line: whether the write committed, and the write.
    fn parse(line: &str) -> Result<(bool, Written), String> {
        let bad = || format!("bad writer line {line:?}");
        let (committed, rest) = if let Some(rest) = line.strip_prefix("committed ") {
            (true, rest)
        } else if let Some(rest) = line.strip_prefix("failed ") {
            (false, rest.split(':').next().unwrap_or_default())
        } else {
            return Err(bad());
        };
        let fields: Vec<&str> = rest.split(' ').collect();
        let [kind, round, seq, rows] = fields[..] else {
            return Err(bad());
        };
        Ok((
            committed,
            Written {
                kind: Kind::parse(kind).ok_or_else(bad)?,
                round: round.parse().map_err(|_| bad())?,
                seq: seq.parse().map_err(|_| bad())?,
                rows: rows.parse().map_err(|_| bad())?,
            },
        ))
    }

    /// How many records the check finds for this write when it is whole.
    fn records(&self) -> u64 {
        match self.kind {
            Kind::Run => 2,
            Kind::Image => self.rows + 1,
            _ => self.rows,
        }
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn partition() -> Partition {
    Partition::new("crash").expect("valid partition")
}

fn session(round: u64) -> SessionId {
    SessionId::new(format!("crash-{round}")).expect("valid session id")
}

/// The session of a batch of tool logs: a new one per write, as `recording import` needs.
fn batch_session(round: u64, seq: u64) -> SessionId {
    SessionId::new(format!("batch-{round}-{seq}")).expect("valid session id")
}

/// The writer of round `round` (also its seed): makes `writes` writes (forever with `None`)
/// through `stores`, printing one line per write to `out` once the call returned.
pub fn write(
    stores: &Stores<'_>,
    round: u64,
    on_error: OnError,
    writes: Option<u64>,
    out: &mut dyn Write,
) -> Result<(), String> {
    let kinds = stores.kinds();
    let mut rng = SplitMix64::new(round);
    for seq in 0..writes.unwrap_or(u64::MAX) {
        let kind = kinds[(seq % kinds.len() as u64) as usize];
        let rows = match kind {
            Kind::Meta | Kind::Episodes | Kind::Events | Kind::ToolLogs | Kind::Image => {
                1 + rng.below(8)
            }
            Kind::ToolLog | Kind::Run => 1,
        };
        let write = Written {
            kind,
            round,
            seq,
            rows,
        };
        match write_one(stores, &write) {
            Ok(()) => writeln!(out, "committed {}", write.fields()).map_err(err)?,
            Err(e) if on_error == OnError::Report => {
                writeln!(out, "failed {}: {}", write.fields(), e.replace('\n', " "))
                    .map_err(err)?;
            }
            Err(e) => return Err(format!("{} write {round}/{seq}: {e}", kind.name())),
        }
        out.flush().map_err(err)?;
    }
    Ok(())
}

/// Makes one write.
fn write_one(stores: &Stores<'_>, write: &Written) -> Result<(), String> {
    let Written {
        kind,
        round,
        seq,
        rows,
    } = *write;
    let browser = || {
        stores
            .browser
            .ok_or_else(|| format!("{} writes need browser memory", kind.name()))
    };
    match kind {
        Kind::Meta => {
            let keys: Vec<MetaKey> = (0..rows)
                .map(|i| MetaKey::new(format!("crash/{round}/{seq}/{i}")))
                .collect::<Result<_, _>>()
                .map_err(err)?;
            let value = rows.to_string();
            let entries: Vec<(&MetaKey, &str)> = keys.iter().map(|k| (k, value.as_str())).collect();
            stores.meta.meta_set_all(&entries).map_err(err)
        }
        Kind::Episodes => {
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
                    provenance: None,
                })
                .collect();
            stores
                .episodes
                .append_episodes(&episodes)
                .map(drop)
                .map_err(err)
        }
        Kind::ToolLog => stores
            .tool_logs
            .append_tool_log(&tool_log(
                session(round),
                format!(r#"{{"seq":{seq}}}"#),
                seq,
            ))
            .map_err(err),
        Kind::Events => {
            let events: Vec<SessionEvent> = (0..rows)
                .map(|i| SessionEvent::new("turn", format!("{seq}/{i}/{rows}")))
                .collect();
            stores
                .sessions
                .session_append(&session(round), &events)
                .map(drop)
                .map_err(err)
        }
        Kind::ToolLogs => {
            let logs: Vec<ToolLog> = (0..rows)
                .map(|i| {
                    tool_log(
                        batch_session(round, seq),
                        format!(r#"{{"rows":{rows},"i":{i}}}"#),
                        seq,
                    )
                })
                .collect();
            stores.tool_logs.import_tool_logs(&logs).map_err(err)
        }
        Kind::Run => browser()?
            .record_run(&Scope::shared(), &finished_run(round, seq))
            .map_err(err),
        Kind::Image => browser()?
            .store_image(&Scope::shared(), &image(round, seq, rows), None)
            .map(drop)
            .map_err(err),
    }
}

fn tool_log(session: SessionId, parameters: String, seq: u64) -> ToolLog {
    ToolLog {
        session,
        tool_name: "inputText".to_owned(),
        parameters,
        success: true,
        error: None,
        duration_ms: 3,
        timestamp: Timestamp::from_millis(seq as i64),
        trace_id: None,
        memory_snapshot: None,
        provenance: None,
    }
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
            provenance: None,
        },
        completes_stored: false,
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

/// Every write the writers reported, round after round.
#[derive(Debug, Default, Clone)]
pub struct Ledger {
    committed: Vec<Written>,
    failed: Vec<Written>,
}

/// What a store holds, per kind: `(round, seq)` to the number of records found and the
/// record count the write itself declared.
type Found = BTreeMap<Kind, BTreeMap<(u64, u64), (u64, u64)>>;

impl Ledger {
    /// Adds a writer's lines; returns how many of them were committed writes.
    pub fn record(&mut self, lines: &[String]) -> Result<u64, String> {
        let mut committed = 0;
        for line in lines {
            let (ok, write) = Written::parse(line)?;
            if ok {
                self.committed.push(write);
                committed += 1;
            } else {
                self.failed.push(write);
            }
        }
        Ok(committed)
    }

    /// How many committed writes were reported in all.
    pub fn committed(&self) -> usize {
        self.committed.len()
    }

    /// How many failed writes were reported in all.
    pub fn failed(&self) -> usize {
        self.failed.len()
    }

    /// Checks `stores` after round `round`: every committed write of rounds `0..=round`
    /// present and whole, and every write present whole (reported or not: a kill may land
    /// between the commit and the report; a write that failed may or may not have landed).
    pub fn verify(&self, stores: &Stores<'_>, round: u64) -> Result<(), String> {
        let found = self.stored(stores, round)?;
        for write in &self.committed {
            let want = write.records();
            let what = format!(
                "committed {} write {}/{}",
                write.kind.name(),
                write.round,
                write.seq
            );
            match found
                .get(&write.kind)
                .and_then(|f| f.get(&(write.round, write.seq)))
            {
                Some((records, _)) if *records == want => {}
                Some((records, _)) => {
                    return Err(format!("{what} has {records} of its {want} records"));
                }
                None => return Err(format!("{what} is missing")),
            }
        }
        for (kind, writes) in &found {
            for ((r, s), (records, declared)) in writes {
                if records != declared {
                    return Err(format!(
                        "{} write {r}/{s} is half-written or doubled ({records} of its {declared} records)",
                        kind.name()
                    ));
                }
            }
        }
        Ok(())
    }

    /// Reads everything the writers may have written in rounds `0..=round`.
    fn stored(&self, stores: &Stores<'_>, round: u64) -> Result<Found, String> {
        let mut found = Found::new();
        let num = |s: &str| s.parse::<u64>().map_err(|_| format!("not a number: {s:?}"));
        let mut add = |kind: Kind, key: (u64, u64), declared: u64| {
            found
                .entry(kind)
                .or_default()
                .entry(key)
                .or_insert((0, declared))
                .0 += 1;
        };
        for (key, value) in stores.meta.meta_list("crash/").map_err(err)? {
            let parts: Vec<&str> = key.as_str().split('/').collect();
            let [_, r, s, _] = parts[..] else {
                return Err(format!("unexpected meta key {:?}", key.as_str()));
            };
            add(Kind::Meta, (num(r)?, num(s)?), num(&value)?);
        }
        for episode in stores
            .episodes
            .episodes_after(&partition(), 0, usize::MAX)
            .map_err(err)?
        {
            let fp = &episode.episode.fingerprint;
            let field = |f: &str| num(fp.get(f).unwrap_or_default());
            add(
                Kind::Episodes,
                (field("round")?, field("seq")?),
                field("rows")?,
            );
        }
        let sessions: BTreeSet<String> = stores
            .sessions
            .session_list()
            .map_err(err)?
            .into_iter()
            .map(|s| s.id.as_str().to_owned())
            .collect();
        for r in 0..=round {
            for log in stores.tool_logs.list_tool_logs(&session(r)).map_err(err)? {
                let seq = log
                    .parameters
                    .trim_start_matches(r#"{"seq":"#)
                    .trim_end_matches('}');
                add(Kind::ToolLog, (r, num(seq)?), 1);
            }
            if sessions.contains(session(r).as_str()) {
                for event in stores.sessions.session_load(&session(r)).map_err(err)? {
                    let parts: Vec<&str> = event.payload.split('/').collect();
                    let [s, _, rows] = parts[..] else {
                        return Err(format!("unexpected event payload {:?}", event.payload));
                    };
                    add(Kind::Events, (r, num(s)?), num(rows)?);
                }
            }
        }
        if let Some(browser) = stores.browser {
            let scope = Scope::shared();
            let ids = |id: &str, prefix: &str| -> Result<(u64, u64), String> {
                let (r, s) = id
                    .strip_prefix(prefix)
                    .and_then(|rest| rest.split_once('-'))
                    .ok_or(format!("unexpected id {id:?}"))?;
                Ok((num(r)?, num(s)?))
            };
            // A run is whole when its trajectory and its manifest are both there; an image
            // when its trajectories and its manifest all are.
            for trajectory in browser.trajectory_list(&scope).map_err(err)? {
                if trajectory.id.starts_with("img-") {
                    let (r, s, rows) = image_ids(&trajectory.id, "img-")?;
                    add(Kind::Image, (r, s), rows + 1);
                } else {
                    add(Kind::Run, ids(&trajectory.id, "traj-")?, 2);
                }
            }
            for manifest in browser
                .run_list(&scope, &RunFilter::default())
                .map_err(err)?
            {
                if manifest.run_id.starts_with("imgrun-") {
                    let (r, s, rows) = image_ids(&manifest.run_id, "imgrun-")?;
                    add(Kind::Image, (r, s), rows + 1);
                } else {
                    add(Kind::Run, ids(&manifest.run_id, "run-")?, 2);
                }
            }
        }
        // Batches of tool logs, each in its own session: every write the writer may have
        // reached (up to two cycles past the last one it reported).
        let kinds = stores.kinds();
        let cycle = kinds.len() as u64;
        for r in 0..=round {
            let last = self
                .committed
                .iter()
                .chain(&self.failed)
                .filter(|w| w.round == r)
                .map(|w| w.seq)
                .max()
                .unwrap_or(0);
            for seq in
                (0..=last + 2 * cycle).filter(|s| kinds[(s % cycle) as usize] == Kind::ToolLogs)
            {
                for log in stores
                    .tool_logs
                    .list_tool_logs(&batch_session(r, seq))
                    .map_err(err)?
                {
                    let rows = log
                        .parameters
                        .strip_prefix(r#"{"rows":"#)
                        .and_then(|rest| rest.split(',').next())
                        .ok_or(format!("unexpected batch log {:?}", log.parameters))?;
                    add(Kind::ToolLogs, (r, seq), num(rows)?);
                }
            }
        }
        Ok(found)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InMemoryStore;

    fn written(stores: &Stores<'_>, round: u64, writes: u64) -> Vec<String> {
        let mut out = Vec::new();
        write(stores, round, OnError::Stop, Some(writes), &mut out).expect("writes");
        String::from_utf8(out)
            .expect("utf-8")
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_write_of_every_round_is_checked_with_and_without_browser_memory() {
        for browser in [false, true] {
            let store = InMemoryStore::new();
            let stores = if browser {
                Stores::with_browser(&store)
            } else {
                Stores::core(&store)
            };
            let mut ledger = Ledger::default();
            for round in 0..3 {
                let lines = written(&stores, round, 30);
                assert_eq!(ledger.record(&lines), Ok(30));
                ledger.verify(&stores, round).expect("whole");
            }
            let kinds: BTreeSet<Kind> = ledger.committed.iter().map(|w| w.kind).collect();
            assert_eq!(kinds.len(), stores.kinds().len());
        }
    }

    #[test]
    fn a_missing_or_torn_write_is_named() {
        let store = InMemoryStore::new();
        let stores = Stores::with_browser(&store);
        let mut ledger = Ledger::default();
        ledger.record(&written(&stores, 0, 14)).expect("parses");
        // A write the ledger was told of but the store never saw.
        let mut ahead = ledger.clone();
        ahead
            .record(&["committed meta 0 99 2".to_owned()])
            .expect("parses");
        assert_eq!(
            ahead.verify(&stores, 0),
            Err("committed meta write 0/99 is missing".to_owned())
        );
        // One row of a committed batch lost.
        let (key, value) = store.meta_list("crash/0/7/").expect("lists")[0].clone();
        store.meta_delete(&key).expect("deletes");
        let error = ledger.verify(&stores, 0).expect_err("torn");
        assert!(
            error.starts_with("committed meta write 0/7 has "),
            "{error}"
        );
        store.meta_set(&key, &value).expect("restores");
        ledger.verify(&stores, 0).expect("whole again");
        // An unreported write present in part.
        let key = MetaKey::new("crash/5/0/0").expect("key");
        store.meta_set(&key, "3").expect("sets");
        let error = Ledger::default().verify(&stores, 5).expect_err("torn");
        assert_eq!(
            error,
            "meta write 5/0 is half-written or doubled (1 of its 3 records)"
        );
    }

    #[test]
    fn failed_writes_are_reported_and_parsed() {
        let line = "failed episodes 2 8 3: the connection was lost: x".to_owned();
        let mut ledger = Ledger::default();
        assert_eq!(ledger.record(std::slice::from_ref(&line)), Ok(0));
        assert_eq!((ledger.committed(), ledger.failed()), (0, 1));
        assert!(ledger.record(&["garbage".to_owned()]).is_err());
    }
}
