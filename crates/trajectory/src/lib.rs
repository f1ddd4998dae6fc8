//! Procedural memory for agents: "what worked last time".
//!
//! Record completed trajectories (episodes) cheaply, crystallize them periodically into one
//! pattern per fingerprint group (the modal trajectory with a capped-evidence confidence),
//! and recall the best patterns for a full or partial fingerprint. The numbers are popoto's
//! `TrajectoryMemory` recipe bit for bit; its defects (limit before filter, cross-partition
//! scoring, clock-dependent watermark, unsafe concurrent crystallize, full rereads, no
//! retention) are fixed.
//!
//! ```
//! use agent_memory_core::{InMemoryStore, ManualClock, Partition, Timestamp};
//! use serde_json::json;
//! use agent_memory_trajectory::{Config, TrajectoryMemory};
//!
//! let clock = ManualClock::new(Timestamp::from_millis(1_767_225_600_000));
//! let memory = TrajectoryMemory::new(
//!     InMemoryStore::new(),
//!     clock,
//!     Config::new(["problem_topology", "affected_layer"]),
//! )?;
//! let team = Partition::new("team-a")?;
//! let fp = [("problem_topology", "bug_fix"), ("affected_layer", "agent")];
//! for _ in 0..3 {
//!     memory.record_episode(&fp, &["read_logs", "edit_file", "run_tests"], &json!({"success": true}), &team)?;
//! }
//! let patterns = memory.crystallize(&team)?;
//! assert_eq!(patterns[0].stats.confidence, 0.7999999999999999);
//! let best = memory.recall(&[("affected_layer", "agent")], &team)?;
//! assert_eq!(best[0].pattern.canonical_sequence, ["read_logs", "edit_file", "run_tests"]);
//! # Ok::<(), agent_memory_trajectory::Error>(())
//! ```

#![deny(missing_docs)]

pub mod compat;
mod config;
mod error;
mod fingerprint;
mod memory;
pub mod policy;
pub mod workload;

pub use agent_memory_core::store::trajectory::{Episode, Fingerprint, Pattern, PatternStats};
pub use config::{Config, Weights};
pub use error::{Error, Result};
pub use fingerprint::{compute_fingerprint, compute_fingerprint_json, compute_fingerprint_of};
pub use memory::{
    CRYSTALLIZE_PAGE, CrystallizeHooks, EpisodeRecord, RecallOptions, ScoredPattern,
    TrajectoryMemory,
};
