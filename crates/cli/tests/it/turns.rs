//! `agent-memory turns show | compact | import`, on the session logs of `tests/data/`.

use agent_memory_core::{SessionId, SessionStore};
use agent_memory_sqlite::SqliteStore;

use crate::Sandbox;

const LOG: &str = "verbose-flag.session.jsonl";

fn stored_events(sandbox: &Sandbox, session: &str) -> usize {
    let store = SqliteStore::open(sandbox.path().join("memory.db")).expect("open");
    store
        .session_load(&SessionId::new(session).expect("id"))
        .map_or(0, |events| events.len())
}

/// A sandbox whose `memory.db` holds the `verbose-flag` session.
fn imported() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOG);
    sandbox.expect(0, &["--db", "memory.db", "turns", "import", LOG]);
    sandbox
}

#[test]
fn show_a_log_file_in_each_view_and_format() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOG);
    for (name, extra) in [
        ("ui_text", &[][..]),
        ("model_text", &["--view", "model"][..]),
        ("openai", &["--format", "openai"][..]),
        (
            "responses",
            &["--format", "responses", "--view", "model"][..],
        ),
        ("genkit", &["--format", "genkit"][..]),
        ("ui_json", &["--json"][..]),
        ("model_json", &["--json", "--view", "model"][..]),
    ] {
        let mut args = vec!["turns", "show", "--log", LOG];
        args.extend(extra);
        insta::assert_snapshot!(name, sandbox.expect(0, &args));
    }
    assert!(
        !sandbox.path().join(".agent-memory").exists(),
        "a log file needs no database"
    );
}

#[test]
fn the_ui_view_never_shows_memory() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOG);
    let ui = sandbox.expect(0, &["turns", "show", "--log", LOG]);
    let model = sandbox.expect(0, &["turns", "show", "--log", LOG, "--view", "model"]);
    assert!(!ui.stdout.contains("Tool memory"), "{ui}");
    assert!(model.stdout.contains("Tool memory"), "{model}");
}

#[test]
fn fewer_recent_memories_leave_older_ones_out_of_the_model_view() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOG);
    let run = sandbox.expect(
        0,
        &[
            "turns",
            "show",
            "--log",
            LOG,
            "--view",
            "model",
            "--recent-memories",
            "1",
        ],
    );
    assert_eq!(run.stdout.matches("Tool memory").count(), 1, "{run}");
    assert!(run.stdout.contains("README.md"), "{run}");
}

#[test]
fn import_then_show_from_the_database() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOG);
    insta::assert_snapshot!(
        "import_text",
        sandbox.expect(0, &["--db", "memory.db", "turns", "import", LOG])
    );
    assert_eq!(stored_events(&sandbox, "verbose-flag"), 9);
    let from_db = sandbox.expect(
        0,
        &[
            "--db",
            "memory.db",
            "turns",
            "show",
            "verbose-flag",
            "--format",
            "openai",
        ],
    );
    let from_file = sandbox.expect(0, &["turns", "show", "--log", LOG, "--format", "openai"]);
    assert_eq!(from_db.stdout, from_file.stdout);
}

#[test]
fn import_as_json_and_twice() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOG);
    let run = sandbox.expect(0, &["--json", "--db", "memory.db", "turns", "import", LOG]);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(
        json,
        serde_json::json!({"session": "verbose-flag", "events": 9, "turns": 4, "already_imported": false}),
        "{run}"
    );
    insta::assert_snapshot!(sandbox.expect(0, &["--db", "memory.db", "turns", "import", LOG]));
    assert_eq!(stored_events(&sandbox, "verbose-flag"), 9);
}

#[test]
fn compact_a_stored_session_keeps_the_memories() {
    let sandbox = imported();
    let run = sandbox.expect(
        0,
        &[
            "--db",
            "memory.db",
            "turns",
            "compact",
            "verbose-flag",
            "--summary",
            "Added --verbose and -v; the tests pass.",
            "--keep-last",
            "1",
        ],
    );
    insta::assert_snapshot!("compact_text", run);
    assert_eq!(stored_events(&sandbox, "verbose-flag"), 10);
    insta::assert_snapshot!(
        "model_view_after",
        sandbox.expect(
            0,
            &[
                "--db",
                "memory.db",
                "turns",
                "show",
                "verbose-flag",
                "--view",
                "model"
            ]
        )
    );
}

#[test]
fn compact_a_log_file_as_json() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOG);
    let run = sandbox.expect(
        0,
        &[
            "--json",
            "turns",
            "compact",
            "--log",
            LOG,
            "--summary",
            "Done.",
        ],
    );
    insta::assert_snapshot!(run);
    let log = std::fs::read_to_string(sandbox.path().join(LOG)).expect("read");
    assert!(
        log.lines()
            .last()
            .is_some_and(|l| l.starts_with(r#"{"type":"compaction_applied""#)),
        "{log}"
    );
}

#[test]
fn compact_with_too_few_turns() {
    let sandbox = imported();
    insta::assert_snapshot!(sandbox.expect(
        1,
        &[
            "--db",
            "memory.db",
            "turns",
            "compact",
            "verbose-flag",
            "--summary",
            "x",
            "--keep-last",
            "4"
        ]
    ));
    assert_eq!(
        stored_events(&sandbox, "verbose-flag"),
        9,
        "nothing written"
    );
}

#[test]
fn compact_needs_a_summary() {
    let sandbox = imported();
    let run = sandbox.expect(
        2,
        &["--db", "memory.db", "turns", "compact", "verbose-flag"],
    );
    assert!(run.stderr.contains("--summary <SUMMARY>"), "{run}");
}

#[test]
fn an_unknown_session() {
    let sandbox = Sandbox::new();
    // A database that holds other things, but not this session.
    drop(agent_memory_sqlite::SqliteStore::open(sandbox.path().join("memory.db")).expect("create"));
    insta::assert_snapshot!(
        "unknown_session_show",
        sandbox.expect(1, &["--db", "memory.db", "turns", "show", "nobody"])
    );
    insta::assert_snapshot!(
        "unknown_session_compact",
        sandbox.expect(
            1,
            &[
                "--db",
                "memory.db",
                "turns",
                "compact",
                "nobody",
                "--summary",
                "x"
            ]
        )
    );
}

#[test]
fn errors_name_the_log_and_the_line() {
    let sandbox = Sandbox::new();
    sandbox
        .fixture("corrupt.session.jsonl")
        .fixture("headless.session.jsonl");
    let mut errors = String::new();
    for file in [
        "corrupt.session.jsonl",
        "headless.session.jsonl",
        "absent.session.jsonl",
    ] {
        errors.push_str(&sandbox.expect(1, &["turns", "show", "--log", file]).stderr);
        errors.push_str(
            &sandbox
                .expect(1, &["--db", "memory.db", "turns", "import", file])
                .stderr,
        );
    }
    insta::assert_snapshot!(errors);
    let store = SqliteStore::open(sandbox.path().join("memory.db")).expect("open");
    assert_eq!(store.session_list().expect("list"), Vec::new());
}

#[test]
fn a_provider_format_with_the_ui_view_is_a_usage_error() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOG);
    insta::assert_snapshot!(sandbox.expect(
        2,
        &[
            "turns", "show", "--log", LOG, "--view", "ui", "--format", "genkit"
        ]
    ));
}

#[test]
fn show_needs_a_session_or_a_log_not_both() {
    let sandbox = Sandbox::new();
    insta::assert_snapshot!("show_neither", sandbox.expect(2, &["turns", "show"]));
    insta::assert_snapshot!(
        "show_both",
        sandbox.expect(2, &["turns", "show", "s1", "--log", LOG])
    );
    let run = sandbox.expect(2, &["turns", "show", "--log", LOG, "--format", "xml"]);
    assert!(
        run.stderr
            .contains("[possible values: text, openai, responses, genkit, anthropic, gemini]"),
        "{run}"
    );
}

#[test]
fn a_torn_last_line_is_skipped_with_a_warning() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOG);
    let path = sandbox.path().join(LOG);
    let mut text = std::fs::read_to_string(&path).expect("read");
    text.push_str(r#"{"type":"user_message","te"#);
    std::fs::write(&path, &text).expect("write");
    let run = sandbox.expect(0, &["turns", "show", "--log", LOG]);
    assert!(
        run.stdout
            .ends_with("(interrupted): I started on the README\n"),
        "{run}"
    );
    insta::assert_snapshot!(run.stderr);
    let after = std::fs::read_to_string(&path).expect("read");
    assert_eq!(after, text, "showing a log leaves it as it was");
}

#[test]
fn help_of_the_turns_commands() {
    let sandbox = Sandbox::new();
    let mut help = String::new();
    for command in ["show", "compact", "import"] {
        help.push_str(&sandbox.expect(0, &["turns", command, "--help"]).stdout);
        help.push('\n');
    }
    insta::assert_snapshot!(help);
}

/// Copies one of turn-memory's Keen session logs into the sandbox.
fn keen_log(sandbox: &Sandbox, name: &str) {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../turn-memory/tests/data/keen")
        .join(name);
    std::fs::copy(&from, sandbox.path().join(name))
        .unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
}

const KEEN: &str = "keen-current.transcript_events.jsonl";
const KEEN_OLD: &str = "keen-0.2.3.transcript_events.jsonl";

#[test]
fn show_for_anthropic_and_gemini_with_a_system_prompt() {
    let sandbox = Sandbox::new();
    sandbox.fixture(LOG);
    let prompt = "You are a careful coding agent.";
    insta::assert_snapshot!(
        "anthropic",
        sandbox.expect(
            0,
            &[
                "turns",
                "show",
                "--log",
                LOG,
                "--format",
                "anthropic",
                "--system-prompt",
                prompt,
            ]
        )
    );
    let gemini = sandbox.expect(
        0,
        &[
            "turns",
            "show",
            "--log",
            LOG,
            "--format",
            "gemini",
            "--system-prompt",
            prompt,
            "--mark-interrupted",
        ],
    );
    insta::assert_snapshot!("gemini", gemini);
    assert!(
        gemini.stdout.contains("[Response interrupted by user]"),
        "{gemini}"
    );
    let text = sandbox.expect(
        0,
        &[
            "turns",
            "show",
            "--log",
            LOG,
            "--view",
            "model",
            "--system-prompt",
            prompt,
        ],
    );
    assert!(
        text.stdout
            .starts_with("system: You are a careful coding agent.\n"),
        "{text}"
    );
}

#[test]
fn import_a_keen_log_and_show_it_as_keen_sends_it() {
    let sandbox = Sandbox::new();
    keen_log(&sandbox, KEEN);
    let run = sandbox.expect(
        0,
        &[
            "--db",
            "memory.db",
            "turns",
            "import",
            "--from",
            "keen",
            KEEN,
        ],
    );
    insta::assert_snapshot!("import_keen", run);
    assert_eq!(stored_events(&sandbox, "sess-7f3a9c"), 8);
    insta::assert_snapshot!(
        "keen_positional_model_text",
        sandbox.expect(
            0,
            &[
                "--db",
                "memory.db",
                "turns",
                "show",
                "sess-7f3a9c",
                "--view",
                "model",
                "--style",
                "positional",
            ]
        )
    );
    let json = sandbox.expect(
        0,
        &[
            "--json",
            "--db",
            "memory.db",
            "turns",
            "show",
            "sess-7f3a9c",
            "--view",
            "model",
            "--style",
            "positional",
        ],
    );
    assert!(
        json.stdout.contains("\"is_error\": true"),
        "the failed ask_user call: {json}"
    );

    keen_log(&sandbox, KEEN_OLD);
    let old = sandbox.expect(
        0,
        &[
            "--json",
            "--db",
            "memory.db",
            "turns",
            "import",
            "--from",
            "keen",
            KEEN_OLD,
        ],
    );
    let report: serde_json::Value = serde_json::from_str(&old.stdout).expect("json");
    assert_eq!(
        report,
        serde_json::json!({"session": "sess-2b81d0", "events": 8, "turns": 3, "already_imported": false}),
        "{old}"
    );
}

#[test]
fn a_keen_log_is_not_our_format() {
    let sandbox = Sandbox::new();
    keen_log(&sandbox, KEEN);
    let run = sandbox.expect(1, &["--db", "memory.db", "turns", "import", KEEN]);
    assert!(run.stderr.contains("line 1"), "{run}");
    assert_eq!(stored_events(&sandbox, "sess-7f3a9c"), 0);
}

#[test]
fn a_blank_summary_is_refused_and_a_summary_trimmed() {
    let sandbox = imported();
    let run = sandbox.expect(
        1,
        &[
            "--db",
            "memory.db",
            "turns",
            "compact",
            "verbose-flag",
            "--summary",
            "  \n ",
        ],
    );
    insta::assert_snapshot!("blank_summary", run);
    assert_eq!(
        stored_events(&sandbox, "verbose-flag"),
        9,
        "nothing written"
    );
    sandbox.expect(
        0,
        &[
            "--db",
            "memory.db",
            "turns",
            "compact",
            "verbose-flag",
            "--summary",
            "\n Added the flag.  \n",
            "--keep-last",
            "1",
        ],
    );
    let ui = sandbox.expect(0, &["--db", "memory.db", "turns", "show", "verbose-flag"]);
    assert!(ui.stdout.starts_with("summary: Added the flag.\n"), "{ui}");
}

#[test]
fn the_tool_history_setting_and_the_context_report() {
    let sandbox = imported();
    let db = ["--db", "memory.db", "turns"];
    let with = |rest: &[&'static str]| [&db[..], rest].concat();
    assert_eq!(
        sandbox
            .expect(0, &with(&["tool-history", "verbose-flag"]))
            .stdout,
        "none\n"
    );
    sandbox.expect(0, &with(&["tool-history", "verbose-flag", "full"]));
    assert_eq!(
        sandbox
            .expect(0, &with(&["tool-history", "verbose-flag"]))
            .stdout,
        "full\n"
    );
    assert_eq!(stored_events(&sandbox, "verbose-flag"), 10);
    let bad = sandbox.run(&with(&["tool-history", "verbose-flag", "all"]), &[]);
    assert_ne!(bad.code, Some(0), "{bad}");
    assert!(bad.stderr.contains("\"all\""), "{bad}");
    assert_eq!(stored_events(&sandbox, "verbose-flag"), 10);

    // The last turn ran no tool, so the policy never says to summarise, even over the
    // budget of a small window. (context window, over budget)
    for (window, over) in [("200000", false), ("4200", true)] {
        let run = sandbox.expect(
            0,
            &[
                &["--json"][..],
                &with(&["context", "verbose-flag", "--context-window", window]),
            ]
            .concat(),
        );
        let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
        assert_eq!(json["tool_history"], "full", "{run}");
        assert_eq!(json["compaction"]["reason"], "no_new_tool_turn", "{run}");
        assert_ne!(json["compaction"]["action"], "summarise", "{run}");
        let c = &json["compaction"];
        let over_budget = c["estimated_tokens"].as_u64() > c["input_budget"].as_u64();
        assert_eq!(over_budget, over, "{run}");
        let b = &json["breakdown"];
        let parts: u64 = [
            "system_prompt_tokens",
            "user_message_tokens",
            "assistant_tokens",
            "tool_result_tokens",
        ]
        .iter()
        .map(|k| b[k].as_u64().unwrap_or(0))
        .sum();
        assert_eq!(b["total_estimated"].as_u64(), Some(parts), "{run}");
    }
    let text = sandbox.expect(0, &with(&["context", "verbose-flag", "--compress"]));
    assert!(
        text.stdout
            .starts_with("session verbose-flag: tool history full\n"),
        "{text}"
    );
    assert!(text.stdout.contains("total"), "{text}");
}
