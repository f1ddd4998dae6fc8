//! Hints from analysing the stored trajectories (spec: browser-memory, "Hints").
//!
//! The expected text is worked out by hand from the rules in `src/hints.rs`' documentation and
//! the spec, for trajectories built so that each rule fires with a known count.

use agent_memory_browser::compat::iso;
use agent_memory_browser::{BrowserMemory, EvaluatedRun, UNVERIFIED_EFFECT};
use agent_memory_core::store::browser::{
    BrowserStore, HintStore, Trajectory, TrajectoryStep, TrajectoryStore,
};
use agent_memory_core::{InMemoryStore, ManualClock, Scope, SeededIds, Timestamp};
use agent_memory_sqlite::SqliteStore;

use crate::support::store_of;

/// 2026-01-01T00:00:00.000Z.
const NOW: Timestamp = Timestamp::from_millis(1_767_225_600_000);

fn step(action: &str, expected_effect: Option<&str>, verified: bool) -> TrajectoryStep {
    TrajectoryStep {
        url: "https://shop.test/".to_owned(),
        action: action.to_owned(),
        snapshot_hash: "1".to_owned(),
        verified,
        expected_effect: expected_effect.map(str::to_owned),
    }
}

fn trajectory(id: &str, goal: &str, success: bool, steps: Vec<TrajectoryStep>) -> Trajectory {
    Trajectory {
        id: id.to_owned(),
        goal: goal.to_owned(),
        origin: Some("https://shop.test".to_owned()),
        steps,
        success,
        duration_ms: 1_000,
        model: "m".to_owned(),
        timestamp: iso(NOW),
        recorded_at: Some(NOW),
        provenance: None,
    }
}

const CLICK: &str = r#"{"action":"click","selector":"@a1"}"#;
const SCROLL: &str = r#"{"action":"scroll","direction":"down"}"#;
const TYPE: &str = r#"{"action":"type","selector":"@s1","text":"inv"}"#;

/// Two successful 16-step runs of one goal: three clicks on `@a1` whose expected effect was seen
/// only the third time, then 13 scrolls that named no effect (unverified, but not failures).
/// One failed run of another goal: 12 typings into `@s1`, none with the effect it expected.
fn history() -> Vec<Trajectory> {
    let slow = |id: &str| {
        let mut steps = vec![
            step(CLICK, Some("menu opens"), false),
            step(CLICK, Some("menu opens"), false),
            step(CLICK, Some("menu opens"), true),
        ];
        steps.extend((0..13).map(|_| step(SCROLL, None, false)));
        trajectory(id, "export monthly sales report", true, steps)
    };
    let failed = trajectory(
        "t3",
        "find the invoice",
        false,
        (0..12)
            .map(|_| step(TYPE, Some("results appear"), false))
            .collect(),
    );
    vec![slow("t1"), slow("t2"), failed]
}

/// 44 turns, 16 of them failed (4 clicks, 12 typings): 64% productive. `type` on `@s1` fails
/// 12/12, `click` on `@a1` 4/6, scrolls never. Windows of three equal actions: 1 + 11 in each
/// slow run, 10 in the failed one. The slow goal averages 32 / 2 = 16 turns (> 15, two
/// attempts); the failed goal had one attempt. Success is all a trajectory knows of ground
/// truth, so there is no accuracy warning, and no stale refs or common failures.
const EXPECTED: &str = "FEEDBACK FROM PREVIOUS RUNS:
- EFFICIENCY WARNING: Only 64% of turns are productive. 16 turns were wasted on errors, retries, or repeated actions.
- HIGH-FAILURE ACTIONS: \"type\" on \"@s1\" fails 100% of the time (12/12); \"click\" on \"@a1\" fails 67% of the time (4/6). Try alternative approaches.
- STUCK LOOPS DETECTED: The agent repeated the same action sequence 34 time(s). When an action doesn't produce the expected effect after 2 attempts, try a completely different strategy.
- SLOW GOALS: \"export monthly sales report\" averages 16 turns. Consider more direct navigation strategies.";

fn analyse(store: &dyn BrowserStore) -> String {
    let clock = ManualClock::new(NOW);
    let ids = SeededIds::new(1);
    let memory = BrowserMemory::new(store, Scope::shared(), &clock, &ids);
    let hints = memory.analyse_trajectories().expect("analyse");
    assert_eq!(
        store.hints_get(&Scope::shared()).expect("hints"),
        Some((hints.clone(), iso(NOW))),
        "the hints are stored with the time of the analysis"
    );
    hints
}

#[test]
fn a_step_is_a_failed_turn_only_when_its_expected_effect_was_not_seen() {
    let t = trajectory(
        "t",
        "g",
        true,
        vec![
            step(CLICK, Some("menu opens"), false),
            step(CLICK, Some("menu opens"), true),
            step(SCROLL, None, false),
        ],
    );
    let run = EvaluatedRun::from_trajectory(t);
    let failures: Vec<Option<&str>> = run
        .turns
        .iter()
        .map(|turn| turn.verification_failure.as_deref())
        .collect();
    assert_eq!(failures, [Some(UNVERIFIED_EFFECT), None, None]);
    assert_eq!(run.turns_used, 3);
    assert!(run.agent_success && run.verified);
    assert_eq!((run.name.as_str(), run.goal.as_str()), ("t", "g"));
}

#[test]
fn stored_trajectories_give_the_hints_they_show() {
    let store = store_of(&history());
    assert_eq!(analyse(&store), EXPECTED);
}

#[test]
fn sqlite_gives_the_same_hints() {
    let store = SqliteStore::open_in_memory().expect("open");
    for t in history() {
        store
            .trajectory_put(
                &Scope::shared(),
                &t,
                &agent_memory_browser::tokenize(&t.goal),
            )
            .expect("put");
    }
    assert_eq!(analyse(&store), EXPECTED);
}

#[test]
fn nothing_stands_out_in_clean_runs_and_old_hints_are_replaced() {
    let store = store_of(&[trajectory(
        "t",
        "export monthly sales report",
        true,
        vec![
            step(CLICK, Some("menu opens"), true),
            step(SCROLL, None, false),
        ],
    )]);
    store
        .hints_put(
            &Scope::shared(),
            "FEEDBACK FROM PREVIOUS RUNS:\n- stale",
            "then",
            None,
        )
        .expect("put");
    assert_eq!(analyse(&store), "");
}

#[test]
fn an_empty_scope_has_no_hints() {
    let store = InMemoryStore::new();
    assert_eq!(analyse(&store), "");
}
