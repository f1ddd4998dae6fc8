//! `browser run start | update | complete`: the run registry's life cycle for an orchestrator
//! (browser-agent-driver's `startRun`, `updateRun`, `completeRun`), each one store write.

use crate::{Error, ErrorKind, Result};
use agent_memory_browser::{RunOutcome, RunRegistry, RunStart, RunUpdate};
use agent_memory_core::store::browser::{RunManifest, RunStatus};
use agent_memory_core::{Clock, IdSource, Scope};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Env;

/// A run to register.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunStartInput {
    /// The goal.
    pub goal: String,
    /// The domain the run is filed under (runs are listed by it).
    pub domain: String,
    /// Where the run starts.
    #[serde(default)]
    pub start_url: Option<String>,
    /// Groups related runs; with it the run id is `<session_id>_<ms>`.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The run this one continues.
    #[serde(default)]
    pub parent_run_id: Option<String>,
    /// The id to use; generated (`run_<ms>_<6 base36>`) when absent.
    #[serde(default)]
    pub run_id: Option<String>,
    /// The browser-memory scope; `shared` when absent.
    #[serde(default)]
    pub scope: Option<String>,
}

/// The state a run moved to.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Started and not finished.
    Running,
    /// Finished successfully.
    Completed,
    /// Finished without success.
    Failed,
}

impl RunState {
    /// Its word: `running`, `completed` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Completed => "completed",
            RunState::Failed => "failed",
        }
    }
}

impl From<RunStatus> for RunState {
    fn from(status: RunStatus) -> Self {
        match status {
            RunStatus::Running => RunState::Running,
            RunStatus::Completed => RunState::Completed,
            RunStatus::Failed => RunState::Failed,
        }
    }
}

impl From<RunState> for RunStatus {
    fn from(state: RunState) -> Self {
        match state {
            RunState::Running => RunStatus::Running,
            RunState::Completed => RunStatus::Completed,
            RunState::Failed => RunStatus::Failed,
        }
    }
}

/// Progress of a running run; absent fields stay as they are.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunUpdateInput {
    /// The run.
    pub run_id: String,
    /// A new state.
    #[serde(default)]
    pub status: Option<RunState>,
    /// The last URL seen.
    #[serde(default)]
    pub current_url: Option<String>,
    /// Turns so far.
    #[serde(default)]
    pub turn_count: Option<u32>,
    /// Files produced so far (replaces the list).
    #[serde(default)]
    pub artifact_paths: Option<Vec<String>>,
    /// The session the run belongs to.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The run it continues.
    #[serde(default)]
    pub parent_run_id: Option<String>,
    /// A new goal.
    #[serde(default)]
    pub goal: Option<String>,
    /// The domain to file it under.
    #[serde(default)]
    pub domain: Option<String>,
    /// Where it started.
    #[serde(default)]
    pub start_url: Option<String>,
    /// Where it ended, when known before completing.
    #[serde(default)]
    pub final_url: Option<String>,
    /// When it finished (ISO 8601).
    #[serde(default)]
    pub completed_at: Option<String>,
    /// Whether it succeeded (the state stays as given by `status`).
    #[serde(default)]
    pub success: Option<bool>,
    /// A summary.
    #[serde(default)]
    pub summary: Option<String>,
    /// The result text.
    #[serde(default)]
    pub result: Option<String>,
    /// The failure reason.
    #[serde(default)]
    pub reason: Option<String>,
    /// The browser-memory scope; `shared` when absent.
    #[serde(default)]
    pub scope: Option<String>,
}

/// How a run ended.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCompleteInput {
    /// The run.
    pub run_id: String,
    /// Whether it succeeded (the state becomes `completed` or `failed`).
    pub success: bool,
    /// Turns taken.
    pub turn_count: u32,
    /// Where it ended; absent keeps a final URL recorded earlier.
    #[serde(default)]
    pub final_url: Option<String>,
    /// A summary.
    #[serde(default)]
    pub summary: Option<String>,
    /// The result text.
    #[serde(default)]
    pub result: Option<String>,
    /// The failure reason.
    #[serde(default)]
    pub reason: Option<String>,
    /// Files produced; absent keeps those recorded earlier.
    #[serde(default)]
    pub artifact_paths: Option<Vec<String>>,
    /// The browser-memory scope; `shared` when absent.
    #[serde(default)]
    pub scope: Option<String>,
}

/// A run's manifest, as the contract writes it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunDocument {
    /// The run's id.
    pub run_id: String,
    /// Its session, if it was tagged with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The run it continues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// Its state.
    pub status: RunState,
    /// The goal.
    pub goal: String,
    /// The domain it is filed under.
    pub domain: String,
    /// Where it started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_url: Option<String>,
    /// The last URL seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_url: Option<String>,
    /// Where it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_url: Option<String>,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
    /// When it finished (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    /// Whether it succeeded, once finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    /// A summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Files it produced.
    pub artifact_paths: Vec<String>,
    /// Turns taken.
    pub turn_count: u32,
    /// The result text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The failure reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl From<RunManifest> for RunDocument {
    fn from(m: RunManifest) -> Self {
        RunDocument {
            run_id: m.run_id,
            session_id: m.session_id,
            parent_run_id: m.parent_run_id,
            status: m.status.into(),
            goal: m.goal,
            domain: m.domain,
            start_url: m.start_url,
            current_url: m.current_url,
            final_url: m.final_url,
            started_at: m.started_at,
            updated_at: m.updated_at,
            completed_at: m.completed_at,
            success: m.success,
            summary: m.summary,
            artifact_paths: m.artifact_paths,
            turn_count: m.turn_count,
            result: m.result,
            reason: m.reason,
        }
    }
}

fn scope_of(name: Option<&str>) -> Result<Scope> {
    Ok(match name {
        Some(name) => Scope::new(name)?,
        None => Scope::shared(),
    })
}

fn registry<'e>(
    env: &'e Env<'_>,
    scope: Scope,
) -> RunRegistry<&'e crate::database::Store, &'e dyn Clock, &'e dyn IdSource> {
    RunRegistry::new(env.store, scope, env.clock.as_ref(), env.ids.as_ref())
        .with_writer(crate::browser::writer(env))
}

/// Registers a new run in the `running` state.
pub fn start(env: &Env<'_>, input: RunStartInput) -> Result<RunDocument> {
    let registry = registry(env, scope_of(input.scope.as_deref())?);
    let run_id = match (input.run_id, &input.session_id) {
        (Some(id), _) => id,
        (None, Some(session)) => agent_memory_browser::session_run_id(session, env.clock.now()),
        (None, None) => registry.generate_run_id(),
    };
    let mut start = RunStart::new(run_id, input.goal, input.domain);
    start.session_id = input.session_id;
    start.parent_run_id = input.parent_run_id;
    start.start_url = input.start_url;
    let run_id = registry.start(start)?;
    let manifest = registry
        .get(&run_id)?
        .ok_or_else(|| Error::new(ErrorKind::Other, format!("run {run_id:?} was not stored")))?;
    Ok(manifest.into())
}

/// Records progress of a running run.
pub fn update(env: &Env<'_>, input: RunUpdateInput) -> Result<RunDocument> {
    let registry = registry(env, scope_of(input.scope.as_deref())?);
    let mut update = RunUpdate::new();
    update.status = input.status.map(RunStatus::from);
    update.current_url = input.current_url;
    update.turn_count = input.turn_count;
    update.artifact_paths = input.artifact_paths;
    update.session_id = input.session_id;
    update.parent_run_id = input.parent_run_id;
    update.goal = input.goal;
    update.domain = input.domain;
    update.start_url = input.start_url;
    update.final_url = input.final_url;
    update.completed_at = input.completed_at;
    update.success = input.success;
    update.summary = input.summary;
    update.result = input.result;
    update.reason = input.reason;
    let manifest = registry.update(&input.run_id, update)?;
    Ok(manifest.into())
}

/// Finishes a run.
pub fn complete(env: &Env<'_>, input: RunCompleteInput) -> Result<RunDocument> {
    let registry = registry(env, scope_of(input.scope.as_deref())?);
    let mut outcome = RunOutcome::new(input.success, input.turn_count);
    outcome.final_url = input.final_url;
    outcome.summary = input.summary;
    outcome.result = input.result;
    outcome.reason = input.reason;
    outcome.artifact_paths = input.artifact_paths;
    let manifest = registry.complete(&input.run_id, outcome)?;
    Ok(manifest.into())
}
