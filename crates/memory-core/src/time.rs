//! Time as the memory layer sees it: millisecond timestamps and a [`Clock`] passed in.
//!
//! Nothing in the workspace reads the wall clock directly; every TTL, decay and recency
//! rule asks a `Clock`, so a test can freeze "now" with [`ManualClock`].

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// Milliseconds since the Unix epoch (UTC). Negative values are before 1970.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

/// Milliseconds in one day, for TTL and decay arithmetic.
pub const MILLIS_PER_DAY: i64 = 86_400_000;

impl Timestamp {
    /// The Unix epoch, 1970-01-01T00:00:00Z.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// A timestamp from milliseconds since the Unix epoch.
    pub const fn from_millis(millis: i64) -> Self {
        Timestamp(millis)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// This timestamp moved by `millis` (negative moves back), saturating at the ends of `i64`.
    pub const fn add_millis(self, millis: i64) -> Self {
        Timestamp(self.0.saturating_add(millis))
    }

    /// Milliseconds from `earlier` to `self` (negative when `earlier` is later).
    pub const fn millis_since(self, earlier: Timestamp) -> i64 {
        self.0.saturating_sub(earlier.0)
    }

    /// Days from `earlier` to `self` as a float, as decay formulas want them.
    pub fn days_since(self, earlier: Timestamp) -> f64 {
        self.millis_since(earlier) as f64 / MILLIS_PER_DAY as f64
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

/// A source of "now". Stores and feature crates take one instead of reading the wall clock.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Timestamp;
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for Box<C> {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

/// The operating system's wall clock: the production default.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        // A system clock set before 1970 reports negative milliseconds rather than failing.
        let millis = match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
            Err(before) => -i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX),
        };
        Timestamp(millis)
    }
}

/// A clock a store keeps to stamp its own writes (when a session or a notes scope was last
/// written): cheap to clone, shared by every handle, the [`SystemClock`] by default.
///
/// ```
/// use std::sync::Arc;
/// use agent_memory_core::{Clock, ManualClock, SharedClock, Timestamp};
///
/// let manual = Arc::new(ManualClock::new(Timestamp::from_millis(7)));
/// let shared = SharedClock::new(Arc::clone(&manual));
/// manual.advance(3);
/// assert_eq!(shared.now(), Timestamp::from_millis(10));
/// ```
#[derive(Clone)]
pub struct SharedClock(Arc<dyn Clock>);

impl SharedClock {
    /// Shares `clock`.
    pub fn new(clock: impl Clock + 'static) -> Self {
        SharedClock(Arc::new(clock))
    }
}

impl Default for SharedClock {
    fn default() -> Self {
        SharedClock::new(SystemClock)
    }
}

impl fmt::Debug for SharedClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedClock").field(&self.0.now()).finish()
    }
}

impl Clock for SharedClock {
    fn now(&self) -> Timestamp {
        self.0.now()
    }
}

/// A clock that only moves when told to: for tests and for replaying recorded data.
///
/// ```
/// use agent_memory_core::{Clock, ManualClock, Timestamp};
///
/// let clock = ManualClock::new(Timestamp::from_millis(1_000));
/// clock.advance(500);
/// assert_eq!(clock.now(), Timestamp::from_millis(1_500));
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicI64,
}

impl ManualClock {
    /// A clock frozen at `now`.
    pub fn new(now: Timestamp) -> Self {
        ManualClock {
            now: AtomicI64::new(now.as_millis()),
        }
    }

    /// Sets the time.
    pub fn set(&self, now: Timestamp) {
        self.now.store(now.as_millis(), Ordering::SeqCst);
    }

    /// Moves the time by `millis` (negative moves it back, as a lagging clock would).
    pub fn advance(&self, millis: i64) {
        self.now.fetch_add(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.now.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(Timestamp::from_millis(10));
        assert_eq!(clock.now().as_millis(), 10);
        clock.advance(-15);
        assert_eq!(clock.now().as_millis(), -5);
        clock.set(Timestamp::from_millis(7));
        let by_ref: &dyn Clock = &&clock;
        assert_eq!(by_ref.now().as_millis(), 7);
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now().as_millis() > 1_577_836_800_000);
    }

    #[test]
    fn timestamp_arithmetic_saturates() {
        let late = Timestamp::from_millis(i64::MAX);
        assert_eq!(late.add_millis(1), late);
        assert_eq!(
            Timestamp::from_millis(MILLIS_PER_DAY).days_since(Timestamp::EPOCH),
            1.0
        );
        assert_eq!(Timestamp::EPOCH.millis_since(Timestamp::from_millis(5)), -5);
    }
}
