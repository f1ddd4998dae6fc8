//! The notes memory on PostgreSQL beyond its contract: a schema of the version before notes
//! kept versions upgrades with its notes whole, evidence PostgreSQL cannot hold is refused,
//! and the audit trail numbers its entries in the order concurrent writers commit them (a
//! write takes the trail's lock before its entry draws a number).

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_memory_core::evidence::{Evidence, Status};
use agent_memory_core::store::notes::{NoteLimits, NotePath, NoteStore, NoteVersion};
use agent_memory_core::{AuditStore, Provenance, Scope, Source, Timestamp};
use agent_memory_postgres::{PostgresOptions, PostgresStore, SCHEMA_VERSION};
use postgres::{Client, NoTls};

use crate::support::{drop_schemas, fresh_schema, server};

/// The migrations up to version 7, the last before notes kept versions, as `connect` ran
/// them.
const UP_TO_7: [(&str, &str); 7] = [
    ("meta", include_str!("../../src/sql/0001_meta.sql")),
    (
        "tool_logs",
        include_str!("../../src/sql/0002_tool_logs.sql"),
    ),
    (
        "trajectory",
        include_str!("../../src/sql/0003_trajectory.sql"),
    ),
    ("sessions", include_str!("../../src/sql/0004_sessions.sql")),
    ("browser", include_str!("../../src/sql/0005_browser.sql")),
    ("notes", include_str!("../../src/sql/0006_notes.sql")),
    (
        "write_times",
        include_str!("../../src/sql/0007_write_times.sql"),
    ),
];

fn path(p: &str) -> NotePath {
    NotePath::new(p).expect("path")
}

fn scope(name: &str) -> Scope {
    Scope::new(name).expect("scope")
}

fn user() -> Provenance {
    Provenance::new(Source::User, Timestamp::from_millis(1_767_225_600_000))
}

fn connect(url: &str, schema: &str) -> PostgresStore {
    let options = PostgresOptions::default()
        .with_schema(schema)
        .with_pool_size(8);
    PostgresStore::connect_with(url, &options).unwrap_or_else(|e| panic!("connect: {e}"))
}

/// A schema written by the build before migration 8 (its notes one row each, with the
/// scope's last write) opens at the current version: each note is version 1, by `unknown`,
/// written at its scope's last write, clean, and takes new versions from there.
#[test]
fn a_schema_of_version_7_upgrades_keeping_its_notes() {
    let Some(url) = server() else { return };
    let schema = fresh_schema("n7");
    let mut client = Client::connect(&url, NoTls).unwrap_or_else(|e| panic!("connect: {e}"));
    let mut tx = client.transaction().expect("begin");
    tx.batch_execute(&format!(
        "CREATE SCHEMA {schema};
         CREATE TABLE {schema}.schema_version (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         );
         SET LOCAL search_path TO {schema};"
    ))
    .expect("create the schema");
    for (version, (name, sql)) in (1i32..).zip(UP_TO_7) {
        tx.batch_execute(sql)
            .unwrap_or_else(|e| panic!("migration {version}: {e}"));
        tx.execute(
            "INSERT INTO schema_version (version, name) VALUES ($1, $2)",
            &[&version, &name],
        )
        .expect("record the version");
    }
    tx.batch_execute(
        "INSERT INTO notes (scope, path, text, bytes) VALUES
             ('default', 'plan.md', 'ship it', 7), ('default', 'd/x.md', 'x', 1),
             ('quiet', 'a.md', 'never stamped', 13);
         INSERT INTO note_writes (scope, last_write) VALUES ('default', 1700000000000);",
    )
    .expect("write notes as version 7 did");
    tx.commit().expect("commit");

    let store = connect(&url, &schema);
    assert_eq!(store.schema_version().expect("version"), SCHEMA_VERSION);
    let unknown = |at| Evidence::unscreened(Provenance::new(Source::Unknown, at));
    assert_eq!(
        store
            .note_history(&scope("default"), &path("plan.md"))
            .expect("history"),
        [NoteVersion {
            version: 1,
            text: "ship it".to_owned(),
            evidence: unknown(Timestamp::from_millis(1_700_000_000_000)),
        }]
    );
    assert_eq!(
        store
            .note_history(&scope("quiet"), &path("a.md"))
            .expect("history")[0]
            .evidence,
        unknown(Timestamp::from_millis(0)),
        "a scope never stamped: the epoch"
    );
    let limits = NoteLimits::default();
    let mine = Evidence::unscreened(user());
    store
        .note_replace(
            &scope("default"),
            &path("plan.md"),
            "ship it",
            "ship it today",
            &mine,
            &limits,
        )
        .expect("replace");
    store
        .note_rename(&scope("default"), &path("d"), &path("e"), &user())
        .expect("rename");
    store
        .note_create(&scope("default"), &path("new.md"), "n", &mine, &limits)
        .expect("create");
    let versions: Vec<u64> = store
        .note_history(&scope("default"), &path("plan.md"))
        .expect("history")
        .iter()
        .map(|v| v.version)
        .collect();
    assert_eq!(versions, [1, 2]);
    assert_eq!(
        store
            .note_read(&scope("default"), &path("e/x.md"))
            .expect("read")
            .as_deref(),
        Some("x")
    );
    assert_eq!(store.audit_page(None, 10).expect("audit").total, 3);
    drop(store);
    drop_schemas(&url, &[schema]);
}

/// A NUL character in who wrote a note or in a reason of the screen is refused naming the
/// field, and nothing is stored.
#[test]
fn a_nul_character_in_the_evidence_is_refused_naming_the_field() {
    let Some(url) = server() else { return };
    let schema = fresh_schema("nn");
    let store = connect(&url, &schema);
    let s = scope("default");
    let limits = NoteLimits::default();
    let field =
        |evidence: &Evidence| match store.note_create(&s, &path("a.md"), "a", evidence, &limits) {
            Err(agent_memory_core::Error::InvalidInput { field, reason }) => {
                assert!(reason.contains("NUL"), "{reason}");
                field
            }
            other => panic!("expected invalid input, got {other:?}"),
        };
    let session = Evidence::unscreened(user().with_session("run\0"));
    assert_eq!(field(&session), "note a.md session");
    let source = Evidence::unscreened(Provenance::new(
        Source::Page("https://a.example/\0".into()),
        Timestamp::from_millis(1),
    ));
    assert_eq!(field(&source), "note a.md source");
    let reason = Evidence {
        status: Status::Flagged,
        reasons: vec!["instruction: \0".into()],
        ..Evidence::unscreened(user())
    };
    assert_eq!(field(&reason), "note a.md reason");
    assert_eq!(store.note_list(&s, None).expect("list"), []);
    assert_eq!(store.audit_page(None, 10).expect("audit").total, 0);
    drop(store);
    drop_schemas(&url, &[schema]);
}

/// Writers of many scopes at once: the trail holds one entry per write, numbered without a
/// gap, and each scope's entries in the order its versions were written.
#[test]
fn concurrent_writers_number_the_trail_without_gaps() {
    const WRITERS: usize = 6;
    const EACH: u64 = 15;
    let Some(url) = server() else { return };
    let schema = fresh_schema("na");
    let store = Arc::new(connect(&url, &schema));
    std::thread::scope(|threads| {
        for writer in 0..WRITERS {
            let store = Arc::clone(&store);
            threads.spawn(move || {
                let s = scope(&format!("s{writer}"));
                let p = path("log.md");
                let limits = NoteLimits::default();
                let mine = Evidence::unscreened(user());
                store
                    .note_create(&s, &p, "0", &mine, &limits)
                    .expect("create");
                for n in 1..EACH {
                    let (before, after) = ((n - 1).to_string(), n.to_string());
                    store
                        .note_replace(&s, &p, &before, &after, &mine, &limits)
                        .expect("replace");
                }
            });
        }
    });
    let page = store.audit_page(None, usize::MAX).expect("audit");
    let seqs: Vec<u64> = page.items.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (1..=WRITERS as u64 * EACH).collect();
    assert_eq!(
        seqs, expected,
        "one entry per write, numbered without a gap"
    );
    for writer in 0..WRITERS {
        let details: Vec<&str> = page
            .items
            .iter()
            .filter(|e| e.scope == format!("s{writer}"))
            .map(|e| e.detail.as_str())
            .collect();
        let written: Vec<String> = (1..=EACH).map(|v| format!("version {v}, clean")).collect();
        assert_eq!(details, written, "scope s{writer}");
    }
    drop(store);
    drop_schemas(&url, &[schema]);
}

/// The advisory lock class of the audit trail (its key: the schema's name), pinned here:
/// every process writing to one schema must take the same lock.
pub(crate) const AUDIT_LOCK_CLASS: i32 = 0x616d_0011;

/// The last number the audit trail's sequence gave out (`None`: none yet).
fn audit_sequence(client: &mut Client, schema: &str) -> Option<i64> {
    client
        .query_one(
            "SELECT last_value FROM pg_sequences WHERE schemaname = $1 \
             AND sequencename = (SELECT split_part(pg_get_serial_sequence($2, 'seq'), '.', 2))",
            &[&schema, &format!("{schema}.audit")],
        )
        .expect("read the audit sequence")
        .get(0)
}

/// A write draws its audit entry's number only once it holds the trail's lock, which it
/// keeps until it commits: so numbers follow the order of the commits, and a reader paging
/// past a number never misses an entry committed after it was read.
#[test]
fn an_audit_entry_draws_its_number_only_once_it_holds_the_trail_lock() {
    let Some(url) = server() else { return };
    let schema = fresh_schema("nl");
    let store = Arc::new(connect(&url, &schema));
    let limits = NoteLimits::default();
    let mine = Evidence::unscreened(user());
    store
        .note_create(&scope("a"), &path("first.md"), "1", &mine, &limits)
        .expect("first write");
    let mut holder = Client::connect(&url, NoTls).expect("connect the lock holder");
    let mut held = holder.transaction().expect("begin");
    held.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&AUDIT_LOCK_CLASS, &schema],
    )
    .expect("take the trail's lock");
    let writer = {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            let mine = Evidence::unscreened(user());
            store.note_create(&scope("b"), &path("second.md"), "2", &mine, &limits)
        })
    };
    let mut watcher = Client::connect(&url, NoTls).expect("connect the watcher");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let waiting: i64 = watcher
            .query_one(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
                 AND classid::bigint = $1::bigint \
                 AND objid::bigint = hashtext($2)::bigint & 4294967295",
                &[&i64::from(AUDIT_LOCK_CLASS), &schema],
            )
            .expect("read pg_locks")
            .get(0);
        if waiting > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the write never waited for the trail's lock"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        audit_sequence(&mut watcher, &schema),
        Some(1),
        "the waiting write drew a number before it held the lock"
    );
    held.commit().expect("release the lock");
    writer
        .join()
        .expect("the writer thread")
        .expect("the write completes once the lock is released");
    let seqs: Vec<u64> = store
        .audit_page(None, 10)
        .expect("audit")
        .items
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs, [1, 2]);
    drop(store);
    drop_schemas(&url, &[schema]);
}

/// A replace archives the version it replaces and trims the oldest in one statement, whose
/// parts do not see each other's rows: at the smallest limits a note still keeps exactly its
/// newest versions.
#[test]
fn a_note_keeps_its_newest_versions_at_the_smallest_limits() {
    let Some(url) = server() else { return };
    let schema = fresh_schema("nv");
    let store = connect(&url, &schema);
    let s = scope("default");
    let mine = Evidence::unscreened(user());
    for max_versions in [0, 1, 2] {
        let limits = NoteLimits {
            max_versions,
            ..NoteLimits::default()
        };
        let p = path(&format!("n{max_versions}.md"));
        store
            .note_create(&s, &p, "v1", &mine, &limits)
            .expect("create");
        for n in 2..=4 {
            let before = format!("v{}", n - 1);
            store
                .note_replace(&s, &p, &before, &format!("v{n}"), &mine, &limits)
                .expect("replace");
        }
        let kept: Vec<(u64, String)> = store
            .note_history(&s, &p)
            .expect("history")
            .into_iter()
            .map(|v| (v.version, v.text))
            .collect();
        // The newest `max_versions` of versions 1 to 4 (at least one).
        let first = 4 - max_versions.clamp(1, 4) + 1;
        let want: Vec<(u64, String)> = (first..=4).map(|v| (v, format!("v{v}"))).collect();
        assert_eq!(kept, want, "a limit of {max_versions}");
    }
    drop(store);
    drop_schemas(&url, &[schema]);
}
