//! Integration tests of `store-sqlite`: the contract suites of every store trait, and
//! opening files that are not what they should be.

mod batches;
mod check;
mod contract;
mod forget;
mod forget_writers;
mod full;
mod identity;
mod notes;
mod open;
mod readers;
mod stats;
mod token_index;
mod tool_log;
