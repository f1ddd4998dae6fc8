//! Trailblaze's own session logs (`tests/data/trailblaze-logs/`) as input: the calls its
//! recording generator keeps are kept, the others skipped with their reasons, its objectives
//! become the steps, and each call is recorded as authored.

use std::path::PathBuf;

use agent_memory_recording::{GenerationPolicy, generate_recording, read_tool_logs};

fn session_text() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/trailblaze-logs/sign-in.session.json");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path:?}: {e}"))
}

#[test]
fn a_trailblaze_session_becomes_a_trail_of_its_objectives() {
    let file =
        read_tool_logs(&session_text(), "sign-in.session.json").unwrap_or_else(|e| panic!("{e}"));
    let kept: Vec<String> = file
        .logs
        .iter()
        .map(|log| {
            format!(
                "{} {} {}",
                log.tool_name,
                log.parameters,
                log.timestamp.as_millis()
            )
        })
        .collect();
    let skipped: Vec<String> = file
        .skipped
        .iter()
        .map(|s| {
            format!(
                "line {}: {} ({})",
                s.line,
                s.tool.as_deref().unwrap_or("-"),
                s.reason.describe()
            )
        })
        .collect();
    insta::assert_snapshot!(
        "trailblaze_session_read",
        format!(
            "# kept\n{}\n# skipped\n{}",
            kept.join("\n"),
            skipped.join("\n")
        )
    );
    let session = &file.logs[0].session;
    let objectives = file.objectives_of(session);
    assert_eq!(objectives.len(), 3);
    let generated = generate_recording(
        &objectives,
        &file.logs,
        &GenerationPolicy::for_classifier("android-phone"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let yaml = generated
        .trail
        .to_yaml_string()
        .unwrap_or_else(|e| panic!("{e}"));
    insta::assert_snapshot!("trailblaze_session_trail", yaml);
}

#[test]
fn the_same_session_one_document_per_line_reads_the_same() {
    let text = session_text();
    let mut lines = String::new();
    for value in serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>() {
        lines.push_str(&value.unwrap_or_else(|e| panic!("{e}")).to_string());
        lines.push('\n');
    }
    let pretty = read_tool_logs(&text, "pretty").unwrap_or_else(|e| panic!("{e}"));
    let jsonl = read_tool_logs(&lines, "jsonl").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(pretty.logs, jsonl.logs);
    assert_eq!(pretty.objectives, jsonl.objectives);
    assert_eq!(pretty.skipped.len(), jsonl.skipped.len());
}

#[test]
fn errors_name_the_file_line_and_field() {
    let good = r#"{"class":"a.TrailblazeToolLog","trailblazeTool":{"toolName":"t","raw":{}},"toolName":"t","successful":true,"traceId":"tool-1","durationMs":1,"session":"s","timestamp":"2026-07-21T10:00:00Z"}"#;
    let cases = [
        (
            format!(
                "{good}\n{}",
                good.replace(r#""durationMs":1"#, r#""durationMs":-1"#)
            ),
            "logs.jsonl:2: `durationMs` must be a whole number of milliseconds, not a number",
        ),
        (
            format!("{good}\n\n{}", good.replace(r#""raw":{}"#, r#""raw":[1]"#)),
            "logs.jsonl:3: `trailblazeTool.raw` must be an object, not a list",
        ),
        (
            good.replace(
                r#""timestamp":"2026-07-21T10:00:00Z""#,
                r#""timestamp":"21/07/2026""#,
            ),
            "logs.jsonl:1: `timestamp` is not an ISO-8601 time",
        ),
        (
            format!("{good}\n{{\"class\": "),
            "logs.jsonl:2: not JSON: EOF while parsing a value",
        ),
        (
            good.replace(r#""trailblazeTool":{"toolName":"t","raw":{}},"#, ""),
            "logs.jsonl:1: `trailblazeTool` is missing",
        ),
        (
            good.replace(r#""session":"s""#, r#""session":"""#),
            "logs.jsonl:1: `session` must be a non-empty name",
        ),
    ];
    for (text, message) in cases {
        let err = read_tool_logs(&text, "logs.jsonl").expect_err(message);
        assert!(err.to_string().starts_with(message), "{err}");
    }
}
