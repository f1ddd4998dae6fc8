//! The same reference reproduction on SQLite, and recording runs through it.

use std::fs;

use agent_memory_browser::{
    BrowserMemory, Budget, Layout, MatchOptions, MemoryRoot, Policy, RunReport, Turn, assemble,
    export_dir, find_best_match, import_dir, site_key,
};
use agent_memory_core::store::browser::{SiteMemoryStore, TrajectoryStore};
use agent_memory_core::{ManualClock, Scope, SeededIds};
use agent_memory_sqlite::SqliteStore;

use crate::support::{REFERENCE_NOW, reference_dir};

#[test]
fn reference_context_is_reproduced_from_sqlite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path().join("memory.db")).expect("open");
    let scope = Scope::shared();
    import_dir(
        &store,
        &scope,
        &MemoryRoot::new(reference_dir().join("agent-memory")),
        REFERENCE_NOW,
        None,
    )
    .expect("import");
    let url = "https://shop.example.com:8443/search?q=x";
    let goal = "Search for smart watch reviews and find the top rated one";
    let found = find_best_match(
        &store,
        &scope,
        goal,
        Some(url),
        &MatchOptions::default(),
        REFERENCE_NOW,
    )
    .expect("match")
    .expect("found");
    let site = store
        .site_get(&scope, &site_key(url))
        .expect("site")
        .expect("imported");
    let context = assemble(Some(&found.trajectory), &site, None, Layout::Compatibility)
        .build(Budget::Chars(8000), Policy::StopAtOverflow);
    let expected =
        fs::read_to_string(reference_dir().join("rendered/extra-context.txt")).expect("rendered");
    assert_eq!(context, expected);
    let out = tempfile::tempdir().expect("temp dir");
    export_dir(&store, &scope, &MemoryRoot::new(out.path())).expect("export");
    let knowledge = "domains/shop.example.com_8443/knowledge.json";
    assert_eq!(
        fs::read_to_string(out.path().join(knowledge)).expect("exported"),
        fs::read_to_string(reference_dir().join("agent-memory").join(knowledge))
            .expect("reference")
    );
}

#[test]
fn recorded_runs_survive_reopening() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("memory.db");
    let clock = ManualClock::new(REFERENCE_NOW);
    let ids = SeededIds::new(4);
    let scope = Scope::new("run-1").expect("scope");
    {
        let store = SqliteStore::open(&path).expect("open");
        let memory = BrowserMemory::new(&store, scope.clone(), &clock, &ids);
        let turn = Turn {
            url: "https://shop.test/".into(),
            action: r#"{"action":"click","selector":"@b1"}"#.into(),
            duration_ms: 5,
            ..Turn::default()
        };
        memory
            .record_run(
                &RunReport::new("buy two watches", "https://shop.test/")
                    .with_turns(vec![turn.clone(), turn])
                    .with_success(true),
            )
            .expect("record");
    }
    let store = SqliteStore::open(&path).expect("reopen");
    assert_eq!(store.trajectory_list(&scope).expect("list").len(), 1);
    assert!(
        store
            .trajectory_list(&Scope::shared())
            .expect("list")
            .is_empty()
    );
    let memory = BrowserMemory::new(&store, scope, &clock, &ids);
    assert!(
        memory
            .find_match("buy two watches now", Some("https://shop.test/"))
            .expect("match")
            .is_some()
    );
}
