//! A realistic session, built the way an agent loop builds it: tool events go through
//! capture, each turn is recorded with its memory.

use agent_memory_core::{ManualClock, SessionId, Timestamp};
use agent_memory_turns::{AssistantTurn, CaptureRules, EventLog, Session, ToolCallRecord};
use serde_json::{Value, json};

pub const ROOT: &str = "/work/app";
pub const STARTED_AT: i64 = 1_767_225_600_000;

pub fn session_id(name: &str) -> SessionId {
    SessionId::new(name).unwrap_or_else(|e| panic!("session id {name:?}: {e}"))
}

pub fn rules() -> CaptureRules {
    CaptureRules::for_workspace(ROOT).unwrap_or_else(|e| panic!("rules: {e}"))
}

pub fn call(
    id: &str,
    tool: &str,
    input: Value,
    output: &str,
    exit_code: Option<i32>,
) -> ToolCallRecord {
    ToolCallRecord::new(id, tool, input, output).with_exit_code(exit_code)
}

/// A turn streamed as `steps`: each a piece of text, then the calls made after it. Memory
/// and activity are captured from the calls; the calls are kept in history only when
/// `keep_calls`.
pub fn turn(
    steps: Vec<(&str, Vec<ToolCallRecord>)>,
    keep_calls: bool,
    interrupted: bool,
) -> AssistantTurn {
    let rules = rules();
    let mut capture = rules.start_turn();
    let mut kept = Vec::new();
    for (text, calls) in steps {
        capture.text(text);
        for c in calls {
            capture.observe(&c.as_tool_end());
            kept.push(c);
        }
    }
    let turn = capture.into_turn().with_interrupted(interrupted);
    if keep_calls {
        turn.with_tool_calls(kept)
    } else {
        turn
    }
}

/// A turn whose calls all ran before its text.
pub fn calls_then_text(
    text: &str,
    calls: Vec<ToolCallRecord>,
    keep_calls: bool,
    interrupted: bool,
) -> AssistantTurn {
    turn(vec![("", calls), (text, vec![])], keep_calls, interrupted)
}

/// Files written twice, a failing `cargo test`, a read-only turn, an interrupted turn, a
/// compaction (of the first turn: the read-only turn, without a memory block, stays in the
/// rendered payloads), and a last turn that keeps its tool calls.
pub fn realistic<L: EventLog>(log: L) -> Session<L> {
    let clock = ManualClock::new(Timestamp::from_millis(STARTED_AT));
    let mut s = Session::start(log, session_id("realistic"), &clock)
        .unwrap_or_else(|e| panic!("start: {e}"));
    let mut record = |f: &mut dyn FnMut(&mut Session<L>) -> agent_memory_turns::Result<()>| {
        f(&mut s).unwrap_or_else(|e| panic!("record: {e}"));
    };
    record(&mut |s| s.user_message("Add a --verbose flag to the CLI and make the tests pass."));
    record(&mut |s| {
        s.assistant_turn(turn(
            vec![
                ("", vec![call("call_1a", "read_file", json!({"path": "src/main.rs"}), "fn main() {}", None)]),
                ("I added the flag in `src/cli.rs`", vec![call("call_1b", "write_file", json!({"path": "src/cli.rs", "content": "pub struct Args;"}), "ok", None)]),
                (" and wired it in `src/main.rs`;", vec![
                    call("call_1c", "edit_file", json!({"path": "./src/main.rs", "old": "a", "new": "b"}), "ok", None),
                    call("call_1d", "write_file", json!({"path": "/work/app/src/cli.rs", "content": "pub struct Args { verbose: bool }"}), "ok", None),
                ]),
                (" `cargo test`", vec![call("call_1e", "bash", json!({"command": "cargo test"}), "test cli::tests::verbose ... FAILED\nerror: test failed", Some(101))]),
                (" fails in `cli::tests::verbose`.", vec![]),
            ],
            false,
            false,
        ))
    });
    record(&mut |s| s.user_message("What does parse_args return?"));
    record(&mut |s| {
        s.assistant_turn(turn(
            vec![
                (
                    "",
                    vec![call(
                        "call_2a",
                        "read_file",
                        json!({"path": "src/cli.rs"}),
                        "pub fn parse_args() -> Result<Args, CliError>",
                        None,
                    )],
                ),
                ("It returns `Result<Args, CliError>`.", vec![]),
            ],
            false,
            false,
        ))
    });
    record(&mut |s| s.user_message("Fix the failing test."));
    record(&mut |s| {
        s.assistant_turn(turn(
            vec![
                (
                    "Fixed: the test expected `-v`;",
                    vec![
                        call(
                            "call_3a",
                            "edit_file",
                            json!({"path": "src/cli.rs", "old": "x", "new": "y"}),
                            "ok",
                            None,
                        ),
                        call(
                            "call_3b",
                            "bash",
                            json!({"command": "cargo test"}),
                            "test result: ok. 12 passed",
                            Some(0),
                        ),
                    ],
                ),
                (" all tests pass now.", vec![]),
            ],
            false,
            false,
        ))
    });
    record(&mut |s| s.user_message("Now rename the flag to --loud everywhere."));
    record(&mut |s| {
        s.assistant_turn(turn(
            vec![(
                "Renaming the flag",
                vec![
                    call(
                        "call_4a",
                        "edit_file",
                        json!({"path": "src/cli.rs", "old": "verbose", "new": "loud"}),
                        "ok",
                        None,
                    ),
                    call(
                        "call_4b",
                        "edit_file",
                        json!({"path": "README.md", "old": "--verbose", "new": "--loud"}),
                        "ok",
                        None,
                    ),
                ],
            )],
            false,
            true,
        ))
    });
    record(&mut |s| {
        s.compact(
            "The user asked for a --verbose flag. It was added in src/cli.rs; a failing test was fixed.",
            3,
        )
    });
    record(&mut |s| s.user_message("Continue the rename."));
    record(&mut |s| {
        s.assistant_turn(turn(
            vec![
                (
                    "",
                    vec![call(
                        "call_5a",
                        "edit_file",
                        json!({"path": "src/main.rs", "old": "verbose", "new": "loud"}),
                        "ok",
                        None,
                    )],
                ),
                (
                    "Renamed everywhere;",
                    vec![call(
                        "call_5b",
                        "bash",
                        json!({"command": "cargo clippy -- -D warnings"}),
                        "warning: unused variable `v`\nerror: could not compile",
                        Some(1),
                    )],
                ),
                (" clippy reports one warning in `src/main.rs`.", vec![]),
            ],
            true,
            false,
        ))
    });
    s
}
