//! `cargo xtask agent-cli`: `crates/cli/tests/agent_cli.py`, a whole agent written in Python
//! (standard library only) driving the command line, run against a fresh build.

use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{cargo, target_dir, workspace_root};

/// Builds `agent-memory` and runs the Python agent against it. Without a `python3` the step
/// fails under `CI=true` and is skipped, saying so, elsewhere.
pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask agent-cli` takes no arguments (got {extra:?})");
    }
    let root = workspace_root();
    let Some(python) = python3() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            bail!("python3 is needed to run crates/cli/tests/agent_cli.py, and CI=true");
        }
        println!("python3 not found: the Python agent was not run (under CI=true this fails)");
        return Ok(());
    };
    cargo(&root, &["build", "--quiet", "-p", "agent-memory-cli"], &[])?;
    let binary = target_dir(&root).join("debug/agent-memory");
    let status = Command::new(&python)
        .arg(root.join("crates/cli/tests/agent_cli.py"))
        .arg(&binary)
        .current_dir(&root)
        .status()
        .with_context(|| format!("could not start {python}"))?;
    if !status.success() {
        bail!("the Python agent failed ({status})");
    }
    Ok(())
}

/// `python3` if it runs.
fn python3() -> Option<String> {
    let found = Command::new("python3").arg("--version").output().ok()?;
    found.status.success().then(|| "python3".to_owned())
}
