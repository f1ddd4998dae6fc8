//! `cargo xtask python`: the Python package (`bindings/python`) tested as its users get it.
//!
//! 1. A tools environment under `target/python/tools` (created on first use) holds the
//!    pinned maturin, pytest and type-stub generator.
//! 2. maturin builds the abi3 wheel from the workspace's own target folder, so the
//!    dependencies the other steps compiled are reused; the `dev` profile keeps it from
//!    rebuilding the workspace in release (`--release` builds the optimized wheel instead).
//! 3. A fresh environment under `target/python/venv` gets the wheel (not editable) and
//!    pytest, and pytest runs `bindings/python/tests` there: on SQLite, and on PostgreSQL
//!    too when `AGENT_MEMORY_TEST_POSTGRES` names a server.
//!
//! `cargo xtask bench` measures W-traj through the package (`bench`) on a wheel built with
//! the release profile (not the bench profile: `cargo rustc --profile bench` builds a test
//! harness, not a loadable module) and the crate's `bench` feature; `cargo xtask python
//! --bench [--peers]` runs only that.
//!
//! Without Python the step says so and passes on a developer's machine; with `CI=true` a
//! missing Python is an error, never a skip. pytest collecting no test (its exit status 5)
//! is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::mcp_python::{find_python, in_ci, run_checked, venv_python};
use crate::{target_dir, workspace_root};

/// The tools, pinned so a run today and a run next year build and check alike.
pub(crate) const TOOLS: &[&str] = &[
    "maturin==1.16.0",
    "pytest==9.2.0",
    "datamodel-code-generator==0.89.0",
];

/// What the tests need in the package's own environment: pytest, the Anthropic SDK the
/// `anthropic` extra names (its memory-tool handler is tested against it), and popoto
/// 1.10.1, whose own extension points the drop-in's are compared with (without a server).
const TEST_REQUIREMENTS: &[&str] = &["pytest==9.2.0", "anthropic==2.14.0", "popoto==1.10.1"];

/// pytest's exit status when it collected no test.
const PYTEST_NO_TESTS: i32 = 5;

pub(crate) fn run(args: &[String]) -> Result<()> {
    let profile = match args {
        [] => "dev",
        [flag] if flag == "--release" => "release",
        [flag, rest @ ..] if flag == "--bench" => return bench_only(rest),
        [other, ..] => {
            bail!("`cargo xtask python` takes --release, or --bench [--peers] (got {other:?})")
        }
    };
    let root = workspace_root();
    let Some(python) = find_python()? else {
        if in_ci() {
            bail!(
                "python3 is not installed: CI tests the Python package, install python3 (with venv)"
            );
        }
        println!(
            "python3 not found: the Python package is not tested (CI=true makes this an error)"
        );
        return Ok(());
    };
    let tools = tools(&root, &python)?;
    let wheel = build_wheel(&root, &tools, profile, &[])?;
    let venv = fresh_venv(&root, &python, &wheel, "venv", TEST_REQUIREMENTS)?;
    pytest(&root, &venv)
}

/// `cargo xtask python --bench [--peers]`: only the Python package's W-traj at N = 1,000
/// (with `--peers`, next to popoto 1.10.1 on a Redis started for the run), its figures
/// printed and left in `target/bench-figures/python.jsonl`.
fn bench_only(args: &[String]) -> Result<()> {
    let peers = match args {
        [] => false,
        [flag] if flag == "--peers" => true,
        [other, ..] => bail!("`cargo xtask python --bench` takes only --peers (got {other:?})"),
    };
    let root = workspace_root();
    let figures = target_dir(&root).join("bench-figures");
    std::fs::create_dir_all(&figures).with_context(|| format!("creating {}", figures.display()))?;
    let _ = std::fs::remove_file(figures.join("python.jsonl"));
    if !peers {
        return bench(&root, "1000", &figures, None);
    }
    let redis = crate::peers::Redis::start()?;
    bench(&root, "1000", &figures, Some(&redis.url()))
}

/// W-traj through the Python package (`bindings/python/bench/w_traj.py`) at each of
/// `sizes`: through `agent_memory.popoto`, next to the same operations timed in Rust and,
/// with `redis`, next to popoto 1.10.1 on that server (its database is flushed), all in one
/// Python process; the figures are appended to `figures/python.jsonl`.
pub(crate) fn bench(root: &Path, sizes: &str, figures: &Path, redis: Option<&str>) -> Result<()> {
    let Some(python) = find_python()? else {
        println!("python3 not found: W-traj (Python) is not measured");
        return Ok(());
    };
    let tools = tools(root, &python)?;
    // The `bench` feature adds the Rust-side timer the comparison needs.
    let wheel = build_wheel(root, &tools, "release", &["bench"])?;
    let peer: &[&str] = if redis.is_some() {
        &["popoto==1.10.1"]
    } else {
        &[]
    };
    let venv = fresh_venv(root, &python, &wheel, "bench-venv", peer)?;
    let mut command = Command::new(&venv);
    command
        .arg(root.join("bindings/python/bench/w_traj.py"))
        .args(["--sizes", sizes, "--figures"])
        .arg(figures.join("python.jsonl"))
        .env_remove("POPOTO_BACKEND")
        .env_remove("REDIS_URL");
    if let Some(url) = redis {
        command.args(["--redis", url]);
    }
    run_checked(&mut command, "W-traj through the Python package")
}

/// The tools environment's Python, with the pinned tools installed.
fn tools(root: &Path, python: &Path) -> Result<PathBuf> {
    let venv = target_dir(root).join("python").join("tools");
    let tools_python = venv_python(&venv);
    if !tools_python.exists() {
        run_checked(
            Command::new(python).args(["-m", "venv"]).arg(&venv),
            "creating the tools environment",
        )?;
    }
    // A marker holding the pins skips pip when nothing changed since the last install.
    let marker = venv.join("installed.txt");
    let wanted = TOOLS.join("\n");
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
        run_checked(
            Command::new(&tools_python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(TOOLS),
            "installing maturin, pytest and datamodel-code-generator",
        )?;
        std::fs::write(&marker, &wanted)
            .with_context(|| format!("writing {}", marker.display()))?;
    }
    Ok(tools_python)
}

/// Builds the wheel with cargo's `profile` and the crate's `features` into an empty
/// `target/python/wheels` and returns its path.
fn build_wheel(
    root: &Path,
    tools_python: &Path,
    profile: &str,
    features: &[&str],
) -> Result<PathBuf> {
    let out = target_dir(root).join("python").join("wheels");
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("clearing {}", out.display()))?;
    }
    let maturin = tools_python.with_file_name("maturin");
    let mut build = Command::new(&maturin);
    build
        .args(["build", "--quiet", "--manifest-path"])
        .arg(root.join("bindings/python/Cargo.toml"))
        .arg("--out")
        .arg(&out)
        .arg("--interpreter")
        .arg(tools_python)
        .args(["--profile", profile])
        .current_dir(root);
    if !features.is_empty() {
        // `--features` replaces the features pyproject.toml names, so they are named again.
        let all = [&["pyo3/extension-module"], features].concat();
        build.args(["--features", &all.join(",")]);
    }
    let started = Instant::now();
    run_checked(&mut build, "building the wheel with maturin")?;
    println!(
        "python: built the {profile} wheel in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let wheels: Vec<PathBuf> = std::fs::read_dir(&out)
        .with_context(|| format!("reading {}", out.display()))?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .collect();
    match wheels.as_slice() {
        [wheel] => Ok(wheel.clone()),
        other => bail!(
            "maturin should leave one wheel in {}, found {}",
            out.display(),
            other.len()
        ),
    }
}

/// A new environment `target/python/<name>` with the wheel and `requirements` installed;
/// returns its Python.
fn fresh_venv(
    root: &Path,
    python: &Path,
    wheel: &Path,
    name: &str,
    requirements: &[&str],
) -> Result<PathBuf> {
    let venv = target_dir(root).join("python").join(name);
    if venv.exists() {
        std::fs::remove_dir_all(&venv).with_context(|| format!("clearing {}", venv.display()))?;
    }
    run_checked(
        Command::new(python).args(["-m", "venv"]).arg(&venv),
        "creating the test environment",
    )?;
    let venv_python = venv_python(&venv);
    run_checked(
        Command::new(&venv_python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(wheel)
            .args(requirements),
        "installing the wheel into a fresh environment",
    )?;
    Ok(venv_python)
}

/// pytest over `bindings/python/tests` in the test environment.
fn pytest(root: &Path, venv_python: &Path) -> Result<()> {
    let tests = root.join("bindings/python/tests");
    let status = Command::new(venv_python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(&tests)
        // The tests import the installed package, never the sources beside them.
        .current_dir(target_dir(root).join("python"))
        .env(
            "AGENT_MEMORY_PYTHON_TOOLS",
            target_dir(root).join("python/tools"),
        )
        .env("AGENT_MEMORY_WORKSPACE", root)
        .env_remove("AGENT_MEMORY_DB")
        .env_remove("AGENT_MEMORY_NOW")
        .status()
        .context("could not start pytest")?;
    match status.code() {
        Some(0) => Ok(()),
        Some(PYTEST_NO_TESTS) => bail!("pytest collected no tests in {}", tests.display()),
        _ => bail!("the Python package's tests failed ({status})"),
    }
}
