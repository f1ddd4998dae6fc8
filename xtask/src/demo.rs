//! `cargo xtask demo`: runs `agent-memory demo`, the command line's guided tour, on a fresh
//! database under `target/demo/`.

use std::path::Path;
use std::process::{Command, Stdio};

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
    if !has_demo(&root)? {
        bail!(
            "this build of agent-memory has no `demo` subcommand yet: it arrives with the feature crates"
        );
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

/// Whether the binary knows `demo`: `agent-memory demo --help` succeeds only if it does
/// (clap exits with 2 on an unknown subcommand). Building the binary happens here too.
fn has_demo(root: &Path) -> Result<bool> {
    cargo(
        root,
        &["build", "--quiet", "--package", "agent-memory-cli"],
        &[],
    )?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let probe = Command::new(&cargo)
        .args([
            "run",
            "--quiet",
            "--package",
            "agent-memory-cli",
            "--",
            "demo",
            "--help",
        ])
        .current_dir(root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("could not start `{cargo}`"))?;
    Ok(probe.success())
}
