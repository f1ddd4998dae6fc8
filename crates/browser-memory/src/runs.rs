//! The run registry: manifests of each run for orchestrators, with start, update, complete,
//! get, list, resume and fork, run ids and lineage through `parent_run_id`.

use agent_memory_core::store::browser::{RunFilter, RunManifest, RunManifestStore, RunStatus};
use agent_memory_core::{Clock, IdSource, Scope, Timestamp};
use serde::Serialize;

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

/// What a new run starts with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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

/// Changes to a running manifest; `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunUpdate {
    /// New status.
    pub status: Option<RunStatus>,
    /// Last url seen.
    pub current_url: Option<String>,
    /// Turns so far.
    pub turn_count: Option<u32>,
    /// Files produced so far.
    pub artifact_paths: Option<Vec<String>>,
}

/// How a run ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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

/// A scenario that continues or branches from an earlier run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
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

/// The run registry over a store, with its clock and id source.
pub struct RunRegistry<'a, S: ?Sized> {
    store: &'a S,
    scope: Scope,
    clock: &'a dyn Clock,
    ids: &'a dyn IdSource,
}

impl<'a, S: RunManifestStore + ?Sized> RunRegistry<'a, S> {
    /// A registry of `scope` in `store`.
    pub fn new(store: &'a S, scope: Scope, clock: &'a dyn Clock, ids: &'a dyn IdSource) -> Self {
        RunRegistry {
            store,
            scope,
            clock,
            ids,
        }
    }

    /// A fresh `run_<ms>_<rand>` id.
    pub fn generate_run_id(&self) -> String {
        generate_run_id(self.clock.now(), self.ids)
    }

    /// Writes the manifest of a starting run and returns its id.
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
        self.store.run_put(&self.scope, &manifest)?;
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
        manifest.updated_at = iso(self.clock.now());
        self.store.run_put(&self.scope, &manifest)?;
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
        self.store.run_put(&self.scope, &manifest)?;
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

    /// Continue `run_id`: its session, starting where it ended; `goal` defaults to its goal.
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

    /// Branch from `run_id` with a new `fork_…` session.
    pub fn fork(&self, run_id: &str, goal: &str) -> Result<Scenario> {
        let manifest = self.require(run_id)?;
        Ok(Scenario {
            goal: goal.to_owned(),
            start_url: continue_url(&manifest),
            session_id: Some(generate_fork_session_id(self.clock.now(), self.ids)),
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

    fn require(&self, run_id: &str) -> Result<RunManifest> {
        self.get(run_id)?
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
