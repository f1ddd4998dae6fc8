//! `check`: SQLite's integrity check plus the store's own invariants (watermarks, evidence
//! counts, the token index, session numbering, ...), as one report with every check and
//! every finding. It only reads. A PostgreSQL database is checked by PostgreSQL's own tools
//! (amcheck, pg_amcheck), so there it is an error naming the database.

use std::path::Path;
use std::sync::Arc;

use crate::database::{Store, describe, is_postgres};
use crate::{Error, Result};
use schemars::JsonSchema;
use serde::Serialize;

use crate::Env;

/// Opens the database `db` to be checked: a SQLite file, read-only, never created or changed.
/// A PostgreSQL URL is refused without connecting (naming it without its password), and so
/// is a path that is no file.
pub fn open(db: &Path) -> Result<Store> {
    if is_postgres(db) {
        return Err(not_sqlite(&describe(db)));
    }
    if !db.is_file() {
        return Err(Error::not_found(
            db.display().to_string(),
            format!("no database at {}", db.display()),
        ));
    }
    Ok(Arc::new(agent_memory_sqlite::SqliteStore::open_read_only(
        db,
    )?))
}

/// The refusal to check the PostgreSQL database `database`.
fn not_sqlite(database: &str) -> Error {
    Error::invalid(
        database,
        format!(
            "check reads a SQLite file; {database} is a PostgreSQL database, whose own tools check it (amcheck, pg_amcheck)"
        ),
    )
}

/// The report of a check.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// The database checked.
    pub database: String,
    /// Every check, with its number of findings.
    pub checks: Vec<CheckRow>,
    /// Every finding; none when the database is sound.
    pub findings: Vec<FindingRow>,
}

/// One check and what it found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckRow {
    /// Its short name.
    pub name: &'static str,
    /// What it verifies.
    pub description: &'static str,
    /// How many findings it reported.
    pub findings: usize,
}

/// One thing a check found wrong.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FindingRow {
    /// The check that found it.
    pub check: &'static str,
    /// Where: a table and the key of the row.
    pub location: String,
    /// What is wrong.
    pub detail: String,
}

/// Checks the store: every check of a SQLite database, with what each found.
pub fn check(env: &Env<'_>, _: crate::operations::NoInput) -> Result<Report> {
    let database = env.store.location();
    let Some(findings) = env.store.check() else {
        return Err(not_sqlite(&database));
    };
    let findings = findings?;
    Ok(Report {
        checks: agent_memory_sqlite::CHECKS
            .iter()
            .map(|check| CheckRow {
                name: check.name,
                description: check.description,
                findings: findings.iter().filter(|f| f.check == check.name).count(),
            })
            .collect(),
        findings: findings
            .into_iter()
            .map(|f| FindingRow {
                check: f.check,
                location: f.location,
                detail: f.detail,
            })
            .collect(),
        database,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_fresh_database_has_no_findings_and_lists_every_check() {
        let store = crate::tests::in_memory();
        let report =
            super::check(&crate::tests::env_on(&store), Default::default()).expect("checked");
        assert!(report.findings.is_empty(), "{:?}", report.findings);
        assert_eq!(report.checks.len(), agent_memory_sqlite::CHECKS.len());
        assert!(report.checks.iter().all(|c| c.findings == 0));
    }
}
