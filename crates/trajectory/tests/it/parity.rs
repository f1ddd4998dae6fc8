//! Edge parity with popoto 1.10.1, found by randomized differential runs: each test shows the
//! case where this crate used to answer differently and checks popoto's answer.

use std::sync::Arc;

use agent_memory_core::{InMemoryStore, ManualClock, Partition, Timestamp};
use agent_memory_trajectory::policy::{SignalMapping, SuccessSignal, update_confidence};
use agent_memory_trajectory::{
    Config, RecallOptions, TrajectoryMemory, Weights, compute_fingerprint, compute_fingerprint_json,
};
use serde_json::{Value, json};

const T0: i64 = 1_767_225_600_000;

fn team() -> Partition {
    Partition::new("team").expect("partition")
}

/// A memory with one pattern (three successes) in partition `team`.
fn with_pattern() -> TrajectoryMemory<InMemoryStore, Arc<ManualClock>> {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(T0)));
    let m = TrajectoryMemory::new(InMemoryStore::new(), clock, Config::new(["task", "env"]))
        .expect("config");
    for _ in 0..3 {
        m.record_episode(
            &[("task", "deploy"), ("env", "prod")],
            &["build", "ship"],
            &json!({"success": true}),
            &team(),
        )
        .expect("record");
    }
    m.crystallize(&team()).expect("crystallize");
    m
}

#[test]
fn no_positive_weight_recalls_nothing() {
    // popoto keeps only the weights above zero and returns [] when none is left; the old
    // recall returned every match with score 0.
    let m = with_pattern();
    let fp = [("task", "deploy")];
    assert_eq!(m.recall(&fp, &team()).expect("recall").len(), 1);
    for weights in [
        Weights::new(0.0, 0.0),
        Weights::new(-1.0, 0.0),
        Weights::new(0.0, -0.5),
        Weights::from_named([]).expect("no weights"),
    ] {
        let found = m
            .recall_with(&fp, &team(), RecallOptions::new().with_weights(weights))
            .expect("recall");
        assert!(found.is_empty(), "{weights:?} recalled {found:?}");
    }
    let one = m
        .recall_with(
            &fp,
            &team(),
            RecallOptions::new().with_weights(Weights::new(0.0, 1e-9)),
        )
        .expect("recall");
    assert_eq!(one.len(), 1, "one positive weight is enough");
    let config = Config::new(["task", "env"]).with_weights(Weights::new(0.0, 0.0));
    let zero = TrajectoryMemory::new(
        InMemoryStore::new(),
        ManualClock::new(Timestamp::from_millis(T0)),
        config,
    )
    .expect("zero weights are a valid configuration");
    assert!(zero.recall(&fp, &team()).expect("recall").is_empty());
}

#[test]
fn outcome_strings_parse_as_python_float() {
    // The old parser took only ASCII digits, signs, dots and exponents, so these fell back
    // to the neutral 0.5.
    let table = [
        ("1_0", 1.0),
        ("0_5", 1.0),
        ("\u{661}", 1.0),
        ("\u{660}.\u{662}\u{665}", 0.25),
        ("\u{a0}0.75\u{2003}", 0.75),
        ("0_0", 0.0),
        ("-inf", 0.0),
        ("nan", 1.0),
        ("1__0", 0.5),
        ("_1", 0.5),
        ("1\u{200b}", 0.5),
    ];
    for (text, expected) in table {
        let signal = SuccessSignal.signal(&json!({ "success": text }));
        assert_eq!(signal, expected, "success {text:?}");
    }
    // The signal reaches the pattern: three "\u{661}" outcomes confirm like three 1.0s.
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(T0)));
    let m =
        TrajectoryMemory::new(InMemoryStore::new(), clock, Config::new(["task"])).expect("config");
    for _ in 0..3 {
        m.record_episode(
            &[("task", "t")],
            &["a"],
            &json!({"success": "\u{661}"}),
            &team(),
        )
        .expect("record");
    }
    let patterns = m.crystallize(&team()).expect("crystallize");
    let expected = (0..3).fold(0.5, |c, n| update_confidence(c, n, 1.0, 20));
    assert_eq!(patterns[0].stats.confidence, expected);
    assert_eq!(patterns[0].stats.corroborations, 3);
}

#[test]
fn limit_zero_returns_nothing_before_any_check() {
    // popoto returns [] for limit 0 before it looks at the fields; the old recall first
    // refused the unknown field, and then the non-finite weight.
    let m = with_pattern();
    let zero = RecallOptions::new().with_limit(0);
    let unknown = [("bogus", "x")];
    assert!(
        m.recall_with(&unknown, &team(), zero)
            .expect("limit 0")
            .is_empty()
    );
    let nan = zero.with_weights(Weights::new(f64::NAN, 0.4));
    assert!(
        m.recall_with(&unknown, &team(), nan)
            .expect("limit 0")
            .is_empty()
    );
    // With a limit, both are still errors.
    assert!(
        m.recall_with(&unknown, &team(), RecallOptions::new())
            .is_err()
    );
    let nan = RecallOptions::new().with_weights(Weights::new(f64::NAN, 0.4));
    assert!(m.recall_with(&[("task", "deploy")], &team(), nan).is_err());
}

#[test]
fn fingerprints_hash_big_integers_as_python_prints_them() {
    // Expected values: `hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]`
    // in CPython 3.11.
    let table = [
        (r#"{"n": 100000000000000000000}"#, "05a9e961d6bf1ead"),
        (r#"{"n": 18446744073709551616}"#, "d4a19f6278aac7e5"),
        (r#"{"n": -18446744073709551617}"#, "30152ac949fb8532"),
        (r#"{"n": 1e20}"#, "8b3fba3ea75894f1"),
        (r#"{"n": -0}"#, "3a7596abc0fb02ee"),
        (
            r#"{"f": 1.5e300, "big": [1000000000000000000000000000000, {"x": -0}]}"#,
            "8e1cc3823fc19d43",
        ),
        (r#"{"env":"staging","task":"deploy"}"#, "86e6b7501eb99c29"),
        (r#"  {"a":1,"b":2,"a":1}  "#, "d8497d9d82770a70"),
    ];
    for (text, expected) in table {
        assert_eq!(
            compute_fingerprint_json(text).expect("valid features"),
            expected,
            "{text}"
        );
    }
    // The old path read 10**20 into a float and hashed `1e+20`.
    let as_float: Value = serde_json::from_str(r#"{"n": 100000000000000000000}"#).expect("json");
    assert_eq!(
        compute_fingerprint(as_float.as_object().expect("object")),
        "8b3fba3ea75894f1"
    );
    for (text, message) in [
        (
            r#"{"n": 1e400}"#,
            "features.n: 1e400 is too large for a float",
        ),
        ("[1]", "features must be a JSON object"),
        (
            r#"{"n": NaN}"#,
            "features are not JSON: expected value at line 1 column 7",
        ),
    ] {
        let error = compute_fingerprint_json(text).expect_err(text);
        assert_eq!(error.to_string(), message, "{text}");
    }
    let huge = format!(r#"{{"n": {}}}"#, "9".repeat(4301));
    let error = compute_fingerprint_json(&huge).expect_err("over Python's digit limit");
    assert!(error.to_string().contains("4301 digits"), "{error}");
}

#[test]
fn named_weights_replace_the_default_set() {
    // popoto's `score_weights={"confidence": 1}` ranks by confidence alone; the old reading
    // kept the default recency weight 0.4 beside it.
    let m = with_pattern();
    let fp = [("task", "deploy")];
    let named = Weights::from_named([("confidence", 1.0)]).expect("weights");
    let found = m
        .recall_with(&fp, &team(), RecallOptions::new().with_weights(named))
        .expect("recall");
    assert_eq!(found[0].score, found[0].pattern.stats.confidence);
    let amended = m
        .recall_with(
            &fp,
            &team(),
            RecallOptions::new().with_weights(Weights::new(1.0, 0.4)),
        )
        .expect("recall");
    assert!(amended[0].score > found[0].score);
}
