//! Memory for a browser agent: the four layers of browser-agent-driver's memory (trajectory
//! store, session history, app knowledge, selector cache), its context budget, its run
//! registry and hints, and import/export of its `.agent-memory/` directories.
//!
//! Where browser-agent-driver's answers are reproduced, they are reproduced to the bit: trace
//! scores use V8's `Math.exp`, lengths count UTF-16 units, and equal scores keep its order
//! (the ids' order when a time does not parse). One deliberate difference: a cut that falls
//! inside a surrogate pair writes U+FFFD where the reference leaves half the pair, which a Rust
//! string cannot hold.
//!
//! Everything is scoped by a [`Scope`](agent_memory_core::Scope) and generic over the store traits
//! of [`agent_memory_core::store::browser`]; time and ids come from an injected
//! [`Clock`](agent_memory_core::Clock) and [`IdSource`](agent_memory_core::IdSource).
//!
//! ```
//! use agent_memory_browser::{Budget, BrowserMemory, Layout, Policy, RunReport, Turn};
//! use agent_memory_core::{InMemoryStore, ManualClock, Scope, SeededIds, Timestamp};
//!
//! let store = InMemoryStore::new();
//! let clock = ManualClock::new(Timestamp::from_millis(1_767_225_600_000));
//! let memory = BrowserMemory::new(&store, Scope::shared(), clock, SeededIds::new(7));
//! let click = Turn {
//!     url: "https://shop.test/".into(),
//!     action: r#"{"action":"click","selector":"@b1"}"#.into(),
//!     verified: true,
//!     duration_ms: 1200,
//!     ..Turn::default()
//! };
//! memory.record_run(
//!     &RunReport::new("Search for smart watch reviews", "https://shop.test/")
//!         .with_turns(vec![click.clone(), click])
//!         .with_success(true)
//!         .with_outcome("found them"),
//! )?;
//! let found = memory.find_match("search smart watch reviews", Some("https://shop.test/x"))?;
//! assert!(found.is_some());
//! let context = memory.context("search smart watch reviews", "https://shop.test/", Layout::Layered, Budget::Chars(8000), Policy::SkipOverflow)?;
//! assert!(context.contains("REFERENCE TRAJECTORY"));
//! assert!(context.contains("SESSION HISTORY (1 previous run on this site):"));
//! # Ok::<(), agent_memory_browser::Error>(())
//! ```

#![deny(missing_docs)]

pub mod baseline;
mod budget;
pub mod compat;
mod dir;
mod error;
mod extract;
mod files;
mod held;
mod hints;
mod jsmath;
mod json;
mod matching;
mod memory;
mod origin;
mod render;
mod runs;
mod time;
mod tokens;
mod utf16;

pub use budget::{
    Budget, BuiltContext, BuiltPart, ContextBudget, ContextPart, DEFAULT_BUDGET_CHARS,
    FourCharsPerToken, MIN_TRUNCATED_PART, PartFate, Policy, TRUNCATION_MARK, TokenEstimator,
    priority,
};
pub use dir::{
    AtomicBatch, ClassFiles, MAX_FILE_BYTES, MemoryRoot, SITE_LOG_FILE, Skipped, Transfer,
    adopt_files, export_dir, import_dir, manifest_stem,
};
pub use error::{Error, Result};
pub use extract::{Turn, extract_facts};
pub use held::held_contents;
pub use hints::{EvaluatedRun, UNVERIFIED_EFFECT, generate_hints};
pub use matching::{
    DEFAULT_THRESHOLD, DEFAULT_TTL_DAYS, Match, MatchOptions, REPLAY_THRESHOLD, find_best_match,
    find_replayable, trace_score,
};
pub use memory::{
    BrowserMemory, ContextReport, DEFAULT_READ_CONFIDENCE, Layout, RecallGuard, RecallScreen,
    Recorded, RunReport, assemble, flagged_run_texts, screen_run, text_digest,
};
pub use origin::{origin_of, safe_file_stem, site_key};
pub use render::{
    app_knowledge, format_action, knowledge_block, known_selectors, reference_block,
    reference_trajectory, session_history,
};
pub use runs::{
    RunOutcome, RunRegistry, RunStart, RunUpdate, Scenario, generate_fork_session_id,
    generate_run_id, session_run_id,
};
pub use tokens::{jaccard, jaccard_from_counts, tokenize};
