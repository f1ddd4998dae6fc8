//! `agent-memory stats`, and the global options seen through it.

use agent_memory_core::{MetaKey, MetaStore};
use agent_memory_sqlite::SqliteStore;

use crate::Sandbox;

#[test]
fn stats_of_a_fresh_database_as_a_table() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["--db", "fresh/memory.db", "stats"], &[]);
    insta::assert_snapshot!(run);
    assert!(sandbox.path().join("fresh/memory.db").is_file());
}

#[test]
fn stats_as_json() {
    let sandbox = Sandbox::new();
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

#[test]
fn the_default_database_and_its_folder_are_created_on_first_use() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["stats"], &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        run.stdout
            .starts_with("database        .agent-memory/memory.db\n"),
        "{run}"
    );
    assert!(sandbox.path().join(".agent-memory/memory.db").is_file());
}

#[test]
fn the_flag_wins_over_the_environment() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(
        &["--db", "flag.db", "stats"],
        &[("AGENT_MEMORY_DB", "env.db")],
    );
    assert_eq!(run.code, Some(0), "{run}");
    assert!(sandbox.path().join("flag.db").is_file());
    assert!(!sandbox.path().join("env.db").exists());
}

#[test]
fn nothing_is_drawn_on_a_piped_stderr() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["stats"], &[]);
    assert_eq!((run.code, run.stderr.as_str()), (Some(0), ""), "{run}");
}

#[test]
fn help_lists_every_command() {
    let sandbox = Sandbox::new();
    insta::assert_snapshot!(sandbox.run(&["--help"], &[]));
}
