//! Which committed schema each command's `--json` output follows: one row per command of the
//! command line, named by its words (`"browser run start"`), with the file stem of its schema
//! under `schemas/`, or `None` for a command that prints no JSON document of its own.
//!
//! Commands that run an operation of the JSON contract print its output, so they share the
//! operation's schema (`trajectory recall` prints `trajectory_recall.output`); the others
//! have schemas of their own, generated from the types they print. A unit test walks clap's
//! command tree and fails on a command missing here, and the integration tests read this
//! file (it has no dependencies) to validate every `--json` run against its schema.

/// Every command, by its words, and the schema of its `--json` output.
pub(crate) const OUTPUTS: &[(&str, Option<&str>)] = &[
    ("stats", Some("memory_stats.output")),
    // The tour prints its story for people; it has no JSON output.
    ("demo", None),
    ("trajectory record", Some("trajectory_record.output")),
    (
        "trajectory crystallize",
        Some("trajectory_crystallize.output"),
    ),
    ("trajectory recall", Some("trajectory_recall.output")),
    (
        "trajectory fingerprint",
        Some("trajectory_fingerprint.output"),
    ),
    ("trajectory patterns", Some("trajectory_patterns.output")),
    ("browser context", Some("browser_context.output")),
    ("browser runs", Some("browser_runs.output")),
    ("browser resume", Some("browser_resume.output")),
    ("browser fork", Some("browser_fork.output")),
    ("browser import", Some("browser_import.output")),
    ("browser export", Some("browser_export.output")),
    ("browser prune", Some("browser_prune.output")),
    ("browser hints", Some("browser_hints.output")),
    ("browser run start", Some("browser_run.output")),
    ("browser run update", Some("browser_run.output")),
    ("browser run complete", Some("browser_run.output")),
    ("browser record", Some("browser_record_run.output")),
    (
        "recording templatize",
        Some("recording_templatize_report.output"),
    ),
    ("recording replay", Some("recording_replay_report.output")),
    ("recording lint", Some("recording_lint_report.output")),
    ("recording fmt", Some("recording_fmt_report.output")),
    ("recording import", Some("recording_import_report.output")),
    ("recording append", Some("recording_append.output")),
    ("check", Some("check.output")),
    // With `--format openai` (and the other providers) the provider's request, wrapped.
    ("turns show", Some("turns_show.output")),
    ("turns compact", Some("turns_compact.output")),
    ("turns import", Some("turns_import.output")),
    ("turns append", Some("turns_append.output")),
    ("turns sessions", Some("turns_sessions.output")),
    // Both print the contract's `turns_view` output, which carries the setting and the report.
    ("turns context", Some("turns_view.output")),
    ("turns tool-history", Some("turns_view.output")),
    ("list", Some("memory_list.output")),
    ("forget", Some("memory_forget.output")),
    ("notes view", Some("notes.output")),
    ("notes create", Some("notes.output")),
    ("notes str-replace", Some("notes.output")),
    ("notes insert", Some("notes.output")),
    ("notes delete", Some("notes.output")),
    ("notes rename", Some("notes.output")),
    ("notes search", Some("notes.output")),
    // It prints the schemas themselves.
    ("schemas", None),
    // A server: it speaks MCP, whose results follow the operations' schemas.
    ("mcp", None),
    // A server: it prints its address on stderr, and its page asks for JSON over HTTP.
    ("ui", None),
];
