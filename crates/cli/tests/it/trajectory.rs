//! `agent-memory trajectory`: record, crystallize, recall and fingerprint, and their errors.

use crate::Sandbox;

/// A fixed "now" (2026-01-01T00:00:00Z) so scores do not depend on the day the tests run.
const NOW: &str = "1767225600000";

fn record(sandbox: &Sandbox, extra: &[&str]) -> crate::Run {
    let mut args = vec!["trajectory", "--now", NOW, "record", "--partition", "team"];
    args.extend_from_slice(extra);
    sandbox.run(&args, &[])
}

/// Three good and one bad episode of fixing a flaky test.
fn record_flaky_fixes(sandbox: &Sandbox) {
    let fields = [
        "--field",
        "problem_topology=flaky_test",
        "--field",
        "affected_layer=ci",
    ];
    for outcome in [
        &["--trajectory", "read_logs,pin_seed,run_tests", "--success"][..],
        &[
            "--action",
            "read_logs",
            "--action",
            "pin_seed",
            "--action",
            "run_tests",
            "--success",
        ],
        &["--trajectory", "read_logs,retry_ci", "--failure"],
        &[
            "--trajectory",
            "read_logs,pin_seed,run_tests",
            "--score",
            "0.8",
        ],
    ] {
        let run = record(sandbox, &[&fields[..], outcome].concat());
        assert_eq!(run.code, Some(0), "{run}");
    }
}

/// The rows of the episode table, as `stats` counts them.
fn stored_episodes(sandbox: &Sandbox) -> u64 {
    // A command that failed before its first write leaves no database at all.
    if !sandbox.path().join("agent-memory.db").exists() {
        return 0;
    }
    let stats = sandbox.run(&["--json", "stats"], &[]);
    let json: serde_json::Value = serde_json::from_str(&stats.stdout).expect("json");
    json["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .find(|t| t["name"] == "trajectory_episode")
        .and_then(|t| t["rows"].as_u64())
        .expect("episode table")
}

#[test]
fn help_documents_the_default_fields() {
    let sandbox = Sandbox::new();
    insta::assert_snapshot!(sandbox.run(&["trajectory", "record", "--help"], &[]));
}

#[test]
fn a_file_and_an_outcome_flag_conflict() {
    let sandbox = Sandbox::new();
    let run = record(&sandbox, &["--file", "episodes.jsonl", "--success"]);
    assert_eq!(run.code, Some(2), "{run}");
    assert!(run.stderr.contains("cannot be used with"), "{run}");
}

#[test]
fn a_fingerprint_value_that_is_not_text() {
    let sandbox = Sandbox::new();
    let line = r#"{"fingerprint": {"problem_topology": 3, "affected_layer": "api"}, "trajectory": ["a"], "outcome": {"success": true}}"#;
    std::fs::write(sandbox.path().join("episodes.jsonl"), format!("{line}\n")).expect("write");
    insta::assert_snapshot!(record(&sandbox, &["--file", "episodes.jsonl"]));
}

#[test]
fn record_prints_what_it_stored() {
    let sandbox = Sandbox::new();
    let run = record(
        &sandbox,
        &[
            "--field",
            "problem_topology=bug",
            "--field",
            "affected_layer=ui",
            "--trajectory",
            "a,b",
            "--success",
        ],
    );
    insta::assert_snapshot!(run);
}

#[test]
fn crystallize_then_recall_ranks_what_worked() {
    let sandbox = Sandbox::new();
    record_flaky_fixes(&sandbox);
    let crystallized = sandbox.run(
        &[
            "trajectory",
            "--now",
            NOW,
            "crystallize",
            "--partition",
            "team",
        ],
        &[],
    );
    insta::assert_snapshot!("crystallize", crystallized);
    let again = sandbox.run(
        &[
            "trajectory",
            "--now",
            NOW,
            "crystallize",
            "--partition",
            "team",
        ],
        &[],
    );
    insta::assert_snapshot!("crystallize_again", again);
    let recalled = sandbox.run(
        &[
            "trajectory",
            "--now",
            NOW,
            "recall",
            "--partition",
            "team",
            "--field",
            "affected_layer=ci",
        ],
        &[],
    );
    insta::assert_snapshot!("recall", recalled);
    let json = sandbox.run(
        &[
            "--json",
            "trajectory",
            "--now",
            NOW,
            "recall",
            "--partition",
            "team",
            "--field",
            "affected_layer=ci",
            "--field",
            "problem_topology=flaky_test",
            "--limit",
            "1",
            "--weights",
            "confidence=1,recency=0",
        ],
        &[],
    );
    assert_eq!(json.code, Some(0), "{json}");
    let value: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(value.as_array().map(Vec::len), Some(1), "{json}");
    // With only the confidence weighed, the score is the confidence.
    assert_eq!(value[0]["score"], value[0]["confidence"], "{json}");
    insta::assert_snapshot!("recall_json", json);
}

#[test]
fn recall_of_another_value_finds_nothing() {
    let sandbox = Sandbox::new();
    record_flaky_fixes(&sandbox);
    sandbox.run(&["trajectory", "crystallize", "--partition", "team"], &[]);
    let run = sandbox.run(
        &[
            "trajectory",
            "recall",
            "--partition",
            "team",
            "--field",
            "affected_layer=db",
        ],
        &[],
    );
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (Some(0), "no pattern matches\n"),
        "{run}"
    );
}

#[test]
fn the_first_record_stores_the_fields_of_its_partition() {
    let sandbox = Sandbox::new();
    let first = sandbox.run(
        &[
            "trajectory",
            "record",
            "--partition",
            "ops",
            "--fields",
            "task,env",
            "--field",
            "task=deploy",
            "--field",
            "env=prod",
            "--trajectory",
            "build,ship",
            "--success",
        ],
        &[],
    );
    assert_eq!(first.code, Some(0), "{first}");
    // Later commands read the fields from the database: no --fields needed.
    for _ in 0..2 {
        let run = sandbox.run(
            &[
                "trajectory",
                "record",
                "--partition",
                "ops",
                "--field",
                "task=deploy",
                "--field",
                "env=prod",
                "--trajectory",
                "build,ship",
                "--success",
            ],
            &[],
        );
        assert_eq!(run.code, Some(0), "{run}");
    }
    let crystallized = sandbox.run(
        &["--json", "trajectory", "crystallize", "--partition", "ops"],
        &[],
    );
    let value: serde_json::Value = serde_json::from_str(&crystallized.stdout).expect("json");
    assert_eq!(
        value[0]["fingerprint"],
        serde_json::json!({"task": "deploy", "env": "prod"}),
        "{crystallized}"
    );
    let other = sandbox.run(
        &[
            "trajectory",
            "recall",
            "--partition",
            "ops",
            "--fields",
            "a,b",
            "--field",
            "a=1",
        ],
        &[],
    );
    insta::assert_snapshot!("fields_differ", other);
}

#[test]
fn record_from_a_jsonl_file() {
    let sandbox = Sandbox::new();
    let line = r#"{"fingerprint": {"problem_topology": "bug", "affected_layer": "api"}, "trajectory": ["read", "fix", "test"], "outcome": {"success": true}}"#;
    std::fs::write(
        sandbox.path().join("episodes.jsonl"),
        format!("{line}\n\n{line}\n{line}\n"),
    )
    .expect("write");
    let run = sandbox.run(
        &[
            "trajectory",
            "record",
            "--partition",
            "team",
            "--file",
            "episodes.jsonl",
        ],
        &[],
    );
    insta::assert_snapshot!(run);
    let crystallized = sandbox.run(
        &["--json", "trajectory", "crystallize", "--partition", "team"],
        &[],
    );
    let value: serde_json::Value = serde_json::from_str(&crystallized.stdout).expect("json");
    assert_eq!(value[0]["evidence_count"], 3, "{crystallized}");
    assert_eq!(stored_episodes(&sandbox), 3);
}

#[test]
fn a_malformed_jsonl_line_is_named_and_nothing_is_stored() {
    let sandbox = Sandbox::new();
    let good = r#"{"fingerprint": {"problem_topology": "bug", "affected_layer": "api"}, "trajectory": ["a"], "outcome": {"success": true}}"#;
    std::fs::write(
        sandbox.path().join("episodes.jsonl"),
        format!("{good}\n{good}\n{{\"fingerprint\": oops}}\n"),
    )
    .expect("write");
    let run = sandbox.run(
        &[
            "trajectory",
            "record",
            "--partition",
            "team",
            "--file",
            "episodes.jsonl",
        ],
        &[],
    );
    insta::assert_snapshot!(run);
    assert_eq!(stored_episodes(&sandbox), 0);
}

#[test]
fn a_jsonl_line_with_a_missing_field_fails_the_whole_file() {
    let sandbox = Sandbox::new();
    let good = r#"{"fingerprint": {"problem_topology": "bug", "affected_layer": "api"}, "trajectory": ["a"], "outcome": {"success": true}}"#;
    let bad = r#"{"fingerprint": {"problem_topology": "bug"}, "trajectory": ["a"], "outcome": {"success": true}}"#;
    std::fs::write(
        sandbox.path().join("episodes.jsonl"),
        format!("{good}\n{bad}\n"),
    )
    .expect("write");
    let run = sandbox.run(
        &[
            "trajectory",
            "record",
            "--partition",
            "team",
            "--file",
            "episodes.jsonl",
        ],
        &[],
    );
    insta::assert_snapshot!(run);
    let crystallized = sandbox.run(
        &["--json", "trajectory", "crystallize", "--partition", "team"],
        &[],
    );
    assert_eq!(crystallized.stdout, "[]\n", "{crystallized}");
}

#[test]
fn a_missing_jsonl_file() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(
        &[
            "trajectory",
            "record",
            "--partition",
            "team",
            "--file",
            "nowhere.jsonl",
        ],
        &[],
    );
    assert_eq!(run.code, Some(1), "{run}");
    assert!(
        run.stderr.starts_with("error: cannot read nowhere.jsonl"),
        "{run}"
    );
}

#[test]
fn recall_of_an_unknown_field() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(
        &[
            "trajectory",
            "recall",
            "--partition",
            "team",
            "--field",
            "colour=red",
        ],
        &[],
    );
    insta::assert_snapshot!(run);
}

#[test]
fn record_without_a_fingerprint_field() {
    let sandbox = Sandbox::new();
    let run = record(
        &sandbox,
        &[
            "--field",
            "problem_topology=bug",
            "--trajectory",
            "a",
            "--success",
        ],
    );
    insta::assert_snapshot!(run);
}

#[test]
fn a_malformed_name_value() {
    let sandbox = Sandbox::new();
    let run = record(
        &sandbox,
        &[
            "--field",
            "problem_topology",
            "--trajectory",
            "a",
            "--success",
        ],
    );
    insta::assert_snapshot!(run);
}

#[test]
fn malformed_weights() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(
        &[
            "trajectory",
            "recall",
            "--partition",
            "team",
            "--field",
            "affected_layer=ci",
            "--weights",
            "confidence=high",
        ],
        &[],
    );
    assert_eq!(run.code, Some(2), "{run}");
    assert!(
        run.stderr.contains("weight confidence is not a number"),
        "{run}"
    );
}

#[test]
fn a_score_out_of_range() {
    let sandbox = Sandbox::new();
    for score in ["1.5", "nan", "-0.1", "high"] {
        let run = record(
            &sandbox,
            &[
                "--field",
                "problem_topology=bug",
                "--trajectory",
                "a",
                &format!("--score={score}"),
            ],
        );
        assert_eq!(run.code, Some(2), "{run}");
        assert!(
            run.stderr.contains("expected a number from 0 to 1"),
            "{run}"
        );
    }
}

#[test]
fn an_episode_needs_an_outcome() {
    let sandbox = Sandbox::new();
    let run = record(
        &sandbox,
        &["--field", "problem_topology=bug", "--trajectory", "a"],
    );
    assert_eq!(run.code, Some(2), "{run}");
    assert!(run.stderr.contains("--success"), "{run}");
}

#[test]
fn fingerprint_is_popotos() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(
        &[
            "trajectory",
            "fingerprint",
            r#"{"task": "deploy", "env": "staging"}"#,
        ],
        &[],
    );
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (Some(0), "86e6b7501eb99c29\n"),
        "{run}"
    );
    let json = sandbox.run(
        &[
            "--json",
            "trajectory",
            "fingerprint",
            r#"{"env": "staging", "task": "deploy"}"#,
        ],
        &[],
    );
    insta::assert_snapshot!(json);
}

#[test]
fn fingerprint_of_something_else_than_an_object() {
    let sandbox = Sandbox::new();
    insta::assert_snapshot!(
        "not_an_object",
        sandbox.run(&["trajectory", "fingerprint", "[1, 2]"], &[])
    );
    insta::assert_snapshot!(
        "not_json",
        sandbox.run(&["trajectory", "fingerprint", "{task"], &[])
    );
}
