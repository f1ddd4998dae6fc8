//! Tool output compressed for the model, and the token breakdown of a model view.
//!
//! Ported from Keen Code's `internal/llm/compress/output_test.go` and
//! `internal/llm/context_breakdown_test.go`, each case naming its test.

use std::borrow::Cow;

use agent_memory_turns::compress::{common_prefix, for_model};
use agent_memory_turns::{BytesOverThree, ContextBreakdown, ModelItem, ModelView, SizeEstimator};
use serde_json::{Value, json};

#[test]
fn outputs_are_compressed_as_keen_compresses_them() {
    // (test in output_test.go, tool, output, compressed or None when left as it is)
    let cases: [(&str, &str, Value, Option<Value>); 7] = [
        (
            "TestForLLM_ReadFileStripsDisplayOnlyMetadata",
            "read_file",
            json!({"content": "1:abc|package main", "bytes_read": 18, "lines_read": 1, "total_lines": 2, "truncated": true}),
            Some(json!({"content": "1:abc|package main", "total_lines": 2, "truncated": true})),
        ),
        (
            "TestForLLM_CompactsGlobFiles",
            "glob",
            json!({"files": ["internal/llm/openai.go", "internal/llm/genkit.go"]}),
            Some(json!({"common_prefix": "internal/llm/", "files": ["openai.go", "genkit.go"]})),
        ),
        (
            "TestForLLM_CompactsGrepMatchesByFile",
            "grep",
            json!({"matches": [
                {"file": "internal/llm/openai.go", "line_number": 10, "line": "first", "line_hash": "aaa"},
                {"file": "internal/llm/openai.go", "line_number": 20, "line": "second", "line_hash": "bbb"},
                {"file": "internal/llm/genkit.go", "line_number": 30, "line": "third", "line_hash": "ccc"},
            ]}),
            Some(json!({"common_prefix": "internal/llm/", "matches": {
                "openai.go": [
                    {"line_number": 10, "line": "first", "line_hash": "aaa"},
                    {"line_number": 20, "line": "second", "line_hash": "bbb"},
                ],
                "genkit.go": [{"line_number": 30, "line": "third", "line_hash": "ccc"}],
            }})),
        ),
        (
            "TestForLLM_LeavesPathsWithoutSharedDirectoryUnchanged",
            "glob",
            json!({"files": ["one.go", "two.go"]}),
            None,
        ),
        // Ours: grep's file list mode is compacted like glob's (ForLLM's compactGrep).
        (
            "grep files",
            "grep",
            json!({"files": ["a/x", "a/y"]}),
            Some(json!({"common_prefix": "a/", "files": ["x", "y"]})),
        ),
        // Ours: other tools and other shapes are left alone.
        ("other tool", "bash", json!({"bytes_read": 1}), None),
        ("not an object", "read_file", json!("text"), None),
    ];
    for (name, tool, output, expected) in cases {
        let got = for_model(tool, &output).map(|v| *v);
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn the_common_prefix_ends_at_a_separator() {
    for (paths, expected) in [
        (
            vec!["src/a.rs", "src/b.rs"],
            Some(("src/", vec!["a.rs", "b.rs"])),
        ),
        (
            vec!["src/ab.rs", "src/ac.rs"],
            Some(("src/", vec!["ab.rs", "ac.rs"])),
        ),
        (
            vec!["C:\\w\\a", "C:\\w\\b"],
            Some(("C:\\w\\", vec!["a", "b"])),
        ),
        (vec!["d/é", "d/è"], Some(("d/", vec!["é", "è"]))),
        (vec!["a", "b"], None),
        (vec![], None),
    ] {
        assert_eq!(common_prefix(&paths), expected, "{paths:?}");
    }
}

fn view(items: Vec<ModelItem<'static>>) -> ModelView<'static> {
    ModelView::new(items)
}

#[test]
fn the_breakdown_counts_each_part() {
    let e = BytesOverThree;
    // TestEstimateContextBreakdown_Empty.
    assert_eq!(view(vec![]).breakdown(&e, &[]), ContextBreakdown::default());

    // TestEstimateContextBreakdown_Categories.
    let defs = [
        json!({"name": "read_file", "description": "reads a file", "input_schema": {"type": "object"}}),
        json!({"name": "bash", "description": "runs commands", "input_schema": {"type": "object"}}),
    ];
    let v = view(vec![
        ModelItem::User(Cow::Borrowed("hello there")),
        ModelItem::Assistant(Cow::Borrowed("hi!")),
        ModelItem::ToolCall {
            id: Cow::Borrowed("c0"),
            name: Cow::Borrowed("read_file"),
            input: Cow::Owned(json!({"path": "/tmp/x"})),
        },
        ModelItem::ToolResult {
            id: Cow::Borrowed("c0"),
            name: Cow::Borrowed("read_file"),
            output: Cow::Borrowed("file contents here"),
            is_error: false,
        },
        ModelItem::User(Cow::Borrowed("thanks")),
    ])
    .with_system("system prompt text");
    let b = v.breakdown(&e, &defs);
    let t = |s: &str| e.tokens(s);
    assert_eq!(b.system_prompt_tokens, t("system prompt text"));
    assert_eq!(b.tool_definition_count, 2);
    assert_eq!(
        b.tool_def_tokens,
        t("read_file")
            + t("reads a file")
            + t(r#"{"type":"object"}"#)
            + t("bash")
            + t("runs commands")
            + t(r#"{"type":"object"}"#)
    );
    assert_eq!(b.user_message_tokens, t("hello there") + t("thanks"));
    assert_eq!(b.assistant_tokens, t("hi!"));
    assert_eq!(
        b.tool_result_tokens,
        t(r#"{"path":"/tmp/x"}"#) + t("file contents here")
    );
    assert_eq!(
        b.total_estimated,
        b.system_prompt_tokens
            + b.tool_def_tokens
            + b.user_message_tokens
            + b.assistant_tokens
            + b.tool_result_tokens
    );

    // TestEstimateContextBreakdown_ToolResultWithoutRawOutput: the input alone counts.
    let v = view(vec![ModelItem::ToolCall {
        id: Cow::Borrowed("c0"),
        name: Cow::Borrowed("bash"),
        input: Cow::Owned(json!({"command": "ls"})),
    }]);
    assert!(v.breakdown(&e, &[]).tool_result_tokens > 0);
}

#[test]
fn keens_estimate_is_bytes_over_three() {
    for (text, tokens) in [
        ("", 0),
        ("a", 1),
        ("abc", 1),
        ("abcd", 2),
        ("é", 1),
        ("abcdefg", 3),
    ] {
        assert_eq!(BytesOverThree.tokens(text), tokens, "{text:?}");
    }
}
