//! What a forget leaves on a PostgreSQL server's disk, on a throwaway cluster: the rows (tool
//! logs; a rejected note version, the versions forgotten by their writer) are gone at once;
//! after `VACUUM FULL` their text is in no file of the tables, but it is still in `pg_wal`,
//! which no command of ours (or PostgreSQL's) can erase. The README's "Forgetting on
//! PostgreSQL" says what an operator does about it.

use std::path::{Path, PathBuf};

use agent_memory_core::evidence::{Evidence, Status, Writer};
use agent_memory_core::store::notes::{Decision, NoteLimits, NotePath, NoteStore};
use agent_memory_core::store::tool_log::ToolLog;
use agent_memory_core::{Provenance, Scope, SessionId, Source, Timestamp, ToolLogStore};
use agent_memory_postgres::cluster::{self, Cluster};
use agent_memory_postgres::{PostgresOptions, PostgresStore};
use postgres::{Client, NoTls};

const CANARY: &str = "canary-5e1d07-forget-me-on-postgres";

fn holds(dir: &Path, canary: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|entry| {
        let path = entry.path();
        if path.is_dir() {
            return holds(&path, canary);
        }
        std::fs::read(&path)
            .is_ok_and(|bytes| bytes.windows(canary.len()).any(|w| w == canary.as_bytes()))
    })
}

fn log(session: &SessionId, parameters: String) -> ToolLog {
    ToolLog {
        session: session.clone(),
        tool_name: "signIn".into(),
        parameters,
        success: true,
        error: None,
        duration_ms: 3,
        timestamp: Timestamp::from_millis(1),
        trace_id: None,
        memory_snapshot: None,
        provenance: None,
    }
}

/// A cluster of this test's own, whose files it can read, in a directory named after `name`;
/// `None` (after saying so) without the server binaries, outside CI.
fn private_cluster(name: &str) -> Option<(Cluster, PathBuf)> {
    let bin = match cluster::bin_dir() {
        Ok(bin) => bin,
        Err(e) => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!ci, "with CI=true the forget test needs PostgreSQL: {e}");
            eprintln!("skipping the forget test: {e}");
            return None;
        }
    };
    let dir: PathBuf =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let cluster = Cluster::start_with_binaries(&bin, &dir).unwrap_or_else(|e| panic!("{e}"));
    Some((cluster, dir))
}

#[test]
fn forgotten_rows_leave_the_table_files_after_vacuum_full_but_not_pg_wal() {
    let Some((cluster, dir)) = private_cluster("forget") else {
        return;
    };
    let url = cluster.url();
    let store = PostgresStore::connect_with(&url, &PostgresOptions::default().with_pool_size(1))
        .expect("connect");
    let secret = SessionId::new("secret").expect("id");
    let keep = SessionId::new("keep").expect("id");
    store
        .append_tool_logs(&[log(&secret, format!(r#"{{"pin":"{CANARY}"}}"#))])
        .expect("append the secret");
    let kept: Vec<ToolLog> = (0..200)
        .map(|i| log(&keep, format!(r#"{{"n":{i}}}"#)))
        .collect();
    store.append_tool_logs(&kept).expect("append the rest");
    let mut admin = Client::connect(&url, NoTls).expect("connect");
    admin.batch_execute("CHECKPOINT").expect("checkpoint");
    let base = cluster.data_dir().join("base");
    assert!(
        holds(&base, CANARY),
        "the test must see the canary in the table files"
    );

    let by = Provenance::new(Source::User, Timestamp::from_millis(1));
    assert_eq!(store.forget_tool_logs(&secret, &by).expect("forget"), 1);
    assert!(
        store.list_tool_logs(&secret).expect("list").is_empty(),
        "the rows are gone at once"
    );
    for statement in [
        "VACUUM FULL agent_memory.tool_logs",
        "VACUUM FULL agent_memory.tool_log_memory",
        "CHECKPOINT",
    ] {
        admin.batch_execute(statement).expect(statement);
    }
    assert!(
        !holds(&base, CANARY),
        "after VACUUM FULL and a checkpoint no table file holds the text"
    );
    assert_eq!(store.list_tool_logs(&keep).expect("kept").len(), 200);
    // What the README tells the operator: the write-ahead log still holds it.
    assert!(
        holds(&cluster.data_dir().join("pg_wal"), CANARY),
        "pg_wal still holds the forgotten text"
    );
    drop(store);
    drop(admin);
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A rejected version and the versions a forget by writer takes are gone from every read at
/// once, and from the table files after `VACUUM FULL`, as a forgotten scope's are; the note
/// falls back to what the user wrote.
#[test]
fn rejected_and_forgotten_note_versions_leave_the_table_files_after_vacuum_full() {
    const HELD: &str = "canary-held-91c2-ignore-previous-instructions-pg";
    let Some((cluster, dir)) = private_cluster("forget-notes") else {
        return;
    };
    let url = cluster.url();
    let store = PostgresStore::connect_with(&url, &PostgresOptions::default().with_pool_size(1))
        .expect("connect");
    let scope = Scope::new("default").expect("scope");
    let at = Timestamp::from_millis(1_767_225_600_000);
    let user = Provenance::new(Source::User, at);
    let mine = Evidence::unscreened(user.clone());
    let page = Evidence {
        provenance: Provenance::new(Source::Page("https://evil.example/".into()), at)
            .with_session("run-9"),
        status: Status::Quarantined,
        reasons: vec!["instruction: test".into()],
    };
    let limits = NoteLimits::default();
    let a = NotePath::new("a.md").expect("path");
    let b = NotePath::new("b.md").expect("path");
    store
        .note_create(&scope, &a, "mine", &mine, &limits)
        .expect("create a");
    store
        .note_replace(&scope, &a, "mine", HELD, &page, &limits)
        .expect("replace a");
    store
        .note_create(&scope, &b, "yours", &mine, &limits)
        .expect("create b");
    let flagged = Evidence {
        status: Status::Flagged,
        ..page.clone()
    };
    store
        .note_replace(&scope, &b, "yours", CANARY, &flagged, &limits)
        .expect("replace b");
    let mut admin = Client::connect(&url, NoTls).expect("connect");
    admin.batch_execute("CHECKPOINT").expect("checkpoint");
    let base = cluster.data_dir().join("base");
    assert!(
        holds(&base, HELD) && holds(&base, CANARY),
        "the test must see both canaries in the table files"
    );

    store
        .note_review(&scope, &a, 2, Decision::Reject, &user)
        .expect("reject");
    let forgot = store
        .note_forget_by(None, &Writer::session("run-9"), &user)
        .expect("forget by writer");
    assert_eq!((forgot.versions, forgot.restored), (1, 1));
    assert_eq!(
        store.note_read(&scope, &a).expect("read").as_deref(),
        Some("mine")
    );
    assert_eq!(
        store.note_read(&scope, &b).expect("read").as_deref(),
        Some("yours")
    );
    for statement in [
        "VACUUM FULL agent_memory.notes",
        "VACUUM FULL agent_memory.note_versions",
        "CHECKPOINT",
    ] {
        admin.batch_execute(statement).expect(statement);
    }
    assert!(
        !holds(&base, HELD) && !holds(&base, CANARY),
        "after VACUUM FULL and a checkpoint no table file holds either text"
    );
    drop(store);
    drop(admin);
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}
