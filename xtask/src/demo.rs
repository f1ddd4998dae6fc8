//! `cargo xtask demo`: runs `agent-memory demo`, the command line's guided tour, on a fresh
//! database under `target/demo/`.

use anyhow::{Context, Result, bail};

use crate::{cargo, remove_file_if_present, target_dir, workspace_root};

pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask demo` takes no arguments (got {extra:?})");
    }
    let root = workspace_root();
    let dir = target_dir(&root).join("demo");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let db = dir.join("memory.db");
    for file in ["memory.db", "memory.db-wal", "memory.db-shm"] {
        remove_file_if_present(&dir.join(file))?;
    }
    let db_arg = db.to_string_lossy().into_owned();
    cargo(
        &root,
        &[
            "run",
            "--quiet",
            "--package",
            "agent-memory-cli",
            "--",
            "--db",
            &db_arg,
            "demo",
        ],
        &[],
    )
}
