//! [`InMemoryStore`]: every store trait, held in process memory. For tests, for short-lived
//! agents, and as the reference the contract suites compare backends against.

mod session;
mod trajectory;

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::error::Result;
use crate::names::{MetaKey, SessionId};
use crate::store::MetaStore;
use crate::store::meta::compare_and_set_conflict;
use crate::time::{Clock, SharedClock};

mod browser;
mod notes;
mod tool_log;

/// A store that keeps everything in memory and forgets it when dropped.
///
/// ```
/// use agent_memory_core::{InMemoryStore, MetaKey, MetaStore};
///
/// let store = InMemoryStore::new();
/// let key = MetaKey::new("owner")?;
/// store.meta_set(&key, "ci")?;
/// assert_eq!(store.meta_get(&key)?.as_deref(), Some("ci"));
/// # Ok::<(), agent_memory_core::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct InMemoryStore {
    meta: Mutex<BTreeMap<MetaKey, String>>,
    sessions: Mutex<BTreeMap<SessionId, session::SessionLog>>,
    tool_logs: Mutex<Vec<crate::store::tool_log::ToolLog>>,
    trajectory: Mutex<trajectory::TrajectoryState>,
    browser: Mutex<browser::BrowserMemory>,
    notes: Mutex<notes::NoteTrees>,
    /// The audit trail; locked only while a memory's lock is held, after it.
    audit: Mutex<notes::AuditTrail>,
    /// The vouched texts, as `(memory, container, digest)`; the trail is locked after it.
    vouches: Mutex<std::collections::BTreeSet<(String, String, String)>>,
    /// When each notes scope was last written; locked only while `notes` is held.
    note_writes: Mutex<BTreeMap<crate::names::Scope, crate::time::Timestamp>>,
    /// Stamps the writes that carry no time of their own (session events, notes).
    clock: SharedClock,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        InMemoryStore::default()
    }

    /// An empty store whose session and note writes are stamped by `clock` (the
    /// [`SystemClock`](crate::SystemClock) otherwise).
    pub fn with_clock(clock: impl Clock + 'static) -> Self {
        InMemoryStore {
            clock: SharedClock::new(clock),
            ..InMemoryStore::default()
        }
    }
}

/// Locks a mutex, recovering the data if another thread panicked while holding it: every
/// in-memory write completes its changes before it can panic, so the data stays consistent.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MetaStore for InMemoryStore {
    fn meta_get(&self, key: &MetaKey) -> Result<Option<String>> {
        Ok(lock(&self.meta).get(key).cloned())
    }

    fn meta_set(&self, key: &MetaKey, value: &str) -> Result<Option<String>> {
        Ok(lock(&self.meta).insert(key.clone(), value.to_owned()))
    }

    fn meta_compare_and_set(
        &self,
        key: &MetaKey,
        expected: Option<&str>,
        value: &str,
    ) -> Result<()> {
        let mut meta = lock(&self.meta);
        let found = meta.get(key).map(String::as_str);
        if found != expected {
            return Err(compare_and_set_conflict(key, expected, found));
        }
        meta.insert(key.clone(), value.to_owned());
        Ok(())
    }

    fn meta_set_all(&self, entries: &[(&MetaKey, &str)]) -> Result<()> {
        let mut meta = lock(&self.meta);
        for (key, value) in entries {
            meta.insert((*key).clone(), (*value).to_owned());
        }
        Ok(())
    }

    fn meta_delete(&self, key: &MetaKey) -> Result<bool> {
        Ok(lock(&self.meta).remove(key).is_some())
    }

    fn meta_list(&self, prefix: &str) -> Result<Vec<(MetaKey, String)>> {
        Ok(lock(&self.meta)
            .iter()
            .filter(|(key, _)| key.as_str().starts_with(prefix))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect())
    }
}
