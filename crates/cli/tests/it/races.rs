//! Concurrent imports of the same content store it once: eight processes start the same
//! `turns import`, `recording import` or `browser import` at once, round after round (20 by
//! default, `AGENT_MEMORY_RACE_ROUNDS` to change); exactly one stores the content, the other
//! seven report it is already there (and succeed), the database holds it once and passes `check`. Odd
//! rounds start on a database that does not exist yet, so the eight also race to create it.
//! The same holds for eight copies of one `turns append --start 0` (an agent retrying after a
//! timeout), on SQLite and, with `AGENT_MEMORY_TEST_POSTGRES`, on PostgreSQL.

use std::path::Path;
use std::process::{Command, Output};

use agent_memory_core::store::browser::{RunManifestStore, TrajectoryStore};
use agent_memory_core::store::tool_log::ToolLogStore;
use agent_memory_core::{Scope, SessionId, SessionStore};
use agent_memory_sqlite::SqliteStore;

use crate::Sandbox;

const PROCESSES: usize = 8;
/// "Now" of the reference sample, so the TTL keeps its trajectory.
const NOW: &str = "1795321223974";

fn rounds() -> usize {
    std::env::var("AGENT_MEMORY_RACE_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20)
}

/// Starts `PROCESSES` copies of `agent-memory --db <db> args...` together and waits for all.
fn race(sandbox: &Sandbox, db: &str, args: &[&str]) -> Vec<Output> {
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_agent-memory"))
                .arg("--db")
                .arg(db)
                .args(args)
                .env_remove("AGENT_MEMORY_DB")
                .current_dir(sandbox.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn agent-memory")
        })
        .collect();
    children
        .into_iter()
        .map(|child| child.wait_with_output().expect("wait"))
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every run succeeded, exactly one stored the content and every other reported it
/// already there (`already` in its stdout); `what` names the command in failures.
fn once(outputs: &[Output], what: &str, already: &str) {
    for output in outputs {
        assert!(output.status.success(), "{what}: {output:#?}");
    }
    let stored = outputs
        .iter()
        .filter(|o| !text(&o.stdout).contains(already))
        .count();
    assert_eq!(
        stored, 1,
        "{what}: {stored} of {PROCESSES} stored it: {outputs:#?}"
    );
}

/// The database of round `round`: a new file each round, created beforehand in even rounds.
fn database(sandbox: &Sandbox, name: &str, round: usize) -> String {
    let db = format!("{name}-{round}.db");
    if round.is_multiple_of(2) {
        drop(agent_memory_sqlite::SqliteStore::open(sandbox.path().join(&db)).expect("create"));
    }
    db
}

fn check_passes(sandbox: &Sandbox, db: &str) {
    sandbox.expect(0, &["--db", db, "check"]);
}

fn open(sandbox: &Sandbox, db: &str) -> SqliteStore {
    SqliteStore::open(sandbox.path().join(db)).expect("open")
}

#[test]
fn eight_turns_imports_of_one_log_store_it_once() {
    let sandbox = Sandbox::new();
    sandbox.fixture("verbose-flag.session.jsonl");
    for round in 0..rounds() {
        let db = database(&sandbox, "turns", round);
        let outputs = race(
            &sandbox,
            &db,
            &["turns", "import", "verbose-flag.session.jsonl"],
        );
        once(&outputs, "turns import", "is already imported");
        let events = open(&sandbox, &db)
            .session_load(&SessionId::new("verbose-flag").expect("id"))
            .expect("load");
        assert_eq!(events.len(), 9, "round {round}");
        check_passes(&sandbox, &db);
    }
}

#[test]
fn eight_recording_imports_of_one_file_store_it_once() {
    let sandbox = Sandbox::new();
    sandbox.fixture("sign-in.logs.jsonl");
    for round in 0..rounds() {
        let db = database(&sandbox, "recording", round);
        let outputs = race(
            &sandbox,
            &db,
            &["recording", "import", "sign-in.logs.jsonl"],
        );
        once(&outputs, "recording import", "already imported, unchanged");
        let logs = open(&sandbox, &db)
            .list_tool_logs(&SessionId::new("first-run").expect("id"))
            .expect("list");
        assert_eq!(logs.len(), 4, "round {round}");
        check_passes(&sandbox, &db);
    }
}

/// A directory import replaces records by key, so every process may exit 0: exactly one
/// reports it imported the records, the other seven that they were already there.
#[test]
fn eight_browser_imports_of_one_directory_store_it_once() {
    let sandbox = Sandbox::new();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../browser-memory/tests/it/fixtures/bad-examples/agent-memory"),
        &sandbox.path().join("sample"),
    );
    for round in 0..rounds() {
        let db = database(&sandbox, "browser", round);
        let outputs = race(
            &sandbox,
            &db,
            &["browser", "--now", NOW, "import", "sample"],
        );
        for output in &outputs {
            assert!(output.status.success(), "round {round}: {output:#?}");
        }
        let stdout: Vec<String> = outputs.iter().map(|o| text(&o.stdout)).collect();
        let stored = stdout.iter().filter(|s| s.starts_with("imported ")).count();
        let already = stdout
            .iter()
            .filter(|s| s.starts_with("sample is already there: all 6 records unchanged"))
            .count();
        assert_eq!(
            (stored, already),
            (1, PROCESSES - 1),
            "round {round}: {stdout:#?}"
        );
        let store = open(&sandbox, &db);
        let scope = Scope::shared();
        assert_eq!(store.trajectory_list(&scope).expect("list").len(), 1);
        assert_eq!(
            store
                .run_list(&scope, &Default::default())
                .expect("runs")
                .len(),
            2
        );
        check_passes(&sandbox, &db);
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let path = entry.expect("entry").path();
        let target = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy");
        }
    }
}

/// The opening of session `session` as `turns append` reads it: three JSON lines.
fn opening(session: &str) -> String {
    [
        format!(r#"{{"type":"session_started","session":"{session}","started_at":1767225600000}}"#),
        r#"{"type":"user_message","text":"fix the tests"}"#.to_owned(),
        r#"{"type":"assistant_turn","text":"Fixed.","memory":{"files_changed":["src/a.rs"]}}"#
            .to_owned(),
    ]
    .map(|line| line + "\n")
    .concat()
}

/// Eight copies of `turns append --session <session> --start 0` on `db`: every one succeeds,
/// exactly one appends the three events and the other seven find them already stored.
fn race_appends(sandbox: &Sandbox, db: &str, session: &str, round: usize) {
    let file = format!("{session}.jsonl");
    std::fs::write(sandbox.path().join(&file), opening(session)).expect("write events");
    let outputs = race(
        sandbox,
        db,
        &[
            "turns",
            "append",
            "--session",
            session,
            "--start",
            "0",
            "--file",
            &file,
        ],
    );
    for output in &outputs {
        assert!(output.status.success(), "round {round}: {output:#?}");
    }
    let stdout: Vec<String> = outputs.iter().map(|o| text(&o.stdout)).collect();
    let count = |line: &str| stdout.iter().filter(|s| s.trim_end() == line).count();
    let wrote = count(&format!(
        "session {session}: 3 event(s) appended, 0 already stored; 3 in all"
    ));
    let retried = count(&format!(
        "session {session}: 0 event(s) appended, 3 already stored; 3 in all"
    ));
    assert_eq!(
        (wrote, retried),
        (1, PROCESSES - 1),
        "round {round}: {stdout:#?}"
    );
    // The session reads back whole: one session_started, first.
    let shown = sandbox.expect(0, &["--json", "--db", db, "turns", "sessions"]);
    let sessions: serde_json::Value = serde_json::from_str(&shown.stdout).expect("json");
    let events = sessions
        .as_array()
        .and_then(|all| all.iter().find(|s| s["session"] == session))
        .map(|s| s["events"].clone());
    assert_eq!(
        events,
        Some(serde_json::json!(3)),
        "round {round}: {sessions}"
    );
    sandbox.expect(0, &["--db", db, "turns", "show", session]);
}

#[test]
fn eight_identical_turns_appends_store_the_events_once() {
    let sandbox = Sandbox::new();
    for round in 0..rounds() {
        let db = database(&sandbox, "append", round);
        race_appends(&sandbox, &db, "s", round);
        check_passes(&sandbox, &db);
    }
}

/// The same race on one PostgreSQL schema, a new session each round.
#[test]
fn eight_identical_turns_appends_store_the_events_once_on_postgres() {
    let Some(url) = crate::postgres_url("append_race") else {
        return;
    };
    let sandbox = Sandbox::new();
    for round in 0..rounds() {
        race_appends(&sandbox, &url, &format!("s{round}"), round);
    }
}
