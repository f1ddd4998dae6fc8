//! The data behind each view of the inspector page, as JSON: the contract's operations where
//! one answers the question (list, stats, recall, context, the model view, templatize and
//! lint, forget, a pattern's confidence over time), and the store's own reads for the rest
//! (a partition's patterns and groups below the threshold, a site's facts and selectors, a
//! scope's trajectories and runs, a session's events and recorded calls, a note or a
//! directory of notes).
//!
//! Every answer is bounded. A list that may be long comes a page at a time ([`PAGE`] items,
//! read from the store as one page), and `truncated` names each list the answer cut:
//! `"truncated": {"pending": {"shown": 200, "total": 100000, "next": "<cursor>"}}`. The page
//! asks for the next page of one list with `"page": {"list": "pending", "after": "<cursor>"}`
//! beside the view's own input, and the answer then holds that list alone. What cannot be
//! paged is drawn only up to a cap, and the cap is named the same way (a chart's points, the
//! model view of a very long session, the trail of a very long recording).

use anyhow::{Context, Result};
use serde_json::{Map, Value, json};

use agent_memory_contract::notes::MemoryPath;
use agent_memory_contract::runs::RunDocument;
use agent_memory_contract::{Env, Error as Failure, memory, operations, time, trajectory};
use agent_memory_core::store::notes::NotePath;
use agent_memory_core::store::site_log::SiteLog;
use agent_memory_core::store::trajectory::Fingerprint;
use agent_memory_core::{Page, Partition, Provenance, Scope, SessionId};

/// The most items of a list one answer holds.
pub(crate) const PAGE: usize = 200;

/// The most sites of a browser scope one answer holds (each with its facts and selectors).
const SITES_PAGE: usize = 20;

/// The most facts, and the most selectors, shown of one site.
const SITE_ROWS: usize = 200;

/// The most site names an overview shows of one browser scope.
const SCOPE_SITES: usize = 20;

/// The most episodes of a group a confidence chart replays.
const CHART_EPISODES: usize = 100_000;

/// The most points a chart answers: beyond it, evenly spaced ones, the last included.
const CHART_POINTS: usize = 1_000;

/// The most patterns a recall from the page answers.
const RECALL_LIMIT: usize = 200;

/// The largest context budget, in characters, the page may ask for.
const CONTEXT_BUDGET: u64 = 200_000;

/// The longest session whose model view is drawn: the view replays every event.
const MODEL_VIEW_EVENTS: u64 = 5_000;

/// The longest recording whose trail and lint are drawn: they read every call.
const TRAIL_CALLS: u64 = 5_000;

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
    "review",
    "approve",
    "reject",
    "approve-run",
    "reject-run",
    "review-outputs",
    "approve-output",
    "review-patterns",
    "approve-pattern",
    "audit",
    "forget",
    "forget-writer",
];

/// The views that write; every other view reads.
pub(crate) const WRITES: &[&str] = &[
    "approve",
    "reject",
    "approve-run",
    "reject-run",
    "approve-output",
    "approve-pattern",
    "forget",
    "forget-writer",
];

/// Answers view `name` with `input` (a JSON object).
pub(crate) fn answer(env: &Env<'_>, name: &str, input: Value) -> Result<Value> {
    let more = More::of(&input)?;
    match name {
        "overview" => overview(env, more.as_ref()),
        "partition" => partition(env, &input, more.as_ref()),
        "recall" => recall(env, input),
        "timeline" => timeline(env, &input),
        "browser" => browser(env, &input, more.as_ref()),
        "context" => context(env, input),
        "session" => session(env, &input, more.as_ref()),
        "recording" => recording(env, &input, more.as_ref()),
        "notes" => notes(env, &input, more.as_ref()),
        "review" => call(env, "memory_review", input),
        "approve" => call(env, "memory_approve", input),
        "reject" => call(env, "memory_reject", input),
        "approve-run" => call(env, "memory_approve_run", input),
        "reject-run" => call(env, "memory_reject_run", input),
        "review-outputs" => replayed(env, &input).and_then(|()| call(env, "turns_review", input)),
        "approve-output" => {
            replayed(env, &input).and_then(|()| call(env, "turns_approve_output", input))
        }
        "review-patterns" => call(env, "trajectory_review", input),
        "approve-pattern" => call(env, "trajectory_approve_pattern", input),
        "audit" => call(env, "memory_audit", input),
        "forget" => call(env, "memory_forget", input),
        "forget-writer" => call(env, "trajectory_forget_by", input),
        other => Err(Failure::invalid("view", format!("no view named {other:?}")).into()),
    }
}

/// A request for the next page of one list of a view: `"page": {"list": .., "after": ..}`.
struct More {
    list: String,
    after: String,
}

impl More {
    /// The page `input` asks for, if any.
    fn of(input: &Value) -> Result<Option<More>> {
        let Some(page) = input.get("page") else {
            return Ok(None);
        };
        let field = |name: &str| {
            page.get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    Failure::invalid("page", format!("page.{name} is required (a string)"))
                })
        };
        Ok(Some(More {
            list: field("list")?,
            after: field("after")?,
        }))
    }

    /// Whether this request continues `list`.
    fn wants(more: Option<&More>, list: &str) -> bool {
        more.is_none_or(|m| m.list == list)
    }

    /// The cursor to continue `list` from, when this request continues it.
    fn after<'a>(more: Option<&'a More>, list: &str) -> Option<&'a str> {
        more.filter(|m| m.list == list).map(|m| m.after.as_str())
    }

    /// The position to continue `list` from (0 unless this request continues it).
    fn from(more: Option<&More>, list: &str) -> Result<u64> {
        match More::after(more, list) {
            None => Ok(0),
            Some(at) => at.parse().map_err(|_| {
                Failure::invalid(
                    "page",
                    format!("page.after of {list} is a position: {at:?}"),
                )
                .into()
            }),
        }
    }
}

/// The lists an answer cut, as `truncated` names them.
#[derive(Default)]
struct Truncated(Map<String, Value>);

impl Truncated {
    /// Names `list` as cut: `shown` of its `total` items are in the answer, and `next`, when
    /// more follow, continues it.
    fn cut(&mut self, list: &str, shown: usize, total: u64, next: Option<String>) {
        let mut entry = json!({ "shown": shown, "total": total });
        if let Some(next) = next {
            entry["next"] = Value::String(next);
        }
        self.0.insert(list.to_owned(), entry);
    }

    /// Names `list`, read from position `from` as `page`, when items follow the page.
    fn positioned<T>(&mut self, list: &str, from: u64, page: &Page<T>) {
        let end = from + page.items.len() as u64;
        if end < page.total {
            self.cut(list, page.items.len(), page.total, Some(end.to_string()));
        }
    }

    /// Keeps the first [`PAGE`] of `items` (read as one more than a page, to know whether
    /// more follow), naming `list` with `next` as the last kept item's cursor when they do.
    fn keyed<T>(&mut self, list: &str, page: &mut Page<T>, cursor: impl Fn(&T) -> String) {
        if page.items.len() <= PAGE {
            return;
        }
        page.items.truncate(PAGE);
        let next = page.items.last().map(cursor);
        self.cut(list, PAGE, page.total, next);
    }

    /// Adds `truncated` to `answer` when something was cut.
    fn into_answer(self, mut answer: Value) -> Value {
        if !self.0.is_empty() {
            answer["truncated"] = Value::Object(self.0);
        }
        answer
    }
}

/// Runs contract operation `name` on `input`.
fn call(env: &Env<'_>, name: &str, input: Value) -> Result<Value> {
    let operation = operations::find(name).with_context(|| format!("no operation {name}"))?;
    Ok(operation.call(env, input)?)
}

/// A required text field of `input`.
fn text<'a>(input: &'a Value, field: &str) -> Result<&'a str> {
    input
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| Failure::invalid(field, format!("{field} is required (a string)")).into())
}

/// What the database holds: each list of `memory_list` a page at a time (by name), and the
/// tables' rows.
fn overview(env: &Env<'_>, more: Option<&More>) -> Result<Value> {
    let mut list = call(env, "memory_list", Value::Null)?;
    let mut truncated = Truncated::default();
    let mut shown = Map::new();
    for (name, key) in [
        ("partitions", "partition"),
        ("browser_scopes", "scope"),
        ("turn_sessions", "session"),
        ("tool_log_sessions", "session"),
        ("note_scopes", "scope"),
    ] {
        if !More::wants(more, name) {
            continue;
        }
        let all = match list.get_mut(name).map(Value::take) {
            Some(Value::Array(all)) => all,
            _ => Vec::new(),
        };
        let named = |item: &Value| item[key].as_str().unwrap_or_default().to_owned();
        let after = More::after(more, name);
        let all: Vec<Value> = all
            .into_iter()
            .filter(|item| after.is_none_or(|after| named(item).as_str() > after))
            .collect();
        let mut page = Page {
            total: all.len() as u64,
            items: all,
        };
        page.items.truncate(PAGE + 1);
        truncated.keyed(name, &mut page, named);
        let items = page.items.into_iter().map(|mut item| {
            // A scope's sites are named in its own view; the overview names the first ones.
            let sites = item["sites"].as_array().map_or(0, Vec::len);
            if sites > SCOPE_SITES {
                item["sites_total"] = json!(sites);
                if let Some(Value::Array(names)) = item.get_mut("sites") {
                    names.truncate(SCOPE_SITES);
                }
            }
            item
        });
        shown.insert(name.to_owned(), Value::Array(items.collect()));
    }
    if more.is_some() {
        return Ok(truncated.into_answer(json!({ "list": shown })));
    }
    Ok(truncated.into_answer(json!({
        "database": env.store.location(),
        "list": shown,
        "stats": call(env, "memory_stats", Value::Null)?,
    })))
}

/// A partition's patterns and its groups below the threshold, each a page at a time in
/// fingerprint key order.
fn partition(env: &Env<'_>, input: &Value, more: Option<&More>) -> Result<Value> {
    let name = text(input, "partition")?;
    let partition =
        Partition::new(name).map_err(|e| Failure::invalid("partition", e.to_string()))?;
    let cursor = |list: &str| -> Result<Option<Fingerprint>> {
        More::after(more, list)
            .map(|key| {
                Fingerprint::from_key(key).map_err(|e| Failure::invalid("page", e.to_string()))
            })
            .transpose()
            .map_err(Into::into)
    };
    let key = |fp: &Fingerprint| fp.key();
    let mut truncated = Truncated::default();
    let mut answer = json!({ "partition": name });
    if more.is_none() {
        // The fields a recall of the partition takes: its stored ones, else the default
        // ones a recall falls back on.
        let fields = env
            .store
            .meta_get(&memory::fields_key(&partition)?)?
            .unwrap_or_else(|| trajectory::DEFAULT_FIELDS.join(","));
        let fields: Vec<&str> = fields.split(',').collect();
        answer["fields"] = json!(fields);
    }
    if More::wants(more, "patterns") {
        let after = cursor("patterns")?;
        let mut page = env
            .store
            .patterns_page(&partition, after.as_ref(), PAGE + 1)?;
        truncated.keyed("patterns", &mut page, |p| key(&p.fingerprint));
        answer["patterns"] = page
            .items
            .into_iter()
            .map(|p| {
                json!({
                    "fingerprint": fingerprint_json(&p.fingerprint),
                    "canonical_sequence": p.canonical_sequence,
                    "confidence": p.stats.confidence,
                    "evidence_count": p.stats.evidence_count,
                    "corroborations": p.stats.corroborations,
                    "contradictions": p.stats.contradictions,
                    "last_reinforced": time(p.stats.last_reinforced),
                })
            })
            .collect();
    }
    if More::wants(more, "pending") {
        let after = cursor("pending")?;
        let mut page = env
            .store
            .pending_groups_page(&partition, after.as_ref(), PAGE + 1)?;
        truncated.keyed("pending", &mut page, |g| key(&g.fingerprint));
        answer["pending"] = page
            .items
            .into_iter()
            .map(|group| {
                json!({
                    "fingerprint": fingerprint_json(&group.fingerprint),
                    "episodes": group.episode_count + group.pending.len() as u64,
                    "pending": group.pending.len(),
                    "canonical_sequence": group.canonical.map(|c| c.trajectory),
                })
            })
            .collect();
    }
    Ok(truncated.into_answer(answer))
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

/// `trajectory_recall`, at most [`RECALL_LIMIT`] patterns.
fn recall(env: &Env<'_>, mut input: Value) -> Result<Value> {
    let asked = input.get("limit").and_then(Value::as_u64);
    if let Some(object) = input.as_object_mut() {
        let limit = asked.map_or(RECALL_LIMIT as u64, |n| n.min(RECALL_LIMIT as u64));
        object.insert("limit".to_owned(), json!(limit));
    }
    call(env, "trajectory_recall", input)
}

/// `browser_context`, with a budget of at most [`CONTEXT_BUDGET`] characters.
fn context(env: &Env<'_>, mut input: Value) -> Result<Value> {
    if let Some(budget) = input.get("budget").and_then(Value::as_u64)
        && budget > CONTEXT_BUDGET
    {
        input["budget"] = json!(CONTEXT_BUDGET);
    }
    call(env, "browser_context", input)
}

/// A pattern's confidence after each of its episodes (`trajectory_timeline`, at most
/// [`CHART_EPISODES`] replayed); at most [`CHART_POINTS`] points answered, with who recorded
/// the episodes replayed (each writer once, with its count, most episodes first).
fn timeline(env: &Env<'_>, input: &Value) -> Result<Value> {
    let name = text(input, "partition")?;
    let fingerprint = input
        .get("fingerprint")
        .filter(|f| f.is_object())
        .ok_or_else(|| Failure::invalid("fingerprint", "fingerprint is required (an object)"))?;
    let replay = call(
        env,
        "trajectory_timeline",
        json!({ "partition": name, "fingerprint": fingerprint, "limit": CHART_EPISODES }),
    )?;
    let points = replay
        .get("points")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut writers: Vec<(Value, u64)> = Vec::new();
    for point in &points {
        // A writer is its source, session and client; each episode has its own time.
        let mut by = point.get("written_by").cloned().unwrap_or(Value::Null);
        if let Some(fields) = by.as_object_mut() {
            fields.remove("at");
        }
        match writers.iter_mut().find(|(w, _)| *w == by) {
            Some((_, n)) => *n += 1,
            None => writers.push((by, 1)),
        }
    }
    writers.sort_by_key(|w| std::cmp::Reverse(w.1));
    let writers: Vec<Value> = writers
        .into_iter()
        .map(|(by, episodes)| json!({ "written_by": by, "episodes": episodes }))
        .collect();
    let mut truncated = Truncated::default();
    let replayed = points.len();
    if replay.get("truncated").and_then(Value::as_bool) == Some(true) {
        truncated.cut("episodes", replayed, replayed as u64, None);
    }
    let indices = sample((0..replayed).collect(), CHART_POINTS);
    if indices.len() < replayed {
        truncated.cut("points", indices.len(), replayed as u64, None);
    }
    let points: Vec<Value> = indices.into_iter().map(|i| points[i].clone()).collect();
    Ok(truncated.into_answer(json!({ "partition": name, "points": points, "writers": writers })))
}

/// At most `most` of `points`, evenly spaced, the first and the last included.
fn sample<T: Copy>(points: Vec<T>, most: usize) -> Vec<T> {
    let n = points.len();
    if n <= most || most < 2 {
        return points;
    }
    (0..most)
        .map(|i| points[i * (n - 1) / (most - 1)])
        .collect()
}

/// Who wrote an item, as the browser page shows it.
fn writer_json(p: &Provenance) -> Value {
    json!({ "source": p.source.to_string(), "session": p.session, "client": p.client, "at": time(p.at) })
}

/// A browser scope: its sites (facts, selectors, each with who observed it last),
/// trajectories and runs, each a page at a time.
fn browser(env: &Env<'_>, input: &Value, more: Option<&More>) -> Result<Value> {
    let name = input
        .get("scope")
        .and_then(Value::as_str)
        .unwrap_or("shared");
    let scope = Scope::new(name).map_err(|e| Failure::invalid("scope", e.to_string()))?;
    let now = env.clock.now();
    let mut truncated = Truncated::default();
    let mut answer = json!({ "scope": name });
    if More::wants(more, "sites") {
        let after = More::after(more, "sites");
        let names: Vec<String> = env
            .store
            .site_list(&scope)?
            .into_iter()
            .filter(|site| after.is_none_or(|after| site.as_str() > after))
            .collect();
        let total = names.len() as u64;
        let mut sites = Vec::new();
        for site in names.iter().take(SITES_PAGE) {
            let Some(memory) = env.store.site_get(&scope, site)? else {
                continue;
            };
            // Who last observed each fact and selector, from the site's log (none for what
            // its base holds: an import, or what it held before writers were kept).
            let log = env.store.site_log(&scope, site)?;
            let newest = log.as_ref().map(SiteLog::newest_writers);
            let facts = memory
                .facts
                .iter()
                .take(SITE_ROWS)
                .map(|f| {
                    let by = (newest.as_ref()).and_then(|n| n.fact(f.kind, &f.key, &f.value));
                    json!({ "kind": f.kind.as_str(), "key": f.key, "value": f.value,
                            "confidence": f.confidence, "sources": f.sources, "last_seen": f.last_seen,
                            "written_by": by.map(writer_json) })
                })
                .collect::<Vec<_>>();
            let selectors = memory
                .selectors
                .iter()
                .take(SITE_ROWS)
                .map(|s| {
                    let by = (newest.as_ref()).and_then(|n| n.selector(&s.element));
                    json!({ "element": s.element, "stable_selector": s.stable_selector,
                            "last_ref": s.last_ref, "success_count": s.success_count, "last_used": s.last_used,
                            "written_by": by.map(writer_json) })
                })
                .collect::<Vec<_>>();
            let mut shown = json!({ "site": site, "label": memory.label, "facts": facts,
                                    "selectors": selectors, "sessions": memory.sessions.len() });
            // A site's facts and selectors are not paged: past the cap, their totals say
            // how many there are.
            if memory.facts.len() > SITE_ROWS {
                shown["facts_total"] = json!(memory.facts.len());
            }
            if memory.selectors.len() > SITE_ROWS {
                shown["selectors_total"] = json!(memory.selectors.len());
            }
            sites.push(shown);
        }
        if names.len() > SITES_PAGE {
            let next = names.get(SITES_PAGE - 1).cloned();
            truncated.cut("sites", SITES_PAGE, total, next);
        }
        answer["sites"] = Value::Array(sites);
    }
    if More::wants(more, "trajectories") {
        let from = More::from(more, "trajectories")?;
        let page = env.store.trajectory_recent_page(&scope, from, PAGE)?;
        truncated.positioned("trajectories", from, &page);
        answer["trajectory_count"] = json!(page.total);
        answer["trajectories"] = page
            .items
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
                    "written_by": t.provenance.as_ref().map(writer_json),
                })
            })
            .collect();
    }
    if More::wants(more, "runs") {
        let from = More::from(more, "runs")?;
        let page = env.store.run_page(&scope, from, PAGE)?;
        truncated.positioned("runs", from, &page);
        answer["runs"] = page
            .items
            .into_iter()
            .map(|m| serde_json::to_value(RunDocument::from(m)))
            .collect::<serde_json::Result<Vec<_>>>()
            .context("writing a run's manifest")?
            .into();
    }
    Ok(truncated.into_answer(answer))
}

/// A coding session's events, a page at a time, and its model view in `provider`'s format
/// (for a session of at most [`MODEL_VIEW_EVENTS`] events).
fn session(env: &Env<'_>, input: &Value, more: Option<&More>) -> Result<Value> {
    let id = text(input, "session")?;
    let session = SessionId::new(id).map_err(|e| Failure::invalid("session", e.to_string()))?;
    let from = More::from(more, "events")?;
    let page = env.store.session_page(&session, from, PAGE)?;
    let mut truncated = Truncated::default();
    truncated.positioned("events", from, &page);
    let total = page.total;
    let events = page
        .items
        .into_iter()
        .map(|event| {
            let payload = serde_json::from_str::<Value>(&event.payload)
                .unwrap_or(Value::String(event.payload));
            let written_by = event.written_by.as_ref().map(|p| {
                json!({ "source": p.source.to_string(), "session": p.session,
                        "client": p.client, "at": time(p.at) })
            });
            json!({ "kind": event.kind, "payload": payload, "written_by": written_by })
        })
        .collect::<Vec<_>>();
    let mut answer = json!({ "session": id, "events": events });
    if more.is_some() {
        return Ok(truncated.into_answer(answer));
    }
    let provider = input
        .get("provider")
        .and_then(Value::as_str)
        .unwrap_or("openai_chat");
    answer["view"] = if total > MODEL_VIEW_EVENTS {
        truncated.cut("view", 0, total, None);
        Value::Null
    } else {
        call(
            env,
            "turns_view",
            json!({ "session": id, "provider": provider }),
        )?
    };
    Ok(truncated.into_answer(answer))
}

/// Refuses a session the inspector does not replay (more than [`MODEL_VIEW_EVENTS`] events):
/// reviewing its tool outputs replays it whole, which the command line does.
fn replayed(env: &Env<'_>, input: &Value) -> Result<()> {
    let id = text(input, "session")?;
    let session = SessionId::new(id).map_err(|e| Failure::invalid("session", e.to_string()))?;
    let total = env.store.session_page(&session, 0, 0)?.total;
    if total > MODEL_VIEW_EVENTS {
        return Err(Failure::invalid(
            "session",
            format!(
                "session {id:?} holds {total} events, more than the inspector replays \
                 ({MODEL_VIEW_EVENTS}); review it with `agent-memory review outputs`"
            ),
        )
        .into());
    }
    Ok(())
}

/// A session's recorded tool calls, a page at a time, and the trail they make with its lint
/// findings (for a recording of at most [`TRAIL_CALLS`] calls).
fn recording(env: &Env<'_>, input: &Value, more: Option<&More>) -> Result<Value> {
    let id = text(input, "session")?;
    let session = SessionId::new(id).map_err(|e| Failure::invalid("session", e.to_string()))?;
    let from = More::from(more, "calls")?;
    let page = env.store.tool_log_page(&session, from, PAGE)?;
    let mut truncated = Truncated::default();
    truncated.positioned("calls", from, &page);
    let total = page.total;
    // Each call as its document, with who logged it beside its fields.
    let calls = page
        .items
        .iter()
        .map(|log| {
            let mut call = agent_memory_contract::recording::tool_log_document(log);
            if let (Some(fields), Some(p)) = (call.as_object_mut(), &log.provenance) {
                let by = json!({ "source": p.source.to_string(), "session": p.session,
                                 "client": p.client, "at": time(p.at) });
                fields.insert("written_by".to_owned(), by);
            }
            call
        })
        .collect::<Vec<_>>();
    let mut answer = json!({ "session": id, "calls": calls });
    if more.is_some() {
        return Ok(truncated.into_answer(answer));
    }
    let (trail, lint) = if total == 0 {
        (Value::Null, Value::Null)
    } else if total > TRAIL_CALLS {
        truncated.cut("trail", 0, total, None);
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
    answer["trail"] = trail;
    answer["lint"] = lint;
    Ok(truncated.into_answer(answer))
}

/// A path of a scope's notes, as the store holds it: a note's whole text (`"kind": "note"`),
/// or a directory's notes, every one below it with its size, a page at a time by path
/// (`"kind": "directory"`). Which one the path is comes from the store, never from the text.
fn notes(env: &Env<'_>, input: &Value, more: Option<&More>) -> Result<Value> {
    let scope = input
        .get("scope")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let scope_name = Scope::new(scope).map_err(|e| Failure::invalid("scope", e.to_string()))?;
    let raw = input
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or(agent_memory_contract::notes::ROOT);
    let path = MemoryPath::parse(raw).map_err(|e| Failure::invalid("path", e.to_string()))?;
    let shown = path.to_string();
    if more.is_none()
        && let Some(note) = path.note()
        && let Some(text) = env.store.note_read(&scope_name, note)?
    {
        // Each version's provenance and screen findings, without the older texts.
        let mut history = call(
            env,
            "note_history",
            json!({ "scope": scope, "path": shown }),
        )?;
        let versions = history["versions"].as_array_mut().map(std::mem::take);
        let versions: Vec<Value> = versions
            .unwrap_or_default()
            .into_iter()
            .map(|mut v| {
                if let Some(v) = v.as_object_mut() {
                    v.remove("text");
                }
                v
            })
            .collect();
        return Ok(json!({
            "scope": scope, "path": shown, "kind": "note", "text": text, "versions": versions,
        }));
    }
    let after = More::after(more, "entries")
        .map(|at| {
            MemoryPath::parse(at)
                .ok()
                .and_then(|p| p.note().cloned())
                .ok_or_else(|| Failure::invalid("page", format!("not a note path: {at:?}")))
        })
        .transpose()?;
    let mut page = env
        .store
        .note_list_page(&scope_name, path.note(), after.as_ref(), PAGE + 1)?;
    if path.note().is_some() && page.total == 0 {
        return Err(Failure::not_found(
            shown.as_str(),
            format!("nothing is at {shown} in scope {scope}"),
        )
        .into());
    }
    let mut truncated = Truncated::default();
    let listed = |path: &NotePath| MemoryPath::of(path).to_string();
    truncated.keyed("entries", &mut page, |f| listed(&f.path));
    let entries = page
        .items
        .iter()
        .map(|f| json!({ "path": listed(&f.path), "bytes": f.bytes }))
        .collect::<Vec<_>>();
    Ok(truncated.into_answer(json!({
        "scope": scope, "path": shown, "kind": "directory", "entries": entries,
        "total": page.total,
    })))
}

#[cfg(test)]
mod tests {
    use super::sample;

    #[test]
    fn a_sample_keeps_the_first_and_last_points_evenly_spaced() {
        assert_eq!(sample((0..10).collect(), 20), (0..10).collect::<Vec<_>>());
        assert_eq!(sample((0..10).collect(), 4), [0, 3, 6, 9]);
        assert_eq!(sample((0..100_000).collect(), 1_000).len(), 1_000);
        assert_eq!(sample((0..100_000).collect::<Vec<_>>(), 1_000)[999], 99_999);
    }
}
