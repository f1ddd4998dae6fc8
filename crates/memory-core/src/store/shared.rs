//! Every store trait for `&S` and `Arc<S>`: one store, many memories.
//!
//! A memory type takes its store by value (`TrajectoryMemory<S>`, `BrowserMemory<S>`,
//! `StoreLog<S>`), so the caller chooses the ownership: the store itself when one memory owns
//! it, `&store` when several memories on one thread share it, `Arc::clone(&store)` when they
//! live on different threads or tasks. Each method forwards to the store behind the
//! reference, so a borrowed or shared store behaves exactly as the store itself (including
//! methods the store overrides).
//!
//! ```
//! use std::sync::Arc;
//! use agent_memory_core::{InMemoryStore, MetaKey, MetaStore};
//!
//! fn remember(store: impl MetaStore) -> agent_memory_core::Result<()> {
//!     store.meta_set(&MetaKey::new("greeting")?, "hello")?;
//!     Ok(())
//! }
//!
//! let store = Arc::new(InMemoryStore::new());
//! remember(Arc::clone(&store))?; // shared with another thread or task
//! remember(&*store)?;            // borrowed
//! assert_eq!(store.meta_get(&MetaKey::new("greeting")?)?.as_deref(), Some("hello"));
//! # Ok::<(), agent_memory_core::Error>(())
//! ```

use std::sync::Arc;

use crate::error::Result;
use crate::evidence::Writer;
use crate::names::{MetaKey, Partition, Scope, SessionId};
use crate::provenance::Provenance;
use crate::store::Page;
use crate::store::browser::{
    Approval, BrowserStore, Candidate, CandidateQuery, FinishedRun, ForgotBy, Forgotten, HeldRun,
    HintStore, ImageStored, IndexedCandidate, MemoryImage, RunFilter, RunManifest,
    RunManifestStore, SiteMemory, SiteMemoryStore, SiteObservation, SuiteSummary, Trajectory,
    TrajectoryStore,
};
use crate::store::meta::MetaStore;
use crate::store::session::{SessionAppended, SessionEvent, SessionStore, SessionSummary};
use crate::store::site_log::SiteLog;
use crate::store::tool_log::{ToolLog, ToolLogSessionSummary, ToolLogStore};
use crate::store::trajectory::{
    CrystallizeStep, Episode, EpisodeStore, EpisodesForgotten, Fingerprint, Group, NewEpisode,
    PartitionSummary, Pattern, PatternStore, Seq,
};
use crate::time::Timestamp;

/// Implements a store trait for `&S` and `Arc<S>` by forwarding each listed method to `S`.
/// is never bypassed; a method left out is a compile error only when it has no default, so
/// the list is checked by the `forwarding_keeps_overrides` test below.
macro_rules! shared_store {
    ($trait:ident { $(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)* }) => {
        impl<S: $trait + ?Sized> $trait for &S {
            $(
                fn $name(&self $(, $arg: $ty)*) -> $ret {
                    (**self).$name($($arg),*)
                }
            )*
        }

        impl<S: $trait + ?Sized> $trait for Arc<S> {
            $(
                fn $name(&self $(, $arg: $ty)*) -> $ret {
                    (**self).$name($($arg),*)
                }
            )*
        }
    };
}

shared_store!(MetaStore {
    fn meta_get(&self, key: &MetaKey) -> Result<Option<String>>;
    fn meta_get_all(&self, keys: &[&MetaKey]) -> Result<Vec<Option<String>>>;
    fn meta_set(&self, key: &MetaKey, value: &str) -> Result<Option<String>>;
    fn meta_compare_and_set(&self, key: &MetaKey, expected: Option<&str>, value: &str) -> Result<()>;
    fn meta_set_all(&self, entries: &[(&MetaKey, &str)]) -> Result<()>;
    fn meta_delete(&self, key: &MetaKey) -> Result<bool>;
    fn meta_list(&self, prefix: &str) -> Result<Vec<(MetaKey, String)>>;
});

shared_store!(ToolLogStore {
    fn append_tool_log(&self, log: &ToolLog) -> Result<()>;
    fn append_tool_logs(&self, logs: &[ToolLog]) -> Result<()>;
    fn import_tool_logs(&self, logs: &[ToolLog]) -> Result<()>;
    fn list_tool_logs(&self, session: &SessionId) -> Result<Vec<ToolLog>>;
    fn tool_log_page(&self, session: &SessionId, from: u64, limit: usize) -> Result<Page<ToolLog>>;
    fn tool_log_sessions(&self) -> Result<Vec<ToolLogSessionSummary>>;
    fn forget_tool_logs(&self, session: &SessionId, by: &Provenance) -> Result<u64>;
    fn forget_tool_logs_by(&self, writer: &crate::evidence::Writer, by: &Provenance) -> Result<Vec<(SessionId, u64)>>;
});

shared_store!(SessionStore {
    fn session_append(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64>;
    fn session_append_at(&self, session: &SessionId, expected_len: u64, events: &[SessionEvent]) -> Result<SessionAppended>;
    fn session_create(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64>;
    fn session_load(&self, session: &SessionId) -> Result<Vec<SessionEvent>>;
    fn session_page(&self, session: &SessionId, from: u64, limit: usize) -> Result<Page<SessionEvent>>;
    fn session_list(&self) -> Result<Vec<SessionSummary>>;
    fn session_forget(&self, session: &SessionId, by: &Provenance) -> Result<u64>;
    fn session_forget_by(&self, writer: &crate::evidence::Writer, by: &Provenance) -> Result<Vec<(SessionId, u64)>>;
});

shared_store!(EpisodeStore {
    fn append_episodes(&self, episodes: &[NewEpisode]) -> Result<Vec<Seq>>;
    fn append_episodes_with_settings(&self, episodes: &[NewEpisode], settings: &[(&MetaKey, &str)]) -> Result<Vec<Seq>>;
    fn episodes_after(&self, partition: &Partition, after: Seq, limit: usize) -> Result<Vec<Episode>>;
    fn group_episodes(&self, partition: &Partition, fingerprint: &Fingerprint, after: Seq, limit: usize) -> Result<Vec<Episode>>;
    fn prune_episodes(&self, partition: &Partition, before: Timestamp) -> Result<u64>;
});

shared_store!(PatternStore {
    fn crystallize_with(&self, partition: &Partition, step: CrystallizeStep<'_>) -> Result<Vec<Pattern>>;
    fn crystallize_in_pages(&self, partition: &Partition, page: usize, step: CrystallizeStep<'_>) -> Result<Vec<Pattern>>;
    fn watermark(&self, partition: &Partition) -> Result<Seq>;
    fn patterns(&self, partition: &Partition, filter: &Fingerprint) -> Result<Vec<Pattern>>;
    fn group(&self, partition: &Partition, fingerprint: &Fingerprint) -> Result<Option<Group>>;
    fn pending_groups(&self, partition: &Partition) -> Result<Vec<Group>>;
    fn patterns_page(&self, partition: &Partition, after: Option<&Fingerprint>, limit: usize) -> Result<Page<Pattern>>;
    fn pending_groups_page(&self, partition: &Partition, after: Option<&Fingerprint>, limit: usize) -> Result<Page<Group>>;
    fn partitions(&self) -> Result<Vec<PartitionSummary>>;
    fn forget_partition(&self, partition: &Partition, settings: &[&MetaKey], by: &Provenance) -> Result<u64>;
    fn forget_episodes_by(&self, partition: &Partition, writer: &Writer, by: &Provenance, step: CrystallizeStep<'_>) -> Result<EpisodesForgotten>;
});

shared_store!(TrajectoryStore {
    fn trajectory_put(&self, scope: &Scope, trajectory: &Trajectory, tokens: &[String]) -> Result<()>;
    fn trajectory_get(&self, scope: &Scope, id: &str) -> Result<Option<Trajectory>>;
    fn trajectory_get_many(&self, scope: &Scope, ids: &[&str]) -> Result<Vec<Trajectory>>;
    fn trajectory_candidates(&self, scope: &Scope, query: &CandidateQuery) -> Result<Vec<Candidate>>;
    fn trajectory_top_candidates(&self, scope: &Scope, query: &CandidateQuery, rank: &dyn Fn(&IndexedCandidate) -> Option<f64>, margin: f64) -> Result<Vec<Candidate>>;
    fn trajectory_list(&self, scope: &Scope) -> Result<Vec<Trajectory>>;
    fn trajectory_count(&self, scope: &Scope) -> Result<u64>;
    fn trajectory_recent(&self, scope: &Scope, limit: usize) -> Result<Vec<Trajectory>>;
    fn trajectory_recent_page(&self, scope: &Scope, from: u64, limit: usize) -> Result<Page<Trajectory>>;
    fn trajectory_newest(&self, scope: &Scope) -> Result<Option<Timestamp>>;
    fn trajectory_prune(&self, scope: &Scope, cutoff: Timestamp) -> Result<usize>;
    fn trajectory_forget(&self, scope: &Scope, id: &str, by: &Provenance) -> Result<bool>;
    fn trajectory_forget_by(&self, scope: Option<&Scope>, writer: &Writer, by: &Provenance) -> Result<ForgotBy>;
});

shared_store!(SiteMemoryStore {
    fn site_get(&self, scope: &Scope, site: &str) -> Result<Option<SiteMemory>>;
    fn site_put(&self, scope: &Scope, memory: &SiteMemory) -> Result<()>;
    fn site_observe(&self, scope: &Scope, observation: &SiteObservation, by: Option<&Provenance>) -> Result<()>;
    fn site_forget_knowledge(&self, scope: &Scope, site: &str, sessions: bool, at: &str) -> Result<bool>;
    fn site_list(&self, scope: &Scope) -> Result<Vec<String>>;
    fn site_log(&self, scope: &Scope, site: &str) -> Result<Option<SiteLog>>;
});

shared_store!(RunManifestStore {
    fn run_put(&self, scope: &Scope, manifest: &RunManifest, by: Option<&Provenance>) -> Result<()>;
    fn run_start(&self, scope: &Scope, manifest: &RunManifest, by: Option<&Provenance>) -> Result<Option<RunManifest>>;
    fn run_get(&self, scope: &Scope, run_id: &str) -> Result<Option<RunManifest>>;
    fn run_list(&self, scope: &Scope, filter: &RunFilter) -> Result<Vec<RunManifest>>;
    fn run_page(&self, scope: &Scope, from: u64, limit: usize) -> Result<Page<RunManifest>>;
    fn run_forget(&self, scope: &Scope, run_id: &str, by: &Provenance) -> Result<bool>;
});

shared_store!(HintStore {
    fn hints_get(&self, scope: &Scope) -> Result<Option<(String, String)>>;
    fn hints_put(&self, scope: &Scope, hints: &str, updated_at: &str, by: Option<&Provenance>) -> Result<()>;
    fn suite_summary_put(&self, scope: &Scope, summary: &SuiteSummary, by: Option<&Provenance>) -> Result<()>;
    fn suite_summaries(&self, scope: &Scope) -> Result<Vec<SuiteSummary>>;
});

shared_store!(BrowserStore {
    fn record_run(&self, scope: &Scope, run: &FinishedRun) -> Result<()>;
    fn store_image(&self, scope: &Scope, image: &MemoryImage, by: Option<&Provenance>) -> Result<ImageStored>;
    fn browser_scopes(&self) -> Result<Vec<Scope>>;
    fn forget_browser(&self, scope: &Scope, site: Option<(&str, &[String])>, by: &Provenance) -> Result<Forgotten>;
    fn run_hold(&self, scope: &Scope, held: &HeldRun) -> Result<()>;
    fn runs_held(&self, scope: Option<&Scope>, limit: usize) -> Result<Vec<(Scope, HeldRun)>>;
    fn run_held(&self, scope: &Scope, id: &str) -> Result<Option<HeldRun>>;
    fn run_decide(&self, scope: &Scope, id: &str, approve: Option<Approval<'_>>, by: &Provenance) -> Result<bool>;
});
