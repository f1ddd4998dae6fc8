//! The browser agent's memory: trajectories with a token index for matching, per-site
//! memory (session history, app knowledge, selector cache), run manifests, hints and suite
//! summaries. Every record belongs to a [`Scope`].
//!
//! The records here are plain data. The rules that every backend must apply the same way
//! inside its own transaction (the confidence rule of app knowledge, the selector cache's
//! counting, the rolling session log) are pure functions in this module, so the in-memory
//! store and SQLite cannot drift apart. Free-form JSON (a browser action) is held as JSON text.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::evidence::{Vouch, Writer};
use crate::names::Scope;
use crate::provenance::Provenance;
use crate::store::Page;
use crate::store::site_log::SiteLog;
use crate::time::Timestamp;

/// How many sessions a site keeps: the newest five.
pub const MAX_SESSIONS_PER_SITE: usize = 5;
/// The confidence a newly observed fact starts with.
pub const NEW_FACT_CONFIDENCE: f64 = 0.6;
/// The share of the remaining doubt a confirmation removes: `c + (1 - c) * 0.2`.
pub const CONFIRMATION_GAIN: f64 = 0.2;
/// A contradicted fact keeps this share of its confidence.
pub const CONTRADICTION_DECAY: f64 = 0.5;
/// Facts whose confidence falls below this are removed.
pub const PRUNE_BELOW: f64 = 0.1;

/// One step of a trajectory: the page it ran on and the action taken.
#[derive(Clone, Debug, PartialEq)]
pub struct TrajectoryStep {
    /// The page url when the action ran.
    pub url: String,
    /// The action as a JSON object text, e.g. `{"action":"click","selector":"@b3"}`.
    pub action: String,
    /// A hash of the page snapshot, as decimal text.
    pub snapshot_hash: String,
    /// Whether the action's effect was verified.
    pub verified: bool,
    /// What the action was expected to change, when the agent said so.
    pub expected_effect: Option<String>,
}

impl Trajectory {
    /// Its store by [`TrajectoryStore::trajectory_put`] in `scope`, as the audit trail
    /// records it: by its writer, at its writer's time (an unknown writer at its own time, the
    /// epoch when it has none).
    pub fn write_run<'a>(&self, scope: &'a Scope) -> crate::evidence::WriteRun<'a> {
        let at = match &self.provenance {
            Some(by) => by.at,
            None => self.recorded_at.unwrap_or(crate::evidence::UNRECORDED),
        };
        crate::evidence::WriteRun::trajectories(scope.as_str(), self.provenance.as_ref(), at)
    }
}

/// One finished run of the browser agent, successful or not.
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectory {
    /// Unique id within its scope, e.g. `traj_1767225600000_ab12cd`.
    pub id: String,
    /// The goal the agent was given.
    pub goal: String,
    /// Scheme, host and port of the site (`https://shop.example.com:8443`), when known.
    pub origin: Option<String>,
    /// The actions taken, in order (`complete` and `abort` are never stored).
    pub steps: Vec<TrajectoryStep>,
    /// Whether the run reached its goal.
    pub success: bool,
    /// Wall time of the run in milliseconds.
    pub duration_ms: u64,
    /// The model that drove the run.
    pub model: String,
    /// When the run was saved, as the ISO-8601 text it was written with.
    pub timestamp: String,
    /// The same instant parsed, or `None` when the text does not parse (such a trajectory
    /// never expires, as in the format this memory is compatible with).
    pub recorded_at: Option<Timestamp>,
    /// Who stored the run, in which session and by which client, when the door that stored
    /// it knew; `None` for a run stored before writers were kept, or read from the files of
    /// the format this memory is compatible with.
    pub provenance: Option<Provenance>,
}

impl Trajectory {
    /// Whether storing `imported` over this stored trajectory changes nothing: the two are
    /// equal, or equal but for a writer `imported` does not name (a memory directory keeps
    /// none), so that an export imported back keeps each run's writer.
    pub fn unchanged_by(&self, imported: &Trajectory) -> bool {
        let Trajectory {
            id,
            goal,
            origin,
            steps,
            success,
            duration_ms,
            model,
            timestamp,
            recorded_at,
            provenance,
        } = imported;
        self.id == *id
            && self.goal == *goal
            && self.origin == *origin
            && self.steps == *steps
            && self.success == *success
            && self.duration_ms == *duration_ms
            && self.model == *model
            && self.timestamp == *timestamp
            && self.recorded_at == *recorded_at
            && (provenance.is_none() || self.provenance == *provenance)
    }
}

/// A request for trajectories that share at least one goal token with a query.
#[derive(Clone, Debug, PartialEq)]
pub struct CandidateQuery {
    /// The query's distinct goal tokens.
    pub tokens: Vec<String>,
    /// Only trajectories of exactly this origin, when set.
    pub origin: Option<String>,
    /// Only successful trajectories.
    pub success_only: bool,
    /// Only trajectories recorded at or after this instant (undated ones are kept).
    pub not_before: Option<Timestamp>,
    /// Only trajectories sharing at least this many tokens with the query (at least 1).
    pub min_shared: usize,
}

/// A trajectory that shares tokens with a query, with what ranking it needs: Jaccard
/// similarity (`shared`, `token_count`) and the trace score (`recorded_at`, `duration_ms`,
/// `steps`, `verified_steps`), so a match reads in full only the trajectory that wins.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Candidate {
    /// The trajectory's id.
    pub id: String,
    /// How many of the query's tokens its goal holds.
    pub shared: usize,
    /// How many distinct tokens its goal has.
    pub token_count: usize,
    /// When it was recorded, as [`Trajectory::recorded_at`].
    pub recorded_at: Option<Timestamp>,
    /// Its wall time in milliseconds, as [`Trajectory::duration_ms`].
    pub duration_ms: u64,
    /// How many steps it has.
    pub steps: usize,
    /// How many of its steps were verified.
    pub verified_steps: usize,
}

impl Candidate {
    /// `trajectory` as a candidate sharing `shared` of a query's tokens, its goal having
    /// `token_count` distinct tokens.
    pub fn of(trajectory: &Trajectory, shared: usize, token_count: usize) -> Candidate {
        Candidate {
            id: trajectory.id.clone(),
            shared,
            token_count,
            recorded_at: trajectory.recorded_at,
            duration_ms: trajectory.duration_ms,
            steps: trajectory.steps.len(),
            verified_steps: trajectory.steps.iter().filter(|s| s.verified).count(),
        }
    }
}

/// What a token index knows of a candidate before its row is read: enough to rank it by
/// similarity and recency (see [`TrajectoryStore::trajectory_top_candidates`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexedCandidate {
    /// How many of the query's tokens its goal holds.
    pub shared: usize,
    /// How many distinct tokens its goal has.
    pub token_count: usize,
    /// When it was recorded.
    pub recorded_at: Option<Timestamp>,
}

impl IndexedCandidate {
    /// What the index knows of `candidate`.
    pub fn of(candidate: &Candidate) -> IndexedCandidate {
        IndexedCandidate {
            shared: candidate.shared,
            token_count: candidate.token_count,
            recorded_at: candidate.recorded_at,
        }
    }
}

/// The items of `ranked` whose rank is at least the highest minus `margin`, in their order.
/// Stores that rank candidates themselves use it, so every store keeps the same ones.
pub fn within_margin<T>(ranked: Vec<(T, f64)>, margin: f64) -> Vec<T> {
    let Some(top) = ranked.iter().map(|(_, r)| *r).reduce(f64::max) else {
        return Vec::new();
    };
    ranked
        .into_iter()
        .filter(|(_, r)| *r >= top - margin)
        .map(|(item, _)| item)
        .collect()
}

/// Stored trajectories of each scope, indexed by goal token.
///
/// The index is built from the tokens the caller passes with each trajectory, so the
/// tokenizer lives with the feature that defines it; a store only counts shared tokens.
/// The cost of [`trajectory_candidates`](TrajectoryStore::trajectory_candidates) follows the
/// trajectories that share a token with the query, not the size of the store.
pub trait TrajectoryStore: Send + Sync {
    /// Stores `trajectory` with its distinct goal `tokens`, replacing one with the same id,
    /// and keeps the audit trail as for a run of writes
    /// ([`WriteRun::trajectories`](crate::evidence::WriteRun::trajectories), with
    /// [`Trajectory::write_run`]): one `write` entry per writer's run of stores in the scope.
    fn trajectory_put(
        &self,
        scope: &Scope,
        trajectory: &Trajectory,
        tokens: &[String],
    ) -> Result<()>;

    /// The trajectory with `id`, if stored.
    fn trajectory_get(&self, scope: &Scope, id: &str) -> Result<Option<Trajectory>>;

    /// The stored trajectories among `ids`, in the order of `ids`: an absent id is skipped,
    /// a repeated one returned at each mention. One call where a match would otherwise make
    /// one per candidate (a server store answers it in one round trip); the default asks
    /// [`trajectory_get`](Self::trajectory_get) for each.
    fn trajectory_get_many(&self, scope: &Scope, ids: &[&str]) -> Result<Vec<Trajectory>> {
        let mut found = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(trajectory) = self.trajectory_get(scope, id)? {
                found.push(trajectory);
            }
        }
        Ok(found)
    }

    /// Every trajectory that shares at least `query.min_shared` tokens with the query and
    /// passes its filters, ordered by id. A query without tokens finds the trajectories whose
    /// goal has no tokens (reported with `shared` 0).
    fn trajectory_candidates(
        &self,
        scope: &Scope,
        query: &CandidateQuery,
    ) -> Result<Vec<Candidate>>;

    /// The candidates of [`trajectory_candidates`](Self::trajectory_candidates) that `rank`
    /// ranks within `margin` of the highest rank, ordered by id: `rank` sees what the token
    /// index knows of each candidate, `None` leaving it out, so a store reads the rows of only
    /// the candidates that can still win. With `margin` 0 these are the candidates of the
    /// highest rank; a rank that is a lower bound of the final score, which exceeds it by at
    /// most `margin`, keeps every candidate that can win. The default filters
    /// `trajectory_candidates`; a store on disk ranks before it reads any row.
    fn trajectory_top_candidates(
        &self,
        scope: &Scope,
        query: &CandidateQuery,
        rank: &dyn Fn(&IndexedCandidate) -> Option<f64>,
        margin: f64,
    ) -> Result<Vec<Candidate>> {
        let ranked: Vec<(Candidate, f64)> = self
            .trajectory_candidates(scope, query)?
            .into_iter()
            .filter_map(|c| rank(&IndexedCandidate::of(&c)).map(|r| (c, r)))
            .collect();
        Ok(within_margin(ranked, margin))
    }

    /// Every trajectory of `scope`, in the order they were first stored.
    fn trajectory_list(&self, scope: &Scope) -> Result<Vec<Trajectory>>;

    /// How many trajectories `scope` holds. The default lists them; a store on disk counts
    /// them without reading one into memory.
    fn trajectory_count(&self, scope: &Scope) -> Result<u64> {
        Ok(self.trajectory_list(scope)?.len() as u64)
    }

    /// Up to `limit` trajectories of `scope`, newest `recorded_at` first (undated ones last),
    /// ties by id descending. The default lists them all; a store on disk reads only those.
    fn trajectory_recent(&self, scope: &Scope, limit: usize) -> Result<Vec<Trajectory>> {
        let mut all = self.trajectory_list(scope)?;
        all.sort_by(|a, b| {
            b.recorded_at
                .cmp(&a.recorded_at)
                .then_with(|| b.id.cmp(&a.id))
        });
        all.truncate(limit);
        Ok(all)
    }

    /// [`trajectory_recent`](Self::trajectory_recent) a page at a time: up to `limit`
    /// trajectories from position `from` (0: the newest) in that order, with how many
    /// `scope` holds. The default reads the newest `from + limit`; a store on disk reads
    /// only the page.
    fn trajectory_recent_page(
        &self,
        scope: &Scope,
        from: u64,
        limit: usize,
    ) -> Result<Page<Trajectory>> {
        let total = self.trajectory_count(scope)?;
        let skip = usize::try_from(from).unwrap_or(usize::MAX);
        let newest = self.trajectory_recent(scope, skip.saturating_add(limit))?;
        Ok(Page {
            items: newest.into_iter().skip(skip).collect(),
            total,
        })
    }

    /// The newest `recorded_at` among `scope`'s trajectories; `None` when none is dated. The
    /// default reads the newest trajectory; a store on disk reads its index of ages.
    fn trajectory_newest(&self, scope: &Scope) -> Result<Option<Timestamp>> {
        Ok(self
            .trajectory_recent(scope, 1)?
            .into_iter()
            .next()
            .and_then(|t| t.recorded_at))
    }

    /// Removes trajectories recorded before `cutoff` (undated ones stay); returns how many.
    fn trajectory_prune(&self, scope: &Scope, cutoff: Timestamp) -> Result<usize>;

    /// Deletes the trajectory `id` of `scope` and its index entries; `false` when there was
    /// none. In the same transaction it appends the forget to the audit trail (memory
    /// `browser`, item `id`, action `forget`, by `by`), whether or not there was one.
    fn trajectory_forget(&self, scope: &Scope, id: &str, by: &Provenance) -> Result<bool>;

    /// Deletes every trajectory whose [`provenance`](Trajectory::provenance) `writer` matches
    /// (one without provenance never does), in `scope` or in every scope, with their index
    /// entries, in one atomic step that also adds one [`Action::Forget`](crate::evidence::Action) entry per trajectory
    /// (memory `browser`, item the trajectory id) to the audit trail, by `by`. Every run held
    /// for review that the writer wrote goes in the same step (item `held:ID`, detail
    /// [`FORGOTTEN_HELD_RUN`]), so no reviewer can approve it afterwards. Returns the
    /// `(scope, id)` of each trajectory, ordered, then of each held run, ordered. In the same
    /// step, every site the writer taught ([`SiteMemoryStore::site_observe`]) is rebuilt
    /// without the writer's observations ([`SiteLog::forget_by`]),
    /// each with one forget entry (item `site:KEY`, detail [`forgotten_observations`]). Fails
    /// on a filter naming nothing ([`Writer::check`]).
    fn trajectory_forget_by(
        &self,
        scope: Option<&Scope>,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<ForgotBy>;
}

/// What a forget of one writer's browser memory took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForgotBy {
    /// The `(scope, id)` of each trajectory forgotten, ordered, then of each held run,
    /// ordered.
    pub runs: Vec<(Scope, String)>,
    /// The `(scope, site)` of each site rebuilt without the writer's observations, ordered,
    /// with how many observations went.
    pub sites: Vec<(Scope, String, u64)>,
}

/// The `detail` of the audit entry of a site rebuilt without a writer's `n` observations.
pub fn forgotten_observations(n: u64) -> String {
    if n == 1 {
        "1 observation".to_owned()
    } else {
        format!("{n} observations")
    }
}

/// The `detail` of the audit entry of a trajectory forgotten by writer.
pub const FORGOTTEN_TRAJECTORY: &str = "trajectory";

/// The `detail` of the audit entry of a held run forgotten by writer.
pub const FORGOTTEN_HELD_RUN: &str = "held run";

/// The four kinds of app knowledge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FactKind {
    /// Wait durations, load times, typical turn counts.
    Timing,
    /// Reliable selectors for elements.
    Selector,
    /// Multi-step interaction patterns.
    Pattern,
    /// App-specific behaviour.
    Quirk,
}

impl FactKind {
    /// Every kind, in declaration order.
    pub const ALL: [FactKind; 4] = [
        FactKind::Timing,
        FactKind::Selector,
        FactKind::Pattern,
        FactKind::Quirk,
    ];

    /// The lowercase name used on disk (`"timing"`).
    pub fn as_str(self) -> &'static str {
        match self {
            FactKind::Timing => "timing",
            FactKind::Selector => "selector",
            FactKind::Pattern => "pattern",
            FactKind::Quirk => "quirk",
        }
    }

    /// The kind named `name`, if any.
    pub fn parse(name: &str) -> Option<FactKind> {
        FactKind::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

/// One learned fact about a site.
#[derive(Clone, Debug, PartialEq)]
pub struct Fact {
    /// What kind of fact.
    pub kind: FactKind,
    /// What it is about, e.g. `"page-load"`.
    pub key: String,
    /// What was observed.
    pub value: String,
    /// How sure the memory is, in `0.1..=1`.
    pub confidence: f64,
    /// How many observations confirmed it.
    pub sources: u32,
    /// When it was last observed, as ISO-8601 text.
    pub last_seen: String,
}

/// Applies one observation of `(kind, key, value)` to the facts of a site, in first-seen
/// order, and prunes facts that fall below [`PRUNE_BELOW`].
///
/// A fact with the same kind, key and value is confirmed: `c + (1 - c) * 0.2` (capped at 1)
/// and one more source. Otherwise every fact with the same kind and key is halved (it was
/// contradicted) and the new value is appended at [`NEW_FACT_CONFIDENCE`]. Matching on the
/// value first means a newer value that is observed again is confirmed, instead of halving
/// the older value once more and adding a duplicate.
pub fn observe_fact(facts: &mut Vec<Fact>, kind: FactKind, key: &str, value: &str, seen_at: &str) {
    let same = |f: &Fact| f.kind == kind && f.key == key;
    if let Some(fact) = facts.iter_mut().find(|f| same(f) && f.value == value) {
        fact.confidence = (fact.confidence + (1.0 - fact.confidence) * CONFIRMATION_GAIN).min(1.0);
        fact.sources = fact.sources.saturating_add(1);
        fact.last_seen = seen_at.to_owned();
    } else {
        for fact in facts.iter_mut().filter(|f| same(f)) {
            fact.confidence *= CONTRADICTION_DECAY;
        }
        facts.push(Fact {
            kind,
            key: key.to_owned(),
            value: value.to_owned(),
            confidence: NEW_FACT_CONFIDENCE,
            sources: 1,
            last_seen: seen_at.to_owned(),
        });
    }
    facts.retain(|f| f.confidence >= PRUNE_BELOW);
}

/// One run on a site, as the session history shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionEntry {
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
    /// When the run finished, as ISO-8601 text.
    pub timestamp: String,
    /// Turns the run took.
    pub turns_used: u32,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
}

/// Appends `session` to a site's log (kept in append order) and, past
/// [`MAX_SESSIONS_PER_SITE`], keeps only the newest by timestamp, newest first.
pub fn append_session(sessions: &mut Vec<SessionEntry>, session: SessionEntry) {
    sessions.push(session);
    keep_newest_sessions(sessions);
}

/// Keeps a site's session log within [`MAX_SESSIONS_PER_SITE`]: a longer log (an imported
/// file may hold any number, and keeps them until a run records a new session) keeps only the
/// newest by timestamp, newest first; a log within the bound is left as it is.
pub fn keep_newest_sessions(sessions: &mut Vec<SessionEntry>) {
    if sessions.len() > MAX_SESSIONS_PER_SITE {
        sessions.sort_by(|a, b| b.timestamp.cmp(&a.timestamp));
        sessions.truncate(MAX_SESSIONS_PER_SITE);
    }
}

/// The selector that last worked for one element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorEntry {
    /// The element's identity, `role "name"`.
    pub element: String,
    /// The last `@ref` that worked (refs change between page loads).
    pub last_ref: Option<String>,
    /// The last stable selector that worked (`[data-testid=…]`).
    pub stable_selector: Option<String>,
    /// How many times a selector for it worked.
    pub success_count: u32,
    /// When one last worked, as ISO-8601 text.
    pub last_used: String,
}

/// Records that `selector` worked for `element`, in insertion order of elements.
pub fn record_selector(
    entries: &mut Vec<SelectorEntry>,
    element: &str,
    selector: &str,
    used_at: &str,
) {
    let index = match entries.iter().position(|e| e.element == element) {
        Some(index) => {
            entries[index].success_count = entries[index].success_count.saturating_add(1);
            index
        }
        None => {
            entries.push(SelectorEntry {
                element: element.to_owned(),
                last_ref: None,
                stable_selector: None,
                success_count: 1,
                last_used: String::new(),
            });
            entries.len() - 1
        }
    };
    let entry = &mut entries[index];
    entry.last_used = used_at.to_owned();
    if selector.starts_with('@') {
        entry.last_ref = Some(selector.to_owned());
    } else {
        entry.stable_selector = Some(selector.to_owned());
    }
}

/// Everything a scope remembers about one site.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SiteMemory {
    /// The site key: the url's host with unsafe characters replaced (`shop.example.com_8443`).
    pub site: String,
    /// The label the knowledge was recorded under (often the start url).
    pub label: String,
    /// Facts in first-seen order.
    pub facts: Vec<Fact>,
    /// Sessions in log order (see [`append_session`]).
    pub sessions: Vec<SessionEntry>,
    /// When facts or sessions last changed, as ISO-8601 text.
    pub knowledge_updated_at: String,
    /// Selector cache entries in insertion order.
    pub selectors: Vec<SelectorEntry>,
    /// When the selector cache last changed, as ISO-8601 text.
    pub selectors_updated_at: String,
}

/// A fact observation, as a run reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactObservation {
    /// The kind.
    pub kind: FactKind,
    /// The key.
    pub key: String,
    /// The observed value.
    pub value: String,
}

/// What one finished run teaches a site's memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SiteObservation {
    /// The site key.
    pub site: String,
    /// The label to keep for the site when it is new.
    pub label: String,
    /// The session to append, if any.
    pub session: Option<SessionEntry>,
    /// Facts observed, applied in order with [`observe_fact`].
    pub facts: Vec<FactObservation>,
    /// `(element, selector)` pairs that worked, applied in order with [`record_selector`].
    pub selectors: Vec<(String, String)>,
    /// The time of the observation, as ISO-8601 text.
    pub observed_at: String,
}

impl SiteObservation {
    /// The observation carries nothing (no label, session, fact or selector): a run recording
    /// it leaves the site as it is, with no row and no log entry (a trajectory saved alone,
    /// as browser-agent-driver's `TrajectoryStore.save` saves one, and held for review).
    pub fn is_empty(&self) -> bool {
        self.label.is_empty()
            && self.session.is_none()
            && self.facts.is_empty()
            && self.selectors.is_empty()
    }
}

impl SiteMemory {
    /// Forgets the learned facts and, with `sessions`, the session history, as of `at`; the
    /// selectors stay.
    pub fn forget_knowledge(&mut self, sessions: bool, at: &str) {
        self.facts.clear();
        if sessions {
            self.sessions.clear();
        }
        at.clone_into(&mut self.knowledge_updated_at);
    }

    /// Applies `observation` with the shared rules.
    pub fn apply(&mut self, observation: &SiteObservation) {
        if self.label.is_empty() {
            self.label = observation.label.clone();
        }
        let now = &observation.observed_at;
        if let Some(session) = &observation.session {
            append_session(&mut self.sessions, session.clone());
            self.knowledge_updated_at = now.clone();
        }
        for fact in &observation.facts {
            observe_fact(&mut self.facts, fact.kind, &fact.key, &fact.value, now);
            self.knowledge_updated_at = now.clone();
        }
        for (element, selector) in &observation.selectors {
            record_selector(&mut self.selectors, element, selector, now);
            self.selectors_updated_at = now.clone();
        }
    }
}

/// Per-site memory of each scope.
pub trait SiteMemoryStore: Send + Sync {
    /// The memory of `site`, if any was stored.
    fn site_get(&self, scope: &Scope, site: &str) -> Result<Option<SiteMemory>>;

    /// Replaces everything stored about `memory.site` (used by import); the site's log
    /// ([`SiteLog`]) starts again from it.
    fn site_put(&self, scope: &Scope, memory: &SiteMemory) -> Result<()>;

    /// Applies one run's observation atomically; creates the site when new. In the same
    /// transaction it keeps the audit trail as for a run of writes by `by`
    /// ([`BrowserWrite::site`]), and appends the observation with that run's writer to the
    /// site's log ([`SiteLog`]), taking the site as it is
    /// as the log's base when the log is empty.
    fn site_observe(
        &self,
        scope: &Scope,
        observation: &SiteObservation,
        by: Option<&Provenance>,
    ) -> Result<()>;

    /// Forgets, in one atomic step, what `site` learned: its facts and, with `sessions`, its
    /// session history, stamping its knowledge time `at` ([`SiteMemory::forget_knowledge`]);
    /// its selectors and label stay. The site's log forgets them too
    /// ([`SiteLog::forget_knowledge`]). A store that erases what a forget deletes (SQLite)
    /// erases the forgotten facts and sessions too.
    /// False, creating nothing, when the site is unknown.
    fn site_forget_knowledge(
        &self,
        scope: &Scope,
        site: &str,
        sessions: bool,
        at: &str,
    ) -> Result<bool>;

    /// Every site key of `scope`, sorted.
    fn site_list(&self, scope: &Scope) -> Result<Vec<String>>;

    /// The log of `site` ([`SiteLog`]: its base and every
    /// entry since, with their writers), if it has one.
    fn site_log(&self, scope: &Scope, site: &str) -> Result<Option<SiteLog>>;
}

/// The state of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunStatus {
    /// Started and not finished.
    Running,
    /// Finished successfully.
    Completed,
    /// Finished without success.
    Failed,
}

impl RunStatus {
    /// The lowercase name used on disk.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
        }
    }

    /// The status named `name`, if any.
    pub fn parse(name: &str) -> Option<RunStatus> {
        [RunStatus::Running, RunStatus::Completed, RunStatus::Failed]
            .into_iter()
            .find(|status| status.as_str() == name)
    }
}

/// The manifest of one run, for orchestrators (list, resume, fork).
#[derive(Clone, Debug, PartialEq)]
pub struct RunManifest {
    /// Unique per execution.
    pub run_id: String,
    /// Groups related runs.
    pub session_id: Option<String>,
    /// The run this one resumed or forked.
    pub parent_run_id: Option<String>,
    /// Running, completed or failed.
    pub status: RunStatus,
    /// The goal.
    pub goal: String,
    /// The domain the run is filed under.
    pub domain: String,
    /// Where the run started.
    pub start_url: Option<String>,
    /// Last url seen while running.
    pub current_url: Option<String>,
    /// Where the run ended.
    pub final_url: Option<String>,
    /// When it started (ISO-8601 text).
    pub started_at: String,
    /// When it last changed (ISO-8601 text).
    pub updated_at: String,
    /// When it finished (ISO-8601 text).
    pub completed_at: Option<String>,
    /// Whether it succeeded, once finished.
    pub success: Option<bool>,
    /// A short summary.
    pub summary: Option<String>,
    /// Files the run produced.
    pub artifact_paths: Vec<String>,
    /// Turns taken so far.
    pub turn_count: u32,
    /// The result text of a success.
    pub result: Option<String>,
    /// The reason of a failure.
    pub reason: Option<String>,
}

impl RunManifest {
    /// This stored manifest completed by `finished`, the manifest a finished run reports, as
    /// the run registry's `complete` does: the state, success, turn count and completion and
    /// update times of `finished`, and its final url and summary where it has them; the rest
    /// (how the run started, where it was, its artifacts) as stored.
    pub fn completed_by(mut self, finished: &RunManifest) -> RunManifest {
        self.status = finished.status;
        self.success = finished.success;
        if finished.final_url.is_some() {
            self.final_url.clone_from(&finished.final_url);
        }
        if finished.summary.is_some() {
            self.summary.clone_from(&finished.summary);
        }
        self.turn_count = finished.turn_count;
        self.completed_at.clone_from(&finished.completed_at);
        self.updated_at.clone_from(&finished.updated_at);
        self
    }

    /// Whether `other` starts the same run: the same id, session, parent, goal, domain and
    /// start url (what a start sets; the rest is the run's progress).
    pub fn same_start(&self, other: &RunManifest) -> bool {
        self.run_id == other.run_id && start_differences(self, other).is_empty()
    }
}

/// The fields a start sets in which `a` and `b` differ, by name.
fn start_differences(a: &RunManifest, b: &RunManifest) -> Vec<&'static str> {
    [
        ("session_id", a.session_id != b.session_id),
        ("parent_run_id", a.parent_run_id != b.parent_run_id),
        ("goal", a.goal != b.goal),
        ("domain", a.domain != b.domain),
        ("start_url", a.start_url != b.start_url),
    ]
    .into_iter()
    .filter_map(|(field, differs)| differs.then_some(field))
    .collect()
}

/// What [`RunManifestStore::run_start`] answers when `stored` has the id of the starting run
/// `starting`: the stored manifest when the start is the same, else the conflict naming the
/// run and the fields that differ. Every store calls this inside its atomic step.
pub fn run_start_outcome(stored: RunManifest, starting: &RunManifest) -> Result<RunManifest> {
    if stored.same_start(starting) {
        return Ok(stored);
    }
    Err(run_already_started(&stored, starting))
}

/// The conflict of [`RunManifestStore::run_start`]: run `stored.run_id` is stored, started
/// otherwise than `starting`.
pub fn run_already_started(stored: &RunManifest, starting: &RunManifest) -> Error {
    Error::conflict(
        "run",
        stored.run_id.as_str(),
        format!(
            "already started ({}) with another {}; start a run with a new id",
            stored.status.as_str(),
            start_differences(stored, starting).join(", ")
        ),
    )
}

/// Filters of [`RunManifestStore::run_list`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Only runs filed under this domain.
    pub domain: Option<String>,
    /// Only runs of this session.
    pub session_id: Option<String>,
    /// Only runs in this state.
    pub status: Option<RunStatus>,
    /// At most this many (newest first); `None` or 0: all.
    pub limit: Option<usize>,
}

/// Run manifests of each scope.
pub trait RunManifestStore: Send + Sync {
    /// Stores `manifest`, replacing the one with the same run id. In the same transaction it
    /// keeps the audit trail as for a run of writes by `by` ([`BrowserWrite::run`]).
    fn run_put(&self, scope: &Scope, manifest: &RunManifest, by: Option<&Provenance>)
    -> Result<()>;

    /// Stores the manifest of a starting run, never replacing a stored one: when a run with
    /// its id is stored, nothing is written, and the call returns the stored manifest if it
    /// has the same start ([`RunManifest::same_start`]: a retry, whatever the run did since),
    /// else fails with [`Error::Conflict`] ([`run_already_started`]) naming the run. `None`:
    /// the manifest was stored. The check and the write are one atomic step, so of several
    /// concurrent starts of one run exactly one stores it. A start that stores the manifest
    /// keeps the audit trail as [`run_put`](Self::run_put) does.
    fn run_start(
        &self,
        scope: &Scope,
        manifest: &RunManifest,
        by: Option<&Provenance>,
    ) -> Result<Option<RunManifest>>;

    /// The manifest of `run_id`, if stored.
    fn run_get(&self, scope: &Scope, run_id: &str) -> Result<Option<RunManifest>>;

    /// Manifests passing `filter`, newest `updated_at` first (ties: run id), cut to the limit.
    fn run_list(&self, scope: &Scope, filter: &RunFilter) -> Result<Vec<RunManifest>>;

    /// Up to `limit` of `scope`'s manifests from position `from` (0: the first), in
    /// [`run_list`](Self::run_list)'s order without a filter, with how many `scope` holds.
    /// The default slices the whole list; a store on disk reads only the page.
    fn run_page(&self, scope: &Scope, from: u64, limit: usize) -> Result<Page<RunManifest>> {
        Ok(Page::at(
            self.run_list(scope, &RunFilter::default())?,
            from,
            limit,
        ))
    }

    /// Deletes the manifest of `run_id`; `false` when there was none. In the same
    /// transaction it appends the forget to the audit trail (memory `browser`, item
    /// `run:RUN_ID`, action `forget`, by `by`).
    fn run_forget(&self, scope: &Scope, run_id: &str, by: &Provenance) -> Result<bool>;
}

/// A suite result summary, kept as the JSON text it was written with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteSummary {
    /// Its id, e.g. `run_1795321223977_s51a`.
    pub id: String,
    /// The summary as JSON text.
    pub json: String,
}

/// Cross-domain hints and suite summaries of each scope.
pub trait HintStore: Send + Sync {
    /// The stored hints text and when it was written, if any.
    fn hints_get(&self, scope: &Scope) -> Result<Option<(String, String)>>;

    /// Replaces the hints text, written at `updated_at` (ISO-8601 text). In the same
    /// transaction it keeps the audit trail as for a run of writes by `by`
    /// ([`BrowserWrite::hints`]).
    fn hints_put(
        &self,
        scope: &Scope,
        hints: &str,
        updated_at: &str,
        by: Option<&Provenance>,
    ) -> Result<()>;

    /// Stores a suite summary, replacing one with the same id. In the same transaction it
    /// keeps the audit trail as for a run of writes by `by` ([`BrowserWrite::suite_summary`]).
    fn suite_summary_put(
        &self,
        scope: &Scope,
        summary: &SuiteSummary,
        by: Option<&Provenance>,
    ) -> Result<()>;

    /// Every suite summary, ordered by id.
    fn suite_summaries(&self, scope: &Scope) -> Result<Vec<SuiteSummary>>;
}

/// Everything one finished run leaves behind, recorded in one atomic call.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishedRun {
    /// The trajectory.
    pub trajectory: Trajectory,
    /// Its distinct goal tokens, for the index.
    pub tokens: Vec<String>,
    /// What the run teaches its site.
    pub site: SiteObservation,
    /// The run's final manifest, if the run was registered.
    pub manifest: Option<RunManifest>,
    /// Whether `manifest` completes the manifest stored under its run id, where one is, as
    /// [`RunManifest::completed_by`] does (else it is stored as it is), rather than replacing
    /// it. The store reads the stored one inside the run's own atomic step, so a change made
    /// to the run meanwhile is never lost.
    pub completes_stored: bool,
}

impl FinishedRun {
    /// Who recorded the run, for its `write` entry in the audit trail: the trajectory's
    /// writer, or an unknown one at the trajectory's time (the epoch when it has none).
    pub fn written_by(&self) -> Provenance {
        self.trajectory.provenance.clone().unwrap_or_else(|| {
            let at = self
                .trajectory
                .recorded_at
                .unwrap_or(crate::evidence::UNRECORDED);
            Provenance::new(crate::provenance::Source::Unknown, at)
        })
    }

    /// The detail of its `write` entry in the audit trail, alike in every store (its item is
    /// the trajectory's id): `site KEY`, or `site KEY, run RUN_ID` for a registered run.
    pub fn detail(&self) -> String {
        match &self.manifest {
            Some(manifest) => format!("site {}, run {}", self.site.site, manifest.run_id),
            None => format!("site {}", self.site.site),
        }
    }
}

/// A scope's browser memory as one value, to be stored at once: what an `.agent-memory/`
/// directory holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryImage {
    /// Trajectories, each with its distinct goal tokens for the index.
    pub trajectories: Vec<(Trajectory, Vec<String>)>,
    /// Everything known about each site.
    pub sites: Vec<SiteMemory>,
    /// The log each site of `sites` keeps, by site key, where the image carries one (an
    /// export of this memory does): stored as that site's log instead of starting a new one,
    /// so a forget by writer still takes back what each writer taught the site. A log whose
    /// [`SiteLog::rebuild`] is not its site, or whose site is not in `sites`, is refused.
    pub site_logs: BTreeMap<String, SiteLog>,
    /// Run manifests.
    pub runs: Vec<RunManifest>,
    /// The hints text and when it was written, if any.
    pub hints: Option<(String, String)>,
    /// Suite summaries.
    pub suite_summaries: Vec<SuiteSummary>,
}

impl MemoryImage {
    /// How many records the image holds (the hints count as one).
    pub fn len(&self) -> usize {
        self.trajectories.len()
            + self.sites.len()
            + self.runs.len()
            + usize::from(self.hints.is_some())
            + self.suite_summaries.len()
    }

    /// Whether the image holds no record at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Refuses an image whose site logs do not fit its sites: a log for no site of the
    /// image, or one whose rebuild is not its site, naming the site. Every store checks it
    /// before writing anything.
    pub fn check_site_logs(&self) -> Result<()> {
        if self.site_logs.is_empty() {
            return Ok(());
        }
        // Each key's last site: later records of an image win.
        let sites: BTreeMap<&str, &SiteMemory> =
            (self.sites.iter()).map(|s| (s.site.as_str(), s)).collect();
        for (key, log) in &self.site_logs {
            let fits = (sites.get(key.as_str()))
                .is_some_and(|site| log.base.site == *key && log.rebuild() == **site);
            if !fits {
                return Err(Error::invalid_input(
                    "site_logs",
                    format!(
                        "the log of site {} does not rebuild the image's site",
                        crate::excerpt::Excerpt::quoted(key)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Whether storing `site` (with the image's log for it, if any) over `stored_site` and
    /// `stored_log` changes anything: the site differs, or the image carries a log that
    /// differs from the stored one. A site the image carries no log for leaves the stored
    /// log be when the site is unchanged.
    pub fn site_changed<E>(
        &self,
        site: &SiteMemory,
        stored_site: Option<&SiteMemory>,
        stored_log: impl FnOnce() -> std::result::Result<Option<SiteLog>, E>,
    ) -> std::result::Result<bool, E> {
        if stored_site != Some(site) {
            return Ok(true);
        }
        match self.site_logs.get(&site.site) {
            None => Ok(false),
            Some(log) => Ok(stored_log()?.as_ref() != Some(log)),
        }
    }
}

/// What [`BrowserStore::store_image`] did with the records of an image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImageStored {
    /// Records written: new, or different from the stored record with the same key.
    pub written: usize,
    /// Records equal to the stored ones, left as they were.
    pub unchanged: usize,
}

/// The item of an image's store in the audit trail.
pub const IMAGE_ITEM: &str = "image";

impl ImageStored {
    /// The detail of its audit entry: `3 records written, 1 unchanged`.
    pub fn detail(&self) -> String {
        let noun = if self.written == 1 {
            "record"
        } else {
            "records"
        };
        format!(
            "{} {noun} written, {} unchanged",
            self.written, self.unchanged
        )
    }

    /// The writer of an image's audit entry: `by`, else unknown at `now`.
    pub fn writer(by: Option<&Provenance>, now: Timestamp) -> Provenance {
        by.cloned()
            .unwrap_or_else(|| Provenance::new(crate::provenance::Source::Unknown, now))
    }
}

/// All browser memory traits, plus recording a finished run atomically.
pub trait BrowserStore: TrajectoryStore + SiteMemoryStore + RunManifestStore + HintStore {
    /// Records the trajectory, the site observation and the manifest of one run, all or
    /// nothing, with its `write` entry in the audit trail: memory `browser`, the scope, the
    /// trajectory's id as the item, [`FinishedRun::written_by`] and [`FinishedRun::detail`].
    /// An [empty](SiteObservation::is_empty) observation leaves the site untouched.
    fn record_run(&self, scope: &Scope, run: &FinishedRun) -> Result<()>;

    /// Every scope that holds browser memory of any kind, ordered by name.
    fn browser_scopes(&self) -> Result<Vec<Scope>>;

    /// Deletes, in one atomic call, the browser memory of `scope`: all of it when `site` is
    /// `None`; otherwise the site memory of `site` (facts, sessions, selectors), the
    /// trajectories whose origin is one of `origins` (the caller knows which origins make
    /// up the site) and the runs filed under `site` as their domain. In the same transaction
    /// it appends the forget to the audit trail (memory `browser`, item `scope` or
    /// `site:KEY`, action `forget`, by `by`, the counts as [`Forgotten::detail`]).
    fn forget_browser(
        &self,
        scope: &Scope,
        site: Option<(&str, &[String])>,
        by: &Provenance,
    ) -> Result<Forgotten>;

    /// Stores every record of `image` in `scope` in one atomic step, all or nothing: each
    /// replaces the stored record with the same key (trajectory id, site, run id, suite
    /// summary id; the hints), as the single puts do, except that a record equal to the
    /// stored one is left as it is and counted as unchanged. Later records of the image win
    /// over earlier ones with the same key. Because the comparison is part of the atomic step,
    /// of several concurrent stores of one image exactly one reports it written. A site
    /// written with a log of the image ([`MemoryImage::site_logs`]) keeps that log; one
    /// written without starts its log again; a site equal to the stored one is unchanged
    /// unless the image carries a log that differs from the stored log
    /// ([`MemoryImage::site_changed`]). An image whose logs do not fit its sites is refused
    /// ([`MemoryImage::check_site_logs`]) before anything is written. A store that
    /// writes a record appends one `write` entry by `by` (unknown when `None`, at the store's
    /// time) to the audit trail in the same step: memory `browser`, item `image`
    /// ([`IMAGE_ITEM`]), detail [`ImageStored::detail`]; one that writes none appends nothing.
    fn store_image(
        &self,
        scope: &Scope,
        image: &MemoryImage,
        by: Option<&Provenance>,
    ) -> Result<ImageStored>;

    /// Holds `held` in `scope` for review, in one atomic step with its audit entry (memory
    /// `browser`, item `held:ID`, action `write`, by its writer, detail `held: REASONS`).
    /// A held run is in no context, match or view of the scope until it is approved.
    fn run_hold(&self, scope: &Scope, held: &HeldRun) -> Result<()>;

    /// Up to `limit` held runs, of `scope` or (with `None`) of every scope, oldest first,
    /// each with its scope.
    fn runs_held(&self, scope: Option<&Scope>, limit: usize) -> Result<Vec<(Scope, HeldRun)>>;

    /// The held run `id` of `scope`, exactly as held; `None` when none is held there. A
    /// point read: a reviewer's decision on one run does not list the queue.
    fn run_held(&self, scope: &Scope, id: &str) -> Result<Option<HeldRun>>;

    /// Decides on the held run `id` of `scope` in one atomic step: with `approve`, records
    /// its run as [`record_run`](Self::record_run) does, keeps its vouches as
    /// [`AuditStore::vouch`](crate::AuditStore::vouch) does (each with its `approve` entry)
    /// and audits `approve`; without, erases the held run and audits `reject`; both audited
    /// as `held:ID` by `by`. Answers `false`, changing nothing, when no run `id` is held
    /// there (another reviewer decided first). Checks every vouch ([`Vouch::check`]) before
    /// any write.
    fn run_decide(
        &self,
        scope: &Scope,
        id: &str,
        approve: Option<Approval<'_>>,
        by: &Provenance,
    ) -> Result<bool>;
}

/// A reviewer's approval of a held run ([`BrowserStore::run_decide`]): the run to record,
/// and the vouches for those of its texts the write screen flags (memory [`HeldRun::MEMORY`],
/// the scope as container), kept in the same step, so that a read that screens the scope
/// shows what the reviewer approved.
#[derive(Clone, Copy, Debug)]
pub struct Approval<'a> {
    /// The run, as it was held.
    pub run: &'a FinishedRun,
    /// The vouches for its flagged texts.
    pub vouches: &'a [Vouch<'a>],
}

/// A finished run the write screen held for review (policy `quarantine`): stored aside,
/// outside every context, match and view of its scope, until a reviewer approves it (then
/// recorded) or rejects it (then erased).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HeldRun {
    /// Its id in the scope.
    pub id: String,
    /// The site the run would teach (its site key).
    pub site: String,
    /// The run's goal, for the reviewer.
    pub goal: String,
    /// Why the screen held it, one reason each (no line breaks).
    pub reasons: Vec<String>,
    /// The run as its memory encodes it, opaque to the store.
    pub run: String,
    /// Who wrote it; `at` is when it was held.
    pub written_by: Provenance,
}

impl HeldRun {
    /// A held run; line breaks in a reason become spaces (a store keeps one per line).
    pub fn new(
        id: impl Into<String>,
        site: impl Into<String>,
        goal: impl Into<String>,
        reasons: Vec<String>,
        run: impl Into<String>,
        written_by: Provenance,
    ) -> HeldRun {
        HeldRun {
            id: id.into(),
            site: site.into(),
            goal: goal.into(),
            reasons: reasons
                .into_iter()
                .map(|r| r.replace(['\n', '\r'], " "))
                .collect(),
            run: run.into(),
            written_by,
        }
    }

    /// A held run as a store reads it back: its scope's name, its fields, its reasons as
    /// [`reasons_text`](Self::reasons_text) wrote them and its writer. A name that is no
    /// scope, or a missing writer, is reported as a corrupt `browser_held` row, alike in
    /// every store.
    pub fn from_stored(
        scope: &str,
        id: String,
        site: String,
        goal: String,
        reasons: &str,
        run: String,
        written_by: Option<Provenance>,
    ) -> Result<(Scope, HeldRun)> {
        let scope =
            Scope::new(scope).map_err(|e| Error::corrupt("browser_held.scope", e.to_string()))?;
        let written_by = written_by
            .ok_or_else(|| Error::corrupt("browser_held.source", "a held run has no writer"))?;
        let held = HeldRun {
            id,
            site,
            goal,
            reasons: HeldRun::reasons_from(reasons),
            run,
            written_by,
        };
        Ok((scope, held))
    }

    /// The error of a hold under an id already held, alike in every store.
    pub fn already_held(id: &str) -> Error {
        Error::conflict("held run", id, "a run with this id is already held")
    }

    /// Its reasons as a store keeps them: one per line.
    pub fn reasons_text(&self) -> String {
        self.reasons.join("\n")
    }

    /// Reasons kept as [`reasons_text`](Self::reasons_text) wrote them.
    pub fn reasons_from(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    /// The memory its audit entries and the vouches of its approval name.
    pub const MEMORY: &'static str = "browser";

    /// Its item in the audit trail: `held:ID`.
    pub fn item(id: &str) -> String {
        format!("held:{id}")
    }

    /// The detail of a decision's audit entry: `recorded as TRAJECTORY_ID` for an approval,
    /// `erased` for a rejection.
    pub fn decision_detail(approve: Option<Approval<'_>>) -> String {
        approve.map_or_else(
            || "erased".to_owned(),
            |approval| format!("recorded as {}", approval.run.trajectory.id),
        )
    }

    /// The detail of its hold's audit entry: `held: REASON; REASON`.
    pub fn detail(&self) -> String {
        format!("held: {}", self.reasons.join("; "))
    }
}

/// What a forget call deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Forgotten {
    /// Trajectories deleted.
    pub trajectories: u64,
    /// Site memories deleted (each with its facts, sessions and selectors).
    pub sites: u64,
    /// Run manifests deleted.
    pub runs: u64,
    /// Hint texts and suite summaries deleted.
    pub hints: u64,
    /// Runs held for review deleted (named in the detail only when there were some).
    pub held: u64,
}

impl Forgotten {
    /// The detail of its audit entry: `1 trajectory, 0 sites, 2 runs, 0 hints`.
    pub fn detail(&self) -> String {
        let mut detail = crate::evidence::forget_detail(&[
            (self.trajectories, "trajectory", "trajectories"),
            (self.sites, "site", "sites"),
            (self.runs, "run", "runs"),
            (self.hints, "hint", "hints"),
        ]);
        if self.held > 0 {
            detail.push_str(&format!(", {} held", self.held));
        }
        detail
    }

    /// The item of its audit entry: `scope` for the whole scope, `site:KEY` for a site.
    pub fn item(site: Option<&str>) -> String {
        site.map_or_else(|| "scope".to_owned(), |key| format!("site:{key}"))
    }
}

/// A write of the browser memory other than a stored trajectory or a recorded run (a
/// drop-in's site memory, run manifests, hints and suite summaries), as the audit trail
/// records it: one `write` entry per writer's run of writes to its item
/// ([`WriteRun`](crate::evidence::WriteRun)), so a page's fact written between two of the
/// agent's shows as a change of writer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrowserWrite {
    /// The item: `site:KEY`, `run:ID`, `hints` or `suite summaries`.
    pub item: String,
    /// What is written: `site memory`, `run manifest`, `hints` or `suite summary`.
    pub detail: &'static str,
}

impl BrowserWrite {
    /// An observation of site `key`'s memory (facts, selectors, a session).
    pub fn site(key: &str) -> Self {
        BrowserWrite {
            item: Forgotten::item(Some(key)),
            detail: "site memory",
        }
    }

    /// The manifest of run `run_id`, started or replaced.
    pub fn run(run_id: &str) -> Self {
        BrowserWrite {
            item: run_item(run_id),
            detail: "run manifest",
        }
    }

    /// The scope's hints text.
    pub fn hints() -> Self {
        BrowserWrite {
            item: "hints".to_owned(),
            detail: "hints",
        }
    }

    /// A suite summary; one item for all of a scope's summaries.
    pub fn suite_summary() -> Self {
        BrowserWrite {
            item: "suite summaries".to_owned(),
            detail: "suite summary",
        }
    }

    /// Its run of writes in `scope` by `by` at the writer's time, or at `now` when the writer
    /// is unknown.
    pub fn write_run<'a>(
        &'a self,
        scope: &'a Scope,
        by: Option<&Provenance>,
        now: Timestamp,
    ) -> crate::evidence::WriteRun<'a> {
        let at = by.map_or(now, |b| b.at);
        crate::evidence::WriteRun::browser(scope.as_str(), &self.item, self.detail, by, at)
    }
}

/// The item of a run's forget in the audit trail: `run:ID`.
pub fn run_item(run_id: &str) -> String {
    format!("run:{run_id}")
}
