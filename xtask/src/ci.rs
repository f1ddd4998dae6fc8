//! `cargo xtask ci`: the checks, in order, each timed, stopping at the first failure.
//!
//! The shared store's tests need a PostgreSQL server, so the run first starts a throwaway
//! cluster in `target/pg-ci` (fresh each run), then runs the steps in a child process whose
//! environment names it (`AGENT_MEMORY_TEST_POSTGRES`, and `AGENT_MEMORY_PG_BIN` for tests
//! that start a cluster of their own), and stops it at the end, whether the steps passed or
//! not. Without server binaries the run fails under `CI=true` and warns otherwise.

use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::{cargo, postgres, snapshots, workspace_root};

/// Set for the child process that runs the steps, once the server is up.
const STEPS_VAR: &str = "AGENT_MEMORY_CI_STEPS";

/// A named step of the CI run.
type Step<'a> = (&'static str, Box<dyn Fn() -> Result<()> + 'a>);

/// Starts the PostgreSQL server, runs the steps with it and stops it.
pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask ci` takes no arguments (got {extra:?})");
    }
    if std::env::var_os(STEPS_VAR).is_some() {
        return run_steps();
    }
    let root = workspace_root();
    let server = postgres::start(&root, "pg-ci")?;
    let exe = std::env::current_exe().context("finding the xtask binary")?;
    let mut steps = Command::new(&exe);
    steps.arg("ci").env(STEPS_VAR, "1").current_dir(&root);
    if let Some(server) = &server {
        steps.envs(server.env());
    }
    let status = steps
        .status()
        .with_context(|| format!("could not run {}", exe.display()));
    let stopped = server.map(postgres::Server::stop).transpose();
    let status = status?;
    stopped?;
    if !status.success() {
        bail!("ci failed ({status})");
    }
    Ok(())
}

/// Runs every step in order; CI always runs all of them, so no step can be skipped.
fn run_steps() -> Result<()> {
    let root = workspace_root();
    let refs = snapshots::references_file(&root);
    let started = Instant::now();
    let steps: Vec<Step<'_>> = vec![
        (
            "fmt",
            Box::new(|| cargo(&root, &["fmt", "--all", "--", "--check"], &[])),
        ),
        (
            "clippy",
            Box::new(|| {
                cargo(
                    &root,
                    &[
                        "clippy",
                        "--workspace",
                        "--all-targets",
                        "--all-features",
                        "--",
                        "-D",
                        "warnings",
                    ],
                    &[],
                )
            }),
        ),
        (
            "test",
            Box::new(|| {
                // Snapshots are checked, never written, and every snapshot file read is
                // recorded so the next step can find the ones no test uses.
                snapshots::test_recording_references(&root, &refs)
            }),
        ),
        ("snapshots", Box::new(|| snapshots::check(&root, &refs))),
        (
            // Every door's generated surface is what the operation table makes.
            "codegen",
            Box::new(|| crate::codegen::run(&["--check".to_owned()])),
        ),
        (
            // Every bench run once, as a test. Early, to reuse `test`'s build of our crates:
            // `dist` (its installs from a clone) and `package` leave their fingerprints
            // stale, and run after them this step rebuilt every crate (135 s in all).
            "bench smoke",
            Box::new(|| cargo(&root, &["test", "--workspace", "--benches"], &[])),
        ),
        (
            // An MCP client we did not write, the official Python SDK, over both transports.
            "mcp python",
            Box::new(|| crate::mcp_python::run(&[])),
        ),
        (
            // The official MCP Inspector: its strict schema check, then every tool called.
            "mcp inspector",
            Box::new(|| crate::inspector::run(&[])),
        ),
        (
            // The Python package as its users get it: the wheel installed into a fresh venv.
            "python",
            Box::new(|| crate::python::run(&[])),
        ),
        (
            // What docs.rs and a user's `cargo doc` build (default features), then everything.
            "doc",
            Box::new(|| {
                cargo(
                    &root,
                    &["doc", "--workspace", "--no-deps"],
                    &[("RUSTDOCFLAGS", "-D warnings")],
                )?;
                cargo(
                    &root,
                    &["doc", "--workspace", "--no-deps", "--all-features"],
                    &[("RUSTDOCFLAGS", "-D warnings")],
                )
            }),
        ),
        (
            // An agent in another language drives every memory through the command line.
            "agent-cli",
            Box::new(|| crate::agent_cli::run(&[])),
        ),
        (
            // The README's examples, unchanged, in a new crate depending on the umbrella crate.
            "readme",
            Box::new(|| crate::readme::run(&[])),
        ),
        (
            // The npm package as its users get it: packed, installed into a fresh project,
            // tested with node's test runner and type-checked (before `package`, which
            // drops our crates' fingerprints, so the addon reuses what `test` compiled).
            "node",
            Box::new(|| crate::node::run(&[])),
        ),
        (
            // The inspector page as a person sees it: the real binary in headless Chromium.
            "ui",
            Box::new(|| crate::ui::run(&[])),
        ),
        (
            // The release's Linux binaries cross-built, audited, sized and tried (aarch64
            // under qemu-user), the packages installed from a fresh clone, and actionlint
            // on the release workflow, which builds the macOS and Windows ones. `--quick`:
            // check builds (the release profile's build of the three targets would take
            // longer than the rest of this run).
            "dist",
            Box::new(|| {
                crate::dist::run(&["--quick".to_owned()])?;
                // A clean clone's run never reuses the cross builds (2.0 GB of check builds
                // measured; the target folder peaked at 12.1 GB with them, 10.2 GB without):
                // the artifacts are already copied into `target/dist`, and a full disk fails
                // the steps after as surely as a test.
                if std::env::var("CI").is_ok_and(|v| v == "true") {
                    for folder in crate::dist::build_folders(&crate::target_dir(&root)) {
                        let bytes = folder_size(&folder);
                        if folder.exists() {
                            std::fs::remove_dir_all(&folder).with_context(|| {
                                format!("removing the cross build {}", folder.display())
                            })?;
                            println!(
                                "--- dist: removed {} ({:.1} GB), not needed after this step",
                                folder.display(),
                                bytes as f64 / 1e9
                            );
                        }
                    }
                }
                Ok(())
            }),
        ),
        (
            // Every library crate and the command line must be publishable as they stand:
            // packaged and built from the packaged sources alone.
            "package",
            Box::new(|| {
                clear_stale_package_sources(&crate::target_dir(&root))?;
                cargo(
                    &root,
                    &[
                        "package",
                        "--workspace",
                        "--exclude",
                        "xtask",
                        // Published to npm inside `durable-agent-memory`, not to crates.io.
                        "--exclude",
                        "agent-memory-node",
                        // The Python package ships as a wheel (maturin), not on crates.io.
                        "--exclude",
                        "agent-memory-python",
                        // The benches' shared helpers, a dev-dependency only.
                        "--exclude",
                        "agent-memory-benchkit",
                        "--allow-dirty",
                        "--quiet",
                    ],
                    &[],
                )
            }),
        ),
        ("fuzz build", Box::new(crate::fuzz::build_all)),
        ("deps", Box::new(crate::deps::check_workspace)),
        (
            // Licenses, bans and sources of every dependency (deny.toml).
            "deny",
            Box::new(|| crate::deny::run(&[])),
        ),
    ];
    let target = crate::target_dir(&root);
    for (name, step) in &steps {
        println!("==> {name}");
        let t = Instant::now();
        let result = step();
        // The target folder's size after each step: a full disk fails a run as surely as a
        // failing test, and this says which step grew it.
        println!(
            "<== {name}: {} in {:.1}s (target folder {:.1} GB, {} free on its disk)",
            if result.is_ok() { "ok" } else { "FAILED" },
            t.elapsed().as_secs_f64(),
            folder_size(&target) as f64 / 1e9,
            disk_free(&target).map_or_else(
                || "unknown".to_owned(),
                |b| format!("{:.1} GB", b as f64 / 1e9)
            )
        );
        result.with_context(|| format!("ci step `{name}` failed"))?;
    }
    println!("ci passed in {:.1}s", started.elapsed().as_secs_f64());
    Ok(())
}

/// The bytes free on the disk that holds `dir`, as `df -Pk` reports them (POSIX output: the
/// fourth column of the second line is the space available in KiB); `None` when `df` cannot
/// say (the figure is a report, not a check).
fn disk_free(dir: &std::path::Path) -> Option<u64> {
    let out = Command::new("df").arg("-Pk").arg(dir).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let kib: u64 = text
        .lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The bytes of the regular files under `dir`, each file once however many links it has
/// (cargo hard-links its outputs), symbolic links not followed; what cannot be read counts
/// as nothing (the figure is a report, not a check).
fn folder_size(dir: &std::path::Path) -> u64 {
    fn walk(dir: &std::path::Path, seen: &mut std::collections::HashSet<(u64, u64)>) -> u64 {
        use std::os::unix::fs::MetadataExt;
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        let mut bytes = 0;
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => bytes += walk(&entry.path(), seen),
                Ok(kind) if kind.is_file() => {
                    if let Ok(meta) = entry.metadata()
                        && seen.insert((meta.dev(), meta.ino()))
                    {
                        bytes += meta.len();
                    }
                }
                _ => {}
            }
        }
        bytes
    }
    walk(dir, &mut std::collections::HashSet::new())
}

/// Removes cargo's extracted copies of our own packages from earlier `cargo package` runs.
///
/// `cargo package --workspace` builds each package against the others' tarballs through a
/// local overlay registry, extracted under `$CARGO_HOME/registry/src/-<hash of the overlay's
/// path>/`. When a later run packages the same version from the same folder, cargo reuses the
/// earlier extraction instead of the new tarball, and the build sees stale sources (an older
/// `agent-memory-core` without a trait method the other packages now use). Only overlay
/// folders (named `-<hash>`) are touched, and in them only `agent-memory-*` packages. A
/// registry package is never rebuilt for changed sources either, so the fingerprints of our
/// packages in `target` go too (the path builds rebuild once, the packaged ones from the new
/// tarballs).
fn clear_stale_package_sources(target: &std::path::Path) -> Result<()> {
    if let Ok(fingerprints) = std::fs::read_dir(target.join("debug/.fingerprint")) {
        for entry in fingerprints.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with("agent-memory-")
            {
                std::fs::remove_dir_all(entry.path()).with_context(|| {
                    format!("remove the stale fingerprint {}", entry.path().display())
                })?;
            }
        }
    }
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo")));
    let Some(home) = home else {
        return Ok(());
    };
    let Ok(registries) = std::fs::read_dir(home.join("registry/src")) else {
        return Ok(());
    };
    for registry in registries.flatten() {
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        let Ok(packages) = std::fs::read_dir(registry.path()) else {
            continue;
        };
        for package in packages.flatten() {
            if package
                .file_name()
                .to_string_lossy()
                .starts_with("agent-memory-")
            {
                std::fs::remove_dir_all(package.path()).with_context(|| {
                    format!(
                        "remove the stale package sources {}",
                        package.path().display()
                    )
                })?;
            }
        }
    }
    Ok(())
}
