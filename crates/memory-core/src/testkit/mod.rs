//! Contract test suites for the store traits (feature `testkit`).
//!
//! Each suite is written once and run against every implementation: the in-memory store in
//! this crate's tests, SQLite in `store-sqlite`'s. A suite is a list of [`Case`]s; each case
//! gets a fresh store from the caller's factory and returns `Err` with a message instead of
//! panicking, so a test can also show that a deliberately broken store fails the suite.
//!
//! ```
//! use agent_memory_core::InMemoryStore;
//! use agent_memory_core::testkit::{meta, run};
//!
//! run(meta::SUITE, &meta::cases(), InMemoryStore::new).expect("in-memory store obeys the contract");
//! ```
//!
//! The session and notes suites check the times a store stamps its writes with: their stores
//! must be made with a [`TestClock`], which each case sets with [`set_now`].

pub mod browser;
pub mod crash;
pub mod meta;
pub mod notes;
pub mod session;
pub mod tool_log;
pub mod trajectory;

use std::cell::Cell;
use std::fmt;

use crate::evidence::Action;
use crate::provenance::{Provenance, Source};
use crate::store::audit::AuditStore;
use crate::time::{Clock, Timestamp};

thread_local! {
    static NOW: Cell<i64> = const { Cell::new(0) };
}

/// The clock a suite's stores are made with: "now" is what the running case last gave
/// [`set_now`] on the calling thread (the epoch before that), so cases on parallel threads do
/// not disturb each other.
///
/// ```
/// use agent_memory_core::{Clock, Timestamp};
/// use agent_memory_core::testkit::{TestClock, set_now};
///
/// set_now(Timestamp::from_millis(42));
/// assert_eq!(TestClock.now(), Timestamp::from_millis(42));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct TestClock;

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(NOW.with(Cell::get))
    }
}

/// Sets what [`TestClock`] reports on this thread.
pub fn set_now(at: Timestamp) {
    NOW.with(|now| now.set(at.as_millis()));
}

/// Who forgets in the suites' forget cases: the user, through the suite.
pub(crate) fn forgetter() -> Provenance {
    Provenance::new(Source::User, Timestamp::from_millis(77)).with_client("testkit")
}

/// The forgets of `memory` in `store`'s audit trail, oldest first, as `(scope, item,
/// detail)`; each must be by [`forgetter`].
pub(crate) fn forgets_of<S: AuditStore>(
    store: &S,
    memory: &str,
) -> Result<Vec<(String, String, String)>, Violation> {
    let mut forgets = Vec::new();
    for entry in store.audit_page(None, 10_000)?.items {
        if entry.memory != memory || entry.action != Action::Forget {
            continue;
        }
        if entry.by != forgetter() {
            return Err(Violation(format!(
                "the forget of {:?} is recorded by {:?}, not by who forgot it",
                entry.item, entry.by
            )));
        }
        forgets.push((entry.scope, entry.item, entry.detail));
    }
    Ok(forgets)
}

/// The `write` entries of `memory` in `store`'s audit trail, oldest first, as `(scope, item,
/// writer, detail)`.
pub(crate) fn writes_of<S: AuditStore>(
    store: &S,
    memory: &str,
) -> Result<Vec<(String, String, Provenance, String)>, Violation> {
    let filter = crate::evidence::AuditFilter {
        memory: Some(memory.to_owned()),
        action: Some(Action::Write),
        before: None,
    };
    Ok(store
        .audit_select(&filter, None, 1_000)?
        .items
        .into_iter()
        .map(|e| (e.scope, e.item, e.by, e.detail))
        .collect())
}

/// `(scope, item, detail)` as [`forgets_of`] reports an entry.
pub(crate) fn forgot(scope: &str, item: &str, detail: &str) -> (String, String, String) {
    (scope.to_owned(), item.to_owned(), detail.to_owned())
}

/// What a case returns: `Err` carries what was violated.
pub type CaseResult = Result<(), Violation>;

/// One check of a contract, run on a fresh store.
pub struct Case<S> {
    /// A short name saying what is checked.
    pub name: &'static str,
    /// The check.
    pub run: fn(&S) -> CaseResult,
}

impl<S> Clone for Case<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Case<S> {}

/// A broken rule of the contract, or an error the store returned where none was allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation(pub String);

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<crate::Error> for Violation {
    fn from(error: crate::Error) -> Self {
        Violation(format!("unexpected error: {error}"))
    }
}

impl From<String> for Violation {
    fn from(message: String) -> Self {
        Violation(message)
    }
}

/// Every case of a suite that failed, with its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The suite's name.
    pub suite: &'static str,
    /// `(case name, violation)` for each failed case.
    pub failures: Vec<(&'static str, Violation)>,
}

impl Report {
    /// Whether the case named `name` failed.
    pub fn failed(&self, name: &str) -> bool {
        self.failures.iter().any(|(case, _)| *case == name)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} contract: {} case(s) failed",
            self.suite,
            self.failures.len()
        )?;
        for (case, violation) in &self.failures {
            writeln!(f, "  {case}: {violation}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Report {}

/// Runs every case on a fresh store from `make`; `Err` lists every failed case.
pub fn run<S>(
    suite: &'static str,
    cases: &[Case<S>],
    mut make: impl FnMut() -> S,
) -> Result<(), Report> {
    let failures: Vec<_> = cases
        .iter()
        .filter_map(|case| {
            let store = make();
            (case.run)(&store)
                .err()
                .map(|violation| (case.name, violation))
        })
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(Report { suite, failures })
    }
}

/// Fails the case with a formatted message unless the condition holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($message:tt)+) => {
        if !$cond {
            return Err($crate::testkit::Violation(format!($($message)+)));
        }
    };
}

/// Fails the case unless both sides are equal, showing both.
#[macro_export]
macro_rules! ensure_eq {
    ($left:expr, $right:expr $(,)?) => {
        $crate::ensure_eq!($left, $right, "values differ")
    };
    ($left:expr, $right:expr, $($message:tt)+) => {
        match (&$left, &$right) {
            (left, right) => {
                if left != right {
                    return Err($crate::testkit::Violation(format!(
                        "{}: `{}` is {:?}, expected {:?}",
                        format!($($message)+),
                        stringify!($left),
                        left,
                        right
                    )));
                }
            }
        }
    };
}
