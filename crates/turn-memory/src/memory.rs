//! [`TurnMemory`]: what one turn (or a compacted run of turns) changed and what failed.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

/// A shell command that exited non-zero. Its output is never kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct FailedCommand {
    /// The command line as the model wrote it.
    pub command: String,
    /// Its exit code, never 0.
    pub exit_code: i32,
}

/// A command the model flagged as dangerous, kept whether or not it succeeded.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct DangerousCommand {
    /// The command line as the model wrote it.
    pub command: String,
    /// Its exit code when it ran to completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// The memory of one turn, built from its tool events (never from model text).
///
/// Files are workspace-relative, normalized, deduplicated, in first-seen order; failed
/// commands are in order and not deduplicated (running `cargo test` twice and failing twice
/// is two facts).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct TurnMemory {
    /// Files written or edited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_changed: Vec<String>,
    /// Shell commands that exited non-zero.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_commands: Vec<FailedCommand>,
    /// Commands flagged dangerous (only when the capture rules ask for them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dangerous_commands: Vec<DangerousCommand>,
}

impl TurnMemory {
    /// Whether there is nothing to retain.
    pub fn is_empty(&self) -> bool {
        self.files_changed.is_empty()
            && self.failed_commands.is_empty()
            && self.dangerous_commands.is_empty()
    }

    /// Adds what `later` retained: files not seen yet (first-seen order kept), and every
    /// failed and dangerous command. Merging turn by turn gives the cumulative memory a
    /// compaction keeps.
    pub fn merge(&mut self, later: &TurnMemory) {
        for file in &later.files_changed {
            if !self.files_changed.contains(file) {
                self.files_changed.push(file.clone());
            }
        }
        self.failed_commands
            .extend_from_slice(&later.failed_commands);
        self.dangerous_commands
            .extend_from_slice(&later.dangerous_commands);
    }

    /// The cumulative memory of `memories`, in order; `None` when nothing is retained.
    pub fn cumulative<'a>(memories: impl IntoIterator<Item = &'a TurnMemory>) -> Option<Self> {
        let mut total = TurnMemory::default();
        // A set, not `merge`: a long session repeats the same few hundred files many times.
        let mut seen: HashSet<&'a str> = HashSet::new();
        for memory in memories {
            for file in &memory.files_changed {
                if seen.insert(file) {
                    total.files_changed.push(file.clone());
                }
            }
            total
                .failed_commands
                .extend_from_slice(&memory.failed_commands);
            total
                .dangerous_commands
                .extend_from_slice(&memory.dangerous_commands);
        }
        (!total.is_empty()).then_some(total)
    }
}
