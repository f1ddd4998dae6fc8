//! A harness for crash tests: a test binary (`harness = false`) re-executes itself as a
//! writer, kills it with SIGKILL at random moments from a fixed seed, and checks what the
//! writer left behind after each kill.
//!
//! The writer reports each write it has committed as one line on its stdout; the check
//! receives those lines and must find every reported write, whole, and nothing half-written.
//!
//! ```no_run
//! use std::path::Path;
//! use std::process::ExitCode;
//! use agent_memory_core::testkit::crash::{CrashTest, KillLoop};
//!
//! fn write_forever(path: &Path, round: u64) -> Result<(), String> { Ok(()) }
//! fn check(path: &Path, round: u64, committed: &[String]) -> Result<u64, String> { Ok(committed.len() as u64) }
//!
//! fn main() -> ExitCode {
//!     let dir = std::env::temp_dir().join("crash-example");
//!     CrashTest { name: "sigkill_loses_nothing", child: write_forever }
//!         .main(|| KillLoop::from_env(0x5eed).run(&dir.join("data"), check))
//! }
//! ```
//!
//! [`writes`] holds a writer and a check that serve any store implementing the store traits.

pub mod writes;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use crate::SplitMix64;

/// Set in the child's environment: the path it writes to.
pub const CHILD_ENV: &str = "AGENT_MEMORY_CRASH_CHILD";
/// Set in the child's environment: the round number (also the child's seed).
pub const ROUND_ENV: &str = "AGENT_MEMORY_CRASH_ROUND";
/// Read by [`KillLoop::from_env`]: how many kills (default 50).
pub const KILLS_ENV: &str = "AGENT_MEMORY_CRASH_KILLS";

/// One crash test binary: its name and the writer it runs as a child.
pub struct CrashTest {
    /// The test's name, as the harness reports it.
    pub name: &'static str,
    /// The writer: writes to the path forever, printing one line per committed write.
    pub child: fn(&Path, u64) -> Result<(), String>,
}

impl CrashTest {
    /// The binary's `main`: runs the child when the environment says so, answers `--list`,
    /// and otherwise runs `parent`, printing its summary and a libtest-like result line.
    pub fn main(&self, parent: impl FnOnce() -> Result<String, String>) -> ExitCode {
        if let Ok(path) = std::env::var(CHILD_ENV) {
            let round = std::env::var(ROUND_ENV)
                .ok()
                .and_then(|r| r.parse().ok())
                .unwrap_or(0);
            return match (self.child)(Path::new(&path), round) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("crash child: {e}");
                    ExitCode::FAILURE
                }
            };
        }
        // Filters from the libtest harness are not ours to honour; answer the list request
        // so tools that enumerate tests see this one.
        if std::env::args().any(|a| a == "--list") {
            println!("{}: test", self.name);
            return ExitCode::SUCCESS;
        }
        match parent() {
            Ok(summary) => {
                println!("{summary}");
                println!("1 passed, 0 failed");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{} FAILED: {e}", self.name);
                println!("0 passed, 1 failed");
                ExitCode::FAILURE
            }
        }
    }
}

/// The parent's loop: start the child, let it write for a random while, kill it, check.
#[derive(Debug, Clone, Copy)]
pub struct KillLoop {
    /// How many times the child is started and killed.
    pub kills: u64,
    /// The seed of the pauses before each kill.
    pub seed: u64,
    /// The shortest pause before a kill, in milliseconds (default 20).
    pub min_pause_ms: u64,
    /// The end of the pauses before a kill, in milliseconds, exclusive (default 140). Pauses
    /// are drawn uniformly between the two, so they should span the write the test wants
    /// interrupted.
    pub max_pause_ms: u64,
}

impl KillLoop {
    /// [`KILLS_ENV`] kills (50 when unset) with pauses of 20 to 140 ms from `seed`.
    pub fn from_env(seed: u64) -> Self {
        let kills = std::env::var(KILLS_ENV)
            .ok()
            .and_then(|k| k.parse().ok())
            .unwrap_or(50);
        KillLoop {
            kills,
            seed,
            min_pause_ms: 20,
            max_pause_ms: 140,
        }
    }

    /// The same loop with pauses from `min_ms` up to (not including) `max_ms` milliseconds.
    pub fn pauses(self, min_ms: u64, max_ms: u64) -> Self {
        KillLoop {
            min_pause_ms: min_ms,
            max_pause_ms: max_ms.max(min_ms + 1),
            ..self
        }
    }

    /// Runs the rounds on `path`, the child being this binary re-executed as [`CrashTest`]'s
    /// writer; `check(path, round, committed lines)` returns how many committed writes it
    /// verified. Returns a one-line summary.
    pub fn run(
        &self,
        path: &Path,
        check: impl FnMut(&Path, u64, &[String]) -> Result<u64, String>,
    ) -> Result<String, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        self.run_commands(
            path,
            |path, round| {
                let mut command = Command::new(&exe);
                command
                    .env(CHILD_ENV, path)
                    .env(ROUND_ENV, round.to_string());
                command
            },
            check,
        )
    }

    /// Runs the rounds with any program as the child: `child(path, round)` makes the command
    /// of each round (a command-line tool writing to `path`, say); each line it prints to
    /// stdout before the kill is handed to `check`, as [`run`](Self::run) does.
    pub fn run_commands(
        &self,
        path: &Path,
        mut child: impl FnMut(&Path, u64) -> Command,
        mut check: impl FnMut(&Path, u64, &[String]) -> Result<u64, String>,
    ) -> Result<String, String> {
        let mut rng = SplitMix64::new(self.seed);
        let mut verified = 0u64;
        let spread = self.max_pause_ms.saturating_sub(self.min_pause_ms).max(1);
        for round in 0..self.kills {
            let mut child = child(path, round)
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|e| format!("spawn child: {e}"))?;
            let stdout = child.stdout.take().ok_or("child has no stdout")?;
            let reader = std::thread::spawn(move || {
                BufReader::new(stdout)
                    .lines()
                    .map_while(Result::ok)
                    .collect::<Vec<String>>()
            });
            // Let the child open the file and write for a random while, then kill it.
            std::thread::sleep(Duration::from_millis(self.min_pause_ms + rng.below(spread)));
            child.kill().map_err(|e| format!("kill child: {e}"))?;
            child.wait().map_err(|e| format!("reap child: {e}"))?;
            let lines = reader.join().map_err(|_| "reader thread panicked")?;
            verified += check(path, round, &lines)?;
        }
        Ok(format!(
            "{} kills, {verified} committed writes verified",
            self.kills
        ))
    }
}
