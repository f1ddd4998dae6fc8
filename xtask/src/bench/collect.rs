//! Collecting one run's results: criterion's `estimates.json` + `benchmark.json` per
//! benchmark, and the custom figures' JSON lines, paired into one [`Row`] per workload,
//! figure and N.
//!
//! Naming convention read here:
//!
//! - criterion: group `"<workload>/<figure>"`, benchmark id `"ours"` or `"baseline"` with the
//!   parameter N (`BenchmarkId::new("ours", n)`); the figure is the median time per
//!   iteration, plus a rate where the group sets `Throughput::Elements` or `Bytes`. Any other
//!   function name `x` becomes its own figure `"<figure> [x]"` without a baseline;
//! - custom figures: `<target>/bench-figures/*.jsonl`, one object a line with `workload`,
//!   `figure`, `n`, `value`, `unit`, `baseline` (number or null), `lower_is_better`, and
//!   optionally `side`: `"baseline"` when `value` is a baseline measured on its own (a peer
//!   system run by another program), to be paired with ours of the same workload, figure and N.
//!
//! Repeated measurements of the same workload, figure and N are reduced to their median.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agent_memory_benchkit::Figure;
use anyhow::{Context, Result, bail};
use serde::Deserialize;

/// What one figure's value counts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Unit {
    /// Nanoseconds per iteration, from criterion; `per_iteration` is the throughput the
    /// group declared, so a rate can be shown next to the time.
    Time { per_iteration: Option<Throughput> },
    /// A unit named by a custom figure (`"us"`, `"bytes"`, `"episodes/s"`).
    Named(String),
}

/// Work done by one iteration, as criterion's `Throughput` records it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Throughput {
    pub(crate) count: u64,
    pub(crate) bytes: bool,
}

/// Which side of the comparison a measurement is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Ours,
    Baseline,
}

/// One measured value before pairing.
#[derive(Clone, Debug, PartialEq)]
struct Measurement {
    workload: String,
    figure: String,
    n: u64,
    side: Side,
    value: f64,
    unit: Unit,
    lower_is_better: bool,
}

/// One line of the report: our value at one N and, where the workload names one, the
/// baseline's value measured in the same run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row {
    pub(crate) workload: String,
    pub(crate) figure: String,
    pub(crate) n: u64,
    pub(crate) unit: Unit,
    pub(crate) ours: f64,
    pub(crate) baseline: Option<f64>,
    pub(crate) lower_is_better: bool,
}

impl Row {
    /// How many times better ours is than the baseline: above 1 means ours wins, whichever
    /// direction the figure counts in.
    pub(crate) fn ratio(&self) -> Option<f64> {
        let baseline = self.baseline?;
        let ratio = if self.lower_is_better {
            baseline / self.ours
        } else {
            self.ours / baseline
        };
        ratio.is_finite().then_some(ratio)
    }
}

/// Everything one run produced, and what was skipped, as one readable line each.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub(crate) rows: Vec<Row>,
    pub(crate) skipped: Vec<String>,
}

/// Reads `criterion_dir` (results written at or after `since`, so leftovers of benches that
/// no longer exist stay out) and every `*.jsonl` in `figures_dir`, and pairs them.
pub(crate) fn collect(
    criterion_dir: &Path,
    figures_dir: &Path,
    since: Option<SystemTime>,
) -> Result<Collected> {
    let mut skipped = Vec::new();
    let mut measurements = criterion_measurements(criterion_dir, since, &mut skipped)?;
    measurements.extend(figure_measurements(figures_dir, &mut skipped)?);
    let (rows, unpaired) = pair(measurements);
    skipped.extend(unpaired);
    Ok(Collected { rows, skipped })
}

#[derive(Deserialize)]
struct BenchmarkJson {
    group_id: String,
    function_id: Option<String>,
    value_str: Option<String>,
    throughput: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct EstimatesJson {
    median: Estimate,
}

#[derive(Deserialize)]
struct Estimate {
    point_estimate: f64,
}

fn criterion_measurements(
    dir: &Path,
    since: Option<SystemTime>,
    skipped: &mut Vec<String>,
) -> Result<Vec<Measurement>> {
    let mut found = Vec::new();
    for new_dir in result_dirs(dir)? {
        let estimates = new_dir.join("estimates.json");
        if let Some(since) = since {
            let modified = std::fs::metadata(&estimates)
                .and_then(|m| m.modified())
                .with_context(|| format!("reading the time of {}", estimates.display()))?;
            if modified < since {
                continue;
            }
        }
        let benchmark: BenchmarkJson = read_json(&new_dir.join("benchmark.json"))?;
        let median = read_json::<EstimatesJson>(&estimates)?
            .median
            .point_estimate;
        match measurement_of(benchmark, median) {
            Ok(m) => found.push(m),
            Err(reason) => skipped.push(format!("{}: {reason}", new_dir.display())),
        }
    }
    Ok(found)
}

/// Every `new` folder under `dir` that holds both criterion files, in path order.
fn result_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
        };
        for entry in entries {
            let path = entry
                .with_context(|| format!("reading {}", dir.display()))?
                .path();
            if !path.is_dir() {
                continue;
            }
            if path.file_name().is_some_and(|n| n == "new")
                && path.join("estimates.json").is_file()
                && path.join("benchmark.json").is_file()
            {
                found.push(path);
            } else {
                stack.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not what criterion writes", path.display()))
}

fn measurement_of(benchmark: BenchmarkJson, median_ns: f64) -> Result<Measurement, String> {
    let Some((workload, figure)) = benchmark.group_id.split_once('/') else {
        return Err(format!(
            "group {:?} is not named \"<workload>/<figure>\"",
            benchmark.group_id
        ));
    };
    let function = benchmark.function_id.unwrap_or_default();
    let (side, figure) = match function.as_str() {
        "ours" => (Side::Ours, figure.to_owned()),
        "baseline" => (Side::Baseline, figure.to_owned()),
        "" => return Err("benchmark id has no name (use \"ours\" or \"baseline\")".to_owned()),
        other => (Side::Ours, format!("{figure} [{other}]")),
    };
    let n = benchmark
        .value_str
        .as_deref()
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(|| "benchmark id has no numeric N as its parameter".to_owned())?;
    Ok(Measurement {
        workload: workload.to_owned(),
        figure,
        n,
        side,
        value: median_ns,
        unit: Unit::Time {
            per_iteration: benchmark.throughput.as_ref().and_then(throughput_of),
        },
        lower_is_better: true,
    })
}

/// Criterion's serialized `Throughput`: `{"Elements": n}`, `{"Bytes": n}`,
/// `{"BytesDecimal": n}`, or `{"ElementsAndBytes": {"elements": n, "bytes": m}}`.
fn throughput_of(value: &serde_json::Value) -> Option<Throughput> {
    let object = value.as_object()?;
    let (kind, amount) = object.iter().next()?;
    match kind.as_str() {
        "Elements" => amount.as_u64().map(|count| Throughput {
            count,
            bytes: false,
        }),
        "Bytes" | "BytesDecimal" => amount
            .as_u64()
            .map(|count| Throughput { count, bytes: true }),
        "ElementsAndBytes" => amount["elements"].as_u64().map(|count| Throughput {
            count,
            bytes: false,
        }),
        _ => None,
    }
}

fn figure_measurements(dir: &Path, skipped: &mut Vec<String>) -> Result<Vec<Measurement>> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<_>>()
            .with_context(|| format!("reading {}", dir.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    files.retain(|p| p.extension().is_some_and(|e| e == "jsonl"));
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let figure: Figure = match serde_json::from_str(line) {
                Ok(figure) => figure,
                Err(e) => {
                    skipped.push(format!("{}:{}: {e}", file.display(), index + 1));
                    continue;
                }
            };
            let measured = |side, value| Measurement {
                workload: figure.workload.clone(),
                figure: figure.figure.clone(),
                n: figure.n,
                side,
                value,
                unit: Unit::Named(figure.unit.clone()),
                lower_is_better: figure.lower_is_better,
            };
            let side = match figure.side.as_deref() {
                None | Some("ours") => Side::Ours,
                Some("baseline") => Side::Baseline,
                Some(other) => {
                    skipped.push(format!(
                        "{}:{}: side {other:?} is neither \"ours\" nor \"baseline\"",
                        file.display(),
                        index + 1
                    ));
                    continue;
                }
            };
            found.push(measured(side, figure.value));
            if let Some(baseline) = figure.baseline {
                found.push(measured(Side::Baseline, baseline));
            }
        }
    }
    Ok(found)
}

/// Pairs each `ours` with the `baseline` of the same workload, figure and N (medians where a
/// figure was measured more than once). A baseline without ours is reported, not shown.
fn pair(measurements: Vec<Measurement>) -> (Vec<Row>, Vec<String>) {
    type Key = (String, String, u64);
    let mut groups: BTreeMap<Key, Vec<Measurement>> = BTreeMap::new();
    for m in measurements {
        groups
            .entry((m.workload.clone(), m.figure.clone(), m.n))
            .or_default()
            .push(m);
    }
    let mut rows = Vec::new();
    let mut unpaired = Vec::new();
    for ((workload, figure, n), group) in groups {
        let side = |side: Side| -> Vec<f64> {
            group
                .iter()
                .filter(|m| m.side == side)
                .map(|m| m.value)
                .collect()
        };
        let Some(ours) = median(side(Side::Ours)) else {
            unpaired.push(format!(
                "{workload} {figure} N={n}: a baseline without ours"
            ));
            continue;
        };
        let first = &group[0];
        rows.push(Row {
            unit: first.unit.clone(),
            lower_is_better: first.lower_is_better,
            workload,
            figure,
            n,
            ours,
            baseline: median(side(Side::Baseline)),
        });
    }
    (rows, unpaired)
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// Fails unless the run produced at least one row, naming where it looked.
pub(crate) fn require_results(
    collected: &Collected,
    criterion_dir: &Path,
    figures_dir: &Path,
) -> Result<()> {
    if collected.rows.is_empty() {
        bail!(
            "no benchmark results in {} or {}: does any crate have a bench named as the convention says (group \"<workload>/<figure>\", ids \"ours\"/\"baseline\" with N)?",
            criterion_dir.display(),
            figures_dir.display()
        );
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes the two files criterion leaves for one benchmark under `criterion`.
    pub(crate) fn criterion_result(
        criterion: &Path,
        group: &str,
        function: &str,
        n: &str,
        median_ns: f64,
        throughput: &str,
    ) -> PathBuf {
        let dir = criterion
            .join(group.replace('/', "_"))
            .join(function)
            .join(n)
            .join("new");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let benchmark = format!(
            r#"{{"group_id":"{group}","function_id":"{function}","value_str":"{n}","throughput":{throughput},"full_id":"{group}/{function}/{n}","directory_name":"x","title":"{group}/{function}/{n}"}}"#
        );
        std::fs::write(dir.join("benchmark.json"), benchmark).expect("write");
        let estimate = |v: f64| {
            format!(
                r#"{{"confidence_interval":{{"confidence_level":0.95,"lower_bound":{v},"upper_bound":{v}}},"point_estimate":{v},"standard_error":1.0}}"#
            )
        };
        let estimates = format!(
            r#"{{"mean":{},"median":{},"median_abs_dev":{},"slope":null,"std_dev":{}}}"#,
            estimate(median_ns * 1.1),
            estimate(median_ns),
            estimate(1.0),
            estimate(2.0)
        );
        std::fs::write(dir.join("estimates.json"), estimates).expect("write");
        dir
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        criterion: PathBuf,
        figures: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        let criterion = dir.path().join("criterion");
        let figures = dir.path().join("bench-figures");
        std::fs::create_dir_all(&figures).expect("mkdir");
        Fixture {
            criterion,
            figures,
            _dir: dir,
        }
    }

    fn row(workload: &str, figure: &str, n: u64, ours: f64, baseline: Option<f64>) -> Row {
        Row {
            workload: workload.to_owned(),
            figure: figure.to_owned(),
            n,
            unit: Unit::Time {
                per_iteration: None,
            },
            ours,
            baseline,
            lower_is_better: true,
        }
    }

    #[test]
    fn criterion_ours_pairs_with_the_baseline_of_the_same_group_and_n() {
        let f = fixture();
        let c = &f.criterion;
        criterion_result(c, "W-rec/templatize", "ours", "1000", 100.0, "null");
        criterion_result(c, "W-rec/templatize", "baseline", "1000", 400.0, "null");
        criterion_result(c, "W-rec/templatize", "ours", "10000", 1000.0, "null");
        criterion_result(c, "W-rec/interpolate", "baseline", "10000", 9.0, "null");
        criterion_result(c, "W-rec/interpolate", "ours", "10000", 3.0, "null");
        let got = collect(c, &f.figures, None).expect("collect");
        assert_eq!(
            got.rows,
            [
                row("W-rec", "interpolate", 10000, 3.0, Some(9.0)),
                row("W-rec", "templatize", 1000, 100.0, Some(400.0)),
                row("W-rec", "templatize", 10000, 1000.0, None),
            ]
        );
        assert_eq!(got.rows[0].ratio(), Some(3.0));
        assert!(got.skipped.is_empty(), "{:?}", got.skipped);
    }

    #[test]
    fn throughput_kinds_are_read() {
        let table = [
            (r#"{"Elements":500}"#, Some((500, false))),
            (r#"{"Bytes":64}"#, Some((64, true))),
            (r#"{"BytesDecimal":64}"#, Some((64, true))),
            (
                r#"{"ElementsAndBytes":{"elements":7,"bytes":9}}"#,
                Some((7, false)),
            ),
            ("null", None),
        ];
        for (json, expected) in table {
            let f = fixture();
            criterion_result(&f.criterion, "W-turn/capture", "ours", "1000", 5.0, json);
            let got = collect(&f.criterion, &f.figures, None).expect("collect");
            let expected = Unit::Time {
                per_iteration: expected.map(|(count, bytes)| Throughput { count, bytes }),
            };
            assert_eq!(got.rows[0].unit, expected, "{json}");
        }
    }

    #[test]
    fn misnamed_benchmarks_are_skipped_with_a_reason_and_other_names_kept_apart() {
        let f = fixture();
        let c = &f.criterion;
        criterion_result(c, "nogroup", "ours", "1000", 1.0, "null");
        criterion_result(c, "W-bad/match", "ours", "large", 1.0, "null");
        criterion_result(c, "W-bad/match", "", "1000", 1.0, "null");
        criterion_result(c, "W-bad/match", "batched", "1000", 2.0, "null");
        let got = collect(c, &f.figures, None).expect("collect");
        assert_eq!(got.rows, [row("W-bad", "match [batched]", 1000, 2.0, None)]);
        let reasons = got.skipped.join("\n");
        assert!(
            reasons.contains("group \"nogroup\" is not named"),
            "{reasons}"
        );
        assert!(reasons.contains("no numeric N"), "{reasons}");
        assert!(reasons.contains("has no name"), "{reasons}");
    }

    #[test]
    fn results_older_than_the_run_are_left_out() {
        let f = fixture();
        let old = criterion_result(&f.criterion, "W-old/gone", "ours", "1000", 1.0, "null");
        criterion_result(&f.criterion, "W-new/kept", "ours", "1000", 1.0, "null");
        let now = SystemTime::now();
        let file = std::fs::File::options()
            .write(true)
            .open(old.join("estimates.json"))
            .expect("open");
        file.set_modified(now - std::time::Duration::from_secs(3600))
            .expect("set time");
        let since = Some(now - std::time::Duration::from_secs(60));
        let got = collect(&f.criterion, &f.figures, since).expect("collect");
        assert_eq!(got.rows, [row("W-new", "kept", 1000, 1.0, None)]);
    }

    #[test]
    fn figure_lines_carry_their_baseline_and_repeats_reduce_to_the_median() {
        let f = fixture();
        let lines = [
            r#"{"workload":"W-traj","figure":"recall p99, exact","n":1000,"value":90.0,"unit":"us","baseline":18000.0,"lower_is_better":true}"#,
            r#"{"workload":"W-traj","figure":"recall p99, exact","n":1000,"value":80.0,"unit":"us","baseline":17000.0,"lower_is_better":true}"#,
            r#"{"workload":"W-traj","figure":"recall p99, exact","n":1000,"value":70.0,"unit":"us","baseline":null,"lower_is_better":true}"#,
            "",
            r#"{"workload":"W-traj","figure":"record","n":1000,"value":9400.0,"unit":"episodes/s","baseline":470.0,"lower_is_better":false}"#,
            r#"{"workload":"W-traj","figure":"broken","n":"many"}"#,
        ];
        std::fs::write(f.figures.join("W-traj.jsonl"), lines.join("\n")).expect("write");
        std::fs::write(f.figures.join("notes.txt"), "not a figure file").expect("write");
        let got = collect(&f.criterion, &f.figures, None).expect("collect");
        let named = |figure: &str, ours, baseline, unit: &str, lower| Row {
            workload: "W-traj".to_owned(),
            figure: figure.to_owned(),
            n: 1000,
            unit: Unit::Named(unit.to_owned()),
            ours,
            baseline,
            lower_is_better: lower,
        };
        assert_eq!(
            got.rows,
            [
                named("recall p99, exact", 80.0, Some(17500.0), "us", true),
                named("record", 9400.0, Some(470.0), "episodes/s", false),
            ]
        );
        assert_eq!(got.rows[1].ratio(), Some(20.0));
        assert_eq!(got.skipped.len(), 1);
        assert!(
            got.skipped[0].contains("W-traj.jsonl:6"),
            "{:?}",
            got.skipped
        );
    }

    #[test]
    fn a_peer_file_of_baselines_pairs_with_ours_from_another_file() {
        let f = fixture();
        std::fs::write(
            f.figures.join("W-traj.jsonl"),
            r#"{"workload":"W-traj","figure":"first crystallize","n":1000,"value":20.0,"unit":"ms","baseline":null,"lower_is_better":true}"#,
        )
        .expect("write");
        let peer = [
            r#"{"workload":"W-traj","figure":"first crystallize","n":1000,"value":1100.0,"unit":"ms","baseline":null,"side":"baseline","lower_is_better":true}"#,
            r#"{"workload":"W-traj","figure":"first crystallize","n":1000,"value":1.0,"unit":"ms","baseline":null,"side":"theirs","lower_is_better":true}"#,
        ];
        std::fs::write(f.figures.join("peers-redis.jsonl"), peer.join("\n")).expect("write");
        let got = collect(&f.criterion, &f.figures, None).expect("collect");
        assert_eq!(
            got.rows,
            [Row {
                workload: "W-traj".to_owned(),
                figure: "first crystallize".to_owned(),
                n: 1000,
                unit: Unit::Named("ms".to_owned()),
                ours: 20.0,
                baseline: Some(1100.0),
                lower_is_better: true,
            }]
        );
        assert_eq!(got.rows[0].ratio(), Some(55.0));
        assert_eq!(got.skipped.len(), 1);
        assert!(
            got.skipped[0].contains("peers-redis.jsonl:2") && got.skipped[0].contains("theirs"),
            "{:?}",
            got.skipped
        );
    }

    #[test]
    fn a_baseline_without_ours_is_reported() {
        let f = fixture();
        criterion_result(&f.criterion, "W-rec/yaml", "baseline", "1000", 1.0, "null");
        let got = collect(&f.criterion, &f.figures, None).expect("collect");
        assert!(got.rows.is_empty());
        assert_eq!(got.skipped, ["W-rec yaml N=1000: a baseline without ours"]);
        let err = require_results(&got, &f.criterion, &f.figures).expect_err("empty");
        assert!(
            err.to_string().starts_with("no benchmark results in"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_results_folder_is_no_results_not_an_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let got =
            collect(&dir.path().join("none"), &dir.path().join("none2"), None).expect("collect");
        assert!(got.rows.is_empty() && got.skipped.is_empty());
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        for (values, expected) in [
            (vec![], None),
            (vec![3.0], Some(3.0)),
            (vec![5.0, 1.0, 3.0], Some(3.0)),
            (vec![4.0, 1.0, 3.0, 2.0], Some(2.5)),
        ] {
            assert_eq!(median(values.clone()), expected, "{values:?}");
        }
    }
}
