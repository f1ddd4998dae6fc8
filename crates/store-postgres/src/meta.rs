//! [`MetaStore`] on the `meta` table.

use agent_memory_core::store::meta::compare_and_set_conflict;
use agent_memory_core::{Error, MetaKey, MetaStore, Result};

use crate::{Fail, PostgresStore, Single, Tx, check_texts};

/// The value of `key`, read in the caller's transaction.
pub(crate) fn get(q: impl Single, key: &str) -> std::result::Result<Option<String>, Fail> {
    Ok(q.row("SELECT value FROM meta WHERE key = $1", &[&key])?
        .map(|row| row.get(0)))
}

/// Sets `key` in the caller's transaction and returns the previous value.
pub(crate) fn put(
    tx: &mut Tx<'_>,
    key: &str,
    value: &str,
) -> std::result::Result<Option<String>, Fail> {
    // The old value is read under the row lock the upsert takes, so the answer is exact even
    // with concurrent writers of the same key.
    let previous = tx
        .query_opt("SELECT value FROM meta WHERE key = $1 FOR UPDATE", &[&key])?
        .map(|row| row.get(0));
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ($1, $2) \
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        &[&key, &value],
    )?;
    Ok(previous)
}

fn check(key: &MetaKey, value: &str) -> Result<()> {
    check_texts(
        || format!("meta entry {:?}", key.as_str()),
        [("value", value)],
    )
}

impl MetaStore for PostgresStore {
    fn meta_get(&self, key: &MetaKey) -> Result<Option<String>> {
        self.read_one("read meta entry", |one| get(one, key.as_str()))
    }

    fn meta_set(&self, key: &MetaKey, value: &str) -> Result<Option<String>> {
        check(key, value)?;
        self.write("write meta entry", |tx| put(tx, key.as_str(), value))
    }

    fn meta_compare_and_set(
        &self,
        key: &MetaKey,
        expected: Option<&str>,
        value: &str,
    ) -> Result<()> {
        check(key, value)?;
        self.write("compare and set meta entry", |tx| {
            let found = match expected {
                // Absent expected: the insert itself is the check (it waits for a concurrent
                // insert of the same key and then does nothing).
                None => {
                    let inserted = tx.execute(
                        "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
                        &[&key.as_str(), &value],
                    )?;
                    if inserted == 1 {
                        return Ok(());
                    }
                    get(&mut *tx, key.as_str())?
                }
                Some(expected) => {
                    let updated = tx.execute(
                        "UPDATE meta SET value = $3 WHERE key = $1 AND value = $2",
                        &[&key.as_str(), &expected, &value],
                    )?;
                    if updated == 1 {
                        return Ok(());
                    }
                    get(&mut *tx, key.as_str())?
                }
            };
            Err(compare_and_set_conflict(key, expected, found.as_deref()).into())
        })
    }

    fn meta_set_all(&self, entries: &[(&MetaKey, &str)]) -> Result<()> {
        for (key, value) in entries {
            check(key, value)?;
        }
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        let values: Vec<&str> = entries.iter().map(|(_, v)| *v).collect();
        self.write("write meta entries", |tx| {
            // Later entries win over earlier ones with the same key, as one set after another.
            tx.execute(
                "INSERT INTO meta (key, value) \
                 SELECT DISTINCT ON (k) k, v FROM unnest($1::text[], $2::text[]) \
                   WITH ORDINALITY AS e(k, v, n) ORDER BY k, n DESC \
                 ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                &[&keys, &values],
            )?;
            Ok(())
        })
    }

    fn meta_delete(&self, key: &MetaKey) -> Result<bool> {
        self.write("delete meta entry", |tx| {
            Ok(tx.execute("DELETE FROM meta WHERE key = $1", &[&key.as_str()])? == 1)
        })
    }

    fn meta_list(&self, prefix: &str) -> Result<Vec<(MetaKey, String)>> {
        let rows = self.read("list meta entries", |tx| {
            // Byte order (`COLLATE "C"`), and a prefix match that treats `%` and `_` as text.
            Ok(tx.query(
                "SELECT key, value FROM meta \
                 WHERE left(key, length($1)) = $1 ORDER BY key COLLATE \"C\"",
                &[&prefix],
            )?)
        })?;
        rows.into_iter()
            .map(|row| {
                let key: String = row.get(0);
                let key =
                    MetaKey::new(key).map_err(|e| Error::corrupt("meta table", e.to_string()))?;
                Ok((key, row.get(1)))
            })
            .collect()
    }
}
