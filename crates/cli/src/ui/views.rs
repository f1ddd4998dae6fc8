//! The data behind each view of the inspector page, as JSON: the contract's operations where
//! one answers the question (list, stats, patterns, recall, context, runs, model view, lint,
//! notes, forget), and the store's own reads for what no operation returns (groups below the
//! threshold, a pattern's confidence over time, a site's facts and selectors, a session's
//! events, a session's recorded calls).

use anyhow::{Context, Result};
use serde_json::{Map, Value, json};

use agent_memory_contract::{Env, Failure, operations, time};
use agent_memory_core::{Partition, Scope, SessionId};
use agent_memory_trajectory::Config;
use agent_memory_trajectory::Fingerprint;
use agent_memory_trajectory::policy::{SignalMapping, SuccessSignal, update_confidence};

/// The most episodes of a group a confidence chart replays.
const CHART_EPISODES: usize = 100_000;

/// The most trajectories the browser view lists (the newest).
const SHOWN_TRAJECTORIES: usize = 200;

/// The views the page asks for, by the path after `/api/`.
pub(crate) const VIEWS: &[&str] = &[
    "overview",
    "partition",
    "recall",
    "timeline",
    "browser",
    "context",
    "session",
    "recording",
    "notes",
    "forget",
];

/// The views that write; every other view reads.
pub(crate) const WRITES: &[&str] = &["forget"];

/// Answers view `name` with `input` (a JSON object).
pub(crate) fn answer(env: &Env<'_>, name: &str, input: Value) -> Result<Value> {
    match name {
        "overview" => overview(env),
        "partition" => partition(env, &input),
        "recall" => call(env, "trajectory_recall", input),
        "timeline" => timeline(env, &input),
        "browser" => browser(env, &input),
        "context" => call(env, "browser_context", input),
        "session" => session(env, &input),
        "recording" => recording(env, &input),
        "notes" => notes(env, input),
        "forget" => call(env, "memory_forget", input),
        other => Err(Failure::invalid("view", format!("no view named {other:?}")).into()),
    }
}

/// Runs contract operation `name` on `input`.
fn call(env: &Env<'_>, name: &str, input: Value) -> Result<Value> {
    let operation = operations::find(name).with_context(|| format!("no operation {name}"))?;
    operation.call(env, input)
}

/// A required text field of `input`.
fn text<'a>(input: &'a Value, field: &str) -> Result<&'a str> {
    input
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| Failure::invalid(field, format!("{field} is required (a string)")).into())
}

fn overview(env: &Env<'_>) -> Result<Value> {
    Ok(json!({
        "database": env.store.location(),
        "list": call(env, "memory_list", Value::Null)?,
        "stats": call(env, "memory_stats", Value::Null)?,
    }))
}

/// A partition's patterns, ranked as recall ranks them, and its groups below the threshold.
fn partition(env: &Env<'_>, input: &Value) -> Result<Value> {
    let name = text(input, "partition")?;
    let patterns = call(env, "trajectory_patterns", json!({ "partition": name }))?;
    let partition =
        Partition::new(name).map_err(|e| Failure::invalid("partition", e.to_string()))?;
    let pending = env
        .store
        .pending_groups(&partition)?
        .into_iter()
        .map(|group| {
            json!({
                "fingerprint": fingerprint_json(&group.fingerprint),
                "episodes": group.episode_count + group.pending.len() as u64,
                "pending": group.pending.len(),
                "canonical_sequence": group.canonical.map(|c| c.trajectory),
            })
        })
        .collect::<Vec<_>>();
    Ok(json!({ "partition": name, "patterns": patterns, "pending": pending }))
}

fn fingerprint_json(fingerprint: &Fingerprint) -> Value {
    Value::Object(
        fingerprint
            .pairs()
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect::<Map<_, _>>(),
    )
}

/// A pattern's confidence after each of its episodes, replayed with the default settings.
fn timeline(env: &Env<'_>, input: &Value) -> Result<Value> {
    let name = text(input, "partition")?;
    let partition =
        Partition::new(name).map_err(|e| Failure::invalid("partition", e.to_string()))?;
    let wanted = input
        .get("fingerprint")
        .and_then(Value::as_object)
        .ok_or_else(|| Failure::invalid("fingerprint", "fingerprint is required (an object)"))?;
    let pairs = wanted
        .iter()
        .map(|(k, v)| {
            v.as_str()
                .map(|v| (k.clone(), v.to_owned()))
                .ok_or_else(|| {
                    Failure::invalid("fingerprint", format!("fingerprint.{k} is not a string"))
                })
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let fingerprint =
        Fingerprint::new(pairs).map_err(|e| Failure::invalid("fingerprint", e.to_string()))?;
    let config = Config::new(Vec::<String>::new());
    let mut confidence = config.initial_confidence;
    let episodes = env
        .store
        .group_episodes(&partition, &fingerprint, 0, CHART_EPISODES)?;
    let mut points = Vec::with_capacity(episodes.len());
    for (count, episode) in episodes.iter().enumerate() {
        let outcome: Value = serde_json::from_str(&episode.episode.outcome).unwrap_or(Value::Null);
        let signal = SuccessSignal.signal(&outcome);
        confidence = update_confidence(confidence, count as u64, signal, config.evidence_cap);
        points.push(json!({ "at": time(episode.episode.recorded_at), "confidence": confidence }));
    }
    Ok(json!({ "partition": name, "points": points }))
}

/// A browser scope's sites (facts, selectors, trajectories) and runs.
fn browser(env: &Env<'_>, input: &Value) -> Result<Value> {
    let name = input
        .get("scope")
        .and_then(Value::as_str)
        .unwrap_or("shared");
    let scope = Scope::new(name).map_err(|e| Failure::invalid("scope", e.to_string()))?;
    let now = env.clock.now();
    let count = env.store.trajectory_count(&scope)?;
    let trajectories = env.store.trajectory_recent(&scope, SHOWN_TRAJECTORIES)?;
    let mut sites = Vec::new();
    for site in env.store.site_list(&scope)? {
        let Some(memory) = env.store.site_get(&scope, &site)? else {
            continue;
        };
        let facts = memory
            .facts
            .iter()
            .map(|f| {
                json!({ "kind": f.kind.as_str(), "key": f.key, "value": f.value,
                        "confidence": f.confidence, "sources": f.sources, "last_seen": f.last_seen })
            })
            .collect::<Vec<_>>();
        let selectors = memory
            .selectors
            .iter()
            .map(|s| {
                json!({ "element": s.element, "stable_selector": s.stable_selector,
                        "last_ref": s.last_ref, "success_count": s.success_count, "last_used": s.last_used })
            })
            .collect::<Vec<_>>();
        sites.push(json!({ "site": site, "label": memory.label, "facts": facts,
                           "selectors": selectors, "sessions": memory.sessions.len() }));
    }
    // Newest first, and only the first ones: a scope may hold tens of thousands.
    let trajectories = trajectories
        .iter()
        .map(|t| {
            let age_days = t
                .recorded_at
                .map(|at| (now.as_millis() - at.as_millis()) as f64 / 86_400_000.0);
            json!({
                "id": t.id, "goal": t.goal, "origin": t.origin, "success": t.success,
                "steps": t.steps.iter().map(|s| json!({"url": s.url, "action": s.action, "verified": s.verified})).collect::<Vec<_>>(),
                "verified": t.steps.iter().filter(|s| s.verified).count(),
                "timestamp": t.timestamp, "age_days": age_days, "model": t.model,
            })
        })
        .collect::<Vec<_>>();
    let runs = call(env, "browser_runs", json!({ "scope": name, "limit": 200 }))?;
    Ok(
        json!({ "scope": name, "sites": sites, "trajectories": trajectories,
                "trajectory_count": count, "runs": runs }),
    )
}

/// A coding session's events and its model view in `format`.
fn session(env: &Env<'_>, input: &Value) -> Result<Value> {
    let id = text(input, "session")?;
    let session = SessionId::new(id).map_err(|e| Failure::invalid("session", e.to_string()))?;
    let events = env
        .store
        .session_load(&session)?
        .into_iter()
        .map(|event| {
            let payload = serde_json::from_str::<Value>(&event.payload)
                .unwrap_or(Value::String(event.payload));
            json!({ "kind": event.kind, "payload": payload })
        })
        .collect::<Vec<_>>();
    let format = input
        .get("provider")
        .and_then(Value::as_str)
        .unwrap_or("openai_chat");
    let view = if events.is_empty() {
        Value::Null
    } else {
        call(
            env,
            "turns_view",
            json!({ "session": id, "provider": format }),
        )?
    };
    Ok(json!({ "session": id, "events": events, "view": view }))
}

/// A session's recorded tool calls, the trail they make and its lint findings.
fn recording(env: &Env<'_>, input: &Value) -> Result<Value> {
    let id = text(input, "session")?;
    let session = SessionId::new(id).map_err(|e| Failure::invalid("session", e.to_string()))?;
    let calls = env
        .store
        .list_tool_logs(&session)?
        .iter()
        .map(|log| {
            agent_memory_recording::tool_log_to_json(log)
                .ok()
                .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                .unwrap_or(Value::Null)
        })
        .collect::<Vec<_>>();
    let (trail, lint) = if calls.is_empty() {
        (Value::Null, Value::Null)
    } else {
        let trail = call(env, "recording_templatize", json!({ "session": id }))?;
        let lint = match trail.get("trail").and_then(Value::as_str) {
            Some(yaml) => call(
                env,
                "recording_lint",
                json!({ "trail": yaml, "session": id }),
            )?,
            None => Value::Null,
        };
        (trail, lint)
    };
    Ok(json!({ "session": id, "calls": calls, "trail": trail, "lint": lint }))
}

/// A scope's notes: `view` of a path (the tree by default); nothing else the tool does.
fn notes(env: &Env<'_>, input: Value) -> Result<Value> {
    let scope = input
        .get("scope")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let path = input
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or("/memories");
    call(
        env,
        "notes",
        json!({ "command": "view", "path": path, "scope": scope }),
    )
}
