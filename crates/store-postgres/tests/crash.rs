//! Crash safety on PostgreSQL: a child process writes through `PostgresStore` into a schema
//! of its own and is killed with SIGKILL at random moments; after each kill the schema must
//! hold every write the child reported as committed (in this round and every earlier one),
//! whole, and nothing half-written.
//!
//! The child is the writer of `agent_memory_core::testkit::crash::writes`, the one the SQLite
//! crash test runs: metadata, episode and session event batches, tool logs, finished browser
//! runs, and the batches `recording import` (tool logs) and `browser import` (a memory image)
//! write.
//!
//! This binary has its own `main` (`harness = false`) because it re-executes itself as the
//! child: with `AGENT_MEMORY_CRASH_CHILD=<schema>` set, it is the writer, connecting to
//! `AGENT_MEMORY_CRASH_URL`. The server is the one `AGENT_MEMORY_TEST_POSTGRES` names; without
//! it the test says so and passes, except with `CI=true`. Kills and pauses come from a fixed
//! seed, so a failure reproduces. `AGENT_MEMORY_CRASH_KILLS` sets how many kills (default 50).
//! A schema is dropped when its test passes and kept for inspection when it fails.
//!
//! Then the server: a private cluster (`agent_memory_postgres::cluster`, in this target's
//! temporary directory) is stopped with `pg_ctl stop -m immediate` under a writer that goes on
//! after failed writes, at a random moment, and started again; once the writer has committed
//! again it is killed and the schema checked: every acknowledged write present and whole,
//! and a write that failed present whole or absent. `AGENT_MEMORY_CRASH_RESTARTS` sets how
//! many rounds (default 5). Without the server binaries this part says so and passes, except
//! with `CI=true`.

#[allow(dead_code)]
#[path = "it/support.rs"]
mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use agent_memory_core::SplitMix64;
use agent_memory_core::testkit::crash::writes::{Ledger, OnError, Stores, write};
use agent_memory_core::testkit::crash::{CHILD_ENV, CrashTest, KillLoop, ROUND_ENV};
use agent_memory_postgres::cluster::Cluster;
use agent_memory_postgres::{PostgresOptions, PostgresStore};

/// Set in the child's environment: the server to write to.
const URL_ENV: &str = "AGENT_MEMORY_CRASH_URL";
/// Set in the child's environment to `report` when it should go on after a failed write.
const ON_ERROR_ENV: &str = "AGENT_MEMORY_CRASH_ON_ERROR";
/// Read by the parent: how many times the server is stopped under the writer (default 5).
const RESTARTS_ENV: &str = "AGENT_MEMORY_CRASH_RESTARTS";
/// The longest wait for the writer to make progress: a writer that stays silent this long
/// is stuck, and the test fails saying so instead of hanging.
const STUCK: Duration = Duration::from_secs(60);

fn main() -> ExitCode {
    CrashTest {
        name: "crashes_lose_no_acknowledged_write",
        child,
    }
    .main(|| {
        let Some(url) = support::server() else {
            return Ok("no server: skipped".to_owned());
        };
        let client = client_kills(&url)?;
        let server = server_crashes()?;
        Ok(format!("{client}; {server}"))
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
    let store = open(&writer_url(&url), &schema.to_string_lossy())?;
    let mut out = std::io::stdout().lock();
    write(
        &Stores::with_browser(&store),
        round,
        on_error,
        None,
        &mut out,
    )
}

fn open(url: &str, schema: &str) -> Result<PostgresStore, String> {
    let options = PostgresOptions::default()
        .with_schema(schema)
        .with_pool_size(2);
    PostgresStore::connect_with(url, &options).map_err(|e| format!("connect: {e}"))
}

/// The application name the writer connects with, so the check can wait for the server to be
/// done with a killed writer's sessions.
const WRITER_APP: &str = "crash-writer";

/// `url` with the writer's application name.
fn writer_url(url: &str) -> String {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let join = if url.contains('?') { '&' } else { '?' };
        format!("{url}{join}application_name={WRITER_APP}")
    } else {
        format!("{url} application_name={WRITER_APP}")
    }
}

/// Waits until the server has finished every session of the killed writer. A client killed
/// after sending COMMIT leaves a backend that still commits; a check reading before that
/// would see a snapshot from before the commit in one call and after it in the next, which
/// is no torn write but would look like one.
fn await_writer_gone(url: &str) -> Result<(), String> {
    let mut client = postgres::Client::connect(url, postgres::NoTls)
        .map_err(|e| format!("connect to watch the writer's sessions: {e}"))?;
    let deadline = Instant::now() + STUCK;
    loop {
        let left: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&WRITER_APP],
            )
            .map_err(|e| format!("watch the writer's sessions: {e}"))?
            .get(0);
        if left == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the server still serves {left} session(s) of the killed writer after {STUCK:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
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
            await_writer_gone(url).map_err(|e| format!("client kill {round}: {e}"))?;
            let committed = ledger
                .record(lines)
                .map_err(|e| format!("client kill {round}: {e}"))?;
            ledger
                .verify(&Stores::with_browser(&store), round)
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

/// Stops a private cluster with `pg_ctl stop -m immediate` under a writer at random moments
/// and starts it again, then checks the schema: every acknowledged write present and whole,
/// every write that failed (the server gone, or the connection lost while committing) present
/// whole or absent.
fn server_crashes() -> Result<String, String> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pg-server-crash");
    let mut cluster = match Cluster::start(&dir) {
        Ok(cluster) => cluster,
        Err(e) if !ci() => {
            eprintln!("no PostgreSQL cluster could be started ({e}): skipping the server crashes");
            return Ok("server: skipped".to_owned());
        }
        Err(e) => return Err(format!("start a cluster in {}: {e}", dir.display())),
    };
    let url = cluster.url();
    let schema = "crash";
    drop(open(&url, schema)?);
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let restarts = std::env::var(RESTARTS_ENV)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5u64);
    let mut rng = SplitMix64::new(0x5e_a5ed);
    let mut ledger = Ledger::default();
    let mut unknown = 0;
    for round in 0..restarts {
        let at = |e: String| format!("server crash {round}: {e}");
        let mut child = writer(&exe, &url, schema, round, "report")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| at(format!("spawn the writer: {e}")))?;
        let stdout = child.stdout.take().ok_or("the writer has no stdout")?;
        let (send, lines_in) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut lines = Vec::new();
        let progress = (|| {
            await_commit(&lines_in, &mut lines, 0, "its first write")?;
            std::thread::sleep(Duration::from_millis(rng.below(150)));
            cluster
                .stop_immediate()
                .map_err(|e| format!("stop the server: {e}"))?;
            std::thread::sleep(Duration::from_millis(rng.below(400)));
            cluster
                .start_again()
                .map_err(|e| format!("start the server again: {e}"))?;
            // The writer must get going again on the restarted server.
            drain(&lines_in, &mut lines);
            let before = lines.len();
            await_commit(&lines_in, &mut lines, before, "a write after the restart")?;
            std::thread::sleep(Duration::from_millis(rng.below(100)));
            Ok::<(), String>(())
        })();
        child
            .kill()
            .map_err(|e| at(format!("kill the writer: {e}")))?;
        child
            .wait()
            .map_err(|e| at(format!("reap the writer: {e}")))?;
        reader
            .join()
            .map_err(|_| at("the reader panicked".to_owned()))?;
        drain(&lines_in, &mut lines);
        progress.map_err(at)?;
        unknown += lines
            .iter()
            .filter(|l| l.starts_with("failed ") && l.contains("may or may not"))
            .count();
        ledger.record(&lines).map_err(at)?;
        await_writer_gone(&url).map_err(at)?;
        let store = open(&url, schema).map_err(at)?;
        ledger
            .verify(&Stores::with_browser(&store), round)
            .map_err(|e| at(format!("{e} (cluster in {})", dir.display())))?;
    }
    Ok(format!(
        "server: {restarts} immediate stops, {} acknowledged writes verified, {} failed ({unknown} with an unknown outcome)",
        ledger.committed(),
        ledger.failed()
    ))
}

/// Moves the lines the writer has printed so far into `lines`.
fn drain(lines_in: &Receiver<String>, lines: &mut Vec<String>) {
    lines.extend(lines_in.try_iter());
}

/// Waits until a line from index `from` on reports a committed write.
fn await_commit(
    lines_in: &Receiver<String>,
    lines: &mut Vec<String>,
    from: usize,
    what: &str,
) -> Result<(), String> {
    let deadline = Instant::now() + STUCK;
    while !lines[from.min(lines.len())..]
        .iter()
        .any(|l| l.starts_with("committed "))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines_in.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "the writer made no progress towards {what} in {STUCK:?} (its last lines: {:?})",
                    &lines[lines.len().saturating_sub(3)..]
                ));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(format!(
                    "the writer exited before {what} (its last lines: {:?})",
                    &lines[lines.len().saturating_sub(3)..]
                ));
            }
        }
    }
    Ok(())
}

/// Whether this is a CI run, where a missing server fails instead of skipping.
fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}
