//! The subcommands, one module each: a module holds its clap arguments and its `run`, and
//! this file only names it in [`Command`] and dispatches to it.

mod demo;
mod stats;

use anyhow::Result;

use crate::GlobalArgs;

/// Every subcommand.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// What the database holds: schema version, size and the rows of every table.
    Stats(stats::StatsArgs),
    /// A guided tour: recordings, procedural memory, turn memory and browser memory on this database.
    Demo(demo::DemoArgs),
}

/// Runs `command` with the global options.
pub(crate) fn run(command: Command, global: &GlobalArgs) -> Result<()> {
    match command {
        Command::Stats(args) => stats::run(&args, global),
        Command::Demo(args) => demo::run(&args, global),
    }
}
