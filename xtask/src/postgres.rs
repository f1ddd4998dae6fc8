//! The throwaway PostgreSQL server of `cargo xtask ci` and `cargo xtask bench`: one cluster
//! (`agent_memory_postgres::cluster`) with its data in `target/<name>`, fresh each run, whose
//! connection string and binaries are handed to every later step through the environment.

use std::path::Path;

use agent_memory_postgres::cluster::{self, Cluster};
use anyhow::{Context, Result, bail};

/// The variable the PostgreSQL tests and benches read the server's connection string from.
pub(crate) const SERVER_VAR: &str = "AGENT_MEMORY_TEST_POSTGRES";

/// Whether this run is CI (`CI=true`), where a missing server is an error, never a skip.
pub(crate) fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A started cluster and the variables that name it to child processes.
pub(crate) struct Server {
    cluster: Cluster,
}

impl Server {
    /// `AGENT_MEMORY_TEST_POSTGRES` (the Unix socket URL) and `AGENT_MEMORY_PG_BIN`.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        vec![
            (SERVER_VAR.to_owned(), self.cluster.url()),
            (
                cluster::BIN_VAR.to_owned(),
                self.cluster.bin_dir().display().to_string(),
            ),
        ]
    }

    /// Stops the server (fast shutdown).
    pub(crate) fn stop(mut self) -> Result<()> {
        self.cluster.stop().with_context(|| {
            format!(
                "stopping the PostgreSQL cluster in {}",
                self.cluster.data_dir().display()
            )
        })
    }
}

/// Starts a fresh cluster in `target/<name>`. Without server binaries: an error naming what
/// is missing under `CI=true`, otherwise a warning and `None`.
pub(crate) fn start(root: &Path, name: &str) -> Result<Option<Server>> {
    let bin = match cluster::bin_dir() {
        Ok(bin) => bin,
        Err(e) if is_ci() => {
            bail!("CI=true and PostgreSQL is needed for the shared store's tests: {e}")
        }
        Err(e) => {
            println!(
                "warning: {e}; the PostgreSQL tests and benches are skipped (under CI=true this fails)"
            );
            return Ok(None);
        }
    };
    let data_dir = crate::target_dir(root).join(name);
    let started = std::time::Instant::now();
    let cluster = Cluster::start_with_binaries(&bin, &data_dir).with_context(|| {
        format!(
            "starting a throwaway PostgreSQL cluster in {} with {}",
            data_dir.display(),
            bin.display()
        )
    })?;
    println!(
        "PostgreSQL from {} on {} and 127.0.0.1:{}, data in {}, started in {:.1}s",
        bin.display(),
        cluster.socket_dir().display(),
        cluster.port(),
        data_dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(Some(Server { cluster }))
}
