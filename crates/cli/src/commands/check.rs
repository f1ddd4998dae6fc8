//! `agent-memory check`: SQLite's integrity check plus the store's own invariants (watermarks,
//! evidence counts, the token index, session numbering, ...), one line per check and one per
//! finding; exit 1 when anything is found. The file is opened read-only and never changed.

use anyhow::{Result, bail};
use schemars::{JsonSchema, Schema};
use serde::Serialize;

use agent_memory_sqlite::{CHECKS, Finding, SqliteStore};

use crate::GlobalArgs;
use crate::output::{Table, print_json};
use crate::progress::Progress;

/// `check` takes no arguments of its own.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckArgs {}

/// The report, as printed with `--json`.
#[derive(Debug, Serialize, JsonSchema)]
struct Report<'a> {
    database: String,
    checks: Vec<CheckRow>,
    findings: Vec<FindingRow<'a>>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct CheckRow {
    name: &'static str,
    description: &'static str,
    findings: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
struct FindingRow<'a> {
    check: &'static str,
    location: &'a str,
    detail: &'a str,
}

/// The schema of `check --json`.
pub(super) fn schemas() -> Vec<(&'static str, Schema)> {
    vec![crate::ops::output::<Report<'static>>("check.output")]
}

pub(crate) fn run(_args: &CheckArgs, global: &GlobalArgs) -> Result<()> {
    if crate::database::is_postgres(&global.db) {
        bail!(
            "check reads a SQLite file; {} is a PostgreSQL database, whose own tools check it (amcheck, pg_amcheck)",
            crate::database::describe(&global.db)
        );
    }
    if !global.db.is_file() {
        bail!("no database at {}", global.db.display());
    }
    let store = SqliteStore::open_read_only(&global.db)?;
    let progress = Progress::start(None, "checking");
    let findings = store.check();
    progress.finish();
    let findings = findings?;
    let report = report(global, &findings);
    if global.json {
        print_json(&report)?;
    } else {
        print!("{}", table(&report));
    }
    if !findings.is_empty() {
        bail!("{} finding(s) in {}", findings.len(), global.db.display());
    }
    Ok(())
}

fn report<'a>(global: &GlobalArgs, findings: &'a [Finding]) -> Report<'a> {
    Report {
        database: global.db.display().to_string(),
        checks: CHECKS
            .iter()
            .map(|check| CheckRow {
                name: check.name,
                description: check.description,
                findings: findings.iter().filter(|f| f.check == check.name).count(),
            })
            .collect(),
        findings: findings
            .iter()
            .map(|f| FindingRow {
                check: f.check,
                location: &f.location,
                detail: &f.detail,
            })
            .collect(),
    }
}

fn table(report: &Report<'_>) -> String {
    let mut checks = Table::new(["check", "result"]);
    for check in &report.checks {
        let result = match check.findings {
            0 => "ok".to_owned(),
            n => format!("{n} finding(s)"),
        };
        checks.row([check.name.to_owned(), result]);
    }
    if report.findings.is_empty() {
        return format!("{checks}\n{}: no findings\n", report.database);
    }
    let mut findings = Table::new(["check", "where", "what"]);
    for f in &report.findings {
        findings.row([
            f.check.to_owned(),
            f.location.to_owned(),
            f.detail.to_owned(),
        ]);
    }
    format!("{checks}\n{findings}")
}
