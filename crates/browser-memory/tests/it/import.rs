//! Import is whole or nothing and says what it did not read: every file outside the layout is
//! reported with the reason (names that are not UTF-8 and the hostless `domains/*.json` among
//! them); a record the store refuses leaves nothing of the directory behind; a second import
//! of the same directory finds every record already there.

use std::fs;
use std::path::{Path, PathBuf};

use agent_memory_browser::{MemoryRoot, Skipped, import_dir};
use agent_memory_core::store::browser::{
    HintStore, RunManifestStore, SiteMemoryStore, TrajectoryStore,
};
use agent_memory_core::{InMemoryStore, Scope};
use agent_memory_sqlite::{MAX_VALUE_BYTES, SqliteStore};

use crate::support::{REFERENCE_NOW, reference_dir};

/// A copy of the reference's sample directory at `to`.
fn copy_reference(to: &Path) {
    fn copy(from: &Path, to: &Path) {
        fs::create_dir_all(to).expect("mkdir");
        for entry in fs::read_dir(from).expect("list") {
            let entry = entry.expect("entry");
            let target = to.join(entry.file_name());
            if entry.path().is_dir() {
                copy(&entry.path(), &target);
            } else {
                fs::copy(entry.path(), &target).expect("copy");
            }
        }
    }
    copy(&reference_dir().join("agent-memory"), to);
}

fn write(root: &Path, relative: &str, text: &str) -> PathBuf {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(&path, text).expect("write");
    path
}

#[test]
fn every_file_the_import_does_not_read_is_reported_with_the_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    copy_reference(root);
    let mut expected: Vec<(PathBuf, &str)> = vec![
        (
            write(root, "notes.txt", "mine"),
            "not part of the .agent-memory layout",
        ),
        (
            write(root, "config.json", "{}"),
            "a .json file at the root that is neither a trajectory (traj_*.json) nor hints.json",
        ),
        (
            write(root, ".traj_9.json.tmp-77-0", "{\"id\": \"tor"),
            "a temporary file left by an interrupted export",
        ),
        (
            write(root, "domains/knowledge.json", "{\"facts\": []}"),
            "the memory of a site without a host name, which browser-agent-driver files \
             directly under domains/; sites here are always named by their host",
        ),
        (
            write(root, "domains/shop.example.com_8443/README.md", "# notes"),
            "not part of the .agent-memory layout",
        ),
        (
            write(
                root,
                "domains/shop.example.com_8443/trajectories/draft.txt",
                "x",
            ),
            "not a .json file",
        ),
        (write(root, "agent-runs/index.md", "x"), "not a .json file"),
        (write(root, "runs/latest.log", "x"), "not a .json file"),
    ];
    let extra = root.join("screenshots");
    fs::create_dir(&extra).expect("mkdir");
    expected.push((extra, "not part of the .agent-memory layout"));
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9.test");
        let site = root.join("domains").join(name);
        write(&site, "knowledge.json", "{\"facts\": []}");
        expected.push((site, "its name is not UTF-8, so it cannot name a site"));
        // A .json file whose name is not UTF-8 is read: its content names the record.
        let manifest =
            fs::read(root.join("agent-runs/proj_123_1773572400000.json")).expect("manifest");
        fs::remove_file(root.join("agent-runs/proj_123_1773572400000.json")).expect("move");
        fs::write(
            root.join("agent-runs")
                .join(std::ffi::OsStr::from_bytes(b"proj_\xff.json")),
            manifest,
        )
        .expect("write");
    }
    expected.sort();
    let store = InMemoryStore::new();
    let transfer = import_dir(
        &store,
        &Scope::shared(),
        &MemoryRoot::new(root),
        REFERENCE_NOW,
        None,
    )
    .expect("import");
    let mut skipped: Vec<(PathBuf, &str)> = transfer
        .skipped
        .iter()
        .map(|s| (s.path.clone(), s.reason))
        .collect();
    skipped.sort();
    assert_eq!(skipped, expected);
    assert_eq!(
        (
            transfer.trajectories,
            transfer.sites,
            transfer.runs,
            transfer.suite_summaries
        ),
        (1, 1, 2, 1),
        "everything of the layout was read"
    );
    let line = Skipped {
        path: PathBuf::from("x/notes.txt"),
        reason: "not part of the .agent-memory layout",
    };
    assert_eq!(
        line.to_string(),
        "skipped x/notes.txt: not part of the .agent-memory layout"
    );
}

/// A goal over the store's 32 MiB limit in the last file read (a run manifest's goal, read
/// after every trajectory and site, under the 64 MiB file limit) fails the import, naming
/// the record, and nothing of the directory is stored.
#[test]
fn a_record_the_store_refuses_leaves_nothing_of_the_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("agent-memory");
    copy_reference(&root);
    let goal = "g".repeat(MAX_VALUE_BYTES as usize + 8 * 1024 * 1024);
    write(
        &root,
        "agent-runs/zz_last.json",
        &format!(
            "{{\"runId\": \"zz_last\", \"status\": \"running\", \"goal\": \"{goal}\", \
             \"startedAt\": \"s\", \"updatedAt\": \"u\"}}"
        ),
    );
    let store = SqliteStore::open(dir.path().join("memory.db")).expect("open");
    let scope = Scope::shared();
    let err = import_dir(&store, &scope, &MemoryRoot::new(&root), REFERENCE_NOW, None)
        .expect_err("a goal over the store's limit");
    assert!(
        err.to_string().starts_with(
            "invalid run manifest \"zz_last\": a value is larger than the store's limit"
        ),
        "{err}"
    );
    assert!(store.trajectory_list(&scope).expect("list").is_empty());
    assert!(store.site_list(&scope).expect("sites").is_empty());
    assert!(store.hints_get(&scope).expect("hints").is_none());
    assert!(
        store
            .run_list(&scope, &Default::default())
            .expect("runs")
            .is_empty()
    );
    assert_eq!(store.check().expect("check"), Vec::new());
    // Corrected, the same directory imports whole: nothing half-stored is in the way.
    fs::remove_file(root.join("agent-runs/zz_last.json")).expect("remove");
    let transfer =
        import_dir(&store, &scope, &MemoryRoot::new(&root), REFERENCE_NOW, None).expect("import");
    assert_eq!(transfer.unchanged, 0);
    assert_eq!(transfer.records(), 6);
}

#[test]
fn importing_the_same_directory_again_finds_every_record_already_there() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path().join("memory.db")).expect("open");
    let scope = Scope::shared();
    let root = MemoryRoot::new(reference_dir().join("agent-memory"));
    let first = import_dir(&store, &scope, &root, REFERENCE_NOW, None).expect("first");
    assert_eq!((first.records(), first.unchanged), (6, 0));
    let second = import_dir(&store, &scope, &root, REFERENCE_NOW, None).expect("second");
    assert_eq!((second.records(), second.unchanged), (6, 6));
    assert!(second.skipped.is_empty(), "{:?}", second.skipped);
}

/// A byte-order mark before a memory file's JSON is accepted, and not kept in what is stored.
#[test]
fn a_byte_order_mark_before_a_memory_file_is_accepted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    copy_reference(root);
    let mut files = vec![root.join("hints.json")];
    for folder in ["agent-runs", "runs", "domains/shop.example.com_8443"] {
        for entry in fs::read_dir(root.join(folder)).expect("list") {
            files.push(entry.expect("entry").path());
        }
    }
    for path in &files {
        let text = fs::read_to_string(path).expect("read");
        fs::write(path, format!("\u{feff}{text}")).expect("write");
    }
    let with_bom = InMemoryStore::new();
    let scope = Scope::shared();
    import_dir(
        &with_bom,
        &scope,
        &MemoryRoot::new(root),
        REFERENCE_NOW,
        None,
    )
    .expect("import");
    let plain = InMemoryStore::new();
    import_dir(
        &plain,
        &scope,
        &MemoryRoot::new(reference_dir().join("agent-memory")),
        REFERENCE_NOW,
        None,
    )
    .expect("import");
    assert_eq!(
        with_bom.suite_summaries(&scope).expect("summaries"),
        plain.suite_summaries(&scope).expect("summaries")
    );
    assert_eq!(
        with_bom.hints_get(&scope).expect("hints"),
        plain.hints_get(&scope).expect("hints")
    );
    assert_eq!(
        with_bom.site_list(&scope).expect("sites"),
        plain.site_list(&scope).expect("sites")
    );
}
