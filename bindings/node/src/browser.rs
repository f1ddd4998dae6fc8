//! The browser memory's own calls (`agent-memory-browser`), for the package's drop-in of
//! browser-agent-driver's memory classes: save a trajectory, list and match them, render one
//! as a reference, observe and read facts and selectors, keep hints. Each converts values
//! between the reference's JSON shapes (camelCase, actions as objects) and the crate's types,
//! and calls the crate; the rules (matching, confidence, ranking, rendering) stay there.

use agent_memory_browser::{
    BrowserMemory, EvaluatedRun, MatchOptions, RunReport, Turn, app_knowledge, find_replayable,
    generate_hints, known_selectors, reference_trajectory, site_key,
};
use agent_memory_core::store::browser::{
    FactKind, SelectorEntry, SessionEntry, SiteObservation, SuiteSummary, Trajectory,
    TrajectoryStep,
};
use agent_memory_core::{RandomIds, Scope};
use napi::Result;
use napi::bindgen_prelude::Either;
use napi_derive::napi;
use serde_json::{Map, Value, json};

use crate::{NativeStore, contract_failure, failure};

/// A failure of the browser memory, classified as the contract classifies it.
fn browser_failure(error: agent_memory_browser::Error) -> napi::Error {
    contract_failure(error.into())
}

fn scope_of(name: &str) -> Result<Scope> {
    Scope::new(name).map_err(|e| failure("invalid_input", e.to_string(), Some("scope")))
}

fn text(value: &Value, field: &str) -> String {
    value
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A trajectory in the reference's JSON shape.
fn trajectory_json(t: &Trajectory) -> Value {
    let steps: Vec<Value> = t
        .steps
        .iter()
        .map(|s| {
            let mut step = Map::new();
            step.insert("url".into(), json!(s.url));
            step.insert(
                "action".into(),
                serde_json::from_str(&s.action).unwrap_or(Value::Null),
            );
            step.insert("snapshotHash".into(), json!(s.snapshot_hash));
            step.insert("verified".into(), json!(s.verified));
            if let Some(effect) = &s.expected_effect {
                step.insert("expectedEffect".into(), json!(effect));
            }
            Value::Object(step)
        })
        .collect();
    let mut out = Map::new();
    out.insert("id".into(), json!(t.id));
    out.insert("goal".into(), json!(t.goal));
    if let Some(origin) = &t.origin {
        out.insert("origin".into(), json!(origin));
    }
    out.insert("steps".into(), Value::Array(steps));
    out.insert("success".into(), json!(t.success));
    out.insert("durationMs".into(), json!(t.duration_ms));
    out.insert("model".into(), json!(t.model));
    out.insert("timestamp".into(), json!(t.timestamp));
    Value::Object(out)
}

/// A trajectory from the reference's JSON shape (as `trajectory_json` writes it).
fn trajectory_from(value: &Value) -> Trajectory {
    let steps = value
        .get("steps")
        .and_then(Value::as_array)
        .map(|steps| {
            steps
                .iter()
                .map(|s| TrajectoryStep {
                    url: text(s, "url"),
                    action: s.get("action").map(Value::to_string).unwrap_or_default(),
                    snapshot_hash: text(s, "snapshotHash"),
                    verified: s.get("verified").and_then(Value::as_bool).unwrap_or(false),
                    expected_effect: s
                        .get("expectedEffect")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                })
                .collect()
        })
        .unwrap_or_default();
    Trajectory {
        id: text(value, "id"),
        goal: text(value, "goal"),
        origin: value
            .get("origin")
            .and_then(Value::as_str)
            .map(str::to_owned),
        steps,
        success: value
            .get("success")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        duration_ms: value.get("durationMs").and_then(Value::as_u64).unwrap_or(0),
        model: text(value, "model"),
        timestamp: text(value, "timestamp"),
        recorded_at: None,
    }
}

/// A turn from the reference's `Turn` shape (`state.url`, `state.snapshot`, `action`, ...).
fn turn_from(value: &Value) -> Turn {
    let state = value.get("state").cloned().unwrap_or(Value::Null);
    let optional = |field: &str| value.get(field).and_then(Value::as_str).map(str::to_owned);
    Turn {
        url: text(&state, "url"),
        snapshot: text(&state, "snapshot"),
        action: value
            .get("action")
            .map_or_else(|| "{}".to_owned(), Value::to_string),
        verified: value
            .get("verified")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        expected_effect: optional("expectedEffect"),
        duration_ms: value.get("durationMs").and_then(Value::as_u64).unwrap_or(0),
        reasoning: optional("reasoning"),
        error: optional("error"),
        verification_failure: optional("verificationFailure"),
    }
}

fn selector_json(e: &SelectorEntry) -> Value {
    let mut out = Map::new();
    out.insert("element".into(), json!(e.element));
    if let Some(r) = &e.last_ref {
        out.insert("lastRef".into(), json!(r));
    }
    if let Some(s) = &e.stable_selector {
        out.insert("stableSelector".into(), json!(s));
    }
    out.insert("successCount".into(), json!(e.success_count));
    out.insert("lastUsed".into(), json!(e.last_used));
    Value::Object(out)
}

/// The largest integer napi turns into a JavaScript number rather than a BigInt: 2^53 - 1.
const SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// Whether `JSON.parse` of `value`'s JSON text makes the same JavaScript value as napi's
/// conversion of `value`: it does unless an integer is beyond 2^53 - 1 (napi makes a BigInt
/// of it, `JSON.parse` a number) or a key is `__proto__` (napi sets it through the
/// prototype's setter, `JSON.parse` makes an own property).
fn parses_alike(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_f64()
                || n.as_i64()
                    .is_some_and(|i| (-SAFE_INTEGER..=SAFE_INTEGER).contains(&i))
        }
        Value::Array(items) => items.iter().all(parses_alike),
        Value::Object(fields) => fields
            .iter()
            .all(|(key, field)| key != "__proto__" && parses_alike(field)),
        Value::Null | Value::Bool(_) | Value::String(_) => true,
    }
}

/// `value` as JSON text for the caller to `JSON.parse` where that makes the same value (one
/// string crosses into JavaScript instead of an object built a property at a time), else
/// `value` itself.
pub(crate) fn text_or_value(value: Value) -> Either<String, Value> {
    if parses_alike(&value) {
        Either::A(value.to_string())
    } else {
        Either::B(value)
    }
}

/// Match options from `{similarityThreshold, enableScoring, ttlDays}`.
fn match_options(options: &Value) -> MatchOptions {
    let mut out = MatchOptions::new();
    if let Some(threshold) = options.get("similarityThreshold").and_then(Value::as_f64) {
        out = out.with_threshold(threshold);
    }
    if let Some(days) = options.get("ttlDays").and_then(Value::as_f64) {
        out = out.with_ttl_days(days);
    }
    if let Some(scoring) = options.get("enableScoring").and_then(Value::as_bool) {
        out = out.with_scoring(scoring);
    }
    out
}

#[napi]
impl NativeStore {
    /// Saves a finished run's trajectory in `scope`: `{goal, turns, success, model, origin}`
    /// with turns in the reference's shape. Returns the trajectory in the reference's shape.
    #[napi]
    pub fn browser_save_sync(&self, scope: String, run: Value) -> Result<Value> {
        let store = self.store()?;
        let clock = self.clock();
        let ids = RandomIds::new();
        let memory = BrowserMemory::new(&store, scope_of(&scope)?, clock.as_ref(), &ids);
        let turns = run
            .get("turns")
            .and_then(Value::as_array)
            .map(|turns| turns.iter().map(turn_from).collect())
            .unwrap_or_default();
        let report = RunReport::new(text(&run, "goal"), text(&run, "origin"))
            .with_turns(turns)
            .with_success(run.get("success").and_then(Value::as_bool) == Some(true))
            .with_model(text(&run, "model"));
        let saved = memory.record_run(&report).map_err(browser_failure)?;
        Ok(trajectory_json(&saved))
    }

    /// Every trajectory of `scope`, oldest first, in the reference's shape.
    #[napi]
    pub fn browser_trajectories_sync(&self, scope: String) -> Result<Vec<Value>> {
        let store = self.store()?;
        let list = store
            .trajectory_list(&scope_of(&scope)?)
            .map_err(|e| browser_failure(e.into()))?;
        Ok(list.iter().map(trajectory_json).collect())
    }

    /// The best successful trajectory for `goal` (options: `origin`, `similarityThreshold`,
    /// `enableScoring`, `ttlDays`), or null.
    #[napi]
    pub fn browser_match_sync(
        &self,
        scope: String,
        goal: String,
        options: Value,
    ) -> Result<Option<Value>> {
        let store = self.store()?;
        let clock = self.clock();
        let ids = RandomIds::new();
        let memory = BrowserMemory::new(&store, scope_of(&scope)?, clock.as_ref(), &ids)
            .with_options(match_options(&options));
        let origin = options.get("origin").and_then(Value::as_str);
        let found = memory.find_match(&goal, origin).map_err(browser_failure)?;
        Ok(found.map(|m| trajectory_json(&m.trajectory)))
    }

    /// [`browser_match_sync`](Self::browser_match_sync) with its options as arguments, for
    /// the drop-in's every call: the trajectory as JSON text when `JSON.parse` makes the same
    /// object of it (see `text_or_value`), else the object; null without a match.
    #[napi]
    pub fn browser_match_text_sync(
        &self,
        scope: String,
        goal: String,
        origin: Option<String>,
        threshold: f64,
        ttl_days: f64,
        scoring: bool,
    ) -> Result<Option<Either<String, Value>>> {
        let store = self.store()?;
        let clock = self.clock();
        let ids = RandomIds::new();
        let options = MatchOptions::new()
            .with_threshold(threshold)
            .with_ttl_days(ttl_days)
            .with_scoring(scoring);
        let memory = BrowserMemory::new(&store, scope_of(&scope)?, clock.as_ref(), &ids)
            .with_options(options);
        let found = memory
            .find_match(&goal, origin.as_deref())
            .map_err(browser_failure)?;
        Ok(found.map(|m| text_or_value(trajectory_json(&m.trajectory))))
    }

    /// The trajectory to replay without a model for `goal` on `origin`, with its similarity,
    /// or null (options: `ttlDays`).
    #[napi]
    pub fn browser_replayable_sync(
        &self,
        scope: String,
        goal: String,
        origin: String,
        options: Value,
    ) -> Result<Option<Value>> {
        let store = self.store()?;
        let clock = self.clock();
        let found = find_replayable(
            &store,
            &scope_of(&scope)?,
            &goal,
            &origin,
            &match_options(&options),
            clock.now(),
        )
        .map_err(browser_failure)?;
        Ok(found.map(|m| {
            json!({
                "trajectory": trajectory_json(&m.trajectory),
                "similarity": m.similarity,
                "origin": m.trajectory.origin,
            })
        }))
    }

    /// Records one observed fact (`timing`, `selector`, `pattern` or `quirk`) about the site
    /// of `url`.
    #[napi]
    pub fn browser_record_fact_sync(
        &self,
        scope: String,
        url: String,
        kind: String,
        key: String,
        value: String,
    ) -> Result<()> {
        let Some(kind) = FactKind::parse(&kind) else {
            return Err(failure(
                "invalid_input",
                format!("fact type {kind:?} is none of timing, selector, pattern, quirk"),
                Some("type"),
            ));
        };
        let store = self.store()?;
        let clock = self.clock();
        let ids = RandomIds::new();
        let memory = BrowserMemory::new(&store, scope_of(&scope)?, clock.as_ref(), &ids);
        memory
            .record_fact(&url, kind, &key, &value)
            .map_err(browser_failure)
    }

    /// Appends a session (`{id, goal, outcome, success, finalUrl, timestamp, turnsUsed,
    /// durationMs}`) to the site of `url`; the store keeps the newest five.
    #[napi]
    pub fn browser_record_session_sync(
        &self,
        scope: String,
        url: String,
        session: Value,
    ) -> Result<()> {
        let entry = SessionEntry {
            id: text(&session, "id"),
            goal: text(&session, "goal"),
            outcome: text(&session, "outcome"),
            success: session.get("success").and_then(Value::as_bool) == Some(true),
            final_url: text(&session, "finalUrl"),
            timestamp: text(&session, "timestamp"),
            turns_used: session
                .get("turnsUsed")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            duration_ms: session
                .get("durationMs")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        };
        let observation = SiteObservation {
            site: site_key(&url),
            label: url.clone(),
            observed_at: entry.timestamp.clone(),
            session: Some(entry),
            ..SiteObservation::default()
        };
        let store = self.store()?;
        store
            .site_observe(&scope_of(&scope)?, &observation)
            .map_err(|e| browser_failure(e.into()))
    }

    /// The sessions of the site of `url`, newest first.
    #[napi]
    pub fn browser_sessions_sync(&self, scope: String, url: String) -> Result<Vec<Value>> {
        let store = self.store()?;
        let site = store
            .site_get(&scope_of(&scope)?, &site_key(&url))
            .map_err(|e| browser_failure(e.into()))?;
        let Some(site) = site else {
            return Ok(Vec::new());
        };
        // As the reference's getter: by timestamp text, newest first (a stable sort).
        let mut sessions = site.sessions;
        sessions.sort_by(|a, b| b.timestamp.cmp(&a.timestamp));
        Ok(sessions
            .iter()
            .map(|s| {
                json!({
                    "id": s.id,
                    "goal": s.goal,
                    "outcome": s.outcome,
                    "success": s.success,
                    "finalUrl": s.final_url,
                    "timestamp": s.timestamp,
                    "turnsUsed": s.turns_used,
                    "durationMs": s.duration_ms,
                })
            })
            .collect())
    }

    /// The `APP KNOWLEDGE` block of the site of `url` (empty when nothing reaches 0.5).
    #[napi]
    pub fn browser_knowledge_text_sync(&self, scope: String, url: String) -> Result<String> {
        let store = self.store()?;
        let site = store
            .site_get(&scope_of(&scope)?, &site_key(&url))
            .map_err(|e| browser_failure(e.into()))?;
        Ok(site.map(|s| app_knowledge(&s.facts)).unwrap_or_default())
    }

    /// Records that `selector` worked for `element` on the site of `url`.
    #[napi]
    pub fn browser_record_selector_sync(
        &self,
        scope: String,
        url: String,
        element: String,
        selector: String,
    ) -> Result<()> {
        let store = self.store()?;
        let clock = self.clock();
        let ids = RandomIds::new();
        let memory = BrowserMemory::new(&store, scope_of(&scope)?, clock.as_ref(), &ids);
        memory
            .record_selector(&url, &element, &selector)
            .map_err(browser_failure)
    }

    /// The selector entries of the site of `url`, in the order they were first recorded.
    #[napi]
    pub fn browser_selectors_sync(&self, scope: String, url: String) -> Result<Vec<Value>> {
        let store = self.store()?;
        let site = store
            .site_get(&scope_of(&scope)?, &site_key(&url))
            .map_err(|e| browser_failure(e.into()))?;
        Ok(site
            .map(|s| s.selectors.iter().map(selector_json).collect())
            .unwrap_or_default())
    }

    /// The `KNOWN SELECTORS` block of the site of `url`, from the given entries (the
    /// caller's ranked cut of `browserSelectorsSync`); empty without entries.
    #[napi]
    pub fn browser_selectors_text_sync(&self, entries: Vec<Value>) -> Result<String> {
        let entries: Vec<SelectorEntry> = entries
            .iter()
            .map(|e| SelectorEntry {
                element: text(e, "element"),
                last_ref: e.get("lastRef").and_then(Value::as_str).map(str::to_owned),
                stable_selector: e
                    .get("stableSelector")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                success_count: e
                    .get("successCount")
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(0),
                last_used: text(e, "lastUsed"),
            })
            .collect();
        Ok(known_selectors(&entries))
    }

    /// Stores `hints` for `scope`, replacing earlier ones.
    #[napi]
    pub fn browser_save_hints_sync(&self, scope: String, hints: String) -> Result<()> {
        let store = self.store()?;
        let clock = self.clock();
        let ids = RandomIds::new();
        let memory = BrowserMemory::new(&store, scope_of(&scope)?, clock.as_ref(), &ids);
        memory.save_hints(&hints).map_err(browser_failure)
    }

    /// Forgets the facts learned about the site of `url` and, with `sessions`, its session
    /// history too; its selectors stay. One atomic step of the store.
    #[napi]
    pub fn browser_forget_knowledge_sync(
        &self,
        scope: String,
        url: String,
        sessions: bool,
    ) -> Result<()> {
        let store = self.store()?;
        let at = agent_memory_browser::compat::iso(self.clock().now());
        // One atomic step: a fact or selector recorded meanwhile by another process is
        // neither lost nor half forgotten.
        store
            .site_forget_knowledge(&scope_of(&scope)?, &site_key(&url), sessions, &at)
            .map(|_| ())
            .map_err(|e| browser_failure(e.into()))
    }

    /// Stores a test suite's summary (`summary.id` names it) in `scope`, replacing one with
    /// the same id.
    #[napi]
    pub fn browser_save_suite_summary_sync(&self, scope: String, summary: Value) -> Result<()> {
        let id = text(&summary, "id");
        if id.is_empty() {
            return Err(failure(
                "invalid_input",
                "a suite summary needs a non-empty `id`".to_owned(),
                Some("summary.id"),
            ));
        }
        let store = self.store()?;
        let json = serde_json::to_string_pretty(&summary)
            .map_err(|e| failure("invalid_input", e.to_string(), Some("summary")))?;
        store
            .suite_summary_put(&scope_of(&scope)?, &SuiteSummary { id, json })
            .map_err(|e| browser_failure(e.into()))
    }

    /// Every suite summary stored in `scope`, ordered by id.
    #[napi]
    pub fn browser_suite_summaries_sync(&self, scope: String) -> Result<Vec<Value>> {
        let store = self.store()?;
        let list = store
            .suite_summaries(&scope_of(&scope)?)
            .map_err(|e| browser_failure(e.into()))?;
        Ok(list
            .iter()
            .map(|s| serde_json::from_str(&s.json).unwrap_or_else(|_| json!({ "id": s.id })))
            .collect())
    }

    /// The hints stored for `scope`, or null.
    #[napi]
    pub fn browser_hints_sync(&self, scope: String) -> Result<Option<String>> {
        let store = self.store()?;
        let hints = store
            .hints_get(&scope_of(&scope)?)
            .map_err(|e| browser_failure(e.into()))?;
        Ok(hints.map(|(text, _)| text))
    }
}

/// The site a url (or a bare domain, or any text) is stored under, as the memory names it:
/// `localhost:5173`, `example.com`, or a safe name for what is no url.
#[napi]
pub fn site_key_of(url: String) -> String {
    site_key(&url)
}

/// The reference-trajectory text of a trajectory in the reference's shape (`Goal: ...`,
/// `Steps (N total):`, one line per step).
#[napi]
pub fn reference_text(trajectory: Value) -> String {
    reference_trajectory(&trajectory_from(&trajectory))
}

/// The `FEEDBACK FROM PREVIOUS RUNS:` hints of a test suite's evaluated runs (`{name, goal,
/// turns, agentSuccess, verified, skipped, verdict, failedCriteria, turnsUsed, durationMs}`,
/// turns in the reference's shape), or an empty string when nothing stands out.
#[napi]
pub fn suite_hints(runs: Vec<Value>) -> String {
    let runs: Vec<EvaluatedRun> = runs
        .iter()
        .map(|r| {
            let flag = |field: &str| r.get(field).and_then(Value::as_bool) == Some(true);
            EvaluatedRun {
                name: text(r, "name"),
                goal: text(r, "goal"),
                turns: r
                    .get("turns")
                    .and_then(Value::as_array)
                    .map(|turns| turns.iter().map(turn_from).collect())
                    .unwrap_or_default(),
                agent_success: flag("agentSuccess"),
                verified: flag("verified"),
                skipped: flag("skipped"),
                verdict: r.get("verdict").and_then(Value::as_str).map(str::to_owned),
                failed_criteria: r.get("failedCriteria").and_then(Value::as_array).map(|d| {
                    d.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                }),
                turns_used: r
                    .get("turnsUsed")
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(0),
                duration_ms: r.get("durationMs").and_then(Value::as_u64).unwrap_or(0),
            }
        })
        .collect();
    generate_hints(&runs)
}

/// A fresh run id, `run_<ms>_<6 base36>`, as the run registry makes them.
#[napi]
pub fn generate_run_id() -> String {
    let now = agent_memory_core::Clock::now(&agent_memory_core::SystemClock);
    agent_memory_browser::generate_run_id(now, &RandomIds::new())
}

/// The parts (`{label, content, priority}`) assembled highest priority first within `budget`
/// UTF-16 units, as the reference's `ContextBudget` counts: `policy` `stop` (the reference's:
/// stop at the first part that overflows, cutting it when more than 200 units remain) or
/// `skip` (skip a part that does not fit and keep filling).
#[napi]
pub fn build_context(parts: Vec<Value>, budget: u32, policy: String) -> Result<String> {
    let policy = match policy.as_str() {
        "stop" => agent_memory_browser::Policy::StopAtOverflow,
        "skip" => agent_memory_browser::Policy::SkipOverflow,
        other => {
            return Err(failure(
                "invalid_input",
                format!("policy {other:?} is neither \"stop\" nor \"skip\""),
                Some("policy"),
            ));
        }
    };
    let mut context = agent_memory_browser::ContextBudget::new();
    for part in &parts {
        let priority = part
            .get("priority")
            .and_then(Value::as_i64)
            .and_then(|p| i32::try_from(p).ok())
            .unwrap_or(0);
        context.add(text(part, "label"), text(part, "content"), priority);
    }
    let units = usize::try_from(budget).unwrap_or(usize::MAX);
    Ok(context.build(agent_memory_browser::Budget::Utf16Units(units), policy))
}
