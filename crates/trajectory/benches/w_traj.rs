//! W-traj benchmarks (filled in below).
fn main() {}
