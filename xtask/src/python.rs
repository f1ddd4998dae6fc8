//! `cargo xtask python`: the Python package (`bindings/python`) tested as its users get it.
//!
//! 1. A tools environment under `target/python/tools` (created on first use) holds the
//!    pinned maturin, pytest and type-stub generator.
//! 2. maturin builds the abi3 wheel from the workspace's own target folder, so the
//!    dependencies the other steps compiled are reused; the `dev` profile keeps it from
//!    rebuilding the workspace in release (`--release` builds the optimized wheel instead).
//! 3. A fresh environment under `target/python/venv` gets the wheel (not editable) and
//!    pytest.
//! 4. pyright (from npm, pinned, under `target/python/pyright`) type-checks the package's
//!    Python, its stubs (as stubs, and again as Python modules, which pyright holds to the
//!    version it checks at) and every Python example of the README at Python 3.9, the oldest
//!    the wheel claims (`[tool.pyright]` of `bindings/python/pyproject.toml`), with the test
//!    environment's packages (the Anthropic SDK the handler's example imports); an error
//!    fails the step.
//! 5. pytest runs `bindings/python/tests` in the test environment: on SQLite, and on
//!    PostgreSQL too when `AGENT_MEMORY_TEST_POSTGRES` names a server. Among them the
//!    popoto drop-in's differential replay (`test_popoto_replay.py`) runs popoto 1.10.1,
//!    installed in that environment, on a redis-server from the machine that the test starts
//!    on a loopback port and stops (a few seeds, a bounded number of operations each), and
//!    the Anthropic SDK's own memory tool tests (`test_sdk_memory_tool.py`), from the pinned
//!    SDK's sdist, which is downloaded once into `target/python/sdk`, and the README's Python
//!    examples (`test_readme.py`), each saved as a script in one fresh folder and run there
//!    with the environment's Python in the README's order, then all again.
//!
//! `cargo xtask bench` measures W-traj through the package (`bench`) on a wheel built with
//! the release profile (not the bench profile: `cargo rustc --profile bench` builds a test
//! harness, not a loadable module) and the crate's `bench` feature; `cargo xtask python
//! --bench [--peers]` runs only that.
//!
//! Without Python the step says so and passes on a developer's machine, and so does the
//! type check without Node.js and npm, and the replay without redis-server; with `CI=true`
//! any of them missing is an error, never a skip. pytest collecting no test (its exit
//! status 5) is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::mcp_python::{find_python, in_ci, run_checked, venv_python};
use crate::{target_dir, workspace_root};

/// The tools, pinned so a run today and a run next year build and check alike.
/// datamodel-code-generator 0.45.0 is the last release that writes for Python 3.9, the
/// oldest the wheel claims; its output is formatted by black and isort, pinned with it.
pub(crate) const TOOLS: &[&str] = &[
    "maturin==1.16.0",
    "pytest==9.2.0",
    "datamodel-code-generator==0.45.0",
    "black==26.10.1",
    "isort==7.0.0",
];

/// The type checker, from npm (the package has no dependencies, so the pin is the whole of
/// it). 1.1.409 is the last release whose bundled typeshed still marks what Python 3.10 added
/// (`typing.TypeAlias`, `ParamSpec`, ...); later ones take it for granted at any version.
const PYRIGHT: &str = "pyright@1.1.409";

/// What the tests need in the package's own environment: pytest, the Anthropic SDK the
/// `anthropic` extra names (its memory-tool handler is tested against it), and popoto
/// 1.10.1, which the drop-in is compared with: its extension points without a server, and
/// every call in the differential replay, on Redis.
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
    type_check(&root, &venv)?;
    redis_server()?;
    pytest(&root, &venv)
}

/// Whether the machine has `redis-server`, which the drop-in's differential replay starts:
/// without it the replay skips on a developer's machine, saying so, and under `CI=true`
/// this fails the step before pytest runs (`.ci/run` installs Debian's package).
fn redis_server() -> Result<()> {
    let found = Command::new("redis-server")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Ok(());
    }
    if in_ci() {
        bail!(
            "redis-server is not installed: CI compares the popoto drop-in with popoto 1.10.1 on Redis, install Debian's redis-server"
        );
    }
    println!(
        "redis-server not found: the popoto drop-in is not compared with popoto (CI=true makes this an error)"
    );
    Ok(())
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
pub(crate) fn tools(root: &Path, python: &Path) -> Result<PathBuf> {
    pinned_venv(
        python,
        &target_dir(root).join("python").join("tools"),
        TOOLS,
        "maturin, pytest and datamodel-code-generator",
    )
}

/// The Python of the venv at `venv` (made with `python` when missing) with the `pins`
/// installed; `what` names them in messages. A marker holding the pins skips pip when
/// nothing changed since the last install.
pub(crate) fn pinned_venv(
    python: &Path,
    venv: &Path,
    pins: &[&str],
    what: &str,
) -> Result<PathBuf> {
    let venv_python = venv_python(venv);
    if !venv_python.exists() {
        run_checked(
            Command::new(python).args(["-m", "venv"]).arg(venv),
            &format!("creating the environment for {what}"),
        )?;
    }
    let marker = venv.join("installed.txt");
    let wanted = pins.join("\n");
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
        run_checked(
            Command::new(&venv_python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(pins),
            &format!("installing {what}"),
        )?;
        std::fs::write(&marker, &wanted)
            .with_context(|| format!("writing {}", marker.display()))?;
    }
    Ok(venv_python)
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

/// pyright over the package's Python and stubs (`bindings/python/python`), the same stubs
/// read as Python source, and the README's Python examples, at the Python version
/// `[tool.pyright]` names, resolving third-party imports in the environment of `venv_python`.
fn type_check(root: &Path, venv_python: &Path) -> Result<()> {
    let Some(pyright) = pyright(root)? else {
        return Ok(());
    };
    let examples = readme_examples(root)?;
    let stubs = stubs_as_source(root)?;
    let package = root.join("bindings/python");
    let started = Instant::now();
    run_checked(
        Command::new("node")
            .arg(pyright)
            .arg("--project")
            .arg(package.join("pyproject.toml"))
            .arg("--pythonpath")
            .arg(venv_python)
            .arg(package.join("python/agent_memory"))
            .arg(&examples)
            .arg(&stubs)
            .current_dir(&package),
        "type-checking the package and the README's Python examples with pyright",
    )?;
    println!(
        "python: pyright found no error in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// pyright's entry point, installed under `target/python/pyright` on first use; `None`,
/// having said so, when Node.js or npm is missing outside CI.
fn pyright(root: &Path) -> Result<Option<PathBuf>> {
    let runs = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if let Some(missing) = ["node", "npm"].into_iter().find(|tool| !runs(tool)) {
        if in_ci() {
            bail!(
                "{missing} is not installed: CI type-checks the Python package with pyright, install Node.js and npm"
            );
        }
        println!(
            "{missing} not found: the Python package was not type-checked (CI=true makes this an error)"
        );
        return Ok(None);
    }
    let folder = target_dir(root).join("python").join("pyright");
    let entry = folder.join("node_modules/pyright/index.js");
    // A marker holding the pin skips npm when nothing changed since the last install.
    let marker = folder.join("installed.txt");
    if !entry.exists() || std::fs::read_to_string(&marker).ok().as_deref() != Some(PYRIGHT) {
        std::fs::create_dir_all(&folder)
            .with_context(|| format!("creating {}", folder.display()))?;
        run_checked(
            Command::new("npm")
                .args([
                    "install",
                    "--no-save",
                    "--no-audit",
                    "--no-fund",
                    "--prefix",
                ])
                .arg(&folder)
                .arg(PYRIGHT),
            "installing pyright",
        )?;
        std::fs::write(&marker, PYRIGHT)
            .with_context(|| format!("writing {}", marker.display()))?;
    }
    Ok(Some(entry))
}

/// A copy of the package under `target/python/stubs-as-source` in which every stub is a
/// Python module (`types/*.pyi` as `types/*.py`, `_store.pyi` in place of `_store.py`): pyright
/// holds a stub to no Python version, but a module to the one it checks at, so a stub that
/// imports or evaluates anything newer than Python 3.9 fails there. Returns the folder.
fn stubs_as_source(root: &Path) -> Result<PathBuf> {
    let folder = target_dir(root).join("python").join("stubs-as-source");
    if folder.exists() {
        std::fs::remove_dir_all(&folder)
            .with_context(|| format!("clearing {}", folder.display()))?;
    }
    copy_as_source(
        &root.join("bindings/python/python/agent_memory"),
        &folder.join("agent_memory"),
    )?;
    Ok(folder)
}

/// Copies the Python of `from` into `to`, folder by folder, each stub as the module it types.
fn copy_as_source(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let path = entry
            .with_context(|| format!("reading {}", from.display()))?
            .path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if path.is_dir() {
            if name != "__pycache__" {
                copy_as_source(&path, &to.join(name))?;
            }
            continue;
        }
        let module = match path.extension().and_then(|e| e.to_str()) {
            Some("pyi") => path.with_extension("py"),
            // A module with a stub is checked as its stub says.
            Some("py") if !path.with_extension("pyi").exists() => path.clone(),
            _ => continue,
        };
        let Some(module) = module.file_name() else {
            continue;
        };
        std::fs::copy(&path, to.join(module))
            .with_context(|| format!("copying {}", path.display()))?;
    }
    Ok(())
}

/// Every Python example of the README as a file of its own under
/// `target/python/readme-examples`, numbered as the README's test numbers them: each
/// ```` ```python ```` block, and each ```` ```diff ```` block that uses the package as the file
/// it leaves (its context and added lines), in the README's order. Returns the folder.
fn readme_examples(root: &Path) -> Result<PathBuf> {
    let readme = std::fs::read_to_string(root.join("README.md")).context("reading README.md")?;
    let examples: Vec<String> = crate::readme::fenced(&readme, &["python", "diff"])
        .into_iter()
        .filter_map(|(language, code)| match language {
            "diff" if !code.contains("agent_memory") => None,
            "diff" => Some(
                code.lines()
                    .filter_map(|line| line.strip_prefix(' ').or_else(|| line.strip_prefix('+')))
                    .map(|line| format!("{line}\n"))
                    .collect(),
            ),
            _ => Some(code),
        })
        .collect();
    if examples.is_empty() {
        bail!("README.md has no Python example");
    }
    let folder = target_dir(root).join("python").join("readme-examples");
    if folder.exists() {
        std::fs::remove_dir_all(&folder)
            .with_context(|| format!("clearing {}", folder.display()))?;
    }
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    for (i, example) in examples.iter().enumerate() {
        let path = folder.join(format!("example_{}.py", i + 1));
        std::fs::write(&path, example).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(folder)
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
        .env(
            "AGENT_MEMORY_SDK_CACHE",
            target_dir(root).join("python/sdk"),
        )
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
