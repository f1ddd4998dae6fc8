//! The server the tests run against, and a fresh schema per store.

use std::sync::atomic::{AtomicU32, Ordering};

use agent_memory_postgres::{PostgresOptions, PostgresStore};

/// The variable naming the test server.
pub(crate) const SERVER_VAR: &str = "AGENT_MEMORY_TEST_POSTGRES";

/// The test server's connection string; `None` (after saying so) when there is none outside
/// CI. In CI a missing server is a failure, never a skip.
pub(crate) fn server() -> Option<String> {
    match std::env::var(SERVER_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(
                !ci,
                "{SERVER_VAR} is not set: with CI=true the PostgreSQL tests need a server (cargo xtask ci starts one)"
            );
            eprintln!(
                "{SERVER_VAR} is not set: skipping the PostgreSQL tests (cargo xtask ci starts a server)"
            );
            None
        }
    }
}

/// A schema name no other store of this run uses.
pub(crate) fn fresh_schema(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "t_{prefix}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A store on the test server in a schema of its own, with a small pool.
pub(crate) fn fresh_store(url: &str) -> PostgresStore {
    // The contract suites check the times a store stamps its writes with: the test clock's.
    let options = PostgresOptions::default()
        .with_schema(fresh_schema("s"))
        .with_pool_size(2)
        .with_clock(agent_memory_core::testkit::TestClock);
    PostgresStore::connect_with(url, &options).unwrap_or_else(|e| panic!("connect: {e}"))
}

/// Drops `schemas` (each with everything in it) from the test server.
pub(crate) fn drop_schemas(url: &str, schemas: &[String]) {
    let mut client =
        postgres::Client::connect(url, postgres::NoTls).unwrap_or_else(|e| panic!("connect: {e}"));
    for schema in schemas {
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
            .unwrap_or_else(|e| panic!("drop schema {schema}: {e}"));
    }
}
