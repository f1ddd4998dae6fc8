//! `cargo xtask deny`: the supply-chain check of `deny.toml` (licenses, bans, sources) by
//! cargo-deny, installed from crates.io into `target/tools/` the first time (pinned, with its
//! own lock file), so the check needs nothing but the Rust toolchain.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{target_dir, workspace_root};

/// The cargo-deny release the check runs.
const VERSION: &str = "0.20.2";

/// The release profile's settings for building cargo-deny: opt-level 1, no link-time
/// optimization, the default codegen units and no debug info. Measured on two cores: the
/// install takes 117 s instead of about 205 s, and the check 1.0 s instead of 0.8 s.
const QUICK_BUILD: [(&str, &str); 4] = [
    ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1"),
    ("CARGO_PROFILE_RELEASE_LTO", "false"),
    ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16"),
    ("CARGO_PROFILE_RELEASE_DEBUG", "false"),
];

/// Installs cargo-deny if needed and runs `cargo deny check licenses bans sources`.
pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask deny` takes no arguments (got {extra:?})");
    }
    let root = workspace_root();
    let tools = target_dir(&root).join("tools");
    let deny = tools.join("bin").join("cargo-deny");
    if !installed(&deny) {
        install(&root, &tools)?;
    }
    // Advisories are left out: their database is fetched from GitHub, which CI cannot reach.
    let status = Command::new(&deny)
        .args(["--all-features", "check", "licenses", "bans", "sources"])
        .current_dir(&root)
        .status()
        .with_context(|| format!("could not run {}", deny.display()))?;
    if !status.success() {
        bail!("cargo deny found a license, ban or source deny.toml does not allow ({status})");
    }
    Ok(())
}

/// Whether `deny` is the pinned release.
fn installed(deny: &Path) -> bool {
    Command::new(deny)
        .arg("--version")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains(VERSION))
}

/// `cargo install cargo-deny --locked` into `tools`, built in its own target folder.
fn install(root: &Path, tools: &Path) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    println!("installing cargo-deny {VERSION} into {}", tools.display());
    let status = Command::new(&cargo)
        .args([
            "install",
            "cargo-deny",
            "--locked",
            "--version",
            VERSION,
            "--root",
        ])
        .arg(tools)
        .env("CARGO_TARGET_DIR", tools.join("build"))
        // cargo-deny's own release profile is fat LTO in one codegen unit, built cold in every
        // CI run: a checker run once over a lock file gains nothing from it. These override
        // the manifest's profile for this build only.
        .envs(QUICK_BUILD)
        .current_dir(root)
        .status()
        .with_context(|| format!("could not start `{cargo} install`"))?;
    if !status.success() {
        bail!("installing cargo-deny {VERSION} failed ({status})");
    }
    // Its build folder is only needed to build it.
    let _ = std::fs::remove_dir_all(tools.join("build"));
    Ok(())
}
