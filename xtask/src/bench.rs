//! `cargo xtask bench [--quick] [--no-run] [-- <cargo bench arguments>]`: runs every
//! criterion bench of the workspace at each size, then prints one table (each figure next to
//! the baseline measured in the same run, and their ratio) and writes
//! `target/bench-report/report.md` with an SVG chart of cost against N per workload figure.
//!
//! Sizes reach the benches through `AGENT_MEMORY_BENCH_SIZES`: `1000,10000,100000`, or
//! `1000` with `--quick`. `--no-run` only collects what the last run left. The naming
//! convention the collector reads is described in [`collect`].
//!
//! The PostgreSQL benches measure over TCP on 127.0.0.1 against a throwaway cluster started
//! for the run (`target/pg-bench`, named in `AGENT_MEMORY_TEST_POSTGRES`). `--peers` also
//! runs popoto 1.10.1 on the same workload on Redis and on PostgreSQL ([`crate::peers`]),
//! whose figures become the baselines of ours, and the npm package's browser-agent-driver
//! drop-in against the reference's own classes (`W-bad drop-in (Node)`, skipped with a message
//! when no copy of the reference is found, [`crate::peers::bad_reference`]). After the
//! criterion benches, W-traj runs through the Python package ([`crate::python::bench`]) and
//! W-bad through the npm package ([`crate::node::bench`]), each figure of the latter next to
//! the Rust library's of this run.

mod chart;
mod collect;
mod report;

use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};

use crate::{cargo, peers, postgres, target_dir, workspace_root};

const FULL_SIZES: &str = "1000,10000,100000";
const QUICK_SIZES: &str = "1000";

pub(crate) fn run(args: &[String]) -> Result<()> {
    let (ours, cargo_args) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let mut sizes = FULL_SIZES;
    let mut execute = true;
    let mut peers = false;
    for arg in ours {
        match arg.as_str() {
            "--quick" => sizes = QUICK_SIZES,
            "--no-run" => execute = false,
            "--peers" => peers = true,
            other => bail!(
                "`cargo xtask bench` takes --quick, --no-run, --peers and `-- <cargo bench arguments>` (got {other:?})"
            ),
        }
    }
    if peers && !execute {
        bail!("`--peers` runs the peers, and `--no-run` runs nothing: use one of them");
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
        // The peers' venv comes first: with it, the run's PostgreSQL is its version 18, which
        // popoto needs, so ours and popoto share one server.
        let venv = if peers {
            Some(peers::Venv::prepare(&target)?)
        } else {
            None
        };
        // Found before the long run, so a copy named wrongly fails at once.
        let bad_reference = if peers {
            peers::bad_reference(&target)?
        } else {
            None
        };
        let server = match &venv {
            Some(venv) => Some(postgres::start_with_binaries(
                &root,
                "pg-bench",
                &venv.postgres_bin()?,
            )?),
            None => postgres::start(&root, "pg-bench")?,
        };
        let mut env: Vec<(String, String)> =
            vec![("AGENT_MEMORY_BENCH_SIZES".to_owned(), sizes.to_owned())];
        if let Some(server) = &server {
            env.extend(server.env());
            // Benches measure over loopback TCP, as remote agents reach the server.
            env.push((postgres::SERVER_VAR.to_owned(), server.tcp_url()));
        }
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut bench_args = vec!["bench"];
        // `-- -p <crate>` narrows the run to one crate; otherwise every bench runs.
        if !cargo_args
            .iter()
            .any(|a| a == "-p" || a.starts_with("--package"))
        {
            bench_args.push("--workspace");
        }
        bench_args.extend(cargo_args.iter().map(String::as_str));
        cargo(&root, &bench_args, &env)?;
        if let Some(venv) = &venv {
            let redis = peers::Redis::start()?;
            // The Python package on the same workload, next to the same calls in Rust and
            // to popoto on this Redis, timed by one Python process.
            crate::python::bench(&root, sizes, &figures_dir, Some(&redis.url()))?;
            venv.run_w_traj(
                &root,
                "redis",
                &redis.url(),
                "W-traj",
                sizes,
                &figures_dir.join("peers-redis.jsonl"),
            )?;
            drop(redis);
            if let Some(server) = &server {
                venv.run_w_traj(
                    &root,
                    "postgres",
                    &server.tcp_url(),
                    "W-traj-pg",
                    sizes,
                    &figures_dir.join("peers-postgres.jsonl"),
                )?;
            }
        } else {
            // The Python package on the same workload, next to the same calls in Rust.
            crate::python::bench(&root, sizes, &figures_dir, None)?;
        }
        // The Node package on W-bad, next to the Rust library's W-bad of this run.
        crate::node::bench(&root, sizes, &figures_dir, bad_reference.as_deref())?;
        if let Some(server) = server {
            server.stop()?;
        }
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
