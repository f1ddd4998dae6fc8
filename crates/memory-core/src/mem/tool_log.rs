//! [`ToolLogStore`] for [`InMemoryStore`]: one vector of logs, in append order.

use crate::error::Result;
use crate::mem::{InMemoryStore, lock};
use crate::names::SessionId;
use std::collections::BTreeMap;

use crate::store::tool_log::{ToolLog, ToolLogSessionSummary, ToolLogStore};

impl ToolLogStore for InMemoryStore {
    fn append_tool_log(&self, log: &ToolLog) -> Result<()> {
        log.validate()?;
        lock(&self.tool_logs).push(log.clone());
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
        let mut counts: BTreeMap<SessionId, u64> = BTreeMap::new();
        for log in lock(&self.tool_logs).iter() {
            *counts.entry(log.session.clone()).or_default() += 1;
        }
        Ok(counts
            .into_iter()
            .map(|(session, logs)| ToolLogSessionSummary { session, logs })
            .collect())
    }

    fn forget_tool_logs(&self, session: &SessionId) -> Result<u64> {
        let mut logs = lock(&self.tool_logs);
        let before = logs.len();
        logs.retain(|log| &log.session != session);
        Ok((before - logs.len()) as u64)
    }
}
