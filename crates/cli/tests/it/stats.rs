//! `agent-memory stats`, and the global options seen through it.

use agent_memory_core::{MetaKey, MetaStore};
use agent_memory_sqlite::SqliteStore;

use crate::Sandbox;

/// Creates an empty database at `name` in the sandbox, as a first write would.
fn create(sandbox: &Sandbox, name: &str) {
    let path = sandbox.path().join(name);
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).expect("folder");
    }
    SqliteStore::open(&path).expect("create database");
}

#[test]
fn stats_of_a_fresh_database_as_a_table() {
    let sandbox = Sandbox::new();
    create(&sandbox, "fresh/memory.db");
    let run = sandbox.run(&["--db", "fresh/memory.db", "stats"], &[]);
    insta::assert_snapshot!(run);
}

#[test]
fn stats_never_creates_or_changes_a_database() {
    let sandbox = Sandbox::new();
    let missing = sandbox.run(&["--db", "typo.db", "stats"], &[]);
    assert_eq!(missing.code, Some(1), "{missing}");
    assert!(
        missing.stderr.contains("typo.db does not exist"),
        "{missing}"
    );
    assert!(!sandbox.path().join("typo.db").exists());
    create(&sandbox, "memory.db");
    let before = std::fs::read(sandbox.path().join("memory.db")).expect("read");
    let run = sandbox.run(&["--db", "memory.db", "stats"], &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        std::fs::read(sandbox.path().join("memory.db")).expect("read"),
        before
    );
}

#[test]
fn stats_as_json() {
    let sandbox = Sandbox::new();
    create(&sandbox, "memory.db");
    let run = sandbox.run(&["stats", "--json", "--db", "memory.db"], &[]);
    assert_eq!(run.code, Some(0), "{run}");
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(json["schema_version"], agent_memory_sqlite::SCHEMA_VERSION);
    insta::assert_snapshot!(run);
}

#[test]
fn stats_counts_the_rows_written() {
    let sandbox = Sandbox::new();
    let db = sandbox.path().join("memory.db");
    {
        let store = SqliteStore::open(&db).expect("open");
        for i in 0..42 {
            let key = MetaKey::new(format!("k{i}")).expect("key");
            store.meta_set(&key, "v").expect("set");
        }
    }
    let run = sandbox.run(&["--json", "stats"], &[("AGENT_MEMORY_DB", "memory.db")]);
    assert_eq!(run.code, Some(0), "{run}");
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let meta = json["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .find(|t| t["name"] == "meta")
        .expect("meta table");
    // 42 keys and the store's own `store.created_by`.
    assert_eq!(meta["rows"], 43, "{run}");
}

/// A first write: one episode, which creates the database.
const RECORD: [&str; 8] = [
    "trajectory",
    "record",
    "--partition",
    "p",
    "--fields",
    "task",
    "--field",
    "task=x",
];

#[test]
fn the_default_database_is_created_in_the_working_folder_on_first_write() {
    let sandbox = Sandbox::new();
    let write = sandbox.run(
        &[&RECORD[..], &["--trajectory", "a", "--success"]].concat(),
        &[],
    );
    assert_eq!(write.code, Some(0), "{write}");
    assert!(sandbox.path().join("agent-memory.db").is_file());
    assert!(
        !sandbox.path().join(".agent-memory").exists(),
        "browser-agent-driver's folder is not ours"
    );
    let run = sandbox.run(&["stats"], &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        run.stdout.starts_with("database        agent-memory.db\n"),
        "{run}"
    );
}

#[test]
fn the_flag_wins_over_the_environment() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(
        &[
            &["--db", "flag.db"][..],
            &RECORD[..],
            &["--trajectory", "a", "--success"],
        ]
        .concat(),
        &[("AGENT_MEMORY_DB", "env.db")],
    );
    assert_eq!(run.code, Some(0), "{run}");
    assert!(sandbox.path().join("flag.db").is_file());
    assert!(!sandbox.path().join("env.db").exists());
}

#[test]
fn nothing_is_drawn_on_a_piped_stderr() {
    let sandbox = Sandbox::new();
    create(&sandbox, "agent-memory.db");
    let run = sandbox.run(&["stats"], &[]);
    assert_eq!((run.code, run.stderr.as_str()), (Some(0), ""), "{run}");
}

#[test]
fn help_lists_every_command() {
    let sandbox = Sandbox::new();
    insta::assert_snapshot!(sandbox.run(&["--help"], &[]));
}
