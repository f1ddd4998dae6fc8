//! Who wrote what survives an export and an import: a trajectory file's `writtenBy` and a
//! site's `log.json`, so a forget by writer takes back from the imported memory what it
//! takes back from the exported one.

use std::fs;

use agent_memory_browser::{
    BrowserMemory, MemoryRoot, RunReport, SITE_LOG_FILE, Turn, export_dir, import_dir,
};
use agent_memory_core::evidence::Writer;
use agent_memory_core::store::browser::{BrowserStore, SiteMemoryStore, TrajectoryStore};
use agent_memory_core::{InMemoryStore, ManualClock, Provenance, Scope, SeededIds, Source};
use agent_memory_sqlite::SqliteStore;

use crate::support::REFERENCE_NOW;

const SITE: &str = "shop.test";

/// A run of session `session` on the shop, caching `selector` for the search box.
fn run(session: &str, selector: &str) -> RunReport {
    let turn = Turn {
        url: "https://shop.test/".into(),
        action: format!(r#"{{"action":"click","selector":"{selector}"}}"#),
        duration_ms: 5,
        ..Turn::default()
    };
    RunReport::new(format!("buy a watch in {session}"), "https://shop.test/")
        .with_turns(vec![turn])
        .with_success(true)
        .with_model("m")
        .with_session_id(session)
        .with_selectors(vec![("search box".to_owned(), selector.to_owned())])
}

/// A SQLite store in `dir` with three runs on the shop, the middle one by session `s-bad`.
fn recorded(dir: &std::path::Path) -> SqliteStore {
    let store = SqliteStore::open(dir.join("memory.db")).expect("open");
    let clock = ManualClock::new(REFERENCE_NOW);
    let ids = SeededIds::new(7);
    let memory = BrowserMemory::new(&store, Scope::shared(), &clock, &ids);
    for (session, selector) in [("s-good", "#q"), ("s-bad", "#evil"), ("s-good2", "#q")] {
        memory.record_run(&run(session, selector)).expect("record");
        clock.advance(60_000);
    }
    store
}

/// [`recorded`]'s store and its export.
struct Exported {
    _dir: tempfile::TempDir,
    first: SqliteStore,
    out: tempfile::TempDir,
    root: MemoryRoot,
}

fn exported() -> Exported {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = recorded(dir.path());
    let out = tempfile::tempdir().expect("temp dir");
    let root = MemoryRoot::new(out.path());
    export_dir(&first, &Scope::shared(), &root).expect("export");
    Exported {
        _dir: dir,
        first,
        out,
        root,
    }
}

/// The file `name` of the site's folder in the export.
fn site_file(out: &tempfile::TempDir, name: &str) -> std::path::PathBuf {
    out.path().join("domains").join(SITE).join(name)
}

fn forgetter() -> Provenance {
    Provenance::new(Source::User, REFERENCE_NOW)
}

#[test]
fn an_export_carries_each_writer_into_an_import() {
    let Exported {
        _dir,
        first,
        out,
        root,
    } = exported();
    let scope = Scope::shared();
    let log_path = site_file(&out, SITE_LOG_FILE);
    let log_text = fs::read_to_string(&log_path).expect("the site's log is exported");
    assert!(log_text.contains("\"s-bad\""), "{log_text}");
    let trajectories = first.trajectory_list(&scope).expect("list");
    assert_eq!(trajectories.len(), 3);
    let by = trajectories[0]
        .provenance
        .clone()
        .expect("a recorded run's writer");
    let file = fs::read_dir(out.path())
        .expect("read")
        .map(|e| e.expect("entry").path())
        .find(|p| p.to_string_lossy().contains("traj_"))
        .expect("a trajectory file");
    let text = fs::read_to_string(file).expect("read");
    assert!(text.contains("\"writtenBy\""), "{text}");

    let second_dir = tempfile::tempdir().expect("temp dir");
    let second = SqliteStore::open(second_dir.path().join("memory.db")).expect("open");
    let third = InMemoryStore::new();
    import_dir(&second, &scope, &root, REFERENCE_NOW, None).expect("import");
    let transfer = import_dir(&third, &scope, &root, REFERENCE_NOW, None).expect("import");
    assert!(transfer.skipped.is_empty(), "{:?}", transfer.skipped);
    for imported in [&second as &dyn SiteMemoryStore, &third] {
        assert_eq!(
            imported.site_log(&scope, SITE).expect("log"),
            first.site_log(&scope, SITE).expect("log"),
            "the site's log"
        );
    }
    assert_eq!(second.trajectory_list(&scope).expect("list"), trajectories);
    assert_eq!(third.trajectory_list(&scope).expect("list"), trajectories);
    assert!(
        trajectories
            .iter()
            .any(|t| t.provenance.as_ref() == Some(&by))
    );
    // Importing again changes nothing.
    let again = import_dir(&second, &scope, &root, REFERENCE_NOW, None).expect("import");
    assert_eq!(again.unchanged, 4, "three trajectories and the site");

    // The poisoned run's forget takes the same back from every copy.
    let before = first.site_get(&scope, SITE).expect("get");
    let bad = Writer::session("s-bad");
    let mut sites = Vec::new();
    for store in [&first as &dyn BrowserStore, &second, &third] {
        let gone = store
            .trajectory_forget_by(None, &bad, &forgetter())
            .expect("forget");
        assert_eq!(gone.runs.len(), 1);
        assert_eq!(gone.sites, vec![(scope.clone(), SITE.to_owned(), 1)]);
        sites.push(store.site_get(&scope, SITE).expect("get"));
    }
    assert_ne!(sites[0], before, "the forget changed the site");
    assert!(
        !format!("{:?}", sites[0]).contains("#evil"),
        "{:?}",
        sites[0]
    );
    assert_eq!(sites[1], sites[0]);
    assert_eq!(sites[2], sites[0]);
}

#[test]
fn a_log_the_site_files_no_longer_agree_with_is_skipped() {
    // The recorded store's folder may go: only the export is read.
    let Exported { out, root, .. } = exported();
    let scope = Scope::shared();
    // The reference's code wrote the site's knowledge since.
    let knowledge = site_file(&out, "knowledge.json");
    let text = fs::read_to_string(&knowledge).expect("read");
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("json");
    json["domain"] = "edited by hand".into();
    fs::write(&knowledge, serde_json::to_string(&json).expect("json")).expect("write");
    let second = InMemoryStore::new();
    let transfer = import_dir(&second, &scope, &root, REFERENCE_NOW, None).expect("import");
    let log_path = site_file(&out, SITE_LOG_FILE);
    let skipped: Vec<_> = transfer.skipped.iter().map(|s| &s.path).collect();
    assert_eq!(skipped, vec![&log_path]);
    assert!(transfer.skipped[0].reason.contains("no longer rebuilds"));
    let site = second
        .site_get(&scope, SITE)
        .expect("get")
        .expect("imported");
    assert_eq!(site.label, "edited by hand", "the files win");
    let gone = second
        .trajectory_forget_by(None, &Writer::session("s-bad"), &forgetter())
        .expect("forget");
    assert_eq!(gone.runs.len(), 1, "the trajectory keeps its writer");
    assert!(gone.sites.is_empty(), "the site is a new base");
}

#[test]
fn a_malformed_writer_fails_the_import_naming_the_field() {
    // The recorded store's folder may go: only the export is read.
    let Exported { out, root, .. } = exported();
    let scope = Scope::shared();
    let log_path = site_file(&out, SITE_LOG_FILE);
    let text = fs::read_to_string(&log_path).expect("read");
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("json");
    json["entries"][1]["writtenBy"]["source"] = "web:https://x".into();
    fs::write(&log_path, serde_json::to_string(&json).expect("json")).expect("write");
    let second = InMemoryStore::new();
    let err = import_dir(&second, &scope, &root, REFERENCE_NOW, None).expect_err("refused");
    let message = err.to_string();
    assert!(message.contains("entries[1].writtenBy.source"), "{message}");
    assert!(message.contains(SITE_LOG_FILE), "{message}");
    assert!(
        second.site_list(&scope).expect("list").is_empty(),
        "nothing stored"
    );

    json["entries"][1]["writtenBy"]["source"] = "page:https://x".into();
    json["entries"][1]["forgot"] = serde_json::json!({"sessions": false, "at": "t"});
    fs::write(&log_path, serde_json::to_string(&json).expect("json")).expect("write");
    let err = import_dir(&second, &scope, &root, REFERENCE_NOW, None).expect_err("refused");
    assert!(err.to_string().contains("entries[1]"), "{err}");
}
