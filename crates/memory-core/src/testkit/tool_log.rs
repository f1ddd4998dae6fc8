//! The contract of [`ToolLogStore`].

use crate::evidence::Writer;
use crate::names::SessionId;
use crate::provenance::{Provenance, Source};
use crate::store::AuditStore;
use crate::store::tool_log::{MemorySnapshot, SnapshotEntry, SnapshotValue, ToolLog, ToolLogStore};
use crate::testkit::{Case, CaseResult, forgets_of, forgetter, forgot, writes_of};
use crate::time::Timestamp;
use crate::{ensure, ensure_eq};

/// The suite's name in reports.
pub const SUITE: &str = "ToolLogStore";

/// Every case of the [`ToolLogStore`] contract.
pub fn cases<S: ToolLogStore + AuditStore>() -> Vec<Case<S>> {
    vec![
        Case {
            name: "unknown session lists nothing",
            run: unknown_session_lists_nothing,
        },
        Case {
            name: "logs list in append order",
            run: logs_list_in_append_order,
        },
        Case {
            name: "sessions are isolated",
            run: sessions_are_isolated,
        },
        Case {
            name: "every field round-trips",
            run: every_field_round_trips,
        },
        Case {
            name: "log without snapshot stays without",
            run: log_without_snapshot_stays_without,
        },
        Case {
            name: "invalid log is rejected and not stored",
            run: invalid_log_is_rejected,
        },
        Case {
            name: "sessions list by id with their counts",
            run: sessions_list_with_counts,
        },
        Case {
            name: "forget deletes one session's logs only",
            run: forget_deletes_one_session_only,
        },
        Case {
            name: "each writer's run of logs is one entry of the audit trail",
            run: each_run_of_logs_is_audited,
        },
        Case {
            name: "a log keeps who logged it, in a batch and an import",
            run: logs_keep_their_writer,
        },
        Case {
            name: "forget by writer takes the writer's logs from every session, each audited",
            run: forget_by_writer,
        },
        Case {
            name: "a batch appends every log in order",
            run: a_batch_appends_in_order,
        },
        Case {
            name: "a batch with an invalid log stores nothing",
            run: a_batch_with_an_invalid_log_stores_nothing,
        },
        Case {
            name: "import refuses a session that holds logs and stores nothing",
            run: import_refuses_a_held_session,
        },
        Case {
            name: "logs page from a position, with the session's count",
            run: logs_page_from_a_position,
        },
    ]
}

fn sessions_list_with_counts<S: ToolLogStore>(store: &S) -> CaseResult {
    ensure_eq!(store.tool_log_sessions()?, Vec::new());
    let mut failed = sample_log("b", "tap", 1);
    failed.success = false;
    failed.error = Some("no such element".to_owned());
    // Appended out of time order: the last write is the newest log's own time.
    let logs = [
        failed,
        sample_log("a", "tap", 2),
        sample_log("b", "scroll", 9),
        sample_log("b", "tap", 3),
    ];
    for log in &logs {
        store.append_tool_log(log)?;
    }
    let bytes = |name: &str| -> u64 {
        logs.iter()
            .filter(|l| l.session.as_str() == name)
            .map(ToolLog::stored_bytes)
            .sum()
    };
    ensure_eq!(
        bytes("b"),
        3 + 8 + 15 + 6 + 8 + 3 + 8,
        "the bytes of names, parameters and errors"
    );
    let listed: Vec<(String, u64, u64, Option<Timestamp>)> = store
        .tool_log_sessions()?
        .into_iter()
        .map(|s| (s.session.as_str().to_owned(), s.logs, s.bytes, s.last_write))
        .collect();
    ensure_eq!(
        listed,
        vec![
            (
                "a".to_owned(),
                1,
                bytes("a"),
                Some(Timestamp::from_millis(2))
            ),
            (
                "b".to_owned(),
                3,
                bytes("b"),
                Some(Timestamp::from_millis(9))
            )
        ]
    );
    Ok(())
}

fn forget_deletes_one_session_only<S: ToolLogStore + AuditStore>(store: &S) -> CaseResult {
    for (name, at) in [("keep", 1), ("drop", 2), ("drop", 3)] {
        store.append_tool_log(&sample_log(name, "tap", at))?;
    }
    ensure_eq!(store.forget_tool_logs(&session("drop"), &forgetter())?, 2);
    ensure_eq!(store.list_tool_logs(&session("drop"))?, Vec::new());
    ensure_eq!(store.list_tool_logs(&session("keep"))?.len(), 1);
    ensure_eq!(store.forget_tool_logs(&session("drop"), &forgetter())?, 0);
    // Each forget is in the audit trail with who asked, the second too.
    ensure_eq!(
        forgets_of(store, "recording")?,
        vec![
            forgot("", "drop", "2 tool logs"),
            forgot("", "drop", "0 tool logs")
        ]
    );
    let names: Vec<String> = store
        .tool_log_sessions()?
        .into_iter()
        .map(|s| s.session.as_str().to_owned())
        .collect();
    ensure_eq!(names, vec!["keep".to_owned()]);
    // A forgotten session can be written again from scratch.
    store.append_tool_log(&sample_log("drop", "again", 4))?;
    ensure_eq!(store.list_tool_logs(&session("drop"))?.len(), 1);
    Ok(())
}

fn forget_by_writer<S: ToolLogStore + AuditStore>(store: &S) -> CaseResult {
    let by = |source: Source, session: &str, client: &str| Provenance {
        source,
        session: Some(session.to_owned()),
        client: Some(client.to_owned()),
        at: Timestamp::from_millis(0),
    };
    let page = || Source::Page("https://evil.test/".to_owned());
    let logged = |name: &str, at: i64, writer: Option<Provenance>| ToolLog {
        provenance: writer,
        ..sample_log(name, "read_page", at)
    };
    store.append_tool_logs(&[
        logged("a", 1, Some(by(page(), "run-1", "mcp:x"))),
        logged(
            "a",
            2,
            Some(by(Source::Tool("tap".to_owned()), "run-1", "cli")),
        ),
        logged("a", 3, Some(by(page(), "run-2", "cli"))),
        logged("b", 4, Some(by(page(), "run-1", "mcp:x"))),
        logged("c", 5, None),
    ])?;
    ensure!(
        store
            .forget_tool_logs_by(&Writer::default(), &forgetter())
            .is_err(),
        "a filter naming nothing was accepted"
    );
    let run_one = Writer {
        session: Some("run-1".to_owned()),
        source: Some(page()),
        ..Writer::default()
    };
    ensure_eq!(
        store.forget_tool_logs_by(&run_one, &forgetter())?,
        vec![(session("a"), 1), (session("b"), 1)]
    );
    let left: Vec<i64> = store
        .list_tool_logs(&session("a"))?
        .iter()
        .map(|log| log.timestamp.as_millis())
        .collect();
    ensure_eq!(left, vec![2, 3], "the other writers' logs stay, in order");
    ensure_eq!(store.list_tool_logs(&session("b"))?, Vec::new());
    ensure_eq!(
        store.list_tool_logs(&session("c"))?.len(),
        1,
        "a log without a writer"
    );
    let by_client = Writer {
        client: Some("cli".to_owned()),
        ..Writer::default()
    };
    ensure_eq!(
        store.forget_tool_logs_by(&by_client, &forgetter())?,
        vec![(session("a"), 2)]
    );
    ensure_eq!(
        store.forget_tool_logs_by(&by_client, &forgetter())?,
        Vec::new()
    );
    ensure_eq!(
        forgets_of(store, "recording")?,
        vec![
            forgot("", "a", "1 tool log"),
            forgot("", "b", "1 tool log"),
            forgot("", "a", "2 tool logs"),
        ]
    );
    Ok(())
}

fn session(name: &str) -> SessionId {
    // The names used here are literals that satisfy every rule.
    SessionId::new(name).unwrap_or_else(|e| panic!("test session {name:?}: {e}"))
}

/// A log of `tool` in `session` at time `at`, with no snapshot.
pub fn sample_log(session_name: &str, tool: &str, at: i64) -> ToolLog {
    ToolLog {
        session: session(session_name),
        tool_name: tool.to_owned(),
        parameters: format!(r#"{{"at":{at}}}"#),
        success: true,
        error: None,
        duration_ms: 12,
        timestamp: Timestamp::from_millis(at),
        trace_id: None,
        memory_snapshot: None,
        provenance: None,
    }
}

fn unknown_session_lists_nothing<S: ToolLogStore>(store: &S) -> CaseResult {
    ensure_eq!(store.list_tool_logs(&session("nobody"))?, Vec::new());
    Ok(())
}

fn logs_list_in_append_order<S: ToolLogStore>(store: &S) -> CaseResult {
    // Timestamps deliberately out of order and tied: the order is the order of appends.
    let logs = [
        sample_log("s", "first", 30),
        sample_log("s", "second", 10),
        sample_log("s", "third", 10),
        sample_log("s", "fourth", 20),
    ];
    for log in &logs {
        store.append_tool_log(log)?;
    }
    let names: Vec<String> = store
        .list_tool_logs(&session("s"))?
        .into_iter()
        .map(|log| log.tool_name)
        .collect();
    ensure_eq!(names, vec!["first", "second", "third", "fourth"]);
    Ok(())
}

fn logs_page_from_a_position<S: ToolLogStore>(store: &S) -> CaseResult {
    let none = store.tool_log_page(&session("s"), 0, 10)?;
    ensure_eq!(
        (none.items, none.total),
        (Vec::new(), 0),
        "an unknown session"
    );
    let logs: Vec<_> = (0..5)
        .map(|i| sample_log("s", &format!("tool{i}"), 50 - i))
        .collect();
    store.append_tool_logs(&logs[..2])?;
    store.append_tool_log(&sample_log("other", "elsewhere", 1))?;
    store.append_tool_logs(&logs[2..])?;
    let mut walked = Vec::new();
    let mut from = 0;
    loop {
        let page = store.tool_log_page(&session("s"), from, 2)?;
        ensure_eq!(page.total, 5, "the session's count on every page");
        if page.items.is_empty() {
            break;
        }
        from += page.items.len() as u64;
        walked.extend(page.items);
    }
    ensure_eq!(walked, logs, "the logs, a page at a time, as stored");
    ensure_eq!(
        store.tool_log_page(&session("s"), 3, 10)?.items,
        logs[3..].to_vec()
    );
    Ok(())
}

fn sessions_are_isolated<S: ToolLogStore>(store: &S) -> CaseResult {
    store.append_tool_log(&sample_log("a", "one", 1))?;
    store.append_tool_log(&sample_log("b", "two", 2))?;
    store.append_tool_log(&sample_log("a", "three", 3))?;
    let a = store.list_tool_logs(&session("a"))?;
    ensure_eq!(a.len(), 2, "session a");
    ensure!(
        a.iter().all(|log| log.session.as_str() == "a"),
        "session a lists another session's log: {a:?}"
    );
    ensure_eq!(store.list_tool_logs(&session("b"))?.len(), 1, "session b");
    Ok(())
}

fn every_field_round_trips<S: ToolLogStore>(store: &S) -> CaseResult {
    let log = ToolLog {
        session: session("full"),
        tool_name: "myapp_ios_launchAppSignedIn".to_owned(),
        parameters: r#"{"email":"${merchant_email}","note":"ünïcødé 'q' \"d\" \u{1F600}"}"#
            .to_owned(),
        success: false,
        error: Some("sign-in failed; -- DROP TABLE".to_owned()),
        duration_ms: i64::MAX as u64,
        timestamp: Timestamp::from_millis(-5),
        trace_id: Some("trace-1".to_owned()),
        memory_snapshot: Some(MemorySnapshot {
            entries: vec![
                SnapshotEntry {
                    key: "merchant_email".to_owned(),
                    value: SnapshotValue::Plain("m@example.com".to_owned()),
                    written_by: Some("merchantFactory_loadAccount".to_owned()),
                    written_at: Some(Timestamp::from_millis(1_000)),
                    existed_before: true,
                },
                SnapshotEntry {
                    key: "password".to_owned(),
                    value: SnapshotValue::Sensitive,
                    written_by: None,
                    written_at: None,
                    existed_before: false,
                },
                SnapshotEntry {
                    key: "empty".to_owned(),
                    value: SnapshotValue::Plain(String::new()),
                    written_by: None,
                    written_at: Some(Timestamp::from_millis(0)),
                    existed_before: false,
                },
            ],
        }),
        // Its time is the log's timestamp.
        provenance: Some(
            Provenance::new(
                Source::Tool("myapp_ios_launchAppSignedIn".to_owned()),
                Timestamp::from_millis(-5),
            )
            .with_session("run-1")
            .with_client("mcp:agent"),
        ),
    };
    store.append_tool_log(&log)?;
    let listed = store.list_tool_logs(&session("full"))?;
    ensure_eq!(listed.len(), 1);
    let mut got = listed[0].clone();
    // Entry order is not part of the contract; keys are.
    if let Some(snapshot) = got.memory_snapshot.as_mut() {
        snapshot.entries.sort_by(|a, b| a.key.cmp(&b.key));
    }
    let mut want = log;
    if let Some(snapshot) = want.memory_snapshot.as_mut() {
        snapshot.entries.sort_by(|a, b| a.key.cmp(&b.key));
    }
    ensure_eq!(got, want);
    Ok(())
}

fn log_without_snapshot_stays_without<S: ToolLogStore>(store: &S) -> CaseResult {
    let mut empty_snapshot = sample_log("old", "withEmptySnapshot", 2);
    empty_snapshot.memory_snapshot = Some(MemorySnapshot::default());
    store.append_tool_log(&sample_log("old", "legacy", 1))?;
    store.append_tool_log(&empty_snapshot)?;
    let listed = store.list_tool_logs(&session("old"))?;
    ensure_eq!(listed.len(), 2);
    ensure_eq!(listed[0].memory_snapshot, None, "absent snapshot");
    ensure_eq!(
        listed[1].memory_snapshot,
        Some(MemorySnapshot::default()),
        "an empty snapshot is not an absent one"
    );
    Ok(())
}

fn invalid_log_is_rejected<S: ToolLogStore>(store: &S) -> CaseResult {
    let mut duplicate = sample_log("bad", "dup", 1);
    let entry = SnapshotEntry {
        key: "k".to_owned(),
        value: SnapshotValue::Plain("v".to_owned()),
        written_by: None,
        written_at: None,
        existed_before: true,
    };
    duplicate.memory_snapshot = Some(MemorySnapshot {
        entries: vec![entry.clone(), entry],
    });
    let mut unnamed = sample_log("bad", "", 2);
    unnamed.tool_name.clear();
    let mut too_long = sample_log("bad", "slow", 3);
    too_long.duration_ms = u64::MAX;
    for log in [duplicate, unnamed, too_long] {
        let result = store.append_tool_log(&log);
        ensure!(
            matches!(result, Err(crate::Error::InvalidInput { .. })),
            "{:?} should be rejected as invalid input, got {result:?}",
            log.tool_name
        );
    }
    ensure_eq!(
        store.list_tool_logs(&session("bad"))?,
        Vec::new(),
        "a rejected log was stored"
    );
    Ok(())
}

fn tool_names<S: ToolLogStore>(store: &S, name: &str) -> Result<Vec<String>, crate::Error> {
    Ok(store
        .list_tool_logs(&session(name))?
        .into_iter()
        .map(|log| log.tool_name)
        .collect())
}

fn each_run_of_logs_is_audited<S: ToolLogStore + AuditStore>(store: &S) -> CaseResult {
    let tool = Provenance::new(Source::Tool("tapOn".to_owned()), Timestamp::from_millis(1))
        .with_session("run-1")
        .with_client("cli");
    let import = Provenance::new(
        Source::Import("trailblaze".to_owned()),
        Timestamp::from_millis(1),
    )
    .with_client("node");
    let by = |session_name: &str, at: i64, writer: Option<&Provenance>| {
        let mut log = sample_log(session_name, "tapOn", at);
        log.provenance = writer.cloned();
        log
    };
    store.append_tool_log(&by("a", 10, Some(&tool)))?;
    store.append_tool_log(&by("a", 20, Some(&tool)))?;
    store.append_tool_logs(&[by("a", 30, None), by("b", 31, Some(&tool))])?;
    store.import_tool_logs(&[by("c", 40, Some(&import)), by("c", 41, Some(&import))])?;
    store.forget_tool_logs(&session("a"), &forgetter())?;
    store.append_tool_log(&by("a", 50, None))?;
    let entry = |name: &str, writer: Option<&Provenance>, at: i64| {
        let at = Timestamp::from_millis(at);
        let by = match writer {
            Some(writer) => Provenance {
                at,
                ..writer.clone()
            },
            None => Provenance::new(Source::Unknown, at),
        };
        (String::new(), name.to_owned(), by, "tool logs".to_owned())
    };
    ensure_eq!(
        writes_of(store, "recording")?,
        vec![
            entry("a", Some(&tool), 10),
            entry("a", None, 30),
            entry("b", Some(&tool), 31),
            entry("c", Some(&import), 40),
            entry("a", None, 50),
        ],
        "one write entry per writer's run, at its first log's time"
    );
    Ok(())
}

fn logs_keep_their_writer<S: ToolLogStore>(store: &S) -> CaseResult {
    let written = |session_name: &str, tool: &str, at: i64, by: Option<(&str, &str)>| {
        let mut log = sample_log(session_name, tool, at);
        log.provenance = by.map(|(source, client)| {
            let source = Source::parse(source).unwrap_or(Source::Unknown);
            Provenance::new(source, Timestamp::from_millis(at)).with_client(client)
        });
        log
    };
    let batch = [
        written("a", "tapOn", 1, Some(("tool:tapOn", "cli"))),
        written("a", "inputText", 2, None),
        written("a", "assert", 3, Some(("model:claude", "python"))),
    ];
    store.append_tool_logs(&batch)?;
    let imported = [
        written("b", "tapOn", 4, Some(("import:trailblaze", "node"))),
        written("b", "back", 5, Some(("import:trailblaze", "node"))),
    ];
    store.import_tool_logs(&imported)?;
    let writers = |name: &str| -> Result<Vec<Option<Provenance>>, crate::testkit::Violation> {
        Ok(store
            .list_tool_logs(&session(name))?
            .into_iter()
            .map(|log| log.provenance)
            .collect())
    };
    let want = |logs: &[ToolLog]| {
        logs.iter()
            .map(|l| l.provenance.clone())
            .collect::<Vec<_>>()
    };
    ensure_eq!(
        writers("a")?,
        want(&batch),
        "a batch keeps each log's writer"
    );
    ensure_eq!(
        writers("b")?,
        want(&imported),
        "an import keeps each log's writer"
    );
    let page = store.tool_log_page(&session("a"), 1, 2)?;
    ensure_eq!(
        page.items
            .into_iter()
            .map(|l| l.provenance)
            .collect::<Vec<_>>(),
        want(&batch[1..]),
        "a page reads the writers too"
    );
    Ok(())
}

fn a_batch_appends_in_order<S: ToolLogStore>(store: &S) -> CaseResult {
    store.append_tool_log(&sample_log("a", "before", 1))?;
    store.append_tool_logs(&[
        sample_log("a", "first", 3),
        sample_log("b", "other", 2),
        sample_log("a", "second", 2),
    ])?;
    store.append_tool_logs(&[])?;
    ensure_eq!(tool_names(store, "a")?, vec!["before", "first", "second"]);
    ensure_eq!(tool_names(store, "b")?, vec!["other"]);
    Ok(())
}

fn a_batch_with_an_invalid_log_stores_nothing<S: ToolLogStore>(store: &S) -> CaseResult {
    let mut invalid = sample_log("batch", "", 3);
    invalid.tool_name.clear();
    for import in [false, true] {
        let batch = [
            sample_log("batch", "one", 1),
            sample_log("other", "two", 2),
            invalid.clone(),
        ];
        let result = if import {
            store.import_tool_logs(&batch)
        } else {
            store.append_tool_logs(&batch)
        };
        ensure!(
            matches!(&result, Err(crate::Error::InvalidInput { field, .. }) if field.starts_with("tool log 3")),
            "the third log should be refused as invalid input naming it, got {result:?}"
        );
        ensure_eq!(
            tool_names(store, "batch")?,
            Vec::<String>::new(),
            "import {import}"
        );
        ensure_eq!(
            tool_names(store, "other")?,
            Vec::<String>::new(),
            "import {import}"
        );
    }
    Ok(())
}

fn import_refuses_a_held_session<S: ToolLogStore>(store: &S) -> CaseResult {
    store.import_tool_logs(&[
        sample_log("held", "first", 1),
        sample_log("held", "second", 2),
    ])?;
    ensure_eq!(tool_names(store, "held")?, vec!["first", "second"]);
    let again = store.import_tool_logs(&[
        sample_log("fresh", "new", 3),
        sample_log("held", "again", 4),
    ]);
    ensure!(
        matches!(&again, Err(e) if e.is_conflict() && e.to_string().contains("\"held\"") && e.to_string().contains("already holds 2 tool log(s)")),
        "a held session should be a conflict naming it and its logs, got {again:?}"
    );
    ensure_eq!(
        tool_names(store, "fresh")?,
        Vec::<String>::new(),
        "a refused import stored logs"
    );
    ensure_eq!(tool_names(store, "held")?, vec!["first", "second"]);
    Ok(())
}
