//! The attacks on the imports, each reproduced through the command line: a value over the
//! store's 32 MiB limit in a later record leaves nothing behind (and the corrected input then
//! imports); an empty input is refused; a byte-order mark is accepted; a too-deep last line is
//! reported as what it is; a directory's unread files are reported; importing what is already
//! there says so. `agent-memory check` finds nothing wrong after any of them.

use std::fs;
use std::path::Path;

use agent_memory_core::store::browser::TrajectoryStore;
use agent_memory_core::store::tool_log::ToolLogStore;
use agent_memory_core::{Scope, SessionId, SessionStore};
use agent_memory_sqlite::SqliteStore;

use crate::Sandbox;

const LOGS: &str = "sign-in.logs.jsonl";
const SESSION_LOG: &str = "verbose-flag.session.jsonl";
/// "Now" of the reference sample, so the TTL keeps its trajectory.
const NOW: &str = "1795321223974";
/// Over the store's 32 MiB limit, under the 64 MiB limit of a memory file.
const HUGE: usize = 40 * 1024 * 1024;

fn store(sandbox: &Sandbox) -> SqliteStore {
    SqliteStore::open(sandbox.path().join("memory.db")).expect("open")
}

fn check_passes(sandbox: &Sandbox) {
    sandbox.expect(0, &["--db", "memory.db", "check"]);
}

fn logs_of(sandbox: &Sandbox, session: &str) -> usize {
    store(sandbox)
        .list_tool_logs(&SessionId::new(session).expect("id"))
        .expect("list")
        .len()
}

fn reference_memory() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../browser-memory/tests/it/fixtures/bad-examples/agent-memory")
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read dir") {
        let path = entry.expect("entry").path();
        let target = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            fs::copy(&path, &target).expect("copy");
        }
    }
}

/// Line 3 of the tool logs holds a 40 MiB parameter: nothing is stored, the error names the
/// line, and the corrected file imports (it is not refused as "already holds 2 tool logs").
#[test]
fn a_tool_log_over_the_limit_on_line_3_stores_nothing() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOGS);
    let text = fs::read_to_string(sandbox.path().join(LOGS)).expect("read");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let original = lines[2].clone();
    lines[2] = original.replacen(
        "\"parameters\":{",
        &format!("\"parameters\":{{\"blob\":\"{}\",", "x".repeat(HUGE)),
        1,
    );
    assert_ne!(lines[2], original, "the fixture's line 3 has parameters");
    fs::write(sandbox.path().join("huge.jsonl"), lines.join("\n")).expect("write");
    let run = sandbox.expect(
        1,
        &["--db", "memory.db", "recording", "import", "huge.jsonl"],
    );
    assert!(
        run.stderr.starts_with("error: huge.jsonl:3: parameters: ")
            && run
                .stderr
                .contains("bytes, over the store's limit of 33554432 bytes (32 MiB)"),
        "{run}"
    );
    assert_eq!(logs_of(&sandbox, "first-run"), 0, "lines 1-2 were stored");
    check_passes(&sandbox);
    sandbox.expect(0, &["--db", "memory.db", "recording", "import", LOGS]);
    assert_eq!(logs_of(&sandbox, "first-run"), 4);
}

#[test]
fn an_empty_tool_log_file_is_refused() {
    let sandbox = Sandbox::new();
    fs::write(sandbox.path().join("empty.jsonl"), "\n  \n").expect("write");
    let run = sandbox.expect(
        1,
        &["--db", "memory.db", "recording", "import", "empty.jsonl"],
    );
    assert_eq!(
        run.stderr,
        "error: empty.jsonl holds no tool logs; nothing to import\n"
    );
    assert!(
        !sandbox.path().join("memory.db").exists(),
        "a refused import created the database"
    );
}

#[test]
fn a_byte_order_mark_is_accepted_before_tool_logs_a_session_log_and_a_trail() {
    let sandbox = Sandbox::new();
    sandbox
        .fixture(LOGS)
        .fixture(SESSION_LOG)
        .fixture("sign-in.trail.yaml");
    for name in [LOGS, SESSION_LOG, "sign-in.trail.yaml"] {
        let path = sandbox.path().join(name);
        let text = fs::read_to_string(&path).expect("read");
        fs::write(&path, format!("\u{feff}{text}")).expect("write");
    }
    sandbox.expect(0, &["--db", "memory.db", "recording", "import", LOGS]);
    assert_eq!(logs_of(&sandbox, "first-run"), 4);
    sandbox.expect(0, &["--db", "memory.db", "turns", "import", SESSION_LOG]);
    let lint = sandbox.expect(0, &["recording", "lint", "sign-in.trail.yaml"]);
    assert!(lint.stdout.starts_with("sign-in.trail.yaml: "), "{lint}");
}

/// A complete last line (no newline after it) nested deeper than the JSON parser goes is an
/// error saying so, not a torn line skipped with a warning.
#[test]
fn a_too_deep_last_line_is_reported_as_too_deep() {
    let sandbox = Sandbox::new();
    sandbox.fixture(SESSION_LOG);
    let path = sandbox.path().join(SESSION_LOG);
    let mut text = fs::read_to_string(&path).expect("read");
    let lines = text.lines().count();
    text.push_str(&format!(
        "{{\"type\":\"assistant_turn\",\"text\":\"deep\",\"tool_calls\":[{{\"id\":\"c\",\"tool\":\"t\",\"input\":{}1{},\"output\":\"\"}}]}}",
        "[".repeat(200),
        "]".repeat(200)
    ));
    fs::write(&path, text).expect("write");
    let run = sandbox.expect(1, &["--db", "memory.db", "turns", "import", SESSION_LOG]);
    assert!(
        run.stderr.starts_with(&format!(
            "error: corrupt session log {SESSION_LOG}: line {}: recursion limit exceeded",
            lines + 1
        )),
        "{run}"
    );
    assert!(!run.stderr.contains("torn"), "{run}");
}

#[test]
fn an_empty_session_log_is_refused() {
    let sandbox = Sandbox::new();
    fs::write(sandbox.path().join("empty.jsonl"), "").expect("write");
    let run = sandbox.expect(1, &["--db", "memory.db", "turns", "import", "empty.jsonl"]);
    assert!(run.stderr.starts_with("error: "), "{run}");
    let store = store(&sandbox);
    assert!(store.session_list().expect("list").is_empty());
}

/// A 40 MiB goal in the last file the import reads: nothing of the directory is stored.
#[test]
fn a_goal_over_the_limit_in_the_last_file_stores_nothing_of_the_directory() {
    let sandbox = Sandbox::new();
    let dir = sandbox.path().join("sample");
    copy_dir(&reference_memory(), &dir);
    fs::write(
        dir.join("runs/zz_last.json"),
        format!(
            "{{\"id\": \"zz_last\", \"goal\": \"{}\"}}",
            "g".repeat(HUGE)
        ),
    )
    .expect("write");
    let run = sandbox.expect(
        1,
        &[
            "--db",
            "memory.db",
            "browser",
            "--now",
            NOW,
            "import",
            "sample",
        ],
    );
    assert!(
        run.stderr.starts_with(
            "error: cannot import sample: invalid suite summary \"zz_last\": a value is larger than the store's limit"
        ),
        "{run}"
    );
    let store = store(&sandbox);
    assert!(
        store
            .trajectory_list(&Scope::shared())
            .expect("list")
            .is_empty()
    );
    assert!(
        store
            .table_counts()
            .expect("counts")
            .iter()
            .all(|(table, rows)| { !table.starts_with("browser_") || *rows == 0 })
    );
    check_passes(&sandbox);
}

#[test]
fn a_directory_import_reports_what_it_skipped_and_what_was_already_there() {
    let sandbox = Sandbox::new();
    let dir = sandbox.path().join("sample");
    copy_dir(&reference_memory(), &dir);
    fs::write(dir.join("domains/knowledge.json"), "{\"facts\": []}").expect("write");
    fs::write(dir.join("notes.txt"), "mine").expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let site = dir
            .join("domains")
            .join(std::ffi::OsStr::from_bytes(b"caf\xe9.test"));
        fs::create_dir_all(&site).expect("mkdir");
        fs::write(site.join("knowledge.json"), "{\"facts\": []}").expect("write");
    }
    let first = sandbox.expect(
        0,
        &[
            "--db",
            "memory.db",
            "browser",
            "--now",
            NOW,
            "import",
            "sample",
        ],
    );
    insta::assert_snapshot!(first.to_string().replace('\u{fffd}', "?"));
    let again = sandbox.expect(
        0,
        &[
            "--db",
            "memory.db",
            "browser",
            "--now",
            NOW,
            "import",
            "sample",
        ],
    );
    assert!(
        again
            .stdout
            .starts_with("sample is already there: all 6 records unchanged"),
        "{again}"
    );
    check_passes(&sandbox);
}

#[test]
fn an_empty_directory_is_refused() {
    let sandbox = Sandbox::new();
    fs::create_dir(sandbox.path().join("empty")).expect("mkdir");
    let run = sandbox.expect(1, &["--db", "memory.db", "browser", "import", "empty"]);
    assert!(
        run.stderr
            .starts_with("error: empty holds no browser memory"),
        "{run}"
    );
}

/// Importing a session log twice: the second says the session is already there and changes
/// nothing.
#[test]
fn a_session_already_there_is_reported_and_left_alone() {
    let sandbox = Sandbox::new();
    sandbox.fixture(SESSION_LOG);
    sandbox.expect(0, &["--db", "memory.db", "turns", "import", SESSION_LOG]);
    let run = sandbox.expect(0, &["--db", "memory.db", "turns", "import", SESSION_LOG]);
    assert_eq!(
        run.stdout,
        "session verbose-flag is already imported (9 events, 4 turns); nothing changed\n"
    );
    let events = store(&sandbox)
        .session_load(&SessionId::new("verbose-flag").expect("id"))
        .expect("load");
    assert_eq!(events.len(), 9);
}

/// The fixture `name` with line `line` (1-based) rewritten by `change`, saved as `to`.
fn with_line_changed(
    sandbox: &Sandbox,
    name: &str,
    to: &str,
    line: usize,
    change: fn(&str) -> String,
) {
    let text = fs::read_to_string(sandbox.path().join(name)).expect("read fixture");
    let changed: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == line {
                change(l)
            } else {
                l.to_owned()
            }
        })
        .collect();
    fs::write(sandbox.path().join(to), changed.join("\n") + "\n").expect("write");
}

#[test]
fn importing_the_same_tool_logs_again_changes_nothing_and_other_ones_name_the_line() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOGS);
    sandbox.expect(0, &["--db", "memory.db", "recording", "import", LOGS]);
    let again = sandbox.expect(
        0,
        &["--db", "memory.db", "--json", "recording", "import", LOGS],
    );
    let report: serde_json::Value = serde_json::from_str(&again.stdout).expect("json");
    assert_eq!(
        report,
        serde_json::json!([{"session": "first-run", "logs": 4, "already_imported": true}])
    );
    // Another tool on line 3, other parameters on line 2, a log more, a log less.
    with_line_changed(&sandbox, LOGS, "tool.jsonl", 3, |l| {
        l.replacen("\"toolName\":\"", "\"toolName\":\"renamed_", 1)
    });
    with_line_changed(&sandbox, LOGS, "params.jsonl", 2, |l| {
        l.replacen("\"parameters\":{", "\"parameters\":{\"extra\":1,", 1)
    });
    let text = fs::read_to_string(sandbox.path().join(LOGS)).expect("read");
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    fs::write(
        sandbox.path().join("longer.jsonl"),
        format!("{}\n{}\n", lines.join("\n"), lines[3]),
    )
    .expect("write");
    fs::write(
        sandbox.path().join("shorter.jsonl"),
        format!("{}\n", lines[..3].join("\n")),
    )
    .expect("write");
    for (file, expected) in [
        (
            "tool.jsonl",
            "tool.jsonl:3: session \"first-run\" is already stored in memory.db with other tool logs: tool \"renamed_",
        ),
        (
            "params.jsonl",
            "params.jsonl:2: session \"first-run\" is already stored in memory.db with other tool logs: parameters of ",
        ),
        (
            "longer.jsonl",
            "longer.jsonl:5: session \"first-run\" is already stored in memory.db with other tool logs: the stored session ends before this log (it holds 4 tool log(s))",
        ),
        (
            "shorter.jsonl",
            "shorter.jsonl:3: session \"first-run\" is already stored in memory.db with other tool logs: the stored session holds 1 more tool log(s) after this last one",
        ),
    ] {
        let run = sandbox.expect(1, &["--db", "memory.db", "recording", "import", file]);
        assert!(
            run.stderr.starts_with(&format!("error: {expected}")),
            "{file}: {run}"
        );
        assert!(run.stderr.contains("nothing was imported"), "{run}");
    }
    let stored = store(&sandbox)
        .list_tool_logs(&SessionId::new("first-run").expect("id"))
        .expect("list");
    assert_eq!(stored.len(), 4, "nothing changed");
    check_passes(&sandbox);
}

#[test]
fn importing_the_same_session_again_changes_nothing_and_other_events_name_the_line() {
    let sandbox = Sandbox::new();
    sandbox.fixture(SESSION_LOG);
    sandbox.expect(0, &["--db", "memory.db", "turns", "import", SESSION_LOG]);
    let again = sandbox.expect(0, &["--db", "memory.db", "turns", "import", SESSION_LOG]);
    assert!(
        again.stdout.contains("is already imported") && again.stdout.contains("nothing changed"),
        "{again}"
    );
    let json = sandbox.expect(
        0,
        &[
            "--db",
            "memory.db",
            "--json",
            "turns",
            "import",
            SESSION_LOG,
        ],
    );
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(report["already_imported"], true, "{json}");
    with_line_changed(&sandbox, SESSION_LOG, "edited.jsonl", 2, |l| {
        l.replacen("\"text\":\"", "\"text\":\"Edited: ", 1)
    });
    let run = sandbox.expect(1, &["--db", "memory.db", "turns", "import", "edited.jsonl"]);
    assert!(
        run.stderr.starts_with("error: edited.jsonl:2: session \"verbose-flag\" is already stored in memory.db with other events: the user_message event differs from the stored event 2; nothing was imported"),
        "{run}"
    );
    let events = store(&sandbox)
        .session_load(&SessionId::new("verbose-flag").expect("id"))
        .expect("load");
    assert!(
        events.iter().all(|e| !e.payload.contains("Edited: ")),
        "nothing changed"
    );
    check_passes(&sandbox);
}
