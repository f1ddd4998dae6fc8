//! `cargo xtask`: the workspace's build system, in Rust so it runs wherever cargo does.
//!
//! - `cargo xtask ci`: every check CI runs, in order, stopping at the first failure, with a
//!   throwaway PostgreSQL server for the shared store's tests.
//! - `cargo xtask deps`: only the dependency rules of `ARCHITECTURE.md`.
//! - `cargo xtask deny`: the supply-chain check of `deny.toml` (licenses, bans, sources) by
//!   cargo-deny, installed into `target/tools/` the first time.
//! - `cargo xtask codegen [--check]`: every door's methods, stubs and error classes written
//!   from the contract's operation table (`--check`: fail when a committed file differs).
//! - `cargo xtask bench [--quick] [--peers]`: every criterion bench and W-traj through the
//!   Python package, then one table and a report with charts in `target/bench-report/`;
//!   `--peers` adds popoto on Redis and PostgreSQL.
//! - `cargo xtask snapshots [--check | --accept-all | --reject-all]`: review or check insta
//!   snapshots without `cargo-insta`.
//! - `cargo xtask agent-cli`: the Python agent of `crates/cli/tests/agent_cli.py`.
//! - `cargo xtask readme`: the README's Rust examples in a new crate depending on `agent-memory-kit`.
//! - `cargo xtask demo`: the command line's guided tour on a fresh database.
//! - `cargo xtask dist [--quick | --from-source]`: the release's Linux binaries (wheels, npm
//!   packages, command-line archives) cross-built into `target/dist/`, checked (auditwheel,
//!   twine, sizes, actionlint on the release workflow) and tried (aarch64 under qemu-user);
//!   then the packages installed from a fresh clone as users without a binary install them
//!   (`--quick`, CI's run: check builds, without the release profile's optimization).
//! - `cargo xtask fuzz <target> [--seconds N]`: one cargo-fuzz target for a bounded time.
//! - `cargo xtask mcp-python`: the MCP Python SDK drives `agent-memory mcp` (stdio and HTTP).
//! - `cargo xtask inspector`: the official MCP Inspector's strict schema check and a call of
//!   every tool through its CLI mode, against `agent-memory mcp`.
//! - `cargo xtask node`: the npm package built, packed, installed into a fresh project and tested.
//! - `cargo xtask anchors`: browser-agent-driver's own tests of what the npm drop-in replaces,
//!   run against the packed package (from a copy of its sources, as `bench --peers` uses).
//! - `cargo xtask ui`: the inspector page driven in headless Chromium, screenshots in
//!   `target/ui-screenshots/`.
//! - `cargo xtask python [--release]`: the Python package's wheel built, installed into a fresh
//!   virtual environment and tested with pytest; `--bench [--peers]`: only its W-traj bench.

mod agent_cli;
mod bench;
mod ci;
mod codegen;
mod demo;
mod deny;
mod deps;
mod dist;
mod fuzz;
mod inspector;
mod mcp_python;
mod node;
mod peers;
mod postgres;
mod python;
mod readme;
mod snapshots;
mod ui;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One line with every cause, and no backtrace even when RUST_BACKTRACE is set:
            // a failed task explains itself, it is not a crash.
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((task, rest)) = args.split_first() else {
        print_usage();
        bail!("no task given");
    };
    match task.as_str() {
        "ci" => ci::run(rest),
        "codegen" => codegen::run(rest),
        "deps" => deps::check_workspace(),
        "deny" => deny::run(rest),
        "bench" => bench::run(rest),
        "snapshots" => snapshots::run(rest),
        "demo" => demo::run(rest),
        "dist" => dist::run(rest),
        "fuzz" => fuzz::run(rest),
        "readme" => readme::run(rest),
        "agent-cli" => agent_cli::run(rest),
        "mcp-python" => mcp_python::run(rest),
        "inspector" => inspector::run(rest),
        "node" => node::run(rest),
        "anchors" => node::anchor_tests(rest),
        "python" => python::run(rest),
        "ui" => ui::run(rest),
        "help" | "--help" | "-h" => {
            print_usage();
            Ok(())
        }
        other => {
            print_usage();
            bail!("unknown task {other:?}")
        }
    }
}

fn print_usage() {
    eprintln!(
        "usage: cargo xtask <task>\n\n\
         tasks:\n  \
         ci         format, lint, test, snapshot, doc, package, bench smoke and dependency checks\n  \
         deps       check the dependency rules between crates\n  \
         deny       check licenses, bans and sources of every dependency (cargo-deny, installed into target/tools/)\n  \
         codegen    write every door's methods, types and error classes from the operation table (--check: fail when they differ)\n  \
         bench      run every criterion bench and write target/bench-report/ (--quick: smallest size only; --peers: popoto too)\n  \
         readme     build and run the README's Rust examples in a crate depending on agent-memory-kit\n  \
         agent-cli  run crates/cli/tests/agent_cli.py, a Python agent driving the command line\n  \
         snapshots  review pending insta snapshots (--accept-all, --reject-all; --check fails on pending or unused ones)\n  \
         demo       run `agent-memory demo` on a fresh database under target/demo/\n  \
         dist       build the release's Linux wheels, npm packages and CLI archives into target/dist/, check and try them (--quick: check builds; --from-source: only the installs from a checkout)\n  \
         fuzz       run one fuzz target: fuzz <target> [--seconds N] (--list shows them)\n  \
         mcp-python the MCP Python SDK drives `agent-memory mcp` over stdio and HTTP (venv under target/)\n  \
         inspector  the MCP Inspector (npm, under target/) checks every tool schema strictly and calls every tool\n  \
         node       build, pack and install the npm package into a fresh project under target/ and run its tests\n  \
         anchors    run browser-agent-driver's own tests of what the npm drop-in replaces against the packed package (needs its sources, as bench --peers)\n  \
         python     build the Python wheel, install it into a fresh venv under target/python/ and run its pytest suite (--bench [--peers]: only its W-traj bench)\n  \
         ui         drive `agent-memory ui` in headless Chromium on the demo's database; screenshots in target/ui-screenshots/"
    );
}

/// The workspace root: the parent of this crate's folder.
pub(crate) fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// Cargo's target directory: `$CARGO_TARGET_DIR`, else `<workspace root>/target`.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// Runs `cargo <args>` in `root` with extra environment variables; fails unless it succeeds.
pub(crate) fn cargo(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root)
        .status()
        .with_context(|| format!("could not start `{cargo}`"))?;
    if !status.success() {
        bail!("`cargo {}` exited with {status}", args.join(" "));
    }
    Ok(())
}

/// Deletes `path`; a file that is already gone is fine.
pub(crate) fn remove_file_if_present(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", path.display())),
    }
}
