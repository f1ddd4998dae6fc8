//! The subcommands, one module each: a module holds its clap arguments and its `run`, and
//! this file only names it in [`Command`] and dispatches to it.

mod stats;

use anyhow::Result;

use crate::GlobalArgs;

/// Every subcommand.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// What the database holds: schema version, size and the rows of every table.
    Stats(stats::StatsArgs),
}

/// Runs `command` with the global options.
pub(crate) fn run(command: Command, global: &GlobalArgs) -> Result<()> {
    match command {
        Command::Stats(args) => stats::run(&args, global),
    }
}
