//! `agent-memory`: the command line over one agent-memory SQLite file, so an agent written in
//! any language can use the memory, and a person can see what it holds.
//!
//! ```text
//! agent-memory [--db PATH] [--json] <command>
//! ```
//!
//! The database is `--db`, else `$AGENT_MEMORY_DB`, else `.agent-memory/memory.db`; its
//! folder is created on first use. Every command prints a readable table, or JSON with
//! `--json`. A failure prints one line `error: ...` naming the input and exits with 1; a
//! usage error exits with 2.

#![deny(missing_docs)]

mod commands;
mod database;
mod output;
mod progress;

use std::process::ExitCode;

use clap::Parser;

/// The parsed command line.
#[derive(Debug, Parser)]
#[command(
    name = "agent-memory",
    version,
    about = "Durable memory for AI agents, in one SQLite file"
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: commands::Command,
}

/// The options every command takes.
#[derive(Debug, clap::Args)]
pub(crate) struct GlobalArgs {
    /// The SQLite file to use; its folder is created on first use.
    #[arg(
        long,
        global = true,
        env = "AGENT_MEMORY_DB",
        default_value = ".agent-memory/memory.db",
        value_name = "PATH"
    )]
    pub(crate) db: std::path::PathBuf,
    /// Print JSON for machines instead of tables.
    #[arg(long, global = true)]
    pub(crate) json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match commands::run(cli.command, &cli.global) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // `{:#}` joins the error's causes on one line: "what failed: why".
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
