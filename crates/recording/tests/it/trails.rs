//! The reference trails parse and re-serialize to equivalent documents; bad files report
//! file, line and column.

use std::path::PathBuf;

use agent_memory_recording::{Error, LegacyItem, StepAction, Trail, plan_replay};

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
    let memory = std::collections::BTreeMap::<String, String>::new();
    let plan = plan_replay(&trail, "android-tablet", &memory).unwrap_or_else(|e| panic!("{e}"));
    let actions: Vec<String> = plan
        .iter()
        .map(|step| match &step.action {
            StepAction::Agent => "agent".to_owned(),
            StepAction::Replay(calls) => format!("replay {}", calls.len()),
        })
        .collect();
    assert_eq!(actions, ["agent", "replay 0", "replay 1"]);
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
    let memory = std::collections::BTreeMap::<String, String>::new();
    let tool_for = |classifier: &str| {
        let plan = plan_replay(&trail, classifier, &memory).unwrap_or_else(|e| panic!("{e}"));
        match &plan[0].action {
            StepAction::Replay(calls) => calls[0].tool.clone(),
            StepAction::Agent => "agent".to_owned(),
        }
    };
    assert_eq!(tool_for("android-phone"), "phone");
    assert_eq!(tool_for("android-phone-pixel"), "phone");
    assert_eq!(tool_for("android-tablet"), "a");
    assert_eq!(tool_for("ios-iphone"), "agent");
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
        "bad.trail.yaml:2:3: .[0].prompts: a step has `step:` or `verify:`, not both",
    );
    check_error(
        "trail:\n- step: a\n  recording:\n    android:\n    - one: {}\n      two: {}\n",
        "bad.trail.yaml:5:7: trail[0].recording.android[0]: a tool is a map with one entry",
    );
    check_error(
        "config: {}\nsurprise: 1\n",
        "bad.trail.yaml:2:1: unknown field `surprise`",
    );
    check_error("just text", "bad.trail.yaml:1:1: a trail is a list");
}
