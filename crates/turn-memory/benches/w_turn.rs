//! Benchmarks on workload W-turn (placeholder until the generator lands).

fn main() {}
