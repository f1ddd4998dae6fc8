//! The `ToolLogStore` contract, against the in-memory store and against broken stores that
//! the suite must catch.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use agent_memory_core::evidence::{AuditEntry, WriteRun, Writer, forget_detail};
use agent_memory_core::provenance::Provenance;
use agent_memory_core::store::tool_log::{
    ToolLog, ToolLogSessionSummary, ToolLogStore, tool_logs_already_held, validate_all,
};
use agent_memory_core::store::{AuditStore, Page};
use agent_memory_core::testkit::{run, tool_log};

use crate::trail::Trail;
use agent_memory_core::{InMemoryStore, Result, SessionId};

#[test]
fn in_memory_store_obeys_the_contract() {
    if let Err(report) = run(tool_log::SUITE, &tool_log::cases(), InMemoryStore::new) {
        panic!("{report}");
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Defect {
    /// Lists newest first.
    ReversesOrder,
    /// Forgets which session a log belongs to.
    MixesSessions,
    /// Drops the memory snapshot of every log.
    DropsSnapshots,
    /// Stores a log before checking it.
    StoresInvalidLogs,
    /// Reports a forget but keeps the logs.
    KeepsForgottenLogs,
    /// Appends a batch log by log, keeping those before an invalid one.
    HalfWritesBatches,
    /// Imports into a session that already holds logs.
    ImportsOverHeldSessions,
    /// Reports the last appended log's time as the session's last write, not the newest.
    LastAppendedIsLastWrite,
    /// Keeps who logged a call when it is appended alone, not in a batch.
    DropsWritersInBatches,
    /// Forgets by writer on the source alone, whatever else the filter names.
    ForgetsBySourceOnly,
    /// Records every append call in the audit trail, not each writer's run.
    AuditsEveryCall,
}

struct Broken {
    defect: Defect,
    logs: Mutex<Vec<ToolLog>>,
    trail: Trail,
}

impl Broken {
    /// Records the runs of writes among `logs` in the trail.
    fn audit(&self, logs: &[ToolLog]) {
        let every_call = self.defect == Defect::AuditsEveryCall;
        for run in WriteRun::tool_log_runs(logs) {
            self.trail.wrote(&run, every_call);
        }
    }

    fn with(defect: Defect) -> Self {
        Broken {
            defect,
            logs: Mutex::default(),
            trail: Trail::default(),
        }
    }
    fn logs(&self) -> MutexGuard<'_, Vec<ToolLog>> {
        self.logs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ToolLogStore for Broken {
    fn append_tool_log(&self, log: &ToolLog) -> Result<()> {
        let mut log = log.clone();
        if self.defect == Defect::StoresInvalidLogs {
            self.logs().push(log.clone());
        }
        log.validate()?;
        if self.defect == Defect::DropsSnapshots {
            log.memory_snapshot = None;
        }
        if self.defect != Defect::StoresInvalidLogs {
            self.audit(std::slice::from_ref(&log));
            self.logs().push(log);
        }
        Ok(())
    }
    fn append_tool_logs(&self, logs: &[ToolLog]) -> Result<()> {
        if self.defect == Defect::HalfWritesBatches {
            return logs.iter().try_for_each(|log| self.append_tool_log(log));
        }
        validate_all(logs)?;
        let logs: Vec<ToolLog> = logs
            .iter()
            .cloned()
            .map(|mut log| {
                if self.defect == Defect::DropsWritersInBatches {
                    log.provenance = None;
                }
                log
            })
            .collect();
        self.audit(&logs);
        self.logs().extend(logs);
        Ok(())
    }
    fn import_tool_logs(&self, logs: &[ToolLog]) -> Result<()> {
        if self.defect != Defect::ImportsOverHeldSessions {
            for log in logs {
                let held = self.list_tool_logs(&log.session)?.len();
                if held > 0 {
                    return Err(tool_logs_already_held(&log.session, held));
                }
            }
        }
        self.append_tool_logs(logs)
    }
    fn list_tool_logs(&self, session: &SessionId) -> Result<Vec<ToolLog>> {
        let mut listed: Vec<ToolLog> = self
            .logs()
            .iter()
            .filter(|log| self.defect == Defect::MixesSessions || &log.session == session)
            .cloned()
            .collect();
        if self.defect == Defect::ReversesOrder {
            listed.reverse();
        }
        Ok(listed)
    }
    fn tool_log_sessions(&self) -> Result<Vec<ToolLogSessionSummary>> {
        let mut sessions: BTreeMap<SessionId, ToolLogSessionSummary> = BTreeMap::new();
        for log in self.logs().iter() {
            let summary =
                sessions
                    .entry(log.session.clone())
                    .or_insert_with(|| ToolLogSessionSummary {
                        session: log.session.clone(),
                        logs: 0,
                        bytes: 0,
                        last_write: None,
                    });
            summary.logs += 1;
            summary.bytes += log.stored_bytes();
            summary.last_write = if self.defect == Defect::LastAppendedIsLastWrite {
                Some(log.timestamp)
            } else {
                summary.last_write.max(Some(log.timestamp))
            };
        }
        Ok(sessions.into_values().collect())
    }
    fn forget_tool_logs(&self, session: &SessionId, by: &Provenance) -> Result<u64> {
        let mut logs = self.logs();
        let count = logs.iter().filter(|log| &log.session == session).count() as u64;
        if self.defect != Defect::KeepsForgottenLogs {
            logs.retain(|log| &log.session != session);
        }
        let detail = forget_detail(&[(count, "tool log", "tool logs")]);
        self.trail.forgot("recording", session.as_str(), by, detail);
        Ok(count)
    }
    fn forget_tool_logs_by(
        &self,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<Vec<(SessionId, u64)>> {
        writer.check()?;
        let writer = if self.defect == Defect::ForgetsBySourceOnly && writer.source.is_some() {
            Writer {
                source: writer.source.clone(),
                ..Writer::default()
            }
        } else {
            writer.clone()
        };
        let mut gone: BTreeMap<SessionId, u64> = BTreeMap::new();
        self.logs().retain(|log| {
            let doomed = log.provenance.as_ref().is_some_and(|p| writer.matches(p));
            if doomed {
                *gone.entry(log.session.clone()).or_default() += 1;
            }
            !doomed
        });
        for (session, n) in &gone {
            let detail = forget_detail(&[(*n, "tool log", "tool logs")]);
            self.trail.forgot("recording", session.as_str(), by, detail);
        }
        Ok(gone.into_iter().collect())
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
            "each writer's run of logs is one entry of the audit trail",
        ),
        (Defect::ReversesOrder, "logs list in append order"),
        (
            Defect::LastAppendedIsLastWrite,
            "sessions list by id with their counts",
        ),
        (Defect::MixesSessions, "sessions are isolated"),
        (Defect::DropsSnapshots, "every field round-trips"),
        (
            Defect::DropsWritersInBatches,
            "a log keeps who logged it, in a batch and an import",
        ),
        (
            Defect::StoresInvalidLogs,
            "invalid log is rejected and not stored",
        ),
        (
            Defect::KeepsForgottenLogs,
            "forget deletes one session's logs only",
        ),
        (
            Defect::HalfWritesBatches,
            "a batch with an invalid log stores nothing",
        ),
        (
            Defect::ImportsOverHeldSessions,
            "import refuses a session that holds logs and stores nothing",
        ),
        (
            Defect::ForgetsBySourceOnly,
            "forget by writer takes the writer's logs from every session, each audited",
        ),
    ];
    for (defect, case) in table {
        let report = run(tool_log::SUITE, &tool_log::cases(), || Broken::with(defect))
            .expect_err("a broken store must fail the contract");
        assert!(report.failed(case), "{case} should fail:\n{report}");
    }
}
