//! [`AuditStore`]: the audit trail, every write, review and forget of an item with who did it
//! and when, appended by the store in the same transaction as what it records.

use std::sync::Arc;

use crate::error::Result;
use crate::evidence::AuditEntry;
use crate::store::Page;

/// The audit trail of a store.
pub trait AuditStore: Send + Sync {
    /// Up to `limit` entries after `after` (from the first when `None`), oldest first, with
    /// how many entries the trail holds.
    fn audit_page(&self, after: Option<u64>, limit: usize) -> Result<Page<AuditEntry>>;
}

impl<S: AuditStore + ?Sized> AuditStore for &S {
    fn audit_page(&self, after: Option<u64>, limit: usize) -> Result<Page<AuditEntry>> {
        (**self).audit_page(after, limit)
    }
}

impl<S: AuditStore + ?Sized> AuditStore for Arc<S> {
    fn audit_page(&self, after: Option<u64>, limit: usize) -> Result<Page<AuditEntry>> {
        (**self).audit_page(after, limit)
    }
}
