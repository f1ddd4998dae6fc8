//! [`BrowserMemory`]: the four memory layers of one scope over a store, with the clock and id
//! source injected: record finished runs, match goals, build the prompt context, prune.

use agent_memory_core::store::browser::{
    BrowserStore, Fact, FactKind, FactObservation, FinishedRun, RunManifest, SessionEntry,
    SiteMemory, SiteObservation, Trajectory, TrajectoryStep,
};
use agent_memory_core::{Clock, IdSource, MILLIS_PER_DAY, Scope};

use crate::budget::{Budget, ContextBudget, Policy, priority};
use crate::error::Result;
use crate::extract::{Turn, action_name, extract_facts, snapshot_hash};
use crate::hints::{EvaluatedRun, generate_hints};
use crate::matching::{Match, MatchOptions, find_best_match, find_replayable};
use crate::origin::{origin_of, site_key};
use crate::render::{
    app_knowledge, knowledge_block, known_selectors, reference_block, session_history,
};
use crate::runs::RunRegistry;
use crate::time::iso;
use crate::tokens::tokenize;

/// Facts below this confidence are not returned by default.
pub const DEFAULT_READ_CONFIDENCE: f64 = 0.3;

/// A finished run as the agent reports it.
#[derive(Clone, Debug, Default, PartialEq)]
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
}

/// Which assembly of the memory parts [`BrowserMemory::context`] builds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// Each memory part on its own, by priority: session history 50, reference trajectory
    /// 40, app knowledge 30, selectors 25.
    #[default]
    Layered,
    /// The reference code's actual assembly, byte for byte: reference trajectory 40,
    /// session history and app knowledge in one part at 30, selectors 25.
    Compatibility,
}

/// The browser memory of one scope.
pub struct BrowserMemory<'a, S: ?Sized> {
    store: &'a S,
    scope: Scope,
    clock: &'a dyn Clock,
    ids: &'a dyn IdSource,
    /// How goals are matched.
    pub options: MatchOptions,
}

impl<'a, S: BrowserStore + ?Sized> BrowserMemory<'a, S> {
    /// The memory of `scope` in `store`.
    pub fn new(store: &'a S, scope: Scope, clock: &'a dyn Clock, ids: &'a dyn IdSource) -> Self {
        BrowserMemory {
            store,
            scope,
            clock,
            ids,
            options: MatchOptions::default(),
        }
    }

    /// The run registry of this scope.
    pub fn runs(&self) -> RunRegistry<'a, S> {
        RunRegistry::new(self.store, self.scope.clone(), self.clock, self.ids)
    }

    /// The store's memory of the site of `url`.
    pub fn site(&self, url: &str) -> Result<Option<SiteMemory>> {
        Ok(self.store.site_get(&self.scope, &site_key(url))?)
    }

    /// Records a finished run in one atomic call: its trajectory, its session, the facts a
    /// successful run teaches, the selectors that worked, and its manifest.
    pub fn record_run(&self, report: &RunReport) -> Result<Trajectory> {
        let now = self.clock.now();
        let stamp = iso(now);
        let steps: Vec<TrajectoryStep> = report
            .turns
            .iter()
            .filter(|t| !matches!(action_name(&t.parsed_action()), "complete" | "abort"))
            .map(|t| TrajectoryStep {
                url: t.url.clone(),
                action: t.action.clone(),
                snapshot_hash: snapshot_hash(&t.snapshot).to_string(),
                verified: t.verified,
                expected_effect: t.expected_effect.clone(),
            })
            .collect();
        let trajectory = Trajectory {
            id: format!("traj_{}_{}", now.as_millis(), self.ids.base36(6)),
            goal: report.goal.clone(),
            origin: origin_of(&report.start_url),
            steps,
            success: report.success,
            duration_ms: report.turns.iter().map(|t| t.duration_ms).sum(),
            model: report.model.clone(),
            timestamp: stamp.clone(),
            recorded_at: Some(now),
        };
        let site = site_key(&report.start_url);
        let host = site.split('_').next().unwrap_or_default().to_owned();
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
                facts: extract_facts(&report.turns, &host, report.success),
                selectors: report.selectors.clone(),
                observed_at: stamp,
            },
            manifest: report.manifest.clone(),
            trajectory,
        };
        self.store.record_run(&self.scope, &run)?;
        Ok(run.trajectory)
    }

    /// The best trajectory for `goal` on the site of `url` (see
    /// [`find_best_match`](crate::find_best_match)).
    pub fn find_match(&self, goal: &str, url: Option<&str>) -> Result<Option<Match>> {
        find_best_match(
            self.store,
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
            self.store,
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
        let reference = self.find_match(goal, Some(url))?;
        let site = self.site(url)?.unwrap_or_default();
        Ok(
            assemble(reference.as_ref().map(|m| &m.trajectory), &site, layout)
                .build(budget, policy),
        )
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
        Ok(self.store.site_observe(&self.scope, &observation)?)
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
        Ok(self.store.site_observe(&self.scope, &observation)?)
    }

    /// Stores hints generated from evaluated runs (see [`generate_hints`](crate::generate_hints)).
    pub fn save_hints(&self, hints: &str) -> Result<()> {
        Ok(self
            .store
            .hints_put(&self.scope, hints, &iso(self.clock.now()))?)
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

/// The context parts for a reference trajectory and a site's memory, in `layout`.
pub fn assemble(
    reference: Option<&Trajectory>,
    site: &SiteMemory,
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
    if let Some(trajectory) = reference {
        context.add(
            "reference-trajectory",
            reference_block(trajectory),
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
