//! The browser memory in browser-agent-driver's own shapes, for a drop-in of its memory
//! classes (the Node package's `TrajectoryStore`, `AppKnowledge`, `SelectorCache`,
//! `ProjectStore`, `TrajectoryAnalyzer` and `ContextBudget`): save, list and match
//! trajectories and render one as a reference; record a site's facts, sessions and selectors
//! and read them back (the facts as the prompt's block; `browser_facts` answers them one by
//! one); keep hints and suite summaries; and what needs no store (a URL's site, a run id, a
//! test suite's hints, a context within a budget).
//!
//! Each operation converts between the reference's JSON objects and the browser memory's
//! types, and calls `agent-memory-browser`; the rules (matching, confidence, ranking,
//! rendering) stay there. The reference's objects keep its camelCase keys (`durationMs`,
//! `snapshotHash`), as its JSON files have them, so a drop-in hands them over and back
//! unchanged; the operations' own arguments are snake_case, as everywhere in the contract.
//! They are read as leniently as the reference's files were: a field left out (or `null`)
//! takes its empty value, and a field the memory does not keep (a turn's `title`) is ignored,
//! so `deny_unknown_fields` is for the operations' own arguments only.
//!
//! The reference is JavaScript, so a number in its objects is a JavaScript number: an
//! integer beyond 2^53 is kept as the float JavaScript holds (`javascript_numbers`), and the
//! object comes back as the same JavaScript value.

use agent_memory_browser::compat::iso;
use agent_memory_browser::{
    Budget, ContextBudget, EvaluatedRun, Match, MatchOptions, Policy, Recorded, RunReport, Turn,
    find_replayable, generate_hints, generate_run_id, knowledge_block, known_selectors,
    reference_trajectory, site_key,
};
use agent_memory_core::excerpt::Excerpt;
use agent_memory_core::store::browser::{
    FactKind, HintStore, SelectorEntry, SessionEntry, SiteMemory, SiteMemoryStore, SiteObservation,
    SuiteSummary, Trajectory, TrajectoryStep, TrajectoryStore,
};
use agent_memory_core::{Clock, Scope};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

use crate::browser::{HintsOutput, ImportOutput, memory, scope_of, written_now};
use crate::operations::NoInput;
use crate::{Env, Error, Result, ResultExt};
use agent_memory_browser::{ClassFiles, MemoryRoot};
use std::path::Path;

/// The largest integer a JavaScript number holds exactly: 2^53 - 1.
const SAFE_INTEGER: u64 = 9_007_199_254_740_991;

/// `value` with every integer beyond 2^53 - 1 (either sign) made the float JavaScript reads it
/// as. Such an integer in the reference's JSON is no exact integer to it; kept as a float, it
/// comes back to JavaScript as the same number, where a door would make an exact integer that
/// big a `BigInt`.
fn javascript_numbers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            let inexact = n.as_u64().is_some_and(|u| u > SAFE_INTEGER)
                || n.as_i64().is_some_and(|i| i.unsigned_abs() > SAFE_INTEGER);
            if let Some(float) = n.as_f64().filter(|_| inexact).and_then(Number::from_f64) {
                *n = float;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(javascript_numbers),
        Value::Object(fields) => fields.values_mut().for_each(javascript_numbers),
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// A turn of a run, as browser-agent-driver's agent reports it (its `Turn`).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnDocument {
    /// The page the action was chosen on.
    #[serde(default)]
    pub state: Option<PageState>,
    /// The action, a JSON object such as `{"action": "click", "selector": "@b3"}` (`{}` when
    /// left out).
    #[serde(default = "empty_object")]
    #[schemars(schema_with = "crate::portable::json_object")]
    pub action: Value,
    /// Whether the action's effect was verified.
    #[serde(default)]
    pub verified: Option<bool>,
    /// What the action was expected to change.
    #[serde(default)]
    pub expected_effect: Option<String>,
    /// Wall time of the turn in milliseconds.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// The model's reasoning.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// The error the action raised.
    #[serde(default)]
    pub error: Option<String>,
    /// Why the expected effect was not observed.
    #[serde(default)]
    pub verification_failure: Option<String>,
}

/// The page a turn's action was chosen on (a turn's `state`).
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct PageState {
    /// The page URL.
    #[serde(default)]
    pub url: Option<String>,
    /// The page snapshot (only its hash is stored).
    #[serde(default)]
    pub snapshot: Option<String>,
}

impl TurnDocument {
    /// The turn as the browser memory takes it, its action as JSON text.
    fn into_turn(self) -> Turn {
        let state = self.state.unwrap_or_default();
        let mut action = self.action;
        javascript_numbers(&mut action);
        Turn {
            url: state.url.unwrap_or_default(),
            snapshot: state.snapshot.unwrap_or_default(),
            // `to_string` writes through `fmt`, a call per token; `serde_json` writes the
            // bytes. A `Value` always serializes.
            action: serde_json::to_string(&action).unwrap_or_default(),
            verified: self.verified.unwrap_or(false),
            expected_effect: self.expected_effect,
            duration_ms: self.duration_ms.unwrap_or(0),
            reasoning: self.reasoning,
            error: self.error,
            verification_failure: self.verification_failure,
        }
    }
}

/// A saved run, as browser-agent-driver's `Trajectory`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrajectoryDocument {
    /// Its id (`traj_<ms>_<6 base36>`).
    pub id: String,
    /// The goal the agent was given.
    pub goal: String,
    /// Scheme, host and port of the site (`https://shop.test:8443`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The actions taken, in order (`complete` and `abort` are no steps).
    pub steps: Vec<StepDocument>,
    /// Whether the run reached its goal.
    pub success: bool,
    /// Wall time of the run in milliseconds.
    pub duration_ms: u64,
    /// The model that drove the run.
    pub model: String,
    /// When the run was saved (ISO 8601).
    pub timestamp: String,
}

/// One step of a saved run, as browser-agent-driver's `TrajectoryStep`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepDocument {
    /// The page URL when the action ran.
    pub url: String,
    /// The action, a JSON object (null when its stored text is no JSON).
    // Answered as its stored text, which is checked, not parsed into a value.
    #[schemars(schema_with = "crate::portable::json_object")]
    pub action: Box<RawValue>,
    /// A hash of the page snapshot, as decimal text.
    pub snapshot_hash: String,
    /// Whether the action's effect was verified.
    pub verified: bool,
    /// What the action was expected to change, when the agent said so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_effect: Option<String>,
}

impl From<TrajectoryStep> for StepDocument {
    fn from(step: TrajectoryStep) -> Self {
        StepDocument {
            url: step.url,
            action: RawValue::from_string(step.action)
                .unwrap_or_else(|_| RawValue::NULL.to_owned()),
            snapshot_hash: step.snapshot_hash,
            verified: step.verified,
            expected_effect: step.expected_effect,
        }
    }
}

impl From<Trajectory> for TrajectoryDocument {
    fn from(trajectory: Trajectory) -> Self {
        TrajectoryDocument {
            id: trajectory.id,
            goal: trajectory.goal,
            origin: trajectory.origin,
            steps: trajectory
                .steps
                .into_iter()
                .map(StepDocument::from)
                .collect(),
            success: trajectory.success,
            duration_ms: trajectory.duration_ms,
            model: trajectory.model,
            timestamp: trajectory.timestamp,
        }
    }
}

/// A finished run to save, as browser-agent-driver's `TrajectoryStore.save` takes it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveTrajectoryInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// The goal of the run.
    pub goal: String,
    /// Its turns, in order, as the agent reports them; `complete` and `abort` actions are not
    /// kept as steps.
    #[serde(default)]
    pub turns: Vec<TurnDocument>,
    /// Whether the run reached its goal.
    #[serde(default)]
    pub success: bool,
    /// The model that drove it.
    #[serde(default)]
    pub model: String,
    /// A URL of the site the run took place on (its scheme, host and port are the
    /// trajectory's origin); empty when unknown.
    #[serde(default)]
    pub origin: String,
}

/// Saves the trajectory of a finished run, and nothing else (the reference's `save` writes
/// one trajectory file: no session, fact or selector), and answers the trajectory as stored.
/// Under the `quarantine` screen policy a trajectory the write screen flags is held for
/// review instead (`memory_review`), as `browser_record_run` holds a run.
pub fn save_trajectory(env: &Env<'_>, input: SaveTrajectoryInput) -> Result<TrajectoryDocument> {
    let scope = scope_of(input.scope.as_deref())?;
    let turns = input
        .turns
        .into_iter()
        .map(TurnDocument::into_turn)
        .collect();
    let report = RunReport::new(input.goal, input.origin)
        .with_turns(turns)
        .with_success(input.success)
        .with_model(input.model);
    let mut memory = memory(env, scope);
    memory.guard.policy = crate::evidence::policy(env)?;
    // A held trajectory is answered as a stored one is (the reference's shape has no place
    // for a hold); it is in the review queue, and in no match until approved.
    let saved = match memory.save_trajectory(&report)? {
        Recorded::Stored(trajectory) | Recorded::Held { trajectory, .. } => trajectory,
    };
    Ok(saved.into())
}

/// The site of `url` as the drop-in's reads show it: under the `quarantine` screen policy,
/// without the sessions, facts and selector entries the write screen flags (as a context
/// leaves them out); otherwise as stored, so its text stays the reference's.
fn site_shown(env: &Env<'_>, scope: &Scope, url: &str) -> Result<Option<SiteMemory>> {
    let mut site = env.store.site_get(scope, &site_key(url))?;
    if let Some(site) = site.as_mut()
        && crate::evidence::quarantined(env)?
    {
        crate::browser::recall_screen(env, scope, url)?.withhold(site);
    }
    Ok(site)
}

/// A scope of the browser memory.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
}

/// Every trajectory of a scope.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TrajectoriesOutput {
    /// The trajectories, oldest first.
    pub trajectories: Vec<TrajectoryDocument>,
}

/// Every trajectory of the scope, oldest first.
pub fn trajectories(env: &Env<'_>, input: ScopeInput) -> Result<TrajectoriesOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let list = env.store.trajectory_list(&scope)?;
    Ok(TrajectoriesOutput {
        trajectories: list.into_iter().map(TrajectoryDocument::from).collect(),
    })
}

/// A goal to find the best stored trajectory for.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MatchInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// The goal of the run about to start.
    pub goal: String,
    /// A URL of the site: only trajectories of its origin match (a URL that does not parse
    /// filters nothing).
    #[serde(default)]
    pub origin: Option<String>,
    /// A match needs a goal similarity strictly above this (default 0.5).
    #[serde(default)]
    pub similarity_threshold: Option<f64>,
    /// Trajectories older than this many days are not candidates (default 30).
    #[serde(default)]
    pub ttl_days: Option<f64>,
    /// Rank by trace score (similarity, recency, speed, verified steps), not similarity alone.
    #[serde(default)]
    pub trace_scoring: bool,
}

/// The trajectory that matched, if one did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MatchOutput {
    /// The best match; absent when none is close enough.
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    pub matched: Option<TrajectoryMatch>,
}

/// A stored trajectory that matched a goal.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TrajectoryMatch {
    /// The trajectory.
    pub trajectory: TrajectoryDocument,
    /// How similar its goal is to the one asked about, from 0 to 1.
    pub similarity: f64,
    /// Its ranking score (the similarity, unless ranked by trace score).
    pub score: f64,
}

impl From<Option<Match>> for MatchOutput {
    fn from(found: Option<Match>) -> Self {
        MatchOutput {
            matched: found.map(|m| TrajectoryMatch {
                similarity: m.similarity,
                score: m.score,
                trajectory: m.trajectory.into(),
            }),
        }
    }
}

/// The best successful trajectory for the goal, above the similarity threshold.
pub fn best_match(env: &Env<'_>, input: MatchInput) -> Result<MatchOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let mut options = MatchOptions::new().with_scoring(input.trace_scoring);
    if let Some(threshold) = input.similarity_threshold {
        options = options.with_threshold(threshold);
    }
    if let Some(days) = input.ttl_days {
        options = options.with_ttl_days(days);
    }
    let found = memory(env, scope)
        .with_options(options)
        .find_match(&input.goal, input.origin.as_deref())?;
    Ok(found.into())
}

/// A goal to find a trajectory to replay for.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayableInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// The goal of the run about to start.
    pub goal: String,
    /// A URL of the site: only trajectories of exactly its origin are replayed (none when it
    /// does not parse).
    #[serde(default)]
    pub origin: String,
    /// Trajectories older than this many days are not candidates (default 30).
    #[serde(default)]
    pub ttl_days: Option<f64>,
    /// The least goal similarity a replay needs (default 0.85).
    #[serde(default)]
    pub min_similarity: Option<f64>,
}

/// The trajectory to replay without a model: a goal similarity of at least 0.85 (or
/// `min_similarity`), the same origin, at least one step, successful and within the TTL.
pub fn replayable(env: &Env<'_>, input: ReplayableInput) -> Result<MatchOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let mut options = MatchOptions::new();
    if let Some(days) = input.ttl_days {
        options = options.with_ttl_days(days);
    }
    if let Some(min) = input.min_similarity {
        options = options.with_replay_threshold(min);
    }
    let found = find_replayable(
        env.store.as_ref(),
        &scope,
        &input.goal,
        &input.origin,
        &options,
        env.clock.now(),
    )?;
    Ok(found.into())
}

/// A trajectory to render as the prompt's reference, as browser-agent-driver's
/// `Trajectory` (only its goal and steps are read).
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ReferenceTrajectory {
    /// The goal.
    #[serde(default)]
    pub goal: Option<String>,
    /// The steps, in order.
    #[serde(default)]
    pub steps: Option<Vec<ReferenceStep>>,
}

/// A step of a trajectory to render (its `url`, `action` and `verified` are read).
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ReferenceStep {
    /// The page URL when the action ran.
    #[serde(default)]
    pub url: Option<String>,
    /// The action, a JSON object.
    #[serde(default)]
    #[schemars(schema_with = "crate::portable::json_object")]
    pub action: Option<Value>,
    /// Whether the action's effect was verified.
    #[serde(default)]
    pub verified: Option<bool>,
}

/// A trajectory to render.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReferenceTextInput {
    /// The trajectory, as `browser_trajectories` answers it.
    pub trajectory: ReferenceTrajectory,
}

/// A text for the prompt.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TextOutput {
    /// The text; empty when there is nothing to show.
    pub text: String,
}

/// The reference text of a trajectory: `Goal: ...`, `Steps (N total):`, one line per step.
pub fn reference_text(_: &Env<'_>, input: ReferenceTextInput) -> Result<TextOutput> {
    let trajectory = input.trajectory;
    let steps = trajectory
        .steps
        .unwrap_or_default()
        .into_iter()
        .map(|step| TrajectoryStep {
            url: step.url.unwrap_or_default(),
            action: step.action.map(|a| a.to_string()).unwrap_or_default(),
            snapshot_hash: String::new(),
            verified: step.verified.unwrap_or(false),
            expected_effect: None,
        })
        .collect();
    let trajectory = Trajectory {
        id: String::new(),
        goal: trajectory.goal.unwrap_or_default(),
        origin: None,
        steps,
        success: false,
        duration_ms: 0,
        model: String::new(),
        timestamp: String::new(),
        recorded_at: None,
        provenance: None,
    };
    Ok(TextOutput {
        text: reference_trajectory(&trajectory),
    })
}

/// The site an operation filed under.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SiteOutput {
    /// The site key of the URL: its host and port (`localhost_5173`), or a safe name for
    /// what is no URL.
    pub site: String,
}

/// One observed fact about a site.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordFactInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// A URL of the site (`https://shop.test/cart` is `shop.test`).
    pub url: String,
    /// What the fact is about: `timing`, `selector`, `pattern` or `quirk`.
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["timing", "selector", "pattern", "quirk"]))]
    pub kind: String,
    /// What it is about (`page-load`).
    pub key: String,
    /// What was observed: the same value again confirms the fact, another contradicts it.
    pub value: String,
}

/// Records one observation of a fact: a confirmation raises its confidence, a contradiction
/// halves it.
pub fn record_fact(env: &Env<'_>, input: RecordFactInput) -> Result<SiteOutput> {
    let Some(kind) = FactKind::parse(&input.kind) else {
        return Err(Error::invalid(
            "type",
            format!(
                "fact type {} is none of timing, selector, pattern, quirk",
                Excerpt::quoted(&input.kind)
            ),
        ));
    };
    let scope = scope_of(input.scope.as_deref())?;
    memory(env, scope).record_fact(&input.url, kind, &input.key, &input.value)?;
    Ok(SiteOutput {
        site: site_key(&input.url),
    })
}

/// A previous run on a site, as browser-agent-driver's `SessionEntry` (read leniently: a
/// field left out is empty).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDocumentInput {
    /// The session id the run was tagged with.
    #[serde(default)]
    pub id: Option<String>,
    /// The goal.
    #[serde(default)]
    pub goal: Option<String>,
    /// The agent's own account of the result.
    #[serde(default)]
    pub outcome: Option<String>,
    /// Whether the run succeeded.
    #[serde(default)]
    pub success: Option<bool>,
    /// Where the browser ended up.
    #[serde(default)]
    pub final_url: Option<String>,
    /// When the run finished (ISO 8601); sessions are ordered by it.
    #[serde(default)]
    pub timestamp: Option<String>,
    /// Turns the run took.
    #[serde(default)]
    pub turns_used: Option<u64>,
    /// Wall time in milliseconds.
    #[serde(default)]
    pub duration_ms: Option<u64>,
}

/// A session to append to a site's history.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordSessionInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// A URL of the site.
    pub url: String,
    /// The session.
    pub session: SessionDocumentInput,
}

/// Appends a session to the site's history; the newest five are kept.
pub fn record_session(env: &Env<'_>, input: RecordSessionInput) -> Result<SiteOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let session = input.session;
    let entry = SessionEntry {
        id: session.id.unwrap_or_default(),
        goal: session.goal.unwrap_or_default(),
        outcome: session.outcome.unwrap_or_default(),
        success: session.success.unwrap_or(false),
        final_url: session.final_url.unwrap_or_default(),
        timestamp: session.timestamp.unwrap_or_default(),
        turns_used: session
            .turns_used
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0),
        duration_ms: session.duration_ms.unwrap_or(0),
    };
    let site = site_key(&input.url);
    let observation = SiteObservation {
        site: site.clone(),
        observed_at: entry.timestamp.clone(),
        label: input.url,
        session: Some(entry),
        ..SiteObservation::default()
    };
    env.store
        .site_observe(&scope, &observation, Some(&written_now(env)))?;
    Ok(SiteOutput { site })
}

/// A site of a scope.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SiteInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// A URL of the site.
    pub url: String,
}

/// A previous run on a site, as browser-agent-driver's `SessionEntry`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDocument {
    /// The session id the run was tagged with.
    pub id: String,
    /// The goal.
    pub goal: String,
    /// The agent's own account of the result.
    pub outcome: String,
    /// Whether the run succeeded.
    pub success: bool,
    /// Where the browser ended up (may be empty).
    pub final_url: String,
    /// When the run finished (ISO 8601).
    pub timestamp: String,
    /// Turns the run took.
    pub turns_used: u32,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
}

/// A site's session history.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionsOutput {
    /// The sessions, newest first (by timestamp text).
    pub sessions: Vec<SessionDocument>,
}

/// The site's sessions, newest first.
pub fn sessions(env: &Env<'_>, input: SiteInput) -> Result<SessionsOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let Some(site) = site_shown(env, &scope, &input.url)? else {
        return Ok(SessionsOutput {
            sessions: Vec::new(),
        });
    };
    // As the reference's getter: by timestamp text, newest first (a stable sort).
    let mut sessions = site.sessions;
    sessions.sort_by(|a, b| b.timestamp.cmp(&a.timestamp));
    Ok(SessionsOutput {
        sessions: sessions
            .into_iter()
            .map(|s| SessionDocument {
                id: s.id,
                goal: s.goal,
                outcome: s.outcome,
                success: s.success,
                final_url: s.final_url,
                timestamp: s.timestamp,
                turns_used: s.turns_used,
                duration_ms: s.duration_ms,
            })
            .collect(),
    })
}

/// The block browser-agent-driver's `AppKnowledge.formatForBrain` renders for the site: its
/// `SESSION HISTORY`, a blank line, then its `APP KNOWLEDGE` (facts of confidence 0.5 and up,
/// by kind); either part is left out when empty.
pub fn knowledge(env: &Env<'_>, input: SiteInput) -> Result<TextOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let site = site_shown(env, &scope, &input.url)?;
    Ok(TextOutput {
        text: site
            .map(|s| knowledge_block(&s.sessions, &s.facts))
            .unwrap_or_default(),
    })
}

/// A selector that worked for an element of a site.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordSelectorInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// A URL of the site (or any name the selectors are kept under).
    pub url: String,
    /// The element, `role "name"` (`button "Pay"`).
    pub element: String,
    /// The selector that found it: an `@ref` (`@e9`) or a stable selector (`#pay`).
    pub selector: String,
}

/// Records that the selector worked for the element.
pub fn record_selector(env: &Env<'_>, input: RecordSelectorInput) -> Result<SiteOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    memory(env, scope).record_selector(&input.url, &input.element, &input.selector)?;
    Ok(SiteOutput {
        site: site_key(&input.url),
    })
}

/// A selector entry, as browser-agent-driver's `SelectorEntry`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectorDocument {
    /// The element, `role "name"`.
    pub element: String,
    /// The last `@ref` that worked (refs change between page loads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_ref: Option<String>,
    /// The last stable selector that worked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stable_selector: Option<String>,
    /// How many times a selector for it worked.
    pub success_count: u32,
    /// When one last worked (ISO 8601).
    pub last_used: String,
}

/// A site's selector entries.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SelectorsOutput {
    /// The entries, in the order their elements were first recorded.
    pub selectors: Vec<SelectorDocument>,
}

/// The site's selector entries, in the order first recorded.
pub fn selectors(env: &Env<'_>, input: SiteInput) -> Result<SelectorsOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let site = site_shown(env, &scope, &input.url)?;
    let entries = site.map(|s| s.selectors).unwrap_or_default();
    Ok(SelectorsOutput {
        selectors: entries
            .into_iter()
            .map(|e| SelectorDocument {
                element: e.element,
                last_ref: e.last_ref,
                stable_selector: e.stable_selector,
                success_count: e.success_count,
                last_used: e.last_used,
            })
            .collect(),
    })
}

/// A selector entry to render, as `browser_selectors` answers it (read leniently).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectorDocumentInput {
    /// The element, `role "name"`.
    #[serde(default)]
    pub element: Option<String>,
    /// The last `@ref` that worked.
    #[serde(default)]
    pub last_ref: Option<String>,
    /// The last stable selector that worked.
    #[serde(default)]
    pub stable_selector: Option<String>,
    /// How many times a selector for it worked.
    #[serde(default)]
    pub success_count: Option<u64>,
    /// When one last worked (ISO 8601).
    #[serde(default)]
    pub last_used: Option<String>,
}

/// Selector entries to render.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelectorsTextInput {
    /// The entries (the caller's cut of `browser_selectors`).
    pub selectors: Vec<SelectorDocumentInput>,
}

/// The `KNOWN SELECTORS` block of the entries, most used first; empty without entries.
pub fn selectors_text(_: &Env<'_>, input: SelectorsTextInput) -> Result<TextOutput> {
    let entries: Vec<SelectorEntry> = input
        .selectors
        .into_iter()
        .map(|e| SelectorEntry {
            element: e.element.unwrap_or_default(),
            last_ref: e.last_ref,
            stable_selector: e.stable_selector,
            success_count: e
                .success_count
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            last_used: e.last_used.unwrap_or_default(),
        })
        .collect();
    Ok(TextOutput {
        text: known_selectors(&entries),
    })
}

/// Hints to keep for a scope.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveHintsInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// The hints text.
    pub hints: String,
}

/// Stores the hints, replacing the scope's earlier ones, and answers them as stored.
pub fn save_hints(env: &Env<'_>, input: SaveHintsInput) -> Result<HintsOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let updated_at = iso(env.clock.now());
    let by = written_now(env);
    env.store
        .hints_put(&scope, &input.hints, &updated_at, Some(&by))?;
    Ok(HintsOutput {
        hints: input.hints,
        updated_at,
    })
}

/// What to forget of a site.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetKnowledgeInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// A URL of the site.
    pub url: String,
    /// Forget its session history too.
    #[serde(default)]
    pub sessions: bool,
}

/// What forgetting a site's knowledge did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ForgetKnowledgeOutput {
    /// The site.
    pub site: String,
    /// Whether the scope knew the site (else nothing was there to forget).
    pub forgotten: bool,
}

/// Forgets the facts learned about the site and, with `sessions`, its session history; its
/// selectors stay.
pub fn forget_knowledge(
    env: &Env<'_>,
    input: ForgetKnowledgeInput,
) -> Result<ForgetKnowledgeOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let site = site_key(&input.url);
    let at = iso(env.clock.now());
    // One atomic step: a fact or selector recorded meanwhile by another process is neither
    // lost nor half forgotten.
    let forgotten = env
        .store
        .site_forget_knowledge(&scope, &site, input.sessions, &at)?;
    Ok(ForgetKnowledgeOutput { site, forgotten })
}

/// A test suite's summary to keep.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveSuiteSummaryInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// The summary, any JSON object whose non-empty `id` names it (browser-agent-driver's
    /// `runs/<id>.json`).
    #[schemars(schema_with = "crate::portable::json_object")]
    pub summary: Map<String, Value>,
}

/// The suite summary an operation stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SuiteSummaryOutput {
    /// Its id.
    pub id: String,
}

/// Stores a suite summary, replacing one with the same id.
pub fn save_suite_summary(
    env: &Env<'_>,
    input: SaveSuiteSummaryInput,
) -> Result<SuiteSummaryOutput> {
    let id = match input.summary.get("id") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        _ => {
            return Err(Error::invalid(
                "summary.id",
                "a suite summary needs a non-empty `id`",
            ));
        }
    };
    let scope = scope_of(input.scope.as_deref())?;
    let mut summary = Value::Object(input.summary);
    javascript_numbers(&mut summary);
    let json = serde_json::to_string_pretty(&summary)?;
    env.store.suite_summary_put(
        &scope,
        &SuiteSummary {
            id: id.clone(),
            json,
        },
        Some(&written_now(env)),
    )?;
    Ok(SuiteSummaryOutput { id })
}

/// A scope's suite summaries.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SuiteSummariesOutput {
    /// The summaries as stored, ordered by id.
    #[schemars(schema_with = "crate::portable::json_objects")]
    pub summaries: Vec<Value>,
}

/// Every suite summary of the scope, ordered by id.
pub fn suite_summaries(env: &Env<'_>, input: ScopeInput) -> Result<SuiteSummariesOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let stored = env.store.suite_summaries(&scope)?;
    Ok(SuiteSummariesOutput {
        summaries: stored
            .into_iter()
            .map(|s| {
                serde_json::from_str(&s.json).unwrap_or_else(|_| serde_json::json!({ "id": s.id }))
            })
            .collect(),
    })
}

/// A URL to name the site of.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SiteKeyInput {
    /// A URL, a bare domain or any text.
    pub url: String,
}

/// The site a URL is filed under: `localhost_5173`, `shop.test`, or a safe name for what is
/// no URL. It reads and writes nothing.
pub fn site_of(_: &Env<'_>, input: SiteKeyInput) -> Result<SiteOutput> {
    Ok(SiteOutput {
        site: site_key(&input.url),
    })
}

/// A test's run, as browser-agent-driver's evaluation reports it (read leniently).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuiteRunInput {
    /// The test case's name.
    #[serde(default)]
    pub name: Option<String>,
    /// The goal.
    #[serde(default)]
    pub goal: Option<String>,
    /// The turns, as the agent reported them.
    #[serde(default)]
    pub turns: Option<Vec<TurnDocument>>,
    /// Whether the agent said it succeeded.
    #[serde(default)]
    pub agent_success: Option<bool>,
    /// Whether ground truth confirmed success.
    #[serde(default)]
    pub verified: Option<bool>,
    /// Skipped runs are left out.
    #[serde(default)]
    pub skipped: Option<bool>,
    /// The judge's verdict.
    #[serde(default)]
    pub verdict: Option<String>,
    /// Details of the failed criteria, when criteria were checked.
    #[serde(default)]
    pub failed_criteria: Option<Vec<String>>,
    /// Turns used.
    #[serde(default)]
    pub turns_used: Option<u64>,
    /// Wall time in milliseconds.
    #[serde(default)]
    pub duration_ms: Option<u64>,
}

/// A test suite's evaluated runs.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteHintsInput {
    /// The runs.
    pub runs: Vec<SuiteRunInput>,
}

/// The `FEEDBACK FROM PREVIOUS RUNS:` hints of a test suite's runs, or an empty text when
/// nothing stands out.
pub fn suite_hints(_: &Env<'_>, input: SuiteHintsInput) -> Result<TextOutput> {
    let runs: Vec<EvaluatedRun> = input
        .runs
        .into_iter()
        .map(|run| EvaluatedRun {
            name: run.name.unwrap_or_default(),
            goal: run.goal.unwrap_or_default(),
            turns: run
                .turns
                .unwrap_or_default()
                .into_iter()
                .map(TurnDocument::into_turn)
                .collect(),
            agent_success: run.agent_success.unwrap_or(false),
            verified: run.verified.unwrap_or(false),
            skipped: run.skipped.unwrap_or(false),
            verdict: run.verdict,
            failed_criteria: run.failed_criteria,
            turns_used: run
                .turns_used
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            duration_ms: run.duration_ms.unwrap_or(0),
        })
        .collect();
    Ok(TextOutput {
        text: generate_hints(&runs),
    })
}

/// A fresh run id.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunIdOutput {
    /// `run_<ms>_<6 base36>`, as the run registry makes them.
    pub run_id: String,
}

/// A fresh run id, from the clock and the ids of the environment. It reads and writes
/// nothing.
pub fn run_id(env: &Env<'_>, _: NoInput) -> Result<RunIdOutput> {
    Ok(RunIdOutput {
        run_id: generate_run_id(env.clock.now(), env.ids.as_ref()),
    })
}

/// How parts that do not all fit are assembled.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BudgetPolicy {
    /// browser-agent-driver's: stop at the first part that overflows, cutting it (with
    /// `...[truncated]`) when more than 200 units of the budget remain.
    #[default]
    Stop,
    /// Skip a part that does not fit and keep filling with the lower ones that do.
    Skip,
}

/// One part of a context, as browser-agent-driver's `ContextBudget.add` takes it.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct BudgetPartInput {
    /// What the part holds.
    #[serde(default)]
    pub label: Option<String>,
    /// Its text; an empty part is left out.
    #[serde(default)]
    pub content: Option<String>,
    /// Its priority: higher parts are kept first (default 0); any number, as JavaScript's.
    #[serde(default)]
    pub priority: Option<f64>,
}

/// Parts to assemble within a budget.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BuildContextInput {
    /// The parts.
    pub parts: Vec<BudgetPartInput>,
    /// The budget in UTF-16 code units, as JavaScript counts a string's length (default
    /// 8000).
    #[serde(default)]
    pub budget: Option<usize>,
    /// What to do with a part that overflows (default `stop`).
    #[serde(default)]
    pub policy: BudgetPolicy,
}

/// A part's priority as JavaScript compares it: absent is 0, and -0 is 0.
fn priority_of(priority: Option<f64>) -> f64 {
    priority.unwrap_or(0.0) + 0.0
}

/// The parts assembled highest priority first within the budget. It reads and writes
/// nothing.
pub fn build_context(_: &Env<'_>, input: BuildContextInput) -> Result<TextOutput> {
    let policy = match input.policy {
        BudgetPolicy::Stop => Policy::StopAtOverflow,
        BudgetPolicy::Skip => Policy::SkipOverflow,
    };
    // Only the priorities' order counts, so each number (fractional ones too) becomes its rank
    // among the distinct priorities, which the budget's integer priorities order alike.
    let mut distinct: Vec<f64> = input
        .parts
        .iter()
        .map(|p| priority_of(p.priority))
        .collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    let mut context = ContextBudget::new();
    for part in input.parts {
        let wanted = priority_of(part.priority);
        let rank = distinct.partition_point(|p| p.total_cmp(&wanted).is_lt());
        let priority = i32::try_from(rank).unwrap_or(i32::MAX);
        context.add(
            part.label.unwrap_or_default(),
            part.content.unwrap_or_default(),
            priority,
        );
    }
    let units = input
        .budget
        .unwrap_or(agent_memory_browser::DEFAULT_BUDGET_CHARS);
    Ok(TextOutput {
        text: context.build(Budget::Utf16Units(units), policy),
    })
}

/// Which of browser-agent-driver's memory classes kept the files to adopt.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClassKind {
    /// `TrajectoryStore`: every `*.json` file of the folder is a trajectory.
    Trajectories,
    /// `AppKnowledge`: the file is the site's knowledge and session history.
    Knowledge,
    /// `SelectorCache`: the file is the site's selectors.
    Selectors,
    /// `RunRegistry`: every `*.json` file of the folder (its `agent-runs/`) is a run manifest.
    Runs,
}

/// The files one of browser-agent-driver's memory classes kept, to adopt into a scope.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdoptFilesInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// The class whose files they are.
    pub kind: ClassKind,
    /// The folder (`trajectories`, `runs`) or the file (`knowledge`, `selectors`) the class
    /// was given; an absent one adopts nothing.
    pub path: String,
    /// A URL of the site the knowledge or selectors are of (needed for those two classes).
    #[serde(default)]
    pub url: Option<String>,
}

/// Adopts the files a browser-agent-driver memory class kept into the scope: the records the
/// scope does not hold yet are stored (all or nothing), those it holds are left as they are,
/// and files the class would skip are listed.
pub fn adopt_files(env: &Env<'_>, input: AdoptFilesInput) -> Result<ImportOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let given = Path::new(&input.path);
    let named = Excerpt::plain(&input.path);
    let site = match (input.kind, input.url.as_deref()) {
        (ClassKind::Knowledge | ClassKind::Selectors, Some(url)) => site_key(url),
        (ClassKind::Knowledge | ClassKind::Selectors, None) => {
            return Err(Error::invalid(
                "url",
                "url is needed to adopt a site's knowledge or selectors",
            ));
        }
        _ => String::new(),
    };
    let file = given
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default()
        .to_owned();
    let (folder, files) = match input.kind {
        ClassKind::Trajectories => (given, ClassFiles::Trajectories),
        ClassKind::Runs => (given, ClassFiles::Runs),
        ClassKind::Knowledge => (
            parent_of(given),
            ClassFiles::Knowledge {
                file: &file,
                site: &site,
            },
        ),
        ClassKind::Selectors => (
            parent_of(given),
            ClassFiles::Selectors {
                file: &file,
                site: &site,
            },
        ),
    };
    let root = crate::files::folder_to_read(folder, &env.files)?;
    let transfer = agent_memory_browser::adopt_files(
        env.store,
        &scope,
        &MemoryRoot::new(root),
        files,
        env.clock.now(),
        Some(&crate::browser::importer(env)),
    )
    .with_context(|| format!("cannot adopt {named}"))?;
    Ok(ImportOutput::from(transfer))
}

/// The folder a file is in (the working folder for a bare name).
fn parent_of(file: &Path) -> &Path {
    match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_javascript_cannot_hold_exactly_become_its_floats() {
        let mut value = json!({
            "big": 1_152_921_504_606_846_976_u64,
            "low": -1_152_921_504_606_846_976_i64,
            "safe": 9_007_199_254_740_991_u64,
            "items": [3, 12.5, {"deep": 18_446_744_073_709_551_615_u64}],
        });
        javascript_numbers(&mut value);
        assert_eq!(
            value.to_string(),
            r#"{"big":1.152921504606847e+18,"items":[3,12.5,{"deep":1.8446744073709552e+19}],"low":-1.152921504606847e+18,"safe":9007199254740991}"#
        );
    }

    #[test]
    fn a_turn_left_empty_is_read_as_the_reference_read_it() {
        let turn: TurnDocument = serde_json::from_value(json!({"turn": 1})).expect("a turn");
        let turn = turn.into_turn();
        assert_eq!(
            (turn.url.as_str(), turn.action.as_str(), turn.duration_ms),
            ("", "{}", 0)
        );
        let turn: TurnDocument =
            serde_json::from_value(json!({"action": null, "state": null, "verified": null}))
                .expect("nulls");
        assert_eq!(turn.into_turn().action, "null");
    }
}
