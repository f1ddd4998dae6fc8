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
    Migration {
        version: 13,
        name: "fingerprint_references",
        sql: include_str!("sql/0013_fingerprint_references.sql"),
    },
    Migration {
        version: 14,
        name: "note_versions",
        sql: include_str!("sql/0014_note_versions.sql"),
    },
    Migration {
        version: 15,
        name: "browser_provenance",
        sql: include_str!("sql/0015_browser_provenance.sql"),
    },
    Migration {
        version: 16,
        name: "episode_provenance",
        sql: include_str!("sql/0016_episode_provenance.sql"),
    },
    Migration {
        version: 17,
        name: "event_provenance",
        sql: include_str!("sql/0017_event_provenance.sql"),
    },
    Migration {
        version: 18,
        name: "tool_log_provenance",
        sql: include_str!("sql/0018_tool_log_provenance.sql"),
    },
    Migration {
        version: 19,
        name: "browser_held",
        sql: include_str!("sql/0019_browser_held.sql"),
    },
    Migration {
        version: 20,
        name: "vouches",
        sql: include_str!("sql/0020_vouches.sql"),
    },
    Migration {
        version: 21,
        name: "audit_items",
        sql: include_str!("sql/0021_audit_items.sql"),
    },
    Migration {
        version: 22,
        name: "site_logs",
        sql: include_str!("sql/0022_site_logs.sql"),
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

/// A foreign key no index serves: its child columns begin no index of the child table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UnindexedKey {
    /// The table holding the reference.
    pub(crate) table: String,
    /// Its referring columns, in the key's order.
    pub(crate) columns: Vec<String>,
    /// The table it refers to.
    pub(crate) parent: String,
}

/// Every foreign key of the database whose child columns are not the leading columns of an
/// index of the child table (in any order; the rowid when the key is the table's `INTEGER
/// PRIMARY KEY`), read from the catalogue.
///
/// With foreign keys on, SQLite looks up the rows referring to each parent row a statement
/// deletes or re-keys; without such an index that lookup reads the whole child table, so a
/// deletion of many parent rows costs their number times the child table's size.
pub(crate) fn unindexed_foreign_keys(conn: &Connection) -> rusqlite::Result<Vec<UnindexedKey>> {
    let tables: Vec<(String, bool)> = conn
        .prepare(
            "SELECT name, wr FROM pragma_table_list WHERE schema = 'main' AND type = 'table' \
             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut unindexed = Vec::new();
    for (table, without_rowid) in tables {
        let keys = foreign_keys_of(conn, &table)?;
        if keys.is_empty() {
            continue;
        }
        let leads = index_columns_of(conn, &table, without_rowid)?;
        for (parent, columns) in keys {
            let served = leads.iter().any(|index| {
                index.len() >= columns.len()
                    && columns.iter().all(|c| index[..columns.len()].contains(c))
            });
            if !served {
                unindexed.push(UnindexedKey {
                    table: table.clone(),
                    columns,
                    parent,
                });
            }
        }
    }
    Ok(unindexed)
}

/// The foreign keys of `table`: each parent table with the child columns, in key order.
fn foreign_keys_of(conn: &Connection, table: &str) -> rusqlite::Result<Vec<(String, Vec<String>)>> {
    let mut keys: Vec<(i64, String, Vec<String>)> = Vec::new();
    let mut stmt = conn.prepare(
        "SELECT id, \"table\", \"from\" FROM pragma_foreign_key_list(?1) ORDER BY id, seq",
    )?;
    let mut rows = stmt.query([table])?;
    while let Some(row) = rows.next()? {
        let (id, parent, column): (i64, String, String) = (row.get(0)?, row.get(1)?, row.get(2)?);
        match keys.last_mut() {
            Some((last, _, columns)) if *last == id => columns.push(column),
            _ => keys.push((id, parent, vec![column])),
        }
    }
    Ok(keys
        .into_iter()
        .map(|(_, parent, columns)| (parent, columns))
        .collect())
}

/// The columns of each complete (not partial) index of `table`, in index order, and the
/// rowid alias (an `INTEGER PRIMARY KEY` of a rowid table) as an index of its own.
fn index_columns_of(
    conn: &Connection,
    table: &str,
    without_rowid: bool,
) -> rusqlite::Result<Vec<Vec<String>>> {
    let names: Vec<String> = conn
        .prepare("SELECT name FROM pragma_index_list(?1) WHERE partial = 0")?
        .query_map([table], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut indexes = Vec::with_capacity(names.len() + 1);
    let mut info =
        conn.prepare("SELECT coalesce(name, '') FROM pragma_index_info(?1) ORDER BY seqno")?;
    for name in names {
        let columns = info
            .query_map([name], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        indexes.push(columns);
    }
    if !without_rowid {
        let key: Vec<(String, String)> = conn
            .prepare("SELECT name, type FROM pragma_table_info(?1) WHERE pk > 0")?
            .query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        if let [(column, kind)] = key.as_slice()
            && kind.eq_ignore_ascii_case("INTEGER")
        {
            indexes.push(vec![column.clone()]);
        }
    }
    Ok(indexes)
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
    fn every_foreign_key_has_an_index_beginning_with_its_columns() {
        let mut conn = Connection::open_in_memory().expect("open");
        migrate_to(&mut conn, SCHEMA_VERSION)
            .map_err(|(m, e)| format!("{}: {e}", m.name))
            .expect("fresh");
        let keys: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema m, pragma_foreign_key_list(m.name) \
                 WHERE m.type = 'table'",
                [],
                |r| r.get(0),
            )
            .expect("foreign keys");
        assert!(
            keys >= 5,
            "the rule reads the keys of the catalogue: {keys}"
        );
        assert_eq!(unindexed_foreign_keys(&conn).expect("read"), Vec::new());
    }

    /// Version 12 is the schema that made a forget read every other partition's episodes
    /// once per fingerprint: the rule names both of its keys without an index.
    #[test]
    fn the_rule_finds_the_keys_version_12_left_without_an_index() {
        let mut conn = Connection::open_in_memory().expect("open");
        migrate_to(&mut conn, 12)
            .map_err(|(m, e)| format!("{}: {e}", m.name))
            .expect("version 12");
        let found: Vec<(String, Vec<String>, String)> = unindexed_foreign_keys(&conn)
            .expect("read")
            .into_iter()
            .map(|k| (k.table, k.columns, k.parent))
            .collect();
        let key = |table: &str| {
            (
                table.to_owned(),
                vec!["fp_id".to_owned()],
                "trajectory_fingerprint".to_owned(),
            )
        };
        assert_eq!(
            found,
            [
                key("trajectory_episode"),
                key("trajectory_fingerprint_field")
            ]
        );
    }

    #[test]
    fn a_foreign_key_is_served_only_by_an_index_that_begins_with_its_columns() {
        let conn = Connection::open_in_memory().expect("open");
        conn.execute_batch(
            "CREATE TABLE parent (id INTEGER PRIMARY KEY, a TEXT, b TEXT, UNIQUE (a, b));
             CREATE TABLE bare (p INTEGER REFERENCES parent (id));
             CREATE TABLE second (z TEXT, p INTEGER REFERENCES parent (id));
             CREATE INDEX second_by_z ON second (z, p);
             CREATE TABLE partial (p INTEGER REFERENCES parent (id));
             CREATE INDEX partial_some ON partial (p) WHERE p > 10;
             CREATE TABLE by_rowid (p INTEGER PRIMARY KEY REFERENCES parent (id));
             CREATE TABLE pair (a TEXT, b TEXT, c TEXT, FOREIGN KEY (a, b) REFERENCES parent (a, b));
             CREATE INDEX pair_reversed ON pair (b, a, c);
             CREATE TABLE keyed (a TEXT, b TEXT, PRIMARY KEY (a, b),
                                 FOREIGN KEY (a, b) REFERENCES parent (a, b)) WITHOUT ROWID;
             CREATE TABLE half (a TEXT, b TEXT, FOREIGN KEY (a, b) REFERENCES parent (a, b));
             CREATE INDEX half_a ON half (a);",
        )
        .expect("tables");
        let found: Vec<(String, Vec<String>)> = unindexed_foreign_keys(&conn)
            .expect("read")
            .into_iter()
            .map(|k| {
                assert_eq!(k.parent, "parent");
                (k.table, k.columns)
            })
            .collect();
        let names =
            |t: &str, c: &[&str]| (t.to_owned(), c.iter().map(|c| (*c).to_owned()).collect());
        assert_eq!(
            found,
            [
                names("bare", &["p"]),
                names("half", &["a", "b"]),
                names("partial", &["p"]),
                names("second", &["p"]),
            ]
        );
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
