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

/// Who forgets in these tests: the user, through the tests.
fn forgetter() -> agent_memory_core::Provenance {
    agent_memory_core::Provenance::new(
        agent_memory_core::Source::User,
        agent_memory_core::Timestamp::from_millis(1),
    )
    .with_client("test")
}
