//! An audit trail for the broken stores that keep their own memory: the suites read who
//! wrote and forgot what from it.

use std::sync::{Mutex, PoisonError};

use agent_memory_core::Result;
use agent_memory_core::evidence::{Action, AuditEntry, NO_SCOPE, WriteRun};
use agent_memory_core::provenance::Provenance;
use agent_memory_core::store::Page;

/// Entries appended in order, numbered from 1.
#[derive(Default)]
pub struct Trail(Mutex<Vec<AuditEntry>>);

impl Trail {
    /// Appends the forget of `item` of `memory` (a memory without scopes) by `by`.
    pub fn forgot(&self, memory: &str, item: &str, by: &Provenance, detail: String) {
        let mut entries = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let seq = entries.len() as u64 + 1;
        entries.push(AuditEntry {
            seq,
            action: Action::Forget,
            memory: memory.to_owned(),
            scope: NO_SCOPE.to_owned(),
            item: item.to_owned(),
            by: by.clone(),
            detail,
        });
    }

    /// Appends the entry opening `run`, unless the newest entry about its item is a write of
    /// the same run, or with `every_call`, always (a store that records each call, not each
    /// writer's run).
    pub fn wrote(&self, run: &WriteRun<'_>, every_call: bool) {
        let mut entries = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let newest = entries
            .iter()
            .rev()
            .find(|e| e.memory == run.memory && e.item == run.item);
        if !every_call && newest.is_some_and(|e| run.continues(e)) {
            return;
        }
        let seq = entries.len() as u64 + 1;
        entries.push(AuditEntry {
            seq,
            action: Action::Write,
            memory: run.memory.to_owned(),
            scope: NO_SCOPE.to_owned(),
            item: run.item.to_owned(),
            by: run.by.clone(),
            detail: run.detail.to_owned(),
        });
    }

    /// What [`AuditStore::audit_page`](agent_memory_core::store::AuditStore::audit_page)
    /// returns.
    pub fn page(
        &self,
        filter: &agent_memory_core::evidence::AuditFilter,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Page<AuditEntry>> {
        filter.check()?;
        let entries = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let taken = entries.iter().filter(|e| filter.matches(e));
        Ok(Page {
            total: taken.clone().count() as u64,
            items: taken
                .filter(|e| after.is_none_or(|after| e.seq > after))
                .take(limit)
                .cloned()
                .collect(),
        })
    }

    /// What a store that keeps its own memory answers to a change of setting: the suites
    /// that use this trail change none.
    pub fn no_settings(key: &agent_memory_core::MetaKey) -> Result<Option<String>> {
        Err(agent_memory_core::Error::invalid_input(
            key.as_str(),
            "this test store keeps no settings",
        ))
    }

    /// What such a store answers to a vouch: the suites that use this trail make none.
    pub fn no_vouches() -> Result<usize> {
        Err(agent_memory_core::Error::invalid_input(
            "vouch",
            "this test store keeps no vouches",
        ))
    }
}
