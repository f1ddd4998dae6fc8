//! Every contract suite of `memory-core`, run against PostgreSQL, each case in a fresh schema.

use agent_memory_core::testkit::{Case, meta, run, session, tool_log, trajectory};
use agent_memory_postgres::PostgresStore;

use crate::support::{drop_schemas, fresh_store, server};

/// Runs a contract suite against a fresh schema per case, failing with its report. The
/// schemas of a suite that passed are dropped (a failing suite's are kept to look into), so
/// a long-lived development server does not fill up with them.
pub(crate) fn check_on_postgres(suite: &'static str, cases: &[Case<PostgresStore>]) {
    let Some(url) = server() else { return };
    let mut schemas = Vec::new();
    let result = run(suite, cases, || {
        let store = fresh_store(&url);
        schemas.push(store.schema().to_owned());
        store
    });
    if let Err(report) = result {
        panic!("{report}");
    }
    drop_schemas(&url, &schemas);
}

#[test]
fn meta_store_contract() {
    check_on_postgres(meta::SUITE, &meta::cases());
}

#[test]
fn session_store_contract() {
    check_on_postgres(session::SUITE, &session::cases());
}

#[test]
fn tool_log_store_contract() {
    check_on_postgres(tool_log::SUITE, &tool_log::cases());
}

#[test]
fn trajectory_store_contract() {
    check_on_postgres(trajectory::SUITE, &trajectory::cases());
}

#[test]
fn note_store_contract() {
    check_on_postgres(
        agent_memory_core::testkit::notes::SUITE,
        &agent_memory_core::testkit::notes::cases(),
    );
}
