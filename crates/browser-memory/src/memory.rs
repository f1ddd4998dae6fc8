//! [`BrowserMemory`]: the four memory layers of one scope over a store, with the clock and id
//! source injected: record finished runs, match goals, build the prompt context, prune.

use agent_memory_core::evidence::Writer;
use std::collections::HashSet;
use std::fmt::Write as _;

use agent_memory_core::evidence::Vouch;
use agent_memory_core::screen::{Finding, ScreenPolicy, as_data_block, screen};
use agent_memory_core::store::browser::{
    Approval, BrowserStore, Fact, FactKind, FactObservation, FinishedRun, HeldRun, RunManifest,
    SessionEntry, SiteMemory, SiteObservation, Trajectory, TrajectoryStep,
};
use agent_memory_core::{Clock, IdSource, MILLIS_PER_DAY, Provenance, Scope, Source};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use crate::budget::{Budget, BuiltContext, ContextBudget, Policy, priority};
use crate::error::Result;
use crate::extract::{Turn, action_name, extract_facts_of, snapshot_hash};
use crate::hints::{EvaluatedRun, generate_hints};
use crate::json::Json;
use crate::matching::{Match, MatchOptions, find_best_match, find_replayable};
use crate::origin::{origin_of, site_key};
use crate::render::{
    app_knowledge, knowledge_block, known_selectors, reference_block, reference_trajectory,
    session_history,
};
use crate::runs::RunRegistry;
use crate::time::iso;
use crate::tokens::tokenize;

/// Facts below this confidence are not returned by default.
pub const DEFAULT_READ_CONFIDENCE: f64 = 0.3;

/// A finished run as the agent reports it: [`RunReport::new`] with the goal and start url,
/// then a `with_*` method for each other field.
///
/// ```
/// use agent_memory_browser::{RunReport, Turn};
///
/// let report = RunReport::new("Find the cart", "https://shop.test/")
///     .with_turns(vec![Turn::default()])
///     .with_success(true)
///     .with_outcome("found it");
/// assert!(report.success);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct RunReport {
    /// The goal.
    pub goal: String,
    /// Where the run started (gives the origin and the site).
    pub start_url: String,
    /// The turns, in order (`complete` and `abort` turns are not stored as steps).
    pub turns: Vec<Turn>,
    /// Whether the run succeeded.
    pub success: bool,
    /// The model that drove it.
    pub model: String,
    /// The agent's own account of the result.
    pub outcome: String,
    /// The session the run was tagged with (defaults to the trajectory id).
    pub session_id: Option<String>,
    /// Where the browser ended up.
    pub final_url: Option<String>,
    /// `(element, selector)` pairs that worked during the run.
    pub selectors: Vec<(String, String)>,
    /// The run's final manifest, if it was registered.
    pub manifest: Option<RunManifest>,
    /// Whether `manifest` completes the run's registered manifest, where one is stored,
    /// rather than replacing it ([`RunReport::with_completed_manifest`]).
    pub completes_registered: bool,
}

impl RunReport {
    /// A run with `goal` that started on `start_url`; it failed, had no turns and no
    /// outcome until the `with_*` methods say otherwise.
    pub fn new(goal: impl Into<String>, start_url: impl Into<String>) -> Self {
        RunReport {
            goal: goal.into(),
            start_url: start_url.into(),
            ..RunReport::default()
        }
    }

    /// With these turns, in order.
    pub fn with_turns(mut self, turns: Vec<Turn>) -> Self {
        self.turns = turns;
        self
    }

    /// Whether the run succeeded.
    pub fn with_success(mut self, success: bool) -> Self {
        self.success = success;
        self
    }

    /// The model that drove it.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// The agent's own account of the result.
    pub fn with_outcome(mut self, outcome: impl Into<String>) -> Self {
        self.outcome = outcome.into();
        self
    }

    /// The session the run was tagged with.
    pub fn with_session_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Where the browser ended up.
    pub fn with_final_url(mut self, final_url: impl Into<String>) -> Self {
        self.final_url = Some(final_url.into());
        self
    }

    /// `(element, selector)` pairs that worked during the run.
    pub fn with_selectors(mut self, selectors: Vec<(String, String)>) -> Self {
        self.selectors = selectors;
        self
    }

    /// The run's final manifest, stored as it is (replacing a registered one).
    pub fn with_manifest(mut self, manifest: RunManifest) -> Self {
        self.manifest = Some(manifest);
        self.completes_registered = false;
        self
    }

    /// The same report completing the run's registered manifest with `finished`: where the
    /// run is registered, its stored manifest keeps how it started and takes the state,
    /// success, turn count and times of `finished`, with its final url and summary where it
    /// has them ([`RunManifest::completed_by`]); where it is not, `finished` is stored. The
    /// stored manifest is read in the run's own transaction.
    pub fn with_completed_manifest(mut self, finished: RunManifest) -> Self {
        self.manifest = Some(finished);
        self.completes_registered = true;
        self
    }
}

/// What [`BrowserMemory::context_report`] found and built.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ContextReport {
    /// The trajectory that matched the goal, if any, with its similarity and score.
    pub matched: Option<Match>,
    /// The text and what became of each part.
    pub built: BuiltContext,
    /// Recalled items the [`RecallGuard`] left out: sessions, facts, selectors and the
    /// reference trajectory whose text the write screen flags, under `quarantine`.
    pub withheld: usize,
}

/// What a context does with recalled text that the write screen
/// ([`screen`](agent_memory_core::screen::screen)) flags: memory written from a page is
/// evidence about the page, never instructions.
///
/// With the policy [`ScreenPolicy::Quarantine`], each recalled item (a session, a fact, a
/// selector, the reference trajectory) whose text the screen flags is left out of the
/// context; with `as_data`, each part is handed over inside a
/// `<memory-item source="page:URL" trust=…>` block (`flagged` when the screen finds something
/// in it, else `external`), its delimiters escaped inside. The default (`flag`, no data
/// blocks) builds the context exactly as before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecallGuard {
    /// `quarantine` leaves flagged items out; `flag` and `off` keep them.
    pub policy: ScreenPolicy,
    /// Each part as a data block.
    pub as_data: bool,
}

/// The write screen applied to what a read recalls, as a [`RecallGuard`] under
/// [`ScreenPolicy::Quarantine`] applies it: links are judged against the host of the page
/// the read is for, and a text a reviewer approved (its [`text_digest`] among
/// [`with_approved`](Self::with_approved)'s) is shown. The drop-in's reads of a site
/// (`browser_knowledge`, `browser_sessions`, `browser_selectors`, `browser_facts`) use it
/// under `quarantine` too.
#[derive(Clone, Debug)]
pub struct RecallScreen {
    host: Option<String>,
    approved: HashSet<String>,
}

/// The SHA-256 digest of `text` as a vouch keeps it (64 lowercase hexadecimal digits): what
/// a reviewer's approval of a held run keeps of each flagged text of it.
pub fn text_digest(text: &str) -> String {
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(text.as_bytes()) {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

impl RecallScreen {
    /// The screen for reads about the page `url`.
    pub fn new(url: &str) -> RecallScreen {
        RecallScreen {
            host: Source::Page(url.to_owned()).host().map(|h| h.into_owned()),
            approved: HashSet::new(),
        }
    }

    /// Showing the texts whose [`text_digest`] is one of `digests` (those a reviewer
    /// approved: the scope's vouches, memory [`HeldRun::MEMORY`]).
    pub fn with_approved(mut self, digests: impl IntoIterator<Item = String>) -> RecallScreen {
        self.approved.extend(digests);
        self
    }

    fn flags(&self, texts: &[&str]) -> bool {
        texts.iter().any(|text| {
            !screen(text, self.host.as_deref()).is_empty()
                && (self.approved.is_empty() || !self.approved.contains(&text_digest(text)))
        })
    }

    /// The screen flags a text of the fact (its key or value).
    pub fn flags_fact(&self, fact: &Fact) -> bool {
        self.flags(&[&fact.key, &fact.value])
    }

    /// The screen flags a text of the trajectory (its goal, a step's page, action or
    /// expected effect).
    pub fn flags_trajectory(&self, t: &Trajectory) -> bool {
        self.flags(&[&t.goal])
            || t.steps.iter().any(|step| {
                self.flags(&[
                    &step.url,
                    &step.action,
                    step.expected_effect.as_deref().unwrap_or_default(),
                ])
            })
    }

    /// Leaves out of `site` each session, fact and selector entry the screen flags; returns
    /// how many it left out.
    pub fn withhold(&self, site: &mut SiteMemory) -> usize {
        let before = site.sessions.len() + site.facts.len() + site.selectors.len();
        site.sessions
            .retain(|s| !self.flags(&[&s.goal, &s.outcome, &s.final_url]));
        site.facts.retain(|f| !self.flags_fact(f));
        site.selectors.retain(|e| {
            !self.flags(&[
                &e.element,
                e.last_ref.as_deref().unwrap_or_default(),
                e.stable_selector.as_deref().unwrap_or_default(),
            ])
        });
        before - (site.sessions.len() + site.facts.len() + site.selectors.len())
    }
}

/// What [`BrowserMemory::record_or_hold`] did with a run.
#[derive(Clone, Debug, PartialEq)]
pub enum Recorded {
    /// Recorded: its trajectory.
    Stored(Trajectory),
    /// Held for review, with why, and the trajectory approval would record.
    Held {
        /// The held run, as the store keeps it.
        held: Box<HeldRun>,
        /// Its trajectory.
        trajectory: Trajectory,
    },
}

/// What the write screen finds in the texts a finished run would store (its goal, steps,
/// session, facts and selectors), each as `FIELD: KIND: REASON`; links are judged against
/// the host of `start_url`, the page the run was on. Empty when nothing is found.
pub fn screen_run(run: &FinishedRun, start_url: &str) -> Vec<String> {
    let mut reasons = Vec::new();
    screen_run_texts(run, start_url, |field, _, findings| {
        for finding in findings {
            reasons.push(format!("{}: {finding}", field()));
        }
    });
    reasons
}

/// The texts of a finished run the write screen flags (see [`screen_run`]), each once: what
/// a reviewer's approval of the held run vouches for.
pub fn flagged_run_texts<'r>(run: &'r FinishedRun, start_url: &str) -> Vec<&'r str> {
    let mut texts: Vec<&str> = Vec::new();
    screen_run_texts(run, start_url, |_, text, findings| {
        if !findings.is_empty() && !texts.contains(&text) {
            texts.push(text);
        }
    });
    texts
}

/// Screens each text a finished run would store, in order, and hands `found` its field's
/// name (made on demand), the text and the findings (empty when clean).
fn screen_run_texts<'r>(
    run: &'r FinishedRun,
    start_url: &str,
    mut found: impl FnMut(&dyn Fn() -> String, &'r str, Vec<Finding>),
) {
    let page = Source::Page(start_url.to_owned());
    let host = page.host();
    let mut check = |field: &dyn Fn() -> String, text: &'r str| {
        found(field, text, screen(text, host.as_deref()));
    };
    let t = &run.trajectory;
    check(&|| "goal".to_owned(), &t.goal);
    for (i, step) in t.steps.iter().enumerate() {
        check(&|| format!("steps[{i}].url"), &step.url);
        check(&|| format!("steps[{i}].action"), &step.action);
        if let Some(effect) = &step.expected_effect {
            check(&|| format!("steps[{i}].expected_effect"), effect);
        }
    }
    if let Some(session) = &run.site.session {
        check(&|| "outcome".to_owned(), &session.outcome);
        check(&|| "final_url".to_owned(), &session.final_url);
    }
    for (i, fact) in run.site.facts.iter().enumerate() {
        check(&|| format!("facts[{i}].key"), &fact.key);
        check(&|| format!("facts[{i}].value"), &fact.value);
    }
    for (i, (element, selector)) in run.site.selectors.iter().enumerate() {
        check(&|| format!("selectors[{i}].element"), element);
        check(&|| format!("selectors[{i}].selector"), selector);
    }
}

/// Which assembly of the memory parts [`BrowserMemory::context`] builds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// Each memory part on its own, by priority: session history 50, reference trajectory
    /// 40, app knowledge 30, selectors 25.
    #[default]
    Layered,
    /// The reference code's actual assembly, byte for byte: reference trajectory 40 (with
    /// the stored hints appended, as the reference's test runner passes them), session
    /// history and app knowledge in one part at 30, selectors 25. A budget in characters is
    /// counted and cut in UTF-16 code units, as the reference counts JavaScript strings.
    Compatibility,
}

/// The browser memory of one scope: a store, a clock and an id source, each taken by value
/// (a reference or an `Arc` of one works as well, so one store can serve several memories).
///
/// ```
/// use std::sync::Arc;
/// use agent_memory_browser::BrowserMemory;
/// use agent_memory_core::{InMemoryStore, RandomIds, Scope, SystemClock};
///
/// let store = Arc::new(InMemoryStore::new());
/// let borrowed = BrowserMemory::new(&*store, Scope::shared(), SystemClock, RandomIds::new());
/// let shared = BrowserMemory::new(Arc::clone(&store), Scope::shared(), SystemClock, RandomIds::new());
/// assert!(borrowed.find_match("anything", None)?.is_none());
/// assert!(shared.find_match("anything", None)?.is_none());
/// # Ok::<(), agent_memory_browser::Error>(())
/// ```
pub struct BrowserMemory<S, C, I> {
    store: S,
    scope: Scope,
    clock: C,
    ids: I,
    /// How goals are matched.
    pub options: MatchOptions,
    /// What a context does with text the write screen flags.
    pub guard: RecallGuard,
    /// The digests of the texts a reviewer approved in this scope (its vouches, memory
    /// [`HeldRun::MEMORY`]): under `quarantine` a context shows them (see [`RecallScreen`]).
    pub approved: HashSet<String>,
    /// Who stores the runs this memory records (see [`BrowserMemory::with_writer`]).
    pub writer: Writer,
}

impl<S: BrowserStore, C: Clock, I: IdSource> BrowserMemory<S, C, I> {
    /// The memory of `scope` in `store`, with time from `clock` and ids from `ids`.
    pub fn new(store: S, scope: Scope, clock: C, ids: I) -> Self {
        BrowserMemory {
            store,
            scope,
            clock,
            ids,
            options: MatchOptions::default(),
            guard: RecallGuard::default(),
            approved: HashSet::new(),
            writer: Writer::default(),
        }
    }

    /// With the writer each recorded run's trajectory keeps as its provenance: a field left
    /// out is the run's own (source `model:` plus the run's model, session the run's session
    /// id or else its trajectory id) and the client is none. The audit trail names it for
    /// the memory's other writes too (facts, selectors, hints, run manifests), with source
    /// `unknown` when it names none.
    pub fn with_writer(mut self, writer: Writer) -> Self {
        self.writer = writer;
        self
    }

    /// With `options` for matching goals.
    pub fn with_options(mut self, options: MatchOptions) -> Self {
        self.options = options;
        self
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The scope.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The run registry of this scope, writing as this memory's writer.
    pub fn runs(&self) -> RunRegistry<&S, &C, &I> {
        RunRegistry::new(&self.store, self.scope.clone(), &self.clock, &self.ids)
            .with_writer(self.writer.clone())
    }

    /// The store's memory of the site of `url`.
    pub fn site(&self, url: &str) -> Result<Option<SiteMemory>> {
        Ok(self.store.site_get(&self.scope, &site_key(url))?)
    }

    /// Records a finished run in one atomic call: its trajectory, its session, the facts a
    /// successful run teaches, the selectors that worked, and its manifest.
    ///
    /// Each turn's `action` must be the JSON text of an object (`{"action":"click",...}`),
    /// as the memory directory stores it; otherwise nothing is stored and the error names
    /// the turn (`turns[2].action`).
    pub fn record_run(&self, report: &RunReport) -> Result<Trajectory> {
        let run = self.finished_run(report)?;
        self.store.record_run(&self.scope, &run)?;
        Ok(run.trajectory)
    }

    /// Saves the trajectory of a finished run and nothing else, as browser-agent-driver's
    /// `TrajectoryStore.save` does: no session, fact, selector or manifest (the reference
    /// records those through its other classes). The turns are checked as
    /// [`record_run`](Self::record_run) checks them, and the write is audited as a
    /// trajectory's. Under [`ScreenPolicy::Quarantine`] a trajectory the write screen flags
    /// is held for review instead, as [`record_or_hold`](Self::record_or_hold) holds a run:
    /// approved, it is stored alone as it was saved.
    pub fn save_trajectory(&self, report: &RunReport) -> Result<Recorded> {
        let (trajectory, _) = self.trajectory_of::<ActionHead>(report)?;
        let tokens = tokenize(&trajectory.goal);
        if self.guard.policy == ScreenPolicy::Quarantine {
            let run = FinishedRun {
                site: SiteObservation {
                    site: site_key(&report.start_url),
                    // Empty: approved, the trajectory is stored alone (no site row).
                    label: String::new(),
                    session: None,
                    facts: Vec::new(),
                    selectors: Vec::new(),
                    observed_at: trajectory.timestamp.clone(),
                },
                tokens,
                manifest: None,
                completes_stored: false,
                trajectory,
            };
            return self.hold_or_record(run, &report.start_url, |run| {
                self.store
                    .trajectory_put(&self.scope, &run.trajectory, &run.tokens)
            });
        }
        self.store
            .trajectory_put(&self.scope, &trajectory, &tokens)?;
        Ok(Recorded::Stored(trajectory))
    }

    /// Records a finished run as [`record_run`](Self::record_run) does, unless the memory's
    /// [`RecallGuard`] policy is [`ScreenPolicy::Quarantine`] and the write screen flags a
    /// text of the run (see [`screen_run`]): then the run is held for review instead, in no
    /// context, match or view until [`approve_held`](Self::approve_held) records it as it
    /// was (ids, times and writer of now) or [`reject_held`](Self::reject_held) erases it.
    pub fn record_or_hold(&self, report: &RunReport) -> Result<Recorded> {
        let run = self.finished_run(report)?;
        if self.guard.policy == ScreenPolicy::Quarantine {
            return self.hold_or_record(run, &report.start_url, |run| {
                self.store.record_run(&self.scope, run)
            });
        }
        self.store.record_run(&self.scope, &run)?;
        Ok(Recorded::Stored(run.trajectory))
    }

    /// Holds `run` for review when the write screen flags a text of it (see
    /// [`screen_run`]), else stores it with `store`.
    fn hold_or_record(
        &self,
        run: FinishedRun,
        start_url: &str,
        store: impl FnOnce(&FinishedRun) -> agent_memory_core::Result<()>,
    ) -> Result<Recorded> {
        let reasons = screen_run(&run, start_url);
        if reasons.is_empty() {
            store(&run)?;
            return Ok(Recorded::Stored(run.trajectory));
        }
        let writer = (run.trajectory.provenance.clone()).unwrap_or_else(|| {
            Provenance::new(
                Source::Model(run.trajectory.model.clone()),
                self.clock.now(),
            )
        });
        let held = HeldRun::new(
            run.trajectory.id.clone(),
            run.site.site.clone(),
            run.trajectory.goal.clone(),
            reasons,
            crate::held::encode(&run)?,
            writer,
        );
        self.store.run_hold(&self.scope, &held)?;
        Ok(Recorded::Held {
            held: Box::new(held),
            trajectory: run.trajectory,
        })
    }

    /// Up to `limit` runs of this scope held for review, oldest first.
    pub fn held_runs(&self, limit: usize) -> Result<Vec<HeldRun>> {
        Ok(self
            .store
            .runs_held(Some(&self.scope), limit)?
            .into_iter()
            .map(|(_, held)| held)
            .collect())
    }

    /// Records the held run `id` as it was when held, and takes it off the queue, in one
    /// atomic step audited as an approval by `reviewer`, with a vouch for each text of it the
    /// write screen flags ([`flagged_run_texts`], judged against its origin): a read that
    /// screens the scope under `quarantine` shows what the reviewer approved (see
    /// [`RecallScreen::with_approved`]). `None` when no run `id` is held in this scope
    /// (another reviewer decided first).
    pub fn approve_held(&self, id: &str, reviewer: &Provenance) -> Result<Option<Trajectory>> {
        let Some(held) = self.held_run(id)? else {
            return Ok(None);
        };
        let run = crate::held::decode(id, &held.run)?;
        let item = HeldRun::item(id);
        let origin = run.trajectory.origin.as_deref().unwrap_or_default();
        let digests: Vec<String> = flagged_run_texts(&run, origin)
            .into_iter()
            .map(text_digest)
            .collect();
        let vouches: Vec<Vouch<'_>> = digests
            .iter()
            .map(|digest| Vouch {
                memory: HeldRun::MEMORY,
                container: self.scope.as_str(),
                item: &item,
                digest,
            })
            .collect();
        let approval = Approval {
            run: &run,
            vouches: &vouches,
        };
        Ok(self
            .store
            .run_decide(&self.scope, id, Some(approval), reviewer)?
            .then_some(run.trajectory))
    }

    /// Erases the held run `id`, audited as a rejection by `reviewer`; `false` when no run
    /// `id` is held in this scope.
    pub fn reject_held(&self, id: &str, reviewer: &Provenance) -> Result<bool> {
        Ok(self.store.run_decide(&self.scope, id, None, reviewer)?)
    }

    /// The held run `id` of this scope.
    pub fn held_run(&self, id: &str) -> Result<Option<HeldRun>> {
        Ok(self.store.run_held(&self.scope, id)?)
    }

    /// The trajectory `report` leaves behind, computed now (id, time, writer), with each
    /// turn's action read as `A` reads it ([`Json`], the parsed object; [`ActionHead`], only
    /// whether it ends the run); an action that is not the JSON text of an object is an
    /// error naming its turn.
    fn trajectory_of<A: ActionRead>(&self, report: &RunReport) -> Result<(Trajectory, Vec<A>)> {
        // Each action is read once, for the check, the steps and (parsed) the facts.
        let mut actions = Vec::with_capacity(report.turns.len());
        for (i, turn) in report.turns.iter().enumerate() {
            match A::read(&turn.action) {
                Ok(action) => actions.push(action),
                Err(reason) => {
                    return Err(agent_memory_core::Error::invalid_input(
                        format!("turns[{i}].action"),
                        reason,
                    )
                    .into());
                }
            }
        }
        let now = self.clock.now();
        let steps: Vec<TrajectoryStep> = report
            .turns
            .iter()
            .zip(&actions)
            .filter(|(_, action)| !action.ends_run())
            .map(|(t, _)| TrajectoryStep {
                url: t.url.clone(),
                action: t.action.clone(),
                snapshot_hash: snapshot_hash(&t.snapshot).to_string(),
                verified: t.verified,
                expected_effect: t.expected_effect.clone(),
            })
            .collect();
        let id = format!("traj_{}_{}", now.as_millis(), self.ids.base36(6));
        let provenance = self.writer.provenance(
            Source::Model(report.model.clone()),
            Some(report.session_id.as_deref().unwrap_or(&id)),
            now,
        );
        let trajectory = Trajectory {
            id,
            goal: report.goal.clone(),
            origin: origin_of(&report.start_url),
            steps,
            success: report.success,
            duration_ms: report.turns.iter().map(|t| t.duration_ms).sum(),
            model: report.model.clone(),
            timestamp: iso(now),
            recorded_at: Some(now),
            provenance: Some(provenance),
        };
        Ok((trajectory, actions))
    }

    /// Everything `report` would leave behind, computed now (ids, times, writer).
    fn finished_run(&self, report: &RunReport) -> Result<FinishedRun> {
        let (trajectory, actions) = self.trajectory_of::<Json>(report)?;
        let stamp = trajectory.timestamp.clone();
        let site = site_key(&report.start_url);
        // The reference learns facts only when the start url has a hostname
        // (`safeHostname(startUrl)`), and matches search urls against it.
        let host = url::Url::parse(&report.start_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_lowercase))
            .unwrap_or_default();
        let facts = if host.is_empty() {
            Vec::new()
        } else {
            extract_facts_of(&report.turns, &actions, &host, report.success)
        };
        let session = SessionEntry {
            id: report
                .session_id
                .clone()
                .unwrap_or_else(|| trajectory.id.clone()),
            goal: report.goal.clone(),
            outcome: report.outcome.clone(),
            success: report.success,
            final_url: report.final_url.clone().unwrap_or_default(),
            timestamp: stamp.clone(),
            turns_used: u32::try_from(report.turns.len()).unwrap_or(u32::MAX),
            duration_ms: trajectory.duration_ms,
        };
        let run = FinishedRun {
            tokens: tokenize(&trajectory.goal),
            site: SiteObservation {
                site,
                label: report.start_url.clone(),
                session: Some(session),
                facts,
                selectors: report.selectors.clone(),
                observed_at: stamp,
            },
            manifest: report.manifest.clone(),
            completes_stored: report.completes_registered,
            trajectory,
        };
        Ok(run)
    }

    /// The best trajectory for `goal` on the site of `url` (see
    /// [`find_best_match`](crate::find_best_match)).
    pub fn find_match(&self, goal: &str, url: Option<&str>) -> Result<Option<Match>> {
        find_best_match(
            &self.store,
            &self.scope,
            goal,
            url,
            &self.options,
            self.clock.now(),
        )
    }

    /// A trajectory close enough to replay without a model (see
    /// [`find_replayable`](crate::find_replayable)).
    pub fn find_replayable(&self, goal: &str, url: &str) -> Result<Option<Match>> {
        find_replayable(
            &self.store,
            &self.scope,
            goal,
            url,
            &self.options,
            self.clock.now(),
        )
    }

    /// The memory parts for a run on `url` with `goal`, assembled in `layout` within
    /// `budget` under `policy`.
    pub fn context(
        &self,
        goal: &str,
        url: &str,
        layout: Layout,
        budget: Budget<'_>,
        policy: Policy,
    ) -> Result<String> {
        Ok(self
            .context_report(goal, url, layout, budget, policy)?
            .built
            .text)
    }

    /// [`context`](Self::context), with the trajectory that matched and what became of each
    /// part.
    pub fn context_report(
        &self,
        goal: &str,
        url: &str,
        layout: Layout,
        budget: Budget<'_>,
        policy: Policy,
    ) -> Result<ContextReport> {
        let matched = self.find_match(goal, Some(url))?;
        let site = self.site(url)?.unwrap_or_default();
        let (hints, budget) = match layout {
            Layout::Layered => (None, budget),
            Layout::Compatibility => {
                let hints = self.store.hints_get(&self.scope)?.map(|(hints, _)| hints);
                let budget = match budget {
                    Budget::Chars(n) => Budget::Utf16Units(n),
                    other => other,
                };
                (hints, budget)
            }
        };
        let (matched, site, withheld) = self.guarded(url, matched, site);
        let trajectory = matched.as_ref().map(|m| &m.trajectory);
        let mut parts = assemble(trajectory, &site, hints.as_deref(), layout);
        if self.guard.as_data {
            let source = Source::Page(url.to_owned());
            let host = source.host();
            parts.map_contents(|content| {
                let text = content.trim_matches('\n');
                let trust = if screen(text, host.as_deref()).is_empty() {
                    "external"
                } else {
                    "flagged"
                };
                format!("\n{}\n", as_data_block(text, &source, trust))
            });
        }
        let built = parts.build_report(budget, policy);
        Ok(ContextReport {
            matched,
            built,
            withheld,
        })
    }

    /// The recalled items the [`RecallGuard`] lets through, and how many it left out.
    fn guarded(
        &self,
        url: &str,
        mut matched: Option<Match>,
        mut site: SiteMemory,
    ) -> (Option<Match>, SiteMemory, usize) {
        if self.guard.policy != ScreenPolicy::Quarantine {
            return (matched, site, 0);
        }
        let screen = RecallScreen::new(url).with_approved(self.approved.iter().cloned());
        let mut withheld = screen.withhold(&mut site);
        if matched
            .as_ref()
            .is_some_and(|m| screen.flags_trajectory(&m.trajectory))
        {
            matched = None;
            withheld += 1;
        }
        (matched, site, withheld)
    }

    /// The facts about the site of `url` with confidence at least `min_confidence`
    /// ([`DEFAULT_READ_CONFIDENCE`] by default), in first-seen order.
    pub fn facts(&self, url: &str, min_confidence: Option<f64>) -> Result<Vec<Fact>> {
        let min = min_confidence.unwrap_or(DEFAULT_READ_CONFIDENCE);
        Ok(self
            .site(url)?
            .map(|m| {
                m.facts
                    .into_iter()
                    .filter(|f| f.confidence >= min)
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Records one observed fact about the site of `url`.
    pub fn record_fact(&self, url: &str, kind: FactKind, key: &str, value: &str) -> Result<()> {
        let observation = SiteObservation {
            site: site_key(url),
            label: url.to_owned(),
            facts: vec![FactObservation {
                kind,
                key: key.to_owned(),
                value: value.to_owned(),
            }],
            observed_at: iso(self.clock.now()),
            ..SiteObservation::default()
        };
        self.observe(&observation)
    }

    /// Records that `selector` worked for `element` on the site of `url`.
    pub fn record_selector(&self, url: &str, element: &str, selector: &str) -> Result<()> {
        let observation = SiteObservation {
            site: site_key(url),
            label: url.to_owned(),
            selectors: vec![(element.to_owned(), selector.to_owned())],
            observed_at: iso(self.clock.now()),
            ..SiteObservation::default()
        };
        self.observe(&observation)
    }

    /// Applies `observation` to its site's memory, by this memory's writer.
    fn observe(&self, observation: &SiteObservation) -> Result<()> {
        let by = self
            .writer
            .provenance(Source::Unknown, None, self.clock.now());
        Ok(self
            .store
            .site_observe(&self.scope, observation, Some(&by))?)
    }

    /// Stores hints generated from evaluated runs (see [`generate_hints`](crate::generate_hints)).
    pub fn save_hints(&self, hints: &str) -> Result<()> {
        let now = self.clock.now();
        let by = self.writer.provenance(Source::Unknown, None, now);
        Ok(self
            .store
            .hints_put(&self.scope, hints, &iso(now), Some(&by))?)
    }

    /// Analyses every trajectory stored in the scope (see
    /// [`EvaluatedRun::from_trajectory`](crate::EvaluatedRun::from_trajectory)), stores the
    /// hints and returns them; the text is empty when nothing stands out. Expired trajectories
    /// are analysed too until [`prune`](Self::prune) removes them.
    pub fn analyse_trajectories(&self) -> Result<String> {
        let runs: Vec<EvaluatedRun> = self
            .store
            .trajectory_list(&self.scope)?
            .into_iter()
            .map(EvaluatedRun::from_trajectory)
            .collect();
        let hints = generate_hints(&runs);
        self.save_hints(&hints)?;
        Ok(hints)
    }

    /// Removes trajectories older than the TTL; returns how many.
    pub fn prune(&self) -> Result<usize> {
        let ttl = (self.options.ttl_days * MILLIS_PER_DAY as f64) as i64;
        let cutoff = self.clock.now().add_millis(-ttl);
        Ok(self.store.trajectory_prune(&self.scope, cutoff)?)
    }
}

/// The context parts for a reference trajectory, a site's memory and stored hints, in
/// `layout`.
///
/// The compatibility layout appends non-empty `hints` to the reference trajectory as the
/// reference's test runner does (`reference + "\n\n" + hints`, or the hints alone under the
/// REFERENCE TRAJECTORY header when no trajectory matched); the layered layout leaves hints
/// out.
pub fn assemble(
    reference: Option<&Trajectory>,
    site: &SiteMemory,
    hints: Option<&str>,
    layout: Layout,
) -> ContextBudget {
    let wrap = |block: String| {
        if block.is_empty() {
            block
        } else {
            format!("\n{block}\n")
        }
    };
    let mut context = ContextBudget::new();
    if layout == Layout::Layered {
        context.add(
            "session-history",
            wrap(session_history(&site.sessions)),
            priority::SESSION_HISTORY,
        );
    }
    let hints = hints.filter(|h| layout == Layout::Compatibility && !h.is_empty());
    let reference_text = match (reference.map(reference_trajectory), hints) {
        (Some(trajectory), Some(hints)) => Some(format!("{trajectory}\n\n{hints}")),
        (Some(trajectory), None) => Some(trajectory),
        (None, Some(hints)) => Some(hints.to_owned()),
        (None, None) => None,
    };
    if let Some(text) = reference_text {
        context.add(
            "reference-trajectory",
            reference_block(&text),
            priority::REFERENCE_TRAJECTORY,
        );
    }
    let knowledge = match layout {
        Layout::Layered => app_knowledge(&site.facts),
        Layout::Compatibility => knowledge_block(&site.sessions, &site.facts),
    };
    context.add("knowledge", wrap(knowledge), priority::APP_KNOWLEDGE);
    context.add(
        "selector-cache",
        wrap(known_selectors(&site.selectors)),
        priority::SELECTORS,
    );
    context
}

/// How [`BrowserMemory`] reads a turn's action text: whether it is the JSON text of an
/// object (else why not), and whether it ends the run (`complete`, `abort`: no step).
trait ActionRead: Sized {
    /// The action of `text`, or the reason it is no action.
    fn read(text: &str) -> std::result::Result<Self, String>;
    /// Whether it ends the run.
    fn ends_run(&self) -> bool;
}

impl ActionRead for Json {
    /// The parsed object, which a run's facts are learned from.
    fn read(text: &str) -> std::result::Result<Self, String> {
        match serde_json::from_str::<Json>(text) {
            Ok(action @ Json::Object(_)) => Ok(action),
            Ok(_) => {
                Err("must be the JSON text of an object, and is another JSON value".to_owned())
            }
            Err(e) => Err(format!(
                "must be the JSON text of an object, and is not JSON ({e})"
            )),
        }
    }

    fn ends_run(&self) -> bool {
        matches!(action_name(self), "complete" | "abort")
    }
}

/// What a saved trajectory needs of an action: that it is an object, and whether its
/// `action` ends the run. An object whose `action` is a string or absent is read without
/// building it (no key or value is kept); any other text is read as [`Json`] is, for the
/// same answer and the same error.
#[derive(Deserialize)]
struct ActionHead {
    #[serde(default)]
    action: Option<EndsRun>,
}

impl ActionRead for ActionHead {
    fn read(text: &str) -> std::result::Result<Self, String> {
        // A struct also reads from a JSON array; only an object takes the short way.
        if text.trim_start().starts_with('{')
            && let Ok(head) = serde_json::from_str::<ActionHead>(text)
        {
            return Ok(head);
        }
        // Another value, no JSON, a duplicate or non-string `action`: as an object is read.
        let action = Json::read(text)?;
        Ok(ActionHead {
            action: Some(EndsRun(action.ends_run())),
        })
    }

    fn ends_run(&self) -> bool {
        self.action.as_ref().is_some_and(|ends| ends.0)
    }
}

/// Whether an action name ends the run, read from the name without keeping it.
struct EndsRun(bool);

impl<'de> Deserialize<'de> for EndsRun {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = EndsRun;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an action name")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> std::result::Result<EndsRun, E> {
                Ok(EndsRun(matches!(name, "complete" | "abort")))
            }
        }
        d.deserialize_str(Name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_action_head_reads_as_the_parsed_action_does() {
        let texts = [
            r#"{"action":"complete"}"#,
            r#"{"action":"abort","reason":"stuck"}"#,
            r#"{"action":"click","selector":"@e1","at":{"x":1.5}}"#,
            r#"{"selector":"@e1"}"#,
            "{}",
            r#"{"action":null}"#,
            r#"{"action":3}"#,
            r#"{"action":{"action":"complete"}}"#,
            r#"{"action":"click","action":"complete"}"#,
            r#"{"action":"complete","action":"click"}"#,
            r#"{"action":"compl\u0065te"}"#,
            r#"  {"action": "abort"}  "#,
            r#"["complete"]"#,
            r#""complete""#,
            "3",
            "null",
            "{",
            r#"{"action":"complete"} trailing"#,
            "",
        ];
        for text in texts {
            let head = ActionHead::read(text).map(|head| head.ends_run());
            let parsed = Json::read(text).map(|action| action.ends_run());
            assert_eq!(head, parsed, "{text}");
        }
        assert_eq!(
            ActionHead::read(r#"{"action":"abort"}"#).map(|h| h.ends_run()),
            Ok(true)
        );
        assert!(ActionHead::read("[]").is_err());
    }
}
