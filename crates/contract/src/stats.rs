//! `memory_stats`: what the database file is (schema version, size) and the rows of every
//! table.

use crate::Result;
use schemars::JsonSchema;
use serde::Serialize;

use crate::Env;

/// The database and its tables.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DatabaseStats {
    /// The database file.
    pub database: String,
    /// The schema version of the file.
    pub schema_version: u32,
    /// The file's size in bytes.
    pub size_bytes: u64,
    /// Every table with its number of rows.
    pub tables: Vec<TableRows>,
}

/// One table.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TableRows {
    /// The table's name.
    pub name: String,
    /// Its rows.
    pub rows: u64,
}

/// The statistics of the open database.
pub fn stats(env: &Env<'_>, _: crate::operations::NoInput) -> Result<DatabaseStats> {
    let store = env.store;
    let tables = store
        .table_counts()?
        .into_iter()
        .map(|(name, rows)| TableRows { name, rows })
        .collect();
    Ok(DatabaseStats {
        database: store.location(),
        schema_version: store.schema_version()?,
        size_bytes: store.size_bytes()?,
        tables,
    })
}
