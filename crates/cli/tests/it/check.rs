//! `agent-memory check`: a table of every check (and each finding), `--json`, exit 1 on any
//! finding; the file is opened read-only and left as it was.

use std::fs;

use crate::Sandbox;

/// A sandbox whose `memory.db` holds an imported session log.
fn with_data() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.fixture("verbose-flag.session.jsonl");
    sandbox.expect(
        0,
        &[
            "--db",
            "memory.db",
            "turns",
            "import",
            "verbose-flag.session.jsonl",
        ],
    );
    sandbox
}

#[test]
fn a_sound_database_passes_every_check() {
    let sandbox = with_data();
    insta::assert_snapshot!(
        "check_text",
        sandbox.expect(0, &["--db", "memory.db", "check"])
    );
    insta::assert_snapshot!(
        "check_json",
        sandbox.expect(0, &["--json", "--db", "memory.db", "check"])
    );
}

/// A file of ours whose application id was cleared behind the store's back: the read-only
/// check reports it, exits with 1, and changes nothing.
#[test]
fn a_finding_is_printed_and_exits_with_1() {
    let sandbox = with_data();
    let path = sandbox.path().join("memory.db");
    let mut bytes = fs::read(&path).expect("read");
    bytes[68..72].copy_from_slice(&[0, 0, 0, 0]);
    fs::write(&path, &bytes).expect("write");
    insta::assert_snapshot!(sandbox.expect(1, &["--db", "memory.db", "check"]));
    let json = sandbox.expect(1, &["--json", "--db", "memory.db", "check"]);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(
        report["findings"],
        serde_json::json!([{
            "check": "schema",
            "location": "header",
            "detail": "application_id is 0x00000000, not 0x414d454d"
        }])
    );
    assert_eq!(
        fs::read(&path).expect("read"),
        bytes,
        "check changed the file"
    );
}

#[test]
fn a_missing_database_is_an_error_and_is_not_created() {
    let sandbox = Sandbox::new();
    let run = sandbox.expect(1, &["--db", "absent.db", "check"]);
    assert_eq!(run.stderr, "error: no database at absent.db\n");
    assert!(!sandbox.path().join("absent.db").exists());
}

#[test]
fn a_postgresql_database_is_not_checked_and_its_password_is_not_shown() {
    let sandbox = Sandbox::new();
    let run = sandbox.expect(
        1,
        &["--db", "postgres://agent:s3cret@db.invalid/memory", "check"],
    );
    assert!(
        run.stderr
            .contains("postgres://agent:***@db.invalid/memory is a PostgreSQL database"),
        "{run}"
    );
    assert!(!run.stderr.contains("s3cret"), "{run}");
}
