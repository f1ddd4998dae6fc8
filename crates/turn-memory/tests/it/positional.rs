//! Positional replay, Keen Code's native history (0.30 and later): every call of a turn at
//! its offset in the text, calls at one offset in one step, invalid offsets skipped, ids
//! `historical_<message>_<i>` and `{"status":…}` results.

use agent_memory_turns::{
    ActivityStatus, AssistantTurn, Compaction, ContextPolicy, FailedCommand, History,
    INTERRUPTED_MARKER, MemoryStyle, ModelItem, SessionEvent, ToolActivity, TurnMemory,
};
use serde_json::json;

use crate::fixture::STARTED_AT;

fn history(events: Vec<SessionEvent>) -> History {
    let mut all = vec![SessionEvent::SessionStarted {
        session: "p".to_owned(),
        started_at: STARTED_AT,
    }];
    all.extend(events);
    History::replay(all).unwrap_or_else(|e| panic!("replay: {e}"))
}

fn user(text: &str) -> SessionEvent {
    SessionEvent::UserMessage {
        text: text.to_owned(),
    }
}

fn assistant(text: &str, activity: Vec<ToolActivity>) -> SessionEvent {
    SessionEvent::AssistantTurn(AssistantTurn::new(text).with_activity(activity))
}

fn at(offset: usize, tool: &str) -> ToolActivity {
    ToolActivity::new(offset, tool)
}

/// The view as one line per item.
fn shape(history: &History, policy: &ContextPolicy) -> Vec<String> {
    history
        .model_view(policy)
        .items
        .iter()
        .map(|item| match item {
            ModelItem::User(text) => format!("user: {text}"),
            ModelItem::Assistant(text) => format!("assistant: {text}"),
            ModelItem::ToolCall { id, name, input } => format!("call {id} {name} {input}"),
            ModelItem::ToolResult {
                id,
                output,
                is_error,
                ..
            } => format!(
                "result {id} {output}{}",
                if *is_error { " (error)" } else { "" }
            ),
        })
        .collect()
}

#[track_caller]
fn check(events: Vec<SessionEvent>, expected: &[&str]) {
    let h = history(events);
    let policy = ContextPolicy::default().with_memory_style(MemoryStyle::Positional);
    assert_eq!(shape(&h, &policy), expected);
}

#[test]
fn calls_at_one_offset_share_a_step_in_order() {
    check(
        vec![
            user("look"),
            assistant(
                "Let me inspect. Found it.",
                vec![
                    at(15, "read_file").with_input(json!({"path": "a.go"})),
                    at(15, "grep")
                        .with_input(json!({"path": "internal", "pattern": "TODO"}))
                        .with_status(ActivityStatus::Error),
                ],
            ),
        ],
        &[
            "user: look",
            "assistant: Let me inspect.",
            r#"call historical_2_0 read_file {"path":"a.go"}"#,
            r#"call historical_2_1 grep {"path":"internal","pattern":"TODO"}"#,
            r#"result historical_2_0 {"status":"success"}"#,
            r#"result historical_2_1 {"status":"error"} (error)"#,
            "assistant:  Found it.",
        ],
    );
}

#[test]
fn offsets_at_the_edges_and_invalid_ones() {
    check(
        vec![
            user("go"),
            assistant(
                "done",
                vec![
                    at(0, "read_file"),
                    at(4, "bash")
                        .with_input(json!({"command": "go test ./..."}))
                        .with_exit_code(Some(1)),
                    at(5, "past_the_end"),
                    at(2, "before_the_cursor"),
                    at(4, ""),
                ],
            ),
        ],
        &[
            "user: go",
            "call historical_2_0 read_file {}",
            r#"result historical_2_0 {"status":"success"}"#,
            "assistant: done",
            r#"call historical_2_1 bash {"command":"go test ./..."}"#,
            r#"result historical_2_1 {"status":"success","exit_code":1}"#,
        ],
    );
}

#[test]
fn an_offset_inside_a_character_is_skipped_without_using_an_id() {
    check(
        vec![
            user("é?"),
            assistant("éa", vec![at(1, "inside"), at(2, "read_file")]),
        ],
        &[
            "user: é?",
            "assistant: é",
            "call historical_2_0 read_file {}",
            r#"result historical_2_0 {"status":"success"}"#,
            "assistant: a",
        ],
    );
}

#[test]
fn message_numbers_count_what_keen_sends() {
    // A summary, then a turn that said and did nothing (Keen keeps no message for it).
    let compaction = SessionEvent::CompactionApplied(Compaction {
        summary: "earlier work".to_owned(),
        compacted_entries: 2,
        memory: Some(TurnMemory {
            failed_commands: vec![FailedCommand {
                command: "make".to_owned(),
                exit_code: 2,
            }],
            ..TurnMemory::default()
        }),
        last_user_message: None,
    });
    check(
        vec![
            user("a"),
            assistant("b", vec![]),
            compaction,
            user("c"),
            assistant("", vec![]),
            user("d"),
            assistant("", vec![at(0, "glob")]),
        ],
        &[
            "user: Summary of the earlier conversation:\n\nearlier work\n\nTool memory:\n- Failed bash: make (exit 2)",
            "user: c",
            "user: d",
            "call historical_4_0 glob {}",
            r#"result historical_4_0 {"status":"success"}"#,
        ],
    );
}

#[test]
fn the_interrupted_marker_follows_the_last_piece_of_text() {
    let interrupted = SessionEvent::AssistantTurn(
        AssistantTurn::new("Renaming")
            .with_activity(vec![at(8, "edit_file")])
            .with_interrupted(true),
    );
    let h = history(vec![user("rename"), interrupted.clone()]);
    assert_eq!(
        shape(&h, &ContextPolicy::keen()),
        [
            "user: rename",
            "assistant: Renaming",
            "call historical_2_0 edit_file {}",
            r#"result historical_2_0 {"status":"success"}"#,
            "assistant: \n\n[Response interrupted by user]",
        ]
    );
    // Text style: after the text, before the memory block; a custom marker.
    let h = history(vec![
        user("rename"),
        SessionEvent::AssistantTurn(
            AssistantTurn::new("Renaming")
                .with_memory(Some(TurnMemory {
                    files_changed: vec!["a.rs".to_owned()],
                    ..TurnMemory::default()
                }))
                .with_interrupted(true),
        ),
    ]);
    let marked = ContextPolicy::default().with_interrupted_marker(Some(INTERRUPTED_MARKER.into()));
    assert_eq!(
        shape(&h, &marked),
        [
            "user: rename",
            "assistant: Renaming\n\n[Response interrupted by user]\n\nTool memory:\n- Files changed: a.rs"
        ]
    );
    let custom = ContextPolicy::default().with_interrupted_marker(Some(" (stopped)".into()));
    assert_eq!(
        shape(&h, &custom)[1],
        "assistant: Renaming (stopped)\n\nTool memory:\n- Files changed: a.rs"
    );
    // Off by default, as Keen 0.2.3 sent it.
    assert_eq!(
        shape(&h, &ContextPolicy::default())[1],
        "assistant: Renaming\n\nTool memory:\n- Files changed: a.rs"
    );
}

#[test]
fn older_turns_and_turns_without_activity() {
    let memory = TurnMemory {
        files_changed: vec!["old.rs".to_owned()],
        ..TurnMemory::default()
    };
    let h = history(vec![
        user("one"),
        assistant("first", vec![at(0, "read_file")]),
        user("two"),
        SessionEvent::AssistantTurn(AssistantTurn::new("second").with_memory(Some(memory))),
        user("three"),
        assistant("third", vec![at(5, "bash")]),
    ]);
    let policy = ContextPolicy::keen().with_recent_memories(2);
    assert_eq!(
        shape(&h, &policy),
        [
            "user: one",
            "assistant: first",
            "user: two",
            "assistant: second\n\nTool memory:\n- Files changed: old.rs",
            "user: three",
            "assistant: third",
            "call historical_6_0 bash {}",
            r#"result historical_6_0 {"status":"success"}"#,
        ]
    );
}

#[test]
fn the_system_prompt_comes_from_the_policy() {
    let h = history(vec![user("hi")]);
    let view = h.model_view(&ContextPolicy::default().with_system_prompt("Be brief."));
    assert_eq!(view.system.as_deref(), Some("Be brief."));
    assert!(h.model_view(&ContextPolicy::default()).system.is_none());
    let by_chars = |t: &str| t.chars().count();
    assert_eq!(view.estimate(&by_chars), "Be brief.".len() + "hi".len());
}
