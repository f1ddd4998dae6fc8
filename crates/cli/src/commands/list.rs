//! `agent-memory list`: every partition, session and browser scope the database holds.

use anyhow::Result;

use crate::ops::{self, memory::MemoryList};
use crate::output::{Table, print_json};
use crate::{GlobalArgs, database};

/// `list` takes no arguments of its own.
#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {}

pub(crate) fn run(_args: &ListArgs, global: &GlobalArgs) -> Result<()> {
    let store = database::open_existing(&global.db)?;
    let list = ops::memory::list(&global.env(&store))?;
    if global.json {
        return print_json(&list);
    }
    print!("{}", render(&list));
    Ok(())
}

/// The listing as four tables, each under its heading; an empty memory says so.
fn render(list: &MemoryList) -> String {
    let mut text = String::new();
    let mut partitions = Table::new(["partition", "fields", "episodes", "patterns", "pending"]);
    for p in &list.partitions {
        partitions.row([
            p.partition.clone(),
            p.fields.join(","),
            p.episodes.to_string(),
            p.patterns.to_string(),
            p.pending_groups.to_string(),
        ]);
    }
    let mut turns = Table::new(["session", "events"]);
    for s in &list.turn_sessions {
        turns.row([s.session.clone(), s.events.to_string()]);
    }
    let mut logs = Table::new(["session", "tool logs"]);
    for s in &list.tool_log_sessions {
        logs.row([s.session.clone(), s.logs.to_string()]);
    }
    let mut scopes = Table::new(["scope", "trajectories", "sites"]);
    for s in &list.browser_scopes {
        scopes.row([
            s.scope.clone(),
            s.trajectories.to_string(),
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
        let mut notes = Table::new(["scope", "notes", "bytes"]);
        for s in &list.note_scopes {
            notes.row([s.scope.clone(), s.notes.to_string(), s.bytes.to_string()]);
        }
        text.push_str("\nnotes:\n");
        text.push_str(&notes.to_string());
    }
    text
}
