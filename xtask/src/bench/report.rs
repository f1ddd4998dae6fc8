//! Rendering collected rows: the terminal table, the Markdown report and the data of each
//! chart. Pure functions of the rows, so the output is the same for the same results.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::collect::{Row, Unit};

/// The six columns shown for a row, formatted.
fn cells(row: &Row) -> [String; 6] {
    [
        row.workload.clone(),
        row.figure.clone(),
        row.n.to_string(),
        value(&row.unit, row.ours),
        row.baseline
            .map_or_else(|| "-".to_owned(), |b| value(&row.unit, b)),
        row.ratio()
            .map_or_else(|| "-".to_owned(), |r| format!("{r:.2}x")),
    ]
}

const HEADER: [&str; 6] = ["workload", "figure", "N", "ours", "baseline", "ratio"];

/// The table printed on the terminal, columns aligned (text left, numbers right).
pub(crate) fn table(rows: &[Row]) -> String {
    let body: Vec<[String; 6]> = rows.iter().map(cells).collect();
    let mut widths = HEADER.map(str::len);
    for line in &body {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header = HEADER.map(str::to_owned);
    for line in std::iter::once(&header).chain(&body) {
        let mut text = String::new();
        for (column, (cell, width)) in line.iter().zip(widths).enumerate() {
            let pad = width - cell.chars().count();
            if column >= 2 {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            }
            text.push_str("  ");
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

/// The Markdown report: a section per workload with its table and charts.
pub(crate) fn markdown(rows: &[Row], sizes: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmark report\n");
    let _ = writeln!(
        out,
        "Sizes N: {}. A time is criterion's median per iteration (with the rate where the \
         bench declares a throughput); other figures are measured by the bench itself. Each \
         baseline is measured in the same run. Ratio: how many times better ours is than the \
         baseline (above 1: ours is better).\n",
        sizes.replace(',', ", ")
    );
    let mut workloads: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
    for row in rows {
        workloads.entry(&row.workload).or_default().push(row);
    }
    for (workload, rows) in workloads {
        let _ = writeln!(out, "## {workload}\n");
        let _ = writeln!(out, "| figure | N | ours | baseline | ratio |");
        let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: |");
        for row in &rows {
            let [_, figure, n, ours, baseline, ratio] = cells(row);
            let _ = writeln!(out, "| {figure} | {n} | {ours} | {baseline} | {ratio} |");
        }
        out.push('\n');
        let mut figures: Vec<&str> = rows.iter().map(|r| r.figure.as_str()).collect();
        figures.dedup();
        for figure in figures {
            let _ = writeln!(
                out,
                "![{workload} {figure}]({})\n",
                chart_file(workload, figure)
            );
        }
    }
    out
}

/// One chart's data: cost against N, ours and (where measured) the baseline.
#[derive(Debug, PartialEq)]
pub(crate) struct ChartData {
    pub(crate) file: String,
    pub(crate) title: String,
    pub(crate) y_label: String,
    pub(crate) ours: Vec<(f64, f64)>,
    pub(crate) baseline: Vec<(f64, f64)>,
}

/// A chart per workload figure; times share one readable unit per chart.
pub(crate) fn charts(rows: &[Row]) -> Vec<ChartData> {
    let mut groups: BTreeMap<(&str, &str), Vec<&Row>> = BTreeMap::new();
    for row in rows {
        groups
            .entry((&row.workload, &row.figure))
            .or_default()
            .push(row);
    }
    groups
        .into_iter()
        .map(|((workload, figure), rows)| {
            let (y_label, scale) = match &rows[0].unit {
                Unit::Time { .. } => {
                    let largest = rows
                        .iter()
                        .flat_map(|r| std::iter::once(r.ours).chain(r.baseline))
                        .fold(0.0_f64, f64::max);
                    let (unit, ns) = time_unit(largest);
                    (format!("time per iteration ({unit})"), ns)
                }
                Unit::Named(unit) => (unit.clone(), 1.0),
            };
            let points = |value: fn(&Row) -> Option<f64>| -> Vec<(f64, f64)> {
                rows.iter()
                    .filter_map(|r| value(r).map(|v| (r.n as f64, v / scale)))
                    .collect()
            };
            ChartData {
                file: chart_file(workload, figure),
                title: format!("{workload}: {figure}"),
                y_label,
                ours: points(|r| Some(r.ours)),
                baseline: points(|r| r.baseline),
            }
        })
        .collect()
}

/// The chart's file name: workload and figure with anything but letters, digits, `-` and
/// `_` turned into `_`.
pub(crate) fn chart_file(workload: &str, figure: &str) -> String {
    let safe: String = format!("{workload}_{figure}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.svg")
}

/// The largest time unit in which `ns` is at least 1, and its size in nanoseconds.
fn time_unit(ns: f64) -> (&'static str, f64) {
    [("s", 1e9), ("ms", 1e6), ("µs", 1e3)]
        .into_iter()
        .find(|(_, size)| ns >= *size)
        .unwrap_or(("ns", 1.0))
}

fn value(unit: &Unit, value: f64) -> String {
    match unit {
        Unit::Time { per_iteration } => {
            let (name, size) = time_unit(value);
            let time = format!("{} {name}", number(value / size));
            match per_iteration {
                Some(t) if value > 0.0 => {
                    let per_second = t.count as f64 / (value / 1e9);
                    let what = if t.bytes { "B/s" } else { "elem/s" };
                    format!("{time} ({})", scaled(per_second, what))
                }
                _ => time,
            }
        }
        Unit::Named(name) => format!("{} {name}", number(value)),
    }
}

/// A rate with a decimal prefix: `812.3K elem/s`.
fn scaled(value: f64, what: &str) -> String {
    let (prefix, size) = [("G", 1e9), ("M", 1e6), ("K", 1e3)]
        .into_iter()
        .find(|(_, size)| value >= *size)
        .unwrap_or(("", 1.0));
    format!("{}{prefix} {what}", number(value / size))
}

/// About four significant digits, without exponent notation.
fn number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1000.0 {
        format!("{value:.0}")
    } else if magnitude >= 100.0 {
        format!("{value:.1}")
    } else if magnitude >= 10.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::super::collect::Throughput;
    use super::*;

    fn rows() -> Vec<Row> {
        let time = |per_iteration| Unit::Time { per_iteration };
        let row = |workload: &str, figure: &str, n, unit: Unit, ours, baseline, lower| Row {
            workload: workload.to_owned(),
            figure: figure.to_owned(),
            n,
            unit,
            ours,
            baseline,
            lower_is_better: lower,
        };
        let elements = Some(Throughput {
            count: 1000,
            bytes: false,
        });
        vec![
            row(
                "W-rec",
                "templatize",
                1000,
                time(elements),
                1.25e6,
                Some(9.5e7),
                true,
            ),
            row(
                "W-rec",
                "templatize",
                10000,
                time(elements),
                1.3e7,
                Some(9.9e9),
                true,
            ),
            row("W-rec", "yaml", 1000, time(None), 850.0, None, true),
            row(
                "W-traj",
                "recall p99, exact",
                1000,
                Unit::Named("us".into()),
                87.5,
                Some(18000.0),
                true,
            ),
            row(
                "W-traj",
                "record",
                1000,
                Unit::Named("episodes/s".into()),
                9400.0,
                Some(470.0),
                false,
            ),
        ]
    }

    #[test]
    fn the_report_renders_each_workload_with_its_table_and_charts() {
        insta::assert_snapshot!(markdown(&rows(), "1000,10000"));
    }

    #[test]
    fn the_terminal_table_aligns_its_columns() {
        insta::assert_snapshot!(table(&rows()));
    }

    #[test]
    fn charts_put_times_in_one_unit_and_keep_missing_baselines_out() {
        let charts = charts(&rows());
        let files: Vec<&str> = charts.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(
            files,
            [
                "W-rec_templatize.svg",
                "W-rec_yaml.svg",
                "W-traj_recall_p99__exact.svg",
                "W-traj_record.svg"
            ]
        );
        assert_eq!(charts[0].y_label, "time per iteration (s)");
        assert_eq!(charts[0].ours, [(1000.0, 0.00125), (10000.0, 0.013)]);
        assert_eq!(charts[0].baseline, [(1000.0, 0.095), (10000.0, 9.9)]);
        assert_eq!(charts[1].y_label, "time per iteration (ns)");
        assert!(charts[1].baseline.is_empty());
        assert_eq!(charts[3].y_label, "episodes/s");
    }

    #[test]
    fn every_chart_is_an_svg_with_its_title_and_lines() {
        for data in charts(&rows()) {
            let svg = super::super::chart::svg(&data).expect("svg");
            assert!(svg.starts_with("<svg"), "{}", data.file);
            assert!(svg.contains(&data.title), "{}", data.file);
            assert!(svg.contains("ours"), "{}", data.file);
            assert_eq!(
                svg.contains("baseline"),
                !data.baseline.is_empty(),
                "{}",
                data.file
            );
            assert!(svg.contains("<polyline"), "{}", data.file);
        }
    }

    #[test]
    fn numbers_keep_about_four_significant_digits() {
        for (v, text) in [
            (0.5, "0.500"),
            (12.345, "12.35"),
            (123.45, "123.5"),
            (98765.4, "98765"),
        ] {
            assert_eq!(number(v), text);
        }
    }
}
