//! The `SessionStore` contract, against the in-memory store and against broken stores that
//! the suite must catch.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use agent_memory_core::evidence::{AuditEntry, WriteRun, Writer, forget_detail};
use agent_memory_core::provenance::Provenance;
use agent_memory_core::store::session::{
    SessionAppended, append_at_outcome, session_already_exists, validate_new_session,
};
use agent_memory_core::store::{AuditStore, Page};
use agent_memory_core::testkit::{TestClock, run, session};

use crate::trail::Trail;
use agent_memory_core::{
    Clock, InMemoryStore, Result, SessionEvent, SessionId, SessionStore, SessionSummary, Timestamp,
};

#[test]
fn in_memory_store_obeys_the_contract() {
    let make = || InMemoryStore::with_clock(TestClock);
    if let Err(report) = run(session::SUITE, &session::cases(), make) {
        panic!("{report}");
    }
}

#[test]
fn a_store_on_another_clock_fails_the_stamp_case() {
    // The suite's times are the test clock's: a store that reads another clock is caught.
    let report = run(session::SUITE, &session::cases(), InMemoryStore::new)
        .expect_err("the system clock is not the test clock");
    assert_eq!(
        report
            .failures
            .iter()
            .map(|(case, _)| *case)
            .collect::<Vec<_>>(),
        vec![
            "list stamps each session's last write",
            "each writer's run of events is one entry of the audit trail",
            "an event keeps who appended it, at the store's time"
        ]
    );
}

/// A store with one seeded defect, so each test shows a case of the suite can fail.
struct Broken {
    defect: Defect,
    logs: Mutex<BTreeMap<String, Vec<SessionEvent>>>,
    stamps: Mutex<BTreeMap<String, Timestamp>>,
    trail: Trail,
}

#[derive(Clone, Copy, PartialEq)]
enum Defect {
    /// Puts each batch in front of the log instead of behind it.
    PrependsBatches,
    /// Writes the valid events of a batch before failing on an invalid one.
    HalfWritesBatches,
    /// Lists sessions in the order they were created.
    ListsInCreationOrder,
    /// Forgets every session when asked to forget one.
    ForgetsEverySession,
    /// Creates a session by appending, even to one that has events.
    CreatesByAppending,
    /// Appends at the end of the log whatever length the caller expected, as an append that
    /// reads the log in one step and writes in another does when a concurrent one slips in.
    AppendsAtAnyLength,
    /// Refuses a retry of events already stored at their position.
    RefusesRetries,
    /// Stamps a session's last write on every append call, a retry that writes nothing
    /// included.
    StampsRetries,
    /// Forgets a session without an entry in the audit trail.
    ForgetsUnaudited,
    /// Forgets by writer only the writer's events, leaving holes in the positional log.
    ForgetsOnlyTheWritersEvents,
    /// Keeps the events but not who appended them.
    DropsWriters,
    /// Records every append call in the audit trail, not each writer's run.
    AuditsEveryCall,
}

impl Broken {
    fn with(defect: Defect) -> Self {
        Broken {
            defect,
            logs: Mutex::default(),
            stamps: Mutex::default(),
            trail: Trail::default(),
        }
    }
    fn logs(&self) -> MutexGuard<'_, BTreeMap<String, Vec<SessionEvent>>> {
        self.logs.lock().unwrap_or_else(PoisonError::into_inner)
    }
    fn stamp(&self, session: &SessionId) {
        self.stamps
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session.to_string(), TestClock.now());
    }
}

impl SessionStore for Broken {
    fn session_append(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64> {
        let mut logs = self.logs();
        let log = logs.entry(session.to_string()).or_default();
        for (i, event) in events.iter().enumerate() {
            if let Err(e) = event.validate() {
                if self.defect != Defect::HalfWritesBatches {
                    log.truncate(log.len() - i);
                }
                return Err(e);
            }
            let mut event = event.clone();
            match &mut event.written_by {
                _ if self.defect == Defect::DropsWriters => event.written_by = None,
                Some(writer) => writer.at = TestClock.now(),
                None => {}
            }
            if self.defect == Defect::PrependsBatches {
                log.insert(i, event);
            } else {
                log.push(event);
            }
        }
        let len = log.len() as u64;
        logs.retain(|_, log| !log.is_empty());
        if !events.is_empty() {
            self.stamp(session);
        }
        let every_call = self.defect == Defect::AuditsEveryCall;
        for run in WriteRun::event_runs(session.as_str(), events, TestClock.now()) {
            self.trail.wrote(&run, every_call);
        }
        Ok(len)
    }

    fn session_append_at(
        &self,
        session: &SessionId,
        expected_len: u64,
        events: &[SessionEvent],
    ) -> Result<SessionAppended> {
        events.iter().try_for_each(SessionEvent::validate)?;
        if self.defect == Defect::StampsRetries {
            self.stamp(session);
        }
        let held = self
            .logs()
            .get(session.as_str())
            .cloned()
            .unwrap_or_default();
        let len = held.len() as u64;
        if len != expected_len && self.defect != Defect::AppendsAtAnyLength {
            let from = (expected_len as usize).min(held.len());
            let to = (from + events.len()).min(held.len());
            let stored: &[SessionEvent] = if self.defect == Defect::RefusesRetries {
                &[]
            } else {
                &held[from..to]
            };
            return append_at_outcome(session, expected_len, len, stored, events);
        }
        let events = self.session_append(session, events)?;
        Ok(SessionAppended {
            events,
            already_stored: false,
        })
    }

    fn session_create(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64> {
        validate_new_session(session, events)?;
        if self.defect != Defect::CreatesByAppending
            && let Some(held) = self.logs().get(session.as_str())
        {
            return Err(session_already_exists(session, held.len() as u64));
        }
        self.session_append(session, events)
    }

    fn session_load(&self, session: &SessionId) -> Result<Vec<SessionEvent>> {
        self.logs()
            .get(session.as_str())
            .cloned()
            .ok_or_else(|| agent_memory_core::store::session::session_not_found(session))
    }

    fn session_list(&self) -> Result<Vec<SessionSummary>> {
        let logs = self.logs();
        let mut listed: Vec<SessionSummary> = logs
            .iter()
            .map(|(id, log)| {
                Ok(SessionSummary {
                    id: SessionId::new(id.clone())?,
                    events: log.len() as u64,
                    bytes: log
                        .iter()
                        .map(|e| (e.kind.len() + e.payload.len()) as u64)
                        .sum(),
                    last_write: self
                        .stamps
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get(id)
                        .copied(),
                })
            })
            .collect::<Result<_>>()?;
        if self.defect == Defect::ListsInCreationOrder {
            // The contract writes "zeta" first: a creation-ordered list starts with it.
            listed.sort_by_key(|s| s.id.as_str() != "zeta");
        }
        Ok(listed)
    }

    fn session_forget(&self, session: &SessionId, by: &Provenance) -> Result<u64> {
        let mut logs = self.logs();
        let count = logs.get(session.as_str()).map_or(0, |log| log.len() as u64);
        if self.defect == Defect::ForgetsEverySession {
            logs.clear();
        } else {
            logs.remove(session.as_str());
        }
        if self.defect != Defect::ForgetsUnaudited {
            let detail = forget_detail(&[(count, "event", "events")]);
            self.trail.forgot("turns", session.as_str(), by, detail);
        }
        Ok(count)
    }
    fn session_forget_by(&self, writer: &Writer, by: &Provenance) -> Result<Vec<(SessionId, u64)>> {
        writer.check()?;
        let mut logs = self.logs();
        let mine = |e: &SessionEvent| e.written_by.as_ref().is_some_and(|p| writer.matches(p));
        let doomed: Vec<String> = logs
            .iter()
            .filter(|(_, events)| events.iter().any(mine))
            .map(|(name, _)| name.clone())
            .collect();
        let mut gone = Vec::new();
        for name in doomed {
            let n = if self.defect == Defect::ForgetsOnlyTheWritersEvents {
                let events = logs.get_mut(&name).expect("listed");
                let before = events.len();
                events.retain(|e| !mine(e));
                (before - events.len()) as u64
            } else {
                logs.remove(&name).map_or(0, |events| events.len() as u64)
            };
            let detail = forget_detail(&[(n, "event", "events")]);
            self.trail.forgot("turns", &name, by, detail);
            gone.push((SessionId::new(name)?, n));
        }
        Ok(gone)
    }
}

impl AuditStore for Broken {
    fn audit_select(
        &self,
        filter: &agent_memory_core::evidence::AuditFilter,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Page<AuditEntry>> {
        self.trail.page(filter, after, limit)
    }

    fn setting_set(
        &self,
        key: &agent_memory_core::MetaKey,
        _value: &str,
        _by: &agent_memory_core::Provenance,
    ) -> Result<Option<String>> {
        Trail::no_settings(key)
    }

    fn vouch(
        &self,
        _vouches: &[agent_memory_core::evidence::Vouch<'_>],
        _by: &agent_memory_core::Provenance,
    ) -> Result<usize> {
        Trail::no_vouches()
    }

    fn vouched(&self, _memory: &str, _container: &str) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

#[test]
fn the_suite_catches_broken_stores() {
    let table = [
        (
            Defect::AuditsEveryCall,
            "each writer's run of events is one entry of the audit trail",
        ),
        (Defect::PrependsBatches, "events load in append order"),
        (Defect::HalfWritesBatches, "invalid event writes nothing"),
        (Defect::ListsInCreationOrder, "list in id order with counts"),
        (
            Defect::ForgetsEverySession,
            "forget deletes one session's log only",
        ),
        (
            Defect::CreatesByAppending,
            "create refuses a session with events and writes nothing",
        ),
        (
            Defect::AppendsAtAnyLength,
            "append at another length is a conflict naming both and writes nothing",
        ),
        (
            Defect::AppendsAtAnyLength,
            "concurrent appends at one position write once",
        ),
        (
            Defect::RefusesRetries,
            "append at a stale length of the stored events is already stored",
        ),
        (
            Defect::RefusesRetries,
            "concurrent appends at one position write once",
        ),
        (
            Defect::StampsRetries,
            "list stamps each session's last write",
        ),
        (
            Defect::ForgetsUnaudited,
            "forget deletes one session's log only",
        ),
        (
            Defect::DropsWriters,
            "an event keeps who appended it, at the store's time",
        ),
        (
            Defect::ForgetsOnlyTheWritersEvents,
            "forget by writer takes every session the writer appended to, whole",
        ),
    ];
    for (defect, case) in table {
        let report = run(session::SUITE, &session::cases(), || Broken::with(defect))
            .expect_err("a broken store must fail the contract");
        assert!(report.failed(case), "{case} should fail:\n{report}");
    }
}
