//! Hostile input: each gets a clear error naming what was wrong (or the documented literal
//! treatment), never a panic, a hang or a stack overflow, and leaves files and stores as they
//! were.

use std::collections::BTreeMap;
use std::fs;

use agent_memory_core::{SessionId, Timestamp, ToolLogStore};
use agent_memory_recording::{
    MissingKeys, Snapshot, ToolOutcome, Trail, capture, interpolate, interpolate_str,
};
use agent_memory_sqlite::SqliteStore;
use serde_json::{Value, json};

/// Parses `text` as a trail named `file` and checks the error starts with `prefix` and
/// mentions `needle`.
fn check_refused(file: &str, text: &str, prefix: &str, needle: &str) {
    let err = Trail::from_yaml_str(text, file).expect_err(file);
    let message = err.to_string();
    assert!(message.starts_with(prefix), "{file}: {message}");
    assert!(message.contains(needle), "{file}: {message}");
}

/// Nine anchors, each a list of nine aliases of the one before: 9^9 "lol"s once expanded.
fn billion_laughs() -> String {
    let mut text =
        String::from("config:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for level in 1..10 {
        let previous = format!("*a{}", level - 1);
        let items = [previous.as_str(); 9].join(", ");
        text.push_str(&format!("  a{level}: &a{level} [{items}]\n"));
    }
    text.push_str("trail:\n  - step: laugh\n");
    text
}

#[test]
fn malformed_and_hostile_trails_name_file_line_and_problem() {
    let deep_flow = format!(
        "trail:\n  - step: deep\n    recording:\n      android:\n        - tap: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let deep_block: String = (0..2_000)
        .map(|depth| format!("{}k:\n", "  ".repeat(depth)))
        .collect();
    let cases: &[(&str, &str, &str, &str)] = &[
        // An alias bomb: serde_yaml stops expanding aliases long before memory runs out.
        (
            "bomb.trail.yaml",
            &billion_laughs(),
            "bomb.trail.yaml:",
            "repetition limit exceeded",
        ),
        // Nesting a recursive parser would overflow the stack on: a recursion limit instead.
        (
            "deep.trail.yaml",
            &deep_flow,
            "deep.trail.yaml:5:",
            "recursion limit exceeded",
        ),
        (
            "block.trail.yaml",
            &format!("config:\n{deep_block}"),
            "block.trail.yaml:",
            "recursion limit exceeded",
        ),
        (
            "tab.trail.yaml",
            "trail:\n\t- step: a\n",
            "tab.trail.yaml:2:",
            "tab",
        ),
        (
            "scalar.trail.yaml",
            "just text\n",
            "scalar.trail.yaml:1:1: ",
            "a list (legacy form) or a map",
        ),
        (
            "key.trail.yaml",
            "trail:\n  - step: a\n    when: now\n",
            "key.trail.yaml:3:5: ",
            "unknown step key `when`",
        ),
        (
            "both.trail.yaml",
            "trail:\n  - step: a\n    verify: b\n",
            "both.trail.yaml:2:",
            "both `step:` and `verify:`",
        ),
        (
            "tool.trail.yaml",
            "- tools:\n  - tapA: {}\n    tapB: {}\n",
            "tool.trail.yaml:2:",
            "\"tapA\" and \"tapB\"",
        ),
        (
            "anchor.trail.yaml",
            "trail:\n  - step: *nowhere\n",
            "anchor.trail.yaml:2:",
            "unknown anchor",
        ),
    ];
    for (file, text, prefix, needle) in cases {
        check_refused(file, text, prefix, needle);
    }
}

#[test]
fn a_huge_trail_parses_and_an_error_at_its_end_names_the_last_line() {
    let steps = 20_000;
    let mut text = String::from("trail:\n");
    for i in 0..steps {
        text.push_str(&format!(
            "  - step: step {i}\n    recording:\n      android:\n        - inputText:\n            text: value {i}\n"
        ));
    }
    let Trail::Unified(trail) = Trail::from_yaml_str(&text, "huge.trail.yaml").expect("huge trail")
    else {
        panic!("a map is the unified form");
    };
    assert_eq!(trail.steps().len(), steps);
    text.push_str("  - step: last\n    surprise: 1\n");
    let last_line = 1 + 5 * steps + 2;
    check_refused(
        "huge.trail.yaml",
        &text,
        &format!("huge.trail.yaml:{last_line}:"),
        "unknown step key `surprise`",
    );
}

#[test]
fn invalid_utf8_in_a_trail_file_is_an_error_naming_the_file_which_is_left_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("latin1.trail.yaml");
    let bytes = b"trail:\n  - step: caf\xe9\n".to_vec();
    fs::write(&path, &bytes).expect("write");
    let message = Trail::read(&path).expect_err("invalid UTF-8").to_string();
    assert_eq!(
        message,
        format!(
            "trail file {}: stream did not contain valid UTF-8",
            path.display()
        )
    );
    assert_eq!(fs::read(&path).expect("read back"), bytes);
}

#[test]
fn deeply_nested_parameters_are_an_error_not_a_stack_overflow() {
    let mut call = json!("leaf ${merchant_email}");
    for _ in 0..1_000 {
        call = json!([call]);
    }
    let memory = BTreeMap::from([("merchant_email".to_owned(), "a@example.com".to_owned())]);
    let err = interpolate(&call, &memory, MissingKeys::Fail).expect_err("too deep");
    assert!(
        err.to_string()
            .starts_with("value nested deeper than 128 levels at $[0][0]"),
        "{err}"
    );
    let session = SessionId::new("s1").expect("session");
    let outcome = ToolOutcome::succeeded(1, Timestamp::from_millis(1));
    let err = capture(&session, "tap", &call, &outcome, &Snapshot::default())
        .expect_err("too deep to log");
    assert!(
        err.to_string()
            .starts_with("value nested deeper than 128 levels"),
        "{err}"
    );
    // serde_json stops at 128 levels when reading, so a value this deep never even parses.
    let text = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let err = serde_json::from_str::<Value>(&text).expect_err("recursion limit");
    assert!(
        err.to_string().starts_with("recursion limit exceeded"),
        "{err}"
    );
}

#[test]
fn tokens_that_never_close_stay_literal_even_when_missing_keys_fail() {
    let memory = BTreeMap::from([("a".to_owned(), "AAA".to_owned())]);
    let cases = [
        ("${a", "${a"),
        ("{{a", "{{a"),
        ("{{a}", "{{a}"),
        ("${a}${a", "AAA${a"),
        ("{{a} {{a}}", "{{a} AAA"),
        ("${${${", "${${${"),
    ];
    for (text, expected) in cases {
        let value = json!({ "field": text });
        let resolved = interpolate(&value, &memory, MissingKeys::Fail)
            .unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(*resolved, json!({ "field": expected }), "{text:?}");
    }
    // Megabytes of openers before one lone `}`: one pass over the text, not one per opener.
    for text in [
        format!("{}}}", "{".repeat(1 << 20)),
        format!("{}}} {{{{a}}}}", "{{x".repeat(1 << 18)),
        "${".repeat(1 << 20),
    ] {
        let resolved = interpolate_str(&text, &memory, MissingKeys::Leave, &mut |_| {})
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(resolved.starts_with(&text[..64]), "openers were dropped");
    }
}

#[test]
fn a_100_mb_parameter_is_refused_by_the_store_and_changes_nothing() {
    let store = SqliteStore::open_in_memory().expect("open");
    let session = SessionId::new("s1").expect("session");
    let outcome = ToolOutcome::succeeded(1, Timestamp::from_millis(1));
    let small = capture(
        &session,
        "tap",
        &json!({"x": 1}),
        &outcome,
        &Snapshot::default(),
    )
    .expect("capture");
    store.append_tool_log(&small).expect("small log");
    let huge = json!({ "text": "z".repeat(100 * 1024 * 1024) });
    let log = capture(&session, "inputText", &huge, &outcome, &Snapshot::default())
        .expect("capture is in memory");
    let err = store.append_tool_log(&log).expect_err("100 MB parameters");
    assert!(
        matches!(err, agent_memory_core::Error::InvalidInput { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("larger than the store's limit"),
        "{err}"
    );
    assert_eq!(store.list_tool_logs(&session).expect("list"), vec![small]);
}

/// Found by the `trail_yaml` fuzz target: a local YAML tag parsed, but the trail could not be
/// written back (the emitter refuses the tag), so a read trail failed on its next write.
#[test]
fn a_local_yaml_tag_is_refused_with_its_position() {
    let text = "- config:\n   !-c$$$$$$$$$$$$$$$$$$$$$$$ title: \n";
    let err = Trail::from_yaml_str(text, "tagged.trail.yaml").expect_err("tag refused");
    assert_eq!(
        err.to_string(),
        "tagged.trail.yaml:2:4: YAML tag !-c$$$$$$$$$$$$$$$$$$$$$$$ is not part of the trail format"
    );
    let plain = "- config:\n    title: fine\n";
    let trail = Trail::from_yaml_str(plain, "plain.trail.yaml").expect("no tag");
    trail.to_yaml_string().expect("writes back");
}

/// Found by the `trail_yaml` fuzz target: a mapping key that is itself a map parsed into an
/// unknown config field, and the trail could not be written back.
#[test]
fn a_complex_mapping_key_is_refused() {
    let text = "config:\n  id: sample\n  extra:\n    ? {a: 1}\n    : value\n";
    let err = Trail::from_yaml_str(text, "complex.trail.yaml").expect_err("complex key refused");
    assert_eq!(
        err.to_string(),
        "complex.trail.yaml:4:5: a mapping key that is a list or a map is not part of the trail format"
    );
}
