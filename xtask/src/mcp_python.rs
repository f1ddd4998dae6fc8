//! `cargo xtask mcp-python`: the official MCP Python SDK (`mcp` from PyPI) drives
//! `agent-memory mcp` over stdio and streamable HTTP through a whole agent loop
//! (`crates/cli/tests/mcp/agent_loop.py`), in a virtual environment under
//! `target/mcp-python/` created on first use.
//!
//! Without Python the step says so and passes on a developer's machine; with `CI=true` a
//! missing Python (or a failed install) is an error, never a skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::{cargo, target_dir, workspace_root};

/// The SDK versions the script is written for: the 2.x line.
const REQUIREMENT: &str = "mcp>=2.3,<3";

pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask mcp-python` takes no arguments (got {extra:?})");
    }
    let root = workspace_root();
    let target = target_dir(&root);
    let Some(python) = find_python()? else {
        if in_ci() {
            bail!(
                "python3 is not installed: CI runs the MCP Python client test, install python3 (with venv)"
            );
        }
        println!(
            "python3 not found: the MCP Python client test is skipped (CI=true makes this an error)"
        );
        return Ok(());
    };
    cargo(
        &root,
        &["build", "-p", "agent-memory-cli", "--bin", "agent-memory"],
        &[],
    )?;
    let binary = target
        .join("debug")
        .join(format!("agent-memory{}", std::env::consts::EXE_SUFFIX));
    let venv = target.join("mcp-python");
    let venv_python = venv_python(&venv);
    if !venv_python.exists() {
        run_checked(
            Command::new(&python).args(["-m", "venv"]).arg(&venv),
            "creating the virtual environment",
        )?;
    }
    let has_sdk = Command::new(&venv_python)
        .args(["-c", "import mcp, httpx2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_sdk {
        run_checked(
            Command::new(&venv_python).args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                REQUIREMENT,
            ]),
            "installing the MCP Python SDK",
        )?;
    }
    let script = root.join("crates/cli/tests/mcp/agent_loop.py");
    // The tools the server must list, in order: the operation table's MCP operations, so the
    // script holds no list of its own.
    let tools: Vec<&str> = agent_memory_contract::operations::table()
        .iter()
        .filter(|op| op.mcp)
        .map(|op| op.name)
        .collect();
    run_checked(
        Command::new(&venv_python)
            .arg(&script)
            .arg(&binary)
            .arg(venv.join("work"))
            .env("AGENT_MEMORY_MCP_TOOLS", tools.join(","))
            .env_remove("AGENT_MEMORY_DB")
            .env_remove("AGENT_MEMORY_TOKEN"),
        "the MCP Python agent loop",
    )
}

pub(crate) fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// `$PYTHON`, else the first of `python3` and `python` that runs.
pub(crate) fn find_python() -> Result<Option<PathBuf>> {
    let candidates: Vec<PathBuf> = match std::env::var_os("PYTHON") {
        Some(given) if !given.is_empty() => vec![PathBuf::from(given)],
        _ => vec![PathBuf::from("python3"), PathBuf::from("python")],
    };
    for candidate in candidates {
        let runs = Command::new(&candidate)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if runs {
            return Ok(Some(candidate));
        }
    }
    Ok(None)
}

pub(crate) fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

pub(crate) fn run_checked(command: &mut Command, what: &str) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("{what}: could not start {:?}", command.get_program()))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}
