//! W-bad benchmarks.
fn main() {}
