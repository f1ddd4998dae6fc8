//! The dependency rules of `ARCHITECTURE.md`, checked from `cargo metadata`:
//!
//! - `memory-core` has no normal dependencies;
//! - feature crates depend neither on each other nor on `store-sqlite`;
//! - only `store-sqlite` names `rusqlite`;
//! - only `cli` (package `agent-memory-cli`) and `xtask` use `anyhow`.

use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The feature crates, which stand side by side and never lean on each other.
const FEATURE_CRATES: &[&str] = &["recording", "trajectory", "turn-memory", "browser-memory"];

/// One workspace package and its direct dependencies as `(name, kind)`; kind is `None` for
/// normal dependencies, `Some("dev")` or `Some("build")` otherwise.
#[derive(Debug, Clone)]
pub(crate) struct Package {
    pub(crate) name: String,
    pub(crate) deps: Vec<(String, Option<String>)>,
}

/// Checks the rules for the workspace this xtask belongs to.
pub(crate) fn check_workspace() -> Result<()> {
    let packages = workspace_packages()?;
    let problems = violations(&packages);
    if !problems.is_empty() {
        bail!("dependency rules broken:\n  {}", problems.join("\n  "));
    }
    println!("dependency rules hold for {} package(s)", packages.len());
    Ok(())
}

pub(crate) fn workspace_packages() -> Result<Vec<Package>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(&cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(crate::workspace_root())
        .output()
        .context("could not run `cargo metadata`")?;
    if !output.status.success() {
        bail!(
            "`cargo metadata` failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: Value =
        serde_json::from_slice(&output.stdout).context("`cargo metadata` printed invalid JSON")?;
    parse_packages(&metadata)
}

pub(crate) fn parse_packages(metadata: &Value) -> Result<Vec<Package>> {
    let packages = metadata["packages"]
        .as_array()
        .context("`cargo metadata` has no packages")?;
    packages
        .iter()
        .map(|p| {
            let name = p["name"]
                .as_str()
                .context("package without a name")?
                .to_owned();
            let deps = p["dependencies"]
                .as_array()
                .context("package without dependencies")?
                .iter()
                .map(|d| {
                    let dep = d["name"].as_str().unwrap_or_default().to_owned();
                    let kind = d["kind"].as_str().map(str::to_owned);
                    (dep, kind)
                })
                .collect();
            Ok(Package { name, deps })
        })
        .collect()
}

/// Every broken rule, as one line each.
pub(crate) fn violations(packages: &[Package]) -> Vec<String> {
    let mut problems = Vec::new();
    for package in packages {
        let name = package.name.as_str();
        for (dep, kind) in &package.deps {
            let normal = kind.is_none();
            if name == "memory-core" && normal {
                problems.push(format!(
                    "memory-core must have no dependencies, but depends on {dep}"
                ));
            }
            if FEATURE_CRATES.contains(&name)
                && normal
                && (FEATURE_CRATES.contains(&dep.as_str()) || dep == "store-sqlite")
            {
                problems.push(format!("feature crate {name} must not depend on {dep}"));
            }
            if dep == "rusqlite" && name != "store-sqlite" {
                problems.push(format!(
                    "only store-sqlite may use rusqlite, but {name} does"
                ));
            }
            if dep == "anyhow" && name != "agent-memory-cli" && name != "xtask" {
                problems.push(format!(
                    "only the cli and xtask may use anyhow, but {name} does"
                ));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(name: &str, deps: &[(&str, Option<&str>)]) -> Package {
        Package {
            name: name.to_owned(),
            deps: deps
                .iter()
                .map(|(d, k)| ((*d).to_owned(), k.map(str::to_owned)))
                .collect(),
        }
    }

    #[test]
    fn this_workspace_obeys_the_rules() {
        let packages = workspace_packages().expect("cargo metadata");
        assert!(packages.iter().any(|p| p.name == "memory-core"));
        assert_eq!(violations(&packages), Vec::<String>::new());
    }

    #[test]
    fn each_rule_catches_its_violation() {
        let table = [
            (
                pkg("memory-core", &[("serde", None)]),
                "memory-core must have no dependencies, but depends on serde",
            ),
            (
                pkg("trajectory", &[("recording", None)]),
                "feature crate trajectory must not depend on recording",
            ),
            (
                pkg("recording", &[("store-sqlite", None)]),
                "feature crate recording must not depend on store-sqlite",
            ),
            (
                pkg("turn-memory", &[("rusqlite", Some("dev"))]),
                "only store-sqlite may use rusqlite, but turn-memory does",
            ),
            (
                pkg("store-sqlite", &[("anyhow", None)]),
                "only the cli and xtask may use anyhow, but store-sqlite does",
            ),
        ];
        for (package, expected) in table {
            assert_eq!(violations(&[package]), vec![expected.to_owned()]);
        }
    }

    #[test]
    fn allowed_edges_pass() {
        let ok = [
            pkg("memory-core", &[("proptest", Some("dev"))]),
            pkg(
                "recording",
                &[("memory-core", None), ("store-sqlite", Some("dev"))],
            ),
            pkg("store-sqlite", &[("rusqlite", None), ("memory-core", None)]),
            pkg("agent-memory-cli", &[("anyhow", None), ("recording", None)]),
        ];
        assert_eq!(violations(&ok), Vec::<String>::new());
    }
}
