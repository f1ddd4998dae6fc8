//! Any bytes as one file of an `.agent-memory/` directory (the first byte picks which: a
//! trajectory at the root or under a site, knowledge, selectors, a run manifest, hints or a
//! suite summary): the import is an error or succeeds, never a panic. An import that succeeds
//! exports, and the export imports and exports again to the very same files (export then
//! re-import gives the same memory).
#![no_main]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agent_memory_browser::{MemoryRoot, export_dir, import_dir};
use libfuzzer_sys::fuzz_target;
use agent_memory_core::{InMemoryStore, Scope, Timestamp};

/// Where the picked file goes, relative to the memory root.
const FILES: [&str; 7] = [
    "traj_1795321223952_eodewj.json",
    "domains/shop.example.com_8443/trajectories/traj_2.json",
    "domains/shop.example.com_8443/knowledge.json",
    "domains/shop.example.com_8443/selectors.json",
    "agent-runs/run_1795321223969_owvog1.json",
    "hints.json",
    "runs/run_1795321223977_s51a.json",
];

const NOW: i64 = 1_795_400_000_000;

fn scratch(name: &str) -> Option<PathBuf> {
    let dir = std::env::temp_dir()
        .canonicalize()
        .ok()?
        .join(format!("agent-memory-fuzz-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

/// Every file under `root`, by relative path.
fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read an exported directory") {
            let path = entry.expect("read a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read an exported file");
                out.insert(path.strip_prefix(root).unwrap_or(&path).to_path_buf(), bytes);
            }
        }
    }
    out
}

fn import(dir: &Path) -> agent_memory_browser::Result<InMemoryStore> {
    let store = InMemoryStore::new();
    import_dir(
        &store,
        &Scope::shared(),
        &MemoryRoot::new(dir),
        Timestamp::from_millis(NOW),
        None,
    )?;
    Ok(store)
}

fn export(store: &InMemoryStore, dir: &Path) {
    export_dir(store, &Scope::shared(), &MemoryRoot::new(dir))
        .unwrap_or_else(|e| panic!("an imported memory exports: {e}"));
}

fuzz_target!(|bytes: &[u8]| {
    let Some((&pick, content)) = bytes.split_first() else { return };
    let Some(input) = scratch("in") else { return };
    let file = input.join(FILES[usize::from(pick) % FILES.len()]);
    if let Some(parent) = file.parent() {
        if std::fs::create_dir_all(parent).is_err() {
            return;
        }
    }
    if std::fs::write(&file, content).is_err() {
        return;
    }
    if let Ok(first) = import(&input) {
        let (Some(one), Some(two)) = (scratch("one"), scratch("two")) else { return };
        export(&first, &one);
        let second = import(&one).unwrap_or_else(|e| panic!("an export imports again: {e}"));
        export(&second, &two);
        let (a, b) = (files(&one), files(&two));
        assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "the files differ");
        for (path, bytes) in &a {
            assert!(
                b[path] == *bytes,
                "{} changed on the way back:\n{}\n---\n{}",
                path.display(),
                String::from_utf8_lossy(bytes),
                String::from_utf8_lossy(&b[path])
            );
        }
    }
});
