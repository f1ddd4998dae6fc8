//! The Rust port of the W-traj generator against `w_traj.py` (`digest 1000`, `vectors`).

use agent_memory_core::SplitMix64;
use agent_memory_trajectory::workload::{canonical_trajectory, digest, generate};

#[test]
fn digest_matches_the_python_generator() {
    // `python3 w_traj.py digest 1000`
    assert_eq!(
        digest(1000),
        "d7d8a7673740cdf188fa23a4439be63ecae0ee5f4f3e2e9f2a52b83ec1e657b7"
    );
    let w = generate(1000);
    assert_eq!(w.episodes.iter().filter(|e| e.success).count(), 803);
    let canonical = w
        .episodes
        .iter()
        .filter(|e| {
            let t: u64 = e.topology[1..].parse().expect("topology");
            let l: u64 = e.layer[1..].parse().expect("layer");
            e.trajectory == canonical_trajectory(t * 10 + l)
        })
        .count();
    assert_eq!(canonical, 665);
    assert_eq!(w.exact[0], ("t6".to_owned(), "l9".to_owned()));
    assert_eq!(w.partial[0], "l4");
}

#[test]
fn vectors_match_the_python_generator() {
    // `python3 w_traj.py vectors`
    let mut rng = SplitMix64::new(42);
    let first: Vec<u64> = (0..5).map(|_| rng.next_u64()).collect();
    assert_eq!(
        first,
        [
            13679457532755275413,
            2949826092126892291,
            5139283748462763858,
            6349198060258255764,
            701532786141963250
        ]
    );
    assert_eq!(canonical_trajectory(0), ["a0", "a7", "a1", "a7", "a7"]);
    assert_eq!(canonical_trajectory(1), ["a4", "a0", "a1", "a7", "a3"]);
    assert_eq!(canonical_trajectory(99), ["a6", "a5", "a6", "a1", "a2"]);
}
