//! [`MetaStore`] on the `meta` table.

use agent_memory_core::store::meta::compare_and_set_conflict;
use std::sync::OnceLock;

use agent_memory_core::{MetaKey, MetaStore, Result};
use rusqlite::{OptionalExtension, params};

use crate::{SqliteStore, to_core};

pub(crate) fn get(conn: &rusqlite::Connection, key: &MetaKey) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([key.as_str()], |row| row.get(0))
        .optional()
}

/// The value of each of `keys`, in their order: one statement for up to [`KEYS_AT_ONCE`]
/// keys (a trajectory operation reads a partition's four settings first, every call).
pub(crate) fn get_all(
    conn: &rusqlite::Connection,
    keys: &[&str],
) -> rusqlite::Result<Vec<Option<String>>> {
    let mut values = vec![None; keys.len()];
    for (chunk, found) in keys
        .chunks(KEYS_AT_ONCE)
        .zip(values.chunks_mut(KEYS_AT_ONCE))
    {
        let mut stmt = conn.prepare_cached(get_all_sql(chunk.len()))?;
        let mut rows = stmt.query(rusqlite::params_from_iter(chunk.iter().copied()))?;
        while let Some(row) = rows.next()? {
            let i: usize = row.get(0)?;
            if let Some(slot) = found.get_mut(i) {
                *slot = Some(row.get(1)?);
            }
        }
    }
    Ok(values)
}

/// How many keys [`get_all`] reads with one statement.
const KEYS_AT_ONCE: usize = 8;

/// The statement of [`get_all`] for `n` keys (1 to [`KEYS_AT_ONCE`]), built once: a point
/// lookup per key, each row with the key's place. (`key IN (...)` would build a temporary
/// index of the list at every run, which costs more than the lookups it saves.)
fn get_all_sql(n: usize) -> &'static str {
    static SQL: OnceLock<Vec<String>> = OnceLock::new();
    let all = SQL.get_or_init(|| {
        (1..=KEYS_AT_ONCE)
            .map(|n| {
                (0..n)
                    .map(|i| format!("SELECT {i}, value FROM meta WHERE key = ?{}", i + 1))
                    .collect::<Vec<_>>()
                    .join(" UNION ALL ")
            })
            .collect()
    });
    &all[n.clamp(1, KEYS_AT_ONCE) - 1]
}

pub(crate) fn put(conn: &rusqlite::Connection, key: &MetaKey, value: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![key.as_str(), value])?;
    Ok(())
}

impl MetaStore for SqliteStore {
    fn meta_get(&self, key: &MetaKey) -> Result<Option<String>> {
        self.read("read meta entry", |conn| get(conn, key))
    }

    fn meta_get_all(&self, keys: &[&MetaKey]) -> Result<Vec<Option<String>>> {
        let keys: Vec<&str> = keys.iter().map(|key| key.as_str()).collect();
        self.read("read meta entries", |conn| get_all(conn, &keys))
    }

    fn meta_set(&self, key: &MetaKey, value: &str) -> Result<Option<String>> {
        let op = "write meta entry";
        self.write(op, |tx| {
            let previous = get(tx, key).map_err(|e| to_core(op, e))?;
            put(tx, key, value).map_err(|e| to_core(op, e))?;
            Ok(previous)
        })
    }

    fn meta_compare_and_set(
        &self,
        key: &MetaKey,
        expected: Option<&str>,
        value: &str,
    ) -> Result<()> {
        let op = "compare and set meta entry";
        self.write(op, |tx| {
            let found = get(tx, key).map_err(|e| to_core(op, e))?;
            if found.as_deref() != expected {
                return Err(compare_and_set_conflict(key, expected, found.as_deref()));
            }
            put(tx, key, value).map_err(|e| to_core(op, e))
        })
    }

    fn meta_set_all(&self, entries: &[(&MetaKey, &str)]) -> Result<()> {
        let op = "write meta entries";
        self.write(op, |tx| {
            for (key, value) in entries {
                put(tx, key, value).map_err(|e| to_core(op, e))?;
            }
            Ok(())
        })
    }

    fn meta_delete(&self, key: &MetaKey) -> Result<bool> {
        let op = "delete meta entry";
        self.write(op, |tx| {
            tx.prepare_cached("DELETE FROM meta WHERE key = ?1")
                .and_then(|mut stmt| stmt.execute([key.as_str()]))
                .map(|n| n > 0)
                .map_err(|e| to_core(op, e))
        })
    }

    fn meta_list(&self, prefix: &str) -> Result<Vec<(MetaKey, String)>> {
        let rows: Vec<(String, String)> = self.read("list meta entries", |conn| {
            // Prefix match by range, not LIKE, so `%` and `_` in a prefix mean themselves.
            let mut stmt = conn.prepare_cached(
                "SELECT key, value FROM meta WHERE substr(key, 1, length(?1)) = ?1 ORDER BY key",
            )?;
            let rows = stmt.query_map([prefix], |row| Ok((row.get(0)?, row.get(1)?)))?;
            rows.collect()
        })?;
        rows.into_iter()
            .map(|(key, value)| {
                let key = MetaKey::new(key)
                    .map_err(|e| agent_memory_core::Error::corrupt("meta table", e.to_string()))?;
                Ok((key, value))
            })
            .collect()
    }
}
