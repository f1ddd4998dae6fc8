//! `browser_context`, `browser_record_run`, `browser_runs`, `browser_resume`,
//! `browser_fork`, `browser_import`, `browser_export`, `browser_prune` and `browser_hints`:
//! the memory of a browser agent, one scope at a time (`shared` unless named).
//!
//! Import and export name a `.agent-memory/` directory (browser-agent-driver's layout): an
//! import reads only a folder the caller may name ([`crate::files::folder_to_read`]), and
//! nothing below it outside it (`MemoryRoot`); an export writes only for a caller that may
//! write where it says ([`crate::files::may_write`]).

use crate::{Error, Result, ResultExt};
use agent_memory_browser::compat::iso;
use std::collections::HashSet;
use std::path::Path;

use agent_memory_browser::{
    BrowserMemory, Budget, Layout, MemoryRoot, PartFate, Policy, RecallGuard, RecallScreen,
    Recorded, RunReport, Scenario, Turn, export_dir, import_dir, site_key,
};
pub use agent_memory_browser::{DEFAULT_BUDGET_CHARS, DEFAULT_TTL_DAYS};
use agent_memory_core::evidence::Writer;
use agent_memory_core::excerpt::Excerpt;
use agent_memory_core::screen::ScreenPolicy;
use agent_memory_core::store::browser::{HeldRun, HintStore, RunFilter, RunManifest, RunStatus};
use agent_memory_core::store::site_log::SiteLog;
use agent_memory_core::{Clock, IdSource, Provenance, Scope, Source};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Env;
use crate::evidence::ProvenanceOutput;
use crate::runs::{RunDocument, RunState};

/// The scope every browser operation uses unless told otherwise.
const SHARED: &str = "shared";

/// The scope `name` names, `shared` when none is named.
pub(crate) fn scope_of(name: Option<&str>) -> Result<Scope> {
    let name = name.unwrap_or(SHARED);
    Scope::new(name).with_context(|| format!("scope {}", Excerpt::quoted(name)))
}

/// The browser memory of one scope, on the environment's store, clock and ids.
pub(crate) type Browser<'a> =
    BrowserMemory<&'a crate::database::Store, &'a dyn Clock, &'a dyn IdSource>;

pub(crate) fn memory<'a>(env: &'a Env<'_>, scope: Scope) -> Browser<'a> {
    BrowserMemory::new(env.store, scope, env.clock.as_ref(), env.ids.as_ref())
        .with_writer(writer(env))
}

/// Who writes to the browser memory through `env`: its door as the client.
pub(crate) fn writer(env: &Env<'_>) -> Writer {
    Writer {
        client: env.client.clone(),
        ..Writer::default()
    }
}

/// Who writes now through `env` what no run of the agent names (a drop-in's fact, session,
/// hints or suite summary): an unknown source, by its door.
pub(crate) fn written_now(env: &Env<'_>) -> Provenance {
    crate::evidence::door_writer(env, Source::Unknown, env.clock.now())
}

/// Who imports files of browser-agent-driver's memory through `env`, now.
pub(crate) fn importer(env: &Env<'_>) -> Provenance {
    let source = Source::Import("browser-agent-driver".to_owned());
    crate::evidence::door_writer(env, source, env.clock.now())
}

/// How the memory parts are assembled into the context.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LayoutInput {
    /// Session history 50, reference trajectory 40, app knowledge 30, selectors 25.
    #[default]
    Layered,
    /// browser-agent-driver's own assembly, byte for byte.
    Compat,
}

/// The context a run with this goal on this URL would get.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// The goal of the run.
    pub goal: String,
    /// The URL the run starts on.
    pub url: String,
    /// Rank trajectories by trace score, not goal similarity alone.
    #[serde(default)]
    pub trace_scoring: bool,
    /// Trajectories older than this many days are not used (default 30).
    #[serde(default)]
    pub ttl_days: Option<f64>,
    /// The context budget in characters (default 8000).
    #[serde(default)]
    pub budget: Option<usize>,
    /// How the parts are assembled (default `layered`).
    #[serde(default)]
    pub layout: LayoutInput,
    /// Each part inside a `<memory-item source="page:URL" trust=…>` data block.
    #[serde(default)]
    pub as_data: bool,
}

/// The memory context, ready for the prompt, with what it was built from.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ContextOutput {
    /// The context text; empty when the memory holds nothing for this goal and site.
    pub context: String,
    /// The stored trajectory chosen as the reference, if one matched.
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    pub matched: Option<ContextMatch>,
    /// Every part of the context, by priority, and what became of it within the budget.
    pub parts: Vec<ContextPart>,
    /// Recalled items left out because the write screen flags their text, under the
    /// store's `quarantine` policy (sessions, facts, selectors, the reference trajectory).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub withheld: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The trajectory a context took as its reference.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ContextMatch {
    /// The trajectory's id.
    pub trajectory_id: String,
    /// Its goal.
    pub goal: String,
    /// How similar its goal is to this one, from 0 to 1.
    pub similarity: f64,
    /// Its ranking score.
    pub score: f64,
    /// Who stored it, in which session and through which client; absent for a trajectory
    /// stored before writers were kept, or read from a memory directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_by: Option<ProvenanceOutput>,
}

/// One part of a context.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ContextPart {
    /// What the part holds (`SESSION HISTORY`, `REFERENCE TRAJECTORY`, ...).
    pub label: String,
    /// Its priority: higher parts are kept first.
    pub priority: i32,
    /// `whole`, `cut` (shortened to fit) or `left` (out of the budget).
    pub fate: String,
    /// Whether any of it is in the context.
    pub included: bool,
    /// Whether it was shortened.
    pub cut: bool,
}

fn ttl(days: Option<f64>) -> Result<f64> {
    let days = days.unwrap_or(DEFAULT_TTL_DAYS);
    if !days.is_finite() || days < 0.0 {
        return Err(Error::invalid(
            "ttl_days",
            format!("ttl_days must be a number of days at least 0, got {days}"),
        ));
    }
    Ok(days)
}

/// The digests of the texts a reviewer approved in `scope`: the vouches kept by approvals of
/// its held runs.
fn approved_texts(env: &Env<'_>, scope: &Scope) -> Result<HashSet<String>> {
    crate::review::vouched_in(env, HeldRun::MEMORY, scope.as_str())
}

/// The read-time screen of reads about `url` in `scope` under `quarantine`: the write screen,
/// showing what a reviewer approved there.
pub(crate) fn recall_screen(env: &Env<'_>, scope: &Scope, url: &str) -> Result<RecallScreen> {
    Ok(RecallScreen::new(url).with_approved(approved_texts(env, scope)?))
}

/// The memory context for a run.
pub fn context(env: &Env<'_>, input: ContextInput) -> Result<ContextOutput> {
    let mut memory = memory(env, scope_of(input.scope.as_deref())?);
    memory.options.scoring = input.trace_scoring;
    memory.options.ttl_days = ttl(input.ttl_days)?;
    memory.guard = RecallGuard {
        policy: crate::evidence::policy(env)?,
        as_data: input.as_data,
    };
    if memory.guard.policy == ScreenPolicy::Quarantine {
        memory.approved = approved_texts(env, memory.scope())?;
    }
    let layout = match input.layout {
        LayoutInput::Layered => Layout::Layered,
        LayoutInput::Compat => Layout::Compatibility,
    };
    let report = memory.context_report(
        &input.goal,
        &input.url,
        layout,
        Budget::Chars(input.budget.unwrap_or(DEFAULT_BUDGET_CHARS)),
        Policy::StopAtOverflow,
    )?;
    Ok(ContextOutput {
        matched: report.matched.as_ref().map(|m| ContextMatch {
            trajectory_id: m.trajectory.id.clone(),
            goal: m.trajectory.goal.clone(),
            similarity: m.similarity,
            score: m.score,
            written_by: m.trajectory.provenance.as_ref().map(ProvenanceOutput::from),
        }),
        parts: report
            .built
            .parts
            .iter()
            .map(|p| ContextPart {
                label: p.label.clone(),
                priority: p.priority,
                fate: p.fate.as_str().to_owned(),
                included: p.fate != PartFate::Left,
                cut: p.fate == PartFate::Cut,
            })
            .collect(),
        context: report.built.text,
        withheld: report.withheld as u64,
    })
}

/// A finished browser run, as the agent reports it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordRunInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// The goal of the run.
    pub goal: String,
    /// Where the run started (its site files the memory).
    pub start_url: String,
    /// The turns, in order.
    pub turns: Vec<TurnInput>,
    /// Whether the run reached its goal.
    pub success: bool,
    /// The model that drove it.
    #[serde(default)]
    pub model: String,
    /// The agent's own account of the result.
    #[serde(default)]
    pub outcome: String,
    /// The run's session (default: the new trajectory's id).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Where the browser ended up.
    #[serde(default)]
    pub final_url: Option<String>,
    /// Selectors that worked during the run.
    #[serde(default)]
    pub selectors: Vec<SelectorInput>,
    /// Its run-registry id: a registered run is completed, any other registered as
    /// finished.
    #[serde(default)]
    pub run_id: Option<String>,
    /// The run this one resumed or forked (`browser_resume`, `browser_fork`).
    #[serde(default)]
    pub parent_run_id: Option<String>,
    /// Who drove the run, kept as its writer: `model` plus the run's model by default, or
    /// `user`, `tool:NAME`, `import:FORMAT`, ...
    #[serde(default)]
    pub source: Option<String>,
}

/// One turn of a run.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnInput {
    /// The page URL when the action ran.
    pub url: String,
    /// The action: a JSON object such as `{"action": "click", "selector": "#buy"}`, or its
    /// JSON text (which keeps its key order exactly).
    #[schemars(schema_with = "crate::portable::object_or_string")]
    pub action: Value,
    /// Whether the action's effect was verified.
    #[serde(default)]
    pub verified: bool,
    /// Wall time of the turn in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
    /// The page snapshot the action was chosen on (only its hash is stored).
    #[serde(default)]
    pub snapshot: String,
    /// What the action was expected to change.
    #[serde(default)]
    pub expected_effect: Option<String>,
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

/// A selector that worked for an element.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelectorInput {
    /// The element, as the agent names it (`search box`).
    pub element: String,
    /// The selector that found it.
    pub selector: String,
}

/// What recording a run stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecordRunOutput {
    /// The scope.
    pub scope: String,
    /// The id of the stored trajectory.
    pub trajectory_id: String,
    /// The site the run's memory is filed under.
    pub site: String,
    /// The session the run was filed in.
    pub session_id: String,
    /// Steps stored (`complete` and `abort` turns are not steps).
    pub steps: u64,
    /// The run whose manifest was completed, when one was named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Under the `quarantine` policy, a run whose text the write screen flags is held for
    /// review instead of recorded: `true` then, and `trajectory_id` names the held run
    /// (`memory_approve_run` records it, `memory_reject_run` erases it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
    /// Why it was held: one finding each (`FIELD: KIND: REASON`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

/// Records a finished run in one transaction: trajectory, session, facts, selectors and,
/// with `run_id`, the completed manifest.
pub fn record_run(env: &Env<'_>, input: RecordRunInput) -> Result<RecordRunOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let mut memory = memory(env, scope.clone());
    if let Some(source) = crate::evidence::source_input(input.source.as_deref())? {
        memory.writer.source = Some(source);
    }
    let mut turns = Vec::with_capacity(input.turns.len());
    for (i, turn) in input.turns.iter().enumerate() {
        let action = match &turn.action {
            Value::String(text) => text.clone(),
            object @ Value::Object(_) => object.to_string(),
            other => {
                return Err(Error::invalid(
                    format!("turns[{i}].action"),
                    format!("turn {i}: action must be a JSON object or its text, got {other}"),
                ));
            }
        };
        turns.push(Turn {
            url: turn.url.clone(),
            snapshot: turn.snapshot.clone(),
            action,
            verified: turn.verified,
            expected_effect: turn.expected_effect.clone(),
            duration_ms: turn.duration_ms,
            reasoning: turn.reasoning.clone(),
            error: turn.error.clone(),
            verification_failure: turn.verification_failure.clone(),
        });
    }
    let manifest = input.run_id.as_deref().map(|id| finished(env, id, &input));
    let mut report = RunReport::new(input.goal.clone(), input.start_url.clone())
        .with_turns(turns)
        .with_success(input.success)
        .with_model(input.model.clone())
        .with_outcome(input.outcome.clone())
        .with_selectors(
            input
                .selectors
                .iter()
                .map(|s| (s.element.clone(), s.selector.clone()))
                .collect(),
        );
    if let Some(session) = &input.session_id {
        report = report.with_session_id(session.clone());
    }
    if let Some(url) = &input.final_url {
        report = report.with_final_url(url.clone());
    }
    if let Some(manifest) = manifest {
        report = report.with_completed_manifest(manifest);
    }
    memory.guard.policy = crate::evidence::policy(env)?;
    let (trajectory, reasons) = match memory.record_or_hold(&report)? {
        Recorded::Stored(trajectory) => (trajectory, Vec::new()),
        Recorded::Held { held, trajectory } => (trajectory, held.reasons),
    };
    Ok(RecordRunOutput {
        scope: scope.as_str().to_owned(),
        session_id: input
            .session_id
            .clone()
            .unwrap_or_else(|| trajectory.id.clone()),
        site: site_key(&input.start_url),
        steps: trajectory.steps.len() as u64,
        trajectory_id: trajectory.id,
        run_id: input.run_id.clone(),
        held: !reasons.is_empty(),
        reasons,
    })
}

/// The manifest run `id` ends with, as `input` reports it: a run that started and finished
/// now. Recording it completes the registered manifest where the run is registered, as the
/// run registry's `complete` does (a field the input leaves out keeps its stored value), in
/// the record's own transaction.
fn finished(env: &Env<'_>, id: &str, input: &RecordRunInput) -> RunManifest {
    let now = iso(env.clock.now());
    RunManifest {
        run_id: id.to_owned(),
        session_id: input.session_id.clone(),
        parent_run_id: input.parent_run_id.clone(),
        status: if input.success {
            RunStatus::Completed
        } else {
            RunStatus::Failed
        },
        goal: input.goal.clone(),
        domain: host_of(&input.start_url),
        start_url: Some(input.start_url.clone()),
        current_url: None,
        final_url: input.final_url.clone(),
        started_at: now.clone(),
        updated_at: now.clone(),
        completed_at: Some(now),
        success: Some(input.success),
        summary: (!input.outcome.is_empty()).then(|| input.outcome.clone()),
        artifact_paths: Vec::new(),
        turn_count: u32::try_from(input.turns.len()).unwrap_or(u32::MAX),
        result: None,
        reason: None,
    }
}

/// The host a run on `url` is filed under (its site key without the port).
fn host_of(url: &str) -> String {
    let site = site_key(url);
    site.split('_').next().unwrap_or_default().to_owned()
}

/// Which registered runs to list.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunsInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// Only runs of this session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Only runs filed under this domain.
    #[serde(default)]
    pub domain: Option<String>,
    /// Only runs in this state.
    #[serde(default)]
    pub status: Option<RunState>,
    /// At most this many runs, newest first.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Registered runs, newest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunsOutput {
    /// The runs.
    pub runs: Vec<RunDocument>,
}

/// The registered runs passing the filters.
pub fn runs(env: &Env<'_>, input: RunsInput) -> Result<RunsOutput> {
    let memory = memory(env, scope_of(input.scope.as_deref())?);
    let filter = RunFilter {
        domain: input.domain.clone(),
        session_id: input.session_id.clone(),
        status: input.status.map(RunStatus::from),
        limit: input.limit,
    };
    let manifests = memory.runs().list(&filter)?;
    Ok(RunsOutput {
        runs: manifests.into_iter().map(RunDocument::from).collect(),
    })
}

/// A run to continue or branch from.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// The run.
    pub run_id: String,
    /// The new goal (default: the run's goal).
    #[serde(default)]
    pub goal: Option<String>,
}

/// Where and how the next run starts.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScenarioOutput {
    /// The goal.
    pub goal: String,
    /// Where to start: the run's final URL, else its start URL.
    pub start_url: String,
    /// The session to run in (a new `fork_...` session for a fork).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The run continued or branched from.
    pub parent_run_id: String,
}

impl From<Scenario> for ScenarioOutput {
    fn from(s: Scenario) -> Self {
        ScenarioOutput {
            goal: s.goal,
            start_url: s.start_url,
            session_id: s.session_id,
            parent_run_id: s.parent_run_id,
        }
    }
}

/// The run's manifest (its id given exactly, or in its file-name form as browser-agent-driver's
/// `getRun` finds it), or a `not_found` failure naming it.
fn registered(memory: &Browser<'_>, id: &str) -> Result<RunManifest> {
    memory
        .runs()
        .find(id)?
        .ok_or_else(|| Error::not_found(id, format!("run {id:?} not found")))
}

/// The scenario that continues a run: same session, from where it ended.
pub fn resume(env: &Env<'_>, input: ScenarioInput) -> Result<ScenarioOutput> {
    let memory = memory(env, scope_of(input.scope.as_deref())?);
    registered(&memory, &input.run_id)?;
    let scenario = memory.runs().resume(&input.run_id, input.goal.as_deref())?;
    Ok(scenario.into())
}

/// The scenario that branches from a run in a new session.
pub fn fork(env: &Env<'_>, input: ScenarioInput) -> Result<ScenarioOutput> {
    let memory = memory(env, scope_of(input.scope.as_deref())?);
    let manifest = registered(&memory, &input.run_id)?;
    let goal = input.goal.clone().unwrap_or(manifest.goal);
    let scenario = memory.runs().fork(&input.run_id, &goal)?;
    Ok(scenario.into())
}

/// A `.agent-memory/` directory to read into a scope.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// The `.agent-memory/` directory (for a server's clients, only inside the folders it
    /// allows).
    pub dir: String,
}

/// What an import read, what was already there, what was skipped.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ImportOutput {
    /// Trajectories read.
    pub trajectories: usize,
    /// Sites whose knowledge and selectors were read.
    pub sites: usize,
    /// Run manifests read.
    pub runs: usize,
    /// Whether the hints were read.
    pub hints: bool,
    /// Suite summaries read.
    pub suite_summaries: usize,
    /// Of the records read, those the scope already held exactly so (left as they were).
    pub unchanged: usize,
    /// Files and folders not read, each with the reason.
    pub skipped: Vec<SkippedFile>,
}

impl From<agent_memory_browser::Transfer> for ImportOutput {
    fn from(transfer: agent_memory_browser::Transfer) -> Self {
        ImportOutput {
            trajectories: transfer.trajectories,
            sites: transfer.sites,
            runs: transfer.runs,
            hints: transfer.hints,
            suite_summaries: transfer.suite_summaries,
            unchanged: transfer.unchanged,
            skipped: transfer
                .skipped
                .iter()
                .map(|s| SkippedFile {
                    path: s.path.display().to_string(),
                    reason: s.reason.to_owned(),
                })
                .collect(),
        }
    }
}

impl ImportOutput {
    /// How many records were read (the hints count as one).
    pub fn records(&self) -> usize {
        self.trajectories + self.sites + self.runs + usize::from(self.hints) + self.suite_summaries
    }
}

/// A file or folder of a memory directory that an import did not read.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkippedFile {
    /// The file.
    pub path: String,
    /// Why it was skipped.
    pub reason: String,
}

/// Reads a `.agent-memory/` directory into the scope, whole or not at all: every file read
/// and checked first (a bad one fails the import, naming it), then every record stored in one
/// transaction. Records already stored exactly so are left as they are; a directory with
/// nothing to import is refused. The writers an export carries (a trajectory's `writtenBy`,
/// a site's `log.json`) are kept, so a forget by writer reaches the imported records.
pub fn import(env: &Env<'_>, input: ImportInput) -> Result<ImportOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let dir = Path::new(&input.dir);
    // A path as long as an input may be is cut where a message quotes it.
    let named = Excerpt::plain(&input.dir);
    let cannot = || format!("cannot import {named}");
    let root = crate::files::folder_to_read(dir, &env.files)?;
    if !root.is_dir() {
        let message = format!("{}: not a directory", cannot());
        return Err(match root.exists() {
            true => Error::invalid(&input.dir, message),
            false => Error::not_found(&input.dir, message),
        });
    }
    let by = importer(env);
    let transfer = import_dir(
        env.store,
        &scope,
        &MemoryRoot::new(root),
        env.clock.now(),
        Some(&by),
    )
    .with_context(cannot)?;
    let read = ImportOutput::from(transfer);
    // As the other imports refuse an empty file.
    if read.records() == 0 {
        return Err(Error::invalid(
            &input.dir,
            format!(
                "{named} holds no browser memory (no trajectories, domains/*/knowledge.json or selectors.json, agent-runs/, hints.json or runs/); nothing to import"
            ),
        ));
    }
    Ok(read)
}

/// A folder to write the scope into, as a `.agent-memory/` directory.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// The folder, created when missing; its memory files are replaced (a server's clients
    /// may not name one).
    pub dir: String,
}

/// What an export wrote.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExportOutput {
    /// Trajectories.
    pub trajectories: usize,
    /// Sites' knowledge and selectors.
    pub sites: usize,
    /// Run manifests.
    pub runs: usize,
    /// Whether the hints were written.
    pub hints: bool,
    /// Suite summaries.
    pub suite_summaries: usize,
}

/// Writes the scope as a `.agent-memory/` directory browser-agent-driver reads: trajectories
/// at the root, one folder per site, run manifests, hints and suite summaries, each file
/// replaced atomically; with each trajectory's writer (`writtenBy`) and each site's log of
/// observations by writer (`domains/SITE/log.json`), which its code reads past.
pub fn export(env: &Env<'_>, input: ExportInput) -> Result<ExportOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let dir = Path::new(&input.dir);
    crate::files::may_write(dir, &env.files)?;
    let transfer = export_dir(env.store, &scope, &MemoryRoot::new(dir))
        .with_context(|| format!("cannot export to {}", Excerpt::plain(&input.dir)))?;
    Ok(ExportOutput {
        trajectories: transfer.trajectories,
        sites: transfer.sites,
        runs: transfer.runs,
        hints: transfer.hints,
        suite_summaries: transfer.suite_summaries,
    })
}

/// Which trajectories have expired.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PruneInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// Trajectories older than this many days are removed (default 30).
    #[serde(default)]
    pub ttl_days: Option<f64>,
}

/// What a prune removed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PruneOutput {
    /// Expired trajectories removed.
    pub removed: usize,
}

/// Removes the scope's trajectories older than the TTL, for good.
pub fn prune(env: &Env<'_>, input: PruneInput) -> Result<PruneOutput> {
    let mut memory = memory(env, scope_of(input.scope.as_deref())?);
    memory.options.ttl_days = ttl(input.ttl_days)?;
    Ok(PruneOutput {
        removed: memory.prune()?,
    })
}

/// Whose hints to show, and whether to analyse the trajectories first.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HintsInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// Analyse every stored trajectory of the scope and store the hints it gives, replacing
    /// the stored ones (imported or earlier), before answering.
    #[serde(default)]
    pub refresh: bool,
}

/// The scope's stored cross-domain hints: empty texts when none are stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HintsOutput {
    /// The hints text; empty when none are stored, or when nothing stood out in the runs
    /// analysed.
    pub hints: String,
    /// When they were analysed (browser-agent-driver's ISO time), empty when never.
    pub updated_at: String,
}

/// The scope's stored hints; with `refresh`, analysed from its trajectories and stored first.
pub fn hints(env: &Env<'_>, input: HintsInput) -> Result<HintsOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    if input.refresh {
        memory(env, scope.clone()).analyse_trajectories()?;
    }
    let (hints, updated_at) = env.store.hints_get(&scope)?.unwrap_or_default();
    Ok(HintsOutput { hints, updated_at })
}

/// The input of `browser_facts`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FactsInput {
    /// The memory scope (default `shared`).
    #[serde(default)]
    pub scope: Option<String>,
    /// A URL of the site; its origin names the site (`https://shop.test/cart` is `shop.test`).
    pub url: String,
    /// The least confidence of a fact answered (default 0.3, the least a context shows); a
    /// fact's confidence is from 0.1 to 1, so 0 answers every fact and more than 1 none.
    #[serde(default)]
    pub min_confidence: Option<f64>,
}

/// What the memory holds about a site, fact by fact.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FactsOutput {
    /// The site the URL names.
    pub site: String,
    /// Its facts with at least the confidence asked for, in the order first seen.
    pub facts: Vec<FactOutput>,
}

/// One fact about a site.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FactOutput {
    /// `timing`, `selector`, `pattern` or `quirk`.
    #[serde(rename = "type")]
    pub kind: String,
    /// What it is about (`page-load`).
    pub key: String,
    /// What was observed.
    pub value: String,
    /// How sure the memory is, from 0.1 to 1: each confirmation raises it, a contradiction
    /// halves it.
    pub confidence: f64,
    /// How many observations confirmed it.
    pub sources: u32,
    /// When it was last observed (ISO 8601).
    pub last_seen: String,
    /// Who observed it last (a run's writer, or a drop-in call's); absent for a fact the site
    /// held before its log began (an import, or one learned before writers were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_by: Option<ProvenanceOutput>,
}

/// The facts the scope's memory holds about the site of `url`, each with who observed it
/// last.
pub fn facts(env: &Env<'_>, input: FactsInput) -> Result<FactsOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let site = site_key(&input.url);
    let log = env.store.site_log(&scope, &site)?;
    let newest = log.as_ref().map(SiteLog::newest_writers);
    let mut facts = memory(env, scope.clone()).facts(&input.url, input.min_confidence)?;
    // Under `quarantine`, what the write screen flags is left out, as a context leaves it.
    if !facts.is_empty() && crate::evidence::quarantined(env)? {
        let screen = recall_screen(env, &scope, &input.url)?;
        facts.retain(|fact| !screen.flags_fact(fact));
    }
    Ok(FactsOutput {
        site,
        facts: facts
            .into_iter()
            .map(|fact| FactOutput {
                written_by: (newest.as_ref())
                    .and_then(|n| n.fact(fact.kind, &fact.key, &fact.value))
                    .map(ProvenanceOutput::from),
                kind: fact.kind.as_str().to_owned(),
                key: fact.key,
                value: fact.value,
                confidence: fact.confidence,
                sources: fact.sources,
                last_seen: fact.last_seen,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::env_on;
    use agent_memory_browser::RunStart;

    fn run(goal: &str, run_id: Option<&str>) -> RecordRunInput {
        RecordRunInput {
            scope: None,
            goal: goal.to_owned(),
            start_url: "https://shop.test/".to_owned(),
            turns: vec![
                TurnInput {
                    url: "https://shop.test/".to_owned(),
                    action: serde_json::json!({"action": "click", "selector": "#search"}),
                    verified: true,
                    duration_ms: 1200,
                    snapshot: "page".to_owned(),
                    expected_effect: None,
                    reasoning: None,
                    error: None,
                    verification_failure: None,
                },
                TurnInput {
                    url: "https://shop.test/results".to_owned(),
                    action: Value::String(r#"{"action":"complete","result":"found"}"#.to_owned()),
                    verified: true,
                    duration_ms: 300,
                    snapshot: String::new(),
                    expected_effect: None,
                    reasoning: None,
                    error: None,
                    verification_failure: None,
                },
            ],
            success: true,
            model: "test-model".to_owned(),
            outcome: "found the tea".to_owned(),
            session_id: Some("s1".to_owned()),
            final_url: Some("https://shop.test/results".to_owned()),
            selectors: vec![SelectorInput {
                element: "search box".to_owned(),
                selector: "#search".to_owned(),
            }],
            run_id: run_id.map(str::to_owned),
            parent_run_id: None,
            source: None,
        }
    }

    #[test]
    fn a_recorded_run_gives_context_and_completes_its_manifest() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        memory(&env, Scope::shared())
            .runs()
            .start(
                RunStart::new("run-1", "find green tea", "shop.test")
                    .with_session_id("s1")
                    .with_start_url("https://shop.test/"),
            )
            .expect("start");
        let recorded = record_run(&env, run("find green tea", Some("run-1"))).expect("record");
        assert_eq!(recorded.steps, 1, "the complete turn is not a step");
        assert_eq!(recorded.session_id, "s1");
        let context = context(
            &env,
            ContextInput {
                scope: None,
                goal: "find green tea".to_owned(),
                url: "https://shop.test/".to_owned(),
                trace_scoring: false,
                ttl_days: None,
                budget: None,
                layout: LayoutInput::Layered,
                as_data: false,
            },
        )
        .expect("context");
        assert!(context.context.contains("#search"), "{}", context.context);
        let listed = runs(&env, RunsInput::default()).expect("runs");
        assert_eq!(listed.runs.len(), 1);
        assert_eq!(listed.runs[0].status, RunState::Completed);
        assert_eq!(listed.runs[0].turn_count, 2);
        let resumed = resume(
            &env,
            ScenarioInput {
                scope: None,
                run_id: "run-1".to_owned(),
                goal: None,
            },
        )
        .expect("resume");
        assert_eq!(resumed.start_url, "https://shop.test/results");
        assert_eq!(resumed.session_id.as_deref(), Some("s1"));
        let forked = fork(
            &env,
            ScenarioInput {
                scope: None,
                run_id: "run-1".to_owned(),
                goal: None,
            },
        )
        .expect("fork");
        assert_eq!(forked.goal, "find green tea");
        assert!(forked.session_id.is_some_and(|s| s.starts_with("fork_")));
    }

    #[test]
    fn an_unregistered_run_is_registered_finished_and_bad_input_stores_nothing() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        let mut bad = run("find tea", None);
        bad.turns[0].action = serde_json::json!(3);
        let error = record_run(&env, bad).expect_err("bad action");
        assert_eq!(
            error.to_string(),
            "turn 0: action must be a JSON object or its text, got 3"
        );
        use agent_memory_core::store::browser::TrajectoryStore;
        assert!(
            store
                .trajectory_list(&Scope::shared())
                .expect("list")
                .is_empty()
        );
        let missing = resume(
            &env,
            ScenarioInput {
                scope: None,
                run_id: "run-2".to_owned(),
                goal: None,
            },
        )
        .expect_err("unknown run");
        assert_eq!(missing.to_string(), "run \"run-2\" not found");
        let mut second = run("find tea", Some("run-2"));
        second.parent_run_id = Some("run-1".to_owned());
        second.success = false;
        record_run(&env, second).expect("record");
        let listed = runs(&env, RunsInput::default()).expect("runs");
        assert_eq!(listed.runs.len(), 1);
        let entry = &listed.runs[0];
        assert_eq!(
            (entry.status, entry.domain.as_str()),
            (RunState::Failed, "shop.test")
        );
        assert_eq!(entry.parent_run_id.as_deref(), Some("run-1"));
        assert_eq!(entry.started_at, "2026-01-01T00:00:00.000Z");
    }
}
