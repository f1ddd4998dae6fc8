//! Integration tests of `store-postgres` against a real server.
//!
//! The server is named by `AGENT_MEMORY_TEST_POSTGRES` (a connection string); `cargo xtask ci`
//! starts a throwaway cluster and sets it. Without it the tests say so and pass only outside
//! CI: with `CI=true` a missing server fails them.

mod support;

mod contract;

mod browser;
mod cluster;
mod foreign_keys;
mod forget;
mod notes;
mod one_statement;
