//! The `BrowserStore` contract, against the in-memory store and against broken stores that
//! the suite must catch.

use agent_memory_core::evidence::{Action, AuditEntry, Writer};
use agent_memory_core::store::browser::{
    Approval, BrowserStore, Candidate, CandidateQuery, FinishedRun, ForgotBy, Forgotten, HeldRun,
    HintStore, IMAGE_ITEM, ImageStored, MemoryImage, RunFilter, RunManifest, RunManifestStore,
    SiteMemory, SiteMemoryStore, SiteObservation, SuiteSummary, Trajectory, TrajectoryStore,
    run_start_outcome,
};
use agent_memory_core::testkit::{browser, run};
use agent_memory_core::{AuditStore, InMemoryStore, Page, Provenance, Result, Scope, Timestamp};

#[test]
fn in_memory_store_obeys_the_contract() {
    if let Err(report) = run(browser::SUITE, &browser::cases(), InMemoryStore::new) {
        panic!("{report}");
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Defect {
    IgnoresOrigin,
    ForgetsSessions,
    ListsOldestFirst,
    LeaksScopes,
    /// Forgetting one site forgets the whole scope.
    ForgetsTheWholeScope,
    /// Stores an image one put at a time and reports every record written.
    RewritesImages,
    /// Stores an image without its hints.
    DropsImageHints,
    /// Starts a run by putting its manifest, replacing a stored one.
    StartsByPutting,
    /// Starts a run by reading, then putting, in two steps: a stored run is refused, but
    /// concurrent starts all store theirs.
    StartsInTwoSteps,
    /// Stores a trajectory without who wrote it.
    DropsWriters,
    /// Forgets by writer in every scope when one is named.
    ForgetsByWriterEverywhere,
    /// Approves a held run by recording it, leaving it held: a second approval records it
    /// again.
    ApprovesWithoutTakingIt,
    /// Reads a held run by its id in whichever scope holds it.
    ReadsHeldRunsInAnyScope,
    /// Records a run, or stores a trajectory, without its entry in the audit trail.
    RecordsRunsUnaudited,
    /// Writes site memory, run manifests, hints and suite summaries without naming their
    /// writer to the audit trail.
    DropsDropInWriters,
    /// Stores an image without its entry in the audit trail.
    ImportsUnaudited,
    /// Applies an observation and then stores the site whole, so its log holds no writer.
    ObservesUnlogged,
    /// Forgets a site's knowledge by storing the site whole, so its log starts again.
    ForgetsKnowledgeUnlogged,
    /// Stores an image's sites without the logs it carries for them.
    DropsImageLogs,
}

/// The in-memory store with one seeded defect.
struct Broken {
    defect: Defect,
    inner: InMemoryStore,
}

impl Broken {
    /// The writer a drop-in's write names to the inner store.
    fn writer<'a>(&self, by: Option<&'a Provenance>) -> Option<&'a Provenance> {
        by.filter(|_| self.defect != Defect::DropsDropInWriters)
    }

    fn scope(&self, scope: &Scope) -> Scope {
        if self.defect == Defect::LeaksScopes {
            Scope::shared()
        } else {
            scope.clone()
        }
    }
}

impl TrajectoryStore for Broken {
    fn trajectory_put(&self, scope: &Scope, t: &Trajectory, tokens: &[String]) -> Result<()> {
        if self.defect == Defect::DropsWriters {
            let t = Trajectory {
                provenance: None,
                ..t.clone()
            };
            return self.inner.trajectory_put(&self.scope(scope), &t, tokens);
        }
        self.inner.trajectory_put(&self.scope(scope), t, tokens)
    }
    fn trajectory_get(&self, scope: &Scope, id: &str) -> Result<Option<Trajectory>> {
        self.inner.trajectory_get(&self.scope(scope), id)
    }
    fn trajectory_candidates(
        &self,
        scope: &Scope,
        query: &CandidateQuery,
    ) -> Result<Vec<Candidate>> {
        let mut query = query.clone();
        if self.defect == Defect::IgnoresOrigin {
            query.origin = None;
        }
        self.inner.trajectory_candidates(&self.scope(scope), &query)
    }
    fn trajectory_forget_by(
        &self,
        scope: Option<&Scope>,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<ForgotBy> {
        let scope = scope
            .filter(|_| self.defect != Defect::ForgetsByWriterEverywhere)
            .map(|s| self.scope(s));
        self.inner.trajectory_forget_by(scope.as_ref(), writer, by)
    }
    fn trajectory_list(&self, scope: &Scope) -> Result<Vec<Trajectory>> {
        self.inner.trajectory_list(&self.scope(scope))
    }
    fn trajectory_prune(&self, scope: &Scope, cutoff: Timestamp) -> Result<usize> {
        self.inner.trajectory_prune(&self.scope(scope), cutoff)
    }
    fn trajectory_forget(&self, scope: &Scope, id: &str, by: &Provenance) -> Result<bool> {
        self.inner.trajectory_forget(&self.scope(scope), id, by)
    }
}

impl AuditStore for Broken {
    fn audit_select(
        &self,
        filter: &agent_memory_core::evidence::AuditFilter,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Page<AuditEntry>> {
        let mut page = self.inner.audit_select(filter, after, limit)?;
        if self.defect == Defect::RecordsRunsUnaudited {
            page.items
                .retain(|e| !(e.memory == "browser" && e.action == Action::Write));
        }
        if self.defect == Defect::ImportsUnaudited {
            page.items.retain(|e| e.item != IMAGE_ITEM);
        }
        Ok(page)
    }

    fn setting_set(
        &self,
        key: &agent_memory_core::MetaKey,
        value: &str,
        by: &agent_memory_core::Provenance,
    ) -> Result<Option<String>> {
        self.inner.setting_set(key, value, by)
    }

    fn vouch(
        &self,
        vouches: &[agent_memory_core::evidence::Vouch<'_>],
        by: &agent_memory_core::Provenance,
    ) -> Result<usize> {
        self.inner.vouch(vouches, by)
    }

    fn vouched(&self, memory: &str, container: &str) -> Result<Vec<String>> {
        self.inner.vouched(memory, container)
    }
}

impl SiteMemoryStore for Broken {
    fn site_get(&self, scope: &Scope, site: &str) -> Result<Option<SiteMemory>> {
        self.inner.site_get(&self.scope(scope), site)
    }
    fn site_put(&self, scope: &Scope, memory: &SiteMemory) -> Result<()> {
        self.inner.site_put(&self.scope(scope), memory)
    }
    fn site_observe(
        &self,
        scope: &Scope,
        observation: &SiteObservation,
        by: Option<&Provenance>,
    ) -> Result<()> {
        let mut observation = observation.clone();
        if self.defect == Defect::ForgetsSessions {
            observation.session = None;
        }
        let scope = self.scope(scope);
        self.inner
            .site_observe(&scope, &observation, self.writer(by))?;
        if self.defect == Defect::ObservesUnlogged
            && let Some(site) = self.inner.site_get(&scope, &observation.site)?
        {
            self.inner.site_put(&scope, &site)?;
        }
        Ok(())
    }
    fn site_forget_knowledge(
        &self,
        scope: &Scope,
        site: &str,
        sessions: bool,
        at: &str,
    ) -> Result<bool> {
        let scope = self.scope(scope);
        if self.defect == Defect::ForgetsKnowledgeUnlogged {
            let Some(mut memory) = self.inner.site_get(&scope, site)? else {
                return Ok(false);
            };
            memory.forget_knowledge(sessions, at);
            self.inner.site_put(&scope, &memory)?;
            return Ok(true);
        }
        self.inner.site_forget_knowledge(&scope, site, sessions, at)
    }
    fn site_log(
        &self,
        scope: &Scope,
        site: &str,
    ) -> Result<Option<agent_memory_core::store::site_log::SiteLog>> {
        self.inner.site_log(&self.scope(scope), site)
    }
    fn site_list(&self, scope: &Scope) -> Result<Vec<String>> {
        self.inner.site_list(&self.scope(scope))
    }
}

impl RunManifestStore for Broken {
    fn run_put(
        &self,
        scope: &Scope,
        manifest: &RunManifest,
        by: Option<&Provenance>,
    ) -> Result<()> {
        self.inner
            .run_put(&self.scope(scope), manifest, self.writer(by))
    }
    fn run_start(
        &self,
        scope: &Scope,
        manifest: &RunManifest,
        by: Option<&Provenance>,
    ) -> Result<Option<RunManifest>> {
        let scope = self.scope(scope);
        let by = self.writer(by);
        match self.defect {
            Defect::StartsByPutting => self.inner.run_put(&scope, manifest, by).map(|()| None),
            Defect::StartsInTwoSteps => match self.inner.run_get(&scope, &manifest.run_id)? {
                Some(stored) => run_start_outcome(stored, manifest).map(Some),
                None => {
                    // Another thread's start can slip in here.
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    self.inner.run_put(&scope, manifest, by).map(|()| None)
                }
            },
            _ => self.inner.run_start(&scope, manifest, by),
        }
    }
    fn run_get(&self, scope: &Scope, run_id: &str) -> Result<Option<RunManifest>> {
        self.inner.run_get(&self.scope(scope), run_id)
    }
    fn run_list(&self, scope: &Scope, filter: &RunFilter) -> Result<Vec<RunManifest>> {
        let mut runs = self.inner.run_list(&self.scope(scope), filter)?;
        if self.defect == Defect::ListsOldestFirst {
            runs.reverse();
        }
        Ok(runs)
    }
    fn run_forget(&self, scope: &Scope, run_id: &str, by: &Provenance) -> Result<bool> {
        self.inner.run_forget(&self.scope(scope), run_id, by)
    }
}

impl HintStore for Broken {
    fn hints_get(&self, scope: &Scope) -> Result<Option<(String, String)>> {
        self.inner.hints_get(&self.scope(scope))
    }
    fn hints_put(
        &self,
        scope: &Scope,
        hints: &str,
        updated_at: &str,
        by: Option<&Provenance>,
    ) -> Result<()> {
        self.inner
            .hints_put(&self.scope(scope), hints, updated_at, self.writer(by))
    }
    fn suite_summary_put(
        &self,
        scope: &Scope,
        summary: &SuiteSummary,
        by: Option<&Provenance>,
    ) -> Result<()> {
        self.inner
            .suite_summary_put(&self.scope(scope), summary, self.writer(by))
    }
    fn suite_summaries(&self, scope: &Scope) -> Result<Vec<SuiteSummary>> {
        self.inner.suite_summaries(&self.scope(scope))
    }
}

impl BrowserStore for Broken {
    fn record_run(&self, scope: &Scope, run: &FinishedRun) -> Result<()> {
        self.inner.record_run(&self.scope(scope), run)
    }
    fn browser_scopes(&self) -> Result<Vec<Scope>> {
        self.inner.browser_scopes()
    }
    fn forget_browser(
        &self,
        scope: &Scope,
        site: Option<(&str, &[String])>,
        by: &Provenance,
    ) -> Result<Forgotten> {
        let site = site.filter(|_| self.defect != Defect::ForgetsTheWholeScope);
        self.inner.forget_browser(&self.scope(scope), site, by)
    }

    fn store_image(
        &self,
        scope: &Scope,
        image: &MemoryImage,
        by: Option<&Provenance>,
    ) -> Result<ImageStored> {
        let scope = self.scope(scope);
        match self.defect {
            Defect::RewritesImages => {
                for (t, tokens) in &image.trajectories {
                    self.inner.trajectory_put(&scope, t, tokens)?;
                }
                for site in &image.sites {
                    self.inner.site_put(&scope, site)?;
                }
                for run in &image.runs {
                    self.inner.run_put(&scope, run, None)?;
                }
                if let Some((hints, at)) = &image.hints {
                    self.inner.hints_put(&scope, hints, at, None)?;
                }
                for summary in &image.suite_summaries {
                    self.inner.suite_summary_put(&scope, summary, None)?;
                }
                Ok(ImageStored {
                    written: image.len(),
                    unchanged: 0,
                })
            }
            Defect::DropsImageHints => {
                let image = MemoryImage {
                    hints: None,
                    ..image.clone()
                };
                let mut stored = self.inner.store_image(&scope, &image, by)?;
                stored.written += 1;
                Ok(stored)
            }
            Defect::DropsImageLogs => {
                let image = MemoryImage {
                    site_logs: Default::default(),
                    ..image.clone()
                };
                self.inner.store_image(&scope, &image, by)
            }
            _ => self.inner.store_image(&scope, image, by),
        }
    }

    fn run_hold(&self, scope: &Scope, held: &HeldRun) -> Result<()> {
        self.inner.run_hold(&self.scope(scope), held)
    }
    fn runs_held(&self, scope: Option<&Scope>, limit: usize) -> Result<Vec<(Scope, HeldRun)>> {
        self.inner.runs_held(scope, limit)
    }
    fn run_held(&self, scope: &Scope, id: &str) -> Result<Option<HeldRun>> {
        if self.defect == Defect::ReadsHeldRunsInAnyScope {
            let all = self.inner.runs_held(None, usize::MAX)?;
            return Ok(all.into_iter().map(|(_, h)| h).find(|h| h.id == id));
        }
        self.inner.run_held(&self.scope(scope), id)
    }
    fn run_decide(
        &self,
        scope: &Scope,
        id: &str,
        approve: Option<Approval<'_>>,
        by: &Provenance,
    ) -> Result<bool> {
        let scope = self.scope(scope);
        match (self.defect, approve) {
            (Defect::ApprovesWithoutTakingIt, Some(approval)) => {
                let held = self.inner.runs_held(Some(&scope), usize::MAX)?;
                if !held.iter().any(|(_, h)| h.id == id) {
                    return Ok(false);
                }
                self.inner.record_run(&scope, approval.run)?;
                Ok(true)
            }
            _ => self.inner.run_decide(&scope, id, approve, by),
        }
    }
}

#[test]
fn the_suite_catches_broken_stores() {
    let table = [
        (
            Defect::RecordsRunsUnaudited,
            "a recorded run is in the audit trail with its writer",
        ),
        (
            Defect::RecordsRunsUnaudited,
            "each writer's run of stored trajectories is one entry of the audit trail",
        ),
        (
            Defect::RecordsRunsUnaudited,
            "each writer's run of site memory, run manifests, hints and suite summaries is one \
             entry of the audit trail",
        ),
        (
            Defect::DropsDropInWriters,
            "each writer's run of site memory, run manifests, hints and suite summaries is one \
             entry of the audit trail",
        ),
        (
            Defect::ImportsUnaudited,
            "an image's store is one entry of the audit trail",
        ),
        (
            Defect::ObservesUnlogged,
            "forget by writer rebuilds each site the writer taught without its observations",
        ),
        (
            Defect::ForgetsKnowledgeUnlogged,
            "forget by writer rebuilds each site the writer taught without its observations",
        ),
        (
            Defect::DropsImageLogs,
            "an image's site log is stored as the site's log, and a log that does not rebuild \
             its site is refused",
        ),
        (Defect::IgnoresOrigin, "candidates apply filters"),
        (Defect::ForgetsSessions, "site observations apply the rules"),
        (Defect::ListsOldestFirst, "run manifests list newest first"),
        (Defect::LeaksScopes, "scopes are isolated"),
        (Defect::ForgetsTheWholeScope, "forget one site of a scope"),
        (
            Defect::RewritesImages,
            "an image leaves equal records unchanged",
        ),
        (Defect::DropsImageHints, "an image is stored whole"),
        (Defect::DropsWriters, "trajectory round trip"),
        (
            Defect::ForgetsByWriterEverywhere,
            "forget by writer takes what the writer stored, in one scope or all",
        ),
        (
            Defect::StartsByPutting,
            "run start stores a new run and never replaces one",
        ),
        (
            Defect::StartsByPutting,
            "run start of the same run again changes nothing",
        ),
        (
            Defect::StartsInTwoSteps,
            "concurrent starts of one run store it once",
        ),
        (
            Defect::ApprovesWithoutTakingIt,
            "a held run is in no view until approved, and a rejected one is erased",
        ),
        (
            Defect::ReadsHeldRunsInAnyScope,
            "a held run is in no view until approved, and a rejected one is erased",
        ),
    ];
    for (defect, case) in table {
        let report = run(browser::SUITE, &browser::cases(), || Broken {
            defect,
            inner: InMemoryStore::new(),
        })
        .expect_err("a broken store must fail the contract");
        assert!(report.failed(case), "{case} should fail:\n{report}");
    }
}
