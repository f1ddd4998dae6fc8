//! `agent-memory notes` and the MCP tool `notes`: the memory tool's commands from the command
//! line and from an MCP client answer with the same texts; `list` shows note scopes and
//! `forget --scope` erases their text from the file.

use serde_json::json;

use crate::mcp::{call, call_error, stdio_client};
use crate::{Sandbox, conforms};

#[test]
fn help_lists_the_notes_commands() {
    let sandbox = Sandbox::new();
    insta::assert_snapshot!(sandbox.run(&["notes", "--help"], &[]));
}

#[test]
fn the_commands_answer_with_the_memory_tools_texts() {
    let sandbox = Sandbox::new();
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "notes",
                "create",
                "/memories/plan.md",
                "--text",
                "step one\nstep two\n",
            ],
            "File created successfully at: /memories/plan.md\n",
        ),
        (
            &["notes", "view", "/memories/plan.md"],
            "Here's the content of /memories/plan.md with line numbers:\n     1\tstep one\n     2\tstep two\n     3\t\n",
        ),
        (
            &["notes", "view", "/memories/plan.md", "--range", "2", "-1"],
            "Here's the content of /memories/plan.md with line numbers:\n     2\tstep two\n     3\t\n",
        ),
        (
            &[
                "notes",
                "str-replace",
                "/memories/plan.md",
                "--old",
                "step two",
                "--new",
                "step 2",
            ],
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tstep one\n     2\tstep 2\n     3\t\n",
        ),
        (
            &[
                "notes",
                "insert",
                "/memories/plan.md",
                "--line",
                "0",
                "--text",
                "# Plan",
            ],
            "The file /memories/plan.md has been edited.\n",
        ),
        (
            &["notes", "search", "STEP"],
            "Found 1 file(s) in /memories containing `STEP` (matching lines as path:line):\n/memories/plan.md:2:\tstep one\n/memories/plan.md:3:\tstep 2\n",
        ),
        (
            &[
                "notes",
                "rename",
                "/memories/plan.md",
                "/memories/done/plan.md",
            ],
            "Successfully renamed /memories/plan.md to /memories/done/plan.md\n",
        ),
        (
            &["notes", "view"],
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n23B\t/memories\n23B\t/memories/done/\n23B\t/memories/done/plan.md\n",
        ),
        (
            &["notes", "--scope", "other", "view"],
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories\n",
        ),
        (
            &["notes", "delete", "/memories/done"],
            "Successfully deleted /memories/done\n",
        ),
    ];
    for (args, expected) in cases {
        let run = sandbox.expect(0, args);
        assert_eq!(run.stdout, *expected, "{}", args.join(" "));
    }
    let json = sandbox.expect(0, &["notes", "view", "--json"]);
    let value = conforms("notes.output", &json.stdout);
    assert_eq!(value["scope"], "default");
    let missing = sandbox.expect(1, &["notes", "delete", "/memories/done"]);
    assert_eq!(
        missing.stderr,
        "error: The path /memories/done does not exist\n"
    );
    let escape = sandbox.expect(1, &["notes", "view", "/memories/../etc/passwd"]);
    assert_eq!(
        escape.stderr,
        "error: invalid path \"/memories/../etc/passwd\": must not contain .. (it would escape /memories)\n"
    );
    let stdin = sandbox.run_with_stdin(
        &[
            "notes",
            "create",
            "/memories/from-stdin.md",
            "--text-file",
            "-",
        ],
        "piped\n",
    );
    assert_eq!(stdin.code, Some(0), "{stdin}");
}

#[test]
fn list_shows_note_scopes_and_forget_erases_them() {
    const CANARY: &str = "canary-cli-notes-81c2";
    let sandbox = Sandbox::new();
    sandbox.expect(0, &["notes", "create", "/memories/a.md", "--text", "kept"]);
    sandbox.expect(
        0,
        &[
            "notes",
            "--scope",
            "doomed",
            "create",
            "/memories/s.md",
            "--text",
            CANARY,
        ],
    );
    let list = sandbox.expect(0, &["list"]);
    let (_, notes) = list.stdout.split_once("\nnotes:\n").expect("a notes table");
    let rows: Vec<Vec<&str>> = notes
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 3, "{}", list.stdout);
    assert_eq!(rows[0], ["scope", "notes", "size", "last", "write"]);
    for (row, (scope, size)) in rows[1..].iter().zip([("default", "4"), ("doomed", "21")]) {
        assert_eq!(row[..4], [scope, "1", size, "B"], "{}", list.stdout);
        chrono::DateTime::parse_from_rfc3339(row[4]).expect("the last write, RFC 3339");
    }
    let json = sandbox.expect(0, &["list", "--json"]);
    let mut value = conforms("memory_list.output", &json.stdout);
    // Each scope's last write is the store's clock's, at its write.
    for scope in value["note_scopes"].as_array_mut().expect("scopes") {
        let last = scope
            .as_object_mut()
            .and_then(|s| s.remove("last_write"))
            .expect("a last write");
        chrono::DateTime::parse_from_rfc3339(last.as_str().expect("text")).expect("RFC 3339");
    }
    assert_eq!(
        value["note_scopes"],
        json!([
            {"scope": "default", "notes": 1, "bytes": 4},
            {"scope": "doomed", "notes": 1, "bytes": 21}
        ])
    );
    let forgot = sandbox.expect(0, &["forget", "--scope", "doomed", "--json"]);
    assert_eq!(conforms("memory_forget.output", &forgot.stdout)["notes"], 1);
    let bytes = std::fs::read(sandbox.path().join("agent-memory.db")).expect("db");
    let wal = std::fs::read(sandbox.path().join("agent-memory.db-wal")).unwrap_or_default();
    for file in [&bytes, &wal] {
        assert!(
            !file.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()),
            "the forgotten note's text is still in the database"
        );
    }
    let json = sandbox.expect(0, &["list", "--json"]);
    let listed = conforms("memory_list.output", &json.stdout);
    let scopes = listed["note_scopes"].as_array().expect("scopes");
    assert_eq!(scopes.len(), 1, "{listed}");
    assert_eq!(
        (
            &scopes[0]["scope"],
            &scopes[0]["notes"],
            &scopes[0]["bytes"]
        ),
        (&json!("default"), &json!(1), &json!(4))
    );
}

#[tokio::test]
async fn the_mcp_tool_takes_the_memory_tools_input_and_answers_as_the_command_line() {
    let sandbox = Sandbox::new();
    let db = sandbox.path().join("agent-memory.db");
    let client = stdio_client(&db).await;
    let created = call(
        &client,
        "notes",
        json!({"command": "create", "path": "/memories/prefs.txt", "file_text": "Favorite color: blue\n"}),
    )
    .await;
    assert_eq!(
        created["text"],
        "File created successfully at: /memories/prefs.txt"
    );
    let edited = call(
        &client,
        "notes",
        json!({"command": "str_replace", "path": "/memories/prefs.txt",
               "old_str": "blue", "new_str": "green"}),
    )
    .await;
    assert!(
        edited["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("The memory file has been edited.")
    );
    let viewed = call(
        &client,
        "notes",
        json!({"command": "view", "path": "/memories/prefs.txt", "view_range": [1, 1]}),
    )
    .await;
    assert_eq!(
        viewed["text"],
        "Here's the content of /memories/prefs.txt with line numbers:\n     1\tFavorite color: green"
    );
    let secret = call(
        &client,
        "notes",
        json!({"command": "insert", "path": "/memories/prefs.txt", "insert_line": 1,
               "insert_text": "token: tok-9f8e7d6c", "secrets": {"api_token": "tok-9f8e7d6c"}}),
    )
    .await;
    assert_eq!(
        secret["text"],
        "The file /memories/prefs.txt has been edited."
    );
    let found = call(
        &client,
        "notes",
        json!({"command": "search", "query": "token"}),
    )
    .await;
    assert_eq!(found["matches"][0]["text"], "token: ${api_token}");
    let (text, body) = call_error(
        &client,
        "notes",
        json!({"command": "create", "path": "/memories/prefs.txt", "file_text": "again"}),
    )
    .await;
    assert_eq!(text, "File /memories/prefs.txt already exists");
    assert_eq!(body["kind"], "conflict");
    assert_eq!(body["input"], "/memories/prefs.txt");
    client.cancel().await.expect("close");
    let cli = sandbox.expect(
        1,
        &["notes", "create", "/memories/prefs.txt", "--text", "again"],
    );
    assert_eq!(cli.stderr, format!("error: {text}\n"));
}

/// The README's notes example, run as written: every line succeeds, and the scope it forgets
/// at the end is gone.
#[test]
fn the_readme_notes_example_runs_as_written() {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .expect("README");
    let sandbox = Sandbox::new();
    let commands = crate::tour::section_commands(&readme, "Memory for Claude and other assistants");
    assert!(commands.len() >= 8, "{commands:?}");
    for command in &commands {
        let words = crate::tour::words(command);
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let run = sandbox.run(&args, &[]);
        assert_eq!(run.code, Some(0), "README notes example: {command}\n{run}");
    }
    let list = sandbox.expect(0, &["--db", "target/notes.db", "list", "--json"]);
    assert!(
        conforms("memory_list.output", &list.stdout)
            .get("note_scopes")
            .is_none()
    );
}

/// The README's example of notes as evidence, run as written: a page's injected text is held
/// and rejected, its clean text is shown as a marked data block, the run's writes are
/// forgotten by session, and the trail records every step.
#[test]
fn the_readme_evidence_example_runs_as_written() {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .expect("README");
    let sandbox = Sandbox::new();
    let commands = crate::tour::subsection_commands(&readme, "Notes as evidence");
    assert!(commands.len() >= 8, "{commands:?}");
    let mut outputs = Vec::new();
    for command in &commands {
        let words = crate::tour::words(command);
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let run = sandbox.run(&args, &[]);
        assert_eq!(
            run.code,
            Some(0),
            "README evidence example: {command}\n{run}"
        );
        outputs.push((command.clone(), run.stdout.clone()));
    }
    let output = |needle: &str| {
        outputs
            .iter()
            .find(|(command, _)| command.contains(needle))
            .map(|(_, out)| out.clone())
            .unwrap_or_else(|| panic!("no command {needle}"))
    };
    assert!(output("create /memories/cart.md").contains("held for review"));
    assert!(output("review list").contains("\"instruction: "));
    assert!(
        output("--as-data view")
            .contains("<memory-item source=\"page:https://shop.example/cart\" trust=\"external\">")
    );
    assert!(output("note-history").contains("\"session\": \"run-7\""));
    assert!(output("note-forget-by").contains("\"versions\": 1"));
    assert!(output("review patterns").contains("action 2: instruction: "));
    assert!(output("review approve-pattern").contains("\"decision\": \"approved\""));
    let approvals = output("audit --memory trajectory");
    assert!(approvals.contains("\"total\": 1"), "{approvals}");
    assert!(
        approvals.contains("pattern task=\\\"deploy\\\""),
        "{approvals}"
    );
    let audit = output(" audit");
    for action in ["\"write\"", "\"reject\"", "\"forget\"", "\"approve\""] {
        assert!(audit.contains(action), "{action} in {audit}");
    }
    let held = sandbox.expect(0, &["--db", "target/evidence.db", "review", "list"]);
    assert!(held.stdout.contains("\"held\": []"), "{held}");
    let gone = sandbox.run(
        &[
            "--db",
            "target/evidence.db",
            "notes",
            "view",
            "/memories/price.md",
        ],
        &[],
    );
    assert_eq!(gone.code, Some(1), "{gone}");
}

/// The README's notes example prints the same on PostgreSQL (`--db postgres://...`) as on
/// the SQLite file: the two backends keep one contract.
#[test]
fn the_notes_commands_print_the_same_on_postgresql() {
    let Some(url) = crate::postgres_url("notes") else {
        return;
    };
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .expect("README");
    let sandbox = Sandbox::new();
    for command in crate::tour::section_commands(&readme, "Memory for Claude and other assistants")
    {
        let words = crate::tour::words(&command);
        let on_file: Vec<&str> = words.iter().map(String::as_str).collect();
        let on_server: Vec<&str> = on_file
            .iter()
            .map(|w| {
                if *w == "target/notes.db" {
                    url.as_str()
                } else {
                    w
                }
            })
            .collect();
        // One "now" for both, so a write's time does not differ by the second it fell in.
        let now = [("AGENT_MEMORY_NOW", "2026-01-01T00:00:00Z")];
        let file = sandbox.run(&on_file, &now);
        let server = sandbox.run(&on_server, &now);
        assert_eq!(file.code, Some(0), "{command}\n{file}");
        assert_eq!(server.stdout, file.stdout, "{command}");
    }
}

/// `note-export` prints a document `note-import --input FILE` writes into another store:
/// the same notes, versions and writers.
#[test]
fn notes_export_and_import_into_another_database() {
    let sandbox = Sandbox::new();
    for args in [
        vec![
            "notes",
            "--session",
            "s1",
            "create",
            "/memories/plan.md",
            "--text",
            "step one",
        ],
        vec![
            "notes",
            "--session",
            "s2",
            "str-replace",
            "/memories/plan.md",
            "--old",
            "one",
            "--new",
            "two",
        ],
    ] {
        let mut all = vec!["--db", "a.db"];
        all.extend(args);
        sandbox.expect(0, &all);
    }
    let exported = sandbox.expect(0, &["--db", "a.db", "note-export"]).stdout;
    assert!(exported.contains("\"session\": \"s2\""), "{exported}");
    std::fs::write(sandbox.path().join("notes.json"), &exported).expect("write");
    let imported = sandbox.expect(0, &["--db", "b.db", "note-import", "--input", "notes.json"]);
    assert!(imported.stdout.contains("\"versions\": 2"), "{imported}");
    let copied = sandbox.expect(0, &["--db", "b.db", "note-export"]).stdout;
    assert_eq!(copied, exported);
    let again = sandbox.run(
        &["--db", "b.db", "note-import", "--input", "notes.json"],
        &[],
    );
    assert_eq!(again.code, Some(1), "{again}");
    assert!(again.stderr.contains("already exists"), "{again}");
}
