//! Matching ranks candidates on what the store's index holds and reads only the winner: on a
//! randomized corpus whose goals share common words, its answers equal those of the plain
//! rule (every trajectory read in full, filtered, scored and folded in id order), on the
//! in-memory store and on SQLite; and the corpus is one on which a scorer that drops a term
//! of the trace score, or breaks ties the other way, answers differently.

use agent_memory_browser::{
    MatchOptions, find_best_match, find_replayable, jaccard_from_counts, origin_of, tokenize,
    trace_score,
};
use agent_memory_core::store::browser::{Trajectory, TrajectoryStep, TrajectoryStore};
use agent_memory_core::{InMemoryStore, MILLIS_PER_DAY, Scope, SplitMix64, Timestamp};
use agent_memory_sqlite::SqliteStore;

const NOW: Timestamp = Timestamp::from_millis(1_767_225_600_000);
const VERBS: [&str; 6] = ["open", "click", "find", "buy", "check", "view"];
const SITES: [&str; 3] = ["https://a.test", "https://b.test:8443", "http://c.test"];

fn pick<'a>(rng: &mut SplitMix64, items: &[&'a str]) -> &'a str {
    items[rng.below(items.len() as u64) as usize]
}

/// A goal of common words around rarer ones, sometimes short, sometimes with no common word.
fn goal(rng: &mut SplitMix64) -> String {
    let noun = |rng: &mut SplitMix64| format!("w{}", rng.below(12));
    match rng.below(4) {
        0 => format!("{} the {}", pick(rng, &VERBS), noun(rng)),
        1 => format!("{} {} {}", pick(rng, &VERBS), noun(rng), noun(rng)),
        _ => format!(
            "{} the {} on the {}",
            pick(rng, &VERBS),
            noun(rng),
            noun(rng)
        ),
    }
}

/// A corpus where ties are common: times repeat (and some do not parse), durations and step
/// counts come from small sets, some trajectories have no steps, failed or expired ones are
/// among them.
fn corpus(rng: &mut SplitMix64, n: usize) -> Vec<Trajectory> {
    (0..n)
        .map(|i| {
            let steps = (0..rng.below(4))
                .map(|s| TrajectoryStep {
                    url: format!("https://a.test/p{s}"),
                    action: r#"{"action":"click","selector":"@e1"}"#.to_owned(),
                    snapshot_hash: "1".to_owned(),
                    verified: rng.below(3) > 0,
                    expected_effect: None,
                })
                .collect();
            let recorded_at = match rng.below(8) {
                0 => None,
                _ => Some(NOW.add_millis(-(rng.below(40) as i64 * MILLIS_PER_DAY / 4))),
            };
            Trajectory {
                id: format!("traj_{:04}", rng.below(10_000) * 1_000 + i as u64),
                goal: goal(rng),
                origin: (rng.below(5) > 0).then(|| pick(rng, &SITES).to_owned()),
                steps,
                success: rng.below(5) > 0,
                duration_ms: [0, 30_000, 60_000, 90_000][rng.below(4) as usize],
                model: "m".to_owned(),
                timestamp: recorded_at.map_or("not a date".to_owned(), |at| format!("{at:?}")),
                recorded_at,
                provenance: None,
            }
        })
        .collect()
}

/// The plain rule: every trajectory read in full; those that pass the filters and whose
/// similarity `passes`, folded in id order by `score`, ties to `older`.
fn plain<'a>(
    all: &'a [Trajectory],
    goal: &str,
    origin: Option<&str>,
    ttl_days: f64,
    passes: impl Fn(f64) -> bool,
    score: impl Fn(f64, &Trajectory) -> f64,
    older: impl Fn(&Trajectory, &Trajectory) -> bool,
) -> Option<(&'a str, f64, f64)> {
    let tokens = tokenize(goal);
    let wanted = origin.and_then(origin_of);
    let cutoff = NOW.add_millis(-((ttl_days * MILLIS_PER_DAY as f64) as i64));
    let mut sorted: Vec<&Trajectory> = all.iter().collect();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    let mut winner: Option<(&Trajectory, f64, f64)> = None;
    for t in sorted {
        let theirs = tokenize(&t.goal);
        let shared = tokens.iter().filter(|w| theirs.contains(w)).count();
        let similarity = jaccard_from_counts(shared, tokens.len(), theirs.len());
        if !t.success
            || t.recorded_at.is_some_and(|at| at < cutoff)
            || wanted
                .as_ref()
                .is_some_and(|o| t.origin.as_ref() != Some(o))
            || (shared == 0 && !tokens.is_empty())
            || !passes(similarity)
        {
            continue;
        }
        let score = score(similarity, t);
        let better = match &winner {
            None => true,
            Some((w, _, best)) => score > *best || (score == *best && older(t, w)),
        };
        if better {
            winner = Some((t, similarity, score));
        }
    }
    winner.map(|(t, similarity, score)| (t.id.as_str(), similarity, score))
}

fn older(a: &Trajectory, b: &Trajectory) -> bool {
    match (a.recorded_at, b.recorded_at) {
        (Some(x), Some(y)) if x != y => x < y,
        _ => a.id < b.id,
    }
}

/// A scorer the way the plain rule ranks (`scoring` on or off).
fn scorer(scoring: bool) -> impl Fn(f64, &Trajectory) -> f64 {
    move |similarity, t| {
        if scoring {
            trace_score(similarity, t, NOW)
        } else {
            similarity
        }
    }
}

struct Case {
    goal: String,
    origin: Option<&'static str>,
}

fn cases(rng: &mut SplitMix64, all: &[Trajectory]) -> Vec<Case> {
    (0..150)
        .map(|i| Case {
            // Every third query is a stored goal, so replays and exact matches are found.
            goal: if i % 3 == 0 {
                all[rng.below(all.len() as u64) as usize].goal.clone()
            } else {
                goal(rng)
            },
            origin: match rng.below(5) {
                0 => None,
                1 => Some("not a url"),
                _ => Some(pick(rng, &SITES)),
            },
        })
        .collect()
}

type Answer<'a> = Option<(&'a str, f64, f64)>;

/// A scorer of the plain rule, made for trace scoring on or off.
type Scorer = Box<dyn Fn(f64, &Trajectory) -> f64>;

/// Every answer of the engine on `store` against the plain rule's with `score` and `older`:
/// how many queries differ, and how many found a match.
fn differences<S: TrajectoryStore>(
    store: &S,
    all: &[Trajectory],
    cases: &[Case],
    score: &dyn Fn(bool) -> Scorer,
    older: &dyn Fn(&Trajectory, &Trajectory) -> bool,
) -> (usize, usize) {
    let scope = Scope::shared();
    let (mut differ, mut found) = (0, 0);
    for case in cases {
        for (threshold, scoring) in [(0.3, false), (0.3, true), (0.5, false), (0.5, true)] {
            let options = MatchOptions::new()
                .with_threshold(threshold)
                .with_scoring(scoring)
                .with_ttl_days(7.0);
            let ours = find_best_match(store, &scope, &case.goal, case.origin, &options, NOW)
                .expect("match");
            let ours: Answer<'_> = ours
                .as_ref()
                .map(|m| (m.trajectory.id.as_str(), m.similarity, m.score));
            let want = plain(
                all,
                &case.goal,
                case.origin,
                7.0,
                |s| s > threshold,
                score(scoring),
                older,
            );
            found += usize::from(want.is_some());
            differ += usize::from(ours != want);
        }
        let Some(origin) = case.origin.filter(|o| origin_of(o).is_some()) else {
            continue;
        };
        let options = MatchOptions::new()
            .with_replay_threshold(0.6)
            .with_ttl_days(7.0);
        let ours =
            find_replayable(store, &scope, &case.goal, origin, &options, NOW).expect("replayable");
        let ours: Answer<'_> = ours
            .as_ref()
            .map(|m| (m.trajectory.id.as_str(), m.similarity, m.score));
        let with_steps: Vec<Trajectory> = all
            .iter()
            .filter(|t| !t.steps.is_empty() && t.origin.as_deref() == origin_of(origin).as_deref())
            .cloned()
            .collect();
        let want = plain(
            &with_steps,
            &case.goal,
            Some(origin),
            7.0,
            |s| s >= 0.6,
            |s, _| s,
            older,
        );
        // The plain rule's ids point into `with_steps`: compare them as texts.
        let want = want.map(|(id, s, r)| (id.to_owned(), s, r));
        let ours = ours.map(|(id, s, r)| (id.to_owned(), s, r));
        found += usize::from(want.is_some());
        differ += usize::from(ours != want);
    }
    (differ, found)
}

fn stores(all: &[Trajectory]) -> (InMemoryStore, SqliteStore, tempfile::TempDir) {
    let memory = InMemoryStore::new();
    let dir = tempfile::tempdir().expect("temp dir");
    let sqlite = SqliteStore::open(dir.path().join("memory.db")).expect("open");
    for t in all {
        let tokens = tokenize(&t.goal);
        memory
            .trajectory_put(&Scope::shared(), t, &tokens)
            .expect("put");
        sqlite
            .trajectory_put(&Scope::shared(), t, &tokens)
            .expect("put");
    }
    (memory, sqlite, dir)
}

#[test]
fn ranking_on_the_index_answers_as_reading_every_candidate_in_full() {
    let mut rng = SplitMix64::new(47);
    let all = corpus(&mut rng, 300);
    let cases = cases(&mut rng, &all);
    let (memory, sqlite, _dir) = stores(&all);
    let score = |scoring| Box::new(scorer(scoring)) as Scorer;
    let on_memory = differences(&memory, &all, &cases, &score, &older);
    let on_sqlite = differences(&sqlite, &all, &cases, &score, &older);
    assert_eq!(on_memory.0, 0, "answers differ on the in-memory store");
    assert_eq!(on_sqlite.0, 0, "answers differ on SQLite");
    // The corpus finds matches often enough to say something.
    assert!(
        on_sqlite.1 > 200,
        "only {} queries found a match",
        on_sqlite.1
    );
}

#[test]
fn the_corpus_tells_a_broken_scorer_apart() {
    let mut rng = SplitMix64::new(47);
    let all = corpus(&mut rng, 300);
    let cases = cases(&mut rng, &all);
    let (_memory, sqlite, _dir) = stores(&all);
    // Each of these is what a ranking that skipped a term would answer.
    let no_verification = |scoring: bool| {
        Box::new(move |similarity: f64, t: &Trajectory| {
            if !scoring {
                return similarity;
            }
            let unverified = Trajectory {
                steps: Vec::new(),
                ..t.clone()
            };
            trace_score(similarity, &unverified, NOW)
        }) as Scorer
    };
    let no_speed = |scoring: bool| {
        Box::new(move |similarity: f64, t: &Trajectory| {
            if !scoring {
                return similarity;
            }
            let instant = Trajectory {
                duration_ms: 0,
                ..t.clone()
            };
            trace_score(similarity, &instant, NOW)
        }) as Scorer
    };
    let score = |scoring| Box::new(scorer(scoring)) as Scorer;
    let newer = |a: &Trajectory, b: &Trajectory| !older(a, b);
    for (name, differ) in [
        (
            "verification ignored",
            differences(&sqlite, &all, &cases, &no_verification, &older).0,
        ),
        (
            "speed ignored",
            differences(&sqlite, &all, &cases, &no_speed, &older).0,
        ),
        (
            "ties to the newer",
            differences(&sqlite, &all, &cases, &score, &newer).0,
        ),
    ] {
        assert!(
            differ > 0,
            "the corpus does not tell apart a scorer with {name}"
        );
    }
}
