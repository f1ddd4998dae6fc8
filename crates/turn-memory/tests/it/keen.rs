//! Keen Code's session logs (`tests/data/keen/`, both formats) imported as our events, and
//! an imported session replayed at the positions Keen sends its calls.

use std::path::{Path, PathBuf};

use agent_memory_turns::{
    ContextPolicy, Entry, Error, FailedCommand, History, Loaded, SessionEvent, TurnMemory, Warning,
    keen, render,
};
use serde_json::json;

const CURRENT: &str = "keen-current.transcript_events.jsonl";
const OLD: &str = "keen-0.2.3.transcript_events.jsonl";
const SYSTEM: &str = "You are Keen, a coding agent.";

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/keen")
        .join(name)
}

fn import(name: &str) -> Loaded {
    keen::read(data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn jsonl(events: &[SessionEvent]) -> String {
    events
        .iter()
        .map(|e| e.to_json().unwrap_or_else(|e| panic!("{e}")) + "\n")
        .collect()
}

fn replay(events: Vec<SessionEvent>) -> History {
    History::replay(events).unwrap_or_else(|e| panic!("replay: {e}"))
}

fn memory(files: &[&str], failed: &[(&str, i32)]) -> Option<TurnMemory> {
    Some(TurnMemory {
        files_changed: files.iter().map(|f| (*f).to_owned()).collect(),
        failed_commands: failed
            .iter()
            .map(|(command, exit_code)| FailedCommand {
                command: (*command).to_owned(),
                exit_code: *exit_code,
            })
            .collect(),
        ..TurnMemory::default()
    })
}

#[test]
fn the_current_format_imports_with_its_activity() {
    let loaded = import(CURRENT);
    assert_eq!(
        loaded.warnings,
        [Warning::SkippedLine {
            path: data(CURRENT),
            line: 6,
            reason: "key must be a string at line 1 column 2".to_owned(),
        }]
    );
    insta::assert_snapshot!("keen_current_events", jsonl(&loaded.events));
    let history = replay(loaded.events);
    assert_eq!(history.session().as_str(), "sess-7f3a9c");
    assert_eq!(history.started_at().as_millis(), 1_785_402_902_123);
    // The turn that only failed is left out, as Keen's conversation leaves it out.
    assert_eq!(history.turns(), 3);
    let Some(Entry::Compaction { compaction, .. }) = history.entries().first() else {
        panic!("the compaction comes first: {:?}", history.entries());
    };
    assert_eq!(compaction.compacted_entries, 4);
    assert_eq!(
        compaction.memory,
        memory(
            &["internal/cart.go", "CHANGELOG.md"],
            &[("go test ./...", 1)]
        ),
        "the compacted turns' memories, derived from their activity, survive"
    );
}

/// The log up to its compaction: the turns whose calls Keen replays.
fn before_compaction() -> History {
    let text = std::fs::read_to_string(data(CURRENT)).unwrap_or_else(|e| panic!("{e}"));
    let head: String = text.lines().take(5).map(|l| format!("{l}\n")).collect();
    let loaded = keen::convert(head.as_bytes(), &data(CURRENT)).unwrap_or_else(|e| panic!("{e}"));
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    replay(loaded.events)
}

#[test]
fn an_imported_session_replays_the_calls_where_keen_sends_them() {
    let history = before_compaction();
    let view = history.model_view(&ContextPolicy::keen().with_system_prompt(SYSTEM));
    let messages =
        serde_json::to_value(render::openai_chat(&view)).unwrap_or_else(|e| panic!("{e}"));
    let call = |id: &str, name: &str, arguments: serde_json::Value| json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}});
    let result =
        |id: &str, content: &str| json!({"role": "tool", "tool_call_id": id, "content": content});
    let ok = r#"{"status":"success"}"#;
    // Keen's toOpenAIMessages, worked by hand: the system prompt is message 0, the first
    // user message 1, the first turn 2 (ids historical_2_*) and the second turn 4; the
    // activity past the end of the text and the one without a tool name are skipped.
    let expected = json!([
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "The checkout test fails. Fix it."},
        {"role": "assistant", "content": "Let me look at the test first.", "tool_calls": [
            call("historical_2_0", "read_file", json!({"path": "checkout_test.go"})),
            call("historical_2_1", "grep", json!({"path": "internal", "pattern": "func Total"})),
        ]},
        result("historical_2_0", ok),
        result("historical_2_1", ok),
        {"role": "assistant", "content": " The expected total is 41, not 42. Running the suite:", "tool_calls": [
            call("historical_2_2", "bash", json!({"command": "go test ./..."})),
        ]},
        result("historical_2_2", r#"{"status":"success","exit_code":1}"#),
        {"role": "assistant", "content": " one failure in `TestTotal`. Fixing the rounding in `Total`.", "tool_calls": [
            call("historical_2_3", "edit_file", json!({"new_string": "math.Round(sum)", "old_string": "math.Ceil(sum)", "path": "internal/cart.go"})),
            call("historical_2_4", "bash", json!({"command": "go test ./..."})),
        ]},
        result("historical_2_3", ok),
        result("historical_2_4", ok),
        {"role": "assistant", "content": " All tests pass now."},
        {"role": "user", "content": "Add a changelog entry."},
        {"role": "assistant", "content": "Adding the entry to CHANGELOG.md", "tool_calls": [
            call("historical_4_0", "write_file", json!({"content": "## Unreleased\n\n- Fix rounding in `Total`.\n", "path": "CHANGELOG.md"})),
        ]},
        result("historical_4_0", ok),
        {"role": "assistant", "content": "\n\n[Response interrupted by user]"},
    ]);
    assert_eq!(messages, expected);
}

#[test]
fn the_whole_imported_session_as_each_provider_is_sent_it() {
    let history = replay(import(CURRENT).events);
    let view = history.model_view(&ContextPolicy::keen().with_system_prompt(SYSTEM));
    insta::assert_snapshot!(
        "keen_current_anthropic",
        render::to_pretty_json(&render::anthropic(&view))
    );
    insta::assert_snapshot!(
        "keen_current_gemini",
        render::to_pretty_json(&render::gemini(&view))
    );
}

#[test]
fn the_0_2_3_format_imports_with_its_memories() {
    let loaded = import(OLD);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    insta::assert_snapshot!("keen_0_2_3_events", jsonl(&loaded.events));
    let history = replay(loaded.events);
    assert_eq!(history.session().as_str(), "sess-2b81d0");
    // 17:40:11.5 at +01:00.
    assert_eq!(history.started_at().as_millis(), 1_772_469_611_500);
    let Some(Entry::Compaction { compaction, .. }) = history.entries().first() else {
        panic!("the compaction comes first: {:?}", history.entries());
    };
    assert_eq!(
        compaction.memory,
        memory(&["cmd/import.go", "cmd/flags.go"], &[("go vet ./...", 1)])
    );
    // Without activity, the positional style shows the memory as the text block.
    let view = history.model_view(&ContextPolicy::keen());
    let texts: Vec<String> = serde_json::to_value(render::openai_chat(&view))
        .unwrap_or_else(|e| panic!("{e}"))
        .as_array()
        .map(|m| m.iter().map(|m| m["content"].to_string()).collect())
        .unwrap_or_default();
    assert_eq!(
        texts,
        [
            r#""Summary of the earlier conversation:\n\nThe importer has a --dry-run flag; a vet warning was being fixed.\n\nTool memory:\n- Files changed: cmd/import.go, cmd/flags.go\n- Failed bash: go vet ./... (exit 1)""#,
            r#""Run vet again.""#,
            r#""`go vet` is clean now.\n\nTool memory:\n- Failed bash: go vet ./cmd/... (exit 2)""#,
        ]
    );
}

#[test]
fn a_log_without_session_started_is_named_by_its_folder() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let folder = dir.path().join("sess-folder");
    std::fs::create_dir(&folder).unwrap_or_else(|e| panic!("{e}"));
    let path = folder.join("transcript_events.jsonl");
    std::fs::write(
        &path,
        "{\"seq\":1,\"kind\":\"user_message\",\"user_message\":{\"content\":\"hi\"}}\n\n  \n{\"seq\":2,\"kind\":\"future_kind\"}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let loaded = keen::read(&path).unwrap_or_else(|e| panic!("{e}"));
    let history = replay(loaded.events);
    assert_eq!(history.session().as_str(), "sess-folder");
    assert_eq!(history.entries().len(), 1);
    assert!(history.started_at().as_millis() > 0, "the file's time");
}

#[test]
fn bad_logs_are_reported_with_their_path() {
    let missing = keen::read(data("missing.jsonl")).map(|_| ());
    assert!(
        matches!(&missing, Err(Error::Store(e)) if e.is_not_found()),
        "{missing:?}"
    );
    let bad_id = br#"{"seq":1,"kind":"session_started","session_started":{"session_id":"","created_at":"2026-07-30T09:15:02Z"}}"#;
    let message = keen::convert(bad_id, Path::new("/logs/t.jsonl"))
        .map(|_| ())
        .map_err(|e| e.to_string());
    assert_eq!(
        message,
        Err(
            "cannot import session log /logs/t.jsonl: invalid session id \"\": must not be empty"
                .to_owned()
        )
    );
    let bad_time = br#"{"seq":1,"kind":"session_started","session_started":{"session_id":"s","created_at":"yesterday"}}
{"seq":2,"kind":"user_message","user_message":{"content":"hi"}}"#;
    let loaded =
        keen::convert(bad_time, Path::new("/logs/x/t.jsonl")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        loaded.warnings,
        [Warning::SkippedLine {
            path: PathBuf::from("/logs/x/t.jsonl"),
            line: 1,
            reason: "created_at \"yesterday\" is not an RFC 3339 time".to_owned(),
        }]
    );
    assert_eq!(
        replay(loaded.events).session().as_str(),
        "x",
        "without a readable start, the folder names the session"
    );
}

#[test]
fn keens_current_log_with_retained_output_and_an_automatic_compaction() {
    let loaded = import("keen-auto-compaction.transcript_events.jsonl");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let kinds: Vec<&str> = loaded.events.iter().map(SessionEvent::kind).collect();
    assert_eq!(
        kinds,
        [
            "session_started",
            "user_message",
            "assistant_turn",
            "compaction_applied",
            "assistant_turn"
        ]
    );
    let SessionEvent::AssistantTurn(checkpoint) = &loaded.events[2] else {
        panic!("a checkpoint")
    };
    assert_eq!(
        checkpoint.tool_activity[0].retained_output,
        Some(json!({"content": "1:aa|[package]\n2:bb|name = \"quiet\"", "total_lines": 2}))
    );
    let SessionEvent::CompactionApplied(compaction) = &loaded.events[3] else {
        panic!("a compaction")
    };
    // The summary without Keen's framing; the latest user message apart, verbatim.
    assert!(
        compaction.summary.starts_with("## Goal\nRename"),
        "{}",
        compaction.summary
    );
    assert!(
        compaction
            .summary
            .ends_with("## Relevant Files\nCargo.toml")
    );
    assert_eq!(
        compaction.last_user_message.as_deref(),
        Some("Rename the crate to loud.")
    );
    assert_eq!(compaction.compacted_entries, 2);
    let history = replay(loaded.events);
    let view = history.model_view(&ContextPolicy::keen());
    let messages =
        serde_json::to_value(render::openai_chat(&view)).unwrap_or_else(|e| panic!("{e}"));
    let first = messages[0]["content"].as_str().unwrap_or_default();
    assert!(first.starts_with("<compacted_context>\n"), "{first}");
    assert!(first.ends_with("\n\nRename the crate to loud.\n</last_user_message>"));
}
