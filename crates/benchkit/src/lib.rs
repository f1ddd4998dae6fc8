//! What the workspace's benches share with each other and with `cargo xtask bench`, which
//! collects what they measure:
//!
//! - the sizes a run asks for ([`sizes`], from `AGENT_MEMORY_BENCH_SIZES`);
//! - whether a run keeps figures ([`keeps_figures`]): only `cargo bench`, which passes
//!   `--bench`, does; `cargo test --benches` (CI's smoke run) runs every path and keeps
//!   nothing;
//! - the figure criterion cannot express, as a line of `<target>/bench-figures/<file>.jsonl`
//!   ([`Figure`], written by [`keep`] and read back by `cargo xtask bench`);
//! - the median and percentiles of a sample;
//! - with the `postgres` feature, the bare `postgres` floor beneath W-traj-pg's records
//!   (module `pg_floor`).

use std::io::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[cfg(feature = "postgres")]
pub mod pg_floor;

/// The variable naming the sizes (N) a bench run measures, comma-separated.
pub const SIZES_VAR: &str = "AGENT_MEMORY_BENCH_SIZES";

/// One figure: a line of a figures file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// The workload, e.g. `W-bad`.
    pub workload: String,
    /// What was measured, e.g. `recorded run median on sqlite`.
    pub figure: String,
    /// The workload's size.
    pub n: u64,
    /// The measured value, in `unit`.
    pub value: f64,
    /// The unit, e.g. `us` or `runs/s`.
    pub unit: String,
    /// The same figure measured another way in the same run (the baseline it is compared
    /// with), in the same unit.
    pub baseline: Option<f64>,
    /// Whether a smaller value is better.
    pub lower_is_better: bool,
    /// Which side the value is: `ours` (when absent) or `baseline`, for a figure whose
    /// baseline is written as a line of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
}

impl Figure {
    /// `value` of `figure` at size `n` of `workload`, in `unit`, lower being better, without a
    /// baseline.
    pub fn new(workload: &str, figure: &str, n: usize, value: f64, unit: &str) -> Figure {
        Figure {
            workload: workload.to_owned(),
            figure: figure.to_owned(),
            n: n as u64,
            value,
            unit: unit.to_owned(),
            baseline: None,
            lower_is_better: true,
            side: None,
        }
    }

    /// The figure compared with `baseline`.
    #[must_use]
    pub fn against(mut self, baseline: impl Into<Option<f64>>) -> Figure {
        self.baseline = baseline.into();
        self
    }

    /// The figure, a larger value being better (a rate).
    #[must_use]
    pub fn higher_is_better(mut self) -> Figure {
        self.lower_is_better = false;
        self
    }
}

impl std::fmt::Display for Figure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} n={}: {:.3} {}",
            self.workload, self.figure, self.n, self.value, self.unit
        )?;
        if let Some(baseline) = self.baseline {
            write!(f, " (baseline {baseline:.3})")?;
        }
        Ok(())
    }
}

/// The sizes `AGENT_MEMORY_BENCH_SIZES` names (`1000,10000`), else `default`. Entries that
/// are not numbers are left out.
pub fn sizes(default: &[usize]) -> Vec<usize> {
    match std::env::var(SIZES_VAR) {
        Ok(list) => parse_sizes(&list),
        Err(_) => default.to_vec(),
    }
}

fn parse_sizes(list: &str) -> Vec<usize> {
    list.split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect()
}

/// Whether this run keeps figures: `cargo bench` passes `--bench`; `cargo test --benches`
/// (CI's smoke run) passes neither `--bench` nor, for a bench without libtest's harness,
/// `--test`.
pub fn keeps_figures() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// The workspace's target folder: `CARGO_TARGET_DIR`, else `target` at the workspace root.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    )
}

/// The folder of the figures files, `<target>/bench-figures`.
pub fn figures_dir() -> PathBuf {
    target_dir().join("bench-figures")
}

/// Prints each of `figures` to standard error and, when the run [keeps
/// figures](keeps_figures), appends them to `<target>/bench-figures/<file>`. A file that
/// cannot be written is said, not fatal: the figures were printed.
pub fn keep(file: &str, figures: &[Figure]) {
    for figure in figures {
        eprintln!("{figure}");
    }
    if !keeps_figures() {
        return;
    }
    let path = figures_dir().join(file);
    if let Err(e) = append(&path, figures) {
        eprintln!("cannot write figures to {}: {e}", path.display());
    }
}

/// Appends `figures` to the figures file `path`, one JSON line each, creating its folder.
pub fn append(path: &std::path::Path, figures: &[Figure]) -> std::io::Result<()> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder)?;
    }
    let mut text = String::new();
    for figure in figures {
        text.push_str(&serde_json::to_string(figure).map_err(std::io::Error::other)?);
        text.push('\n');
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(text.as_bytes())
}

/// The lower median of `samples`, which it sorts; NaN when there are none.
pub fn median(samples: &mut [f64]) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort_by(f64::total_cmp);
    samples[(samples.len() - 1) / 2]
}

/// The `p` quantile (0 to 1) of `samples` by nearest rank, sorting them; NaN when there are
/// none.
pub fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    percentile_of_sorted(samples, p)
}

/// [`percentile`] of samples already sorted ascending.
pub fn percentile_of_sorted(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_from_the_list() {
        assert_eq!(parse_sizes("1000, 10000,x,"), [1000, 10000]);
        assert_eq!(parse_sizes(""), Vec::<usize>::new());
    }

    #[test]
    fn percentiles_are_nearest_ranks() {
        let mut samples: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(percentile(&mut samples, 0.5), 50.0);
        assert_eq!(percentile(&mut samples, 0.99), 99.0);
        assert_eq!(percentile(&mut samples, 1.0), 100.0);
        assert_eq!(percentile(&mut samples, 0.0), 1.0);
        assert_eq!(median(&mut [3.0, 1.0, 2.0, 4.0]), 2.0);
        assert!(median(&mut []).is_nan());
        assert!(percentile(&mut [], 0.5).is_nan());
    }

    #[test]
    fn a_figure_is_one_json_line_read_back_as_written() {
        let folder = tempfile::tempdir().expect("folder");
        let path = folder.path().join("more/W-x.jsonl");
        let figures = [
            Figure::new("W-x", "calls/s", 1000, 12.5, "calls/s")
                .against(10.0)
                .higher_is_better(),
            Figure::new("W-x", "p50", 1000, 3.0, "us"),
        ];
        append(&path, &figures[..1]).expect("append");
        append(&path, &figures[1..]).expect("append");
        let text = std::fs::read_to_string(&path).expect("read");
        let read: Vec<Figure> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("a figure"))
            .collect();
        assert_eq!(read, figures);
        assert_eq!(
            text.lines().next(),
            Some(
                r#"{"workload":"W-x","figure":"calls/s","n":1000,"value":12.5,"unit":"calls/s","baseline":10.0,"lower_is_better":false}"#
            )
        );
        assert_eq!(
            figures[0].to_string(),
            "W-x calls/s n=1000: 12.500 calls/s (baseline 10.000)"
        );
    }
}
