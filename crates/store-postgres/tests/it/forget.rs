//! What a forget leaves on a PostgreSQL server's disk, on a throwaway cluster: the rows are
//! gone at once; after `VACUUM FULL` their text is in no file of the tables, but it is still
//! in `pg_wal`, which no command of ours (or PostgreSQL's) can erase. The README's
//! "Forgetting on PostgreSQL" says what an operator does about it.

use std::path::{Path, PathBuf};

use agent_memory_core::store::tool_log::ToolLog;
use agent_memory_core::{SessionId, Timestamp, ToolLogStore};
use agent_memory_postgres::cluster::{self, Cluster};
use agent_memory_postgres::{PostgresOptions, PostgresStore};
use postgres::{Client, NoTls};

const CANARY: &str = "canary-5e1d07-forget-me-on-postgres";

fn holds(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|entry| {
        let path = entry.path();
        if path.is_dir() {
            return holds(&path);
        }
        std::fs::read(&path)
            .is_ok_and(|bytes| bytes.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()))
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
    }
}

#[test]
fn forgotten_rows_leave_the_table_files_after_vacuum_full_but_not_pg_wal() {
    let bin = match cluster::bin_dir() {
        Ok(bin) => bin,
        Err(e) => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!ci, "with CI=true the forget test needs PostgreSQL: {e}");
            eprintln!("skipping the forget test: {e}");
            return;
        }
    };
    let dir: PathBuf =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("forget-{}", std::process::id()));
    let cluster = Cluster::start_with_binaries(&bin, &dir).unwrap_or_else(|e| panic!("{e}"));
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
        holds(&base),
        "the test must see the canary in the table files"
    );

    assert_eq!(store.forget_tool_logs(&secret).expect("forget"), 1);
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
        !holds(&base),
        "after VACUUM FULL and a checkpoint no table file holds the text"
    );
    assert_eq!(store.list_tool_logs(&keep).expect("kept").len(), 200);
    // What the README tells the operator: the write-ahead log still holds it.
    assert!(
        holds(&cluster.data_dir().join("pg_wal")),
        "pg_wal still holds the forgotten text"
    );
    drop(store);
    drop(admin);
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}
