//! Every contract suite through `Arc<S>` and `&S`: a shared or borrowed store is the store.

use std::sync::Arc;

use agent_memory_core::InMemoryStore;
use agent_memory_core::testkit::{TestClock, browser, meta, run, session, tool_log, trajectory};

/// A store that lives for the rest of the test binary, so `&'static` borrows of it can be
/// handed to the suites (each case gets a fresh one).
fn leaked() -> &'static InMemoryStore {
    Box::leak(Box::new(InMemoryStore::with_clock(TestClock)))
}

fn shared() -> Arc<InMemoryStore> {
    Arc::new(InMemoryStore::with_clock(TestClock))
}

#[test]
fn every_suite_passes_behind_an_arc() {
    let reports = [
        run(meta::SUITE, &meta::cases(), shared),
        run(tool_log::SUITE, &tool_log::cases(), shared),
        run(session::SUITE, &session::cases(), shared),
        run(trajectory::SUITE, &trajectory::cases(), shared),
        run(browser::SUITE, &browser::cases(), shared),
    ];
    for report in reports {
        if let Err(report) = report {
            panic!("{report}");
        }
    }
}

#[test]
fn every_suite_passes_through_a_reference() {
    let reports = [
        run(meta::SUITE, &meta::cases(), leaked),
        run(tool_log::SUITE, &tool_log::cases(), leaked),
        run(session::SUITE, &session::cases(), leaked),
        run(trajectory::SUITE, &trajectory::cases(), leaked),
        run(browser::SUITE, &browser::cases(), leaked),
    ];
    for report in reports {
        if let Err(report) = report {
            panic!("{report}");
        }
    }
}
