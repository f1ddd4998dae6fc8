//! The token index with its pending list: enough trajectories that postings are merged from
//! the pending list into the index several times, with some left pending, then replacements
//! and a prune. At every step SQLite finds exactly the candidates the in-memory store finds.

use agent_memory_core::store::browser::{CandidateQuery, Trajectory, TrajectoryStore};
use agent_memory_core::{InMemoryStore, Scope, SplitMix64, Timestamp};
use agent_memory_sqlite::SqliteStore;

const WORDS: [&str; 24] = [
    "add",
    "cart",
    "watch",
    "smart",
    "buy",
    "search",
    "reviews",
    "top",
    "rated",
    "cheap",
    "login",
    "account",
    "order",
    "track",
    "return",
    "refund",
    "gift",
    "card",
    "phone",
    "case",
    "ünïcode",
    "日本",
    "book",
    "flight",
];
const ORIGINS: [&str; 3] = ["https://a.test", "https://b.test", ""];

fn trajectory(i: u64, rng: &mut SplitMix64) -> (Trajectory, Vec<String>) {
    let words = 1 + rng.below(7);
    let mut tokens: Vec<String> = (0..words)
        .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize].to_owned())
        .collect();
    let goal = tokens.join(" ");
    tokens.sort();
    tokens.dedup();
    let origin = ORIGINS[rng.below(3) as usize];
    let t = Trajectory {
        id: format!("traj_{i}"),
        goal,
        origin: (!origin.is_empty()).then(|| origin.to_owned()),
        steps: Vec::new(),
        success: rng.below(4) != 0,
        duration_ms: 1,
        model: "m".to_owned(),
        timestamp: format!("t{i}"),
        recorded_at: (rng.below(10) != 0).then(|| Timestamp::from_millis(i as i64 * 1000)),
        provenance: None,
    };
    (t, tokens)
}

fn same_candidates(sqlite: &SqliteStore, memory: &InMemoryStore, rng: &mut SplitMix64, step: &str) {
    for scope in [Scope::shared(), Scope::new("other").expect("scope")] {
        for q in 0..40 {
            let mut tokens: Vec<String> = (0..1 + rng.below(4))
                .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize].to_owned())
                .collect();
            tokens.sort();
            tokens.dedup();
            let origin = ORIGINS[rng.below(3) as usize];
            let query = CandidateQuery {
                tokens,
                origin: (!origin.is_empty()).then(|| origin.to_owned()),
                success_only: rng.below(2) == 0,
                not_before: (rng.below(2) == 0)
                    .then(|| Timestamp::from_millis(rng.below(400) as i64 * 1000)),
                min_shared: 1 + rng.below(2) as usize,
            };
            let ours = sqlite
                .trajectory_candidates(&scope, &query)
                .expect("sqlite");
            let theirs = memory
                .trajectory_candidates(&scope, &query)
                .expect("memory");
            assert_eq!(ours, theirs, "{step}: query {q} {query:?} in {scope}");
        }
    }
}

#[test]
fn merged_and_pending_postings_match_like_the_in_memory_index() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sqlite = SqliteStore::open(dir.path().join("memory.db")).expect("open");
    let memory = InMemoryStore::new();
    let mut rng = SplitMix64::new(11);
    let scopes = [Scope::shared(), Scope::new("other").expect("scope")];
    // About 4 postings each: 400 trajectories pass the pending bound several times.
    for i in 0..400 {
        let (t, tokens) = trajectory(i, &mut rng);
        let scope = &scopes[(i % 5 == 0) as usize];
        sqlite
            .trajectory_put(scope, &t, &tokens)
            .expect("sqlite put");
        memory
            .trajectory_put(scope, &t, &tokens)
            .expect("memory put");
    }
    same_candidates(&sqlite, &memory, &mut rng, "after puts");
    // Replace old (merged) and recent (pending) trajectories with new goals.
    for i in [1, 2, 3, 50, 120, 395, 396, 398, 399] {
        let (t, tokens) = trajectory(i, &mut rng);
        let scope = &scopes[(i % 5 == 0) as usize];
        sqlite
            .trajectory_put(scope, &t, &tokens)
            .expect("sqlite replace");
        memory
            .trajectory_put(scope, &t, &tokens)
            .expect("memory replace");
    }
    same_candidates(&sqlite, &memory, &mut rng, "after replacements");
    let cutoff = Timestamp::from_millis(200_000);
    for scope in &scopes {
        assert_eq!(
            sqlite
                .trajectory_prune(scope, cutoff)
                .expect("sqlite prune"),
            memory
                .trajectory_prune(scope, cutoff)
                .expect("memory prune"),
            "pruned counts in {scope}"
        );
    }
    same_candidates(&sqlite, &memory, &mut rng, "after prune");
}

#[test]
fn a_query_of_more_than_255_tokens_counts_exactly() {
    let sqlite = SqliteStore::open_in_memory().expect("open");
    let memory = InMemoryStore::new();
    let scope = Scope::shared();
    let words: Vec<String> = (0..300).map(|i| format!("w{i:03}")).collect();
    let mut rng = SplitMix64::new(3);
    for (i, count) in [(0u64, 300usize), (1, 280), (2, 256), (3, 10)] {
        let (mut t, _) = trajectory(i, &mut rng);
        t.origin = None;
        t.success = true;
        t.recorded_at = None;
        let tokens = words[..count].to_vec();
        sqlite
            .trajectory_put(&scope, &t, &tokens)
            .expect("sqlite put");
        memory
            .trajectory_put(&scope, &t, &tokens)
            .expect("memory put");
    }
    for min_shared in [1, 255, 256, 281, 300] {
        let query = CandidateQuery {
            tokens: words.clone(),
            origin: None,
            success_only: false,
            not_before: None,
            min_shared,
        };
        let ours = memory
            .trajectory_candidates(&scope, &query)
            .expect("memory");
        assert_eq!(
            ours,
            sqlite
                .trajectory_candidates(&scope, &query)
                .expect("sqlite")
        );
        let shared: Vec<usize> = ours.iter().map(|c| c.shared).collect();
        let expected: Vec<usize> = [300, 280, 256, 10]
            .into_iter()
            .filter(|&s| s >= min_shared)
            .collect();
        assert_eq!(shared, expected, "min_shared {min_shared}");
    }
}
