//! `cargo xtask ci`: the checks, in order, each timed, stopping at the first failure.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::workspace_root;

/// A named step of the CI run.
type Step<'a> = (&'static str, Box<dyn Fn() -> Result<()> + 'a>);

/// Runs every step in order; CI always runs all of them, so no step can be skipped.
pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask ci` takes no arguments (got {extra:?})");
    }
    let root = workspace_root();
    let refs = root.join("target").join("insta-references.txt");
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
                let _ = std::fs::remove_file(&refs);
                let refs_env = refs.to_string_lossy().into_owned();
                cargo(
                    &root,
                    &["test", "--workspace", "--all-features"],
                    &[
                        ("INSTA_UPDATE", "no"),
                        ("INSTA_FORCE_PASS", "0"),
                        ("INSTA_SNAPSHOT_REFERENCES_FILE", &refs_env),
                    ],
                )
            }),
        ),
        ("snapshots", Box::new(|| check_snapshots(&root, &refs))),
        (
            "doc",
            Box::new(|| {
                cargo(
                    &root,
                    &["doc", "--workspace", "--no-deps", "--all-features"],
                    &[("RUSTDOCFLAGS", "-D warnings")],
                )
            }),
        ),
        (
            "bench smoke",
            Box::new(|| cargo(&root, &["test", "--workspace", "--benches"], &[])),
        ),
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

fn cargo(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<()> {
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

/// Fails on pending snapshots (`.snap.new`, `.pending-snap`) and on committed snapshots
/// that no test read during the test step.
pub(crate) fn check_snapshots(root: &Path, references: &Path) -> Result<()> {
    let files = snapshot_files(root)?;
    let pending: Vec<&PathBuf> = files
        .iter()
        .filter(|p| {
            let name = p.to_string_lossy();
            name.ends_with(".snap.new") || name.ends_with(".pending-snap")
        })
        .collect();
    if !pending.is_empty() {
        bail!("pending snapshots (review with `cargo xtask snapshots`): {pending:?}");
    }
    let referenced: BTreeSet<PathBuf> = match std::fs::read_to_string(references) {
        Ok(text) => text.lines().map(|l| canonical(Path::new(l))).collect(),
        Err(_) => BTreeSet::new(),
    };
    let unreferenced: Vec<&PathBuf> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "snap"))
        .filter(|p| !referenced.contains(&canonical(p)))
        .collect();
    if !unreferenced.is_empty() {
        bail!("snapshots no test uses (delete them or restore their test): {unreferenced:?}");
    }
    let used = files.len();
    println!("{used} snapshot file(s), all referenced, none pending");
    Ok(())
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// Every file under a `snapshots` folder of the workspace's crates.
pub(crate) fn snapshot_files(root: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut stack = vec![root.join("crates"), root.join("xtask")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry
                .with_context(|| format!("reading {}", dir.display()))?
                .path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    stack.push(path);
                }
            } else if path
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == "snapshots")
            {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}
