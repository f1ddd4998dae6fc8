//! The subcommands, one module each: a module holds its clap arguments and its `run`, and
//! this file only names it in [`Command`] and dispatches to it.

mod browser;
mod check;
mod demo;
mod forget;
mod list;
mod notes;
// Read by tests only: the unit test below `main` and the integration tests.
#[cfg(test)]
pub(crate) mod outputs;
mod recording;
pub(crate) mod schemas;
mod stats;
mod trajectory;
mod turns;

use anyhow::Result;
use schemars::Schema;

use crate::GlobalArgs;

/// Every subcommand.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// What the database holds: schema version, size and the rows of every table.
    Stats(stats::StatsArgs),
    /// A guided tour: recordings, procedural memory, turn memory and browser memory on this database.
    Demo(demo::DemoArgs),
    /// Procedural memory: record episodes, crystallize patterns, recall what worked.
    Trajectory(trajectory::TrajectoryArgs),
    /// Browser-agent memory: context, runs, resume, fork, import, export, prune.
    Browser(browser::BrowserArgs),
    /// Recordings of tool calls: templatize logs into a trail, replay it, lint it, import logs.
    Recording(recording::RecordingArgs),
    /// Check the database: SQLite's integrity check and the store's own invariants.
    Check(check::CheckArgs),
    /// A coding session's turns: show them as the user or the model sees them, compact them.
    Turns(turns::TurnsArgs),
    /// Every partition, session and browser scope the database holds, with counts.
    List(list::ListArgs),
    /// Forget one partition, session, browser scope (or site), run or trajectory, for good.
    Forget(forget::ForgetArgs),
    /// Notes: a /memories tree of text files per scope, edited with the memory tool's commands.
    Notes(notes::NotesArgs),
    /// The JSON Schema of every input and output of the JSON contract.
    Schemas(schemas::SchemasArgs),
    /// Serve every memory to MCP clients (Model Context Protocol), over stdio or `--http`.
    Mcp(crate::mcp::McpArgs),
    /// See what the memory holds: a local inspector page in the browser, with forget.
    Ui(crate::ui::UiArgs),
}

impl Command {
    /// Whether the command is a long-running server (it keeps the default of ignoring SIGPIPE).
    pub(crate) fn serves(&self) -> bool {
        matches!(self, Command::Mcp(_) | Command::Ui(_))
    }
}

/// The schemas of what commands print with `--json` beyond the operations' outputs
/// (`commands/outputs.rs` says which command prints which).
pub(crate) fn schemas() -> Vec<(String, Schema)> {
    let mut all = Vec::new();
    all.extend(recording::schemas());
    all.extend(turns::schemas());
    all
}

/// Runs `command` with the global options.
pub(crate) fn run(command: Command, global: &GlobalArgs) -> Result<()> {
    match command {
        Command::Stats(args) => stats::run(&args, global),
        Command::Demo(args) => demo::run(&args, global),
        Command::Trajectory(args) => trajectory::run(&args, global),
        Command::Browser(args) => browser::run(&args, global),
        Command::Recording(args) => recording::run(args, global),
        Command::Check(args) => check::run(&args, global),
        Command::Turns(args) => turns::run(args, global),
        Command::List(args) => list::run(&args, global),
        Command::Forget(args) => forget::run(&args, global),
        Command::Notes(args) => notes::run(&args, global),
        Command::Schemas(args) => schemas::run(&args, global),
        Command::Mcp(args) => crate::mcp::run(&args, global),
        Command::Ui(args) => crate::ui::run(&args, global),
    }
}

/// The schema of what a command prints, under its file stem.
fn output<T: schemars::JsonSchema>(stem: &str) -> (String, Schema) {
    (stem.to_owned(), crate::ops::schema_of::<T>())
}
