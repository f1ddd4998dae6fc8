//! Retained tool output: the session's tool-history setting (`full` / `none`, default `none`,
//! for later turns only), `retained_output` bounded in each activity, and the tool result's
//! `file_changed` and `failed_command` fields.

use agent_memory_core::{InMemoryStore, ManualClock, SessionId, SessionStore, Timestamp};
use agent_memory_turns::{
    AssistantTurn, CaptureConfig, CaptureRules, ContextPolicy, Entry, Session, SessionEvent,
    StoreLog, ToolActivity, ToolEnd, ToolHistory, render,
};
use serde_json::{Value, json};

use crate::fixture::ROOT;

fn rules() -> CaptureRules {
    CaptureRules::for_workspace(ROOT).unwrap_or_else(|e| panic!("{e}"))
}

fn end<'a>(tool: &'a str, input: &'a Value, output: &'a str, exit: Option<i32>) -> ToolEnd<'a> {
    ToolEnd {
        tool,
        input,
        output,
        is_error: false,
        exit_code: exit,
    }
}

/// The activities of the session's assistant turns, in order.
fn activities(session: &Session<StoreLog<&InMemoryStore>>) -> Vec<Vec<ToolActivity>> {
    session
        .history()
        .entries()
        .iter()
        .filter_map(|entry| match entry {
            Entry::Assistant { turn, .. } => Some(turn.tool_activity.clone()),
            _ => None,
        })
        .collect()
}

/// One turn of `read_file` returning `output`, captured under the history's setting.
fn read_turn(session: &mut Session<StoreLog<&InMemoryStore>>, rules: &CaptureRules, output: &str) {
    let input = json!({"path": "/work/app/src/lib.rs"});
    let mut turn = rules.start_turn_with(session.history().turn_tool_history());
    turn.text("Read it.");
    turn.observe(&end("read_file", &input, output, None));
    session
        .assistant_turn(turn.into_turn())
        .unwrap_or_else(|e| panic!("{e}"));
}

/// (what happens before the turn, the output its read returns, what it retains)
type Step<'a> = (
    &'a dyn Fn(&mut Session<StoreLog<&InMemoryStore>>),
    &'a str,
    Option<Value>,
);

/// (tool, input, exit code, is_error, file_changed, failed_command)
type ResultCase = (
    &'static str,
    Value,
    Option<i32>,
    bool,
    Option<&'static str>,
    Option<&'static str>,
);

#[test]
fn the_setting_applies_to_turns_that_start_after_it() {
    let store = InMemoryStore::new();
    let clock = ManualClock::new(Timestamp::from_millis(1_767_225_600_000));
    let id = SessionId::new("s1").unwrap_or_else(|e| panic!("{e}"));
    let mut session = Session::start(StoreLog::new(&store, id.clone()), id.clone(), &clock)
        .unwrap_or_else(|e| panic!("{e}"));
    let rules = rules();
    // (what happens before the turn, the output the turn's read returns, what it retains)
    let steps: [Step<'_>; 4] = [
        // Default `none`: nothing kept.
        (&|_| {}, "one", None),
        // Set before the user message: the turn runs under `full`.
        (
            &|s| {
                s.set_tool_history(ToolHistory::Full)
                    .unwrap_or_else(|e| panic!("{e}"))
            },
            "two",
            Some(json!("two")),
        ),
        // Back to `none`: the next turn keeps nothing, the earlier output stays.
        (
            &|s| {
                s.set_tool_history(ToolHistory::None)
                    .unwrap_or_else(|e| panic!("{e}"))
            },
            "three",
            None,
        ),
        (
            &|_| {},
            r#"{"content":"1:abc|fn main() {}","total_lines":1}"#,
            None,
        ),
    ];
    for (before, output, _) in &steps {
        before(&mut session);
        session
            .user_message("go on")
            .unwrap_or_else(|e| panic!("{e}"));
        read_turn(&mut session, &rules, output);
    }
    // Set `full` after the user message: the turn under way is not affected.
    session
        .user_message("and again")
        .unwrap_or_else(|e| panic!("{e}"));
    session
        .set_tool_history(ToolHistory::Full)
        .unwrap_or_else(|e| panic!("{e}"));
    let input = json!({"path": "/work/app/src/lib.rs"});
    let mut forced = rules.start_turn_with(ToolHistory::Full);
    forced.observe(&end("read_file", &input, "five", None));
    session
        .assistant_turn(forced.into_turn())
        .unwrap_or_else(|e| panic!("{e}"));

    let kept: Vec<Option<Value>> = activities(&session)
        .iter()
        .map(|a| a[0].retained_output.clone())
        .collect();
    let mut expected: Vec<Option<Value>> = steps.iter().map(|s| s.2.clone()).collect();
    expected.push(None);
    assert_eq!(kept, expected);
    assert_eq!(session.history().tool_history(), ToolHistory::Full);

    // The log holds the setting's event with Keen's values, and a resume rebuilds the same.
    let stored = store.session_load(&id).unwrap_or_else(|e| panic!("{e}"));
    assert!(stored.iter().any(
        |e| e.kind == "tool_history" && e.payload == r#"{"type":"tool_history","mode":"full"}"#
    ));
    let (resumed, _) = Session::resume(StoreLog::new(&store, id)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resumed.history(), session.history());
}

#[test]
fn a_replayed_call_gets_its_retained_output() {
    let store = InMemoryStore::new();
    let clock = ManualClock::new(Timestamp::from_millis(1_767_225_600_000));
    let id = SessionId::new("s2").unwrap_or_else(|e| panic!("{e}"));
    let mut session = Session::start(StoreLog::new(&store, id.clone()), id, &clock)
        .unwrap_or_else(|e| panic!("{e}"));
    session
        .set_tool_history(ToolHistory::Full)
        .unwrap_or_else(|e| panic!("{e}"));
    session
        .user_message("read it")
        .unwrap_or_else(|e| panic!("{e}"));
    read_turn(&mut session, &rules(), "fn main() {}");
    let view = session.history().model_view(&ContextPolicy::keen());
    let messages =
        serde_json::to_value(render::openai_chat(&view)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["content"], "fn main() {}");
}

#[test]
fn retained_output_is_bounded_and_only_for_tools_whose_input_is_kept() {
    let mut config = CaptureConfig::new(ROOT);
    config.max_retained_output_bytes = 8;
    let rules = CaptureRules::new(config).unwrap_or_else(|e| panic!("{e}"));
    let input = json!({"path": "/work/app/a.txt"});
    // (tool, output, retained)
    let cases: [(&str, &str, Option<Value>); 5] = [
        ("read_file", "short", Some(json!("short"))),
        // Cut on a character boundary: 7 ASCII bytes and a 2-byte character.
        ("read_file", "abcdefgé-tail", Some(json!("abcdefg"))),
        // JSON that fits is kept as JSON; JSON that does not is cut as text.
        ("read_file", r#"{"a":1}"#, Some(json!({"a": 1}))),
        ("read_file", r#"{"a":12345}"#, Some(json!(r#"{"a":123"#))),
        // A tool whose input Keen does not keep keeps no output either.
        ("ask_user", "yes", None),
    ];
    for (tool, output, expected) in cases {
        let activity = rules.activity_with(&end(tool, &input, output, None), 0, ToolHistory::Full);
        assert_eq!(activity.retained_output, expected, "{tool} {output}");
        let without = rules.activity(&end(tool, &input, output, None), 0);
        assert_eq!(without.retained_output, None);
    }
    let mut config = CaptureConfig::new(ROOT);
    config.max_retained_output_bytes = 0;
    let error = CaptureRules::new(config).err().map(|e| e.to_string());
    assert!(error.is_some_and(|e| e.contains("max_retained_output_bytes")));
}

#[test]
fn file_changes_and_failed_commands_are_fields_of_the_tool_result() {
    let rules = rules();
    // (tool, input, exit code, is_error, file_changed, failed_command)
    let cases: [ResultCase; 6] = [
        (
            "write_file",
            json!({"path": "/work/app/src/a.rs"}),
            None,
            false,
            Some("src/a.rs"),
            None,
        ),
        (
            "edit_file",
            json!({"path": ["./b.rs", "c.rs"]}),
            None,
            false,
            Some("b.rs"),
            None,
        ),
        (
            "write_file",
            json!({"path": "/work/app/src/a.rs"}),
            None,
            true,
            None,
            None,
        ),
        (
            "bash",
            json!({"command": "cargo test"}),
            Some(101),
            false,
            None,
            Some("cargo test"),
        ),
        ("bash", json!({"command": "ls"}), Some(0), false, None, None),
        (
            "read_file",
            json!({"path": "/work/app/src/a.rs"}),
            None,
            false,
            None,
            None,
        ),
    ];
    for (tool, input, exit_code, is_error, file, command) in cases {
        let event = ToolEnd {
            tool,
            input: &input,
            output: "",
            is_error,
            exit_code,
        };
        let activity = rules.activity(&event, 0);
        assert_eq!(activity.file_changed.as_deref(), file, "{tool} {input}");
        assert_eq!(
            activity.failed_command.as_deref(),
            command,
            "{tool} {input}"
        );
    }
    // In the log they carry Keen's names.
    let activity = rules.activity(&end("bash", &json!({"command": "make"}), "", Some(2)), 3);
    let json = serde_json::to_value(&activity).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(json["failed_command"], "make");
    assert_eq!(json["exit_code"], 2);
    let turn = SessionEvent::AssistantTurn(AssistantTurn::new("x").with_activity(vec![activity]));
    let line = turn.to_json().unwrap_or_else(|e| panic!("{e}"));
    assert!(line.contains(r#""failed_command":"make""#), "{line}");
}

#[test]
fn tool_history_values_are_keens() {
    for (text, mode) in [("full", ToolHistory::Full), ("none", ToolHistory::None)] {
        assert_eq!(text.parse::<ToolHistory>(), Ok(mode));
        assert_eq!(mode.as_str(), text);
    }
    let error = "all".parse::<ToolHistory>().err().unwrap_or_default();
    assert!(error.contains("\"all\""), "{error}");
    assert_eq!(ToolHistory::default(), ToolHistory::None);
}

#[test]
fn retained_outputs_are_compressed_when_the_policy_says_so() {
    let store = InMemoryStore::new();
    let clock = ManualClock::new(Timestamp::from_millis(1_767_225_600_000));
    let id = SessionId::new("s3").unwrap_or_else(|e| panic!("{e}"));
    let mut session = Session::start(StoreLog::new(&store, id.clone()), id, &clock)
        .unwrap_or_else(|e| panic!("{e}"));
    session
        .set_tool_history(ToolHistory::Full)
        .unwrap_or_else(|e| panic!("{e}"));
    session
        .user_message("read it")
        .unwrap_or_else(|e| panic!("{e}"));
    read_turn(
        &mut session,
        &rules(),
        r#"{"content":"1:abc|fn main() {}","bytes_read":18,"lines_read":1,"total_lines":1}"#,
    );
    // (compress, the replayed result)
    for (compress, expected) in [
        (
            false,
            r#"{"bytes_read":18,"content":"1:abc|fn main() {}","lines_read":1,"total_lines":1}"#,
        ),
        (true, r#"{"content":"1:abc|fn main() {}","total_lines":1}"#),
    ] {
        let policy = ContextPolicy::keen().with_compressed_outputs(compress);
        let view = session.history().model_view(&policy);
        let messages =
            serde_json::to_value(render::openai_chat(&view)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(messages[2]["content"], expected, "compress {compress}");
    }
}
