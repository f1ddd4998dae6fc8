//! `agent-memory stats`: what the database holds (schema version, size, rows per table), the
//! contract's `memory_stats`. It only reads: the database must exist, and is opened read-only.

use anyhow::Result;

use crate::output::{Table, human_bytes, print_json};
use crate::{GlobalArgs, database, ops, progress::Progress};

/// `stats` takes no arguments of its own.
#[derive(Debug, clap::Args)]
pub(crate) struct StatsArgs {}

pub(crate) fn run(_args: &StatsArgs, global: &GlobalArgs) -> Result<()> {
    let store = database::open_existing(&global.db)?;
    let progress = Progress::start(None, "counting rows");
    let stats = ops::stats::stats(&global.env(&store), Default::default());
    progress.finish();
    let stats = stats?;
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
