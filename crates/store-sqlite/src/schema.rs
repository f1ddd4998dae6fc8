//! The schema's versions: forward-only migrations, recorded in `PRAGMA user_version`.
//!
//! Each migration runs in one immediate transaction together with the version bump, so a
//! crash or a failure leaves the database at the previous version. Versions only grow; a new
//! table or column is a new migration appended to [`MIGRATIONS`], never an edit of an old one.

use rusqlite::{Connection, TransactionBehavior};

/// One step of the schema.
pub(crate) struct Migration {
    pub(crate) version: u32,
    pub(crate) name: &'static str,
    pub(crate) sql: &'static str,
}

/// Every migration, in ascending version order.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "meta",
        sql: include_str!("sql/0001_meta.sql"),
    },
    Migration {
        version: 2,
        name: "tool_logs",
        sql: include_str!("sql/0002_tool_logs.sql"),
    },
    Migration {
        version: 3,
        name: "trajectory",
        sql: include_str!("sql/0003_trajectory.sql"),
    },
    Migration {
        version: 4,
        name: "sessions",
        sql: include_str!("sql/0004_sessions.sql"),
    },
    Migration {
        version: 5,
        name: "browser",
        sql: include_str!("sql/0005_browser.sql"),
    },
    Migration {
        version: 6,
        name: "browser_token_blocks",
        sql: include_str!("sql/0006_browser_token_blocks.sql"),
    },
    Migration {
        version: 7,
        name: "browser_compact_rows",
        sql: include_str!("sql/0007_browser_compact_rows.sql"),
    },
    Migration {
        version: 8,
        name: "browser_token_tails",
        sql: include_str!("sql/0008_browser_token_tails.sql"),
    },
    Migration {
        version: 9,
        name: "notes",
        sql: include_str!("sql/0009_notes.sql"),
    },
    Migration {
        version: 10,
        name: "write_times",
        sql: include_str!("sql/0010_write_times.sql"),
    },
    Migration {
        version: 11,
        name: "partition_totals",
        sql: include_str!("sql/0011_partition_totals.sql"),
    },
    Migration {
        version: 12,
        name: "episode_numbers",
        sql: include_str!("sql/0012_episode_numbers.sql"),
    },
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = match MIGRATIONS.last() {
    Some(last) => last.version,
    None => 0,
};

pub(crate) fn user_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

/// Applies every migration above the database's version, up to `target`. Returns the
/// migration that failed, with SQLite's error.
pub(crate) fn migrate_to(
    conn: &mut Connection,
    target: u32,
) -> Result<(), (&'static Migration, rusqlite::Error)> {
    for migration in MIGRATIONS.iter().filter(|m| m.version <= target) {
        apply(conn, migration).map_err(|e| (migration, e))?;
    }
    Ok(())
}

fn apply(conn: &mut Connection, migration: &Migration) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Read the version inside the write lock: another process may have migrated meanwhile.
    if user_version(&tx)? >= migration.version {
        return Ok(());
    }
    tx.execute_batch(migration.sql)?;
    tx.pragma_update(None, "user_version", migration.version)?;
    mark_ours(&tx)?;
    tx.commit()
}

/// Sets the file's `application_id` to ours, in the caller's transaction.
pub(crate) fn mark_ours(conn: &Connection) -> rusqlite::Result<()> {
    // The header field is a signed 32-bit integer; ours is below 2^31.
    conn.pragma_update(
        None,
        "application_id",
        i64::from(crate::identity::APPLICATION_ID),
    )
}

/// The tables a database of ours holds at `version`: those the first `version` migrations
/// leave, found by applying them to an empty database in memory.
pub(crate) fn tables_at(version: u32) -> rusqlite::Result<std::collections::BTreeSet<String>> {
    let mut conn = Connection::open_in_memory()?;
    migrate_to(&mut conn, version).map_err(|(_, e)| e)?;
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' \
         AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
    )?;
    let names = stmt.query_map([], |r| r.get(0))?;
    names.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(conn: &Connection) -> Vec<(String, String, String)> {
        let mut stmt = conn
            .prepare("SELECT type, name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name")
            .expect("prepare schema query");
        stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .expect("query schema")
            .collect::<rusqlite::Result<_>>()
            .expect("read schema")
    }

    #[test]
    fn versions_ascend_without_repeats() {
        let versions: Vec<u32> = MIGRATIONS.iter().map(|m| m.version).collect();
        assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
        assert!(versions.first().is_some_and(|&v| v >= 1));
    }

    #[test]
    fn every_old_version_upgrades_to_the_fresh_schema() {
        let mut fresh = Connection::open_in_memory().expect("open");
        migrate_to(&mut fresh, SCHEMA_VERSION)
            .map_err(|(m, e)| format!("{}: {e}", m.name))
            .expect("fresh");
        let expected = schema(&fresh);
        for start in std::iter::once(0).chain(MIGRATIONS.iter().map(|m| m.version)) {
            let mut old = Connection::open_in_memory().expect("open");
            migrate_to(&mut old, start)
                .map_err(|(m, e)| format!("{}: {e}", m.name))
                .expect("old");
            assert_eq!(user_version(&old).expect("version"), start);
            migrate_to(&mut old, SCHEMA_VERSION)
                .map_err(|(m, e)| format!("{}: {e}", m.name))
                .expect("upgrade");
            assert_eq!(
                user_version(&old).expect("version"),
                SCHEMA_VERSION,
                "from {start}"
            );
            assert_eq!(
                schema(&old),
                expected,
                "schema upgraded from version {start}"
            );
        }
    }

    #[test]
    fn episodes_keep_their_numbers_and_no_given_number_comes_back_after_version_12() {
        let mut conn = Connection::open_in_memory().expect("open");
        migrate_to(&mut conn, 11)
            .map_err(|(m, e)| format!("{}: {e}", m.name))
            .expect("version 11");
        conn.execute_batch(
            "INSERT INTO trajectory_fingerprint (id, partition, fingerprint) VALUES (1, 'p', 'k');
             INSERT INTO trajectory_episode (partition, fp_id, trajectory, outcome, recorded_at)
                 VALUES ('p', 1, 't1', '1', 10), ('p', 1, 't2', '2', 20), ('p', 1, 't3', '3', 30),
                        ('p', 1, 't4', '4', 40), ('p', 1, 't5', '5', 50);
             DELETE FROM trajectory_episode WHERE seq >= 4;",
        )
        .expect("episodes 1 to 5, the newest two pruned");
        migrate_to(&mut conn, 12)
            .map_err(|(m, e)| format!("{}: {e}", m.name))
            .expect("version 12");
        let rows: Vec<(i64, String, String, i64)> = conn
            .prepare(
                "SELECT seq, trajectory, outcome, recorded_at FROM trajectory_episode ORDER BY seq",
            )
            .and_then(|mut stmt| {
                stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                    .collect()
            })
            .expect("read episodes");
        assert_eq!(
            rows,
            [(1, "t1", "1", 10), (2, "t2", "2", 20), (3, "t3", "3", 30)].map(|(s, t, o, r)| (
                s,
                t.to_owned(),
                o.to_owned(),
                r
            ))
        );
        // AUTOINCREMENT had given 5: 5 stays given, so the next episode is 6, not 4.
        assert_eq!(
            crate::trajectory::highest_episode_seq(&conn).expect("highest"),
            5
        );
        let floor: i64 = conn
            .query_row("SELECT seq FROM trajectory_seq_floor", [], |r| r.get(0))
            .expect("floor");
        assert_eq!(floor, 5);
    }

    #[test]
    fn migrating_twice_changes_nothing() {
        let mut conn = Connection::open_in_memory().expect("open");
        migrate_to(&mut conn, SCHEMA_VERSION)
            .map_err(|(m, e)| format!("{}: {e}", m.name))
            .expect("first");
        let before = schema(&conn);
        migrate_to(&mut conn, SCHEMA_VERSION)
            .map_err(|(m, e)| format!("{}: {e}", m.name))
            .expect("second");
        assert_eq!(schema(&conn), before);
    }
}
