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
        serde_json::json!([{"session": "first-run", "logs": 4, "already_imported": false}]),
        "{run}"
    );
    assert_eq!(run.stderr, "", "no progress bar on a pipe");
}

#[test]
fn import_twice_changes_nothing() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOGS);
    sandbox.expect(0, &["--db", "memory.db", "recording", "import", LOGS]);
    insta::assert_snapshot!(sandbox.expect(0, &["--db", "memory.db", "recording", "import", LOGS]));
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
    // A database that holds other things, but not this session.
    drop(agent_memory_sqlite::SqliteStore::open(sandbox.path().join("memory.db")).expect("create"));
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
    for command in ["templatize", "replay", "lint", "fmt", "import"] {
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

/// Runs `agent-memory args...` in `sandbox` with `stdin` as its input.
fn run_with_stdin(sandbox: &Sandbox, args: &[&str], stdin: &str) -> crate::Run {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-memory"))
        .args(args)
        .env_remove("AGENT_MEMORY_DB")
        .current_dir(sandbox.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agent-memory");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    let output = child.wait_with_output().expect("run agent-memory");
    let root = sandbox.path().display().to_string();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).replace(&root, "[TMP]");
    crate::Run {
        code: output.status.code(),
        stdout: text(&output.stdout),
        stderr: text(&output.stderr),
    }
}

const DECISION_024: &str = "decision-024.trail.yaml";

#[test]
fn replay_step_session_resolves_each_call_after_the_writes_before_it() {
    let sandbox = Sandbox::new();
    sandbox.fixture(DECISION_024);
    // The provisioning call writes the account (the password as a secret); a malformed line
    // gets an error event and the call stays pending; the sign-in and the agent step write
    // nothing.
    let stdin = [
        r#"{"set": {"merchant_email": "shop+tea.xyz789@example.com"}, "secrets": {"merchant_password": 9999}}"#,
        r#"{"set": {"merchant_email": "shop+tea.xyz789@example.com"}, "secrets": {"merchant_password": "pw-9999zq"}}"#,
        "{}",
        "not json",
        "{}",
    ]
    .join("\n");
    let run = run_with_stdin(
        &sandbox,
        &[
            "recording",
            "replay",
            DECISION_024,
            "--device",
            "android-phone",
            "--step",
            "--arg",
            "retries=5",
        ],
        &stdin,
    );
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        !run.stdout.contains("9999zq") && !run.stderr.contains("9999"),
        "{run}"
    );
    let events: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let sign_in = &events[3];
    assert_eq!(sign_in["tool"], "myapp_launchAppSignedIn", "{run}");
    assert_eq!(
        sign_in["parameters"]["email"],
        "shop+tea.xyz789@example.com"
    );
    assert_eq!(
        sign_in["parameters"]["retries"], 5,
        "a whole-scalar integer arg stays a number"
    );
    insta::assert_snapshot!(run);
}

#[test]
fn replay_step_session_closed_early_names_how_far_it_got() {
    let sandbox = Sandbox::new();
    sandbox.fixture(DECISION_024);
    let run = run_with_stdin(
        &sandbox,
        &[
            "recording",
            "replay",
            DECISION_024,
            "--device",
            "android",
            "--step",
        ],
        "{\"set\": {\"merchant_email\": \"a@example.com\", \"merchant_password\": \"pw\"}}\n",
    );
    assert_eq!(run.code, Some(1), "{run}");
    assert!(
        run.stderr.contains("stdin closed after 1 of 3 dispatches"),
        "{run}"
    );
}

#[test]
fn replay_masks_secrets_from_the_command_line_and_memory_files() {
    let sandbox = Sandbox::new();
    sandbox.fixture(TRAIL).fixture("secret.memory.json");
    let from_flag = sandbox.expect(
        0,
        &[
            "recording",
            "replay",
            TRAIL,
            "--device",
            "android",
            "--set",
            "merchant_email=shop+tea.xyz789@example.com",
            "--secret",
            "merchant_password=pw-9999zq-flag",
        ],
    );
    assert!(!from_flag.stdout.contains("9999zq"), "{from_flag}");
    assert!(
        from_flag
            .stdout
            .contains(r#""password":"${merchant_password}""#),
        "{from_flag}"
    );
    let from_file = sandbox.expect(
        0,
        &[
            "--json",
            "recording",
            "replay",
            TRAIL,
            "--device",
            "android",
            "--memory",
            "secret.memory.json",
        ],
    );
    assert!(!from_file.stdout.contains("9999zq"), "{from_file}");
    insta::assert_snapshot!("replay_masked_from_a_memory_file", from_file);
}

#[test]
fn replay_plans_tokens_a_known_writer_produces_and_binds_args() {
    let sandbox = Sandbox::new();
    sandbox.fixture(DECISION_024);
    // Memory starts empty, but the provisioning call before the sign-in writes the account:
    // the plan keeps those tokens for run time instead of refusing.
    insta::assert_snapshot!(sandbox.expect(
        0,
        &["recording", "replay", DECISION_024, "--device", "android"]
    ));
    let bad = sandbox.expect(
        1,
        &[
            "recording",
            "replay",
            DECISION_024,
            "--device",
            "android",
            "--arg",
            "retries=many",
        ],
    );
    assert!(
        bad.stderr
            .contains("trail args: arg `retries` expects an integer, got \"many\""),
        "{bad}"
    );
}

#[test]
fn fmt_rewrites_checks_and_prints_trails_in_canonical_form() {
    let sandbox = Sandbox::new();
    sandbox
        .fixture("messy.trail.yaml")
        .fixture(TRAIL)
        .fixture("broken.trail.yaml");
    let messy = sandbox.path().join("messy.trail.yaml");
    let before = std::fs::read_to_string(&messy).expect("read");
    let check = sandbox.expect(
        1,
        &["recording", "fmt", "--check", "messy.trail.yaml", TRAIL],
    );
    assert_eq!(
        std::fs::read_to_string(&messy).expect("read"),
        before,
        "--check writes nothing"
    );
    let printed = sandbox.expect(0, &["recording", "fmt", "--stdout", "messy.trail.yaml"]);
    assert_eq!(
        std::fs::read_to_string(&messy).expect("read"),
        before,
        "--stdout writes nothing"
    );
    // A trail Trailblaze would refuse is an error, and no file is written.
    let refused = sandbox.expect(
        1,
        &["recording", "fmt", "messy.trail.yaml", "broken.trail.yaml"],
    );
    assert_eq!(
        std::fs::read_to_string(&messy).expect("read"),
        before,
        "nothing written"
    );
    let rewritten = sandbox.expect(0, &["recording", "fmt", "messy.trail.yaml", TRAIL]);
    let after = std::fs::read_to_string(&messy).expect("read");
    assert_eq!(after, printed.stdout);
    sandbox.expect(0, &["recording", "fmt", "--check", "messy.trail.yaml"]);
    insta::assert_snapshot!("fmt", format!("{check}\n{printed}\n{refused}\n{rewritten}"));
}

#[test]
fn templatize_a_trailblaze_session_names_steps_after_its_objectives() {
    let sandbox = Sandbox::new();
    sandbox.fixture("trailblaze.session.json");
    let run = sandbox.expect(
        0,
        &[
            "recording",
            "templatize",
            "trailblaze.session.json",
            "--title",
            "Sign in",
        ],
    );
    assert!(
        run.stdout.contains("- step: Sign in as the merchant"),
        "{run}"
    );
    insta::assert_snapshot!(run);
    let json = sandbox.expect(
        0,
        &[
            "--json",
            "recording",
            "templatize",
            "trailblaze.session.json",
            "--dry-run",
        ],
    );
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(
        report["skipped"].as_array().map(Vec::len),
        Some(11),
        "{json}"
    );
}

#[test]
fn import_a_trailblaze_session_keeps_the_calls_its_generator_keeps() {
    let sandbox = Sandbox::new();
    sandbox.fixture("trailblaze.session.json");
    let run = sandbox.expect(
        0,
        &[
            "--db",
            "memory.db",
            "recording",
            "import",
            "trailblaze.session.json",
        ],
    );
    assert!(run.stderr.contains("skipped 11 document(s)"), "{run}");
    assert_eq!(stored_logs(&sandbox, "sign-in-2026-07-21"), 3);
}

#[test]
fn lint_reports_values_inside_longer_strings() {
    let sandbox = Sandbox::new();
    sandbox.fixture("welcome.trail.yaml");
    insta::assert_snapshot!(sandbox.expect(
        1,
        &[
            "recording",
            "lint",
            "welcome.trail.yaml",
            "--set",
            "merchant_name=Lindenhof Bakery",
            "--deny",
        ],
    ));
}

/// Every byte of the SQLite file `name` in the sandbox, with its write-ahead log.
fn database_bytes(sandbox: &Sandbox, name: &str) -> Vec<u8> {
    let mut bytes = std::fs::read(sandbox.path().join(name)).expect("read database");
    for suffix in ["-wal", "-journal"] {
        if let Ok(more) = std::fs::read(sandbox.path().join(format!("{name}{suffix}"))) {
            bytes.extend(more);
        }
    }
    bytes
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// A secret fed through every `recording` command: a snapshot marks it sensitive in the
/// first log, which also holds it in its parameters (values and keys), error message and
/// trace id; a later log of the session holds it again without any snapshot. It reaches no
/// database byte, no stdout or stderr, no trail written.
#[test]
fn a_sensitive_value_reaches_no_database_output_or_trail() {
    const CANARY: &str = "zq9999canary";
    let sandbox = Sandbox::new();
    sandbox.fixture(TRAIL);
    let logs = [
        format!(
            r#"{{"session":"canary","toolName":"signIn","parameters":{{"pin":"{CANARY}","note":"pin is {CANARY}","{CANARY}":1,"email":"shop+tea.xyz789@example.com"}},"successful":false,"exceptionMessage":"wrong pin {CANARY}","durationMs":5,"timestamp":1000,"traceId":"trace-{CANARY}","memorySnapshot":[{{"key":"pin","value":"{CANARY}","sensitive":true,"writtenBy":"testUser_create"}},{{"key":"merchant_email","value":"shop+tea.xyz789@example.com","writtenBy":"testUser_create"}}]}}"#
        ),
        format!(
            r#"{{"session":"canary","toolName":"retry","parameters":{{"again":"{CANARY}","email":"shop+tea.xyz789@example.com"}},"successful":true,"exceptionMessage":"was {CANARY}","durationMs":5,"timestamp":2000}}"#
        ),
    ];
    std::fs::write(sandbox.path().join("canary.logs.jsonl"), logs.join("\n")).expect("write");
    let trail = format!(
        "trail:\n- step: sign in\n  recording:\n    android:\n    - signIn:\n        pin: ${{pin}}\n        note: 'pin is {CANARY}'\n"
    );
    std::fs::write(sandbox.path().join("canary.trail.yaml"), &trail).expect("write");
    let secret = format!("pin={CANARY}");
    let mut runs = vec![
        sandbox.expect(
            0,
            &[
                "--db",
                "memory.db",
                "recording",
                "import",
                "canary.logs.jsonl",
            ],
        ),
        sandbox.expect(0, &["recording", "templatize", "canary.logs.jsonl"]),
        sandbox.expect(
            0,
            &[
                "--json",
                "recording",
                "templatize",
                "canary.logs.jsonl",
                "--dry-run",
            ],
        ),
        sandbox.expect(
            0,
            &[
                "recording",
                "templatize",
                "canary.logs.jsonl",
                "--inside",
                "--out",
                "out.trail.yaml",
            ],
        ),
        sandbox.expect(
            0,
            &[
                "--db",
                "memory.db",
                "recording",
                "templatize",
                "--session",
                "canary",
                "--out",
                "session.trail.yaml",
            ],
        ),
        sandbox.expect(
            1,
            &[
                "recording",
                "lint",
                "canary.trail.yaml",
                "--secret",
                &secret,
                "--deny",
            ],
        ),
        sandbox.expect(
            0,
            &[
                "--db",
                "memory.db",
                "recording",
                "lint",
                TRAIL,
                "--session",
                "canary",
            ],
        ),
        sandbox.expect(
            0,
            &[
                "recording",
                "replay",
                "canary.trail.yaml",
                "--device",
                "android",
                "--secret",
                &secret,
            ],
        ),
        sandbox.expect(
            0,
            &[
                "--json",
                "recording",
                "replay",
                "canary.trail.yaml",
                "--device",
                "android",
                "--secret",
                &secret,
            ],
        ),
    ];
    // A step session whose first tool writes the secret: the calls after it use it, and a
    // literal copy of it in the trail is masked once it is known.
    let stepped = format!(
        "trail:\n- step: load\n  recording:\n    android:\n    - testUser_create: {{}}\n    - signIn:\n        pin: ${{pin}}\n        note: 'pin is ${{pin}}'\n    - after:\n        note: 'old pin {CANARY}'\n"
    );
    std::fs::write(sandbox.path().join("stepped.trail.yaml"), &stepped).expect("write");
    let writes = [
        format!("{{\"secrets\": {{\"pin\": [\"{CANARY}\"]}}}}"),
        format!("{{\"secrets\": {{\"pin\": \"{CANARY}\"}}}}"),
        "{}".to_owned(),
        "{}".to_owned(),
    ];
    let session = run_with_stdin(
        &sandbox,
        &[
            "recording",
            "replay",
            "stepped.trail.yaml",
            "--device",
            "android",
            "--step",
        ],
        &writes.join("\n"),
    );
    assert_eq!(session.code, Some(0), "{session}");
    assert!(
        session.stdout.contains(r#""note":"old pin ${pin}""#),
        "{session}"
    );
    runs.push(session);
    // A malformed --secret is refused without being quoted.
    runs.push(sandbox.expect(
        1,
        &[
            "recording",
            "replay",
            "canary.trail.yaml",
            "--device",
            "android",
            "--secret",
            &format!("={CANARY}"),
        ],
    ));
    assert!(
        runs.last()
            .is_some_and(|r| r.stderr.contains("--secret number 1 is not KEY=VALUE"))
    );
    // A sensitive value of the wrong JSON type is refused without being quoted.
    std::fs::write(
        sandbox.path().join("typed.logs.jsonl"),
        r#"{"session":"s","toolName":"t","parameters":{},"successful":true,"durationMs":1,"timestamp":1,"memorySnapshot":[{"key":"pin","value":99990001,"sensitive":true}]}"#,
    )
    .expect("write");
    runs.push(sandbox.expect(1, &["recording", "templatize", "typed.logs.jsonl"]));
    for run in &runs {
        assert!(
            !run.stdout.contains(CANARY) && !run.stderr.contains(CANARY),
            "{run}"
        );
        assert!(!run.stderr.contains("99990001"), "{run}");
    }
    assert!(
        runs[0].stdout.contains("canary"),
        "the import ran: {}",
        runs[0]
    );
    assert!(
        runs[1].stdout.contains("${pin}"),
        "the secret became its token: {}",
        runs[1]
    );
    assert!(
        runs[5].stdout.contains("contains  ${pin}"),
        "lint found it: {}",
        runs[5]
    );
    for file in ["out.trail.yaml", "session.trail.yaml"] {
        let text = std::fs::read_to_string(sandbox.path().join(file)).expect("read trail");
        assert!(!text.contains(CANARY), "{file}: {text}");
    }
    let bytes = database_bytes(&sandbox, "memory.db");
    assert!(
        holds(&bytes, "shop+tea.xyz789@example.com"),
        "the check can see values in the file"
    );
    assert!(!holds(&bytes, CANARY), "the database holds the secret");
}

/// A batch appended at once whose secret is used in an earlier log than the one whose
/// snapshot marks it sensitive (a password typed, then remembered by the tool that checked
/// it): the store never receives it, and nothing prints it. A sensitive value of the wrong
/// JSON type (an integer PIN) is refused without being quoted.
#[test]
fn an_append_scrubs_a_secret_from_the_logs_before_the_one_revealing_it() {
    const CANARY: &str = "zq9999canary";
    let sandbox = Sandbox::new();
    let logs = [
        format!(
            r#"{{"toolName":"typePassword","parameters":{{"text":"{CANARY}"}},"successful":false,"exceptionMessage":"rejected {CANARY}","durationMs":5,"timestamp":1000,"traceId":"t-{CANARY}"}}"#
        ),
        format!(
            r#"{{"toolName":"rememberPassword","parameters":{{"again":"{CANARY}"}},"successful":true,"durationMs":5,"timestamp":2000,"memorySnapshot":[{{"key":"password","value":"{CANARY}","sensitive":true,"writtenBy":"rememberPassword"}}]}}"#
        ),
    ];
    std::fs::write(sandbox.path().join("batch.jsonl"), logs.join("\n")).expect("write");
    std::fs::write(
        sandbox.path().join("typed.jsonl"),
        r#"{"toolName":"enterPin","parameters":{},"successful":true,"durationMs":1,"timestamp":1,"memorySnapshot":[{"key":"pin","value":99990001,"sensitive":true}]}"#,
    )
    .expect("write");
    let db = ["--db", "memory.db"];
    fn with<'a>(db: &[&'a str], args: &[&'a str]) -> Vec<&'a str> {
        [db, args].concat()
    }
    let runs = [
        sandbox.expect(
            0,
            &with(
                &db,
                &[
                    "recording",
                    "append",
                    "--session",
                    "s",
                    "--file",
                    "batch.jsonl",
                ],
            ),
        ),
        sandbox.expect(
            0,
            &with(&db, &["recording", "templatize", "--session", "s"]),
        ),
        sandbox.expect(
            0,
            &with(
                &db,
                &["--json", "recording", "templatize", "--session", "s"],
            ),
        ),
        sandbox.expect(0, &with(&db, &["--json", "list"])),
        sandbox.expect(
            1,
            &with(
                &db,
                &[
                    "recording",
                    "append",
                    "--session",
                    "s",
                    "--file",
                    "typed.jsonl",
                ],
            ),
        ),
        sandbox.expect(
            1,
            &with(
                &db,
                &[
                    "--json",
                    "recording",
                    "append",
                    "--session",
                    "s",
                    "--file",
                    "typed.jsonl",
                ],
            ),
        ),
    ];
    for run in &runs {
        assert!(
            !run.stdout.contains(CANARY) && !run.stderr.contains(CANARY),
            "{run}"
        );
        assert!(
            !run.stdout.contains("99990001") && !run.stderr.contains("99990001"),
            "{run}"
        );
    }
    assert!(
        runs[1].stdout.contains("text: ${password}"),
        "the earlier log's secret became its token: {}",
        runs[1]
    );
    assert!(
        runs[4].stderr.contains("typed.jsonl:1:")
            && runs[4]
                .stderr
                .contains("invalid value: a number, expected a string"),
        "the error names the input and the type: {}",
        runs[4]
    );
    let bytes = database_bytes(&sandbox, "memory.db");
    assert!(holds(&bytes, "typePassword"), "the logs were stored");
    assert!(!holds(&bytes, CANARY), "the database holds the secret");
}
