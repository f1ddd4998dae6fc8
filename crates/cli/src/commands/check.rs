//! `agent-memory check`: SQLite's integrity check plus the store's own invariants (watermarks,
//! evidence counts, the token index, session numbering, ...), the contract's `check`, one
//! line per check and one per finding; exit 1 when anything is found. The file is opened
//! read-only and never changed.

use anyhow::{Result, bail};

use agent_memory_contract::check::Report;

use crate::GlobalArgs;
use crate::output::{Table, print_json};
use crate::progress::Progress;

/// `check` takes no arguments of its own.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckArgs {}

pub(crate) fn run(_args: &CheckArgs, global: &GlobalArgs) -> Result<()> {
    let store = crate::ops::check::open(&global.db)?;
    let progress = Progress::start(None, "checking");
    let report = crate::ops::check::check(&global.env(&store), Default::default());
    progress.finish();
    let report = report?;
    if global.json {
        print_json(&report)?;
    } else {
        print!("{}", table(&report));
    }
    if !report.findings.is_empty() {
        bail!(
            "{} finding(s) in {}",
            report.findings.len(),
            report.database
        );
    }
    Ok(())
}

fn table(report: &Report) -> String {
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
