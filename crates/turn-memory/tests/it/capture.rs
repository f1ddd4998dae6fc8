//! The capture rules, one table row each, and their laws.

use agent_memory_turns::{
    CaptureConfig, CaptureRules, DangerousCommand, Error, FailedCommand, ToolEnd, TurnMemory,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::fixture::ROOT;

/// A tool-end event: `(tool, input, is_error, exit_code)`.
type Event = (&'static str, Value, bool, Option<i32>);

#[track_caller]
fn check(rules: &CaptureRules, events: &[Event], expected: Option<TurnMemory>) {
    let mut turn = rules.start_turn();
    for (tool, input, is_error, exit_code) in events {
        turn.observe(&ToolEnd {
            tool,
            input,
            output: "OUTPUT-CANARY",
            is_error: *is_error,
            exit_code: *exit_code,
        });
    }
    let activity = format!("{:?}", turn.activity());
    let memory = turn.finish();
    assert_eq!(memory, expected);
    let text = format!("{memory:?}");
    assert!(
        !text.contains("OUTPUT-CANARY"),
        "output leaked into memory: {text}"
    );
    assert!(
        !activity.contains("OUTPUT-CANARY"),
        "output leaked into activity: {activity}"
    );
}

fn files(paths: &[&str]) -> Option<TurnMemory> {
    Some(TurnMemory {
        files_changed: paths.iter().map(|p| (*p).to_owned()).collect(),
        ..TurnMemory::default()
    })
}

fn failed(command: &str, exit_code: i32) -> FailedCommand {
    FailedCommand {
        command: command.to_owned(),
        exit_code,
    }
}

fn default_rules() -> CaptureRules {
    CaptureRules::for_workspace(ROOT).unwrap_or_else(|e| panic!("{e}"))
}

fn write(path: &str) -> Event {
    (
        "write_file",
        json!({ "path": path, "content": "x" }),
        false,
        None,
    )
}

fn edit(path: &str) -> Event {
    ("edit_file", json!({ "path": path }), false, None)
}

fn bash(command: &str, exit_code: i32) -> Event {
    (
        "bash",
        json!({ "command": command }),
        false,
        Some(exit_code),
    )
}

#[test]
fn files_are_deduplicated_in_first_seen_order() {
    check(
        &default_rules(),
        &[
            write("src/b.rs"),
            edit("src/a.rs"),
            write("./src/b.rs"),
            edit("/work/app/src/a.rs"),
            write("src/c.rs"),
        ],
        files(&["src/b.rs", "src/a.rs", "src/c.rs"]),
    );
}

#[test]
fn paths_are_relative_and_normalized() {
    check(
        &default_rules(),
        &[
            write("./a/../b.rs"),
            write("/work/app/src/./x/../y.rs"),
            write("/elsewhere/z.rs"),
        ],
        files(&["b.rs", "src/y.rs", "/elsewhere/z.rs"]),
    );
}

#[test]
fn failed_commands_keep_exit_code_in_order_without_dedup() {
    check(
        &default_rules(),
        &[
            bash("cargo test", 101),
            bash("cargo build", 0),
            bash("cargo test", 101),
            bash("false", 1),
        ],
        Some(TurnMemory {
            failed_commands: vec![
                failed("cargo test", 101),
                failed("cargo test", 101),
                failed("false", 1),
            ],
            ..TurnMemory::default()
        }),
    );
}

#[test]
fn nothing_from_read_only_tools_failed_writes_or_successful_commands() {
    check(
        &default_rules(),
        &[
            ("read_file", json!({ "path": "src/a.rs" }), false, None),
            ("grep", json!({ "pattern": "fn" }), false, None),
            ("write_file", json!({ "path": "src/denied.rs" }), true, None),
            ("edit_file", json!({ "path": "src/denied.rs" }), true, None),
            bash("cargo test", 0),
            ("bash", json!({ "command": "sleep 100" }), true, None),
            ("write_file", json!({ "content": "no path" }), false, None),
            ("bash", json!({ "cmd": "wrong field" }), false, Some(2)),
        ],
        None,
    );
}

#[test]
fn dangerous_commands_only_when_asked() {
    let events = [
        (
            "bash",
            json!({ "command": "rm -rf target", "is_dangerous": true }),
            false,
            Some(0),
        ),
        (
            "bash",
            json!({ "command": "git push -f", "is_dangerous": true }),
            false,
            Some(1),
        ),
        (
            "bash",
            json!({ "command": "ls", "is_dangerous": false }),
            false,
            Some(0),
        ),
    ];
    check(
        &default_rules(),
        &events,
        Some(TurnMemory {
            failed_commands: vec![failed("git push -f", 1)],
            ..TurnMemory::default()
        }),
    );
    let mut config = CaptureConfig::new(ROOT);
    config.keep_dangerous = true;
    let rules = CaptureRules::new(config).unwrap_or_else(|e| panic!("{e}"));
    check(
        &rules,
        &events,
        Some(TurnMemory {
            failed_commands: vec![failed("git push -f", 1)],
            dangerous_commands: vec![
                DangerousCommand {
                    command: "rm -rf target".to_owned(),
                    exit_code: Some(0),
                },
                DangerousCommand {
                    command: "git push -f".to_owned(),
                    exit_code: Some(1),
                },
            ],
            ..TurnMemory::default()
        }),
    );
}

#[test]
fn tool_names_are_configuration() {
    let mut config = CaptureConfig::new(ROOT);
    config.write_tools = vec!["apply_patch".to_owned()];
    config.edit_tools = vec![];
    config.shell_tools = vec!["shell".to_owned()];
    config.path_field = "files".to_owned();
    config.command_field = "cmd".to_owned();
    let rules = CaptureRules::new(config).unwrap_or_else(|e| panic!("{e}"));
    check(
        &rules,
        &[
            (
                "apply_patch",
                json!({ "files": ["src/a.rs", "src/b.rs", "src/a.rs"] }),
                false,
                None,
            ),
            (
                "write_file",
                json!({ "path": "src/ignored.rs" }),
                false,
                None,
            ),
            ("shell", json!({ "cmd": "make" }), false, Some(2)),
            ("bash", json!({ "command": "ignored" }), false, Some(1)),
        ],
        Some(TurnMemory {
            files_changed: vec!["src/a.rs".to_owned(), "src/b.rs".to_owned()],
            failed_commands: vec![failed("make", 2)],
            ..TurnMemory::default()
        }),
    );
}

#[test]
fn an_interrupted_turn_keeps_what_it_captured() {
    let rules = default_rules();
    let mut turn = rules.start_turn();
    for (tool, input, is_error, exit_code) in [write("src/a.rs"), bash("cargo test", 101)] {
        turn.observe(&ToolEnd {
            tool,
            input: &input,
            output: "",
            is_error,
            exit_code,
        });
    }
    // The user interrupts here: the agent loop finishes the turn early.
    assert_eq!(
        turn.memory(),
        &TurnMemory {
            files_changed: vec!["src/a.rs".to_owned()],
            failed_commands: vec![failed("cargo test", 101)],
            ..TurnMemory::default()
        }
    );
    assert!(turn.finish().is_some());
}

#[test]
fn a_bad_configuration_reports_every_problem() {
    let mut config = CaptureConfig::new("relative/root");
    config.write_tools.push(String::new());
    config.shell_tools.push("write_file".to_owned());
    config.command_field = String::new();
    let Err(Error::InvalidConfig { problems }) = CaptureRules::new(config) else {
        panic!("configuration accepted");
    };
    assert_eq!(problems.len(), 4, "{problems:#?}");
    assert!(problems[0].contains("\"relative/root\""), "{}", problems[0]);
    assert!(
        problems.iter().any(|p| p.contains("\"write_file\"")),
        "{problems:?}"
    );
    let message = CaptureRules::new(CaptureConfig::new("/a/../b"))
        .map(|_| ())
        .map_err(|e| e.to_string());
    assert_eq!(
        message,
        Err("invalid capture configuration: workspace_root \"/a/../b\" must be normalized (no `.`, `..` or empty segments)".to_owned())
    );
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(".".to_owned()),
        Just("..".to_owned()),
        Just(String::new()),
        "[a-c]{1,2}",
    ]
}

fn path() -> impl Strategy<Value = String> {
    (any::<bool>(), prop::collection::vec(segment(), 1..6)).prop_map(|(absolute, segments)| {
        let joined = segments.join("/");
        if absolute {
            format!("{ROOT}/{joined}")
        } else {
            joined
        }
    })
}

proptest! {
    #[test]
    fn normalizing_is_idempotent_and_clean(p in path()) {
        let rules = default_rules();
        if let Some(once) = rules.relative_path(&p) {
            let twice = rules.relative_path(&once).map(|c| c.into_owned());
            prop_assert_eq!(twice.as_deref(), Some(once.as_ref()));
            let body = once.trim_start_matches('/');
            prop_assert!(body.split('/').all(|s| !s.is_empty() && s != "."), "{}", once);
            prop_assert!(!once.starts_with("/work/app/"), "{}", once);
        }
    }

    #[test]
    fn files_changed_are_the_distinct_paths_in_first_seen_order(paths in prop::collection::vec(path(), 0..12)) {
        let rules = default_rules();
        let mut turn = rules.start_turn();
        let mut expected: Vec<String> = Vec::new();
        for p in &paths {
            let input = json!({ "path": p });
            turn.observe(&ToolEnd { tool: "edit_file", input: &input, output: "", is_error: false, exit_code: None });
            if let Some(normal) = rules.relative_path(p)
                && !expected.iter().any(|e| *e == normal) {
                    expected.push(normal.into_owned());
                }
        }
        prop_assert_eq!(&turn.memory().files_changed, &expected);
    }
}
