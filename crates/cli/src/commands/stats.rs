//! `agent-memory stats`: what the database holds (schema version, size, rows per table). It
//! only reads: the database must exist, and is opened read-only.

use anyhow::Result;
use serde::Serialize;

use crate::output::{Table, human_bytes, print_json};
use crate::{GlobalArgs, database, progress::Progress};

/// `stats` takes no arguments of its own.
#[derive(Debug, clap::Args)]
pub(crate) struct StatsArgs {}

/// The report, as printed with `--json`.
#[derive(Debug, Serialize)]
struct DatabaseStats {
    database: String,
    schema_version: u32,
    size_bytes: u64,
    tables: Vec<TableRows>,
}

#[derive(Debug, Serialize)]
struct TableRows {
    name: String,
    rows: u64,
}

pub(crate) fn run(_args: &StatsArgs, global: &GlobalArgs) -> Result<()> {
    let store = database::open_existing(&global.db)?;
    let progress = Progress::start(None, "counting rows");
    let counts = store.table_counts()?;
    progress.finish();
    let stats = DatabaseStats {
        database: store.location(),
        schema_version: store.schema_version()?,
        size_bytes: store.size_bytes()?,
        tables: counts
            .into_iter()
            .map(|(name, rows)| TableRows { name, rows })
            .collect(),
    };
    if global.json {
        return print_json(&stats);
    }
    let mut summary = Table::new(["", ""]).without_header();
    summary.row(["database".to_owned(), stats.database.clone()]);
    summary.row([
        "schema version".to_owned(),
        stats.schema_version.to_string(),
    ]);
    summary.row([
        "size".to_owned(),
        format!(
            "{} ({} bytes)",
            human_bytes(stats.size_bytes),
            stats.size_bytes
        ),
    ]);
    let mut tables = Table::new(["table", "rows"]);
    for table in &stats.tables {
        tables.row([table.name.clone(), table.rows.to_string()]);
    }
    print!("{summary}\n{tables}");
    Ok(())
}
