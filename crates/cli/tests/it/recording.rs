//! `agent-memory recording templatize | replay | lint | import`, on the fixtures of
//! `tests/data/`: a sign-in session whose account came from memory, trails and memory files.

use agent_memory_core::SessionId;
use agent_memory_core::store::tool_log::ToolLogStore;
use agent_memory_sqlite::SqliteStore;

use crate::Sandbox;

const LOGS: &str = "sign-in.logs.jsonl";
const OBJECTIVES: &str = "sign-in.objectives.json";
const TRAIL: &str = "sign-in.trail.yaml";

fn stored_logs(sandbox: &Sandbox, session: &str) -> usize {
    let store = SqliteStore::open(sandbox.path().join("memory.db")).expect("open");
    store
        .list_tool_logs(&SessionId::new(session).expect("id"))
        .expect("list")
        .len()
}

#[test]
fn templatize_a_file_with_objectives() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOGS).fixture(OBJECTIVES);
    let run = sandbox.expect(
        0,
        &[
            "recording",
            "templatize",
            LOGS,
            "--objectives",
            OBJECTIVES,
            "--device",
            "ios-iphone",
        ],
    );
    assert!(run.stdout.contains("email: ${merchant_email}"), "{run}");
    insta::assert_snapshot!(run);
    assert!(
        !sandbox.path().join(".agent-memory").exists(),
        "a file input needs no database"
    );
}

#[test]
fn templatize_dry_run_prints_only_the_report() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOGS);
    insta::assert_snapshot!(sandbox.expect(0, &["recording", "templatize", LOGS, "--dry-run"]));
}

#[test]
fn templatize_dry_run_as_json() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOGS);
    let run = sandbox.expect(0, &["--json", "recording", "templatize", LOGS, "--dry-run"]);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(json["substitutions"][0]["key"], "merchant_email", "{run}");
    insta::assert_snapshot!(run);
}

#[test]
fn templatize_a_lower_minimum_templates_short_values() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOGS);
    let run = sandbox.expect(
        0,
        &[
            "--json",
            "recording",
            "templatize",
            LOGS,
            "--dry-run",
            "--min-chars",
            "2",
        ],
    );
    // `country: US` is two characters written by no known writer.
    assert!(run.stdout.contains("\"key\": \"country\""), "{run}");
}

#[test]
fn import_then_templatize_a_stored_session_to_a_file() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOGS);
    insta::assert_snapshot!(
        "import_text",
        sandbox.expect(0, &["--db", "memory.db", "recording", "import", LOGS])
    );
    assert_eq!(stored_logs(&sandbox, "first-run"), 4);
    let run = sandbox.expect(
        0,
        &[
            "--db",
            "memory.db",
            "recording",
            "templatize",
            "--session",
            "first-run",
            "--out",
            "out.trail.yaml",
        ],
    );
    insta::assert_snapshot!("templatize_session", run);
    let trail = std::fs::read_to_string(sandbox.path().join("out.trail.yaml")).expect("read");
    insta::assert_snapshot!("templatize_session_trail", trail);
}

#[test]
fn import_as_json() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOGS);
    let run = sandbox.expect(
        0,
        &["--json", "--db", "memory.db", "recording", "import", LOGS],
    );
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(
        json,
        serde_json::json!([{"session": "first-run", "logs": 4}]),
        "{run}"
    );
    assert_eq!(run.stderr, "", "no progress bar on a pipe");
}

#[test]
fn import_twice_is_refused() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOGS);
    sandbox.expect(0, &["--db", "memory.db", "recording", "import", LOGS]);
    insta::assert_snapshot!(sandbox.expect(1, &["--db", "memory.db", "recording", "import", LOGS]));
    assert_eq!(stored_logs(&sandbox, "first-run"), 4);
}

#[test]
fn import_of_a_malformed_line_writes_nothing() {
    let sandbox = Sandbox::new();
    sandbox.fixture("broken.logs.jsonl");
    let run = sandbox.expect(
        1,
        &[
            "--db",
            "memory.db",
            "recording",
            "import",
            "broken.logs.jsonl",
        ],
    );
    insta::assert_snapshot!(run);
    assert!(
        !sandbox.path().join("memory.db").exists(),
        "the database is not even created"
    );
}

#[test]
fn templatize_a_malformed_line_names_it() {
    let sandbox = Sandbox::new();
    sandbox.fixture("broken.logs.jsonl");
    insta::assert_snapshot!(sandbox.expect(1, &["recording", "templatize", "broken.logs.jsonl"]));
}

#[test]
fn templatize_a_missing_file() {
    let sandbox = Sandbox::new();
    insta::assert_snapshot!(sandbox.expect(1, &["recording", "templatize", "nowhere.jsonl"]));
}

#[test]
fn templatize_an_unknown_session() {
    let sandbox = Sandbox::new();
    insta::assert_snapshot!(sandbox.expect(
        1,
        &[
            "--db",
            "memory.db",
            "recording",
            "templatize",
            "--session",
            "nobody"
        ]
    ));
}

#[test]
fn templatize_needs_a_file_or_a_session_not_both() {
    let sandbox = Sandbox::new();
    insta::assert_snapshot!(
        "templatize_neither",
        sandbox.expect(2, &["recording", "templatize"])
    );
    insta::assert_snapshot!(
        "templatize_both",
        sandbox.expect(2, &["recording", "templatize", LOGS, "--session", "s"])
    );
}

#[test]
fn templatize_malformed_objectives() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOGS);
    std::fs::write(
        sandbox.path().join("objectives.json"),
        "[\n  {\"step\": \"a\", \"started_at\": \"soon\"}\n]\n",
    )
    .expect("write");
    std::fs::write(
        sandbox.path().join("both.json"),
        "[{\"step\": \"a\", \"verify\": \"b\", \"started_at\": 0}]",
    )
    .expect("write");
    let mut runs = String::new();
    for file in ["objectives.json", "both.json", "absent.json"] {
        let run = sandbox.expect(1, &["recording", "templatize", LOGS, "--objectives", file]);
        runs.push_str(&run.stderr);
    }
    insta::assert_snapshot!(runs);
}

#[test]
fn replay_with_new_values_from_a_file_and_the_command_line() {
    let sandbox = Sandbox::new();
    sandbox.fixture(TRAIL).fixture("tea-house.memory.json");
    let run = sandbox.expect(
        0,
        &[
            "recording",
            "replay",
            TRAIL,
            "--device",
            "android-phone",
            "--memory",
            "tea-house.memory.json",
            "--set",
            "merchant_password=pw-second",
            "--set",
            "merchant_email=chosen@example.com",
        ],
    );
    assert!(
        run.stdout.contains("chosen@example.com"),
        "--set wins: {run}"
    );
    insta::assert_snapshot!(run);
}

#[test]
fn replay_as_json() {
    let sandbox = Sandbox::new();
    sandbox.fixture(TRAIL).fixture("tea-house.memory.json");
    let run = sandbox.expect(
        0,
        &[
            "--json",
            "recording",
            "replay",
            TRAIL,
            "--device",
            "ios-iphone",
            "--memory",
            "tea-house.memory.json",
        ],
    );
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(
        json[0]["calls"][0]["parameters"]["token"], "QK2PL9",
        "{run}"
    );
    insta::assert_snapshot!(run);
}

#[test]
fn replay_lists_every_unresolved_token() {
    let sandbox = Sandbox::new();
    sandbox.fixture(TRAIL);
    insta::assert_snapshot!(
        "unresolved_text",
        sandbox.expect(1, &["recording", "replay", TRAIL, "--device", "android"])
    );
    let run = sandbox.expect(
        1,
        &[
            "--json",
            "recording",
            "replay",
            TRAIL,
            "--device",
            "ios-iphone-15",
            "--set",
            "merchant_email=a@example.com",
        ],
    );
    insta::assert_snapshot!("unresolved_json", run);
}

#[test]
fn replay_a_malformed_trail_names_line_and_column() {
    let sandbox = Sandbox::new();
    sandbox.fixture("broken.trail.yaml");
    insta::assert_snapshot!(sandbox.expect(
        1,
        &[
            "recording",
            "replay",
            "broken.trail.yaml",
            "--device",
            "android"
        ]
    ));
}

#[test]
fn replay_a_missing_trail() {
    let sandbox = Sandbox::new();
    insta::assert_snapshot!(sandbox.expect(
        1,
        &[
            "recording",
            "replay",
            "gone.trail.yaml",
            "--device",
            "android"
        ]
    ));
}

#[test]
fn replay_bad_memory_values() {
    let sandbox = Sandbox::new();
    sandbox.fixture(TRAIL).fixture("nested.memory.json");
    std::fs::write(sandbox.path().join("list.json"), "[\"a\"]").expect("write");
    std::fs::write(sandbox.path().join("cut.json"), "{\"a\": \"b\",\n").expect("write");
    let mut errors = String::new();
    for file in ["nested.memory.json", "list.json", "cut.json", "absent.json"] {
        let run = sandbox.expect(
            1,
            &[
                "recording",
                "replay",
                TRAIL,
                "--device",
                "android",
                "--memory",
                file,
            ],
        );
        errors.push_str(&run.stderr);
    }
    insta::assert_snapshot!(errors);
}

#[test]
fn replay_a_bad_key_value_is_a_usage_error() {
    let sandbox = Sandbox::new();
    sandbox.fixture(TRAIL);
    insta::assert_snapshot!(
        "set_without_equals",
        sandbox.expect(
            2,
            &[
                "recording",
                "replay",
                TRAIL,
                "--device",
                "android",
                "--set",
                "merchant_email"
            ]
        )
    );
    insta::assert_snapshot!(
        "set_with_an_empty_key",
        sandbox.expect(
            2,
            &[
                "recording",
                "replay",
                TRAIL,
                "--device",
                "android",
                "--set",
                "=x"
            ]
        )
    );
    // A value may hold `=` and may be empty.
    sandbox.expect(
        1,
        &[
            "recording",
            "replay",
            TRAIL,
            "--device",
            "android",
            "--set",
            "a=b=c",
            "--set",
            "e=",
        ],
    );
}

#[test]
fn replay_needs_a_device() {
    let sandbox = Sandbox::new();
    sandbox.fixture(TRAIL);
    let run = sandbox.expect(2, &["recording", "replay", TRAIL]);
    assert!(run.stderr.contains("--device <CLASSIFIER>"), "{run}");
}

#[test]
fn lint_finds_literals_equal_to_memory_values() {
    let sandbox = Sandbox::new();
    sandbox.fixture("stale.trail.yaml");
    let args = [
        "recording",
        "lint",
        "stale.trail.yaml",
        "--set",
        "merchant_email=shop+coffee.abc123@example.com",
        "--set",
        "button=Continue",
    ];
    insta::assert_snapshot!("lint_text", sandbox.expect(0, &args));
    // `Continue` has 8 characters: below a minimum of 9 it no longer counts.
    let mut higher = args.to_vec();
    higher.extend(["--min-chars", "9", "--json"]);
    let run = sandbox.expect(0, &higher);
    assert!(!run.stdout.contains("button"), "{run}");
    insta::assert_snapshot!("lint_json_higher_minimum", run);
    let mut deny = args.to_vec();
    deny.push("--deny");
    insta::assert_snapshot!("lint_deny", sandbox.expect(1, &deny));
}

#[test]
fn lint_of_a_clean_trail() {
    let sandbox = Sandbox::new();
    sandbox.fixture(TRAIL).fixture("tea-house.memory.json");
    insta::assert_snapshot!(sandbox.expect(
        0,
        &[
            "recording",
            "lint",
            TRAIL,
            "--memory",
            "tea-house.memory.json",
            "--deny"
        ]
    ));
}

#[test]
fn lint_a_malformed_trail_fails_as_replay_does() {
    let sandbox = Sandbox::new();
    sandbox.fixture("broken.trail.yaml");
    let lint = sandbox.expect(1, &["recording", "lint", "broken.trail.yaml"]);
    let replay = sandbox.expect(
        1,
        &[
            "recording",
            "replay",
            "broken.trail.yaml",
            "--device",
            "android",
        ],
    );
    assert_eq!(lint.stderr, replay.stderr);
    assert!(
        lint.stderr.starts_with("error: broken.trail.yaml:"),
        "{lint}"
    );
}

#[test]
fn lint_against_the_values_a_stored_session_logged() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOGS).fixture("stale.trail.yaml");
    sandbox.expect(0, &["--db", "memory.db", "recording", "import", LOGS]);
    // No current value: the address is found in the session's past snapshots.
    let run = sandbox.expect(
        0,
        &[
            "--db",
            "memory.db",
            "recording",
            "lint",
            "stale.trail.yaml",
            "--session",
            "first-run",
        ],
    );
    insta::assert_snapshot!(run);
    insta::assert_snapshot!(
        "lint_unknown_session",
        sandbox.expect(
            1,
            &[
                "--db",
                "memory.db",
                "recording",
                "lint",
                "stale.trail.yaml",
                "--session",
                "nobody",
            ],
        )
    );
}

#[test]
fn help_of_the_recording_commands() {
    let sandbox = Sandbox::new();
    let mut help = String::new();
    for command in ["templatize", "replay", "lint", "import"] {
        help.push_str(&sandbox.expect(0, &["recording", command, "--help"]).stdout);
        help.push('\n');
    }
    insta::assert_snapshot!(help);
}

#[test]
fn templatize_refuses_a_file_of_several_sessions() {
    let sandbox = Sandbox::new();
    let line = |session: &str| {
        format!(
            r#"{{"session":"{session}","toolName":"tapOn","parameters":{{"text":"OK"}},"successful":true,"durationMs":3,"timestamp":10}}"#
        )
    };
    let text = [line("a"), line("b"), line("a")].join("\n");
    std::fs::write(sandbox.path().join("mixed.jsonl"), text).expect("write");
    insta::assert_snapshot!(sandbox.expect(1, &["recording", "templatize", "mixed.jsonl"]));
    sandbox.expect(
        0,
        &["--db", "memory.db", "recording", "import", "mixed.jsonl"],
    );
    let run = sandbox.expect(
        0,
        &[
            "--db",
            "memory.db",
            "recording",
            "templatize",
            "--session",
            "a",
        ],
    );
    assert_eq!(run.stdout.matches("tapOn").count(), 2, "{run}");
}
