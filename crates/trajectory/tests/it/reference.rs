//! Replays the scenarios behind popoto 1.10.1's reference output
//! (`data/popoto-reference-output.jsonl`, a copy of the shared reference file) and checks the
//! same confidences, counts, canonical sequences, scores, signals, fingerprints and error
//! messages. Where popoto's numbers depend on the wall clock, the clock is fixed and the
//! reference's own formula value is compared.

use std::collections::HashMap;
use std::sync::Arc;

use agent_memory_core::{InMemoryStore, MILLIS_PER_DAY, ManualClock, Partition, Timestamp};
use agent_memory_trajectory::compat::python_json;
use agent_memory_trajectory::policy::{SignalMapping, SuccessSignal, update_confidence};
use agent_memory_trajectory::{
    Config, Error, Pattern, RecallOptions, TrajectoryMemory, Weights, compute_fingerprint,
    compute_fingerprint_json,
};
use serde_json::{Value, json};

const T0: i64 = 1_767_225_600_000;

fn sections() -> HashMap<String, Value> {
    include_str!("data/popoto-reference-output.jsonl")
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("reference line is JSON");
            (v["section"].as_str().expect("section").to_owned(), v)
        })
        .collect()
}

fn p(name: &str) -> Partition {
    Partition::new(name).expect("partition")
}

type Memory = TrajectoryMemory<InMemoryStore, Arc<ManualClock>>;

struct Scenario {
    memory: Memory,
    clock: Arc<ManualClock>,
}

impl Scenario {
    fn new() -> Self {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(T0)));
        let memory = TrajectoryMemory::new(
            InMemoryStore::new(),
            clock.clone(),
            Config::new(["problem_topology", "affected_layer"]),
        )
        .expect("config");
        Scenario { memory, clock }
    }

    /// popoto's `rec`: records, then lets 2 ms pass.
    fn rec(&self, fp: &[(&str, &str)], traj: &[&str], success: bool, partition: &str) {
        self.memory
            .record_episode(fp, traj, &json!({ "success": success }), &p(partition))
            .expect("record");
        self.clock.advance(2);
    }

    fn pattern(&self, partition: &str, fp: &[(&str, &str)]) -> Pattern {
        let found = self
            .memory
            .recall_with(fp, &p(partition), RecallOptions::new().with_limit(100))
            .expect("recall");
        found
            .into_iter()
            .map(|s| s.pattern)
            .find(|pat| fp.iter().all(|(k, v)| pat.fingerprint.get(k) == Some(v)))
            .expect("pattern exists")
    }
}

/// Checks a pattern against a reference `describe(p)` object.
fn check_pattern(pattern: &Pattern, expected: &Value) {
    let fp = &expected["fingerprint"];
    assert_eq!(pattern.fingerprint.get("problem_topology"), fp[0].as_str());
    assert_eq!(pattern.fingerprint.get("affected_layer"), fp[1].as_str());
    let canonical: Vec<&str> = expected["canonical_sequence"]
        .as_array()
        .expect("sequence")
        .iter()
        .map(|a| a.as_str().expect("action"))
        .collect();
    assert_eq!(pattern.canonical_sequence, canonical);
    let confidence = expected["hash_confidence"].as_f64().expect("confidence");
    assert_eq!(
        pattern.stats.confidence.to_bits(),
        confidence.to_bits(),
        "confidence {} vs popoto {confidence}",
        pattern.stats.confidence
    );
    assert_eq!(
        Some(pattern.stats.evidence_count),
        expected["evidence_count"].as_u64()
    );
    assert_eq!(
        Some(pattern.stats.corroborations),
        expected["corroborations"].as_u64()
    );
    assert_eq!(
        Some(pattern.stats.contradictions),
        expected["contradictions"].as_u64()
    );
}

const FP_A: &[(&str, &str)] = &[("problem_topology", "bug_fix"), ("affected_layer", "agent")];
const FP_B: &[(&str, &str)] = &[
    ("problem_topology", "refactor"),
    ("affected_layer", "agent"),
];
const FP_C: &[(&str, &str)] = &[("problem_topology", "docs"), ("affected_layer", "agent")];
const FP_X: &[(&str, &str)] = &[("problem_topology", "x"), ("affected_layer", "l")];
const FP_Y: &[(&str, &str)] = &[("problem_topology", "y"), ("affected_layer", "l")];

#[test]
fn crystallize_and_recall_scenarios_match_popoto() {
    let reference = sections();
    let s = Scenario::new();
    let m = &s.memory;

    // 1. Three successes.
    for _ in 0..3 {
        s.rec(FP_A, &["read_logs", "edit_file", "run_tests"], true, "p1");
    }
    let affected = m.crystallize(&p("p1")).expect("crystallize");
    let r1 = &reference["1_first_crystallize"];
    assert_eq!(Some(affected.len() as u64), r1["affected"].as_u64());
    check_pattern(&s.pattern("p1", FP_A), &r1["pattern"]);
    // last_reinforced is the newest episode's time (watermark_minus_max_recorded_at = 0).
    assert_eq!(
        s.pattern("p1", FP_A).stats.last_reinforced,
        Timestamp::from_millis(T0 + 4)
    );

    // 2. Re-run: nothing.
    let affected = m.crystallize(&p("p1")).expect("crystallize");
    let r2 = &reference["2_second_crystallize"];
    assert_eq!(Some(affected.len() as u64), r2["affected"].as_u64());
    check_pattern(&s.pattern("p1", FP_A), &r2["pattern"]);

    // 3. New evidence.
    s.rec(FP_A, &["read_logs", "edit_file", "run_tests"], false, "p1");
    s.rec(FP_A, &["read_logs", "run_tests"], true, "p1");
    let affected = m.crystallize(&p("p1")).expect("crystallize");
    let r3 = &reference["3_new_evidence"];
    assert_eq!(Some(affected.len() as u64), r3["affected"].as_u64());
    check_pattern(&s.pattern("p1", FP_A), &r3["pattern"]);

    // 4 and 5. Tie break and threshold.
    s.rec(FP_B, &["x", "y"], true, "p1");
    s.rec(FP_B, &["z"], false, "p1");
    s.rec(FP_B, &["x", "y"], false, "p1");
    s.rec(FP_B, &["z"], true, "p1");
    s.rec(FP_C, &["w"], true, "p1");
    s.rec(FP_C, &["w"], true, "p1");
    let affected = m.crystallize(&p("p1")).expect("crystallize");
    let r4 = &reference["4_tie_break_and_threshold"];
    let mut topologies: Vec<Value> = affected
        .iter()
        .map(|pat| json!(pat.fingerprint.get("problem_topology")))
        .collect();
    topologies.sort_by_key(|v| v.to_string());
    assert_eq!(Value::Array(topologies), r4["affected"]);
    check_pattern(&s.pattern("p1", FP_B), &r4["pattern_b"]);
    let fp_c = m.recall(FP_C, &p("p1")).expect("recall");
    assert_eq!(Some(fp_c.len() as u64), r4["fp_c_patterns"].as_u64());

    // 6. Recall, with the composite scores of the reference formula (both patterns are
    // fresh: less than 0.01 days old).
    let r6 = &reference["6_recall"];
    let exact = m.recall(FP_A, &p("p1")).expect("recall");
    let exact: Vec<Value> = exact
        .iter()
        .map(|sp| json!(sp.pattern.canonical_sequence))
        .collect();
    assert_eq!(Value::Array(exact), r6["exact"]);
    let partial = m
        .recall(&[("affected_layer", "agent")], &p("p1"))
        .expect("recall");
    let ranked: Vec<Value> = partial
        .iter()
        .map(|sp| {
            json!([
                sp.pattern.fingerprint.get("problem_topology"),
                sp.pattern.canonical_sequence
            ])
        })
        .collect();
    assert_eq!(Value::Array(ranked), r6["partial_ranked"]);
    for sp in &partial {
        let name = format!(
            "p1/{}/agent",
            sp.pattern
                .fingerprint
                .get("problem_topology")
                .unwrap_or_default()
        );
        let expected = r6["expected_scores_by_formula"][&name]
            .as_f64()
            .expect("score");
        assert_eq!(
            sp.score.to_bits(),
            expected.to_bits(),
            "{name}: {} vs {expected}",
            sp.score
        );
    }
    assert_eq!(
        agent_memory_trajectory::policy::recency(0.0, 0.5, 0.1, 0.5, 0.5),
        r6["fresh_decay_value"].as_f64().expect("fresh")
    );
    assert_eq!(m.recall(&[], &p("p1")).expect("recall").len(), 0);
    let none = m
        .recall_with(FP_A, &p("p1"), RecallOptions::new().with_limit(0))
        .expect("recall");
    assert!(none.is_empty());
    let confidence_only = m
        .recall_with(
            &[("affected_layer", "agent")],
            &p("p1"),
            RecallOptions::new().with_weights(Weights::new(1.0, 0.0)),
        )
        .expect("recall");
    let names: Vec<Value> = confidence_only
        .iter()
        .map(|sp| json!(sp.pattern.fingerprint.get("problem_topology")))
        .collect();
    assert_eq!(Value::Array(names), r6["confidence_only"]);

    // 7. The patterns behind the limit-before-filter defect (the recall itself is checked,
    // fixed, in the divergence tests).
    for _ in 0..3 {
        s.rec(FP_X, &["good"], true, "p2");
    }
    for _ in 0..3 {
        s.rec(FP_Y, &["bad"], false, "p2");
    }
    m.crystallize(&p("p2")).expect("crystallize");
    let r7 = &reference["7_limit_before_filter"];
    check_pattern(&s.pattern("p2", FP_Y), &r7["y_pattern"]);
    check_pattern(&s.pattern("p2", FP_X), &r7["x_pattern"]);
    let y2 = m
        .recall_with(FP_Y, &p("p2"), RecallOptions::new().with_limit(2))
        .expect("recall");
    let y2: Vec<Value> = y2
        .iter()
        .map(|sp| json!(sp.pattern.canonical_sequence))
        .collect();
    assert_eq!(Value::Array(y2), r7["recall_y_limit_2"]);

    // 8. Confidence-modulated decay, 10 days on. The reference's wall clock ran a fraction
    // of a second past 10 days, which moves the score by about 1e-7 per second; without
    // modulation the two formulas differ by 2.4e-2, so 1e-6 still tells them apart.
    let r8 = &reference["8_modulated_decay_10_days"];
    let a = s.pattern("p1", FP_A).stats;
    assert_eq!(Some(a.confidence), r8["confidence"].as_f64());
    let later = a.last_reinforced.add_millis(10 * MILLIS_PER_DAY);
    let recency_only = Weights::new(0.0, 1.0);
    let with = m.score(&a, later, recency_only);
    let expected = r8["expected_with_modulation"].as_f64().expect("with");
    assert!((with - expected).abs() < 1e-6, "{with} vs {expected}");
    let mut flat = m.config().clone();
    flat.modulation_strength = 0.0;
    let flat = TrajectoryMemory::new(InMemoryStore::new(), s.clock.clone(), flat).expect("config");
    let without = flat.score(&a, later, recency_only);
    let expected = r8["expected_without_modulation"].as_f64().expect("without");
    assert!((without - expected).abs() < 1e-6, "{without} vs {expected}");
}

#[test]
fn cross_partition_weak_pattern_scores_as_popoto_formula() {
    let reference = sections();
    let r = &reference["7b_cross_partition_confidence_arm"];
    let s = Scenario::new();
    let weak = &[("problem_topology", "weak"), ("affected_layer", "l")];
    for _ in 0..3 {
        s.rec(weak, &["w"], false, "q");
    }
    s.memory.crystallize(&p("q")).expect("crystallize");
    let stats = s.pattern("q", weak).stats;
    let now = stats.last_reinforced.add_millis(400 * MILLIS_PER_DAY);
    let score = s.memory.score(&stats, now, Weights::default());
    let expected = r["weak_expected"].as_f64().expect("weak");
    assert!((score - expected).abs() < 1e-9, "{score} vs {expected}");
}

fn rows(section: &Value) -> Vec<(f64, f64)> {
    section["rows_signal_stored_returned"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r[0].as_f64().expect("signal"),
                r[1].as_f64().expect("stored"),
            )
        })
        .collect()
}

/// Runs the capped-evidence rule over a reference section's signals and compares every
/// stored value bit for bit.
fn check_confidence(section: &Value, initial: f64, cap: u64) -> Vec<f64> {
    let mut c = initial;
    let mut seen = Vec::new();
    for (n, (signal, stored)) in rows(section).into_iter().enumerate() {
        c = update_confidence(c, n as u64, signal, cap);
        assert_eq!(
            c.to_bits(),
            stored.to_bits(),
            "step {n}: {c} vs popoto {stored}"
        );
        seen.push(c);
    }
    seen
}

#[test]
fn confidence_trajectories_match_popoto_bit_for_bit() {
    let reference = sections();
    let a = check_confidence(&reference["9a_cap20_25x0.9_then_25x0.1"], 0.5, 20);
    let crossed = a[25..].iter().position(|&c| c < 0.5).map(|i| i + 1);
    assert_eq!(
        crossed.map(|c| c as u64),
        reference["9a_cap20_25x0.9_then_25x0.1"]["contradictions_to_cross_0_5"].as_u64()
    );
    check_confidence(&reference["9b_cap3_signals"], 0.5, 3);
    check_confidence(&reference["9c_initial_0.01_one_0.9"], 0.01, 20);
    let r = &reference["9d_order_invariance"];
    let run = |signals: &[f64]| {
        signals
            .iter()
            .enumerate()
            .fold(0.5, |c, (n, &s)| update_confidence(c, n as u64, s, 20))
    };
    assert_eq!(Some(run(&[0.9, 0.1, 0.3, 0.7])), r["perm_1"].as_f64());
    assert_eq!(Some(run(&[0.1, 0.7, 0.9, 0.3])), r["perm_2"].as_f64());
}

#[test]
fn signal_mapping_matches_popoto() {
    let reference = sections();
    // The reference prints Python reprs; these are the same outcomes as JSON.
    let outcomes: HashMap<&str, Value> = HashMap::from([
        ("{'success': True}", json!({"success": true})),
        ("{'success': False}", json!({"success": false})),
        ("{'success': 1}", json!({"success": 1})),
        ("{'success': 0}", json!({"success": 0})),
        ("{'success': 0.75}", json!({"success": 0.75})),
        ("{'success': 2.5}", json!({"success": 2.5})),
        ("{'success': '0.3'}", json!({"success": "0.3"})),
        ("{'success': 'yes'}", json!({"success": "yes"})),
        ("{'success': None}", json!({"success": null})),
        ("{}", json!({})),
        ("0.3", json!(0.3)),
        ("7", json!(7)),
        ("True", json!(true)),
        ("None", Value::Null),
        ("'success'", json!("success")),
    ]);
    let mapping = reference["10_episode_signal"]["mapping"]
        .as_array()
        .expect("mapping");
    assert_eq!(mapping.len(), outcomes.len());
    for row in mapping {
        let repr = row[0].as_str().expect("repr");
        let outcome = outcomes
            .get(repr)
            .unwrap_or_else(|| panic!("no outcome for {repr}"));
        assert_eq!(
            Some(SuccessSignal.signal(outcome)),
            row[1].as_f64(),
            "{repr}"
        );
    }
}

#[test]
fn fingerprints_match_popoto() {
    let reference = sections();
    let rows = reference["11_compute_fingerprint"]["rows"]
        .as_array()
        .expect("rows");
    for row in rows {
        let canonical = row["canonical"].as_str().expect("canonical");
        let expected = row["fingerprint"].as_str();
        // Read as text, every row hashes as popoto's, 10**20 included.
        assert_eq!(
            compute_fingerprint_json(canonical).ok().as_deref(),
            expected,
            "{canonical}"
        );
        let features: Value = serde_json::from_str(canonical).expect("canonical is JSON");
        // A serde_json map holds 10**20 as a float, which Python prints as 1e+20.
        if canonical.contains("100000000000000000000") {
            assert_ne!(python_json(&features), canonical);
            continue;
        }
        assert_eq!(python_json(&features), canonical);
        let map = features.as_object().expect("object");
        assert_eq!(
            Some(compute_fingerprint(map).as_str()),
            expected,
            "{canonical}"
        );
    }
}

#[test]
fn error_messages_name_the_fields_in_plain_words() {
    // popoto words these in Python (`unknown field(s): ['bogus']; expected subset of
    // ['problem_topology', 'affected_layer']`); ours name the same fields in plain words.
    let reference = sections();
    let r = &reference["12_errors"];
    assert!(
        r["recall_unknown_ValueError"]
            .as_str()
            .is_some_and(|m| m.contains("'bogus'")),
        "popoto names the unknown field"
    );
    let s = Scenario::new();
    let missing = s
        .memory
        .record_episode(&[("problem_topology", "x")], &[], &json!({}), &p("p1"))
        .expect_err("missing field");
    assert_eq!(
        missing.to_string(),
        "episode fingerprint is missing field affected_layer; expected every one of problem_topology, affected_layer"
    );
    let unknown = s
        .memory
        .recall(&[("bogus", "x")], &p("p1"))
        .expect_err("unknown field");
    assert_eq!(
        unknown.to_string(),
        "unknown field bogus; expected a subset of problem_topology, affected_layer"
    );
    let two = s
        .memory
        .recall(&[("bogus", "x"), ("other", "y")], &p("p1"))
        .expect_err("unknown fields");
    assert_eq!(
        two.to_string(),
        "unknown fields bogus, other; expected a subset of problem_topology, affected_layer"
    );
    let empty = TrajectoryMemory::new(
        InMemoryStore::new(),
        s.clock.clone(),
        Config::new(Vec::<String>::new()),
    )
    .err()
    .expect("empty fields");
    let expected = r["empty_fingerprint_fields_TypeError"]
        .as_str()
        .expect("message");
    assert!(
        matches!(&empty, Error::InvalidConfig(p) if p.iter().any(|m| m == expected)),
        "{empty}"
    );
}
