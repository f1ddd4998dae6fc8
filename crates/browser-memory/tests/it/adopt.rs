//! Adopting the files one of browser-agent-driver's classes kept in its own folder: only the
//! records the scope lacks are stored, so what the store holds is never replaced by a file;
//! a file the reference's class would skip is listed instead of failing; an absent folder
//! adopts nothing.

use std::fs;
use std::path::Path;

use agent_memory_browser::{ClassFiles, MemoryRoot, adopt_files};
use agent_memory_core::store::browser::{RunManifestStore, SiteMemoryStore, TrajectoryStore};
use agent_memory_core::{InMemoryStore, Scope};

use crate::support::REFERENCE_NOW;

fn trajectory(id: &str, goal: &str) -> String {
    format!(
        r#"{{"id": "{id}", "goal": "{goal}", "origin": "https://bank.test", "success": true,
            "durationMs": 100, "model": "m", "timestamp": "2026-01-01T00:00:00.000Z",
            "steps": [{{"url": "https://bank.test/a", "action": {{"action": "click", "selector": "@a"}},
                        "snapshotHash": "h", "verified": true}}]}}"#
    )
}

fn adopt(
    store: &InMemoryStore,
    scope: &Scope,
    folder: &Path,
    files: ClassFiles<'_>,
) -> agent_memory_browser::Transfer {
    adopt_files(
        store,
        scope,
        &MemoryRoot::new(folder),
        files,
        REFERENCE_NOW,
        None,
    )
    .expect("adopt")
}

#[test]
fn a_trajectories_folder_is_adopted_once_and_the_store_stays_the_memory() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(dir.path().join("t1.json"), trajectory("t1", "pay the rent")).expect("write");
    fs::write(dir.path().join("broken.json"), "{ no").expect("write");
    let store = InMemoryStore::new();
    let scope = Scope::new("folder").expect("scope");
    let first = adopt(&store, &scope, dir.path(), ClassFiles::Trajectories);
    assert_eq!((first.trajectories, first.unchanged), (1, 0));
    assert_eq!(first.skipped.len(), 1, "{:?}", first.skipped);
    fs::write(
        dir.path().join("t1.json"),
        trajectory("t1", "something else"),
    )
    .expect("write");
    let again = adopt(&store, &scope, dir.path(), ClassFiles::Trajectories);
    assert_eq!((again.trajectories, again.unchanged), (0, 1));
    let held = store
        .trajectory_get(&scope, "t1")
        .expect("get")
        .expect("held");
    assert_eq!(held.goal, "pay the rent");
    let absent = adopt(
        &store,
        &scope,
        &dir.path().join("absent"),
        ClassFiles::Trajectories,
    );
    assert_eq!(absent.records(), 0);
}

#[test]
fn knowledge_and_selectors_of_one_site_join_and_runs_are_read_from_their_folder() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(
        dir.path().join("knowledge.json"),
        r#"{"domain": "bank.test", "facts": [
             {"type": "session", "key": "latest", "value": "paid", "confidence": 1, "sources": 1, "lastSeen": "2026-01-02T00:00:00Z"},
             {"type": "timing", "key": "login", "value": "3s", "confidence": 0.7, "sources": 2, "lastSeen": "2026-01-02T00:00:00Z"}],
           "updatedAt": "2026-01-02T00:00:00Z"}"#,
    )
    .expect("write");
    fs::write(
        dir.path().join("selectors.json"),
        r##"{"entries": {"button \"Pay\"": {"element": "button \"Pay\"", "stableSelector": "#pay", "successCount": 2, "lastUsed": "2026-01-02T00:00:00Z"}}, "updatedAt": "2026-01-02T00:00:00Z"}"##,
    )
    .expect("write");
    let store = InMemoryStore::new();
    let scope = Scope::new("site").expect("scope");
    let site = "bank.test";
    let knowledge = adopt(
        &store,
        &scope,
        dir.path(),
        ClassFiles::Knowledge {
            file: "knowledge.json",
            site,
        },
    );
    assert_eq!(knowledge.sites, 1);
    let selectors = adopt(
        &store,
        &scope,
        dir.path(),
        ClassFiles::Selectors {
            file: "selectors.json",
            site,
        },
    );
    assert_eq!(selectors.sites, 1, "{:?}", selectors.skipped);
    let memory = store.site_get(&scope, site).expect("get").expect("site");
    assert_eq!(
        memory.sessions.len(),
        1,
        "the old session fact became a session"
    );
    assert_eq!(memory.facts.len(), 1);
    assert_eq!(memory.selectors.len(), 1);

    let runs = dir.path().join("agent-runs");
    fs::create_dir_all(&runs).expect("mkdir");
    fs::write(
        runs.join("r1.json"),
        r#"{"runId": "r1", "status": "completed", "goal": "g", "domain": "bank.test",
            "startedAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:00Z",
            "artifactPaths": [], "turnCount": 1}"#,
    )
    .expect("write");
    assert_eq!(adopt(&store, &scope, &runs, ClassFiles::Runs).runs, 1);
    assert!(store.run_get(&scope, "r1").expect("get").is_some());
}
