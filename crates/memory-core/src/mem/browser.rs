//! The browser memory traits on [`InMemoryStore`]: per scope, trajectories in a slot vector
//! with a token -> slots index, and maps for sites, manifests, hints and suite summaries.

use std::collections::{BTreeMap, HashMap};

use crate::error::Result;
use crate::evidence::{Action, Writer, forget_detail};
use crate::mem::{InMemoryStore, lock};
use crate::names::Scope;
use crate::provenance::Provenance;
use crate::store::browser::{
    Approval, BrowserStore, BrowserWrite, Candidate, CandidateQuery, FORGOTTEN_HELD_RUN,
    FORGOTTEN_TRAJECTORY, FinishedRun, ForgotBy, Forgotten, HeldRun, HintStore, IMAGE_ITEM,
    ImageStored, MemoryImage, RunFilter, RunManifest, RunManifestStore, SiteMemory,
    SiteMemoryStore, SiteObservation, SuiteSummary, Trajectory, TrajectoryStore,
    forgotten_observations, run_item, run_start_outcome,
};
use crate::store::site_log::{LOG_FOLD_AT, LOG_KEEP, LogEntry, LogEvent, SiteLog};
use crate::time::{Clock, Timestamp};

/// Browser memory of every scope.
#[derive(Debug, Default)]
pub(crate) struct BrowserMemory {
    scopes: HashMap<Scope, ScopeMemory>,
}

#[derive(Debug, Default)]
struct ScopeMemory {
    slots: Vec<Option<Slot>>,
    by_id: HashMap<String, usize>,
    postings: HashMap<String, Vec<usize>>,
    /// The same postings split by interned origin, so a query with an origin reads only its
    /// site's share of each token.
    by_origin: HashMap<(u32, String), Vec<usize>>,
    origins: HashMap<String, u32>,
    sites: BTreeMap<String, SiteMemory>,
    /// Each site's log since its base, for the sites observed since they were stored whole.
    site_logs: BTreeMap<String, SiteLog>,
    runs: HashMap<String, RunManifest>,
    hints: Option<(String, String)>,
    suites: BTreeMap<String, SuiteSummary>,
    /// Runs held for review, oldest first.
    held: Vec<HeldRun>,
    /// The match counters, one byte per slot, kept zeroed between queries so a query pays
    /// only for the slots its tokens touch, not for every slot the scope ever held.
    counts: Vec<u8>,
}

#[derive(Debug)]
struct Slot {
    trajectory: Trajectory,
    tokens: Vec<String>,
    /// Interned origin: 0 is "no origin".
    origin: u32,
}

impl ScopeMemory {
    fn origin_id(&mut self, origin: Option<&str>) -> u32 {
        let Some(origin) = origin else { return 0 };
        let next = u32::try_from(self.origins.len() + 1).unwrap_or(u32::MAX);
        *self.origins.entry(origin.to_owned()).or_insert(next)
    }

    fn unindex(&mut self, slot: usize) {
        let Some(Some(old)) = self.slots.get(slot) else {
            return;
        };
        let origin = old.origin;
        for token in index_keys(&old.tokens) {
            if let Some(list) = self.postings.get_mut(token) {
                list.retain(|&s| s != slot);
                if list.is_empty() {
                    self.postings.remove(token);
                }
            }
            let key = (origin, token.clone());
            if let Some(list) = self.by_origin.get_mut(&key) {
                list.retain(|&s| s != slot);
                if list.is_empty() {
                    self.by_origin.remove(&key);
                }
            }
        }
    }

    /// Drops the trajectory in `slot` and its postings; `false` when the slot was empty.
    fn remove(&mut self, slot: usize) -> bool {
        self.unindex(slot);
        match self.slots.get_mut(slot).map(Option::take) {
            Some(Some(stored)) => {
                self.by_id.remove(&stored.trajectory.id);
                true
            }
            _ => false,
        }
    }

    /// Whether the scope holds nothing at all.
    fn is_empty(&self) -> bool {
        self.by_id.is_empty()
            && self.sites.is_empty()
            && self.runs.is_empty()
            && self.hints.is_none()
            && self.suites.is_empty()
            && self.held.is_empty()
    }

    fn put(&mut self, trajectory: &Trajectory, tokens: &[String]) {
        let origin = self.origin_id(trajectory.origin.as_deref());
        let mut tokens = tokens.to_vec();
        tokens.sort();
        tokens.dedup();
        let slot = match self.by_id.get(&trajectory.id) {
            Some(&slot) => {
                self.unindex(slot);
                slot
            }
            None => {
                self.slots.push(None);
                self.by_id
                    .insert(trajectory.id.clone(), self.slots.len() - 1);
                self.slots.len() - 1
            }
        };
        for token in index_keys(&tokens) {
            self.postings.entry(token.clone()).or_default().push(slot);
            self.by_origin
                .entry((origin, token.clone()))
                .or_default()
                .push(slot);
        }
        self.slots[slot] = Some(Slot {
            trajectory: trajectory.clone(),
            tokens,
            origin,
        });
    }

    /// Counting over the postings of every query token (ScanCount): one counter per slot,
    /// so each posting costs one increment in a small array instead of a lookup of the goal
    /// it points to; only goals reaching `min` are read, to apply the filters.
    fn candidates(&mut self, query: &CandidateQuery) -> Vec<Candidate> {
        let mut counts = std::mem::take(&mut self.counts);
        counts.resize(self.slots.len(), 0);
        let found = self.count_candidates(query, &mut counts);
        self.counts = counts;
        found
    }

    /// [`candidates`](Self::candidates) with `counts` all zero on entry, and again on return.
    fn count_candidates(&self, query: &CandidateQuery, counts: &mut [u8]) -> Vec<Candidate> {
        let origin = match &query.origin {
            Some(origin) => match self.origins.get(origin) {
                Some(&id) => Some(id),
                None => return Vec::new(),
            },
            None => None,
        };
        let postings = |token: &String| -> &[usize] {
            match origin {
                Some(o) => self.by_origin.get(&(o, token.clone())),
                None => self.postings.get(token),
            }
            .map(Vec::as_slice)
            .unwrap_or_default()
        };
        let mut tokens: Vec<&String> = index_keys(&query.tokens).collect();
        tokens.sort();
        tokens.dedup();
        let tokenless = query.tokens.is_empty();
        let min = query.min_shared.max(1);
        if min > tokens.len() {
            return Vec::new();
        }
        // A byte per slot: a count that saturates at 255 (a query of more distinct tokens
        // than that) is recounted exactly against the goal's own tokens below.
        let mut touched: Vec<usize> = Vec::new();
        for token in &tokens {
            for &slot in postings(token) {
                let count = &mut counts[slot];
                if *count == 0 {
                    touched.push(slot);
                }
                *count = count.saturating_add(1);
            }
        }
        let min_count = u8::try_from(min).unwrap_or(u8::MAX);
        let mut found: Vec<Candidate> = touched
            .iter()
            .copied()
            .filter(|&slot| counts[slot] >= min_count)
            .filter_map(|slot| {
                let stored = self.slots.get(slot)?.as_ref()?;
                if origin.is_some_and(|o| o != stored.origin)
                    || (query.success_only && !stored.trajectory.success)
                    || expired(stored.trajectory.recorded_at, query.not_before)
                {
                    return None;
                }
                let shared = match counts[slot] {
                    u8::MAX => tokens
                        .iter()
                        .filter(|t| stored.tokens.binary_search(**t).is_ok())
                        .count(),
                    count => usize::from(count),
                };
                (tokenless || shared >= min).then(|| {
                    let shared = if tokenless { 0 } else { shared };
                    Candidate::of(&stored.trajectory, shared, stored.tokens.len())
                })
            })
            .collect();
        for slot in touched {
            counts[slot] = 0;
        }
        found.sort();
        found
    }
}

/// The posting keys of a token list: a goal without tokens is filed under the empty token
/// (real tokens are never empty), so a query without tokens finds exactly those goals.
fn index_keys(tokens: &[String]) -> impl Iterator<Item = &String> {
    static EMPTY: [String; 1] = [String::new()];
    let keys: &[String] = if tokens.is_empty() { &EMPTY } else { tokens };
    keys.iter()
}

fn expired(recorded_at: Option<Timestamp>, not_before: Option<Timestamp>) -> bool {
    matches!((recorded_at, not_before), (Some(at), Some(limit)) if at < limit)
}

fn with_scope<T>(store: &InMemoryStore, scope: &Scope, f: impl FnOnce(&mut ScopeMemory) -> T) -> T {
    let mut memory = lock(&store.browser);
    f(memory.scopes.entry(scope.clone()).or_default())
}

/// Deletes what [`BrowserStore::forget_browser`] names from `memory`, counting it.
fn forget_browser_in(
    memory: &mut BrowserMemory,
    scope: &Scope,
    site: Option<(&str, &[String])>,
) -> Forgotten {
    let Some(m) = memory.scopes.get_mut(scope) else {
        return Forgotten::default();
    };
    let Some((site, origins)) = site else {
        let forgotten = Forgotten {
            trajectories: m.by_id.len() as u64,
            sites: m.sites.len() as u64,
            runs: m.runs.len() as u64,
            hints: u64::from(m.hints.is_some()) + m.suites.len() as u64,
            held: m.held.len() as u64,
        };
        memory.scopes.remove(scope);
        return forgotten;
    };
    let doomed: Vec<usize> = m
        .slots
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let origin = s.as_ref()?.trajectory.origin.as_ref()?;
            origins.contains(origin).then_some(i)
        })
        .collect();
    let runs_before = m.runs.len();
    m.runs.retain(|_, run| run.domain != site);
    let held_before = m.held.len();
    m.held.retain(|held| held.site != site);
    let mut forgotten = Forgotten {
        sites: u64::from(m.sites.remove(site).is_some() | m.site_logs.remove(site).is_some()),
        runs: (runs_before - m.runs.len()) as u64,
        held: (held_before - m.held.len()) as u64,
        ..Forgotten::default()
    };
    for slot in doomed {
        forgotten.trajectories += u64::from(m.remove(slot));
    }
    forgotten
}

impl TrajectoryStore for InMemoryStore {
    fn trajectory_put(
        &self,
        scope: &Scope,
        trajectory: &Trajectory,
        tokens: &[String],
    ) -> Result<()> {
        with_scope(self, scope, |m| {
            m.put(trajectory, tokens);
            self.audit_write_run(&trajectory.write_run(scope));
        });
        Ok(())
    }

    fn trajectory_get(&self, scope: &Scope, id: &str) -> Result<Option<Trajectory>> {
        Ok(with_scope(self, scope, |m| {
            let slot = *m.by_id.get(id)?;
            m.slots.get(slot)?.as_ref().map(|s| s.trajectory.clone())
        }))
    }

    fn trajectory_candidates(
        &self,
        scope: &Scope,
        query: &CandidateQuery,
    ) -> Result<Vec<Candidate>> {
        Ok(with_scope(self, scope, |m| m.candidates(query)))
    }

    fn trajectory_list(&self, scope: &Scope) -> Result<Vec<Trajectory>> {
        Ok(with_scope(self, scope, |m| {
            m.slots
                .iter()
                .flatten()
                .map(|s| s.trajectory.clone())
                .collect()
        }))
    }

    fn trajectory_prune(&self, scope: &Scope, cutoff: Timestamp) -> Result<usize> {
        Ok(with_scope(self, scope, |m| {
            let doomed: Vec<usize> = m
                .slots
                .iter()
                .enumerate()
                .filter_map(|(i, s)| {
                    let at = s.as_ref()?.trajectory.recorded_at?;
                    (at < cutoff).then_some(i)
                })
                .collect();
            for &slot in &doomed {
                m.remove(slot);
            }
            doomed.len()
        }))
    }

    fn trajectory_forget(&self, scope: &Scope, id: &str, by: &Provenance) -> Result<bool> {
        Ok(with_scope(self, scope, |m| {
            let gone = match m.by_id.get(id) {
                Some(&slot) => m.remove(slot),
                None => false,
            };
            let detail = forget_detail(&[(u64::from(gone), "trajectory", "trajectories")]);
            self.audit_in("browser", Action::Forget, scope.as_str(), id, by, detail);
            gone
        }))
    }

    fn trajectory_forget_by(
        &self,
        scope: Option<&Scope>,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<ForgotBy> {
        writer.check()?;
        let mut gone = Vec::new();
        let mut held_gone = Vec::new();
        let mut sites = Vec::new();
        // The trail is written under the memory's lock, so no reader sees one without the
        // other (the trail's lock is only ever taken after a memory's).
        let mut memory = lock(&self.browser);
        for (s, m) in memory.scopes.iter_mut() {
            if scope.is_some_and(|scope| scope != s) {
                continue;
            }
            let doomed: Vec<(usize, String)> = (m.slots.iter().enumerate())
                .filter_map(|(i, slot)| {
                    let t = &slot.as_ref()?.trajectory;
                    let p = t.provenance.as_ref()?;
                    writer.matches(p).then(|| (i, t.id.clone()))
                })
                .collect();
            for (slot, id) in doomed {
                m.remove(slot);
                gone.push((s.clone(), id));
            }
            m.held.retain(|held| {
                let doomed = writer.matches(&held.written_by);
                if doomed {
                    held_gone.push((s.clone(), held.id.clone()));
                }
                !doomed
            });
            m.site_logs.retain(|site, log| {
                let Some((n, rebuilt)) = log.take_back(writer) else {
                    return true;
                };
                sites.push((s.clone(), site.clone(), n));
                let Some(rebuilt) = rebuilt else {
                    m.sites.remove(site);
                    return false;
                };
                m.sites.insert(site.clone(), rebuilt);
                true
            });
        }
        gone.sort();
        held_gone.sort();
        sites.sort();
        for (s, id) in &gone {
            let detail = FORGOTTEN_TRAJECTORY.to_owned();
            self.audit_in("browser", Action::Forget, s.as_str(), id, by, detail);
        }
        for (s, id) in &held_gone {
            let (item, detail) = (HeldRun::item(id), FORGOTTEN_HELD_RUN.to_owned());
            self.audit_in("browser", Action::Forget, s.as_str(), &item, by, detail);
        }
        for (s, site, n) in &sites {
            let (item, detail) = (Forgotten::item(Some(site)), forgotten_observations(*n));
            self.audit_in("browser", Action::Forget, s.as_str(), &item, by, detail);
        }
        drop(memory);
        gone.extend(held_gone);
        Ok(ForgotBy { runs: gone, sites })
    }
}

impl SiteMemoryStore for InMemoryStore {
    fn site_get(&self, scope: &Scope, site: &str) -> Result<Option<SiteMemory>> {
        Ok(with_scope(self, scope, |m| m.sites.get(site).cloned()))
    }

    fn site_put(&self, scope: &Scope, memory: &SiteMemory) -> Result<()> {
        with_scope(self, scope, |m| {
            m.sites.insert(memory.site.clone(), memory.clone());
            m.site_logs.remove(&memory.site);
        });
        Ok(())
    }

    fn site_observe(
        &self,
        scope: &Scope,
        observation: &SiteObservation,
        by: Option<&Provenance>,
    ) -> Result<()> {
        let write = BrowserWrite::site(&observation.site);
        with_scope(self, scope, |m| {
            let run = write.write_run(scope, by, self.clock.now());
            observe(m, observation, &run.by);
            self.audit_write_run(&run);
        });
        Ok(())
    }

    fn site_forget_knowledge(
        &self,
        scope: &Scope,
        site: &str,
        sessions: bool,
        at: &str,
    ) -> Result<bool> {
        Ok(with_scope(self, scope, |m| match m.sites.get_mut(site) {
            Some(memory) => {
                memory.forget_knowledge(sessions, at);
                if let Some(log) = m.site_logs.get_mut(site) {
                    log.forget_knowledge(sessions, at);
                }
                true
            }
            None => false,
        }))
    }

    fn site_log(&self, scope: &Scope, site: &str) -> Result<Option<SiteLog>> {
        Ok(with_scope(self, scope, |m| m.site_logs.get(site).cloned()))
    }

    fn site_list(&self, scope: &Scope) -> Result<Vec<String>> {
        Ok(with_scope(self, scope, |m| {
            m.sites.keys().cloned().collect()
        }))
    }
}

fn observe(m: &mut ScopeMemory, observation: &SiteObservation, by: &Provenance) {
    let memory = m
        .sites
        .entry(observation.site.clone())
        .or_insert_with(|| SiteMemory {
            site: observation.site.clone(),
            ..SiteMemory::default()
        });
    let log = (m.site_logs.entry(observation.site.clone())).or_insert_with(|| SiteLog {
        base: memory.clone(),
        entries: Vec::new(),
    });
    log.entries.push(LogEntry {
        by: Some(by.clone()),
        event: LogEvent::Observed(Box::new(observation.clone())),
    });
    if log.entries.len() >= LOG_FOLD_AT {
        log.fold_oldest(LOG_KEEP);
    }
    memory.apply(observation);
}

impl RunManifestStore for InMemoryStore {
    fn run_put(
        &self,
        scope: &Scope,
        manifest: &RunManifest,
        by: Option<&Provenance>,
    ) -> Result<()> {
        let write = BrowserWrite::run(&manifest.run_id);
        with_scope(self, scope, |m| {
            m.runs.insert(manifest.run_id.clone(), manifest.clone());
            self.audit_write_run(&write.write_run(scope, by, self.clock.now()));
        });
        Ok(())
    }

    fn run_start(
        &self,
        scope: &Scope,
        manifest: &RunManifest,
        by: Option<&Provenance>,
    ) -> Result<Option<RunManifest>> {
        let write = BrowserWrite::run(&manifest.run_id);
        with_scope(self, scope, |m| match m.runs.get(&manifest.run_id) {
            Some(stored) => run_start_outcome(stored.clone(), manifest).map(Some),
            None => {
                m.runs.insert(manifest.run_id.clone(), manifest.clone());
                self.audit_write_run(&write.write_run(scope, by, self.clock.now()));
                Ok(None)
            }
        })
    }

    fn run_get(&self, scope: &Scope, run_id: &str) -> Result<Option<RunManifest>> {
        Ok(with_scope(self, scope, |m| m.runs.get(run_id).cloned()))
    }

    fn run_forget(&self, scope: &Scope, run_id: &str, by: &Provenance) -> Result<bool> {
        Ok(with_scope(self, scope, |m| {
            let gone = m.runs.remove(run_id).is_some();
            let detail = forget_detail(&[(u64::from(gone), "run", "runs")]);
            let item = run_item(run_id);
            self.audit_in("browser", Action::Forget, scope.as_str(), &item, by, detail);
            gone
        }))
    }

    fn run_list(&self, scope: &Scope, filter: &RunFilter) -> Result<Vec<RunManifest>> {
        Ok(with_scope(self, scope, |m| {
            let mut runs: Vec<RunManifest> = m
                .runs
                .values()
                .filter(|r| run_matches(r, filter))
                .cloned()
                .collect();
            runs.sort_by(|a, b| {
                b.updated_at
                    .cmp(&a.updated_at)
                    .then_with(|| a.run_id.cmp(&b.run_id))
            });
            if let Some(limit) = filter.limit.filter(|&l| l > 0) {
                runs.truncate(limit);
            }
            runs
        }))
    }
}

/// Whether `run` passes the filters of `filter` (the limit aside).
pub(crate) fn run_matches(run: &RunManifest, filter: &RunFilter) -> bool {
    filter.domain.as_ref().is_none_or(|d| *d == run.domain)
        && filter
            .session_id
            .as_ref()
            .is_none_or(|s| run.session_id.as_ref() == Some(s))
        && filter.status.is_none_or(|s| s == run.status)
}

impl HintStore for InMemoryStore {
    fn hints_get(&self, scope: &Scope) -> Result<Option<(String, String)>> {
        Ok(with_scope(self, scope, |m| m.hints.clone()))
    }

    fn hints_put(
        &self,
        scope: &Scope,
        hints: &str,
        updated_at: &str,
        by: Option<&Provenance>,
    ) -> Result<()> {
        let write = BrowserWrite::hints();
        with_scope(self, scope, |m| {
            m.hints = Some((hints.to_owned(), updated_at.to_owned()));
            self.audit_write_run(&write.write_run(scope, by, self.clock.now()));
        });
        Ok(())
    }

    fn suite_summary_put(
        &self,
        scope: &Scope,
        summary: &SuiteSummary,
        by: Option<&Provenance>,
    ) -> Result<()> {
        let write = BrowserWrite::suite_summary();
        with_scope(self, scope, |m| {
            m.suites.insert(summary.id.clone(), summary.clone());
            self.audit_write_run(&write.write_run(scope, by, self.clock.now()));
        });
        Ok(())
    }

    fn suite_summaries(&self, scope: &Scope) -> Result<Vec<SuiteSummary>> {
        Ok(with_scope(self, scope, |m| {
            m.suites.values().cloned().collect()
        }))
    }
}

/// Records everything `run` leaves behind in `m`.
fn record_in(m: &mut ScopeMemory, run: &FinishedRun) {
    m.put(&run.trajectory, &run.tokens);
    if !run.site.is_empty() {
        observe(m, &run.site, &run.written_by());
    }
    if let Some(manifest) = &run.manifest {
        let stored = m.runs.remove(&manifest.run_id);
        let manifest = match stored {
            Some(stored) if run.completes_stored => stored.completed_by(manifest),
            _ => manifest.clone(),
        };
        m.runs.insert(manifest.run_id.clone(), manifest);
    }
}

impl BrowserStore for InMemoryStore {
    fn record_run(&self, scope: &Scope, run: &FinishedRun) -> Result<()> {
        // One lock for the whole run: no reader sees half of it.
        with_scope(self, scope, |m| {
            record_in(m, run);
            self.audit_in(
                "browser",
                Action::Write,
                scope.as_str(),
                &run.trajectory.id,
                &run.written_by(),
                run.detail(),
            );
        });
        Ok(())
    }

    fn run_hold(&self, scope: &Scope, held: &HeldRun) -> Result<()> {
        let mut memory = lock(&self.browser);
        let m = memory.scopes.entry(scope.clone()).or_default();
        if m.held.iter().any(|h| h.id == held.id) {
            return Err(HeldRun::already_held(&held.id));
        }
        m.held.push(held.clone());
        self.audit_in(
            "browser",
            Action::Write,
            scope.as_str(),
            &HeldRun::item(&held.id),
            &held.written_by,
            held.detail(),
        );
        drop(memory);
        Ok(())
    }

    fn runs_held(&self, scope: Option<&Scope>, limit: usize) -> Result<Vec<(Scope, HeldRun)>> {
        let memory = lock(&self.browser);
        let mut held: Vec<(Scope, HeldRun)> = memory
            .scopes
            .iter()
            .filter(|(s, _)| scope.is_none_or(|scope| scope == *s))
            .flat_map(|(s, m)| m.held.iter().map(|h| (s.clone(), h.clone())))
            .collect();
        held.sort_by(|a, b| {
            (a.1.written_by.at, a.0.as_str(), &a.1.id).cmp(&(
                b.1.written_by.at,
                b.0.as_str(),
                &b.1.id,
            ))
        });
        held.truncate(limit);
        Ok(held)
    }

    fn run_held(&self, scope: &Scope, id: &str) -> Result<Option<HeldRun>> {
        let memory = lock(&self.browser);
        Ok(memory
            .scopes
            .get(scope)
            .and_then(|m| m.held.iter().find(|h| h.id == id))
            .cloned())
    }

    fn run_decide(
        &self,
        scope: &Scope,
        id: &str,
        approve: Option<Approval<'_>>,
        by: &Provenance,
    ) -> Result<bool> {
        for vouch in approve.map_or(&[][..], |a| a.vouches) {
            vouch.check()?;
        }
        let mut memory = lock(&self.browser);
        let Some(m) = memory.scopes.get_mut(scope) else {
            return Ok(false);
        };
        let Some(at) = m.held.iter().position(|h| h.id == id) else {
            return Ok(false);
        };
        m.held.remove(at);
        let action = match approve {
            Some(approval) => {
                record_in(m, approval.run);
                self.keep_vouches(approval.vouches, by);
                Action::Approve
            }
            None => Action::Reject,
        };
        self.audit_in(
            "browser",
            action,
            scope.as_str(),
            &HeldRun::item(id),
            by,
            HeldRun::decision_detail(approve),
        );
        drop(memory);
        Ok(true)
    }

    fn browser_scopes(&self) -> Result<Vec<Scope>> {
        let memory = lock(&self.browser);
        let mut scopes: Vec<Scope> = memory
            .scopes
            .iter()
            .filter(|(_, m)| !m.is_empty())
            .map(|(scope, _)| scope.clone())
            .collect();
        scopes.sort();
        Ok(scopes)
    }

    fn forget_browser(
        &self,
        scope: &Scope,
        site: Option<(&str, &[String])>,
        by: &Provenance,
    ) -> Result<Forgotten> {
        let mut memory = lock(&self.browser);
        let forgotten = forget_browser_in(&mut memory, scope, site);
        let item = Forgotten::item(site.map(|(key, _)| key));
        let detail = forgotten.detail();
        self.audit_in("browser", Action::Forget, scope.as_str(), &item, by, detail);
        drop(memory);
        Ok(forgotten)
    }

    fn store_image(
        &self,
        scope: &Scope,
        image: &MemoryImage,
        by: Option<&Provenance>,
    ) -> Result<ImageStored> {
        image.check_site_logs()?;
        // One lock for the whole image: no reader sees half of it, and two stores of one
        // image are ordered, so the second finds every record unchanged.
        Ok(with_scope(self, scope, |m| {
            let mut stored = ImageStored::default();
            let mut count = |changed: bool| {
                if changed {
                    stored.written += 1;
                } else {
                    stored.unchanged += 1;
                }
            };
            for (trajectory, tokens) in &image.trajectories {
                let same = m
                    .by_id
                    .get(&trajectory.id)
                    .and_then(|&slot| m.slots.get(slot)?.as_ref())
                    .is_some_and(|s| s.trajectory.unchanged_by(trajectory));
                if !same {
                    m.put(trajectory, tokens);
                }
                count(!same);
            }
            for site in &image.sites {
                let stored_log =
                    || Ok::<_, std::convert::Infallible>(m.site_logs.get(&site.site).cloned());
                let Ok(changed) = image.site_changed(site, m.sites.get(&site.site), stored_log);
                if changed {
                    m.sites.insert(site.site.clone(), site.clone());
                    match image.site_logs.get(&site.site) {
                        Some(log) => m.site_logs.insert(site.site.clone(), log.clone()),
                        None => m.site_logs.remove(&site.site),
                    };
                }
                count(changed);
            }
            for run in &image.runs {
                let changed = m.runs.get(&run.run_id) != Some(run);
                if changed {
                    m.runs.insert(run.run_id.clone(), run.clone());
                }
                count(changed);
            }
            if let Some(hints) = &image.hints {
                let changed = m.hints.as_ref() != Some(hints);
                if changed {
                    m.hints = Some(hints.clone());
                }
                count(changed);
            }
            for summary in &image.suite_summaries {
                let changed = m.suites.get(&summary.id) != Some(summary);
                if changed {
                    m.suites.insert(summary.id.clone(), summary.clone());
                }
                count(changed);
            }
            if stored.written > 0 {
                let by = ImageStored::writer(by, self.clock.now());
                let detail = stored.detail();
                self.audit_in(
                    "browser",
                    Action::Write,
                    scope.as_str(),
                    IMAGE_ITEM,
                    &by,
                    detail,
                );
            }
            stored
        }))
    }
}
