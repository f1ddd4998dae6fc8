//! `agent-memory`: the command line over one agent-memory SQLite file, so an agent written in
//! any language can use the memory, and a person can see what it holds. The binary is a
//! one-line `main` over [`run`], which the language packages call to ship the same command.
//!
//! ```text
//! agent-memory [--db PATH] [--json] <command>
//! ```
//!
//! The database is `--db`, else `$AGENT_MEMORY_DB`, else `agent-memory.db` in the working
//! folder (not inside browser-agent-driver's own `.agent-memory/` folder). A command that
//! writes creates it (and its folder) on first use; a command that only reads opens it
//! read-only and never creates, migrates or changes it. Every command prints a readable table, or JSON with
//! `--json`. A failure prints one line `error: ...` naming the input and exits with 1; a
//! usage error exits with 2. With `--json`, a failure is one JSON object on stderr instead,
//! `{"error": {"kind": ..., "message": ..., "input": ...}}`, with the same exit codes.

#![deny(missing_docs)]

mod commands;
mod input;
mod mcp;
mod operation;
mod output;
mod progress;
mod ui;

// The contract's operations and store opening, under the names the commands use.
use agent_memory_contract as ops;
use agent_memory_contract::database;
/// The error and its causes on one line, "what failed: why", each cause once.
pub(crate) fn one_line(error: &anyhow::Error) -> String {
    ops::one_line(error.as_ref())
}

/// The contract's error for `error`, raised by the command line or an operation: the kind
/// and input of the first cause that says them, the whole chain as its message.
pub(crate) fn contract_error(error: &anyhow::Error) -> ops::Error {
    ops::Error::classify(error.as_ref())
}

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};

/// The parsed command line.
#[derive(Debug, Parser)]
#[command(
    name = "agent-memory",
    version,
    about = "Durable memory for AI agents, in one SQLite file or a shared PostgreSQL database"
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
    /// The database: a SQLite file (a command that writes creates it, and its folder, on first
    /// use) or a PostgreSQL URL (`postgres://user@host/db`, optionally `?schema=name`; the
    /// memory's schema is created on first write).
    #[arg(
        long,
        global = true,
        env = "AGENT_MEMORY_DB",
        default_value = "agent-memory.db",
        value_name = "PATH|URL",
        // A URL may carry a password: --help must not print it.
        hide_env_values = true
    )]
    pub(crate) db: std::path::PathBuf,
    /// Print JSON for machines instead of tables.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// The time to take as "now", for reproducible output: RFC 3339
    /// (`2026-01-01T00:00:00Z`) or milliseconds since the epoch. Default: the system clock.
    #[arg(long, global = true, env = "AGENT_MEMORY_NOW", value_name = "TIME", value_parser = parse_now)]
    pub(crate) now: Option<agent_memory_core::Timestamp>,
}

/// `--now`: RFC 3339 or epoch milliseconds.
fn parse_now(text: &str) -> Result<agent_memory_core::Timestamp, String> {
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(agent_memory_core::Timestamp::from_millis(ms));
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| agent_memory_core::Timestamp::from_millis(t.timestamp_millis()))
        .map_err(|e| format!("{text:?} is neither RFC 3339 nor milliseconds since the epoch ({e})"))
}

impl GlobalArgs {
    /// The environment the contract's operations run in, on `store`.
    pub(crate) fn env<'a>(&self, store: &'a database::Store) -> ops::Env<'a> {
        ops::Env {
            client: Some("cli".to_owned()),
            store,
            clock: self.clock(),
            ids: Box::new(agent_memory_core::RandomIds::new()),
            // The user names their own files.
            files: ops::files::FileAccess::Any,
        }
    }

    /// "Now": `--now` / `AGENT_MEMORY_NOW` when given, else the system clock.
    pub(crate) fn clock(&self) -> Box<dyn agent_memory_core::Clock> {
        match self.now {
            Some(at) => Box::new(agent_memory_core::ManualClock::new(at)),
            None => Box::new(agent_memory_core::SystemClock),
        }
    }

    /// [`Self::clock`], shared with a store that stamps its writes.
    pub(crate) fn shared_clock(&self) -> agent_memory_core::SharedClock {
        match self.now {
            Some(at) => {
                agent_memory_core::SharedClock::new(agent_memory_core::ManualClock::new(at))
            }
            None => agent_memory_core::SharedClock::default(),
        }
    }

    /// The database of `--db`, created if needed ([`database::open`]), stamping its writes
    /// with "now".
    pub(crate) fn open(&self) -> ops::Result<database::Store> {
        database::open(&self.db, &self.shared_clock())
    }

    /// The database of `--db` for a server's many calls ([`database::Database`]): created by
    /// the first write, never by a read.
    pub(crate) fn database(&self) -> ops::Result<database::Database> {
        database::Database::new(&self.db, &self.shared_clock())
    }

    /// The database of `--db` for a read of the memories ([`database::open_for_reading`]):
    /// never created; one that does not exist yet answers as an empty one, and a note on
    /// stderr says so (a misspelt `--db` shows there).
    pub(crate) fn open_for_reading(&self) -> ops::Result<database::Store> {
        let read = database::open_for_reading(&self.db)?;
        if read.missing {
            eprintln!(
                "note: {} does not exist yet, so it holds nothing (a command that writes creates it)",
                database::describe(&self.db)
            );
        }
        Ok(read.store)
    }

    /// The existing database of `--db`, for a change ([`database::open_existing_for_writing`]).
    pub(crate) fn open_existing_for_writing(&self) -> ops::Result<database::Store> {
        database::open_existing_for_writing(&self.db, &self.shared_clock())
    }

    /// A private database in memory, for a command that works on a file without a store.
    pub(crate) fn open_scratch(&self) -> ops::Result<database::Store> {
        database::open(
            std::path::Path::new(database::IN_MEMORY),
            &self.shared_clock(),
        )
    }
}

/// Runs the command line on `args` (the program's name first, as `std::env::args_os` gives
/// them) and returns its exit status: what the `agent-memory` binary does, callable in-process
/// so a language package can ship the same command line without a binary of its own.
///
/// ```no_run
/// let status = agent_memory_cli::run(["agent-memory", "--db", "memory.db", "stats"]);
/// ```
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    ExitCode::from(exit_status(args))
}

/// [`run`], returning the exit status as a number (0 success, 1 failure, 2 usage), for a
/// caller that hands it to another runtime (the Python package's `sys.exit`), since an
/// [`ExitCode`] cannot be read back.
pub fn exit_status<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    // With `--json` even a usage error is JSON, so look for the flag before parsing.
    let json = args.iter().any(|arg| arg == "--json");
    // The derived commands, and one generated for every operation they do not spell out.
    let derived = Cli::command();
    let parsed = operation::augment(derived.clone())
        .try_get_matches_from(&args)
        .and_then(|matches| match operation::matched(&derived, &matches) {
            Some((op, input)) => GlobalArgs::from_arg_matches(&matches)
                .map(|global| Parsed::Operation(op, input, global)),
            None => Cli::from_arg_matches(&matches).map(|cli| Parsed::Command(Box::new(cli))),
        });
    let cli = match parsed {
        Ok(Parsed::Command(cli)) => *cli,
        Ok(Parsed::Operation(op, input, global)) => {
            return finish(operation::run(op, input, &global), &global);
        }
        Err(error) if json && error.use_stderr() => {
            let message = error.kind().to_string();
            let detail = error.to_string();
            let first = detail
                .lines()
                .next()
                .unwrap_or(&message)
                .trim_start_matches("error: ");
            print_json_error(ops::Error::new(ops::ErrorKind::Usage, first));
            return 2;
        }
        // Help, the version and usage errors print as clap prints them, with clap's status.
        Err(error) => {
            // Nothing useful is left to do when stderr or stdout itself cannot be written.
            let _ = error.print();
            return u8::try_from(error.exit_code()).unwrap_or(2);
        }
    };
    // A closed stdout (`agent-memory ... | head`) ends a command quietly, as it does any Unix
    // tool; the MCP server keeps Rust's default of ignoring SIGPIPE, since it writes to sockets.
    if !cli.command.serves() {
        sigpipe::reset();
    }
    let result = commands::run(cli.command, &cli.global);
    finish(result, &cli.global)
}

/// What the command line was asked for: a command of `commands/`, or an operation's
/// generated command.
enum Parsed {
    Command(Box<Cli>),
    Operation(
        &'static ops::operations::Operation,
        operation::Input,
        GlobalArgs,
    ),
}

/// The exit status of a command's `result`, its failure printed as `--json` asks.
fn finish(result: anyhow::Result<()>, global: &GlobalArgs) -> u8 {
    match result {
        Ok(()) => 0,
        Err(error) if global.json => {
            let mut body = contract_error(&error);
            if body.kind() == ops::ErrorKind::Database && body.input().is_none() {
                body = body.about(database::describe(&global.db));
            }
            print_json_error(body);
            1
        }
        Err(error) => {
            eprintln!("error: {}", one_line(&error));
            1
        }
    }
}

/// Prints `body` as the contract's error document, one line on stderr.
fn print_json_error(body: ops::Error) {
    let document = ops::ErrorDocument { error: body };
    match serde_json::to_string(&document) {
        Ok(line) => eprintln!("{line}"),
        // Serializing plain strings cannot fail; keep a readable line if it ever does.
        Err(_) => eprintln!("error: {}", document.error.message()),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }

    /// The words of every leaf command under `command`, as `prefix` + its name.
    fn leaves(command: &clap::Command, prefix: &str, found: &mut Vec<String>) {
        for sub in command.get_subcommands() {
            let words = format!("{prefix}{}", sub.get_name());
            if sub.has_subcommands() {
                leaves(sub, &format!("{words} "), found);
            } else {
                found.push(words);
            }
        }
    }

    /// Every command takes `--json` (it is global), so every command must say which schema
    /// its output follows, and the schema must be one the contract generates.
    #[test]
    fn every_command_names_the_schema_of_its_json_output() {
        use crate::commands::outputs::OUTPUTS;
        let mut commands = Vec::new();
        leaves(&super::Cli::command(), "", &mut commands);
        let listed: Vec<&str> = OUTPUTS.iter().map(|(command, _)| *command).collect();
        let missing: Vec<&String> = commands
            .iter()
            .filter(|c| !listed.contains(&c.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "commands/outputs.rs names no schema for {missing:?}"
        );
        let stale: Vec<&&str> = listed
            .iter()
            .filter(|c| !commands.iter().any(|known| known == *c))
            .collect();
        assert!(
            stale.is_empty(),
            "commands/outputs.rs lists no such command {stale:?}"
        );
        let generated: Vec<String> = crate::commands::schemas::all()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        for (command, schema) in OUTPUTS {
            if let Some(schema) = schema {
                assert!(
                    generated.iter().any(|g| g == schema),
                    "{command}: schema {schema} is not generated"
                );
            }
        }
    }
}
