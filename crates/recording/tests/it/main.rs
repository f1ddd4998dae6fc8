//! Integration tests of `recording`: the rules of reverse templating, the reference trails,
//! the end-to-end story on SQLite, and the laws as property tests.

mod corpus;
mod end_to_end;
mod hostile;
mod interpolation;
mod laws;
mod replay;
mod secrets;
mod templating;
mod trailblaze_logs;
mod trails;
mod yaml11;
