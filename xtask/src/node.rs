//! `cargo xtask node`: the npm package `durable-agent-memory` (`bindings/node`) tested as its
//! users get it.
//!
//! In order: `npm ci` installs the package's build tools (pinned by its `package-lock.json`);
//! the types generated from `schemas/` are checked against the committed ones (the rest of
//! the generated surface is `cargo xtask codegen --check`'s); `scripts/build.mjs` builds the
//! addon with napi-rs from the workspace's own target folder and dev profile (so the
//! dependencies the other steps compiled are reused) and compiles the TypeScript sources
//! (`ts/`) into `lib/` with `tsc`; `npm pack` makes the tarball; a fresh project under
//! `target/node-test/` installs it (a copy, not a link to the sources), with the pinned
//! Anthropic SDK beside it, and runs the package's tests there with node's test runner, then
//! type-checks an example against the installed declarations with `tsc --noEmit`. Last come
//! the ```ts blocks of the README and of the package's own README, each README's as a
//! newcomer meets them (`scripts/readme-examples.mjs`): a fresh folder made a project by
//! `npm init -y` (CommonJS), the tarball installed there with the pinned Anthropic SDK, tsx,
//! TypeScript and @types/node, each block saved as a `.ts` file, all type-checked by `tsc`,
//! then run by `tsx` in that folder in the README's order, and all again (never reaching the
//! Anthropic API: the examples run without `ANTHROPIC_API_KEY`).
//!
//! `cargo xtask bench` measures W-bad through the package (`bench`): the addon built with the
//! release profile, packed and installed into a fresh project as above, runs
//! `bindings/node/bench/w_bad.mjs` there, next to the Rust library's W-bad figures of the same
//! run. With `--peers` the same project also runs `bindings/node/bench/bad_peer.mjs`: the
//! browser-agent-driver drop-in against the reference's own classes (from the copy
//! [`crate::peers::bad_reference`] finds), at the sizes up to 10,000.
//!
//! Without Node.js or npm the step says so and passes on a developer's machine; with
//! `CI=true` either missing is an error, never a skip.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::{target_dir, workspace_root};

/// The Anthropic SDK the test project installs beside the package (an optional peer of it):
/// the memory tool handlers are tested through its `betaMemoryTool` helper and tool runner,
/// and the READMEs' examples use it beside the package as a newcomer would.
const ANTHROPIC_SDK: &str = "@anthropic-ai/sdk@1.14.0";

pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask node` takes no arguments (got {extra:?})");
    }
    let root = workspace_root();
    let package = root.join("bindings/node");
    if !node_and_npm(
        "the Node package's tests",
        "the Node package was not tested",
    )? {
        return Ok(());
    }
    schema_types(true)?;
    let started = Instant::now();
    step(
        "building the addon",
        Command::new("node")
            .arg("scripts/build.mjs")
            .current_dir(&package),
    )?;
    println!("addon built in {:.1}s", started.elapsed().as_secs_f64());
    let work = target_dir(&root).join("node-test");
    let tarball = pack(&package, &work)?;
    let project = fresh_project(&work, &tarball, &[ANTHROPIC_SDK])?;
    copy_folder(&package.join("test"), &project.join("test"))?;
    step(
        "the package's tests (node --test)",
        Command::new("node")
            .args(["--test", "--test-reporter=spec", "--test-concurrency=1"])
            .args(test_files(&project.join("test"))?)
            .current_dir(&project),
    )?;
    let tsc = package.join("node_modules/typescript/bin/tsc");
    step(
        "type-checking the examples (tsc --noEmit)",
        Command::new("node")
            .arg(&tsc)
            .args(["--project", "test/types/tsconfig.json"])
            .current_dir(&project),
    )?;
    for (readme, folder) in [
        (root.join("README.md"), "readme"),
        (package.join("README.md"), "readme-package"),
    ] {
        step(
            &format!("the TypeScript examples of {}", readme.display()),
            Command::new("node")
                .arg(package.join("scripts/readme-examples.mjs"))
                .arg(&readme)
                .arg(work.join(folder))
                .arg(&tarball)
                .arg(ANTHROPIC_SDK),
        )?;
    }
    Ok(())
}

/// vitest, pinned, which browser-agent-driver's own tests run under.
const VITEST: &str = "vitest@4.1.12";

/// browser-agent-driver's test files (under its `tests/`) that import the modules the drop-in
/// replaces: `src/memory/` and `src/context-budget.ts`.
const ANCHOR_TESTS: [&str; 6] = [
    "context-budget",
    "memory-subsystem",
    "replay-store-candidate",
    "run-registry",
    "session-memory",
    "trajectory-store",
];

/// `cargo xtask anchors`: browser-agent-driver's own tests of what the drop-in replaces, run
/// against the packed package. The copy of its sources is the one `cargo xtask bench --peers`
/// uses ([`crate::peers::bad_reference`]); without one the task says how to get it and
/// passes, except under `CI=true`. The package is built (dev profile), packed and installed
/// into a fresh project under `target/anchor-tests/` with vitest; each of [`ANCHOR_TESTS`] is
/// copied there with its imports of the replaced modules pointed at
/// `durable-agent-memory/browser-agent-driver` ([`point_at_drop_in`]), and vitest runs them.
pub(crate) fn anchor_tests(args: &[String]) -> Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask anchors` takes no arguments (got {extra:?})");
    }
    let root = workspace_root();
    if !node_and_npm("the anchor's tests", "the anchor's tests were not run")? {
        return Ok(());
    }
    let Some(reference) = crate::peers::bad_reference(&target_dir(&root))? else {
        if in_ci() {
            bail!("no copy of browser-agent-driver's sources: its tests cannot run");
        }
        return Ok(());
    };
    let package = root.join("bindings/node");
    build_package(&package)?;
    let work = target_dir(&root).join("anchor-tests");
    let tarball = pack(&package, &work)?;
    let project = fresh_project(&work, &tarball, &[VITEST])?;
    let tests = project.join("tests");
    std::fs::create_dir_all(&tests).with_context(|| format!("creating {}", tests.display()))?;
    for name in ANCHOR_TESTS {
        let from = reference.join("tests").join(format!("{name}.test.ts"));
        let text = std::fs::read_to_string(&from)
            .with_context(|| format!("reading {}", from.display()))?;
        let pointed = point_at_drop_in(&text).with_context(|| format!("in {}", from.display()))?;
        std::fs::write(tests.join(format!("{name}.test.ts")), pointed)?;
    }
    step(
        "browser-agent-driver's own tests against the drop-in (vitest)",
        Command::new("npx")
            .args(["--no-install", "vitest", "run", "tests"])
            .current_dir(&project),
    )
}

/// `text` (a test file of browser-agent-driver) with each import from `../src/memory/*.js`,
/// `../src/types.js` or `../src/context-budget.js` taken from the drop-in instead; an import
/// of any other module of `../src/` is an error naming it, since the drop-in does not replace
/// it.
fn point_at_drop_in(text: &str) -> Result<String> {
    const DROP_IN: &str = "durable-agent-memory/browser-agent-driver";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("../src/") {
        let quote = rest[..at].chars().next_back();
        let Some(quote @ ('\'' | '"')) = quote else {
            out.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
            continue;
        };
        let Some(len) = rest[at..].find(quote) else {
            bail!("an import of {:?} has no closing quote", &rest[at..]);
        };
        let module = &rest[at + "../src/".len()..at + len];
        let replaced = matches!(module, "types.js" | "context-budget.js")
            || module
                .strip_prefix("memory/")
                .is_some_and(|m| m.ends_with(".js") && !m.contains('/'));
        if !replaced {
            bail!("it imports ../src/{module}, which the drop-in does not replace");
        }
        out.push_str(&rest[..at]);
        out.push_str(DROP_IN);
        rest = &rest[at + len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// W-bad through the package (`bindings/node/bench/w_bad.mjs`) at each of `sizes`, its
/// figures appended to `figures/node.jsonl`, each next to the Rust library's figure of the
/// same name in `figures/W-bad.jsonl` (written by `cargo bench` earlier in the run).
///
/// `bad_reference`, when given, is a copy of browser-agent-driver's sources: the drop-in is
/// then measured against its classes too, figures appended to `figures/bad-peer.jsonl`.
pub(crate) fn bench(
    root: &Path,
    sizes: &str,
    figures: &Path,
    bad_reference: Option<&Path>,
) -> Result<()> {
    if let Some(missing) = ["node", "npm"].into_iter().find(|tool| !runs(tool)) {
        println!("{missing} not found: W-bad (Node) is not measured");
        return Ok(());
    }
    let package = root.join("bindings/node");
    install_tools(&package)?;
    // The `bench` feature adds the Rust-side timer the comparison in the process needs.
    step(
        "building the release addon",
        Command::new("node")
            .args(["scripts/build.mjs", "--release", "--features", "bench"])
            .current_dir(&package),
    )?;
    let work = target_dir(root).join("node-bench");
    let tarball = pack(&package, &work)?;
    let project = fresh_project(&work, &tarball, &[])?;
    let script = project.join("w_bad.mjs");
    std::fs::copy(package.join("bench/w_bad.mjs"), &script)
        .with_context(|| format!("copying the bench into {}", project.display()))?;
    step(
        "W-bad through the Node package",
        Command::new("node")
            .arg(&script)
            .args(["--sizes", sizes, "--figures"])
            .arg(figures.join("node.jsonl"))
            .arg("--rust")
            .arg(figures.join("W-bad.jsonl"))
            .env_remove("AGENT_MEMORY_DB")
            .current_dir(&project),
    )?;
    if let Some(reference) = bad_reference.filter(|_| sizes_up_to_10k(sizes).is_some()) {
        // The reference reads every file again after each save: past 10,000 a size takes
        // minutes and says nothing the two sizes below do not.
        let peer_sizes = sizes_up_to_10k(sizes).unwrap_or_default();
        let script = project.join("bad_peer.mjs");
        std::fs::copy(package.join("bench/bad_peer.mjs"), &script)
            .with_context(|| format!("copying the peer bench into {}", project.display()))?;
        step(
            "the browser-agent-driver drop-in against the reference's classes",
            Command::new("node")
                .arg(&script)
                .arg("--reference")
                .arg(reference)
                .arg("--typescript")
                .arg(package.join("node_modules/typescript"))
                .args(["--sizes", &peer_sizes, "--figures"])
                .arg(figures.join("bad-peer.jsonl"))
                .env_remove("AGENT_MEMORY_DB")
                .current_dir(&project),
        )?;
    }
    // The bench's addon is the release build: the next `cargo xtask node` builds its own.
    Ok(())
}

/// The sizes of `sizes` (comma-separated) up to 10,000, comma-separated, or `None` if none.
fn sizes_up_to_10k(sizes: &str) -> Option<String> {
    let kept: Vec<&str> = sizes
        .split(',')
        .filter(|n| n.parse::<u64>().is_ok_and(|n| n <= 10_000))
        .collect();
    (!kept.is_empty()).then(|| kept.join(","))
}

/// The TypeScript shapes of `schemas/` (`bindings/node/ts/generated/schemas.ts`), written by
/// the package's `scripts/generate-types.mjs` (json-schema-to-typescript, pinned by its lock
/// file), or with `check` compared with the committed file: `cargo xtask codegen`'s part that
/// needs Node.js. Without Node.js or npm it says so and passes, except under `CI=true`.
pub(crate) fn schema_types(check: bool) -> Result<()> {
    let skipped = format!(
        "the TypeScript types of schemas/ were not {}",
        if check { "checked" } else { "written" }
    );
    if !node_and_npm("the TypeScript types of schemas/", &skipped)? {
        return Ok(());
    }
    let package = workspace_root().join("bindings/node");
    install_tools(&package)?;
    let mut command = Command::new("node");
    command
        .arg("scripts/generate-types.mjs")
        .args(check.then_some("--check"))
        .current_dir(&package);
    step(
        if check {
            "types from schemas/ are current"
        } else {
            "writing the types of schemas/"
        },
        &mut command,
    )
}

/// The package built as `npm run build` builds it (the addon for this machine, with the dev
/// profile, and `lib/`), its build tools installed first when missing.
pub(crate) fn build_package(package: &Path) -> Result<()> {
    install_tools(package)?;
    step(
        "building the package",
        Command::new("node")
            .arg("scripts/build.mjs")
            .current_dir(package),
    )
}

/// `npm ci` when the installed tools are missing or older than the lock file.
fn install_tools(package: &Path) -> Result<()> {
    let installed = package.join("node_modules/.package-lock.json");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let current = match (
        modified(&installed),
        modified(&package.join("package-lock.json")),
    ) {
        (Some(installed), Some(lock)) => installed >= lock,
        _ => false,
    };
    if current {
        return Ok(());
    }
    step(
        "installing the build tools (npm ci)",
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(package),
    )
}

/// `npm pack` into `work`; returns the tarball.
fn pack(package: &Path, work: &Path) -> Result<PathBuf> {
    let destination = work.join("pack");
    if destination.exists() {
        std::fs::remove_dir_all(&destination)
            .with_context(|| format!("removing {}", destination.display()))?;
    }
    std::fs::create_dir_all(&destination)
        .with_context(|| format!("creating {}", destination.display()))?;
    step(
        "packing the tarball (npm pack)",
        Command::new("npm")
            .args(["pack", "--silent", "--pack-destination"])
            .arg(&destination)
            .current_dir(package),
    )?;
    let tarballs: Vec<PathBuf> = std::fs::read_dir(&destination)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "tgz"))
        .collect();
    match tarballs.as_slice() {
        [one] => Ok(one.clone()),
        other => bail!("npm pack wrote {} tarballs, expected one", other.len()),
    }
}

/// A new project in `work/project` with the tarball installed from its file, and `beside`
/// from the registry.
fn fresh_project(work: &Path, tarball: &Path, beside: &[&str]) -> Result<PathBuf> {
    let project = work.join("project");
    if project.exists() {
        std::fs::remove_dir_all(&project)
            .with_context(|| format!("removing {}", project.display()))?;
    }
    std::fs::create_dir_all(&project).with_context(|| format!("creating {}", project.display()))?;
    std::fs::write(
        project.join("package.json"),
        "{\n  \"name\": \"durable-agent-memory-test\",\n  \"private\": true,\n  \"version\": \"0.0.0\"\n}\n",
    )?;
    step(
        "installing the tarball into a fresh project",
        Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--no-package-lock"])
            .arg(tarball)
            .args(beside)
            .current_dir(&project),
    )?;
    Ok(project)
}

/// The test files (`*.test.mjs`) in `folder`, as paths relative to its parent; their helpers
/// are modules beside them that node's runner must not run as tests.
fn test_files(folder: &Path) -> Result<Vec<String>> {
    let mut files: Vec<String> = std::fs::read_dir(folder)
        .with_context(|| format!("reading {}", folder.display()))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".test.mjs"))
        .map(|name| format!("test/{name}"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no *.test.mjs files in {}", folder.display());
    }
    Ok(files)
}

fn copy_folder(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_folder(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

fn step(what: &str, command: &mut Command) -> Result<()> {
    println!("--- {what}");
    let status = command
        .status()
        .with_context(|| format!("{what}: could not start {:?}", command.get_program()))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// Whether Node.js and npm are installed. When either is missing: under `CI=true` an error
/// saying that `needs` needs them, else `false` after saying `skipped` (what was not done).
fn node_and_npm(needs: &str, skipped: &str) -> Result<bool> {
    let Some(missing) = ["node", "npm"].into_iter().find(|tool| !runs(tool)) else {
        return Ok(true);
    };
    if in_ci() {
        bail!("{missing} is not installed: {needs} need Node.js 18+ and npm");
    }
    println!("{missing} not found: {skipped} (CI=true makes this an error)");
    Ok(false)
}

fn runs(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

#[cfg(test)]
mod tests {
    use super::point_at_drop_in;

    #[test]
    fn the_replaced_modules_are_imported_from_the_drop_in() {
        let text = "import { describe } from 'vitest';\n\
                    import { TrajectoryStore } from '../src/memory/store.js';\n\
                    import type { Session } from \"../src/memory/knowledge.js\"\n\
                    import type { Turn } from '../src/types.js';\n\
                    import { ContextBudget } from '../src/context-budget.js';\n\
                    // see ../src/ for the reference\n";
        let pointed = point_at_drop_in(text).expect("every import is replaced");
        assert_eq!(
            pointed,
            "import { describe } from 'vitest';\n\
             import { TrajectoryStore } from 'durable-agent-memory/browser-agent-driver';\n\
             import type { Session } from \"durable-agent-memory/browser-agent-driver\"\n\
             import type { Turn } from 'durable-agent-memory/browser-agent-driver';\n\
             import { ContextBudget } from 'durable-agent-memory/browser-agent-driver';\n\
             // see ../src/ for the reference\n"
        );
    }

    #[test]
    fn an_import_the_drop_in_does_not_replace_is_named() {
        let error = point_at_drop_in("import { Runner } from '../src/runner/runner.js'\n")
            .expect_err("the runner is not replaced");
        assert!(
            error.to_string().contains("../src/runner/runner.js"),
            "{error}"
        );
        assert!(point_at_drop_in("import x from '../src/memory/a/b.js'").is_err());
        assert!(point_at_drop_in("import x from '../src/memory/store.js").is_err());
    }
}
