//! Tests that run the `agent-memory` binary and snapshot what it prints: stdout, stderr and
//! the exit code, with the temporary folder's path shown as `[TMP]`.
//!
//! Every run with `--json` is checked against the JSON contract on the way: its stdout
//! against the committed schema of the command's output (`src/commands/outputs.rs` says
//! which), and on failure its stderr against the error schema.

mod browser;
mod check;
mod contract;
mod database;
mod demo;
mod errors;
mod imports;
mod mcp;
mod mcp_stdio;
mod notes;
mod races;
mod recording;
mod stats;
mod tour;
mod trajectory;
mod turns;
mod ui;

use std::path::Path;
use std::process::Command;

/// The PostgreSQL database of the tests, as a `--db` URL in a schema of its own named after
/// `name`: from `AGENT_MEMORY_TEST_POSTGRES` (`cargo xtask ci` starts a server and sets it).
/// `None`, after saying so, when it is not set outside CI; with `CI=true` a missing server
/// fails the test.
pub(crate) fn postgres_url(name: &str) -> Option<String> {
    let var = "AGENT_MEMORY_TEST_POSTGRES";
    let Some(url) = std::env::var(var).ok().filter(|url| !url.is_empty()) else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !ci,
            "{var} is not set: with CI=true the PostgreSQL tests need a server"
        );
        eprintln!("{var} is not set: skipping the PostgreSQL tests");
        return None;
    };
    assert!(
        url.starts_with("postgres://") || url.starts_with("postgresql://"),
        "{var} must be a postgres:// URL for the command-line tests, not {url:?}"
    );
    let schema = format!("cli_{name}_{}", std::process::id());
    let join = if url.contains('?') { '&' } else { '?' };
    Some(format!("{url}{join}schema={schema}"))
}
/// Which schema each command's `--json` output follows; shared with the binary.
#[path = "../../src/commands/outputs.rs"]
#[allow(dead_code)]
mod outputs;

/// A temporary folder to run the binary in.
pub(crate) struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    pub(crate) fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Copies `tests/data/<name>` into the sandbox, under the same name.
    pub(crate) fn fixture(&self, name: &str) -> &Sandbox {
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name);
        std::fs::copy(&from, self.path().join(name))
            .unwrap_or_else(|e| panic!("copy fixture {}: {e}", from.display()));
        self
    }

    /// Runs `agent-memory args...` and checks it exited with `code`.
    pub(crate) fn expect(&self, code: i32, args: &[&str]) -> Run {
        let run = self.run(args, &[]);
        assert_eq!(
            run.code,
            Some(code),
            "agent-memory {}\n{run}",
            args.join(" ")
        );
        run
    }

    /// Runs `agent-memory args...` in the sandbox with `stdin` as its standard input.
    pub(crate) fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Run {
        use std::io::Write;
        let mut child = Command::new(env!("CARGO_BIN_EXE_agent-memory"))
            .args(args)
            .env_remove("AGENT_MEMORY_DB")
            .current_dir(self.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run agent-memory");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("write stdin");
        let output = child.wait_with_output().expect("wait");
        let root = self.path().display().to_string();
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).replace(&root, "[TMP]");
        let run = Run {
            code: output.status.code(),
            stdout: text(&output.stdout),
            stderr: text(&output.stderr),
        };
        check_contract(args, &run);
        run
    }

    /// Runs `agent-memory args...` in the sandbox, with `env` set and no
    /// `AGENT_MEMORY_DB` inherited from the caller.
    pub(crate) fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let output = Command::new(env!("CARGO_BIN_EXE_agent-memory"))
            .args(args)
            .env_remove("AGENT_MEMORY_DB")
            .envs(env.iter().copied())
            .current_dir(self.path())
            .output()
            .expect("run agent-memory");
        let root = self.path().display().to_string();
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).replace(&root, "[TMP]");
        let run = Run {
            code: output.status.code(),
            stdout: text(&output.stdout),
            stderr: text(&output.stderr),
        };
        check_contract(args, &run);
        run
    }
}

/// What one run of the binary did.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let code = self.code.map_or("killed".to_owned(), |c| c.to_string());
        write!(
            f,
            "exit code: {code}\n--- stdout\n{}--- stderr\n{}",
            self.stdout, self.stderr
        )
    }
}

/// Checks `document` against the committed schema `schemas/<name>.json`, failing with every
/// violation; returns the document for further checks.
pub(crate) fn conforms(name: &str, document: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../schemas")
        .join(format!("{name}.json"));
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read schema {}: {e}", path.display())),
    )
    .expect("schema is JSON");
    let value: serde_json::Value = serde_json::from_str(document)
        .unwrap_or_else(|e| panic!("output is not JSON ({e}):\n{document}"));
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}\n{document}");
    value
}

/// The words of the command `args` runs (`["browser", "run", "start"]`), as
/// `commands/outputs.rs` names it, and the schema of its `--json` output; `None` when the
/// arguments name no command (a usage error).
pub(crate) fn command_of(args: &[&str]) -> Option<(&'static str, Option<&'static str>)> {
    // The subcommand's words, with the options that may come between them skipped: the
    // global ones and their values (`--db PATH`, `--now TIME`, browser's `--scope NAME`).
    let mut words = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "--db" | "--now" | "--scope" => {
                rest.next();
            }
            flag if flag.starts_with('-') => {}
            word => words.push(word),
        }
    }
    outputs::OUTPUTS
        .iter()
        .filter(|(command, _)| {
            let named: Vec<&str> = command.split(' ').collect();
            words.len() >= named.len() && words[..named.len()] == named[..]
        })
        .max_by_key(|(command, _)| command.len())
        .copied()
}

/// Checks a run with `--json` against the contract: stdout, when there is any, against the
/// schema of the command's output; after a failure, the last line of stderr against the
/// error schema.
fn check_contract(args: &[&str], run: &Run) {
    if !args.contains(&"--json") {
        return;
    }
    if run.code != Some(0) {
        let last = run.stderr.lines().rev().find(|l| !l.trim().is_empty());
        conforms("error", last.unwrap_or_default());
    }
    let Some((command, schema)) = command_of(args) else {
        assert_ne!(run.code, Some(0), "no known command in {args:?}\n{run}");
        return;
    };
    match schema {
        Some(schema) if !run.stdout.trim().is_empty() => {
            conforms(schema, &run.stdout);
        }
        Some(schema) => assert_ne!(
            run.code,
            Some(0),
            "`{command} --json` succeeded without printing its {schema}\n{run}"
        ),
        None => {}
    }
}

/// The harness itself: it finds the command among global options and subcommand flags, and
/// it rejects an output its schema does not describe.
#[test]
fn the_contract_harness_finds_the_command_and_rejects_a_wrong_output() {
    for (args, command) in [
        (
            &[
                "--db", "x.db", "browser", "--scope", "s", "run", "start", "--file", "-",
            ][..],
            "browser run start",
        ),
        (
            &["trajectory", "--now", "1", "recall", "--partition", "p"][..],
            "trajectory recall",
        ),
        (&["--json", "turns", "show", "a-session"][..], "turns show"),
        (&["list", "--json"][..], "list"),
    ] {
        assert_eq!(command_of(args).map(|(c, _)| c), Some(command), "{args:?}");
    }
    assert_eq!(command_of(&["--json", "nonsense"]), None);
    // The recall output used to be a bare list of patterns with `last_reinforced_ms`.
    let old = r#"[{"fingerprint": {}, "canonical_sequence": [], "confidence": 1.0,
                   "evidence_count": 1, "corroborations": 1, "contradictions": 0,
                   "last_reinforced_ms": 0}]"#;
    let rejected = std::panic::catch_unwind(|| conforms("trajectory_recall.output", old));
    assert!(rejected.is_err(), "the old recall output must not conform");
    let error = r#"{"error": {"kind": "not_found", "message": "m"}}"#;
    assert_eq!(conforms("error", error)["error"]["kind"], "not_found");
}
