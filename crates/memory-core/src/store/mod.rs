//! The store traits: what a backend must offer each feature crate.
//!
//! The pattern every trait follows:
//!
//! - the trait lives here, in `memory-core`, and speaks only domain types;
//! - methods take `&self` (stores are `Send + Sync` and synchronise inside), return
//!   [`Result`](crate::Result) and follow the conventions of [`Error`](crate::Error);
//! - a method that writes several rows is atomic: when it fails, the store is as it was;
//! - [`InMemoryStore`](crate::InMemoryStore) implements it, and so does every backend
//!   (`agent-memory-sqlite`);
//! - every trait is implemented for `&S` and `Arc<S>` of any store `S` that implements it,
//!   so one store serves several memories, borrowed or shared across threads;
//! - one contract test suite in `testkit` (behind the feature of that name) is written
//!   once and run against every implementation.

pub mod browser;
pub mod meta;
pub mod notes;
pub mod session;
mod shared;
pub mod tool_log;
pub mod trajectory;

pub use meta::MetaStore;
pub use notes::NoteStore;
pub use session::{SessionAppended, SessionEvent, SessionStore, SessionSummary};
pub use tool_log::ToolLogStore;
pub use trajectory::{EpisodeStore, PatternStore};
