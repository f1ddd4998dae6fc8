//! What a database holds: the row count of every table and the size of the file, for
//! inspecting a store from the command line.

use crate::SqliteStore;

impl SqliteStore {
    /// Every table of the schema with its number of rows, ordered by table name. SQLite's own
    /// tables (`sqlite_*`) are left out, and so are the search index's virtual table and the
    /// shadow tables it keeps its pages in (FTS5 internals that hold rows from the start).
    ///
    /// ```
    /// let store = agent_memory_sqlite::SqliteStore::open_in_memory()?;
    /// let counts = store.table_counts()?;
    /// assert!(counts.iter().any(|(table, _)| table == "meta"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn table_counts(&self) -> agent_memory_core::Result<Vec<(String, u64)>> {
        self.read("count the rows of every table", |conn| {
            let tables: Vec<String> = conn
                .prepare_cached(
                    "SELECT name FROM pragma_table_list \
                     WHERE schema = 'main' AND type = 'table' \
                     AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
                     ORDER BY name",
                )?
                .query_map([], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            tables
                .into_iter()
                .map(|table| {
                    // A table name cannot be a bound parameter; it comes from the schema
                    // itself and is quoted as an identifier.
                    let sql = format!("SELECT count(*) FROM {}", quote_identifier(&table));
                    let rows: i64 = conn.query_row(&sql, [], |row| row.get(0))?;
                    Ok((table, u64::try_from(rows).unwrap_or(0)))
                })
                .collect()
        })
    }

    /// The size of the database in bytes: its page count times its page size. Pages still in
    /// the write-ahead log count, so the figure does not depend on when SQLite last
    /// checkpointed; an in-memory database reports the memory its pages take.
    pub fn file_size(&self) -> agent_memory_core::Result<u64> {
        self.read("read the database size", |conn| {
            let pages: i64 = conn.pragma_query_value(None, "page_count", |row| row.get(0))?;
            let page_size: i64 = conn.pragma_query_value(None, "page_size", |row| row.get(0))?;
            Ok(u64::try_from(pages.saturating_mul(page_size)).unwrap_or(0))
        })
    }
}

/// `name` as a double-quoted SQL identifier, with embedded quotes doubled.
fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::quote_identifier;

    #[test]
    fn identifiers_are_quoted_with_inner_quotes_doubled() {
        for (name, quoted) in [
            ("meta", "\"meta\""),
            ("odd\"name", "\"odd\"\"name\""),
            ("", "\"\""),
        ] {
            assert_eq!(quote_identifier(name), quoted, "{name}");
        }
    }
}
