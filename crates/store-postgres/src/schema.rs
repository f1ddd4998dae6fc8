//! The schema's versions: forward-only migrations, recorded in the `schema_version` table of
//! the store's PostgreSQL schema.
//!
//! All pending migrations run in one transaction that first takes an advisory lock on the
//! schema, so two processes connecting at once never race: the second waits, then finds the
//! versions the first applied. PostgreSQL's DDL is transactional, so a failed migration
//! leaves the schema at its previous version. Versions only grow; a new table or column is a
//! new migration appended to [`MIGRATIONS`], never an edit of an old one.

use postgres::Client;

use crate::Error;

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
        name: "notes",
        sql: include_str!("sql/0006_notes.sql"),
    },
    Migration {
        version: 7,
        name: "write_times",
        sql: include_str!("sql/0007_write_times.sql"),
    },
    Migration {
        version: 8,
        name: "note_versions",
        sql: include_str!("sql/0008_note_versions.sql"),
    },
    Migration {
        version: 9,
        name: "browser_provenance",
        sql: include_str!("sql/0009_browser_provenance.sql"),
    },
    Migration {
        version: 10,
        name: "episode_provenance",
        sql: include_str!("sql/0010_episode_provenance.sql"),
    },
    Migration {
        version: 11,
        name: "event_provenance",
        sql: include_str!("sql/0011_event_provenance.sql"),
    },
    Migration {
        version: 12,
        name: "tool_log_provenance",
        sql: include_str!("sql/0012_tool_log_provenance.sql"),
    },
    Migration {
        version: 13,
        name: "browser_held",
        sql: include_str!("sql/0013_browser_held.sql"),
    },
    Migration {
        version: 14,
        name: "vouches",
        sql: include_str!("sql/0014_vouches.sql"),
    },
    Migration {
        version: 15,
        name: "audit_items",
        sql: include_str!("sql/0015_audit_items.sql"),
    },
    Migration {
        version: 16,
        name: "site_logs",
        sql: include_str!("sql/0016_site_logs.sql"),
    },
    Migration {
        version: 17,
        name: "audit_keep_run",
        sql: include_str!("sql/0017_audit_keep_run.sql"),
    },
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = match MIGRATIONS.last() {
    Some(last) => last.version,
    None => 0,
};

/// Creates the schema when missing and applies every migration above its version.
pub(crate) fn migrate(client: &mut Client, target: &str, schema: &str) -> Result<(), Error> {
    let connect = |source: postgres::Error| Error::Connect {
        target: target.to_owned(),
        source: Box::new(crate::error::Redacted::of(&source)),
    };
    let mut tx = client.transaction().map_err(connect)?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&crate::lock::MIGRATE, &schema],
    )
    .map_err(connect)?;
    // The name was checked to be a plain identifier, so it can be spliced into DDL.
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema};
         CREATE TABLE IF NOT EXISTS {schema}.schema_version (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))
    .map_err(connect)?;
    let found = version_in(&mut tx, schema).map_err(connect)?;
    if found > SCHEMA_VERSION {
        return Err(Error::TooNew {
            target: target.to_owned(),
            schema: schema.to_owned(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for migration in MIGRATIONS.iter().filter(|m| m.version > found) {
        let failed = |source| Error::Migration {
            target: target.to_owned(),
            schema: schema.to_owned(),
            version: migration.version,
            name: migration.name,
            source,
        };
        tx.batch_execute(&format!("SET LOCAL search_path TO {schema}"))
            .map_err(failed)?;
        tx.batch_execute(migration.sql).map_err(failed)?;
        tx.execute(
            &format!("INSERT INTO {schema}.schema_version (version, name) VALUES ($1, $2)"),
            &[&(migration.version as i32), &migration.name],
        )
        .map_err(failed)?;
    }
    tx.commit().map_err(connect)
}

/// Checks, without writing, that the schema is at this build's version.
pub(crate) fn require_current(
    client: &mut Client,
    target: &str,
    schema: &str,
) -> Result<(), Error> {
    let connect = |source: postgres::Error| Error::Connect {
        target: target.to_owned(),
        source: Box::new(crate::error::Redacted::of(&source)),
    };
    let exists = client
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL",
            &[&format!("{schema}.schema_version")],
        )
        .map_err(connect)?
        .get::<_, bool>(0);
    let found = if exists {
        let mut tx = client.transaction().map_err(connect)?;
        let found = version_in(&mut tx, schema).map_err(connect)?;
        tx.commit().map_err(connect)?;
        found
    } else {
        0
    };
    if found > SCHEMA_VERSION {
        return Err(Error::TooNew {
            target: target.to_owned(),
            schema: schema.to_owned(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found < SCHEMA_VERSION {
        return Err(Error::NeedsMigration {
            target: target.to_owned(),
            schema: schema.to_owned(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

fn version_in(tx: &mut postgres::Transaction<'_>, schema: &str) -> Result<u32, postgres::Error> {
    let version: Option<i32> = tx
        .query_one(
            &format!("SELECT max(version) FROM {schema}.schema_version"),
            &[],
        )?
        .get(0);
    Ok(version.map_or(0, |v| u32::try_from(v).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_ascend_from_one_without_gaps() {
        for (i, migration) in MIGRATIONS.iter().enumerate() {
            assert_eq!(migration.version as usize, i + 1, "{}", migration.name);
        }
    }
}
