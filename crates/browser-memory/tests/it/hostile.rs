//! Hostile `.agent-memory/` directories: each import fails with an error naming the file and
//! what is wrong, and the store is left exactly as it was (every file is validated before
//! anything is stored).

use std::fs;
use std::path::Path;

use agent_memory_browser::{Error, MAX_FILE_BYTES, MemoryRoot, import_dir};
use agent_memory_core::store::browser::{HintStore, RunManifestStore, TrajectoryStore};
use agent_memory_core::{InMemoryStore, Scope, Timestamp};

const NOW: Timestamp = Timestamp::from_millis(1_767_225_600_000);

/// A memory root holding one good hints file, so a failed import has something it must not
/// have stored.
fn root_with_good_hints() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(
        dir.path().join("hints.json"),
        r#"{"hints":"be careful","updatedAt":"2026-01-01T00:00:00.000Z"}"#,
    )
    .expect("write hints");
    dir
}

/// Imports `root` into a fresh store and returns the error, checking nothing was stored.
fn refused(root: &Path) -> Error {
    let store = InMemoryStore::new();
    let scope = Scope::shared();
    let err = import_dir(&store, &scope, &MemoryRoot::new(root), NOW, None).expect_err("refused");
    assert!(
        store.hints_get(&scope).expect("hints").is_none(),
        "hints stored: {err}"
    );
    assert!(
        store.trajectory_list(&scope).expect("list").is_empty(),
        "{err}"
    );
    assert!(
        store
            .run_list(&scope, &Default::default())
            .expect("runs")
            .is_empty(),
        "{err}"
    );
    err
}

#[test]
fn invalid_utf8_in_a_trajectory_file_names_the_file() {
    let dir = root_with_good_hints();
    let file = dir.path().join("traj_1_a.json");
    fs::write(&file, b"{\"id\":\"traj_1_a\",\"goal\":\"caf\xe9\"}").expect("write");
    let err = refused(dir.path());
    let message = err.to_string();
    assert!(message.contains(&file.display().to_string()), "{message}");
    assert!(message.contains("UTF-8"), "{message}");
}

#[test]
fn malformed_json_names_file_line_and_column() {
    let dir = root_with_good_hints();
    fs::create_dir_all(dir.path().join("agent-runs")).expect("dir");
    let file = dir.path().join("agent-runs/run_1.json");
    fs::write(&file, "{\n  \"runId\": \"run_1\",\n  \"status\": \n}").expect("write");
    let err = refused(dir.path());
    let Error::Format {
        path, line, column, ..
    } = &err
    else {
        panic!("not a format error: {err}")
    };
    assert_eq!((path, *line, *column), (&file, 4, 1), "{err}");
}

#[test]
fn deeply_nested_json_is_an_error_not_a_stack_overflow() {
    let dir = root_with_good_hints();
    let file = dir.path().join("traj_2_b.json");
    let depth = 100_000;
    let text = format!(
        "{{\"id\":\"traj_2_b\",\"goal\":\"g\",\"steps\":[{{\"action\":{}{}}}]}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    fs::write(&file, text).expect("write");
    let err = refused(dir.path());
    let message = err.to_string();
    assert!(message.contains(&file.display().to_string()), "{message}");
    assert!(message.contains("recursion limit"), "{message}");
}

#[test]
fn a_deeply_nested_suite_summary_is_kept_as_it_is() {
    // A suite summary is stored as the JSON text it is; skipping over it never recurses.
    let dir = tempfile::tempdir().expect("temp dir");
    fs::create_dir_all(dir.path().join("runs")).expect("dir");
    let depth = 100_000;
    let text = format!(
        "{{\"id\":\"run_2\",\"results\":{}{}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    fs::write(dir.path().join("runs/run_2.json"), &text).expect("write");
    let store = InMemoryStore::new();
    let scope = Scope::shared();
    import_dir(&store, &scope, &MemoryRoot::new(dir.path()), NOW, None).expect("import");
    let summaries = store.suite_summaries(&scope).expect("summaries");
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0].json, text);
}

#[test]
fn a_file_over_the_size_limit_is_refused_before_it_is_read() {
    let dir = root_with_good_hints();
    let file = dir.path().join("traj_3_c.json");
    // A sparse file: the size is what matters, not the bytes on disk.
    let handle = fs::File::create(&file).expect("create");
    handle.set_len(MAX_FILE_BYTES + 1).expect("set_len");
    let err = refused(dir.path());
    let Error::TooLarge { path, bytes, limit } = &err else {
        panic!("not a size error: {err}")
    };
    assert_eq!(
        (path, *bytes, *limit),
        (&file, MAX_FILE_BYTES + 1, MAX_FILE_BYTES)
    );
}

#[cfg(unix)]
#[test]
fn a_file_symlinked_outside_the_root_is_refused() {
    let outside = tempfile::tempdir().expect("temp dir");
    let secret = outside.path().join("secret.json");
    fs::write(&secret, r#"{"hints":"stolen","updatedAt":""}"#).expect("write");
    let dir = tempfile::tempdir().expect("temp dir");
    fs::create_dir_all(dir.path().join("agent-runs")).expect("dir");
    std::os::unix::fs::symlink(&secret, dir.path().join("hints.json")).expect("symlink");
    let err = refused(dir.path());
    assert!(
        matches!(&err, Error::OutsideRoot { path, .. } if path.ends_with("hints.json")),
        "{err}"
    );
}

#[test]
fn a_missing_root_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("nope");
    let err = refused(&missing);
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );
}

/// Found by the `agent_memory_import` fuzz target: a root trajectory file whose id lacks the
/// `traj_` prefix imported, but its export was named after the id and the next import, which
/// reads only `traj_*.json` at the root, silently dropped it.
#[test]
fn a_trajectory_id_without_the_traj_prefix_survives_export_and_import() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/it/fixtures/fuzz/trajectory-id-without-prefix.json"),
        dir.path().join("traj_1795321223952_eodewj.json"),
    )
    .expect("copy fixture");
    let scope = Scope::shared();
    let first = InMemoryStore::new();
    import_dir(&first, &scope, &MemoryRoot::new(dir.path()), NOW, None).expect("import");
    let imported = first.trajectory_list(&scope).expect("list");
    assert_eq!(imported.len(), 1);
    assert_eq!(imported[0].id, "tra_9j715321223952_eodewj");
    let out = tempfile::tempdir().expect("temp dir");
    agent_memory_browser::export_dir(&first, &scope, &MemoryRoot::new(out.path())).expect("export");
    let second = InMemoryStore::new();
    import_dir(&second, &scope, &MemoryRoot::new(out.path()), NOW, None).expect("re-import");
    assert_eq!(second.trajectory_list(&scope).expect("list"), imported);
}
