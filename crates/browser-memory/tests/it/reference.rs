//! Byte-for-byte reproduction of the reference implementation: import its sample directory,
//! fix the clock, render the same context, resume and fork the same way, and export files
//! identical to its own.

use std::fs;
use std::path::Path;

use agent_memory_browser::compat::to_pretty;
use agent_memory_browser::{
    Budget, Layout, MatchOptions, MemoryRoot, Policy, RunRegistry, assemble, export_dir,
    find_best_match, import_dir, reference_trajectory, site_key,
};
use agent_memory_core::store::browser::{
    HintStore, RunFilter, RunManifestStore, SiteMemoryStore, TrajectoryStore,
};
use agent_memory_core::{InMemoryStore, ManualClock, Scope};

use crate::support::{REFERENCE_NOW, ScriptedIds, reference_dir};

const START_URL: &str = "https://shop.example.com:8443/search?q=x";
const GOAL: &str = "Search for smart watch reviews and find the top rated one";

fn imported() -> InMemoryStore {
    let store = InMemoryStore::new();
    let root = MemoryRoot::new(reference_dir().join("agent-memory"));
    let transfer =
        import_dir(&store, &Scope::shared(), &root, REFERENCE_NOW, None).expect("import");
    assert_eq!(
        (
            transfer.trajectories,
            transfer.sites,
            transfer.runs,
            transfer.suite_summaries
        ),
        (1, 1, 2, 1)
    );
    assert!(transfer.hints);
    store
}

fn rendered(name: &str) -> String {
    fs::read_to_string(reference_dir().join("rendered").join(name)).expect("rendered file")
}

#[test]
fn extra_context_matches_the_reference_byte_for_byte() {
    let store = imported();
    let scope = Scope::shared();
    let found = find_best_match(
        &store,
        &scope,
        GOAL,
        Some(START_URL),
        &MatchOptions::default(),
        REFERENCE_NOW,
    )
    .expect("match")
    .expect("the sample trajectory matches its own goal");
    let site = store
        .site_get(&scope, &site_key(START_URL))
        .expect("site")
        .expect("imported site");
    let context = assemble(Some(&found.trajectory), &site, None, Layout::Compatibility)
        .build(Budget::Chars(8000), Policy::StopAtOverflow);
    assert_eq!(context, rendered("extra-context.txt"));
    assert_eq!(
        reference_trajectory(&found.trajectory),
        rendered("reference-trajectory.txt")
    );
}

#[test]
fn resume_and_fork_match_the_reference_byte_for_byte() {
    let store = imported();
    let clock = ManualClock::new(REFERENCE_NOW);
    let ids = ScriptedIds::spelling("ezprgh");
    let registry = RunRegistry::new(&store, Scope::shared(), &clock, &ids);
    let failed = "run_1795321223969_owvog1";
    let resume = registry
        .resume(failed, Some("Retry adding Smart Watch X to the cart"))
        .expect("resume");
    let fork = registry
        .fork(failed, "Buy a cheaper watch instead")
        .expect("fork");
    #[derive(serde::Serialize)]
    struct Both {
        resume: agent_memory_browser::Scenario,
        fork: agent_memory_browser::Scenario,
    }
    let text = to_pretty(&Both { resume, fork }).expect("json");
    assert_eq!(text, rendered("resume-fork.json"));
    let lineage: Vec<String> = registry
        .lineage("proj_123_1773572400000")
        .expect("lineage")
        .into_iter()
        .map(|m| m.run_id)
        .collect();
    assert_eq!(lineage, ["proj_123_1773572400000", failed]);
}

fn files_below(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(
                    path.strip_prefix(root)
                        .expect("below root")
                        .display()
                        .to_string(),
                );
            }
        }
    }
    out.sort();
    out
}

#[test]
fn export_writes_the_reference_files_byte_for_byte() {
    let store = imported();
    let out = tempfile::tempdir().expect("temp dir");
    export_dir(&store, &Scope::shared(), &MemoryRoot::new(out.path())).expect("export");
    let source = reference_dir().join("agent-memory");
    let expected = files_below(&source);
    assert_eq!(files_below(out.path()), expected, "same files");
    for file in expected {
        let want = fs::read_to_string(source.join(&file)).expect("reference file");
        let got = fs::read_to_string(out.path().join(&file)).expect("exported file");
        assert_eq!(got, want, "{file}");
    }
}

#[test]
fn export_then_import_gives_the_same_memory() {
    let first = imported();
    let scope = Scope::shared();
    let out = tempfile::tempdir().expect("temp dir");
    export_dir(&first, &scope, &MemoryRoot::new(out.path())).expect("export");
    let second = InMemoryStore::new();
    import_dir(
        &second,
        &scope,
        &MemoryRoot::new(out.path()),
        REFERENCE_NOW,
        None,
    )
    .expect("re-import");
    assert_eq!(
        second.trajectory_list(&scope).expect("list"),
        first.trajectory_list(&scope).expect("list")
    );
    assert_eq!(
        second.site_list(&scope).expect("sites"),
        first.site_list(&scope).expect("sites")
    );
    for site in first.site_list(&scope).expect("sites") {
        assert_eq!(
            second.site_get(&scope, &site).expect("get"),
            first.site_get(&scope, &site).expect("get")
        );
    }
    let all = RunFilter::default();
    assert_eq!(
        second.run_list(&scope, &all).expect("runs"),
        first.run_list(&scope, &all).expect("runs")
    );
    assert_eq!(
        second.hints_get(&scope).expect("hints"),
        first.hints_get(&scope).expect("hints")
    );
    assert_eq!(
        second.suite_summaries(&scope).expect("suites"),
        first.suite_summaries(&scope).expect("suites")
    );
}
