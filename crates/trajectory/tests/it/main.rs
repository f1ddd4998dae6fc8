//! Integration tests of `trajectory`: popoto's reference numbers, the fixed divergences,
//! laws, crystallizers in several processes, and the W-traj generator.

mod reference;
