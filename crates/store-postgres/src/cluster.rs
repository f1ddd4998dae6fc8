//! A throwaway PostgreSQL cluster, for tests and benchmarks: `initdb` into a fresh directory,
//! a server listening on a Unix socket in a short temporary directory and on a free TCP port
//! of 127.0.0.1, trust authentication, stopped when dropped.
//!
//! ```no_run
//! use agent_memory_postgres::PostgresStore;
//! use agent_memory_postgres::cluster::Cluster;
//!
//! let mut cluster = Cluster::start("target/pg-example")?;
//! let store = PostgresStore::connect(&cluster.url())?;
//! # drop(store);
//! cluster.stop()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The server binaries are found by [`bin_dir`]. The server keeps PostgreSQL's default
//! durability (`fsync` on), so a test can stop it with [`Cluster::stop_immediate`] (a crash as
//! far as the database is concerned), [`Cluster::start_again`] and check that every
//! acknowledged write survived.
//!
//! `initdb` and the server refuse to run as root. When this process is root, they run as
//! the `postgres` system user (Debian's package creates it), which is given the data
//! directory; every directory above it must be searchable by that user (a `target/` folder
//! usually is, a `tempfile` directory is not: it is private to its owner).
//!
//! Errors are [`std::io::Error`]s whose message names the program that failed and what it
//! printed (the end of the server's log when the server would not start).

use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// The variable naming the directory of the server binaries (`initdb`, `pg_ctl`, `postgres`).
pub const BIN_VAR: &str = "AGENT_MEMORY_PG_BIN";

/// The database user the cluster is created with (trust authentication, no password).
pub const USER: &str = "postgres";

/// The most connections the server accepts: enough for many agents each with a pool.
pub const MAX_CONNECTIONS: u32 = 300;

/// The longest Unix socket path the kernel accepts (`sun_path` is 108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// The directory of the PostgreSQL server binaries: `$AGENT_MEMORY_PG_BIN` when set, else
/// the newest `/usr/lib/postgresql/<version>/bin` (Debian's layout), else what
/// `pg_config --bindir` prints. The directory must hold `initdb` and `pg_ctl`.
pub fn bin_dir() -> io::Result<PathBuf> {
    if let Some(dir) = std::env::var_os(BIN_VAR).filter(|dir| !dir.is_empty()) {
        let dir = PathBuf::from(dir);
        return check_bin_dir(&dir)
            .map(|()| dir.clone())
            .map_err(|e| context(e, &format!("{BIN_VAR}={}", dir.display())));
    }
    if let Some(dir) = newest_debian_bin_dir(Path::new("/usr/lib/postgresql")) {
        return Ok(dir);
    }
    match Command::new("pg_config").arg("--bindir").output() {
        Ok(output) if output.status.success() => {
            let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
            check_bin_dir(&dir).map(|()| dir.clone()).map_err(|e| {
                context(e, &format!("`pg_config --bindir` names {}", dir.display()))
            })?;
            Ok(dir)
        }
        _ => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "no PostgreSQL server binaries: {BIN_VAR} is not set, there is no \
                 /usr/lib/postgresql/*/bin/initdb and no pg_config on PATH \
                 (on Debian: apt-get install postgresql)"
            ),
        )),
    }
}

/// The `bin` directory of the highest version under `root` (`<root>/<version>/bin/initdb`).
fn newest_debian_bin_dir(root: &Path) -> Option<PathBuf> {
    let mut versions: Vec<(Vec<u32>, PathBuf)> = fs::read_dir(root)
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name().to_str()?.to_owned();
            let version = name
                .split('.')
                .map(|part| part.parse::<u32>().ok())
                .collect::<Option<Vec<u32>>>()?;
            let bin = entry.path().join("bin");
            check_bin_dir(&bin).ok()?;
            Some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn check_bin_dir(dir: &Path) -> io::Result<()> {
    for program in ["initdb", "pg_ctl", "postgres"] {
        let path = dir.join(program);
        if !path.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} does not exist", path.display()),
            ));
        }
    }
    Ok(())
}

/// A running (or stopped) PostgreSQL cluster in a data directory of its own.
///
/// Dropping it stops the server (fast shutdown) and removes the socket directory; the data
/// directory stays for the caller to inspect or remove.
#[derive(Debug)]
pub struct Cluster {
    bin: PathBuf,
    data_dir: PathBuf,
    socket_dir: PathBuf,
    port: u16,
    /// The `postgres` user's uid and gid when the server runs as that user.
    run_as: Option<(u32, u32)>,
    running: bool,
}

impl Cluster {
    /// Creates a cluster in `data_dir` (removed first if it exists: the cluster is always
    /// fresh) with the binaries of [`bin_dir`], and starts it.
    pub fn start(data_dir: impl AsRef<Path>) -> io::Result<Cluster> {
        Cluster::start_with_binaries(&bin_dir()?, data_dir)
    }

    /// Creates a fresh cluster in `data_dir` with the binaries in `bin`, and starts it.
    pub fn start_with_binaries(bin: &Path, data_dir: impl AsRef<Path>) -> io::Result<Cluster> {
        check_bin_dir(bin)?;
        let data_dir = absolute(data_dir.as_ref())?;
        let bin = absolute(bin)?;
        // From here on, dropping `cluster` removes the socket directory on every error.
        let mut cluster = Cluster {
            bin,
            data_dir,
            socket_dir: make_socket_dir()?,
            port: 0,
            run_as: None,
            running: false,
        };
        // The socket directory was just created by this process, so its owner is who we are.
        if fs::metadata(&cluster.socket_dir)?.uid() == 0 {
            cluster.run_as = Some(postgres_user()?);
        }
        // A server left running in this directory by a run that was killed goes first.
        if cluster.data_dir.join("postmaster.pid").exists() {
            let _ = cluster.pg_ctl(&["stop", "-m", "immediate", "-w"]);
        }
        remove_dir_if_present(&cluster.data_dir)?;
        fs::create_dir_all(&cluster.data_dir)
            .map_err(|e| context(e, &format!("creating {}", cluster.data_dir.display())))?;
        if let Some((uid, gid)) = cluster.run_as {
            for dir in [&cluster.data_dir, &cluster.socket_dir] {
                std::os::unix::fs::chown(dir, Some(uid), Some(gid))
                    .map_err(|e| context(e, &format!("giving {} to postgres", dir.display())))?;
            }
        }
        cluster.initdb()?;
        // A free port can be taken by someone else between our probe and the server's bind;
        // a few attempts with fresh ports make that harmless.
        let mut last = None;
        for _ in 0..3 {
            cluster.port = free_port()?;
            cluster.configure()?;
            match cluster.pg_ctl_start() {
                Ok(()) => {
                    cluster.running = true;
                    return Ok(cluster);
                }
                Err(e) if e.to_string().contains("already in use") => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("the server did not start")))
    }

    /// A connection string over the Unix socket, in the URL form the `postgres` crate reads
    /// (`postgres://postgres@/postgres?host=/tmp/...&port=...`).
    pub fn url(&self) -> String {
        format!(
            "postgres://{USER}@/postgres?host={}&port={}",
            self.socket_dir.display(),
            self.port
        )
    }

    /// A connection string over TCP on 127.0.0.1 (`postgres://postgres@127.0.0.1:port/postgres`).
    pub fn tcp_url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/postgres", self.port)
    }

    /// The TCP port on 127.0.0.1 (the socket's name uses it too).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the server's Unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// The cluster's data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The directory of the server binaries the cluster runs.
    pub fn bin_dir(&self) -> &Path {
        &self.bin
    }

    /// The server's log file.
    pub fn log_file(&self) -> PathBuf {
        self.data_dir.join("server.log")
    }

    /// Whether the server was started and not stopped since.
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// Stops the server, disconnecting clients and rolling back their open transactions
    /// (`pg_ctl stop -m fast`); returns once it is down.
    pub fn stop(&mut self) -> io::Result<()> {
        self.stop_mode("fast")
    }

    /// Stops the server at once, without a shutdown checkpoint (`pg_ctl stop -m immediate`):
    /// to the database this is a crash, and the next start recovers from the write-ahead log.
    pub fn stop_immediate(&mut self) -> io::Result<()> {
        self.stop_mode("immediate")
    }

    /// Starts the server again on the same data directory, port and socket (recovering first
    /// after [`Cluster::stop_immediate`]); returns once it accepts connections.
    pub fn start_again(&mut self) -> io::Result<()> {
        if self.running {
            return Ok(());
        }
        self.pg_ctl_start()?;
        self.running = true;
        Ok(())
    }

    fn stop_mode(&mut self, mode: &str) -> io::Result<()> {
        if !self.running {
            return Ok(());
        }
        self.pg_ctl(&["stop", "-m", mode, "-w", "-t", "60"])?;
        self.running = false;
        Ok(())
    }

    fn initdb(&self) -> io::Result<()> {
        let program = self.bin.join("initdb");
        let mut command = Command::new(&program);
        command
            .arg("-D")
            .arg(&self.data_dir)
            .args(["-U", USER, "--auth=trust", "--encoding=UTF8", "--locale=C"])
            // Syncing the fresh files costs seconds on a slow disk and protects against a
            // power cut only; the server's own writes keep their fsync.
            .arg("--no-sync");
        run(command, self.run_as, &program).map(|_| ())
    }

    /// Appends the listening addresses, port and limits to `postgresql.conf`, so a restart
    /// ([`Cluster::start_again`]) finds them again. A later line wins over an earlier one.
    fn configure(&self) -> io::Result<()> {
        use std::io::Write;
        let path = self.data_dir.join("postgresql.conf");
        let mut file = fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| context(e, &format!("opening {}", path.display())))?;
        writeln!(
            file,
            "\n# throwaway cluster\nlisten_addresses = '127.0.0.1'\nport = {}\n\
             unix_socket_directories = '{}'\nmax_connections = {MAX_CONNECTIONS}\n",
            self.port,
            self.socket_dir.display()
        )
        .map_err(|e| context(e, &format!("writing {}", path.display())))
    }

    fn pg_ctl_start(&self) -> io::Result<()> {
        let log = self.log_file();
        let log_len = fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
        let log_arg = log.to_string_lossy().into_owned();
        self.pg_ctl(&["start", "-w", "-t", "120", "-l", &log_arg])
            .map(|_| ())
            .map_err(|e| {
                let tail = log_since(&log, log_len);
                if tail.is_empty() {
                    e
                } else {
                    io::Error::new(e.kind(), format!("{e}; the server's log says: {tail}"))
                }
            })
    }

    fn pg_ctl(&self, args: &[&str]) -> io::Result<Output> {
        pg_ctl_as(&self.bin, &self.data_dir, self.run_as, args)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!(
                "could not stop the PostgreSQL cluster in {}: {e}",
                self.data_dir.display()
            );
        }
        let _ = fs::remove_dir_all(&self.socket_dir);
    }
}

fn pg_ctl_as(
    bin: &Path,
    data_dir: &Path,
    run_as: Option<(u32, u32)>,
    args: &[&str],
) -> io::Result<Output> {
    let program = bin.join("pg_ctl");
    let mut command = Command::new(&program);
    command.args(args).arg("-D").arg(data_dir);
    run(command, run_as, &program)
}

/// Runs `command` (as `run_as` when given) and fails with what it printed unless it succeeds.
fn run(mut command: Command, run_as: Option<(u32, u32)>, program: &Path) -> io::Result<Output> {
    // The server's user may not be allowed into our working directory.
    command.current_dir("/");
    if let Some((uid, gid)) = run_as {
        command.gid(gid).uid(uid);
    }
    let output = command
        .output()
        .map_err(|e| context(e, &format!("could not run {}", program.display())))?;
    if output.status.success() {
        return Ok(output);
    }
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Err(io::Error::other(format!(
        "{} exited with {}: {}",
        program.display(),
        output.status,
        last_lines(&printed, 20)
    )))
}

/// The uid and gid of the `postgres` system user, from `/etc/passwd`.
fn postgres_user() -> io::Result<(u32, u32)> {
    let passwd = fs::read_to_string("/etc/passwd").map_err(|e| {
        context(
            e,
            "running as root, PostgreSQL needs another user: reading /etc/passwd",
        )
    })?;
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            match fields.as_slice() {
                [name, _, uid, gid, ..] if *name == "postgres" => {
                    Some((uid.parse().ok()?, gid.parse().ok()?))
                }
                _ => None,
            }
        })
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "running as root, and /etc/passwd has no `postgres` user to run the server as \
                 (initdb and postgres refuse root; Debian's postgresql package creates the user)",
            )
        })
}

/// A new directory for the server's socket, short enough for the socket path limit.
fn make_socket_dir() -> io::Result<PathBuf> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "am-pg-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    // `.s.PGSQL.65535` follows the directory.
    let room = MAX_SOCKET_PATH - ".s.PGSQL.65535".len() - 1;
    let tmp = std::env::temp_dir();
    let base = if tmp.join(&name).as_os_str().len() <= room {
        tmp
    } else {
        PathBuf::from("/tmp")
    };
    let dir = base.join(name);
    remove_dir_if_present(&dir)?;
    fs::create_dir(&dir).map_err(|e| context(e, &format!("creating {}", dir.display())))?;
    // Any local user may connect (the server's user owns the directory when we are root).
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755))?;
    Ok(dir)
}

/// A TCP port of 127.0.0.1 free at the moment of asking.
fn free_port() -> io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| context(e, "finding a free port on 127.0.0.1"))?;
    Ok(listener.local_addr()?.port())
}

fn absolute(path: &Path) -> io::Result<PathBuf> {
    std::path::absolute(path).map_err(|e| context(e, &format!("resolving {}", path.display())))
}

fn remove_dir_if_present(dir: &Path) -> io::Result<()> {
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(context(e, &format!("removing {}", dir.display()))),
    }
}

/// What was appended to the log at `path` after its first `from` bytes, the last lines only.
fn log_since(path: &Path, from: u64) -> String {
    let mut text = String::new();
    if let Ok(mut file) = fs::File::open(path) {
        let _ = file.seek(SeekFrom::Start(from));
        let _ = file.read_to_string(&mut text);
    }
    last_lines(&text, 20)
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

fn context(error: io::Error, what: &str) -> io::Error {
    io::Error::new(error.kind(), format!("{what}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_version_directory_wins_and_incomplete_ones_are_passed_over() {
        let root = std::env::temp_dir().join(format!("am-pg-bins-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for version in ["9.6", "15", "13"] {
            let bin = root.join(version).join("bin");
            fs::create_dir_all(&bin).unwrap();
            for program in ["initdb", "pg_ctl", "postgres"] {
                fs::write(bin.join(program), "").unwrap();
            }
        }
        // Newer, but without a server binary.
        fs::create_dir_all(root.join("16/bin")).unwrap();
        fs::write(root.join("16/bin/initdb"), "").unwrap();
        fs::create_dir_all(root.join("notes")).unwrap();
        let found = newest_debian_bin_dir(&root);
        fs::remove_dir_all(&root).unwrap();
        assert_eq!(found, Some(root.join("15").join("bin")));
        assert_eq!(newest_debian_bin_dir(&root), None);
    }

    #[test]
    fn a_missing_program_is_named() {
        let error = check_bin_dir(Path::new("/nonexistent/bin")).unwrap_err();
        assert_eq!(error.to_string(), "/nonexistent/bin/initdb does not exist");
    }

    #[test]
    fn socket_directories_leave_room_for_the_socket_name() {
        let dir = make_socket_dir().unwrap();
        let socket = dir.join(".s.PGSQL.65535");
        fs::remove_dir(&dir).unwrap();
        assert!(socket.as_os_str().len() <= MAX_SOCKET_PATH, "{socket:?}");
    }

    #[test]
    fn only_the_last_lines_are_kept() {
        assert_eq!(last_lines("a\n\nb\nc\n", 2), "b | c");
        assert_eq!(last_lines("", 2), "");
    }
}
