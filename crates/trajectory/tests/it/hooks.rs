//! `crystallize_with_hooks`: a caller's signals and canonical sequences (popoto's extension
//! points, overridden in another language) take part in the atomic crystallize step.

use std::cell::RefCell;

use agent_memory_core::store::trajectory::{Episode, Fingerprint};
use agent_memory_core::{InMemoryStore, ManualClock, Partition, PatternStore, Timestamp};
use agent_memory_trajectory::policy::update_confidence;
use agent_memory_trajectory::{Config, CrystallizeHooks, TrajectoryMemory};
use serde_json::json;

fn team() -> Partition {
    Partition::new("team").expect("partition")
}

fn memory() -> TrajectoryMemory<InMemoryStore, ManualClock> {
    let clock = ManualClock::new(Timestamp::from_millis(1_767_225_600_000));
    TrajectoryMemory::new(InMemoryStore::new(), clock, Config::new(["task"])).expect("config")
}

fn record(m: &TrajectoryMemory<InMemoryStore, ManualClock>, trajectory: &[&str], success: bool) {
    m.record_episode(
        &[("task", "t")],
        trajectory,
        &json!({"success": success}),
        &team(),
    )
    .expect("record");
}

/// Hooks that answer from fixed rules and note what they were asked.
struct Noting {
    /// A signal per episode: 1 when its trajectory is longer than one step, else 0.
    by_length: bool,
    /// The canonical sequence to give every pattern, if any.
    canonical: Option<Vec<String>>,
    /// Fail the step from `canonical`.
    fail: bool,
    asked_signals: RefCell<Vec<u64>>,
    asked_canonical: RefCell<Vec<(Vec<u64>, Vec<String>)>>,
}

impl Noting {
    fn new(by_length: bool, canonical: Option<&[&str]>) -> Self {
        Noting {
            by_length,
            canonical: canonical.map(|c| c.iter().map(|s| (*s).to_owned()).collect()),
            fail: false,
            asked_signals: RefCell::default(),
            asked_canonical: RefCell::default(),
        }
    }
}

impl CrystallizeHooks for Noting {
    fn signals(&self, episodes: &[Episode]) -> agent_memory_core::Result<Option<Vec<f64>>> {
        self.asked_signals
            .borrow_mut()
            .extend(episodes.iter().map(|e| e.seq));
        Ok(self.by_length.then(|| {
            episodes
                .iter()
                .map(|e| {
                    if e.episode.trajectory.len() > 1 {
                        1.0
                    } else {
                        0.0
                    }
                })
                .collect()
        }))
    }

    fn canonical(
        &self,
        episodes: &[Episode],
        patterns: &[&Fingerprint],
    ) -> agent_memory_core::Result<Vec<Option<Vec<String>>>> {
        if self.fail {
            return Err(agent_memory_core::Error::invalid_input(
                "canonical",
                "refused",
            ));
        }
        for p in patterns {
            self.asked_canonical.borrow_mut().push((
                episodes.iter().map(|e| e.seq).collect(),
                p.pairs().iter().map(|(k, v)| format!("{k}={v}")).collect(),
            ));
        }
        Ok(patterns.iter().map(|_| self.canonical.clone()).collect())
    }
}

#[test]
fn given_signals_replace_the_outcomes_mapping() {
    let m = memory();
    record(&m, &["a", "b"], false);
    record(&m, &["a"], true);
    record(&m, &["a", "b"], false);
    let hooks = Noting::new(true, None);
    let [pattern] = <[_; 1]>::try_from(m.crystallize_with_hooks(&team(), &hooks).expect("run"))
        .expect("one pattern");
    assert_eq!(*hooks.asked_signals.borrow(), [1, 2, 3]);
    let mut c = 0.5;
    for (n, s) in [1.0, 0.0, 1.0].into_iter().enumerate() {
        c = update_confidence(c, n as u64, s, 20);
    }
    assert_eq!(pattern.stats.confidence, c);
    assert_eq!(
        (pattern.stats.corroborations, pattern.stats.contradictions),
        (2, 1)
    );
    // No hook's signals: the outcomes' mapping, as without hooks.
    let plain = memory();
    record(&plain, &["a", "b"], false);
    record(&plain, &["a"], true);
    record(&plain, &["a", "b"], false);
    let [mapped] = <[_; 1]>::try_from(
        plain
            .crystallize_with_hooks(&team(), &Noting::new(false, None))
            .expect("run"),
    )
    .expect("one pattern");
    assert_eq!(mapped.stats.contradictions, 2);
    assert_eq!(mapped.canonical_sequence, ["a", "b"]);
}

#[test]
fn a_given_canonical_sequence_is_the_patterns_even_when_no_episode_took_it() {
    let m = memory();
    for _ in 0..3 {
        record(&m, &["a"], true);
    }
    let hooks = Noting::new(false, Some(&["plan", "act"]));
    let [pattern] = <[_; 1]>::try_from(m.crystallize_with_hooks(&team(), &hooks).expect("run"))
        .expect("one pattern");
    assert_eq!(pattern.canonical_sequence, ["plan", "act"]);
    assert_eq!(
        *hooks.asked_canonical.borrow(),
        [(vec![1, 2, 3], vec!["task=t".to_owned()])]
    );
    let recalled = m.recall(&[("task", "t")], &team()).expect("recall");
    assert_eq!(recalled[0].pattern.canonical_sequence, ["plan", "act"]);
    // A run without hooks goes back to the modal rule once a trajectory outnumbers it.
    record(&m, &["a"], true);
    let [modal] = <[_; 1]>::try_from(m.crystallize(&team()).expect("run")).expect("one");
    assert_eq!(modal.canonical_sequence, ["a"]);
}

#[test]
fn a_failing_hook_writes_nothing() {
    let m = memory();
    for _ in 0..3 {
        record(&m, &["a"], true);
    }
    let mut hooks = Noting::new(true, Some(&["x"]));
    hooks.fail = true;
    assert!(m.crystallize_with_hooks(&team(), &hooks).is_err());
    assert_eq!(m.store().watermark(&team()).expect("watermark"), 0);
    let [pattern] = <[_; 1]>::try_from(m.crystallize(&team()).expect("run")).expect("one");
    assert_eq!(
        (pattern.stats.evidence_count, pattern.canonical_sequence),
        (3, vec!["a".to_owned()])
    );
}

#[test]
fn signals_of_the_wrong_count_are_refused() {
    struct Short;
    impl CrystallizeHooks for Short {
        fn signals(&self, _: &[Episode]) -> agent_memory_core::Result<Option<Vec<f64>>> {
            Ok(Some(vec![1.0]))
        }
        fn canonical(
            &self,
            _: &[Episode],
            patterns: &[&Fingerprint],
        ) -> agent_memory_core::Result<Vec<Option<Vec<String>>>> {
            Ok(vec![None; patterns.len()])
        }
    }
    let m = memory();
    for _ in 0..3 {
        record(&m, &["a"], true);
    }
    let error = m.crystallize_with_hooks(&team(), &Short).unwrap_err();
    assert!(
        error.to_string().contains("1 signals for 3 episodes"),
        "{error}"
    );
}
