//! The run registry: manifests of each run for orchestrators, with start, update, complete,
//! get, list, resume and fork, run ids and lineage through `parent_run_id`.

use agent_memory_core::evidence::Writer;
use agent_memory_core::store::browser::{RunFilter, RunManifest, RunManifestStore, RunStatus};
use agent_memory_core::{Clock, IdSource, Provenance, Scope, Source, Timestamp};
use serde::Serialize;

use crate::dir::manifest_stem;
use crate::error::{Error, Result};
use crate::time::iso;

/// `run_<ms>_<6 base36>`: a fresh run id.
pub fn generate_run_id(now: Timestamp, ids: &dyn IdSource) -> String {
    format!("run_{}_{}", now.as_millis(), ids.base36(6))
}

/// `<sessionId>_<ms>`: the run id of a run tagged with a session.
pub fn session_run_id(session_id: &str, now: Timestamp) -> String {
    format!("{session_id}_{}", now.as_millis())
}

/// `fork_<ms>_<6 base36>`: the session id of a fork.
pub fn generate_fork_session_id(now: Timestamp, ids: &dyn IdSource) -> String {
    format!("fork_{}_{}", now.as_millis(), ids.base36(6))
}

/// What a new run starts with: [`RunStart::new`], then `with_*` for the optional fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunStart {
    /// The id (see [`generate_run_id`] and [`session_run_id`]).
    pub run_id: String,
    /// Groups related runs.
    pub session_id: Option<String>,
    /// The run this one continues.
    pub parent_run_id: Option<String>,
    /// The goal.
    pub goal: String,
    /// The domain the run is filed under.
    pub domain: String,
    /// Where it starts.
    pub start_url: Option<String>,
}

/// Changes to a running manifest; `None` leaves a field as it is. [`RunUpdate::new`] changes
/// nothing; each `with_*` sets one change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunUpdate {
    /// New status.
    pub status: Option<RunStatus>,
    /// Last url seen.
    pub current_url: Option<String>,
    /// Turns so far.
    pub turn_count: Option<u32>,
    /// Files produced so far.
    pub artifact_paths: Option<Vec<String>>,
    /// The session the run belongs to.
    pub session_id: Option<String>,
    /// The run it continues.
    pub parent_run_id: Option<String>,
    /// The goal.
    pub goal: Option<String>,
    /// The domain it is filed under.
    pub domain: Option<String>,
    /// Where it started.
    pub start_url: Option<String>,
    /// Where it ended (the reference's callers may set it before completing).
    pub final_url: Option<String>,
    /// When it finished.
    pub completed_at: Option<String>,
    /// Whether it succeeded.
    pub success: Option<bool>,
    /// A summary.
    pub summary: Option<String>,
    /// The result text.
    pub result: Option<String>,
    /// The failure reason.
    pub reason: Option<String>,
}

/// How a run ended: [`RunOutcome::new`], then `with_*` for the optional fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunOutcome {
    /// Whether it succeeded.
    pub success: bool,
    /// Where it ended; `None` keeps a final url recorded earlier.
    pub final_url: Option<String>,
    /// A summary.
    pub summary: Option<String>,
    /// The result text.
    pub result: Option<String>,
    /// The failure reason.
    pub reason: Option<String>,
    /// Turns taken.
    pub turn_count: u32,
    /// Files produced; `None` keeps those recorded earlier.
    pub artifact_paths: Option<Vec<String>>,
}

impl RunStart {
    /// A run `run_id` with `goal`, filed under `domain`.
    pub fn new(
        run_id: impl Into<String>,
        goal: impl Into<String>,
        domain: impl Into<String>,
    ) -> Self {
        RunStart {
            run_id: run_id.into(),
            goal: goal.into(),
            domain: domain.into(),
            ..RunStart::default()
        }
    }

    /// In session `session_id`.
    pub fn with_session_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Continuing run `parent_run_id`.
    pub fn with_parent_run_id(mut self, parent_run_id: impl Into<String>) -> Self {
        self.parent_run_id = Some(parent_run_id.into());
        self
    }

    /// Starting on `start_url`.
    pub fn with_start_url(mut self, start_url: impl Into<String>) -> Self {
        self.start_url = Some(start_url.into());
        self
    }
}

impl RunUpdate {
    /// No change.
    pub fn new() -> Self {
        RunUpdate::default()
    }

    /// A new status.
    pub fn with_status(mut self, status: RunStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// The last url seen.
    pub fn with_current_url(mut self, url: impl Into<String>) -> Self {
        self.current_url = Some(url.into());
        self
    }

    /// Turns so far.
    pub fn with_turn_count(mut self, turns: u32) -> Self {
        self.turn_count = Some(turns);
        self
    }

    /// Files produced so far.
    pub fn with_artifact_paths(mut self, paths: Vec<String>) -> Self {
        self.artifact_paths = Some(paths);
        self
    }
}

impl RunOutcome {
    /// A run that succeeded or not after `turn_count` turns.
    pub fn new(success: bool, turn_count: u32) -> Self {
        RunOutcome {
            success,
            turn_count,
            ..RunOutcome::default()
        }
    }

    /// Where it ended.
    pub fn with_final_url(mut self, url: impl Into<String>) -> Self {
        self.final_url = Some(url.into());
        self
    }

    /// A summary.
    pub fn with_summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = Some(summary.into());
        self
    }

    /// The result text.
    pub fn with_result(mut self, result: impl Into<String>) -> Self {
        self.result = Some(result.into());
        self
    }

    /// The failure reason.
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Files produced.
    pub fn with_artifact_paths(mut self, paths: Vec<String>) -> Self {
        self.artifact_paths = Some(paths);
        self
    }
}

/// A scenario that continues or branches from an earlier run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Scenario {
    /// The goal.
    pub goal: String,
    /// Where to start: the earlier run's final url, else its start url, else empty.
    pub start_url: String,
    /// The session to run in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The earlier run.
    pub parent_run_id: String,
}

/// The run registry over a store, with its clock and id source (each by value; references
/// and `Arc`s work as well).
pub struct RunRegistry<S, C, I> {
    store: S,
    scope: Scope,
    clock: C,
    ids: I,
    /// Who writes the manifests (see [`RunRegistry::with_writer`]).
    pub writer: Writer,
}

impl<S: RunManifestStore, C: Clock, I: IdSource> RunRegistry<S, C, I> {
    /// A registry of `scope` in `store`.
    pub fn new(store: S, scope: Scope, clock: C, ids: I) -> Self {
        RunRegistry {
            store,
            scope,
            clock,
            ids,
            writer: Writer::default(),
        }
    }

    /// With the writer the audit trail names for each manifest this registry writes: a
    /// field left out is the run's own (source `unknown`, session the run's session id or
    /// else its run id) and the client is none.
    pub fn with_writer(mut self, writer: Writer) -> Self {
        self.writer = writer;
        self
    }

    /// Who writes `manifest` now.
    fn writer_of(&self, manifest: &RunManifest) -> Provenance {
        let session = manifest.session_id.as_deref().unwrap_or(&manifest.run_id);
        self.writer
            .provenance(Source::Unknown, Some(session), self.clock.now())
    }

    /// Stores `manifest` over the stored one, by this registry's writer.
    fn put(&self, manifest: &RunManifest) -> Result<()> {
        let by = self.writer_of(manifest);
        Ok(self.store.run_put(&self.scope, manifest, Some(&by))?)
    }

    /// A fresh `run_<ms>_<rand>` id.
    pub fn generate_run_id(&self) -> String {
        generate_run_id(self.clock.now(), &self.ids)
    }

    /// Writes the manifest of a starting run and returns its id. A run with that id is never
    /// replaced: starting it again the same way (same session, parent, goal, domain and start
    /// url, as a retry does) changes nothing, and otherwise is [`Error::Store`] with a
    /// conflict naming the run (see `RunManifestStore::run_start`).
    pub fn start(&self, start: RunStart) -> Result<String> {
        let now = iso(self.clock.now());
        let manifest = RunManifest {
            run_id: start.run_id.clone(),
            session_id: start.session_id,
            parent_run_id: start.parent_run_id,
            status: RunStatus::Running,
            goal: start.goal,
            domain: start.domain,
            start_url: start.start_url,
            current_url: None,
            final_url: None,
            started_at: now.clone(),
            updated_at: now,
            completed_at: None,
            success: None,
            summary: None,
            artifact_paths: Vec::new(),
            turn_count: 0,
            result: None,
            reason: None,
        };
        let by = self.writer_of(&manifest);
        self.store.run_start(&self.scope, &manifest, Some(&by))?;
        Ok(start.run_id)
    }

    /// Applies `update` to a run; fails when the run does not exist.
    pub fn update(&self, run_id: &str, update: RunUpdate) -> Result<RunManifest> {
        let mut manifest = self.require(run_id)?;
        if let Some(status) = update.status {
            manifest.status = status;
        }
        if let Some(url) = update.current_url {
            manifest.current_url = Some(url);
        }
        if let Some(turns) = update.turn_count {
            manifest.turn_count = turns;
        }
        if let Some(paths) = update.artifact_paths {
            manifest.artifact_paths = paths;
        }
        if let Some(goal) = update.goal {
            manifest.goal = goal;
        }
        if let Some(domain) = update.domain {
            manifest.domain = domain;
        }
        if update.success.is_some() {
            manifest.success = update.success;
        }
        // As the reference's `updateRun` (an `Object.assign` of the changes): any field of the
        // manifest but its id and start time may change; one left out stays as it is.
        keep_or_set(&mut manifest.session_id, update.session_id);
        keep_or_set(&mut manifest.parent_run_id, update.parent_run_id);
        keep_or_set(&mut manifest.start_url, update.start_url);
        keep_or_set(&mut manifest.final_url, update.final_url);
        keep_or_set(&mut manifest.completed_at, update.completed_at);
        keep_or_set(&mut manifest.summary, update.summary);
        keep_or_set(&mut manifest.result, update.result);
        keep_or_set(&mut manifest.reason, update.reason);
        manifest.updated_at = iso(self.clock.now());
        self.put(&manifest)?;
        Ok(manifest)
    }

    /// Completes a run: status from `success`; a missing field never erases a stored one.
    pub fn complete(&self, run_id: &str, outcome: RunOutcome) -> Result<RunManifest> {
        let mut manifest = self.require(run_id)?;
        let now = iso(self.clock.now());
        manifest.status = if outcome.success {
            RunStatus::Completed
        } else {
            RunStatus::Failed
        };
        manifest.success = Some(outcome.success);
        keep_or_set(&mut manifest.final_url, outcome.final_url);
        keep_or_set(&mut manifest.summary, outcome.summary);
        keep_or_set(&mut manifest.result, outcome.result);
        keep_or_set(&mut manifest.reason, outcome.reason);
        manifest.turn_count = outcome.turn_count;
        if let Some(paths) = outcome.artifact_paths {
            manifest.artifact_paths = paths;
        }
        manifest.completed_at = Some(now.clone());
        manifest.updated_at = now;
        self.put(&manifest)?;
        Ok(manifest)
    }

    /// The manifest of `run_id`, if any.
    pub fn get(&self, run_id: &str) -> Result<Option<RunManifest>> {
        Ok(self.store.run_get(&self.scope, run_id)?)
    }

    /// Manifests passing `filter`, newest first.
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<RunManifest>> {
        Ok(self.store.run_list(&self.scope, filter)?)
    }

    /// Continue `run_id` (or a run whose id has its file-name form, as the reference's
    /// `getRun` finds it): its session, starting where it ended; `goal` defaults to its goal.
    pub fn resume(&self, run_id: &str, goal: Option<&str>) -> Result<Scenario> {
        let manifest = self.require(run_id)?;
        Ok(Scenario {
            goal: goal
                .filter(|g| !g.is_empty())
                .map_or_else(|| manifest.goal.clone(), str::to_owned),
            start_url: continue_url(&manifest),
            session_id: manifest.session_id.clone(),
            parent_run_id: manifest.run_id,
        })
    }

    /// Branch from `run_id` (or a run whose id has its file-name form) with a new `fork_…`
    /// session.
    pub fn fork(&self, run_id: &str, goal: &str) -> Result<Scenario> {
        let manifest = self.require(run_id)?;
        Ok(Scenario {
            goal: goal.to_owned(),
            start_url: continue_url(&manifest),
            session_id: Some(generate_fork_session_id(self.clock.now(), &self.ids)),
            parent_run_id: manifest.run_id,
        })
    }

    /// The chain of runs from `run_id` back through `parent_run_id` (stops at a missing
    /// parent or a cycle).
    pub fn lineage(&self, run_id: &str) -> Result<Vec<RunManifest>> {
        let mut chain: Vec<RunManifest> = Vec::new();
        let mut next = Some(run_id.to_owned());
        while let Some(id) = next {
            if chain.iter().any(|m| m.run_id == id) {
                break;
            }
            let Some(manifest) = self.get(&id)? else {
                break;
            };
            next = manifest.parent_run_id.clone();
            chain.push(manifest);
        }
        Ok(chain)
    }

    /// The manifest of `run_id`, or, as the reference's `getRun` reads the file named after
    /// the id with `[^a-zA-Z0-9_-]` replaced by `_`, of a run whose id has the same
    /// file-name form (the most recently updated one, if several do).
    ///
    /// ```
    /// use agent_memory_browser::{RunRegistry, RunStart};
    /// use agent_memory_core::{InMemoryStore, Scope, SeededIds, SystemClock};
    ///
    /// let store = InMemoryStore::new();
    /// let runs = RunRegistry::new(&store, Scope::shared(), SystemClock, SeededIds::new(1));
    /// runs.start(RunStart::new("proj 7_1773572400000", "Find the cart", "shop.test"))?;
    /// assert!(runs.get("proj_7_1773572400000")?.is_none());
    /// assert!(runs.find("proj_7_1773572400000")?.is_some());
    /// # Ok::<(), agent_memory_browser::Error>(())
    /// ```
    pub fn find(&self, run_id: &str) -> Result<Option<RunManifest>> {
        if let Some(found) = self.get(run_id)? {
            return Ok(Some(found));
        }
        let stem = manifest_stem(run_id);
        Ok(self
            .list(&RunFilter::default())?
            .into_iter()
            .find(|m| manifest_stem(&m.run_id) == stem))
    }

    fn require(&self, run_id: &str) -> Result<RunManifest> {
        self.find(run_id)?
            .ok_or_else(|| Error::RunNotFound(run_id.to_owned()))
    }
}

fn keep_or_set(field: &mut Option<String>, value: Option<String>) {
    if value.is_some() {
        *field = value;
    }
}

fn continue_url(manifest: &RunManifest) -> String {
    [&manifest.final_url, &manifest.start_url]
        .into_iter()
        .flatten()
        .find(|u| !u.is_empty())
        .cloned()
        .unwrap_or_default()
}
