//! `cargo xtask bench [--quick] [--no-run] [-- <cargo bench arguments>]`: runs every
//! criterion bench of the workspace at each size, then prints one table (each figure next to
//! the baseline measured in the same run, and their ratio) and writes
//! `target/bench-report/report.md` with an SVG chart of cost against N per workload figure.
//!
//! Sizes reach the benches through `AGENT_MEMORY_BENCH_SIZES`: `1000,10000,100000`, or
//! `1000` with `--quick`. `--no-run` only collects what the last run left. The naming
//! convention the collector reads is described in [`collect`].

mod chart;
mod collect;
mod report;

use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};

use crate::{cargo, target_dir, workspace_root};

const FULL_SIZES: &str = "1000,10000,100000";
const QUICK_SIZES: &str = "1000";

pub(crate) fn run(args: &[String]) -> Result<()> {
    let (ours, cargo_args) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let mut sizes = FULL_SIZES;
    let mut execute = true;
    for arg in ours {
        match arg.as_str() {
            "--quick" => sizes = QUICK_SIZES,
            "--no-run" => execute = false,
            other => bail!(
                "`cargo xtask bench` takes --quick, --no-run and `-- <cargo bench arguments>` (got {other:?})"
            ),
        }
    }
    let root = workspace_root();
    let target = target_dir(&root);
    let criterion_dir = target.join("criterion");
    let figures_dir = target.join("bench-figures");
    let since = if execute {
        // Figures are appended by the benches, so last run's lines must go first.
        clear_dir(&figures_dir)?;
        // File times can be coarser than the clock; a little slack keeps this run's results.
        let started = SystemTime::now() - Duration::from_secs(2);
        let mut bench_args = vec!["bench"];
        // `-- -p <crate>` narrows the run to one crate; otherwise every bench runs.
        if !cargo_args
            .iter()
            .any(|a| a == "-p" || a.starts_with("--package"))
        {
            bench_args.push("--workspace");
        }
        bench_args.extend(cargo_args.iter().map(String::as_str));
        cargo(&root, &bench_args, &[("AGENT_MEMORY_BENCH_SIZES", sizes)])?;
        Some(started)
    } else {
        None
    };
    let collected = collect::collect(&criterion_dir, &figures_dir, since)?;
    for reason in &collected.skipped {
        eprintln!("skipped {reason}");
    }
    collect::require_results(&collected, &criterion_dir, &figures_dir)?;
    print!("{}", report::table(&collected.rows));
    let out = target.join("bench-report");
    write_report(&out, &collected.rows, sizes)?;
    println!("report: {}", out.join("report.md").display());
    Ok(())
}

/// Writes `report.md` and every chart into `out`, replacing what an earlier run left.
fn write_report(out: &Path, rows: &[collect::Row], sizes: &str) -> Result<()> {
    clear_dir(out)?;
    for data in report::charts(rows) {
        let path = out.join(&data.file);
        std::fs::write(&path, chart::svg(&data)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let path = out.join("report.md");
    std::fs::write(&path, report::markdown(rows, sizes))
        .with_context(|| format!("writing {}", path.display()))
}

/// Empties `dir`, creating it if needed.
fn clear_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("clearing {}", dir.display())),
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}
