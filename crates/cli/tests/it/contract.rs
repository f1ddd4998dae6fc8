//! The JSON contract: listing, forgetting, and errors as JSON, each output checked against its
//! committed schema.

use serde_json::json;

use crate::{Sandbox, conforms};

/// A database holding a little of every memory, written through the command line.
fn filled() -> Sandbox {
    let sandbox = Sandbox::new();
    for i in 0..3 {
        sandbox.expect(
            0,
            &[
                "trajectory",
                "record",
                "--partition",
                "team",
                "--fields",
                "task",
                "--field",
                "task=deploy",
                "--trajectory",
                "build,ship",
                "--success",
                "--now",
                &(1_767_225_600_000_i64 + i * 86_400_000).to_string(),
            ],
        );
    }
    sandbox
}

#[test]
fn list_names_every_partition_with_its_counts() {
    let sandbox = filled();
    let run = sandbox.expect(0, &["list", "--json"]);
    let list = conforms("memory_list.output", &run.stdout);
    assert_eq!(list["partitions"][0]["partition"], "team");
    assert_eq!(list["partitions"][0]["episodes"], 3);
    assert_eq!(list["partitions"][0]["fields"], serde_json::json!(["task"]));
    let text = sandbox.expect(0, &["list"]);
    assert!(text.stdout.contains("team"), "{text}");
}

/// A read of a database that does not exist yet answers as on an empty one, with a note on
/// stderr naming it (a misspelt `--db` shows there), and never creates it; a command that
/// inspects the database itself (`stats`) says it is not there.
#[test]
fn read_commands_never_create_a_database() {
    let sandbox = Sandbox::new();
    let run = sandbox.expect(0, &["--db", "typo.db", "list"]);
    assert!(run.stderr.contains("typo.db does not exist yet"), "{run}");
    assert!(!sandbox.path().join("typo.db").exists());
    let json = sandbox.expect(0, &["--db", "typo.db", "list", "--json"]);
    let list = conforms("memory_list.output", &json.stdout);
    assert_eq!(list["partitions"], serde_json::json!([]));
    for read in [
        &[
            "trajectory",
            "recall",
            "--partition",
            "team",
            "--field",
            "task=x",
            "--json",
        ][..],
        &["trajectory", "patterns", "--partition", "team", "--json"],
        &[
            "browser",
            "context",
            "--goal",
            "g",
            "--url",
            "https://shop.test/",
        ],
        &["notes", "view", "/memories"],
        &["turns", "sessions"],
    ] {
        let args: Vec<&str> = ["--db", "typo.db"].iter().chain(read).copied().collect();
        let run = sandbox.expect(0, &args);
        assert!(run.stderr.contains("does not exist yet"), "{run}");
    }
    assert!(!sandbox.path().join("typo.db").exists());
    let stats = sandbox.expect(1, &["--db", "typo.db", "stats", "--json"]);
    let error = conforms("error", stats.stderr.trim());
    assert_eq!(error["error"]["kind"], "not_found");
    assert_eq!(error["error"]["input"], "typo.db");
    assert!(!sandbox.path().join("typo.db").exists());
}

#[test]
fn usage_errors_are_json_with_exit_code_2() {
    let sandbox = Sandbox::new();
    let run = sandbox.expect(2, &["--json", "forget"]);
    let error = conforms("error", run.stderr.trim());
    assert_eq!(error["error"]["kind"], "usage");
}

#[test]
fn forget_a_partition_removes_it_and_its_text() {
    let sandbox = filled();
    let run = sandbox.expect(0, &["forget", "--partition", "team", "--json"]);
    let forgotten = conforms("memory_forget.output", &run.stdout);
    assert_eq!(forgotten["episodes"], 3);
    let list = sandbox.expect(0, &["list", "--json"]);
    assert_eq!(
        conforms("memory_list.output", &list.stdout)["partitions"],
        serde_json::json!([])
    );
    let db = std::fs::read(sandbox.path().join("agent-memory.db")).expect("db");
    assert!(
        !db.windows(b"deploy".len()).any(|w| w == b"deploy"),
        "the forgotten fingerprint value is still in the file"
    );
}

#[test]
fn forget_needs_exactly_one_target() {
    let sandbox = filled();
    let run = sandbox.expect(2, &["forget", "--partition", "team", "--session", "s"]);
    assert!(run.stderr.contains("cannot be used with"), "{run}");
    // Forgetting what is not there changes nothing and says so; it is not an error.
    let missing = sandbox.expect(0, &["forget", "--session", "nobody", "--json"]);
    let forgotten = conforms("memory_forget.output", &missing.stdout);
    assert_eq!(
        (
            forgotten["events"].as_u64(),
            forgotten["tool_logs"].as_u64()
        ),
        (Some(0), Some(0))
    );
    let text = sandbox.expect(0, &["forget", "--session", "nobody"]);
    assert!(
        text.stdout.contains("nothing stored under session:nobody"),
        "{text}"
    );
}

#[test]
fn a_run_goes_through_its_life_cycle_from_json_documents() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path().join("start.json"),
        r#"{"goal": "Buy a watch", "domain": "shop.test", "start_url": "https://shop.test/", "run_id": "run-1"}"#,
    )
    .expect("write");
    let started = sandbox.expect(
        0,
        &[
            "browser",
            "run",
            "start",
            "--file",
            "start.json",
            "--json",
            "--now",
            "1767225600000",
        ],
    );
    let manifest = conforms("browser_run.output", &started.stdout);
    assert_eq!(manifest["status"], "running");
    assert_eq!(manifest["started_at"], "2026-01-01T00:00:00.000Z");
    // From stdin.
    let updated = sandbox.run_with_stdin(
        &["browser", "run", "update", "--file", "-", "--json"],
        r#"{"run_id": "run-1", "turn_count": 3, "current_url": "https://shop.test/cart"}"#,
    );
    assert_eq!(updated.code, Some(0), "{updated}");
    assert_eq!(
        conforms("browser_run.output", &updated.stdout)["turn_count"],
        3
    );
    std::fs::write(
        sandbox.path().join("done.json"),
        r#"{"run_id": "run-1", "success": true, "turn_count": 5, "summary": "bought"}"#,
    )
    .expect("write");
    let done = sandbox.expect(
        0,
        &[
            "browser",
            "run",
            "complete",
            "--file",
            "done.json",
            "--json",
        ],
    );
    let manifest = conforms("browser_run.output", &done.stdout);
    assert_eq!(manifest["status"], "completed");
    assert_eq!(manifest["success"], true);
    let runs = sandbox.expect(0, &["browser", "runs"]);
    assert!(runs.stdout.contains("run-1"), "{runs}");
    // Starting it again the same way (a retry) changes nothing and shows the run as it is.
    let again = sandbox.expect(
        0,
        &["browser", "run", "start", "--file", "start.json", "--json"],
    );
    assert_eq!(conforms("browser_run.output", &again.stdout), manifest);
    // Starting it with another goal is refused, naming the run; the completed run stays.
    let other = sandbox.run_with_stdin(
        &["browser", "run", "start", "--file", "-", "--json"],
        r#"{"goal": "Sell a watch", "domain": "shop.test", "start_url": "https://shop.test/", "run_id": "run-1"}"#,
    );
    assert_eq!(other.code, Some(1), "{other}");
    let error = conforms("error", other.stderr.trim());
    assert_eq!(
        (
            error["error"]["kind"].as_str(),
            error["error"]["input"].as_str()
        ),
        (Some("conflict"), Some("run-1"))
    );
    assert_eq!(
        error["error"]["message"],
        "conflict on run \"run-1\": already started (completed) with another goal; start a run with a new id"
    );
    let kept = sandbox.run_with_stdin(
        &["browser", "run", "update", "--file", "-", "--json"],
        r#"{"run_id": "run-1"}"#,
    );
    let kept = conforms("browser_run.output", &kept.stdout);
    assert_eq!(
        (
            kept["status"].clone(),
            kept["success"].clone(),
            kept["turn_count"].clone(),
            kept["goal"].clone()
        ),
        (
            json!("completed"),
            json!(true),
            json!(5),
            json!("Buy a watch")
        )
    );
}

#[test]
fn a_bad_run_document_names_the_file_line_and_column() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path().join("start.json"), "{\n  \"goal\": 3\n}").expect("write");
    let run = sandbox.expect(
        1,
        &["browser", "run", "start", "--file", "start.json", "--json"],
    );
    let error = conforms("error", run.stderr.trim());
    assert_eq!(error["error"]["kind"], "invalid_input");
    assert_eq!(error["error"]["input"], "start.json");
    let message = error["error"]["message"].as_str().expect("message");
    assert!(message.starts_with("start.json:2:"), "{message}");
    let unknown = sandbox.expect(1, &["browser", "run", "update", "--file", "start.json"]);
    assert!(unknown.stderr.contains("start.json"), "{unknown}");
}

#[test]
fn errors_say_what_was_not_found_whichever_memory_raised_them() {
    let sandbox = filled();
    let session = sandbox.expect(1, &["turns", "show", "nobody", "--json"]);
    let error = conforms("error", session.stderr.trim());
    assert_eq!(
        (
            error["error"]["kind"].as_str(),
            error["error"]["input"].as_str()
        ),
        (Some("not_found"), Some("nobody"))
    );
    let run = sandbox.expect(1, &["browser", "resume", "nope", "--json"]);
    let error = conforms("error", run.stderr.trim());
    assert_eq!(
        (
            error["error"]["kind"].as_str(),
            error["error"]["input"].as_str()
        ),
        (Some("not_found"), Some("nope"))
    );
    // A partition nothing was recorded in is no error: it recalls nothing, saying why.
    let partition = sandbox.expect(
        0,
        &[
            "trajectory",
            "recall",
            "--partition",
            "elsewhere",
            "--field",
            "task=x",
            "--json",
        ],
    );
    let empty = conforms("trajectory_recall.output", partition.stdout.trim());
    assert_eq!(empty["patterns"], serde_json::json!([]));
    assert_eq!(
        empty["note"],
        "partition elsewhere holds nothing yet (nothing was recorded in it)"
    );
}

/// A run recorded with `browser record` gives the next run the same context as the same run
/// recorded through the library: session history, reference trajectory, app knowledge and
/// known selectors.
#[test]
fn browser_record_stores_what_the_library_stores() {
    use agent_memory_browser::{BrowserMemory, RunReport, Turn};
    use agent_memory_core::{ManualClock, Scope, SeededIds, Timestamp};

    let sandbox = Sandbox::new();
    let now = "1767225600000";
    let turn = |url: &str, action: &str| Turn {
        url: url.to_owned(),
        action: action.to_owned(),
        verified: true,
        duration_ms: 800,
        ..Turn::default()
    };
    {
        let store = agent_memory_sqlite::SqliteStore::open(sandbox.path().join("library.db"))
            .expect("open");
        let memory = BrowserMemory::new(
            &store,
            Scope::shared(),
            ManualClock::new(Timestamp::from_millis(1_767_225_600_000)),
            SeededIds::new(7),
        );
        memory
            .record_run(
                &RunReport::new("Add Smart Watch X to the cart", "https://shop.example.com/")
                    .with_turns(vec![
                        turn(
                            "https://shop.example.com/",
                            r##"{"action":"type","selector":"#search","text":"Smart Watch X"}"##,
                        ),
                        turn(
                            "https://shop.example.com/search?q=watch",
                            r##"{"action":"click","selector":"#add-to-cart"}"##,
                        ),
                    ])
                    .with_success(true)
                    .with_outcome("Smart Watch X is in the cart")
                    .with_selectors(vec![("search box".to_owned(), "#search".to_owned())]),
            )
            .expect("record through the library");
    }
    std::fs::write(
        sandbox.path().join("run.json"),
        r##"{"goal": "Add Smart Watch X to the cart", "start_url": "https://shop.example.com/",
            "success": true, "outcome": "Smart Watch X is in the cart",
            "turns": [
              {"url": "https://shop.example.com/", "verified": true, "duration_ms": 800,
               "action": "{\"action\":\"type\",\"selector\":\"#search\",\"text\":\"Smart Watch X\"}"},
              {"url": "https://shop.example.com/search?q=watch", "verified": true, "duration_ms": 800,
               "action": "{\"action\":\"click\",\"selector\":\"#add-to-cart\"}"}
            ],
            "selectors": [{"element": "search box", "selector": "#search"}]}"##,
    )
    .expect("write");
    sandbox.expect(
        0,
        &[
            "--db", "cli.db", "--now", now, "browser", "record", "--file", "run.json",
        ],
    );
    let context = |db: &str| {
        let run = sandbox.expect(
            0,
            &[
                "--db",
                db,
                "--now",
                now,
                "browser",
                "context",
                "--goal",
                "add smart watch x to the cart",
                "--url",
                "https://shop.example.com/",
            ],
        );
        // The trajectory and session ids are random on either side; the rest must agree.
        run.stdout
    };
    let (library, cli) = (context("library.db"), context("cli.db"));
    for part in [
        "SESSION HISTORY",
        "REFERENCE TRAJECTORY",
        "#add-to-cart",
        "search box",
    ] {
        assert!(
            library.contains(part),
            "{part} missing from the library's context:\n{library}"
        );
    }
    assert_eq!(cli, library);
}

/// The commands no other test runs with `--json`, each run once with it: the harness checks
/// every output against the schema `commands/outputs.rs` names for it.
#[test]
fn the_remaining_commands_print_what_their_schemas_describe() {
    let sandbox = Sandbox::new();
    let now = ["--now", "1767225600000"];
    let json = |args: &[&str]| {
        let mut all = vec!["--json"];
        all.extend_from_slice(&now);
        all.extend_from_slice(args);
        sandbox.expect(0, &all)
    };
    let recorded = json(&[
        "trajectory",
        "record",
        "--partition",
        "team",
        "--fields",
        "task",
        "--field",
        "task=deploy",
        "--trajectory",
        "build,ship",
        "--success",
    ]);
    assert!(recorded.stdout.contains("\"episodes\": 1"), "{recorded}");
    json(&["trajectory", "crystallize", "--partition", "team"]);
    json(&["trajectory", "patterns", "--partition", "team"]);
    std::fs::write(
        sandbox.path().join("run.json"),
        r##"{"goal": "Buy a watch", "start_url": "https://shop.test/", "success": true,
            "run_id": "run-1", "session_id": "s-1",
            "turns": [{"url": "https://shop.test/", "action": {"action": "click", "selector": "#buy"}, "verified": true, "duration_ms": 5}]}"##,
    )
    .expect("write");
    json(&["browser", "record", "--file", "run.json"]);
    let resumed = json(&["browser", "resume", "run-1"]);
    assert!(
        resumed.stdout.contains("\"parent_run_id\": \"run-1\""),
        "{resumed}"
    );
    json(&["browser", "fork", "run-1", "--goal", "Buy a cheaper watch"]);
    json(&["browser", "export", "exported"]);
    let events = [
        r#"{"type": "session_started", "session": "live", "started_at": 1767225600000}"#,
        r#"{"type": "user_message", "text": "Make the tests pass."}"#,
    ];
    let appended = sandbox.run_with_stdin(
        &[
            "--json",
            "turns",
            "append",
            "--session",
            "live",
            "--file",
            "-",
        ],
        &(events.join("\n") + "\n"),
    );
    assert_eq!(appended.code, Some(0), "{appended}");
    let sessions = json(&["turns", "sessions"]);
    assert!(sessions.stdout.contains("\"live\""), "{sessions}");
    // A provider's request, inside the contract's document.
    let shown = json(&["turns", "show", "live", "--format", "anthropic"]);
    let shown: serde_json::Value = serde_json::from_str(&shown.stdout).expect("json");
    assert_eq!(shown["format"], "anthropic", "{shown}");
    assert!(shown["request"]["messages"].is_array(), "{shown}");
    let raw = sandbox.expect(0, &["turns", "show", "live", "--format", "anthropic"]);
    let raw: serde_json::Value = serde_json::from_str(&raw.stdout).expect("json");
    assert_eq!(raw, shown["request"], "without --json, the request itself");
    let log = r#"{"toolName": "tapOn", "parameters": {"text": "Buy"}, "successful": true, "durationMs": 4, "timestamp": 1000}"#;
    let logs = sandbox.run_with_stdin(
        &[
            "--json",
            "recording",
            "append",
            "--session",
            "run",
            "--file",
            "-",
        ],
        &format!("{log}\n"),
    );
    assert_eq!(logs.code, Some(0), "{logs}");
    sandbox.fixture("sign-in.trail.yaml");
    let formatted = json(&["recording", "fmt", "sign-in.trail.yaml"]);
    assert!(
        formatted.stdout.contains("sign-in.trail.yaml"),
        "{formatted}"
    );
}

#[test]
fn a_browser_action_that_is_not_a_json_object_is_refused_before_anything_is_stored() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path().join("run.json"),
        r##"{"goal": "Buy a watch", "start_url": "https://shop.test/", "success": true,
            "turns": [{"url": "https://shop.test/", "action": {"action": "click", "selector": "#buy"}},
                      {"url": "https://shop.test/", "action": "click the buy button"}]}"##,
    )
    .expect("write");
    let run = sandbox.expect(1, &["--json", "browser", "record", "--file", "run.json"]);
    let error = conforms("error", run.stderr.trim());
    assert_eq!(error["error"]["kind"], "invalid_input", "{run}");
    assert_eq!(error["error"]["input"], "turns[1].action", "{run}");
    let message = error["error"]["message"].as_str().expect("message");
    assert!(message.contains("not JSON"), "{run}");
    // Nothing was stored, so what is stored still exports.
    let runs = sandbox.expect(0, &["--json", "browser", "runs"]);
    let runs: serde_json::Value = serde_json::from_str(&runs.stdout).expect("json");
    assert_eq!(runs["runs"], serde_json::json!([]), "{runs}");
    sandbox.expect(0, &["browser", "export", "exported"]);
}

#[test]
fn an_unreachable_server_is_a_database_error_naming_it_without_its_password() {
    let sandbox = Sandbox::new();
    // Port 1 on loopback refuses at once; the URL's connect_timeout bounds the wait.
    let url = "postgres://agent:hunter2@127.0.0.1:1/memory?connect_timeout=1";
    let run = sandbox.expect(1, &["--db", url, "--json", "list"]);
    let error = conforms("error", run.stderr.trim());
    assert_eq!(error["error"]["kind"], "database", "{run}");
    assert_eq!(
        error["error"]["input"], "postgres://agent:***@127.0.0.1:1/memory?connect_timeout=1",
        "{run}"
    );
    assert!(!run.stderr.contains("hunter2"), "{run}");
    assert!(run.stderr.contains("127.0.0.1:1/memory"), "{run}");
}

/// No form a connection string allows shows any part of its credentials, with `--json` or
/// without: a password in the userinfo (raw `/`, `?`, `#`, or percent-encoded), or as a
/// `password`, `sslpassword` or `passfile` parameter in any case or encoding.
#[test]
fn no_form_of_a_connection_string_shows_its_credentials() {
    let sandbox = Sandbox::new();
    for url in [
        "postgres://agent:Xq7%2FZk9@127.0.0.1:1/memory?connect_timeout=1",
        "postgres://agent:Xq7/Zk9@127.0.0.1:1/memory?connect_timeout=1",
        "postgres://agent:Xq7?Zk9@127.0.0.1:1/memory?connect_timeout=1",
        "postgres://agent:Xq7#Zk9@127.0.0.1:1/memory?connect_timeout=1",
        "postgres://agent:Xq7%40Zk9@127.0.0.1:1/memory?connect_timeout=1",
        "postgres://agent@127.0.0.1:1/memory?password=Xq7Zk9&connect_timeout=1",
        "postgres://agent@127.0.0.1:1/memory?connect_timeout=1&pass%77ord=Xq7%2FZk9",
        "postgresql://agent@127.0.0.1:1/memory?connect_timeout=1&PASSWORD=Xq7Zk9",
        "postgres://agent@127.0.0.1:1/memory?connect_timeout=1&sslpassword=Xq7Zk9",
        "postgres://agent@127.0.0.1:1/memory?connect_timeout=1&passfile=/Xq7/Zk9",
    ] {
        for json in [true, false] {
            let mut args = vec!["--db", url, "list"];
            if json {
                args.push("--json");
            }
            let run = sandbox.expect(1, &args);
            let lower = run.stderr.to_lowercase();
            assert!(
                !lower.contains("xq7") && !lower.contains("zk9"),
                "{url}: {run}"
            );
            if json {
                let error = conforms("error", run.stderr.trim());
                let input = error["error"]["input"].as_str().unwrap_or_default();
                assert!(input.contains("127.0.0.1:1/memory"), "{url}: {run}");
            }
        }
    }
}

/// The command line reads the files its user names, but no more of one than a request body
/// may hold: a device that never ends fails at once, naming the limit. (The shell bounds the
/// process's memory, so a reader without a limit fails rather than eat the machine's.)
#[test]
fn a_file_without_end_fails_at_the_size_limit() {
    let sandbox = Sandbox::new();
    for command in [
        "recording lint /dev/zero",
        "trajectory record --partition p --file /dev/zero",
    ] {
        let output = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("ulimit -v 4000000 && exec \"$0\" {command} --json"),
                env!("CARGO_BIN_EXE_agent-memory"),
            ])
            .env_remove("AGENT_MEMORY_DB")
            .current_dir(sandbox.path())
            .output()
            .expect("run agent-memory");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{command}: {stderr}");
        let error = conforms("error", stderr.trim());
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("4 MiB"), "{command}: {message}");
        assert_eq!(error["error"]["input"], "/dev/zero", "{command}: {stderr}");
    }
}
