//! [`ToolLogStore`] for [`InMemoryStore`]: one vector of logs, in append order.

use crate::error::Result;
use crate::mem::{InMemoryStore, lock};
use crate::names::SessionId;
use crate::store::tool_log::{ToolLog, ToolLogStore};

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
}
