//! `agent-memory trajectory`: record, crystallize, recall and fingerprint, and their errors.

use crate::{Sandbox, conforms};

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
    let value = conforms("trajectory_recall.output", &json.stdout);
    let patterns = &value["patterns"];
    assert_eq!(patterns.as_array().map(Vec::len), Some(1), "{json}");
    // With only the confidence weighed, the score is the confidence.
    assert_eq!(patterns[0]["score"], patterns[0]["confidence"], "{json}");
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
    let value = conforms("trajectory_crystallize.output", &crystallized.stdout);
    assert_eq!(
        value["patterns"][0]["fingerprint"],
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
    let value = conforms("trajectory_crystallize.output", &crystallized.stdout);
    assert_eq!(value["patterns"][0]["evidence_count"], 3, "{crystallized}");
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
    // Nothing was stored, not even the partition.
    assert_eq!(crystallized.code, Some(0), "{crystallized}");
    assert!(
        crystallized
            .stdout
            .contains("partition team holds nothing yet"),
        "{crystallized}"
    );
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
    let never = sandbox.run(
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
    // A read of a database that does not exist yet answers empty, and creates nothing.
    assert_eq!(never.code, Some(0), "{never}");
    assert!(
        never.stderr.contains("agent-memory.db does not exist yet"),
        "{never}"
    );
    assert!(!sandbox.path().join("agent-memory.db").exists());
    let recorded = sandbox.run(
        &[
            "trajectory",
            "record",
            "--partition",
            "team",
            "--field",
            "problem_topology=x",
            "--field",
            "affected_layer=y",
            "--trajectory",
            "a",
            "--success",
        ],
        &[],
    );
    assert_eq!(recorded.code, Some(0), "{recorded}");
    let elsewhere = sandbox.run(
        &[
            "trajectory",
            "recall",
            "--partition",
            "other",
            "--field",
            "colour=red",
        ],
        &[],
    );
    assert_eq!(elsewhere.code, Some(0), "{elsewhere}");
    assert!(
        elsewhere
            .stderr
            .contains("note: partition other holds nothing yet"),
        "{elsewhere}"
    );
    assert!(
        elsewhere.stdout.contains("no pattern matches"),
        "{elsewhere}"
    );
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

/// A field the partition does not have is refused when recording (where recall would refuse
/// it later), naming the partition's fields; nothing is stored.
#[test]
fn record_with_a_field_the_partition_does_not_have() {
    let sandbox = Sandbox::new();
    let run = record(
        &sandbox,
        &[
            "--field",
            "problem_topology=bug",
            "--field",
            "affected_layer=db",
            "--field",
            "colour=red",
            "--trajectory",
            "a",
            "--success",
            "--json",
        ],
    );
    assert_eq!(run.code, Some(1), "{run}");
    let error = conforms("error", run.stderr.trim());
    assert_eq!(error["error"]["kind"], "invalid_input");
    assert_eq!(
        error["error"]["message"],
        "the episode: fingerprint field(s) colour not among the fields of partition \"team\" (problem_topology, affected_layer)"
    );
    assert_eq!(stored_episodes(&sandbox), 0);
}

/// `--trajectory` splits at every comma, so a value whose commas may belong to an action is a
/// usage error pointing at `--action`, which keeps each action whole.
#[test]
fn an_ambiguous_trajectory_is_a_usage_error_and_action_keeps_commas() {
    let sandbox = Sandbox::new();
    let fields = [
        "--field",
        "problem_topology=form",
        "--field",
        "affected_layer=ui",
    ];
    for ambiguous in ["click(a, b),submit", "type \"x,y\",submit", "a, b", "a,,b"] {
        let run = record(
            &sandbox,
            &[&fields[..], &["--trajectory", ambiguous, "--success"]].concat(),
        );
        assert_eq!(run.code, Some(2), "{run}");
        assert!(
            run.stderr
                .contains("is ambiguous: --trajectory splits actions at every comma")
                && run.stderr.contains("--action"),
            "{run}"
        );
    }
    assert_eq!(stored_episodes(&sandbox), 0);
    for _ in 0..3 {
        let run = record(
            &sandbox,
            &[
                &fields[..],
                &["--action", "click(a, b)", "--action", "submit", "--success"],
            ]
            .concat(),
        );
        assert_eq!(run.code, Some(0), "{run}");
    }
    sandbox.expect(0, &["trajectory", "crystallize", "--partition", "team"]);
    let patterns = sandbox.expect(
        0,
        &["--json", "trajectory", "patterns", "--partition", "team"],
    );
    let patterns: serde_json::Value = serde_json::from_str(&patterns.stdout).expect("json");
    assert_eq!(
        patterns["patterns"][0]["canonical_sequence"],
        serde_json::json!(["click(a, b)", "submit"])
    );
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

/// `record --partition <partition> --field ... --success` with `extra` flags, in `sandbox`.
fn record_into(sandbox: &Sandbox, partition: &str, fields: &[&str], extra: &[&str]) -> crate::Run {
    let mut args = vec![
        "trajectory",
        "--now",
        NOW,
        "record",
        "--partition",
        partition,
    ];
    for field in fields {
        args.extend_from_slice(&["--field", field]);
    }
    args.extend_from_slice(&["--trajectory", "build,ship", "--success"]);
    args.extend_from_slice(extra);
    sandbox.run(&args, &[])
}

fn crystallized(sandbox: &Sandbox, partition: &str) -> serde_json::Value {
    let run = sandbox.run(
        &[
            "--json",
            "trajectory",
            "--now",
            NOW,
            "crystallize",
            "--partition",
            partition,
        ],
        &[],
    );
    assert_eq!(run.code, Some(0), "{run}");
    conforms("trajectory_crystallize.output", &run.stdout)["patterns"].clone()
}

#[test]
fn the_first_record_stores_threshold_cap_and_initial_confidence() {
    // popoto users set cluster_threshold, the evidence cap and the initial confidence; the
    // command line used to have no flag for them.
    let sandbox = Sandbox::new();
    let fields = ["problem_topology=bug", "affected_layer=api"];
    let settings = [
        "--threshold",
        "2",
        "--evidence-cap",
        "1",
        "--initial-confidence",
        "0.2",
    ];
    let first = record_into(&sandbox, "ops", &fields, &settings);
    assert_eq!(first.code, Some(0), "{first}");
    // The next record needs no flag; the flags that agree are accepted.
    assert_eq!(record_into(&sandbox, "ops", &fields, &[]).code, Some(0));
    let patterns = crystallized(&sandbox, "ops");
    assert_eq!(
        patterns.as_array().map(Vec::len),
        Some(1),
        "a threshold of 2: {patterns}"
    );
    // From 0.2 with a cap of 1: 0.2 + (0.9 - 0.2) / 2, then + (0.9 - c) / 2 again.
    let c1: f64 = 0.2 + (0.9 - 0.2) / 2.0;
    let c2 = c1 + (0.9 - c1) / 2.0;
    assert_eq!(patterns[0]["confidence"].as_f64(), Some(c2), "{patterns}");
    let agreeing = record_into(&sandbox, "ops", &fields, &["--threshold", "2"]);
    assert_eq!(agreeing.code, Some(0), "{agreeing}");
    let before = stored_episodes(&sandbox);
    for (flag, value) in [
        ("--threshold", "3"),
        ("--evidence-cap", "20"),
        ("--initial-confidence", "0.5"),
    ] {
        let refused = record_into(&sandbox, "ops", &fields, &[flag, value]);
        assert_eq!(refused.code, Some(1), "{refused}");
        assert!(
            refused
                .stderr
                .contains("a partition keeps the configuration of its first record"),
            "{refused}"
        );
    }
    assert_eq!(
        stored_episodes(&sandbox),
        before,
        "a refused record stores nothing"
    );
    let recall = sandbox.run(
        &[
            "trajectory",
            "recall",
            "--partition",
            "ops",
            "--threshold",
            "5",
            "--field",
            "affected_layer=api",
        ],
        &[],
    );
    insta::assert_snapshot!("threshold_differs", recall);
}

#[test]
fn a_partition_stored_with_fields_only_has_the_default_settings() {
    // Databases written before the settings were kept hold only the fields of a partition.
    let sandbox = Sandbox::new();
    let store = agent_memory_sqlite::SqliteStore::open(sandbox.path().join("agent-memory.db"))
        .expect("create");
    let key = agent_memory_core::MetaKey::new("trajectory.fields.old").expect("key");
    agent_memory_core::MetaStore::meta_set(&store, &key, "task").expect("fields");
    drop(store);
    let refused = record_into(&sandbox, "old", &["task=t"], &["--threshold", "2"]);
    assert_eq!(refused.code, Some(1), "{refused}");
    assert!(
        refused.stderr.contains("has cluster_threshold 3, not 2"),
        "{refused}"
    );
    for _ in 0..2 {
        assert_eq!(record_into(&sandbox, "old", &["task=t"], &[]).code, Some(0));
    }
    assert_eq!(
        crystallized(&sandbox, "old"),
        serde_json::json!([]),
        "threshold 3"
    );
    assert_eq!(
        record_into(&sandbox, "old", &["task=t"], &["--threshold", "3"]).code,
        Some(0)
    );
    assert_eq!(
        crystallized(&sandbox, "old").as_array().map(Vec::len),
        Some(1)
    );
}

#[test]
fn racing_first_records_with_other_fields_store_one_configuration() {
    // Eight commands make the first record of a new partition at once, half with other
    // --fields, twenty rounds over. The old command stored its episodes, then its fields:
    // a loser failed after its episodes were in.
    let sandbox = Sandbox::new();
    let binary = env!("CARGO_BIN_EXE_agent-memory");
    let setup = record_into(
        &sandbox,
        "setup",
        &["problem_topology=a", "affected_layer=b"],
        &[],
    );
    assert_eq!(
        setup.code,
        Some(0),
        "create the database before the race: {setup}"
    );
    let choices = [
        ("task,env", ["task=deploy", "env=prod"]),
        ("env,layer", ["env=prod", "layer=api"]),
    ];
    for round in 0..20 {
        let partition = format!("round{round}");
        let children: Vec<_> = (0..8)
            .map(|i| {
                let (fields, values) = choices[(i + round) % 2];
                std::process::Command::new(binary)
                    .args(["--json", "trajectory", "record", "--partition", &partition])
                    .args([
                        "--fields", fields, "--field", values[0], "--field", values[1],
                    ])
                    .args(["--trajectory", "a,b", "--success"])
                    .env_remove("AGENT_MEMORY_DB")
                    .current_dir(sandbox.path())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        let mut stored_fields = Vec::new();
        for (i, child) in children.into_iter().enumerate() {
            let output = child.wait_with_output().expect("wait");
            let (fields, _) = choices[(i + round) % 2];
            let stderr = String::from_utf8_lossy(&output.stderr);
            match output.status.code() {
                Some(0) => stored_fields.push(fields),
                Some(1) => assert!(
                    stderr.contains("nothing was recorded")
                        || stderr
                            .contains("a partition keeps the configuration of its first record"),
                    "round {round}: {stderr}"
                ),
                other => panic!("round {round}: exit {other:?}: {stderr}"),
            }
        }
        assert_eq!(
            stored_fields.len(),
            4,
            "round {round}: one configuration wins"
        );
        assert!(
            stored_fields.windows(2).all(|w| w[0] == w[1]),
            "round {round}: both configurations stored episodes: {stored_fields:?}"
        );
        let patterns = sandbox.run(
            &[
                "--json",
                "trajectory",
                "--now",
                NOW,
                "crystallize",
                "--partition",
                &partition,
            ],
            &[],
        );
        let patterns =
            conforms("trajectory_crystallize.output", &patterns.stdout)["patterns"].clone();
        assert_eq!(
            patterns.as_array().map(Vec::len),
            Some(1),
            "round {round}: {patterns}"
        );
        assert_eq!(
            patterns[0]["evidence_count"], 4,
            "round {round}: {patterns}"
        );
    }
}

#[test]
fn named_weights_replace_the_default_set() {
    // `--weights confidence=1` used to keep the default recency weight 0.4.
    let sandbox = Sandbox::new();
    record_flaky_fixes(&sandbox);
    let crystallize = sandbox.run(
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
    assert_eq!(crystallize.code, Some(0), "{crystallize}");
    let recall = |weights: &str| {
        let run = sandbox.run(
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
                "--weights",
                weights,
            ],
            &[],
        );
        assert_eq!(run.code, Some(0), "{run}");
        conforms("trajectory_recall.output", &run.stdout)["patterns"].clone()
    };
    let confidence_only = recall("confidence=1");
    assert_eq!(
        confidence_only[0]["score"],
        confidence_only[0]["confidence"]
    );
    assert_eq!(recall("confidence=0,recency=0"), serde_json::json!([]));
    assert_eq!(
        recall("last_reinforced=0.5").as_array().map(Vec::len),
        Some(1)
    );
}

#[test]
fn fingerprints_hash_big_integers_as_python_prints_them() {
    // 10**20 used to be read as a float and hashed as `1e+20`.
    let sandbox = Sandbox::new();
    for (features, expected) in [
        (r#"{"n": 100000000000000000000}"#, "05a9e961d6bf1ead\n"),
        (r#"{"n": 18446744073709551616}"#, "d4a19f6278aac7e5\n"),
    ] {
        let run = sandbox.expect(0, &["trajectory", "fingerprint", features]);
        assert_eq!(run.stdout, expected, "{features}");
    }
    insta::assert_snapshot!(
        "infinite_feature",
        sandbox.run(&["trajectory", "fingerprint", r#"{"n": 1e400}"#], &[])
    );
}

#[test]
fn forgetting_a_partition_forgets_its_configuration() {
    // Every setting is stored with the partition, so `forget` must remove them all: a new
    // first record into the same name chooses again.
    let sandbox = Sandbox::new();
    let fields = ["problem_topology=bug", "affected_layer=api"];
    let first = record_into(&sandbox, "ops", &fields, &["--threshold", "2"]);
    assert_eq!(first.code, Some(0), "{first}");
    sandbox.expect(0, &["forget", "--partition", "ops"]);
    let again = record_into(
        &sandbox,
        "ops",
        &["task=deploy"],
        &["--fields", "task", "--threshold", "4"],
    );
    assert_eq!(again.code, Some(0), "{again}");
    let refused = record_into(&sandbox, "ops", &["task=deploy"], &["--threshold", "2"]);
    assert!(
        refused.stderr.contains("has cluster_threshold 4, not 2"),
        "{refused}"
    );
}

#[test]
fn crystallize_names_the_groups_still_below_the_threshold() {
    let sandbox = Sandbox::new();
    for task in ["deploy", "deploy", "test", "deploy", "migrate"] {
        let field = format!("task={task}");
        sandbox.expect(
            0,
            &[
                "trajectory",
                "--now",
                NOW,
                "record",
                "--partition",
                "team",
                "--fields",
                "task",
                "--threshold",
                "3",
                "--field",
                &field,
                "--trajectory",
                "a,b",
                "--success",
            ],
        );
    }
    sandbox.expect(
        0,
        &[
            "trajectory",
            "--now",
            NOW,
            "record",
            "--partition",
            "team",
            "--field",
            "task=test",
            "--trajectory",
            "a",
            "--failure",
        ],
    );
    let text = sandbox.expect(
        0,
        &[
            "trajectory",
            "--now",
            NOW,
            "crystallize",
            "--partition",
            "team",
        ],
    );
    insta::assert_snapshot!(text);
    // Nothing new: no pattern changes, the pending groups are still named.
    let json = sandbox.expect(
        0,
        &[
            "--json",
            "trajectory",
            "--now",
            NOW,
            "crystallize",
            "--partition",
            "team",
        ],
    );
    let value = conforms("trajectory_crystallize.output", &json.stdout);
    assert_eq!(value["patterns"], serde_json::json!([]), "{json}");
    assert_eq!(value["threshold"], 3, "{json}");
    assert_eq!(
        value["pending_groups"],
        serde_json::json!([
            {"fingerprint": {"task": "migrate"}, "episodes": 1},
            {"fingerprint": {"task": "test"}, "episodes": 2},
        ]),
        "{json}"
    );
}

/// Each writer's run of records into a partition is one `write` entry of the audit trail,
/// with the command line as its client: three records by one session are one entry, a
/// record by another source opens another.
#[test]
fn each_writers_run_of_records_is_one_audit_entry() {
    let sandbox = Sandbox::new();
    let by = |source: &str, session: &str| {
        let args = [
            "--field",
            "problem_topology=flaky_test",
            "--field",
            "affected_layer=ci",
            "--trajectory",
            "a,b",
            "--success",
            "--source",
            source,
            "--session",
            session,
        ];
        let run = record(&sandbox, &args);
        assert_eq!(run.code, Some(0), "{run}");
    };
    for _ in 0..3 {
        by("model:claude", "run-1");
    }
    by("page:https://evil.test/", "run-1");
    by("model:claude", "run-1");
    let run = sandbox.expect(0, &["audit", "--memory", "trajectory", "--action", "write"]);
    let trail: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let writers: Vec<(&str, &str, &str, &str)> = trail["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            fn field(v: &serde_json::Value) -> &str {
                v.as_str().unwrap_or_default()
            }
            let by = &e["by"];
            (
                field(&e["item"]),
                field(&by["source"]),
                field(&by["session"]),
                field(&by["client"]),
            )
        })
        .collect();
    assert_eq!(
        writers,
        [
            ("team", "model:claude", "run-1", "cli"),
            ("team", "page:https://evil.test/", "run-1", "cli"),
            ("team", "model:claude", "run-1", "cli"),
        ],
        "{run}"
    );
    assert_eq!(trail["entries"][0]["detail"], "episodes", "{run}");
}
