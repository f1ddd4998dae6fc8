#![doc = include_str!("../README.md")]
//!
//! ## In an async application
//!
//! The API is synchronous and every store is `Send + Sync`: an async application keeps one
//! store behind an `Arc` and calls the memories from a blocking task, so a slow disk never
//! stalls the executor.
//!
//! ```
//! use std::sync::Arc;
//! use agent_memory_kit::trajectory::Config;
//! use agent_memory_kit::{Partition, SqliteStore, SystemClock, TrajectoryMemory};
//! use serde_json::json;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//!     let store = Arc::new(SqliteStore::open_in_memory()?);
//!     let memory = Arc::new(TrajectoryMemory::new(store, SystemClock, Config::new(["task"]))?);
//!     let team = Partition::new("team-a")?;
//!     let mut writers = Vec::new();
//!     for _ in 0..3 {
//!         let (memory, team) = (Arc::clone(&memory), team.clone());
//!         writers.push(tokio::task::spawn_blocking(move || {
//!             memory.record_episode(&[("task", "deploy")], &["build", "ship"], &json!({"success": true}), &team)
//!         }));
//!     }
//!     for writer in writers {
//!         writer.await??;
//!     }
//!     let recalled = tokio::task::spawn_blocking({
//!         let memory = Arc::clone(&memory);
//!         move || {
//!             memory.crystallize(&team)?;
//!             memory.recall(&[("task", "deploy")], &team)
//!         }
//!     })
//!     .await??;
//!     assert_eq!(recalled[0].pattern.canonical_sequence, ["build", "ship"]);
//!     Ok(())
//! }
//! ```
//!
//! ## What this crate holds
//!
//! Only re-exports: each memory crate as a module (behind its feature), the types most
//! programs name at the top, and [`core`] for the store traits and the rest of the
//! vocabulary.

#![deny(missing_docs)]

/// The vocabulary every memory speaks: names, time, ids, the store traits
/// ([`core::store`]) and the in-memory store (`agent-memory-core`).
pub use agent_memory_core as core;
pub use agent_memory_core::{
    Clock, IdSource, InMemoryStore, ManualClock, MetaKey, Partition, RandomIds, RunId, Scope,
    SeededIds, SessionId, SystemClock, Timestamp,
};

/// The embedded SQLite store (`agent-memory-sqlite`).
#[cfg(feature = "sqlite")]
pub use agent_memory_sqlite as sqlite;
#[cfg(feature = "sqlite")]
pub use agent_memory_sqlite::SqliteStore;

/// Procedural memory: what worked last time (`agent-memory-trajectory`).
#[cfg(feature = "trajectory")]
pub use agent_memory_trajectory as trajectory;
#[cfg(feature = "trajectory")]
pub use agent_memory_trajectory::TrajectoryMemory;

/// Tool-call recordings that survive a change of memory (`agent-memory-recording`).
#[cfg(feature = "recording")]
pub use agent_memory_recording as recording;

/// A coding agent's memory of each turn (`agent-memory-turns`).
#[cfg(feature = "turns")]
pub use agent_memory_turns as turns;

/// A browser agent's memory (`agent-memory-browser`).
#[cfg(feature = "browser")]
pub use agent_memory_browser as browser;
#[cfg(feature = "browser")]
pub use agent_memory_browser::BrowserMemory;

/// Notes: a `/memories` tree of text files per scope, edited with the commands of Anthropic's
/// client-side memory tool (`agent-memory-notes`).
#[cfg(feature = "notes")]
pub use agent_memory_notes as notes;
#[cfg(feature = "notes")]
pub use agent_memory_notes::Notes;
