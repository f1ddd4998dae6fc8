//! Finding the stored trajectory whose goal best matches a new goal: candidates from the
//! store's token index, Jaccard similarity, the origin, TTL and success filters, the strict
//! threshold, optional trace scoring, and the strict replay match.

use agent_memory_core::store::browser::{
    Candidate, CandidateQuery, IndexedCandidate, Trajectory, TrajectoryStore,
};
use agent_memory_core::{MILLIS_PER_DAY, Scope, Timestamp};

use crate::error::Result;
use crate::origin::origin_of;
use crate::tokens::{jaccard_from_counts, min_shared, reference_tokenize, tokenize};

/// Default similarity a match must exceed.
pub const DEFAULT_THRESHOLD: f64 = 0.5;
/// Default age after which trajectories stop matching.
pub const DEFAULT_TTL_DAYS: f64 = 30.0;
/// Similarity a replay match must reach.
pub const REPLAY_THRESHOLD: f64 = 0.85;

/// How matching works: the reference's defaults, or `with_*` to change one.
///
/// ```
/// use agent_memory_browser::MatchOptions;
///
/// let options = MatchOptions::new().with_scoring(true).with_ttl_days(7.0);
/// assert_eq!((options.threshold, options.ttl_days, options.scoring), (0.5, 7.0, true));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct MatchOptions {
    /// A match needs similarity strictly greater than this.
    pub threshold: f64,
    /// Trajectories older than this many days are not candidates.
    pub ttl_days: f64,
    /// Rank by the trace score instead of similarity alone.
    pub scoring: bool,
    /// A replay needs similarity at least this (default [`REPLAY_THRESHOLD`]).
    pub replay_threshold: f64,
}

impl Default for MatchOptions {
    fn default() -> Self {
        MatchOptions {
            threshold: DEFAULT_THRESHOLD,
            ttl_days: DEFAULT_TTL_DAYS,
            scoring: false,
            replay_threshold: REPLAY_THRESHOLD,
        }
    }
}

impl MatchOptions {
    /// The reference's: threshold 0.5, TTL 30 days, no trace scoring.
    pub fn new() -> Self {
        MatchOptions::default()
    }

    /// A match needs similarity strictly greater than `threshold`.
    pub fn with_threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }

    /// Trajectories older than `days` are not candidates.
    pub fn with_ttl_days(mut self, days: f64) -> Self {
        self.ttl_days = days;
        self
    }

    /// Rank by the trace score instead of similarity alone.
    pub fn with_scoring(mut self, scoring: bool) -> Self {
        self.scoring = scoring;
        self
    }

    /// A replay needs similarity at least `threshold` (the reference's `minSimilarity`).
    pub fn with_replay_threshold(mut self, threshold: f64) -> Self {
        self.replay_threshold = threshold;
        self
    }
}

/// A trajectory that matched, with its similarity and score.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Match {
    /// The trajectory.
    pub trajectory: Trajectory,
    /// Jaccard similarity of the goals.
    pub similarity: f64,
    /// The ranking score (the similarity when scoring is off).
    pub score: f64,
}

/// `0.6 * similarity + 0.2 * exp(-age_days / 14) + 0.1 / (1 + duration_ms / 60000)
/// + 0.1 * verified_steps / steps` (no steps: 0.5; undated: recency 0.5).
pub fn trace_score(similarity: f64, trajectory: &Trajectory, now: Timestamp) -> f64 {
    let verified = trajectory.steps.iter().filter(|s| s.verified).count();
    let known = IndexedCandidate {
        shared: 0,
        token_count: 0,
        recorded_at: trajectory.recorded_at,
    };
    let rank = recency_rank(similarity, &known, now);
    rank_to_score(
        rank,
        trajectory.duration_ms,
        trajectory.steps.len(),
        verified,
    )
}

/// The first two terms of the trace score, `0.6 * similarity + 0.2 * recency`: what the
/// token index knows. The whole score exceeds it by at most [`TRACE_MARGIN`].
fn recency_rank(similarity: f64, known: &IndexedCandidate, now: Timestamp) -> f64 {
    let recency = match known.recorded_at {
        // V8's Math.exp, so scores print as the reference prints them.
        Some(at) => crate::jsmath::exp(-(now.days_since(at).max(0.0)) / 14.0),
        None => 0.5,
    };
    similarity * 0.6 + recency * 0.2
}

/// The trace score from its first two terms ([`recency_rank`]), added in the order the
/// whole formula adds them, so the score is the same float either way.
fn rank_to_score(rank: f64, duration_ms: u64, steps: usize, verified: usize) -> f64 {
    let speed = 1.0 / (1.0 + duration_ms as f64 / 60_000.0);
    let verification = if steps == 0 {
        0.5
    } else {
        verified as f64 / steps as f64
    };
    rank + speed * 0.1 + verification * 0.1
}

/// How far the trace score can exceed [`recency_rank`]: speed and verification weigh 0.1
/// each and are at most 1 (with room for rounding), so a candidate ranked further below the
/// best rank cannot win and its row is not read.
const TRACE_MARGIN: f64 = 0.2 + 1e-9;

fn ttl_cutoff(now: Timestamp, ttl_days: f64) -> Timestamp {
    now.add_millis(-((ttl_days * MILLIS_PER_DAY as f64) as i64))
}

/// How a match ranks the candidates that pass its threshold: by similarity, or by the trace
/// score at `now`.
#[derive(Clone, Copy)]
enum Ranking {
    Similarity,
    Trace(Timestamp),
}

/// The best successful trajectory for `goal` (on `origin`'s site when given), or `None`.
///
/// Only candidates whose similarity is strictly above the threshold are considered; among
/// them the highest score wins, ties going to the older trajectory (by id when a time does
/// not parse, as the reference's directory order does). Candidates are ranked on what the
/// store's index holds; only the winner is read in full.
pub fn find_best_match<S: TrajectoryStore + ?Sized>(
    store: &S,
    scope: &Scope,
    goal: &str,
    origin: Option<&str>,
    options: &MatchOptions,
    now: Timestamp,
) -> Result<Option<Match>> {
    let tokens = tokenize(goal);
    // A query origin that does not parse filters nothing, as in the reference.
    let origin = origin.and_then(origin_of);
    let min = if tokens.is_empty() {
        Some(0)
    } else {
        min_shared(tokens.len(), options.threshold, true)
    };
    let Some(min) = min else { return Ok(None) };
    let query = CandidateQuery {
        tokens,
        origin,
        success_only: true,
        not_before: Some(ttl_cutoff(now, options.ttl_days)),
        min_shared: min,
    };
    let ranking = if options.scoring {
        Ranking::Trace(now)
    } else {
        Ranking::Similarity
    };
    best(
        store,
        scope,
        &query,
        ranking,
        |similarity| similarity > options.threshold,
        false,
    )
}

/// The trajectory to replay without a model: similarity at least 0.85 (or the options'
/// `replay_threshold`), at least one step,
/// exactly the same origin, successful and within the TTL. Highest similarity wins, ties
/// going to the older trajectory.
pub fn find_replayable<S: TrajectoryStore + ?Sized>(
    store: &S,
    scope: &Scope,
    goal: &str,
    origin: &str,
    options: &MatchOptions,
    now: Timestamp,
) -> Result<Option<Match>> {
    let Some(origin) = origin_of(origin) else {
        return Ok(None);
    };
    let tokens = tokenize(goal);
    let threshold = options.replay_threshold;
    // A threshold of zero or less admits trajectories that share no token with the goal.
    let min = if tokens.is_empty() || threshold <= 0.0 {
        Some(0)
    } else {
        min_shared(tokens.len(), threshold, false)
    };
    let Some(min) = min else { return Ok(None) };
    let query = CandidateQuery {
        tokens,
        origin: Some(origin),
        success_only: true,
        not_before: Some(ttl_cutoff(now, options.ttl_days)),
        min_shared: min,
    };
    best(
        store,
        scope,
        &query,
        Ranking::Similarity,
        |similarity| similarity >= threshold,
        true,
    )
}

/// The best of `query`'s candidates whose similarity `passes` (with at least one step when
/// `needs_steps`), ranked by `ranking`, read in full; ties go to the older one.
fn best<S: TrajectoryStore + ?Sized>(
    store: &S,
    scope: &Scope,
    query: &CandidateQuery,
    ranking: Ranking,
    passes: impl Fn(f64) -> bool,
    needs_steps: bool,
) -> Result<Option<Match>> {
    let query_tokens = query.tokens.len();
    let similarity = |shared, token_count| jaccard_from_counts(shared, query_tokens, token_count);
    let rank = |known: &IndexedCandidate| {
        let similarity = similarity(known.shared, known.token_count);
        passes(similarity).then(|| match ranking {
            Ranking::Similarity => similarity,
            Ranking::Trace(now) => recency_rank(similarity, known, now),
        })
    };
    // A rank that is the whole score keeps the candidates of the best rank; the trace score
    // can exceed its rank by TRACE_MARGIN. The index does not know which candidates have
    // steps, so needing them keeps every candidate that passes.
    let margin = match ranking {
        _ if needs_steps => f64::INFINITY,
        Ranking::Similarity => 0.0,
        Ranking::Trace(_) => TRACE_MARGIN,
    };
    loop {
        let candidates = store.trajectory_top_candidates(scope, query, &rank, margin)?;
        let mut winner: Option<(Candidate, f64, f64)> = None;
        for candidate in candidates {
            if needs_steps && candidate.steps == 0 {
                continue;
            }
            let known = IndexedCandidate::of(&candidate);
            let Some(rank) = rank(&known) else { continue };
            let score = match ranking {
                Ranking::Similarity => rank,
                Ranking::Trace(_) => rank_to_score(
                    rank,
                    candidate.duration_ms,
                    candidate.steps,
                    candidate.verified_steps,
                ),
            };
            let better = match &winner {
                None => true,
                Some((w, _, best)) => score > *best || (score == *best && older(&candidate, w)),
            };
            if better {
                let similarity = similarity(candidate.shared, candidate.token_count);
                winner = Some((candidate, similarity, score));
            }
        }
        let Some((candidate, similarity, score)) = winner else {
            return Ok(None);
        };
        if let Some(trajectory) = store.trajectory_get(scope, &candidate.id)? {
            return Ok(Some(Match {
                trajectory,
                similarity,
                score,
            }));
        }
        // Forgotten between the two reads: rank again what the store holds now.
    }
}

/// Whether `a` comes before `b` among equal scores: the one recorded first, by time and then
/// by id. When either time does not parse, the reference's directory order decides, which is
/// the order of the ids (its files are named by id and read in name order).
fn older(a: &Candidate, b: &Candidate) -> bool {
    match (a.recorded_at, b.recorded_at) {
        (Some(x), Some(y)) if x != y => x < y,
        _ => a.id < b.id,
    }
}

/// The reference's matching, as the baseline of benchmarks and divergence tests: it scans
/// every trajectory, tokenizes both goals each time with the ASCII-only rule, ranks by score
/// and checks only the top-ranked trajectory against the threshold.
pub fn linear_scan_match<'a>(
    trajectories: &'a [Trajectory],
    goal: &str,
    origin: Option<&str>,
    options: &MatchOptions,
    now: Timestamp,
) -> Option<&'a Trajectory> {
    let max_age = (options.ttl_days * MILLIS_PER_DAY as f64) as i64;
    let wanted = origin.and_then(origin_of);
    let mut scored: Vec<(&Trajectory, f64, f64)> = trajectories
        .iter()
        .filter(|t| t.success)
        .filter(|t| {
            t.recorded_at
                .is_none_or(|at| now.millis_since(at) <= max_age)
        })
        .filter(|t| wanted.is_none() || t.origin.as_deref().and_then(origin_of) == wanted)
        .map(|t| {
            let a = reference_tokenize(goal);
            let b = reference_tokenize(&t.goal);
            let shared = a.iter().filter(|w| b.contains(w)).count();
            let similarity = jaccard_from_counts(shared, a.len(), b.len());
            let score = if options.scoring {
                trace_score(similarity, t, now)
            } else {
                similarity
            };
            (t, score, similarity)
        })
        .collect();
    // A stable sort, as JavaScript's: equal scores keep directory order.
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    let (top, _, similarity) = scored.first()?;
    (*similarity > options.threshold).then_some(*top)
}
