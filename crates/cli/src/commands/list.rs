//! `agent-memory list`: every partition, session and browser scope the database holds.

use anyhow::Result;

use crate::GlobalArgs;
use crate::ops::{self, memory::MemoryList};
use crate::output::{Table, human_bytes, print_json};

/// `list` takes no arguments of its own.
#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {}

pub(crate) fn run(_args: &ListArgs, global: &GlobalArgs) -> Result<()> {
    let store = global.open_for_reading()?;
    let list = ops::memory::list(&global.env(&store), Default::default())?;
    if global.json {
        return print_json(&list);
    }
    print!("{}", render(&list));
    Ok(())
}

/// A last write as a table shows it: the RFC 3339 time to the second, `-` when not known.
fn when(last_write: Option<&String>) -> String {
    last_write.map_or_else(
        || "-".to_owned(),
        |t| match t.split_once('.') {
            Some((seconds, _)) => format!("{seconds}Z"),
            None => t.clone(),
        },
    )
}

/// The listing as four tables, each under its heading; an empty memory says so. Sizes are
/// the stored bytes of what each holds, for people (`--json` has them exactly).
fn render(list: &MemoryList) -> String {
    let mut text = String::new();
    let mut partitions = Table::new([
        "partition",
        "fields",
        "episodes",
        "patterns",
        "pending",
        "size",
        "last write",
    ]);
    for p in &list.partitions {
        partitions.row([
            p.partition.clone(),
            p.fields.join(","),
            p.episodes.to_string(),
            p.patterns.to_string(),
            p.pending_groups.to_string(),
            human_bytes(p.bytes),
            when(p.last_write.as_ref()),
        ]);
    }
    let mut turns = Table::new(["session", "events", "size", "last write"]);
    for s in &list.turn_sessions {
        turns.row([
            s.session.clone(),
            s.events.to_string(),
            human_bytes(s.bytes),
            when(s.last_write.as_ref()),
        ]);
    }
    let mut logs = Table::new(["session", "tool logs", "size", "last write"]);
    for s in &list.tool_log_sessions {
        logs.row([
            s.session.clone(),
            s.logs.to_string(),
            human_bytes(s.bytes),
            when(s.last_write.as_ref()),
        ]);
    }
    let mut scopes = Table::new(["scope", "trajectories", "last write", "sites"]);
    for s in &list.browser_scopes {
        scopes.row([
            s.scope.clone(),
            s.trajectories.to_string(),
            when(s.last_write.as_ref()),
            s.sites.join(", "),
        ]);
    }
    for (heading, empty, table) in [
        (
            "procedural memory",
            list.partitions.is_empty(),
            partitions.to_string(),
        ),
        (
            "turn sessions",
            list.turn_sessions.is_empty(),
            turns.to_string(),
        ),
        (
            "recorded tool calls",
            list.tool_log_sessions.is_empty(),
            logs.to_string(),
        ),
        (
            "browser memory",
            list.browser_scopes.is_empty(),
            scopes.to_string(),
        ),
    ] {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(heading);
        text.push_str(":\n");
        if empty {
            text.push_str("  (none)\n");
        } else {
            text.push_str(&table);
        }
    }
    // Notes are listed only when some scope holds them, so a database without notes lists
    // as it always did.
    if !list.note_scopes.is_empty() {
        let mut notes = Table::new(["scope", "notes", "size", "last write"]);
        for s in &list.note_scopes {
            notes.row([
                s.scope.clone(),
                s.notes.to_string(),
                human_bytes(s.bytes),
                when(s.last_write.as_ref()),
            ]);
        }
        text.push_str("\nnotes:\n");
        text.push_str(&notes.to_string());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::memory::{BrowserScopeEntry, PartitionEntry, TurnSessionEntry};

    #[test]
    fn the_tables_show_each_size_and_last_write() {
        let list = MemoryList {
            partitions: vec![PartitionEntry {
                partition: "team".to_owned(),
                fields: vec!["task".to_owned()],
                episodes: 3,
                patterns: 1,
                pending_groups: 0,
                bytes: 2048,
                last_write: Some("2026-01-01T00:00:00.123Z".to_owned()),
            }],
            turn_sessions: vec![TurnSessionEntry {
                session: "s1".to_owned(),
                events: 2,
                bytes: 100,
                last_write: None,
            }],
            tool_log_sessions: Vec::new(),
            browser_scopes: vec![BrowserScopeEntry {
                scope: "shared".to_owned(),
                sites: vec!["example.com".to_owned()],
                trajectories: 4,
                last_write: Some("2026-01-02T03:04:05Z".to_owned()),
            }],
            note_scopes: Vec::new(),
        };
        let text = render(&list);
        let row = |first: &str| -> Vec<String> {
            let line = text
                .lines()
                .find(|l| l.starts_with(first))
                .unwrap_or_else(|| panic!("no row {first} in\n{text}"));
            line.split_whitespace().map(str::to_owned).collect()
        };
        assert_eq!(
            row("team"),
            [
                "team",
                "task",
                "3",
                "1",
                "0",
                "2.0",
                "KiB",
                "2026-01-01T00:00:00Z"
            ]
        );
        assert_eq!(row("s1"), ["s1", "2", "100", "B", "-"]);
        assert_eq!(
            row("shared"),
            ["shared", "4", "2026-01-02T03:04:05Z", "example.com"]
        );
        assert!(text.contains("recorded tool calls:\n  (none)\n"), "{text}");
    }
}
