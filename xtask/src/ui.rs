//! `cargo xtask ui`: the inspector page (`agent-memory ui`) driven in headless Chromium by
//! `crates/cli/tests/ui/inspector.test.mjs` (node's test runner and puppeteer-core, pinned by
//! the lockfile beside it), on a fresh database the demo fills. Screenshots of each view are
//! written to `target/ui-screenshots/`. With `CI=true` a missing Chromium, Node or npm is an
//! error, never a skip.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::{cargo, target_dir, workspace_root};

pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask ui` takes no arguments (got {extra:?})");
    }
    let root = workspace_root();
    let Some(chromium) = find_chromium() else {
        return missing("Chromium (Debian's `chromium` package, or CHROMIUM=/path/to/chrome)");
    };
    for tool in ["node", "npm"] {
        if !runs(Path::new(tool)) {
            return missing(tool);
        }
    }
    let started = Instant::now();
    cargo(
        &root,
        &["build", "-p", "agent-memory-cli", "--bin", "agent-memory"],
        &[],
    )?;
    let target = target_dir(&root);
    let bin = target.join("debug/agent-memory");
    let work = target.join("ui-test");
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("clear {}", work.display()))?;
    }
    std::fs::create_dir_all(&work).with_context(|| format!("create {}", work.display()))?;
    let tests = root.join("crates/cli/tests/ui");
    for file in ["package.json", "package-lock.json", "inspector.test.mjs"] {
        std::fs::copy(tests.join(file), work.join(file))
            .with_context(|| format!("copy {file} into {}", work.display()))?;
    }
    step(
        "installing puppeteer-core",
        Command::new("npm")
            .args([
                "ci",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ])
            .current_dir(&work),
    )?;
    // The database every view shows: the demo's four memories and a note.
    let db = work.join("demo.db");
    let agent = |args: &[&str]| -> Result<()> {
        step(
            &format!("agent-memory {}", args.join(" ")),
            Command::new(&bin)
                .arg("--db")
                .arg(&db)
                .args(args)
                .env_remove("AGENT_MEMORY_DB")
                .stdout(std::process::Stdio::null()),
        )
    };
    agent(&["demo"])?;
    agent(&[
        "notes",
        "create",
        "/memories/project.md",
        "--text",
        "Build: cargo build",
    ])?;
    let shots = target.join("ui-screenshots");
    step(
        "the inspector in headless Chromium",
        Command::new("node")
            .args(["--test", "--test-concurrency=1", "inspector.test.mjs"])
            .current_dir(&work)
            .env("AGENT_MEMORY_BIN", &bin)
            .env("DB", &db)
            .env("CHROMIUM", &chromium)
            .env("SCREENSHOTS", &shots),
    )?;
    println!(
        "inspector tested in {:.1}s; screenshots in {}",
        started.elapsed().as_secs_f64(),
        shots.display()
    );
    Ok(())
}

fn missing(what: &str) -> Result<()> {
    if in_ci() {
        bail!("{what} is not installed: CI tests the inspector page in a real browser");
    }
    println!("{what} not found: the inspector page was not tested (CI=true makes this an error)");
    Ok(())
}

/// `$CHROMIUM`, else the first Chromium or Chrome on the `PATH`, as an absolute path (the
/// browser's launcher does not search the `PATH`).
fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    let names = [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ];
    names
        .into_iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file() && runs(candidate))
}

fn step(what: &str, command: &mut Command) -> Result<()> {
    println!("--- {what}");
    let status = command
        .status()
        .with_context(|| format!("{what}: could not start {:?}", command.get_program()))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

fn runs(tool: &Path) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}
