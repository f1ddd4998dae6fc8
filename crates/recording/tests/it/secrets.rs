//! A secret fed through every entry point of the library: capture, reading tool logs, trail
//! generation, lint, replay and the errors of each. It comes out as its token or not at all.

use agent_memory_core::{SessionId, Timestamp};
use agent_memory_recording::{
    GenerationPolicy, Memory, MemoryWrites, Objective, Provenance, ReplayOptions, Replayer, Seeds,
    StepKind, TemplatePolicy, ToolOutcome, Trail, capture, generate_recording, lint_trail,
    read_tool_logs, tool_log_from_json, tool_log_to_json,
};
use serde_json::json;

const CANARY: &str = "zq9999canary";

fn clean(what: &str, text: &str) {
    assert!(!text.contains(CANARY), "{what} holds the secret: {text}");
}

#[test]
fn a_secret_sent_as_a_number_is_masked_too() {
    let session = SessionId::new("s").unwrap_or_else(|e| panic!("{e}"));
    let at = Timestamp::from_millis(1);
    let mut memory = Memory::new();
    memory.remember_secret("pin", "735291", Provenance::tool("testUser_create", at));
    let params = json!({"pin": 735291, "pins": [735_291, 1], "amount": 12.5, "id": 7352910});
    let log = capture(
        &session,
        "enterPin",
        &params,
        &ToolOutcome::succeeded(3, at),
        &memory.snapshot(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(!log.parameters.contains("735291"), "{}", log.parameters);
    let stored: serde_json::Value =
        serde_json::from_str(&log.parameters).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        stored,
        json!({"pin": "${pin}", "pins": ["${pin}", 1], "amount": 12.5, "id": "${pin}0"})
    );
}

#[test]
fn capture_scrubs_every_field_and_keeps_scrubbing_a_secret_once_forgotten() {
    let session = SessionId::new("s").unwrap_or_else(|e| panic!("{e}"));
    let at = Timestamp::from_millis(1);
    let mut memory = Memory::new();
    memory.remember_secret("pin", CANARY, Provenance::tool("testUser_create", at));
    let params = json!({"pin": CANARY, "note": format!("pin {CANARY}"), CANARY: [CANARY]});
    let outcome =
        ToolOutcome::failed(format!("bad pin {CANARY}"), 3, at).with_trace(format!("t-{CANARY}"));
    let first = capture(
        &session,
        &format!("tool-{CANARY}"),
        &params,
        &outcome,
        &memory.snapshot(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    clean("a captured log", &format!("{first:?}"));
    assert!(first.parameters.contains("${pin}"), "{}", first.parameters);
    // Forgotten (or overwritten), the value is still a secret for the later logs.
    memory.forget("pin");
    let later = capture(
        &session,
        "echo",
        &json!({"old": CANARY}),
        &ToolOutcome::succeeded(1, at),
        &memory.snapshot(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    clean("a later log", &format!("{later:?}"));
    memory.remember_secret("pin2", "another-secret", Provenance::unknown(at));
    memory.remember_secret("pin2", "rotated-secret", Provenance::unknown(at));
    let rotated = capture(
        &session,
        "echo",
        &json!({"old": "another-secret"}),
        &ToolOutcome::succeeded(1, at),
        &memory.snapshot(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !rotated.parameters.contains("another-secret"),
        "{}",
        rotated.parameters
    );
    let generated = generate_recording(
        &[Objective::new(
            StepKind::Step,
            "go",
            Timestamp::from_millis(0),
        )],
        &[first, later],
        &GenerationPolicy::for_classifier("android"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    clean(
        "a generated trail",
        &generated
            .trail
            .to_yaml_string()
            .unwrap_or_else(|e| panic!("{e}")),
    );
}

#[test]
fn reading_logs_scrubs_a_revealed_secret_from_that_log_and_the_later_ones() {
    let logs = [
        format!(
            r#"{{"session":"s","toolName":"a","parameters":{{"pin":"{CANARY}"}},"successful":false,"exceptionMessage":"pin {CANARY}","durationMs":1,"timestamp":1,"memorySnapshot":[{{"key":"pin","value":"{CANARY}","sensitive":true}},{{"key":"copy","value":"{CANARY}"}}]}}"#
        ),
        format!(
            r#"{{"session":"s","toolName":"b","parameters":{{"x":"{CANARY}"}},"successful":true,"durationMs":1,"timestamp":2,"traceId":"{CANARY}"}}"#
        ),
        format!(
            r#"{{"session":"other","toolName":"c","parameters":{{"x":"not-the-{CANARY}-session"}},"successful":true,"durationMs":1,"timestamp":3}}"#
        ),
    ];
    let file = read_tool_logs(&logs.join("\n"), "logs.jsonl").unwrap_or_else(|e| panic!("{e}"));
    // Another session never revealed it, but a secret is masked wherever it is read.
    for log in &file.logs {
        clean("a read log", &format!("{log:?}"));
        clean(
            "a written log",
            &tool_log_to_json(log).unwrap_or_else(|e| panic!("{e}")),
        );
    }
    assert!(
        file.logs[2].parameters.contains("not-the-${pin}-session"),
        "{}",
        file.logs[2].parameters
    );
    let single = tool_log_from_json(&logs[0]).unwrap_or_else(|e| panic!("{e}"));
    clean("one log", &format!("{single:?}"));
    for wrong in [
        "99990001",
        r#"["zq9999canary"]"#,
        r#"{"v": "zq9999canary"}"#,
        "true",
    ] {
        let text = format!(
            r#"{{"session":"s","toolName":"a","parameters":{{}},"successful":true,"durationMs":1,"timestamp":1,"memorySnapshot":[{{"key":"pin","value":{wrong},"sensitive":true}}]}}"#
        );
        let err = read_tool_logs(&text, "logs.jsonl").expect_err("a value of the wrong type");
        let message = err.to_string();
        clean("an error", &message);
        assert!(!message.contains("99990001"), "{message}");
        assert!(
            message.starts_with("logs.jsonl:1: `memorySnapshot[0].value` must be a string"),
            "{message}"
        );
    }
}

/// The secret is used first and marked sensitive only by a later log's snapshot (a password
/// typed, then stored by the tool that checked it): every log read with that snapshot is
/// scrubbed, the earlier ones too, in either of the forms a log file takes.
#[test]
fn reading_logs_scrubs_a_secret_from_the_logs_before_the_one_revealing_it() {
    let logs = [
        format!(
            r#"{{"session":"s","toolName":"typePassword","parameters":{{"text":"{CANARY}"}},"successful":false,"exceptionMessage":"rejected {CANARY}","durationMs":1,"timestamp":1,"traceId":"t-{CANARY}","memorySnapshot":[{{"key":"note","value":"was {CANARY}"}}]}}"#
        ),
        format!(
            r#"{{"class":"xyz.block.trailblaze.logs.client.TrailblazeLog.TrailblazeToolLog","trailblazeTool":{{"toolName":"inputText","raw":{{"text":"{CANARY}"}}}},"toolName":"inputText","successful":true,"traceId":"tool-1","durationMs":3,"session":"s","timestamp":"2026-07-21T10:00:01Z","isTopLevelToolCall":true}}"#
        ),
        format!(
            r#"{{"session":"s","toolName":"rememberPassword","parameters":{{}},"successful":true,"durationMs":1,"timestamp":3,"memorySnapshot":[{{"key":"password","value":"{CANARY}","sensitive":true}}]}}"#
        ),
    ];
    for text in [logs.join("\n"), logs.join("\n\n")] {
        let file = read_tool_logs(&text, "logs.jsonl").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.logs.len(), 3);
        for log in &file.logs {
            clean("a read log", &format!("{log:?}"));
        }
        assert_eq!(file.logs[0].parameters, r#"{"text":"${password}"}"#);
        assert_eq!(file.logs[1].parameters, r#"{"text":"${password}"}"#);
    }
}

#[test]
fn lint_and_replay_show_a_secret_only_as_its_token() {
    let text = format!(
        "trail:\n- step: s\n  recording:\n    android:\n    - signIn:\n        pin: '{CANARY}'\n        note: 'pin is {CANARY}'\n    - use:\n        pin: ${{pin}}\n"
    );
    let trail = Trail::from_yaml_str(&text, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    let mut memory = Memory::new();
    memory.remember_secret(
        "pin",
        CANARY,
        Provenance::unknown(Timestamp::from_millis(0)),
    );
    let findings = lint_trail(&trail, &memory.snapshot(), &[], &TemplatePolicy::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(findings.len(), 2, "{findings:?}");
    clean("lint findings", &format!("{findings:?}"));
    clean("a memory", &format!("{memory:?}"));
    clean("a snapshot", &format!("{:?}", memory.snapshot()));
    let seeds = Seeds::new().with_secret("pin", CANARY);
    let mut replay = Replayer::new(&trail, "android", &seeds, ReplayOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    clean("a replay", &format!("{replay:?}"));
    while let Some(dispatch) = replay.next_dispatch().unwrap_or_else(|e| panic!("{e}")) {
        clean("a dispatch", &format!("{dispatch:?}"));
        clean(
            "a dispatch",
            &serde_json::to_string(&dispatch).unwrap_or_else(|e| panic!("{e}")),
        );
        let writes = MemoryWrites::new().secret("other", CANARY);
        clean("memory writes", &format!("{writes:?}"));
        replay.complete(writes).unwrap_or_else(|e| panic!("{e}"));
    }
    let err =
        MemoryWrites::from_json(&json!({"secrets": {"pin": [CANARY]}})).expect_err("not a string");
    clean("an error", &err.to_string());
}
