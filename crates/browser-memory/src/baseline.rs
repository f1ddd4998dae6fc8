//! The reference's own matching, kept as the baseline of benchmarks and divergence tests:
//! [`linear_scan_match`] scans every trajectory and tokenizes both goals each time with the
//! ASCII-only rule of [`reference_tokenize`]. Not for use in an agent: matching goes through
//! the store's token index (`find_best_match`).

pub use crate::matching::linear_scan_match;
pub use crate::tokens::reference_tokenize;
