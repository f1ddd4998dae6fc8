//! Tool activity: one record per call with its place in the text, its input bounded by Keen
//! Code's rules (4 KiB per field), its status and a shell command's exit code.

use agent_memory_turns::{
    ActivityStatus, CaptureConfig, CaptureRules, DEFAULT_MAX_INPUT_FIELD_BYTES, Error,
    ToolActivity, ToolEnd,
};
use serde_json::{Value, json};

use crate::fixture::ROOT;

fn rules() -> CaptureRules {
    CaptureRules::for_workspace(ROOT).unwrap_or_else(|e| panic!("{e}"))
}

/// The activity of one call of `tool` with `input`.
#[track_caller]
fn activity_of(rules: &CaptureRules, tool: &str, input: Value) -> ToolActivity {
    rules.activity(
        &ToolEnd {
            tool,
            input: &input,
            output: "OUTPUT-CANARY",
            is_error: false,
            exit_code: None,
        },
        0,
    )
}

#[track_caller]
fn check(tool: &str, input: Value, expected: Option<Value>) {
    let activity = activity_of(&rules(), tool, input);
    assert_eq!(activity.input, expected, "{tool}");
}

#[test]
fn inputs_are_kept_for_keens_tools_and_paths_made_relative() {
    check(
        "read_file",
        json!({"path": "/work/app/src/lib.rs", "offset": 2}),
        Some(json!({"path": "src/lib.rs", "offset": 2})),
    );
    // Relative paths and paths outside the root are kept as written, as Keen keeps them.
    check(
        "edit_file",
        json!({"path": "./src/../lib.rs", "old": "a", "new": "b"}),
        Some(json!({"path": "./src/../lib.rs", "old": "a", "new": "b"})),
    );
    check(
        "grep",
        json!({"path": "/etc", "pattern": "x"}),
        Some(json!({"path": "/etc", "pattern": "x"})),
    );
    check(
        "glob",
        json!({"path": "/work/app"}),
        Some(json!({"path": "."})),
    );
    // Only the path tools' `path` is touched.
    check(
        "bash",
        json!({"command": "ls /work/app/src", "path": "/work/app/x"}),
        Some(json!({"command": "ls /work/app/src", "path": "/work/app/x"})),
    );
    // Tools whose input Keen does not keep are replayed without input.
    check("ask_user", json!({"question": "which database?"}), None);
    check("read_file", json!({}), None);
    check("read_file", json!("not an object"), None);
}

#[test]
fn write_and_edit_strings_are_cut_on_a_utf8_boundary() {
    let limit = DEFAULT_MAX_INPUT_FIELD_BYTES;
    // 4095 ASCII bytes, then a 3-byte character straddling the limit.
    let content = format!("{}€tail", "a".repeat(limit - 1));
    let activity = activity_of(
        &rules(),
        "write_file",
        json!({"path": "/work/app/big.txt", "content": content}),
    );
    let input = activity.input.unwrap_or_else(|| panic!("an input"));
    let kept = input["content"].as_str().unwrap_or_default();
    assert_eq!(kept, "a".repeat(limit - 1), "cut before the character");
    assert_eq!(input["path"], "big.txt");

    let exact = "é".repeat(limit / 2);
    let activity = activity_of(&rules(), "edit_file", json!({"new": exact.clone()}));
    assert_eq!(
        activity.input,
        Some(json!({"new": exact})),
        "exactly the limit"
    );
    // A non-string field of a write tool is dropped when too big, as elsewhere.
    let lines: Vec<u32> = (0..2_000).collect();
    let activity = activity_of(&rules(), "edit_file", json!({"path": "a", "lines": lines}));
    assert_eq!(activity.input, Some(json!({"path": "a"})));
}

#[test]
fn oversized_fields_of_other_tools_are_dropped() {
    let limit = DEFAULT_MAX_INPUT_FIELD_BYTES;
    // The JSON text of the field counts: quotes included, `<` as six bytes like Go writes it.
    let fits = "x".repeat(limit - 2);
    check(
        "bash",
        json!({"command": fits.clone(), "timeout": 5}),
        Some(json!({"command": fits, "timeout": 5})),
    );
    check(
        "bash",
        json!({"command": "x".repeat(limit - 1), "timeout": 5}),
        Some(json!({"timeout": 5})),
    );
    let escaped = format!("{}<", "x".repeat(limit - 7));
    check("bash", json!({"command": escaped}), None);
    let escaped = format!("{}<", "x".repeat(limit - 8));
    check(
        "bash",
        json!({"command": escaped.clone()}),
        Some(json!({"command": escaped})),
    );
}

#[test]
fn status_and_exit_codes() {
    let rules = rules();
    let input = json!({"command": "cargo test"});
    let end = |tool, is_error, exit_code| ToolEnd {
        tool,
        input: &input,
        output: "",
        is_error,
        exit_code,
    };
    let failed = rules.activity(&end("bash", false, Some(101)), 7);
    assert_eq!(failed.text_offset, 7);
    assert_eq!(failed.status, ActivityStatus::Success);
    assert_eq!(failed.exit_code, Some(101));
    assert_eq!(failed.result(), r#"{"status":"success","exit_code":101}"#);
    assert_eq!(
        rules.activity(&end("bash", false, Some(0)), 0).exit_code,
        None
    );
    let broken = rules.activity(&end("write_file", true, None), 0);
    assert_eq!(broken.status, ActivityStatus::Error);
    assert_eq!(broken.result(), r#"{"status":"error"}"#);
    // Only shell tools report exit codes.
    assert_eq!(
        rules.activity(&end("grep", false, Some(1)), 0).exit_code,
        None
    );
}

#[test]
fn offsets_follow_the_streamed_text() {
    let rules = rules();
    let mut turn = rules.start_turn();
    let read = json!({"path": "src/lib.rs"});
    let test = json!({"command": "cargo test"});
    let end = |tool, input| ToolEnd {
        tool,
        input,
        output: "",
        is_error: false,
        exit_code: None,
    };
    turn.observe(&end("read_file", &read));
    turn.text("Let me look. ");
    turn.text("Héllo; ");
    turn.observe(&end("bash", &test));
    turn.observe(&end("bash", &test));
    turn.text("done.");
    let offsets: Vec<usize> = turn.activity().iter().map(|a| a.text_offset).collect();
    assert_eq!(offsets, [0, 21, 21], "byte offsets");
    let turn = turn.into_turn();
    assert_eq!(turn.text, "Let me look. Héllo; done.");
    assert_eq!(turn.tool_activity.len(), 3);
    assert!(
        turn.memory.is_none(),
        "reads and passing tests retain no memory"
    );
}

#[test]
fn activity_can_be_switched_off_and_bounded_otherwise() {
    let off = CaptureRules::new(CaptureConfig::new(ROOT).with_record_activity(false))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut turn = off.start_turn();
    let input = json!({"path": "a.rs"});
    turn.observe(&ToolEnd {
        tool: "write_file",
        input: &input,
        output: "",
        is_error: false,
        exit_code: None,
    });
    assert!(turn.activity().is_empty());
    assert!(
        turn.into_turn().memory.is_some(),
        "memory is still captured"
    );

    let mut config = CaptureConfig::new(ROOT);
    config.max_input_field_bytes = 8;
    config.activity_input_tools = vec!["apply_patch".to_owned()];
    config.activity_path_tools = vec!["apply_patch".to_owned()];
    let rules = CaptureRules::new(config).unwrap_or_else(|e| panic!("{e}"));
    let activity = activity_of(
        &rules,
        "apply_patch",
        json!({"path": "/work/app/a.rs", "patch": "a long patch"}),
    );
    assert_eq!(activity.input, Some(json!({"path": "a.rs"})));
    assert_eq!(
        activity_of(&rules, "read_file", json!({"path": "a"})).input,
        None
    );
}

#[test]
fn activity_configuration_problems_are_reported() {
    let mut config = CaptureConfig::new(ROOT);
    config.max_input_field_bytes = 0;
    config.activity_input_tools.push(String::new());
    config.activity_path_tools.push(String::new());
    let Err(Error::InvalidConfig { problems }) = CaptureRules::new(config) else {
        panic!("configuration accepted");
    };
    assert_eq!(
        problems,
        [
            "activity_input_tools holds an empty tool name",
            "activity_path_tools holds an empty tool name",
            "max_input_field_bytes must be at least 1",
        ]
    );
}
