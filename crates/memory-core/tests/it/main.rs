//! Integration tests of `memory-core`: the contract suites against the in-memory store, and
//! the suites themselves against deliberately broken stores.

mod browser;
mod meta;
mod notes;
mod screen;
mod session;
mod shared;
mod tool_log;
mod trail;
mod trajectory;
