//! Integration tests of `browser-memory`: byte-for-byte reproduction of the reference's files
//! and rendered context, the divergences from it, edge parity with it, the rules, and the
//! store contract on
//! SQLite.

mod adopt;
mod coverage;
mod divergences;
mod held;
mod hints;
mod hostile;
mod import;
mod laws;
mod parity;
mod ranking;
mod reference;
mod rules;
mod sqlite;
mod support;
mod w_bad;
mod writers;
