//! Shared fixtures: the reference directory, a scripted id source, fixed clocks.

use std::path::PathBuf;
use std::sync::Mutex;

use agent_memory_browser::tokenize;
use agent_memory_core::store::browser::{Trajectory, TrajectoryStore};
use agent_memory_core::{IdSource, InMemoryStore, Scope, Timestamp};

/// The reference implementation's sample memory directory and rendered output (a copy of
/// the files its real code wrote, kept next to the tests).
pub fn reference_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/bad-examples")
}

/// "Now" of the reference run that rendered the sample: the fork's timestamp.
pub const REFERENCE_NOW: Timestamp = Timestamp::from_millis(1_795_321_223_974);

/// An id source that yields the base36 characters of a fixed text, then zeros.
pub struct ScriptedIds(Mutex<Vec<u64>>);

impl ScriptedIds {
    pub fn spelling(text: &str) -> Self {
        const DIGITS: &str = "0123456789abcdefghijklmnopqrstuvwxyz";
        let mut values: Vec<u64> = text
            .chars()
            .map(|c| {
                DIGITS
                    .find(c)
                    .unwrap_or_else(|| panic!("{c} is not base36")) as u64
            })
            .collect();
        values.reverse();
        ScriptedIds(Mutex::new(values))
    }
}

impl IdSource for ScriptedIds {
    fn next_u64(&self) -> u64 {
        self.0.lock().map(|mut v| v.pop().unwrap_or(0)).unwrap_or(0)
    }
}

/// An in-memory store holding `trajectories` in the shared scope, indexed by their goals.
pub fn store_of(trajectories: &[Trajectory]) -> InMemoryStore {
    let store = InMemoryStore::new();
    for t in trajectories {
        store
            .trajectory_put(&Scope::shared(), t, &tokenize(&t.goal))
            .expect("put");
    }
    store
}
