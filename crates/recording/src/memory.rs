//! Agent memory with per-key provenance and a sensitive flag, and the [`Snapshot`] of it
//! taken after a tool call.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use agent_memory_core::Timestamp;
use agent_memory_core::store::tool_log::{MemorySnapshot, SnapshotEntry, SnapshotValue};

use crate::args::Args;

/// Where a memory value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Provenance {
    /// The tool whose call wrote the value, when a tool did.
    pub tool: Option<String>,
    /// When it was written.
    pub at: Timestamp,
}

impl Provenance {
    /// Written by a call of `tool` at `at`.
    pub fn tool(tool: impl Into<String>, at: Timestamp) -> Self {
        Provenance {
            tool: Some(tool.into()),
            at,
        }
    }

    /// Written at `at` by something other than a tool (the user, a config file).
    pub fn unknown(at: Timestamp) -> Self {
        Provenance { tool: None, at }
    }
}

/// One value of a [`Memory`].
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryEntry {
    /// The value.
    pub value: String,
    /// Whether the value is a secret: never logged, recorded or stored.
    pub sensitive: bool,
    /// Who wrote it and when.
    pub provenance: Provenance,
}

/// The agent's memory: string keys to string values, each with provenance.
///
/// A key once marked sensitive stays sensitive for the memory's life, as in Trailblaze: a
/// later [`Memory::remember`] of it stores the new value as sensitive, and
/// [`Memory::forget`] drops the value but keeps the mark. Only [`Memory::clear`] drops marks.
///
/// ```
/// use agent_memory_core::Timestamp;
/// use agent_memory_recording::{Lookup, Memory, Provenance};
///
/// let mut memory = Memory::new();
/// let at = Timestamp::from_millis(1);
/// memory.remember("merchant_email", "shop@example.com", Provenance::tool("merchantFactory_load", at));
/// memory.remember_secret("password", "9999zq-secret", Provenance::unknown(at));
/// assert_eq!(memory.lookup("merchant_email"), Some("shop@example.com"));
/// assert!(memory.snapshot().to_stored().entries.iter().all(|e| e.value.plain() != Some("9999zq-secret")));
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Memory {
    entries: BTreeMap<String, MemoryEntry>,
    marked: BTreeSet<String>,
    /// Values sensitive keys held before being overwritten or forgotten, with their keys:
    /// still secrets, so snapshots keep scrubbing them from later logs.
    retired: BTreeMap<String, String>,
}

impl Memory {
    /// An empty memory.
    pub fn new() -> Self {
        Memory::default()
    }

    /// Sets `key` to `value`; sensitive when the key was ever marked sensitive.
    pub fn remember(
        &mut self,
        key: impl Into<String>,
        value: impl Into<String>,
        provenance: Provenance,
    ) {
        self.insert(key.into(), value.into(), false, provenance);
    }

    /// Sets `key` to a sensitive `value`.
    pub fn remember_secret(
        &mut self,
        key: impl Into<String>,
        value: impl Into<String>,
        provenance: Provenance,
    ) {
        self.insert(key.into(), value.into(), true, provenance);
    }

    /// Marks `key` sensitive, whether or not it holds a value yet.
    pub fn mark_sensitive(&mut self, key: &str) {
        self.marked.insert(key.to_owned());
        if let Some(entry) = self.entries.get_mut(key) {
            entry.sensitive = true;
        }
    }

    /// Whether `key` is marked sensitive.
    pub fn is_sensitive(&self, key: &str) -> bool {
        self.marked.contains(key)
    }

    /// Forgets every value and every sensitive mark.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.marked.clear();
        self.retired.clear();
    }

    fn retire(&mut self, key: &str) {
        if let Some(old) = self
            .entries
            .get(key)
            .filter(|e| e.sensitive && !e.value.is_empty())
        {
            self.retired.insert(old.value.clone(), key.to_owned());
        }
    }

    fn insert(&mut self, key: String, value: String, sensitive: bool, provenance: Provenance) {
        let sensitive = sensitive || self.marked.contains(&key);
        if sensitive {
            self.marked.insert(key.clone());
        }
        self.retire(&key);
        self.entries.insert(
            key,
            MemoryEntry {
                value,
                sensitive,
                provenance,
            },
        );
    }

    /// Removes the value of `key` (a sensitive mark stays); returns its entry.
    pub fn forget(&mut self, key: &str) -> Option<MemoryEntry> {
        self.retire(key);
        self.entries.remove(key)
    }

    /// The entry of `key`.
    pub fn entry(&self, key: &str) -> Option<&MemoryEntry> {
        self.entries.get(key)
    }

    /// Every entry, by key.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &MemoryEntry)> {
        self.entries.iter().map(|(k, e)| (k.as_str(), e))
    }

    /// The keys now in memory: take them before a call, pass them to
    /// [`Memory::snapshot_after`] after it.
    pub fn keys(&self) -> BTreeSet<String> {
        self.entries.keys().cloned().collect()
    }

    /// The snapshot after a tool call; `keys_before` are the keys that existed before it.
    pub fn snapshot_after(&self, keys_before: &BTreeSet<String>) -> Snapshot {
        self.snapshot_with(|key| keys_before.contains(key))
    }

    /// A snapshot in which every key counts as existing before (for linting and replay).
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_with(|_| true)
    }

    fn snapshot_with(&self, existed_before: impl Fn(&str) -> bool) -> Snapshot {
        let retired = self
            .retired
            .iter()
            .filter(|(value, key)| {
                self.entries
                    .get(key.as_str())
                    .is_none_or(|now| now.value != **value)
            })
            .map(|(value, key)| (key.clone(), value.clone()))
            .collect();
        Snapshot {
            retired,
            entries: self
                .entries
                .iter()
                .map(|(key, entry)| {
                    let item = SnapshotItem {
                        value: Some(entry.value.clone()),
                        sensitive: entry.sensitive,
                        written_by: entry.provenance.tool.clone(),
                        written_at: Some(entry.provenance.at),
                        existed_before: existed_before(key),
                    };
                    (key.clone(), item)
                })
                .collect(),
        }
    }
}

/// One key of a [`Snapshot`].
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotItem {
    /// The value; `None` for a sensitive value read back from a stored log.
    pub value: Option<String>,
    /// Whether the value is a secret.
    pub sensitive: bool,
    /// The tool whose call wrote the key, when known.
    pub written_by: Option<String>,
    /// When the key was written, when known.
    pub written_at: Option<Timestamp>,
    /// Whether the key existed before the call (false: the call created it).
    pub existed_before: bool,
}

impl SnapshotItem {
    /// An ordinary `value`, written by no known tool, that existed before the call.
    pub fn new(value: impl Into<String>) -> Self {
        SnapshotItem {
            value: Some(value.into()),
            sensitive: false,
            written_by: None,
            written_at: None,
            existed_before: true,
        }
    }

    /// A sensitive `value`, otherwise as [`SnapshotItem::new`].
    pub fn secret(value: impl Into<String>) -> Self {
        SnapshotItem {
            sensitive: true,
            ..SnapshotItem::new(value)
        }
    }

    /// Written by a call of `tool`.
    #[must_use]
    pub fn with_writer(mut self, tool: impl Into<String>) -> Self {
        self.written_by = Some(tool.into());
        self
    }

    /// Written at `at`.
    #[must_use]
    pub fn with_written_at(mut self, at: Timestamp) -> Self {
        self.written_at = Some(at);
        self
    }

    /// Existing before the call (`true`) or created by it.
    #[must_use]
    pub fn with_existed_before(mut self, existed_before: bool) -> Self {
        self.existed_before = existed_before;
        self
    }
}

/// The memory right after one tool call, with provenance. Unlike the stored
/// [`MemorySnapshot`], it may hold sensitive values: it lives only in process memory.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// The keys and their items.
    pub entries: BTreeMap<String, SnapshotItem>,
    /// Earlier values of sensitive keys (key, value): scrubbed like current secrets, never
    /// stored.
    retired: Vec<(String, String)>,
}

impl Snapshot {
    /// A snapshot of `entries`.
    pub fn from_entries(entries: BTreeMap<String, SnapshotItem>) -> Self {
        Snapshot {
            entries,
            retired: Vec::new(),
        }
    }

    /// Earlier values of sensitive keys, as `(key, value)`: secrets still, to scrub.
    pub(crate) fn retired_secrets(&self) -> &[(String, String)] {
        &self.retired
    }

    /// Reads a stored snapshot back; sensitive entries come without a value.
    pub fn from_stored(stored: &MemorySnapshot) -> Self {
        let entries = stored
            .entries
            .iter()
            .map(|entry| {
                let item = SnapshotItem {
                    value: entry.value.plain().map(str::to_owned),
                    sensitive: matches!(entry.value, SnapshotValue::Sensitive),
                    written_by: entry.written_by.clone(),
                    written_at: entry.written_at,
                    existed_before: entry.existed_before,
                };
                (entry.key.clone(), item)
            })
            .collect();
        Snapshot::from_entries(entries)
    }

    /// The form a store keeps: sensitive values dropped, only their keys kept.
    pub fn to_stored(&self) -> MemorySnapshot {
        MemorySnapshot {
            entries: self
                .entries
                .iter()
                .map(|(key, item)| SnapshotEntry {
                    key: key.clone(),
                    value: match (&item.value, item.sensitive) {
                        (Some(value), false) => SnapshotValue::Plain(value.clone()),
                        _ => SnapshotValue::Sensitive,
                    },
                    written_by: item.written_by.clone(),
                    written_at: item.written_at,
                    existed_before: item.existed_before,
                })
                .collect(),
        }
    }
}

/// A value as debug output shows it: a secret as `[sensitive]`.
fn shown(value: &str, sensitive: bool) -> &str {
    if sensitive { "[sensitive]" } else { value }
}

impl fmt::Debug for MemoryEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryEntry")
            .field("value", &shown(&self.value, self.sensitive))
            .field("sensitive", &self.sensitive)
            .field("provenance", &self.provenance)
            .finish()
    }
}

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Memory")
            .field("entries", &self.entries)
            .field("marked", &self.marked)
            .field("retired", &self.retired.len())
            .finish()
    }
}

impl fmt::Debug for SnapshotItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SnapshotItem")
            .field(
                "value",
                &self.value.as_deref().map(|v| shown(v, self.sensitive)),
            )
            .field("sensitive", &self.sensitive)
            .field("written_by", &self.written_by)
            .field("written_at", &self.written_at)
            .field("existed_before", &self.existed_before)
            .finish()
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("entries", &self.entries)
            .field("retired", &self.retired.len())
            .finish()
    }
}

/// Something interpolation can read values from.
pub trait Lookup {
    /// The value of `key`, if there is one.
    fn lookup(&self, key: &str) -> Option<&str>;

    /// The trail arguments `args.` tokens read; none by default.
    fn args(&self) -> Option<&Args> {
        None
    }
}

impl Lookup for Memory {
    fn lookup(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(|e| e.value.as_str())
    }
}

impl Lookup for Snapshot {
    fn lookup(&self, key: &str) -> Option<&str> {
        self.entries.get(key).and_then(|item| item.value.as_deref())
    }
}

impl Lookup for BTreeMap<String, String> {
    fn lookup(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<S: std::hash::BuildHasher> Lookup for HashMap<String, String, S> {
    fn lookup(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<L: Lookup + ?Sized> Lookup for &L {
    fn lookup(&self, key: &str) -> Option<&str> {
        (**self).lookup(key)
    }

    fn args(&self) -> Option<&Args> {
        (**self).args()
    }
}
