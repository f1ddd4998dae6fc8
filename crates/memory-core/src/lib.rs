//! The core of the agent memory layer: domain types, store traits, clock, ids and errors.
//!
//! This crate has no dependencies and does no I/O. Feature crates (`recording`,
//! `trajectory`, `turn-memory`, `browser-memory`) build on its store traits; backends
//! (`store-sqlite`, and [`InMemoryStore`] here) implement them.
//!
//! ```
//! use agent_memory_core::{Clock, ManualClock, Partition, Timestamp};
//!
//! let clock = ManualClock::new(Timestamp::from_millis(1_767_225_600_000));
//! let partition = Partition::new("bench")?;
//! assert_eq!(partition.as_str(), "bench");
//! assert_eq!(clock.now().as_millis(), 1_767_225_600_000);
//! assert!(Partition::new("").is_err());
//! # Ok::<(), agent_memory_core::Error>(())
//! ```
//!
//! # Memory as evidence
//!
//! Text in memory was written by someone, and a later run reads it as part of its prompt: a
//! web page, a tool's output or a past model turn can plant instructions there (memory
//! poisoning). Two modules give the rest of the workspace what it needs to treat recalled
//! text as evidence rather than instructions:
//!
//! - [`provenance`]: who wrote an item ([`Source`]: the user, a tool, a page, a model, an
//!   import) and when ([`Provenance`]);
//! - [`screen`]: the write screen, cheap explainable checks of an item's text (instructions
//!   aimed at the model, hidden Unicode, secrets, links off the page's host, delimiters),
//!   the [`ScreenPolicy`](screen::ScreenPolicy) that decides what a write does with its
//!   findings, and [`as_data_block`](screen::as_data_block), which frames recalled text
//!   as data that cannot close its frame.

#![deny(missing_docs)]

mod error;
pub mod evidence;
pub mod excerpt;
mod ids;
mod mem;
mod names;
pub mod provenance;
pub mod screen;
pub mod store;
mod time;

#[cfg(feature = "testkit")]
pub mod testkit;

pub use error::{Error, Result};
pub use ids::{IdSource, RandomIds, SeededIds, SplitMix64};
pub use mem::InMemoryStore;
pub use names::{MAX_NAME_BYTES, MetaKey, Partition, RunId, Scope, SessionId};
pub use provenance::{Provenance, Source};
pub use store::AuditStore;
pub use store::MetaStore;
pub use store::NoteStore;
pub use store::Page;
pub use store::ToolLogStore;
pub use store::{EpisodeStore, PatternStore};
pub use store::{SessionAppended, SessionEvent, SessionStore, SessionSummary};
pub use time::{Clock, MILLIS_PER_DAY, ManualClock, SharedClock, SystemClock, Timestamp};
