//! The dependency rules of `ARCHITECTURE.md`, checked from `cargo metadata`:
//!
//! - `agent-memory-core` (folder `memory-core`) has no normal dependencies;
//! - feature crates depend neither on each other nor on a store (`agent-memory-sqlite`,
//!   `agent-memory-postgres`);
//! - only `agent-memory-sqlite` names `rusqlite` (and `agent-memory-postgres`'s floor bench,
//!   as a dev-dependency), and only `agent-memory-postgres` names `postgres` (and the benches'
//!   kit, `agent-memory-benchkit`, for their bare floor; it is never a normal dependency of
//!   anything but `xtask`);
//! - only `cli` (package `agent-memory-cli`) and `xtask`
//!   use `anyhow`;
//! - a door (the command line, the Python and Node packages' crates) depends on no workspace
//!   crate but the contract and `agent-memory-core` (and the packages on the command line,
//!   which they ship): neither a store, which each opens through the contract
//!   (`contract::database`), nor a memory, whose every rule each reaches through the
//!   contract's operations, so every door answers alike.

use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The feature crates, which stand side by side and never lean on each other.
const FEATURE_CRATES: &[&str] = &[
    "agent-memory-recording",
    "agent-memory-trajectory",
    "agent-memory-turns",
    "agent-memory-browser",
    "agent-memory-notes",
];

/// The doors: they reach the memories and the stores only through the contract.
const DOORS: &[&str] = &[
    "agent-memory-cli",
    "agent-memory-python",
    "agent-memory-node",
];

/// The workspace crates a door may depend on: the contract, the core types, and the command
/// line (the language packages ship it).
const DOOR_DEPENDENCIES: &[&str] = &[
    "agent-memory-contract",
    "agent-memory-core",
    "agent-memory-cli",
];

/// The packages that tie crates together, the only ones that may use `anyhow`.
const ANYHOW_USERS: &[&str] = &["agent-memory-cli", "xtask"];
/// The benches' kit (`crates/benchkit`).
const BENCHKIT: &str = "agent-memory-benchkit";

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
            if name == "agent-memory-core" && normal {
                problems.push(format!(
                    "agent-memory-core must have no dependencies, but depends on {dep}"
                ));
            }
            if FEATURE_CRATES.contains(&name)
                && normal
                && (FEATURE_CRATES.contains(&dep.as_str())
                    || dep == "agent-memory-sqlite"
                    || dep == "agent-memory-postgres")
            {
                problems.push(format!("feature crate {name} must not depend on {dep}"));
            }
            // The PostgreSQL store's bench of the engines' floor writes the same rows with
            // bare rusqlite too, so both engines are measured in one run.
            let floor_bench = name == "agent-memory-postgres" && kind.as_deref() == Some("dev");
            if dep == "rusqlite" && name != "agent-memory-sqlite" && !floor_bench {
                problems.push(format!(
                    "only agent-memory-sqlite may use rusqlite, but {name} does"
                ));
            }
            // The benches' kit holds the bare `postgres` floor the benches measure beside the
            // store; it is only ever a dev-dependency (and xtask's, which reads its figures).
            if dep == "postgres" && name != "agent-memory-postgres" && name != BENCHKIT {
                problems.push(format!(
                    "only agent-memory-postgres may use postgres, but {name} does"
                ));
            }
            if DOORS.contains(&name)
                && normal
                && dep.starts_with("agent-memory-")
                && !DOOR_DEPENDENCIES.contains(&dep.as_str())
            {
                problems.push(format!(
                    "the door {name} must reach memories and stores through the contract, not depend on {dep}"
                ));
            }
            if dep == BENCHKIT && normal && name != "xtask" {
                problems.push(format!(
                    "{BENCHKIT} is for benches: {name} may have it only as a dev-dependency"
                ));
            }
            if dep == "anyhow" && !ANYHOW_USERS.contains(&name) {
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
        assert!(packages.iter().any(|p| p.name == "agent-memory-core"));
        assert_eq!(violations(&packages), Vec::<String>::new());
    }

    #[test]
    fn each_rule_catches_its_violation() {
        let table = [
            (
                pkg("agent-memory-core", &[("serde", None)]),
                "agent-memory-core must have no dependencies, but depends on serde",
            ),
            (
                pkg(
                    "agent-memory-trajectory",
                    &[("agent-memory-recording", None)],
                ),
                "feature crate agent-memory-trajectory must not depend on agent-memory-recording",
            ),
            (
                pkg("agent-memory-recording", &[("agent-memory-sqlite", None)]),
                "feature crate agent-memory-recording must not depend on agent-memory-sqlite",
            ),
            (
                pkg("agent-memory-turns", &[("rusqlite", Some("dev"))]),
                "only agent-memory-sqlite may use rusqlite, but agent-memory-turns does",
            ),
            (
                pkg("agent-memory-browser", &[("agent-memory-postgres", None)]),
                "feature crate agent-memory-browser must not depend on agent-memory-postgres",
            ),
            (
                pkg("agent-memory-cli", &[("postgres", None)]),
                "only agent-memory-postgres may use postgres, but agent-memory-cli does",
            ),
            (
                pkg("agent-memory-trajectory", &[(BENCHKIT, None)]),
                "agent-memory-benchkit is for benches: agent-memory-trajectory may have it only as a dev-dependency",
            ),
            (
                pkg("agent-memory-postgres", &[("rusqlite", None)]),
                "only agent-memory-sqlite may use rusqlite, but agent-memory-postgres does",
            ),
            (
                pkg("agent-memory-node", &[("agent-memory-sqlite", None)]),
                "the door agent-memory-node must reach memories and stores through the contract, not depend on agent-memory-sqlite",
            ),
            (
                pkg("agent-memory-node", &[("agent-memory-browser", None)]),
                "the door agent-memory-node must reach memories and stores through the contract, not depend on agent-memory-browser",
            ),
            (
                pkg("agent-memory-python", &[("agent-memory-trajectory", None)]),
                "the door agent-memory-python must reach memories and stores through the contract, not depend on agent-memory-trajectory",
            ),
            (
                pkg("agent-memory-cli", &[("agent-memory-kit", None)]),
                "the door agent-memory-cli must reach memories and stores through the contract, not depend on agent-memory-kit",
            ),
            (
                pkg("agent-memory-sqlite", &[("anyhow", None)]),
                "only the cli and xtask may use anyhow, but agent-memory-sqlite does",
            ),
        ];
        for (package, expected) in table {
            assert_eq!(violations(&[package]), vec![expected.to_owned()]);
        }
    }

    #[test]
    fn allowed_edges_pass() {
        let ok = [
            pkg("agent-memory-core", &[("proptest", Some("dev"))]),
            pkg(
                "agent-memory-recording",
                &[
                    ("agent-memory-core", None),
                    ("agent-memory-sqlite", Some("dev")),
                ],
            ),
            pkg(
                "agent-memory-sqlite",
                &[("rusqlite", None), ("agent-memory-core", None)],
            ),
            pkg(
                "agent-memory-cli",
                &[
                    ("anyhow", None),
                    ("agent-memory-contract", None),
                    ("agent-memory-core", None),
                    ("agent-memory-browser", Some("dev")),
                ],
            ),
            pkg(
                "agent-memory-python",
                &[
                    ("agent-memory-contract", None),
                    ("agent-memory-cli", None),
                    ("pyo3", None),
                ],
            ),
            pkg("agent-memory-postgres", &[("rusqlite", Some("dev"))]),
            pkg("agent-memory-cli", &[("agent-memory-sqlite", Some("dev"))]),
            pkg(BENCHKIT, &[("postgres", None)]),
            pkg("agent-memory-trajectory", &[(BENCHKIT, Some("dev"))]),
            pkg("xtask", &[(BENCHKIT, None)]),
        ];
        assert_eq!(violations(&ok), Vec::<String>::new());
    }
}
