//! The browser memory on PostgreSQL: the `BrowserStore` contract, concurrent writers of one
//! scope, texts PostgreSQL cannot hold, and orders that must not follow the server's locale.

use std::sync::{Arc, Barrier};

use agent_memory_core::Scope;
use agent_memory_core::store::browser::{
    BrowserStore, FactKind, FactObservation, FinishedRun, HintStore, ImageStored, MemoryImage,
    RunFilter, RunManifest, RunManifestStore, RunStatus, SiteMemory, SiteMemoryStore,
    SiteObservation, SuiteSummary, Trajectory, TrajectoryStep, TrajectoryStore,
};
use agent_memory_core::testkit::browser::{SUITE, cases};
use agent_memory_postgres::{PostgresOptions, PostgresStore};

use crate::contract::check_on_postgres;
use crate::support::{fresh_schema, fresh_store, server};

#[test]
fn browser_store_contract() {
    check_on_postgres(SUITE, &cases());
}

/// A store whose pool lets `threads` callers hold a connection at once.
fn store_for_threads(url: &str, threads: u32) -> Arc<PostgresStore> {
    let options = PostgresOptions::default()
        .with_schema(fresh_schema("b"))
        .with_pool_size(threads);
    Arc::new(PostgresStore::connect_with(url, &options).unwrap_or_else(|e| panic!("connect: {e}")))
}

fn trajectory(id: &str, goal: &str) -> Trajectory {
    Trajectory {
        id: id.to_owned(),
        goal: goal.to_owned(),
        origin: Some("https://a.test".to_owned()),
        steps: vec![TrajectoryStep {
            url: "https://a.test/".to_owned(),
            action: r#"{"action":"click","selector":"@b3"}"#.to_owned(),
            snapshot_hash: "17".to_owned(),
            verified: false,
            expected_effect: None,
        }],
        success: true,
        duration_ms: 1200,
        model: "m".to_owned(),
        timestamp: "2026-03-15T10:00:00.000Z".to_owned(),
        recorded_at: None,
        provenance: None,
    }
}

fn tokens(goal: &str) -> Vec<String> {
    let mut out: Vec<String> = goal.split_whitespace().map(str::to_owned).collect();
    out.sort();
    out.dedup();
    out
}

fn manifest(run_id: &str, updated_at: &str) -> RunManifest {
    RunManifest {
        run_id: run_id.to_owned(),
        session_id: None,
        parent_run_id: None,
        status: RunStatus::Completed,
        goal: "g".to_owned(),
        domain: "a.test".to_owned(),
        start_url: None,
        current_url: None,
        final_url: None,
        started_at: "s".to_owned(),
        updated_at: updated_at.to_owned(),
        completed_at: None,
        success: Some(true),
        summary: None,
        artifact_paths: Vec::new(),
        turn_count: 2,
        result: None,
        reason: None,
    }
}

fn image() -> MemoryImage {
    MemoryImage {
        trajectories: (0..20)
            .map(|i| {
                let goal = format!("buy item {i}");
                (trajectory(&format!("traj_{i}"), &goal), tokens(&goal))
            })
            .collect(),
        sites: vec![SiteMemory {
            site: "a.test".to_owned(),
            label: "https://a.test/".to_owned(),
            ..SiteMemory::default()
        }],
        site_logs: Default::default(),
        runs: (0..5).map(|i| manifest(&format!("run_{i}"), "u")).collect(),
        hints: Some(("FEEDBACK".to_owned(), "t".to_owned())),
        suite_summaries: vec![SuiteSummary {
            id: "run_9".to_owned(),
            json: "{}".to_owned(),
        }],
    }
}

/// Several threads store one image into an empty scope at once, in several rounds: each
/// round exactly one of them reports it written and every other finds it all unchanged.
#[test]
fn concurrent_stores_of_one_image_report_it_written_once() {
    let Some(url) = server() else { return };
    const THREADS: u32 = 6;
    let store = store_for_threads(&url, THREADS);
    let image = Arc::new(image());
    for round in 0..4 {
        let scope = Scope::new(format!("round-{round}")).expect("scope name");
        let barrier = Arc::new(Barrier::new(THREADS as usize));
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let (store, image, barrier, scope) = (
                    Arc::clone(&store),
                    Arc::clone(&image),
                    Arc::clone(&barrier),
                    scope.clone(),
                );
                std::thread::spawn(move || {
                    barrier.wait();
                    store.store_image(&scope, &image, None)
                })
            })
            .collect();
        let mut results: Vec<ImageStored> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .expect("thread")
                    .unwrap_or_else(|e| panic!("store_image: {e}"))
            })
            .collect();
        results.sort_by_key(|r| r.written);
        let all = image.len();
        let mut expected = vec![
            ImageStored {
                written: 0,
                unchanged: all
            };
            THREADS as usize - 1
        ];
        expected.push(ImageStored {
            written: all,
            unchanged: 0,
        });
        assert_eq!(results, expected, "round {round}");
        assert_eq!(store.trajectory_list(&scope).expect("list").len(), 20);
    }
}

/// Observations of one site from several threads at once are all applied: none is lost to
/// another's write-back.
#[test]
fn concurrent_observations_of_one_site_are_all_applied() {
    let Some(url) = server() else { return };
    const THREADS: u32 = 4;
    const EACH: u32 = 5;
    let store = store_for_threads(&url, THREADS);
    let scope = Scope::shared();
    let barrier = Arc::new(Barrier::new(THREADS as usize));
    let handles: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (store, barrier, scope) = (Arc::clone(&store), Arc::clone(&barrier), scope.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..EACH {
                    let observation = SiteObservation {
                        site: "a.test".to_owned(),
                        label: "l".to_owned(),
                        session: None,
                        facts: vec![FactObservation {
                            kind: FactKind::Timing,
                            key: "page-load".to_owned(),
                            value: "3s".to_owned(),
                        }],
                        selectors: vec![(format!("element {thread}"), format!("#s{i}"))],
                        observed_at: format!("t{thread}-{i}"),
                    };
                    store.site_observe(&scope, &observation, None)?;
                }
                Ok::<_, agent_memory_core::Error>(())
            })
        })
        .collect();
    for handle in handles {
        handle
            .join()
            .expect("thread")
            .unwrap_or_else(|e| panic!("site_observe: {e}"));
    }
    let site = store
        .site_get(&scope, "a.test")
        .expect("read")
        .expect("the site was created");
    let sources: Vec<u32> = site.facts.iter().map(|f| f.sources).collect();
    assert_eq!(sources, vec![THREADS * EACH], "every confirmation counted");
    let mut counts: Vec<(String, u32)> = site
        .selectors
        .iter()
        .map(|e| (e.element.clone(), e.success_count))
        .collect();
    counts.sort();
    let expected: Vec<(String, u32)> = (0..THREADS)
        .map(|t| (format!("element {t}"), EACH))
        .collect();
    assert_eq!(counts, expected);
}

fn invalid_field(error: agent_memory_core::Error) -> String {
    match error {
        agent_memory_core::Error::InvalidInput { field, reason } => {
            assert!(reason.contains("NUL"), "{reason}");
            field
        }
        other => panic!("expected invalid input, got {other}"),
    }
}

/// A NUL character anywhere in a run or an image is refused naming the record and field,
/// and nothing of the call is stored.
#[test]
fn a_nul_character_is_refused_naming_the_field_and_nothing_is_stored() {
    let Some(url) = server() else { return };
    let store = fresh_store(&url);
    let scope = Scope::shared();
    let mut bad = manifest("run_1", "u");
    bad.summary = Some("a\0b".to_owned());
    let run = FinishedRun {
        trajectory: trajectory("traj_1", "buy a watch"),
        tokens: tokens("buy a watch"),
        site: SiteObservation {
            site: "a.test".to_owned(),
            label: "l".to_owned(),
            ..SiteObservation::default()
        },
        manifest: Some(bad.clone()),
        completes_stored: false,
    };
    let field = invalid_field(store.record_run(&scope, &run).expect_err("refused"));
    assert_eq!(field, "run manifest \"run_1\" summary");
    assert_eq!(store.trajectory_get(&scope, "traj_1").expect("read"), None);
    assert_eq!(store.site_list(&scope).expect("list"), Vec::<String>::new());

    let mut image = image();
    image.runs.push(bad);
    let field = invalid_field(
        store
            .store_image(&scope, &image, None)
            .expect_err("refused"),
    );
    assert_eq!(field, "run manifest \"run_1\" summary");
    assert_eq!(store.browser_scopes().expect("scopes"), Vec::<Scope>::new());

    let mut step_effect = trajectory("traj_2", "g");
    step_effect.steps[0].expected_effect = Some("\0".to_owned());
    let field = invalid_field(
        store
            .trajectory_put(&scope, &step_effect, &tokens("g"))
            .expect_err("refused"),
    );
    assert_eq!(field, "trajectory \"traj_2\" step 1 expected_effect");
}

/// Sorted lists are in byte order (the order of Rust strings), not the server's locale order,
/// which would put `a` before `B`.
#[test]
fn sorted_lists_follow_byte_order() {
    let Some(url) = server() else { return };
    let store = fresh_store(&url);
    let scope = Scope::shared();
    let names = ["ä.test", "a.test", "B.test", "b.test"];
    for name in names {
        let site = SiteMemory {
            site: name.to_owned(),
            ..SiteMemory::default()
        };
        store.site_put(&scope, &site).expect("put site");
        store
            .suite_summary_put(
                &scope,
                &SuiteSummary {
                    id: name.to_owned(),
                    json: "{}".to_owned(),
                },
                None,
            )
            .expect("put summary");
        store
            .run_put(&scope, &manifest(name, "same"), None)
            .expect("put run");
    }
    let mut sorted: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    sorted.sort();
    assert_eq!(sorted, ["B.test", "a.test", "b.test", "ä.test"]);
    assert_eq!(store.site_list(&scope).expect("sites"), sorted);
    let ids: Vec<String> = store
        .suite_summaries(&scope)
        .expect("summaries")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, sorted);
    let runs: Vec<String> = store
        .run_list(&scope, &RunFilter::default())
        .expect("runs")
        .into_iter()
        .map(|m| m.run_id)
        .collect();
    assert_eq!(runs, sorted, "ties on updated_at are in run id order");
}
