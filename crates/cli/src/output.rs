//! Printing results: aligned text tables for people, JSON for machines.

use std::fmt;

use anyhow::{Context, Result};
use serde::Serialize;

/// A text table: columns padded to their widest cell, numbers aligned right.
#[derive(Debug)]
pub(crate) struct Table<const N: usize> {
    header: Option<[String; N]>,
    rows: Vec<[String; N]>,
}

impl<const N: usize> Table<N> {
    /// A table with these column names.
    pub(crate) fn new(header: [&str; N]) -> Self {
        Table {
            header: Some(header.map(str::to_owned)),
            rows: Vec::new(),
        }
    }

    /// The same table, printed without its header line.
    pub(crate) fn without_header(mut self) -> Self {
        self.header = None;
        self
    }

    /// Appends one row.
    pub(crate) fn row(&mut self, cells: [String; N]) {
        self.rows.push(cells);
    }
}

impl<const N: usize> fmt::Display for Table<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<&[String; N]> = self.header.iter().chain(&self.rows).collect();
        let mut widths = [0; N];
        for line in &lines {
            for (width, cell) in widths.iter_mut().zip(line.iter()) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let numeric = |column: usize| {
            !self.rows.is_empty() && self.rows.iter().all(|r| r[column].parse::<f64>().is_ok())
        };
        for line in lines {
            let mut text = String::new();
            for (column, cell) in line.iter().enumerate() {
                let pad = " ".repeat(widths[column] - cell.chars().count());
                if numeric(column) {
                    text.push_str(&pad);
                    text.push_str(cell);
                } else {
                    text.push_str(cell);
                    text.push_str(&pad);
                }
                text.push_str("  ");
            }
            writeln!(f, "{}", text.trim_end())?;
        }
        Ok(())
    }
}

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json(value: &impl Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("rendering JSON")?;
    println!("{text}");
    Ok(())
}

/// A size in bytes for people: `8.0 KiB`, `1.5 MiB`.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        for (bytes, text) in [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.0 KiB"),
            (8192, "8.0 KiB"),
            (1_572_864, "1.5 MiB"),
            (5 << 40, "5.0 TiB"),
        ] {
            assert_eq!(human_bytes(bytes), text, "{bytes}");
        }
    }

    #[test]
    fn tables_pad_text_left_and_numbers_right() {
        let mut table = Table::new(["table", "rows"]);
        table.row(["meta".to_owned(), "12".to_owned()]);
        table.row(["episodes".to_owned(), "3".to_owned()]);
        assert_eq!(
            table.to_string(),
            "table     rows\nmeta        12\nepisodes     3\n"
        );
        let mut bare = Table::new(["", ""]).without_header();
        bare.row(["a".to_owned(), "x".to_owned()]);
        assert_eq!(bare.to_string(), "a  x\n");
    }
}
