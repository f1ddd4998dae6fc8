//! [`AuditStore`]: the audit trail, every write, review and forget of an item with who did it
//! and when, appended by the store in the same transaction as what it records.

use std::sync::Arc;

use crate::error::Result;
use crate::evidence::{AuditEntry, AuditFilter, Vouch};
use crate::names::MetaKey;
use crate::provenance::Provenance;
use crate::store::Page;

/// The audit trail of a store.
pub trait AuditStore: Send + Sync {
    /// Up to `limit` entries after `after` (from the first when `None`), oldest first, with
    /// how many entries the trail holds.
    fn audit_page(&self, after: Option<u64>, limit: usize) -> Result<Page<AuditEntry>> {
        self.audit_select(&AuditFilter::all(), after, limit)
    }

    /// Up to `limit` entries `filter` takes after `after` (from the first when `None`), oldest
    /// first, with how many entries of the trail it takes. With
    /// [`before`](AuditFilter::before), the page holds the newest of the entries between
    /// the two bounds, still oldest first. The total counts the filter's memory and action,
    /// not the bounds. Checks the filter ([`AuditFilter::check`]) first.
    fn audit_select(
        &self,
        filter: &AuditFilter,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Page<AuditEntry>>;

    /// Sets the store's setting `key` to `value` (the [`MetaStore`](crate::MetaStore) entry a
    /// setting is kept in, such as the screen policy) and appends who changed it to the trail,
    /// in one transaction: an entry with action `write`, memory
    /// [`STORE_MEMORY`](crate::evidence::STORE_MEMORY), the key as its item, no scope, and
    /// [`setting_detail`](crate::evidence::setting_detail) as its detail. Returns the previous
    /// value. Setting the value a key already has is still recorded: someone chose it.
    fn setting_set(&self, key: &MetaKey, value: &str, by: &Provenance) -> Result<Option<String>>;

    /// Records that `by` vouched for the texts `vouches` name and appends each to the trail,
    /// all in one transaction: per vouch an entry with action `approve`, its memory, no
    /// scope, its container as the item and [`Vouch::detail`] as the detail. Returns how many
    /// are new; vouching again for a text already vouched for is recorded in the trail and
    /// kept once. Checks every vouch ([`Vouch::check`]) before any write: one bad vouch
    /// writes nothing.
    fn vouch(&self, vouches: &[Vouch<'_>], by: &Provenance) -> Result<usize>;

    /// The digests of the texts vouched for in `memory`'s `container`, in ascending order.
    fn vouched(&self, memory: &str, container: &str) -> Result<Vec<String>>;
}

impl<S: AuditStore + ?Sized> AuditStore for &S {
    fn audit_select(
        &self,
        filter: &AuditFilter,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Page<AuditEntry>> {
        (**self).audit_select(filter, after, limit)
    }

    fn setting_set(&self, key: &MetaKey, value: &str, by: &Provenance) -> Result<Option<String>> {
        (**self).setting_set(key, value, by)
    }

    fn vouch(&self, vouches: &[Vouch<'_>], by: &Provenance) -> Result<usize> {
        (**self).vouch(vouches, by)
    }

    fn vouched(&self, memory: &str, container: &str) -> Result<Vec<String>> {
        (**self).vouched(memory, container)
    }
}

impl<S: AuditStore + ?Sized> AuditStore for Arc<S> {
    fn audit_select(
        &self,
        filter: &AuditFilter,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Page<AuditEntry>> {
        (**self).audit_select(filter, after, limit)
    }

    fn setting_set(&self, key: &MetaKey, value: &str, by: &Provenance) -> Result<Option<String>> {
        (**self).setting_set(key, value, by)
    }

    fn vouch(&self, vouches: &[Vouch<'_>], by: &Provenance) -> Result<usize> {
        (**self).vouch(vouches, by)
    }

    fn vouched(&self, memory: &str, container: &str) -> Result<Vec<String>> {
        (**self).vouched(memory, container)
    }
}
