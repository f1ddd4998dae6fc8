//! The reference trails parse and re-serialize to equivalent documents; bad files report
//! file, line and column.

use std::path::PathBuf;

use agent_memory_recording::{
    Action, Error, LegacyItem, ReplayOptions, Replayer, Seeds, StepAction, Trail,
};

fn reference_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/trailblaze-examples")
}

fn reference_trails() -> Vec<PathBuf> {
    let dir = reference_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {dir:?}: {e}"))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".trail.yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_reference_trail_round_trips() {
    let files = reference_trails();
    assert_eq!(files.len(), 4, "reference trails found: {files:?}");
    for file in files {
        let original = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
        let trail = Trail::read(&file).unwrap_or_else(|e| panic!("{e}"));
        let written = trail.to_yaml_string().unwrap_or_else(|e| panic!("{e}"));
        let before: serde_yaml::Value =
            serde_yaml::from_str(&original).unwrap_or_else(|e| panic!("{e}"));
        let after: serde_yaml::Value =
            serde_yaml::from_str(&written).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(before, after, "{file:?} re-serialized as:\n{written}");
        let again = Trail::from_yaml_str(&written, "again").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again, trail, "{file:?}");
    }
}

#[test]
fn forms_are_told_apart_and_unknown_tools_survive() {
    let legacy = Trail::read(reference_dir().join("v1-test-empty-state.ios-iphone.trail.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let Trail::Legacy(items) = &legacy else {
        panic!("legacy form expected")
    };
    let Some(LegacyItem::Prompts(prompts)) = items.get(1) else {
        panic!("prompts expected: {items:?}")
    };
    let tools = &prompts[0]
        .recording
        .as_ref()
        .map(|r| r.tools.clone())
        .unwrap_or_default();
    assert_eq!(tools[0].name, "contacts_ios_openApp");
    let unified = Trail::read(reference_dir().join("unified-text-input.trail.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(unified, Trail::Unified(_)));
}

#[test]
fn recording_states_round_trip_and_replay() {
    let text = "\
trail:
- step: absent
- step: deliberate no-op
  recording:
    android: []
- verify: replayed
  recording:
    android:
    - assertVisible:
        text: Done
";
    let trail = Trail::from_yaml_str(text, "states.trail.yaml").unwrap_or_else(|e| panic!("{e}"));
    let written = trail.to_yaml_string().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        Trail::from_yaml_str(&written, "again").ok(),
        Some(trail.clone())
    );
    let replay = Replayer::new(
        &trail,
        "android-tablet",
        &Seeds::new(),
        ReplayOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let actions: Vec<String> = replay
        .outline()
        .iter()
        .map(|step| match &step.action {
            StepAction::Agent => "agent".to_owned(),
            StepAction::Replay(calls) => format!("replay {calls}"),
        })
        .collect();
    assert_eq!(actions, ["agent", "replay 0", "replay 1"]);
    // The agent drives the first step; the no-op hands out nothing; the check replays.
    let dispatches: Vec<String> = run(&trail, "android-tablet");
    assert_eq!(dispatches, ["0 agent", "2 assertVisible"]);
}

/// Replays `trail` on `classifier` with nothing written: each dispatch as `step tool`.
fn run(trail: &Trail, classifier: &str) -> Vec<String> {
    let mut replay = Replayer::new(trail, classifier, &Seeds::new(), ReplayOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    while let Some(dispatch) = replay.next_dispatch().unwrap_or_else(|e| panic!("{e}")) {
        let what = match &dispatch.action {
            Action::Call(call) => call.tool.clone(),
            Action::Agent => "agent".to_owned(),
        };
        out.push(format!("{} {what}", dispatch.step));
        replay
            .complete(agent_memory_recording::MemoryWrites::new())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    out
}

#[test]
fn closest_classifier_wins() {
    let text = "\
trail:
- step: s
  recording:
    android:
    - a: {}
    android-phone:
    - phone: {}
";
    let trail = Trail::from_yaml_str(text, "c.yaml").unwrap_or_else(|e| panic!("{e}"));
    let tool_for = |classifier: &str| run(&trail, classifier)[0].clone();
    assert_eq!(tool_for("android-phone"), "0 phone");
    assert_eq!(tool_for("android-phone-pixel"), "0 phone");
    assert_eq!(tool_for("android-tablet"), "0 a");
    assert_eq!(tool_for("ios-iphone"), "0 agent");
}

/// Parses `text` and compares the error with `expected` (`file:line:column: message`
/// prefix).
fn check_error(text: &str, expected: &str) {
    match Trail::from_yaml_str(text, "bad.trail.yaml") {
        Err(error @ Error::Parse { .. }) => {
            let message = error.to_string();
            assert!(
                message.starts_with(expected),
                "{message:?} should start with {expected:?}"
            );
        }
        other => panic!("{text:?} should fail to parse, got {other:?}"),
    }
}

#[test]
fn parse_errors_name_file_line_and_column() {
    check_error("trail:\n  - step: [unclosed\n", "bad.trail.yaml:3:1: ");
    check_error(
        "- prompts:\n  - step: a\n    verify: b\n",
        "bad.trail.yaml:2:5: .[0].prompts[0]: a step has both `step:` and `verify:`",
    );
    check_error(
        "trail:\n- step: a\n  recording:\n    android:\n    - one: {}\n      two: {}\n",
        "bad.trail.yaml:5:7: trail[0].recording.android[0]: a tool is a map with one entry",
    );
    check_error(
        "config: {}\nsurprise: 1\n",
        "bad.trail.yaml:2:1: unknown top-level key `surprise`",
    );
    check_error("just text", "bad.trail.yaml:1:1: a trail is a list");
}

#[test]
fn config_memory_and_args_are_checked_as_trailblaze_reads_them() {
    let with = |config: &str| format!("config:\n{config}trail:\n- step: go\n");
    check_error(
        &with("  memory:\n    user: [a, b]\n"),
        "bad.trail.yaml:3:11: config.memory.user: invalid type: sequence, expected a string, number or boolean",
    );
    check_error(
        &with("  args:\n    user-id: string\n"),
        "bad.trail.yaml:3:5: config.args: arg name \"user-id\" is not an identifier",
    );
    check_error(
        &with("  args:\n    n: float\n"),
        "bad.trail.yaml:3:8: config.args.n: arg `n` has type \"float\"",
    );
    check_error(
        &with("  args:\n    n: {type: integer, required: true, default: 3}\n"),
        "bad.trail.yaml:3:8: config.args.n: arg `n` declares `required: true` and a `default:`",
    );
    check_error(
        &with("  args:\n    n: {type: integer, required: false}\n"),
        "bad.trail.yaml:3:8: config.args.n: arg `n` declares `required: false` without a `default:`",
    );
    check_error(
        &with("  args:\n    n: {default: null}\n"),
        "bad.trail.yaml:3:18: config.args.n.default: arg `n` declares `default: null`",
    );
    check_error(
        &with("  args:\n    n: {kind: string}\n"),
        "bad.trail.yaml:3:8: config.args.n: arg `n` has an unknown field `kind`",
    );
    let trail = Trail::from_yaml_str(
        &with("  memory:\n    tier: 5\n    on: true\n  args:\n    who: string\n    n: {type: integer, default: '7'}\n    code: {type: string, default: 007}\n"),
        "ok.trail.yaml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let config = trail.config().unwrap_or_else(|| panic!("a config"));
    assert_eq!(
        config.memory(),
        [
            ("tier".to_owned(), "5".to_owned()),
            ("on".to_owned(), "true".to_owned())
        ]
    );
    let bind = |given: serde_json::Value| {
        let given: std::collections::BTreeMap<String, serde_json::Value> =
            serde_json::from_value(given).unwrap_or_else(|e| panic!("{e}"));
        agent_memory_recording::Args::bind(config.args(), &given)
    };
    let args = bind(serde_json::json!({"who": 42})).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        args.get("who"),
        Some(&serde_json::json!("42")),
        "coerced to the declared string"
    );
    assert_eq!(
        args.get("n"),
        Some(&serde_json::json!(7)),
        "a default coerced to its integer"
    );
    assert_eq!(
        args.get("code"),
        Some(&serde_json::json!("007")),
        "a string default keeps its text"
    );
    for (given, message) in [
        (
            serde_json::json!({}),
            "trail args: missing required arg(s) who",
        ),
        (
            serde_json::json!({"who": "a", "x": 1}),
            "trail args: unknown arg(s) x; declared: code, n, who",
        ),
        (
            serde_json::json!({"who": null}),
            "trail args: arg `who` was given null",
        ),
        (
            serde_json::json!({"who": "a", "n": "seven"}),
            "trail args: arg `n` expects an integer, got \"seven\"",
        ),
        (
            serde_json::json!({"who": ["a"]}),
            "trail args: arg `who` expects a string, got an array",
        ),
        (
            serde_json::json!({"who": "{{args.n + 1}}"}),
            "trail args: arg `who` holds the token {{args.n + 1}}, which is not a dotted path",
        ),
    ] {
        let err = bind(given).expect_err(message);
        assert!(err.to_string().starts_with(message), "{err}");
    }
}

#[test]
fn documents_without_steps_are_refused_except_a_config_only_one() {
    for kept in ["config:\n  id: x\n", "config:\n  id: x\ntrail: []\n"] {
        let trail = Trail::from_yaml_str(kept, "kept.trail.yaml").unwrap_or_else(|e| panic!("{e}"));
        let written = trail.to_yaml_string().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(written, kept, "written back as it was");
    }
    let message = "a unified trail needs a non-empty `trail:`";
    check_error("{}\n", &format!("bad.trail.yaml:1:1: {message}"));
    check_error("trail: []\n", &format!("bad.trail.yaml:1:1: {message}"));
    check_error(
        "config: {}\ntrailhead:\n  step: start\ntrail: []\n",
        &format!("bad.trail.yaml:1:1: {message}"),
    );
    check_error(
        "trail:\n- step: a\n  recording:\n    android: {tap: {}}\n",
        "bad.trail.yaml:4:14: trail[0].recording.android: invalid type: map, expected recording `android:` as a list of tool calls",
    );
    check_error(
        "- config: {}\n- prompts:\n  - step: a\n    recording: {}\n",
        "bad.trail.yaml:4:16: .[1].prompts[0].recording: missing field `tools`",
    );
    check_error(
        "- trailhead:\n    tools: []\n",
        "bad.trail.yaml:2:5: .[0].trailhead: a trailhead needs a `step:`, at least one tool, or both",
    );
}

#[test]
fn a_byte_order_mark_before_a_trail_is_skipped() {
    let text = "\u{feff}trail:\n- step: a\n";
    let trail = Trail::from_yaml_str(text, "bom.trail.yaml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        trail.to_yaml_string().unwrap_or_else(|e| panic!("{e}")),
        "trail:\n- step: a\n"
    );
}

#[test]
fn a_trailhead_keeps_the_form_its_author_wrote() {
    let check = |text: &str, expected: &str| {
        let trail = Trail::from_yaml_str(text, "t.trail.yaml").expect("a trail");
        assert_eq!(trail.to_yaml_string().expect("canonical form"), expected);
    };
    // The shorthand stays a bare tool name, and the long form stays long: they mean the same.
    check(
        "- trailhead: launchApp\n- prompts:\n  - step: hi\n",
        "- trailhead: launchApp\n- prompts:\n  - step: hi\n",
    );
    check(
        "- trailhead:\n    tools:\n    - launchApp: {}\n- prompts:\n  - step: hi\n",
        "- trailhead:\n    tools:\n    - launchApp: {}\n- prompts:\n  - step: hi\n",
    );
    // Both read as the same trail.
    let short = Trail::from_yaml_str("- trailhead: launchApp\n", "a").expect("short");
    let long =
        Trail::from_yaml_str("- trailhead:\n    tools:\n    - launchApp: {}\n", "b").expect("long");
    assert_eq!(short, long);
}
