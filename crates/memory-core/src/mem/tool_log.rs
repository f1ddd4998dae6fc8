//! [`ToolLogStore`] for [`InMemoryStore`]: one vector of logs, in append order.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::evidence::{Action, NO_SCOPE, WriteRun, Writer, forget_detail};
use crate::mem::{InMemoryStore, lock};
use crate::names::SessionId;
use crate::provenance::Provenance;
use crate::store::tool_log::{
    ToolLog, ToolLogSessionSummary, ToolLogStore, tool_logs_already_held, validate_all,
};

/// `log` as a store keeps it: its writer's time is its own timestamp.
fn kept(log: &ToolLog) -> ToolLog {
    let mut log = log.clone();
    if let Some(by) = &mut log.provenance {
        by.at = log.timestamp;
    }
    log
}

impl InMemoryStore {
    /// Appends the entries that open the runs of writes among `logs`; called with the tool
    /// logs' lock held.
    fn audit_tool_logs(&self, logs: &[ToolLog]) {
        for run in WriteRun::tool_log_runs(logs) {
            self.audit_write_run(&run);
        }
    }
}

impl ToolLogStore for InMemoryStore {
    fn append_tool_log(&self, log: &ToolLog) -> Result<()> {
        log.validate()?;
        let mut stored = lock(&self.tool_logs);
        stored.push(kept(log));
        self.audit_tool_logs(std::slice::from_ref(log));
        Ok(())
    }

    fn append_tool_logs(&self, logs: &[ToolLog]) -> Result<()> {
        validate_all(logs)?;
        let mut stored = lock(&self.tool_logs);
        stored.extend(logs.iter().map(kept));
        self.audit_tool_logs(logs);
        Ok(())
    }

    fn import_tool_logs(&self, logs: &[ToolLog]) -> Result<()> {
        validate_all(logs)?;
        let mut stored = lock(&self.tool_logs);
        let mut held: BTreeMap<&SessionId, usize> =
            logs.iter().map(|log| (&log.session, 0)).collect();
        for log in stored.iter() {
            if let Some(count) = held.get_mut(&log.session) {
                *count += 1;
            }
        }
        if let Some((session, count)) = held.into_iter().find(|(_, count)| *count > 0) {
            return Err(tool_logs_already_held(session, count));
        }
        stored.extend(logs.iter().map(kept));
        self.audit_tool_logs(logs);
        Ok(())
    }

    fn list_tool_logs(&self, session: &SessionId) -> Result<Vec<ToolLog>> {
        Ok(lock(&self.tool_logs)
            .iter()
            .filter(|log| &log.session == session)
            .cloned()
            .collect())
    }

    fn tool_log_sessions(&self) -> Result<Vec<ToolLogSessionSummary>> {
        let mut sessions: BTreeMap<SessionId, ToolLogSessionSummary> = BTreeMap::new();
        for log in lock(&self.tool_logs).iter() {
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
            summary.last_write = summary.last_write.max(Some(log.timestamp));
        }
        Ok(sessions.into_values().collect())
    }

    fn forget_tool_logs(&self, session: &SessionId, by: &Provenance) -> Result<u64> {
        let mut logs = lock(&self.tool_logs);
        let before = logs.len();
        logs.retain(|log| &log.session != session);
        let gone = (before - logs.len()) as u64;
        let detail = forget_detail(&[(gone, "tool log", "tool logs")]);
        self.audit_in(
            "recording",
            Action::Forget,
            NO_SCOPE,
            session.as_str(),
            by,
            detail,
        );
        drop(logs);
        Ok(gone)
    }

    fn forget_tool_logs_by(
        &self,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<Vec<(SessionId, u64)>> {
        writer.check()?;
        let mut logs = lock(&self.tool_logs);
        let mut gone: BTreeMap<SessionId, u64> = BTreeMap::new();
        logs.retain(|log| {
            let doomed = log.provenance.as_ref().is_some_and(|p| writer.matches(p));
            if doomed {
                *gone.entry(log.session.clone()).or_default() += 1;
            }
            !doomed
        });
        for (session, n) in &gone {
            let detail = forget_detail(&[(*n, "tool log", "tool logs")]);
            let item = session.as_str();
            self.audit_in("recording", Action::Forget, NO_SCOPE, item, by, detail);
        }
        drop(logs);
        Ok(gone.into_iter().collect())
    }
}
