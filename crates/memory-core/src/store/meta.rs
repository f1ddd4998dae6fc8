//! [`MetaStore`]: a small key-value store a backend keeps about itself (who created the
//! file, which build last migrated it) and that tools may use for their own bookkeeping.

use crate::error::Result;
use crate::names::MetaKey;

/// Key-value metadata of a store. Values are plain text.
pub trait MetaStore: Send + Sync {
    /// The value of `key`, or `None` when it is not set.
    fn meta_get(&self, key: &MetaKey) -> Result<Option<String>>;

    /// The value of each of `keys`, in their order (`None` for a key not set). A backend
    /// reads them together where it can (SQLite: in one read transaction, so from one
    /// snapshot and at the cost of one read); the default reads them one at a time.
    fn meta_get_all(&self, keys: &[&MetaKey]) -> Result<Vec<Option<String>>> {
        keys.iter().map(|key| self.meta_get(key)).collect()
    }

    /// Sets `key` to `value` and returns the previous value.
    fn meta_set(&self, key: &MetaKey, value: &str) -> Result<Option<String>>;

    /// Sets `key` to `value` only when its current value is `expected` (`None`: not set).
    ///
    /// When the current value differs, nothing changes and the call fails with
    /// [`Error::Conflict`](crate::Error::Conflict).
    fn meta_compare_and_set(
        &self,
        key: &MetaKey,
        expected: Option<&str>,
        value: &str,
    ) -> Result<()>;

    /// Sets every `(key, value)` pair at once: either all are written or, on error, none.
    fn meta_set_all(&self, entries: &[(&MetaKey, &str)]) -> Result<()>;

    /// Removes `key`; returns whether it was set.
    fn meta_delete(&self, key: &MetaKey) -> Result<bool>;

    /// Every entry whose key starts with `prefix`, ordered by key (byte order).
    fn meta_list(&self, prefix: &str) -> Result<Vec<(MetaKey, String)>>;
}

/// The conflict reported when a compare-and-set finds another value. Shared by backends so
/// every implementation words it the same way.
pub fn compare_and_set_conflict(
    key: &MetaKey,
    expected: Option<&str>,
    found: Option<&str>,
) -> crate::Error {
    crate::Error::conflict(
        "meta entry",
        key.as_str(),
        format!("expected {expected:?}, found {found:?}"),
    )
}
