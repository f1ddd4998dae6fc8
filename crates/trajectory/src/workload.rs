//! W-traj, the deterministic benchmark workload, ported from its Python definition
//! (`w_traj.py`) so that [`digest`] matches `python3 w_traj.py digest N` byte for byte.

use agent_memory_core::SplitMix64;
use sha2::{Digest, Sha256};

/// The partition every W-traj episode is recorded in.
pub const PARTITION: &str = "bench";
/// The fingerprint fields.
pub const FIELDS: [&str; 2] = ["problem_topology", "affected_layer"];
const N_LAYERS: u64 = 10;
const N_FINGERPRINTS: u64 = 100;
const N_ACTIONS: u64 = 8;
const TRAJ_LEN: usize = 5;
const N_QUERIES: usize = 1000;

/// One generated episode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadEpisode {
    /// `problem_topology` value, `t0`..`t9`.
    pub topology: String,
    /// `affected_layer` value, `l0`..`l9`.
    pub layer: String,
    /// Five actions `a0`..`a7`.
    pub trajectory: Vec<String>,
    /// Whether it succeeded.
    pub success: bool,
}

/// A generated workload of size `n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// The episodes, in recording order.
    pub episodes: Vec<WorkloadEpisode>,
    /// Exact recall queries: `(topology, layer)`.
    pub exact: Vec<(String, String)>,
    /// Partial recall queries: the layer.
    pub partial: Vec<String>,
}

fn topology(f: u64) -> String {
    format!("t{}", f / N_LAYERS)
}

fn layer(f: u64) -> String {
    format!("l{}", f % N_LAYERS)
}

/// The canonical trajectory of fingerprint `f`: five draws of a fresh generator seeded
/// `1000 + f`.
pub fn canonical_trajectory(f: u64) -> Vec<String> {
    let mut rng = SplitMix64::new(1000 + f);
    (0..TRAJ_LEN)
        .map(|_| format!("a{}", rng.below(N_ACTIONS)))
        .collect()
}

/// Generates the workload of size `n` (main stream seeded 42, 8 draws per episode).
pub fn generate(n: usize) -> Workload {
    let canonical: Vec<Vec<String>> = (0..N_FINGERPRINTS).map(canonical_trajectory).collect();
    let mut rng = SplitMix64::new(42);
    let episodes = (0..n)
        .map(|_| {
            let f = rng.below(N_FINGERPRINTS);
            let c = rng.below(100);
            let random: Vec<String> = (0..TRAJ_LEN)
                .map(|_| format!("a{}", rng.below(N_ACTIONS)))
                .collect();
            let s = rng.below(100);
            WorkloadEpisode {
                topology: topology(f),
                layer: layer(f),
                trajectory: if c < 70 {
                    canonical[f as usize].clone()
                } else {
                    random
                },
                success: s < 80,
            }
        })
        .collect();
    let exact = (0..N_QUERIES)
        .map(|_| {
            let f = rng.below(N_FINGERPRINTS);
            (topology(f), layer(f))
        })
        .collect();
    let partial = (0..N_QUERIES)
        .map(|_| format!("l{}", rng.below(N_LAYERS)))
        .collect();
    Workload {
        episodes,
        exact,
        partial,
    }
}

/// The canonical dump's lines (compact JSON, keys sorted), as `w_traj.py dump N` prints them.
pub fn dump_lines(n: usize) -> Vec<String> {
    let w = generate(n);
    let quote = |s: &str| serde_json::Value::from(s).to_string();
    let mut lines = Vec::with_capacity(n + 2 * N_QUERIES);
    for (i, e) in w.episodes.iter().enumerate() {
        let traj: Vec<String> = e.trajectory.iter().map(|a| quote(a)).collect();
        lines.push(format!(
            r#"{{"i":{i},"k":"e","l":{},"ok":{},"t":{},"traj":[{}]}}"#,
            quote(&e.layer),
            e.success,
            quote(&e.topology),
            traj.join(",")
        ));
    }
    for (i, (t, l)) in w.exact.iter().enumerate() {
        lines.push(format!(
            r#"{{"i":{i},"k":"q","l":{},"t":{}}}"#,
            quote(l),
            quote(t)
        ));
    }
    for (i, l) in w.partial.iter().enumerate() {
        lines.push(format!(r#"{{"i":{i},"k":"p","l":{}}}"#, quote(l)));
    }
    lines
}

/// SHA-256 (hex) of the canonical dump, each line followed by `\n`.
pub fn digest(n: usize) -> String {
    let mut hasher = Sha256::new();
    for line in dump_lines(n) {
        hasher.update(line.as_bytes());
        hasher.update(b"\n");
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
