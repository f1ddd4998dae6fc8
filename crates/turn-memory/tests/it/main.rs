//! Integration tests of `turn-memory`: capture rules, history views, the event log and
//! resume, compaction, and the rendered provider payloads.

mod activity;
mod capture;
mod compaction;
mod compress;
mod fixture;
mod history;
mod keen;
mod log;
mod persistent;
mod positional;
mod render;
mod retained;
mod schema;
mod store;
