//! `agent-memory demo`: the guided tour of the memories (`agent_memory_contract::tour`) on the
//! database, which must be fresh. The clock is fixed, so the tour prints the same text every
//! time.

use anyhow::Result;

use crate::GlobalArgs;

/// `demo` takes no arguments of its own.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {}

pub(crate) fn run(_args: &DemoArgs, global: &GlobalArgs) -> Result<()> {
    let store = global.open()?;
    // The tour writes sample memories; it never mixes them into a database in use.
    let used: Vec<String> = store
        .table_counts()?
        .into_iter()
        .filter(|(table, rows)| table != "meta" && *rows > 0)
        .map(|(table, _)| table)
        .collect();
    if !used.is_empty() {
        anyhow::bail!(
            "the tour needs a fresh database, but {} already holds data ({}); pass --db with a new file",
            global.db.display(),
            used.join(", ")
        );
    }
    println!("agent-memory tour on {}\n", global.db.display());
    let mut out = std::io::stdout().lock();
    agent_memory_contract::tour::run(&store, &global.db, &mut out)?;
    drop(out);
    println!(
        "The database now holds all of it: try `agent-memory --db {} stats`.",
        global.db.display()
    );
    Ok(())
}
