//! Every way a command line can be wrong: one line `error: ...` naming the input, exit code
//! 1, or clap's usage message and exit code 2.

use crate::Sandbox;

#[test]
fn a_directory_as_the_database() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.path().join("folder")).expect("mkdir");
    let run = sandbox.run(&["--db", "folder", "stats"], &[]);
    insta::assert_snapshot!(run);
}

#[test]
fn a_text_file_as_the_database() {
    let sandbox = Sandbox::new();
    let notes = sandbox.path().join("notes.txt");
    std::fs::write(&notes, "not a database\n".repeat(100)).expect("write");
    let db = notes.display().to_string();
    let run = sandbox.run(&["--db", &db, "stats"], &[]);
    insta::assert_snapshot!(run);
    assert!(
        std::fs::read_to_string(&notes)
            .expect("read")
            .starts_with("not a database"),
        "the file is left as it was"
    );
}

#[test]
fn a_database_inside_a_file() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path().join("plain"), "x").expect("write");
    let run = sandbox.run(&["--db", "plain/memory.db", "stats"], &[]);
    insta::assert_snapshot!(run);
}

#[test]
fn a_database_from_a_newer_build() {
    let sandbox = Sandbox::new();
    let db = sandbox.path().join("memory.db");
    drop(agent_memory_sqlite::SqliteStore::open(&db).expect("open"));
    // `user_version` lives at offset 60 of the header, big-endian.
    let mut bytes = std::fs::read(&db).expect("read");
    bytes[60..64].copy_from_slice(&999_u32.to_be_bytes());
    std::fs::write(&db, &bytes).expect("write");
    let run = sandbox.run(&["--db", "memory.db", "stats"], &[]);
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(run.stderr.lines().count(), 1, "{run}");
    assert!(run.stderr.contains("schema version 999"), "{run}");
}

#[test]
fn an_unknown_subcommand() {
    let sandbox = Sandbox::new();
    insta::assert_snapshot!(sandbox.run(&["frobnicate"], &[]));
}

#[test]
fn no_subcommand() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&[], &[]);
    assert_eq!(run.code, Some(2), "{run}");
    assert!(run.stderr.contains("Usage: agent-memory"), "{run}");
}

#[test]
fn an_unknown_option() {
    let sandbox = Sandbox::new();
    insta::assert_snapshot!(sandbox.run(&["stats", "--verbose"], &[]));
}

#[test]
fn a_negative_ttl() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["browser", "prune", "--ttl-days=-1"], &[]);
    assert_eq!(run.code, Some(1), "{run}");
    insta::assert_snapshot!(run);
}

#[test]
fn an_episode_file_without_episodes() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path().join("empty.jsonl"), "\n\n").expect("write");
    let run = sandbox.run(
        &[
            "trajectory",
            "record",
            "--partition",
            "p",
            "--file",
            "empty.jsonl",
        ],
        &[],
    );
    assert_eq!(run.code, Some(1), "{run}");
    insta::assert_snapshot!(run);
}

#[test]
fn exporting_over_a_file() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path().join("taken"), "a file, not a folder").expect("write");
    // Export reads the database: it must exist first.
    drop(
        agent_memory_sqlite::SqliteStore::open(sandbox.path().join("agent-memory.db"))
            .expect("create"),
    );
    let run = sandbox.run(&["browser", "export", "taken"], &[]);
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(run.stderr.lines().count(), 1, "{run}");
    assert!(run.stderr.contains("taken"), "{run}");
    assert_eq!(
        std::fs::read_to_string(sandbox.path().join("taken")).expect("read"),
        "a file, not a folder",
        "the file is left as it was"
    );
}
