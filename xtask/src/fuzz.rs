//! `cargo xtask fuzz`: runs one cargo-fuzz target for a bounded time, and builds every target
//! without instrumentation for CI.
//!
//! The fuzz crate lives in `fuzz/`, outside the workspace's members, so the workspace never
//! needs libFuzzer. cargo-fuzz wants a nightly compiler for its sanitizer flags; on the stable
//! toolchain `RUSTC_BOOTSTRAP=1` lets it build.

use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{cargo, workspace_root};

/// `cargo xtask fuzz <target> [--seconds N]` or `cargo xtask fuzz --list`.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let root = workspace_root();
    let targets = targets(&root)?;
    let mut target = None;
    let mut seconds = 60u64;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--list" => {
                targets.iter().for_each(|t| println!("{t}"));
                return Ok(());
            }
            "--seconds" => {
                let value = it.next().context("--seconds needs a number")?;
                seconds = value
                    .parse()
                    .with_context(|| format!("--seconds takes a whole number, not {value:?}"))?;
            }
            name if target.is_none() && !name.starts_with('-') => target = Some(name.to_owned()),
            other => bail!(
                "unexpected argument {other:?} (usage: cargo xtask fuzz <target> [--seconds N] | --list)"
            ),
        }
    }
    let Some(target) = target else {
        bail!("name a target (one of: {})", targets.join(", "));
    };
    if !targets.contains(&target) {
        bail!(
            "no fuzz target {target:?} (targets: {})",
            targets.join(", ")
        );
    }
    ensure_cargo_fuzz()?;
    let corpus = root.join("fuzz").join("corpus").join(&target);
    std::fs::create_dir_all(&corpus).with_context(|| format!("creating {}", corpus.display()))?;
    let time = format!("-max_total_time={seconds}");
    let mut command = vec![
        "fuzz".to_owned(),
        "run".to_owned(),
        "-O".to_owned(),
        target.clone(),
        corpus.to_string_lossy().into_owned(),
    ];
    // Committed seed inputs (real files of each format) start the search from valid
    // documents; libFuzzer only reads them, new inputs go to the corpus.
    let seeds = root.join("fuzz").join("seeds").join(&target);
    if seeds.is_dir() {
        command.push(seeds.to_string_lossy().into_owned());
    }
    command.extend(["--".to_owned(), time]);
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    cargo(&root.join("fuzz"), &command, &[("RUSTC_BOOTSTRAP", "1")])
}

/// Builds every fuzz target as a plain binary: checks they compile against the current API
/// without needing cargo-fuzz or a sanitizer runtime.
pub(crate) fn build_all() -> Result<()> {
    let root = workspace_root();
    cargo(
        &root,
        &["build", "--manifest-path", "fuzz/Cargo.toml", "--bins"],
        &[],
    )
}

/// The targets declared in `fuzz/Cargo.toml`, from its `fuzz_targets/` folder.
fn targets(root: &std::path::Path) -> Result<Vec<String>> {
    let dir = root.join("fuzz").join("fuzz_targets");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let path = entry.path();
            (path.extension()? == "rs").then(|| path.file_stem()?.to_str().map(str::to_owned))?
        })
        .collect();
    names.sort();
    Ok(names)
}

fn ensure_cargo_fuzz() -> Result<()> {
    let cargo_bin = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let installed = Command::new(&cargo_bin)
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if installed {
        return Ok(());
    }
    println!("installing cargo-fuzz from crates.io (once)");
    cargo(
        &workspace_root(),
        &["install", "cargo-fuzz", "--locked"],
        &[],
    )
}
