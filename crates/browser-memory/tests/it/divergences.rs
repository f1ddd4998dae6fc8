//! The eight divergences from the reference, each shown on the reference's failure case.

use std::fs;

use agent_memory_browser::baseline::linear_scan_match;
use agent_memory_browser::{
    MatchOptions, MemoryRoot, RunOutcome, RunRegistry, RunStart, export_dir, find_best_match,
    import_dir, site_key, tokenize,
};
use agent_memory_core::store::browser::{
    CandidateQuery, FactKind, HintStore, SiteMemory, SiteMemoryStore, Trajectory, TrajectoryStep,
    TrajectoryStore, observe_fact,
};
use agent_memory_core::{InMemoryStore, MILLIS_PER_DAY, ManualClock, Scope, SeededIds, Timestamp};

use crate::support::store_of;

const NOW: Timestamp = Timestamp::from_millis(1_767_225_600_000);

fn trajectory(id: &str, goal: &str, age_days: i64, duration_ms: u64, verified: bool) -> Trajectory {
    let at = NOW.add_millis(-age_days * MILLIS_PER_DAY);
    Trajectory {
        id: id.to_owned(),
        goal: goal.to_owned(),
        origin: Some("https://site.test".to_owned()),
        steps: vec![TrajectoryStep {
            url: "https://site.test/".to_owned(),
            action: r#"{"action":"click","selector":"@a1"}"#.to_owned(),
            snapshot_hash: "1".to_owned(),
            verified,
            expected_effect: None,
        }],
        success: true,
        duration_ms,
        model: "m".to_owned(),
        timestamp: agent_memory_browser::compat::iso(at),
        recorded_at: Some(at),
        provenance: None,
    }
}

fn best(store: &InMemoryStore, goal: &str, options: &MatchOptions) -> Option<String> {
    find_best_match(
        store,
        &Scope::shared(),
        goal,
        Some("https://site.test/x"),
        options,
        NOW,
    )
    .expect("match")
    .map(|m| m.trajectory.id)
}

#[test]
fn d1_unicode_goals_are_tokenized_not_erased() {
    let stored = [trajectory("t1", "大阪 天気", 1, 1000, true)];
    let store = store_of(&stored);
    let options = MatchOptions::default();
    // The reference erases every CJK word: two empty token sets are "identical".
    let reference = linear_scan_match(
        &stored,
        "東京 予報",
        Some("https://site.test"),
        &options,
        NOW,
    );
    assert_eq!(reference.map(|t| t.id.as_str()), Some("t1"));
    assert_eq!(best(&store, "東京 予報", &options), None);
    assert_eq!(
        best(&store, "大阪 天気 明日", &options).as_deref(),
        Some("t1")
    );
}

#[test]
fn d2_scoring_returns_the_best_candidate_that_passes() {
    let stored = [
        // Similarity 3/6 = 0.5, not above the threshold, but fresh, fast and verified.
        trajectory("fresh", "alpha beta gamma epsilon zeta", 0, 0, true),
        // Similarity 4/5 = 0.8, old and slow.
        trajectory("older", "alpha beta gamma delta omega", 29, 600_000, false),
    ];
    let store = store_of(&stored);
    let options = MatchOptions::new().with_scoring(true);
    let goal = "alpha beta gamma delta";
    assert!(linear_scan_match(&stored, goal, None, &options, NOW).is_none());
    assert_eq!(best(&store, goal, &options).as_deref(), Some("older"));
}

#[test]
fn d3_confirming_a_newer_value_boosts_it() {
    let mut facts = Vec::new();
    for value in ["wait 3000ms", "wait 5000ms", "wait 5000ms"] {
        observe_fact(&mut facts, FactKind::Timing, "page-load", value, "t");
    }
    let got: Vec<(&str, f64, u32)> = facts
        .iter()
        .map(|f| (f.value.as_str(), f.confidence, f.sources))
        .collect();
    // The reference gives [3000 @ 0.15, 5000 @ 0.6, 5000 @ 0.6]: halved twice, duplicated.
    assert_eq!(
        got,
        [("wait 3000ms", 0.3, 1), ("wait 5000ms", 0.6 + 0.4 * 0.2, 2)]
    );
}

#[test]
fn d4_completing_without_a_final_url_keeps_the_earlier_one() {
    let store = InMemoryStore::new();
    let clock = ManualClock::new(NOW);
    let ids = SeededIds::new(1);
    let registry = RunRegistry::new(&store, Scope::shared(), &clock, &ids);
    let id = registry
        .start(RunStart::new("run_1", "g", "d"))
        .expect("start");
    registry
        .complete(
            &id,
            RunOutcome::new(false, 0).with_final_url("https://site.test/cart"),
        )
        .expect("first completion");
    let again = registry
        .complete(&id, RunOutcome::new(true, 3))
        .expect("second completion");
    assert_eq!(again.final_url.as_deref(), Some("https://site.test/cart"));
    assert_eq!(
        registry.resume(&id, None).expect("resume").start_url,
        "https://site.test/cart"
    );
}

#[test]
fn d5_nothing_leaves_the_memory_root() {
    // The reference names the directory of an unparsable url ".." by character replacement.
    assert_eq!(site_key(".."), "__");
    assert_eq!(site_key("/"), "_");
    let parent = tempfile::tempdir().expect("temp dir");
    let root = MemoryRoot::new(parent.path().join("memory"));
    for bad in [
        &["..", "x.json"][..],
        &["/etc", "passwd"],
        &["a/../../b"],
        &[""],
        &["."],
    ] {
        assert!(root.child(bad).is_err(), "{bad:?} must be refused");
        assert!(root.write_atomic(bad, "x").is_err());
    }
    // A site stored under a dangerous name is exported inside the root.
    let store = InMemoryStore::new();
    let scope = Scope::shared();
    store
        .site_put(
            &scope,
            &SiteMemory {
                site: "..".into(),
                label: "..".into(),
                knowledge_updated_at: "t".into(),
                ..SiteMemory::default()
            },
        )
        .expect("put");
    store
        .trajectory_put(
            &scope,
            &Trajectory {
                id: "../../escape".into(),
                ..trajectory("x", "go", 0, 1, true)
            },
            &[],
        )
        .expect("put");
    export_dir(&store, &scope, &root).expect("export");
    assert!(root.path().join("domains/__/knowledge.json").is_file());
    assert!(root.path().join("traj_.._.._escape.json").is_file());
    let outside: Vec<_> = fs::read_dir(parent.path()).expect("read").collect();
    assert_eq!(outside.len(), 1, "only the memory root is in its parent");
}

#[cfg(unix)]
#[test]
fn d5_symlinks_pointing_outside_are_refused() {
    let parent = tempfile::tempdir().expect("temp dir");
    let secret = parent.path().join("secret");
    fs::create_dir_all(&secret).expect("dir");
    fs::write(
        secret.join("hints.json"),
        r#"{"hints":"stolen","updatedAt":""}"#,
    )
    .expect("write");
    let root = parent.path().join("memory");
    fs::create_dir_all(root.join("domains")).expect("dir");
    std::os::unix::fs::symlink(&secret, root.join("domains/evil")).expect("symlink");
    let store = InMemoryStore::new();
    let err = import_dir(&store, &Scope::shared(), &MemoryRoot::new(&root), NOW, None)
        .expect_err("refused");
    assert!(err.to_string().contains("outside the memory root"), "{err}");
    // Writing through a symlinked directory is refused too, and nothing lands outside.
    fs::remove_file(root.join("domains/evil")).expect("unlink");
    std::os::unix::fs::symlink(&secret, root.join("agent-runs")).expect("symlink");
    let err = MemoryRoot::new(&root)
        .write_atomic(&["agent-runs", "r.json"], "{}")
        .expect_err("refused");
    assert!(err.to_string().contains("outside the memory root"), "{err}");
    assert!(!secret.join("r.json").exists());
    assert!(store.hints_get(&Scope::shared()).expect("hints").is_none());
}

#[test]
fn d6_match_cost_follows_the_trajectories_sharing_a_token() {
    let mut stored: Vec<Trajectory> = (0..2000)
        .map(|i| {
            trajectory(
                &format!("noise{i:04}"),
                &format!("unrelated{i} filler{i} words{i}"),
                1,
                1,
                true,
            )
        })
        .collect();
    stored.push(trajectory("hit", "book flight to lisbon", 1, 1, true));
    let store = store_of(&stored);
    let query = CandidateQuery {
        tokens: tokenize("book a flight to lisbon"),
        origin: None,
        success_only: true,
        not_before: None,
        min_shared: 1,
    };
    let candidates = store
        .trajectory_candidates(&Scope::shared(), &query)
        .expect("candidates");
    assert_eq!(
        candidates.len(),
        1,
        "only the trajectory sharing tokens is visited"
    );
    assert_eq!(
        best(&store, "book a flight to lisbon", &MatchOptions::default()).as_deref(),
        Some("hit")
    );
}

#[test]
fn d7_prune_removes_expired_trajectories() {
    let mut undated = trajectory("undated", "old goal words", 90, 1, true);
    undated.recorded_at = None;
    undated.timestamp = "not a date".into();
    let store = store_of(&[
        trajectory("expired", "old goal words", 31, 1, true),
        trajectory("fresh", "old goal words", 29, 1, true),
        undated,
    ]);
    let clock = ManualClock::new(NOW);
    let ids = SeededIds::new(1);
    let memory = agent_memory_browser::BrowserMemory::new(&store, Scope::shared(), &clock, &ids);
    assert_eq!(memory.prune().expect("prune"), 1);
    let left: Vec<String> = store
        .trajectory_list(&Scope::shared())
        .expect("list")
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(left, ["fresh", "undated"]);
}

#[test]
fn d8_exported_files_are_replaced_atomically() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = MemoryRoot::new(dir.path());
    root.write_atomic(&["hints.json"], "old").expect("write");
    root.write_atomic(&["hints.json"], "new").expect("replace");
    assert_eq!(
        fs::read_to_string(dir.path().join("hints.json")).expect("read"),
        "new"
    );
    // A write that cannot complete leaves the old file whole and no temporary file behind.
    fs::create_dir_all(dir.path().join("runs/x.json")).expect("dir in the way");
    assert!(root.write_atomic(&["runs", "x.json"], "data").is_err());
    let names: Vec<String> = fs::read_dir(dir.path().join("runs"))
        .expect("read")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["x.json"]);
    assert!(dir.path().join("runs/x.json").is_dir());
}

/// A batch puts every file in place at its commit (each still replaced whole), and one
/// dropped before its commit changes no file and leaves no temporary file behind.
#[test]
fn d8_a_batch_of_exported_files_lands_at_its_commit_or_not_at_all() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = MemoryRoot::new(dir.path());
    root.write_atomic(&["traj_0.json"], "old").expect("write");
    let names = |sub: &str| {
        let mut names: Vec<String> = fs::read_dir(dir.path().join(sub))
            .expect("read")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    {
        let mut batch = root.batch();
        batch.write(&["traj_0.json"], "new").expect("stage");
        batch.write(&["traj_1.json"], "one").expect("stage");
        assert_eq!(batch.len(), 2);
        assert_eq!(
            fs::read_to_string(dir.path().join("traj_0.json")).expect("read"),
            "old",
            "nothing is in place before the commit"
        );
    }
    assert_eq!(names(""), ["traj_0.json"], "a dropped batch leaves nothing");
    let mut batch = root.batch();
    batch.write(&["traj_0.json"], "new").expect("stage");
    batch.write(&["traj_1.json"], "one").expect("stage");
    batch
        .write(&["domains", "shop.test", "knowledge.json"], "{}")
        .expect("stage");
    batch.commit().expect("commit");
    assert!(batch.is_empty());
    assert_eq!(names(""), ["domains", "traj_0.json", "traj_1.json"]);
    assert_eq!(names("domains/shop.test"), ["knowledge.json"]);
    assert_eq!(
        fs::read_to_string(dir.path().join("traj_0.json")).expect("read"),
        "new"
    );
    // A file that cannot be put in place fails the commit, naming it, and no temporary
    // file stays behind.
    fs::create_dir_all(dir.path().join("runs/x.json")).expect("dir in the way");
    batch.write(&["runs", "y.json"], "y").expect("stage");
    batch.write(&["runs", "x.json"], "x").expect("stage");
    let error = batch.commit().expect_err("a directory is in the way");
    assert!(error.to_string().contains("x.json"), "{error}");
    assert!(
        names("runs").iter().all(|n| !n.contains(".tmp-")),
        "{:?}",
        names("runs")
    );
}
