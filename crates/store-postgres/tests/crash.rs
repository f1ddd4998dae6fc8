//! Crash safety on PostgreSQL: a child process writes through `PostgresStore` into a schema
//! of its own and is killed with SIGKILL at random moments; after each kill the schema must
//! hold every write the child reported as committed (in this round and every earlier one),
//! whole, and nothing half-written.
//!
//! The child is the writer of `agent_memory_core::testkit::crash::writes`, the one the SQLite
//! crash test runs: metadata, episode and session event batches, tool logs and the tool-log
//! batches `recording import` writes. (The browser writes join once the PostgreSQL store has
//! browser memory.)
//!
//! This binary has its own `main` (`harness = false`) because it re-executes itself as the
//! child: with `AGENT_MEMORY_CRASH_CHILD=<schema>` set, it is the writer, connecting to
//! `AGENT_MEMORY_CRASH_URL`. The server is the one `AGENT_MEMORY_TEST_POSTGRES` names; without
//! it the test says so and passes, except with `CI=true`. Kills and pauses come from a fixed
//! seed, so a failure reproduces. `AGENT_MEMORY_CRASH_KILLS` sets how many kills (default 50).
//! A schema is dropped when its test passes and kept for inspection when it fails.

#[allow(dead_code)]
#[path = "it/support.rs"]
mod support;

use std::path::Path;
use std::process::{Command, ExitCode};

use agent_memory_core::testkit::crash::writes::{Ledger, OnError, Stores, write};
use agent_memory_core::testkit::crash::{CHILD_ENV, CrashTest, KillLoop, ROUND_ENV};
use agent_memory_postgres::{PostgresOptions, PostgresStore};

/// Set in the child's environment: the server to write to.
const URL_ENV: &str = "AGENT_MEMORY_CRASH_URL";
/// Set in the child's environment to `report` when it should go on after a failed write.
const ON_ERROR_ENV: &str = "AGENT_MEMORY_CRASH_ON_ERROR";

fn main() -> ExitCode {
    CrashTest {
        name: "crashes_lose_no_acknowledged_write",
        child,
    }
    .main(|| {
        let Some(url) = support::server() else {
            return Ok("no server: skipped".to_owned());
        };
        client_kills(&url)
    })
}

/// The writer: writes of every kind forever into the schema `schema`, reporting each on
/// stdout once the call returned.
fn child(schema: &Path, round: u64) -> Result<(), String> {
    let url = std::env::var(URL_ENV).map_err(|_| format!("{URL_ENV} is not set"))?;
    let on_error = match std::env::var(ON_ERROR_ENV).as_deref() {
        Ok("report") => OnError::Report,
        _ => OnError::Stop,
    };
    let store = open(&url, &schema.to_string_lossy())?;
    let mut out = std::io::stdout().lock();
    write(&Stores::core(&store), round, on_error, None, &mut out)
}

fn open(url: &str, schema: &str) -> Result<PostgresStore, String> {
    let options = PostgresOptions::default()
        .with_schema(schema)
        .with_pool_size(2);
    PostgresStore::connect_with(url, &options).map_err(|e| format!("connect: {e}"))
}

/// The child's command for one round.
fn writer(exe: &Path, url: &str, schema: &str, round: u64, on_error: &str) -> Command {
    let mut command = Command::new(exe);
    command
        .env(CHILD_ENV, schema)
        .env(ROUND_ENV, round.to_string())
        .env(URL_ENV, url)
        .env(ON_ERROR_ENV, on_error);
    command
}

/// Kills the writing client at random moments, checking the schema after each kill.
fn client_kills(url: &str) -> Result<String, String> {
    let schema = support::fresh_schema("crash");
    // The parent creates the schema, so every child finds it migrated.
    let store = open(url, &schema)?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut ledger = Ledger::default();
    // A child needs a few tens of milliseconds to start and connect before it writes.
    let summary = KillLoop::from_env(0x5eed).pauses(30, 200).run_commands(
        Path::new(&schema),
        |_, round| writer(&exe, url, &schema, round, "stop"),
        |_, round, lines| {
            let committed = ledger
                .record(lines)
                .map_err(|e| format!("client kill {round}: {e}"))?;
            ledger
                .verify(&Stores::core(&store), round)
                .map_err(|e| format!("client kill {round} (schema {schema}): {e}"))?;
            Ok(committed)
        },
    )?;
    drop_schema(url, &schema)?;
    Ok(format!("client: {summary}"))
}

/// Drops a passed test's schema.
fn drop_schema(url: &str, schema: &str) -> Result<(), String> {
    let mut client = postgres::Client::connect(url, postgres::NoTls)
        .map_err(|e| format!("connect to drop {schema}: {e}"))?;
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .map_err(|e| format!("drop schema {schema}: {e}"))
}
