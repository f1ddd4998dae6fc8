//! `cargo xtask ci`: the checks, in order, each timed, stopping at the first failure.

use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::{cargo, snapshots, workspace_root};

/// A named step of the CI run.
type Step<'a> = (&'static str, Box<dyn Fn() -> Result<()> + 'a>);

/// Runs every step in order; CI always runs all of them, so no step can be skipped.
pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask ci` takes no arguments (got {extra:?})");
    }
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
            // An MCP client we did not write, the official Python SDK, over both transports.
            "mcp python",
            Box::new(|| crate::mcp_python::run(&[])),
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
            // Every library crate and the command line must be publishable as they stand:
            // packaged and built from the packaged sources alone.
            "package",
            Box::new(|| {
                cargo(
                    &root,
                    &[
                        "package",
                        "--workspace",
                        "--exclude",
                        "xtask",
                        "--allow-dirty",
                        "--quiet",
                    ],
                    &[],
                )
            }),
        ),
        (
            "bench smoke",
            Box::new(|| cargo(&root, &["test", "--workspace", "--benches"], &[])),
        ),
        ("fuzz build", Box::new(crate::fuzz::build_all)),
        ("deps", Box::new(crate::deps::check_workspace)),
    ];
    for (name, step) in &steps {
        println!("==> {name}");
        let t = Instant::now();
        let result = step();
        println!(
            "<== {name}: {} in {:.1}s",
            if result.is_ok() { "ok" } else { "FAILED" },
            t.elapsed().as_secs_f64()
        );
        result.with_context(|| format!("ci step `{name}` failed"))?;
    }
    println!("ci passed in {:.1}s", started.elapsed().as_secs_f64());
    Ok(())
}
