//! Random numbers and ids from an injectable source, so tests and benchmarks are
//! deterministic and production ids are unpredictable.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The splitmix64 generator every benchmark workload (W-rec, W-traj, W-turn, W-bad) is defined with.
///
/// ```
/// use agent_memory_core::SplitMix64;
///
/// let mut rng = SplitMix64::new(0);
/// assert_eq!(rng.next_u64(), 0xe220a8397b1dcdaf);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose first output is determined by `seed`.
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix(self.state)
    }

    /// A number in `0..n` by plain modulo (the bias is kept, as the workloads define it).
    /// `below(0)` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        let bits = self.next_u64();
        bits.checked_rem(n).unwrap_or(0)
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A shared source of random bits for ids. Implementations are thread safe.
pub trait IdSource: Send + Sync {
    /// The next 64 random bits.
    fn next_u64(&self) -> u64;

    /// `len` random characters of `0-9a-z`, as the browser agent's run ids use.
    fn base36(&self, len: usize) -> String {
        const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
        (0..len)
            .map(|_| char::from(DIGITS[(self.next_u64() % 36) as usize]))
            .collect()
    }
}

impl<I: IdSource + ?Sized> IdSource for &I {
    fn next_u64(&self) -> u64 {
        (**self).next_u64()
    }
}

impl<I: IdSource + ?Sized> IdSource for std::sync::Arc<I> {
    fn next_u64(&self) -> u64 {
        (**self).next_u64()
    }
}

/// Unpredictable ids for production: splitmix64 seeded from the process's hash seed.
#[derive(Debug)]
pub struct RandomIds {
    state: AtomicU64,
}

impl RandomIds {
    /// A generator seeded from the standard library's per-process random hash keys.
    pub fn new() -> Self {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(GOLDEN_GAMMA);
        RandomIds {
            state: AtomicU64::new(hasher.finish()),
        }
    }
}

impl Default for RandomIds {
    fn default() -> Self {
        RandomIds::new()
    }
}

impl IdSource for RandomIds {
    fn next_u64(&self) -> u64 {
        mix(self
            .state
            .fetch_add(GOLDEN_GAMMA, Ordering::Relaxed)
            .wrapping_add(GOLDEN_GAMMA))
    }
}

/// Deterministic ids for tests: the splitmix64 sequence of a fixed seed, shared across threads.
#[derive(Debug)]
pub struct SeededIds {
    state: AtomicU64,
}

impl SeededIds {
    /// A generator that yields the same sequence as [`SplitMix64::new(seed)`](SplitMix64::new).
    pub const fn new(seed: u64) -> Self {
        SeededIds {
            state: AtomicU64::new(seed),
        }
    }
}

impl IdSource for SeededIds {
    fn next_u64(&self) -> u64 {
        mix(self
            .state
            .fetch_add(GOLDEN_GAMMA, Ordering::Relaxed)
            .wrapping_add(GOLDEN_GAMMA))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_the_workload_vectors() {
        let mut rng = SplitMix64::new(42);
        let got: Vec<u64> = (0..5).map(|_| rng.next_u64()).collect();
        assert_eq!(
            got,
            [
                13679457532755275413,
                2949826092126892291,
                5139283748462763858,
                6349198060258255764,
                701532786141963250
            ]
        );
    }

    #[test]
    fn seeded_ids_follow_splitmix() {
        let ids = SeededIds::new(7);
        let mut rng = SplitMix64::new(7);
        for _ in 0..10 {
            assert_eq!(ids.next_u64(), rng.next_u64());
        }
    }

    #[test]
    fn base36_has_the_asked_length_and_alphabet() {
        let id = SeededIds::new(1).base36(6);
        assert_eq!(id.len(), 6);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
        );
    }

    #[test]
    fn random_ids_differ_between_generators() {
        let a: Vec<u64> = {
            let r = RandomIds::new();
            (0..4).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let r = RandomIds::new();
            (0..4).map(|_| r.next_u64()).collect()
        };
        assert_ne!(a, b);
    }

    #[test]
    fn below_zero_is_zero() {
        assert_eq!(SplitMix64::new(3).below(0), 0);
    }
}
