//! What the store holds: its schema version, the rows of every table and the bytes they
//! take on the server.

use crate::PostgresStore;

impl PostgresStore {
    /// The schema version of the store's PostgreSQL schema.
    pub fn schema_version(&self) -> agent_memory_core::Result<u32> {
        self.read("read the schema version", |tx| {
            let version: Option<i32> = tx
                .query_one("SELECT max(version) FROM schema_version", &[])?
                .get(0);
            Ok(version.map_or(0, |v| u32::try_from(v).unwrap_or(0)))
        })
    }

    /// Every table of the store's schema with its number of rows, ordered by name.
    pub fn table_counts(&self) -> agent_memory_core::Result<Vec<(String, u64)>> {
        let schema = self.schema().to_owned();
        self.read("count the rows of every table", |tx| {
            let tables: Vec<String> = tx
                .query(
                    "SELECT c.relname::text FROM pg_class c \
                     JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE n.nspname = $1 AND c.relkind = 'r' \
                       AND c.relname <> 'schema_version' \
                     ORDER BY c.relname COLLATE \"C\"",
                    &[&schema],
                )?
                .iter()
                .map(|row| row.get(0))
                .collect();
            let mut counts = Vec::with_capacity(tables.len());
            for table in tables {
                // The names come from the catalogue of our own schema; quoted regardless.
                let rows: i64 = tx
                    .raw()
                    .query_one(&format!("SELECT count(*) FROM \"{table}\""), &[])?
                    .get(0);
                counts.push((table, crate::count(rows)));
            }
            Ok(counts)
        })
    }

    /// The bytes the store's tables and their indexes take on the server.
    pub fn size_bytes(&self) -> agent_memory_core::Result<u64> {
        let schema = self.schema().to_owned();
        self.read("read the database size", |tx| {
            let bytes: i64 = tx
                .query_one(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint \
                     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE n.nspname = $1 AND c.relkind = 'r'",
                    &[&schema],
                )?
                .get(0);
            Ok(crate::count(bytes))
        })
    }

    /// Deletes the whole memory: drops the store's PostgreSQL schema with every table in it.
    /// Other schemas of the database are untouched. For throwaway memories (tests,
    /// benchmarks); there is no undo.
    pub fn drop_schema(&self) -> agent_memory_core::Result<()> {
        let schema = self.schema().to_owned();
        self.write("drop the schema", |tx| {
            // The name was checked to be a plain identifier when the store was opened.
            tx.raw()
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))?;
            Ok(())
        })
    }
}
