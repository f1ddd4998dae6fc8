//! The laws of reverse templating, as property tests.

use std::collections::BTreeMap;

use agent_memory_core::Timestamp;
use agent_memory_recording::{
    MissingKeys, Snapshot, SnapshotItem, TemplatePolicy, baseline, interpolate, templatize,
};
use proptest::prelude::*;
use serde_json::Value;

/// Values drawn from a small alphabet so that parameters often equal memory values; no
/// `$`, `{` or `}` so that only tokens the templater writes are tokens.
fn value() -> impl Strategy<Value = String> {
    "[a-c0-1]{0,10}"
}

fn snapshot() -> impl Strategy<Value = Snapshot> {
    prop::collection::btree_map(
        "[a-z]{1,6}",
        (
            value(),
            prop::option::of(prop::sample::select(vec!["rememberText", "other"])),
            0i64..5,
            any::<bool>(),
        ),
        0..8,
    )
    .prop_map(|entries| {
        Snapshot::from_entries(
            entries
                .into_iter()
                .map(|(key, (value, writer, at, before))| {
                    let mut item = SnapshotItem::new(value)
                        .with_written_at(Timestamp::from_millis(at))
                        .with_existed_before(before);
                    if let Some(writer) = writer {
                        item = item.with_writer(writer);
                    }
                    (key, item)
                })
                .collect(),
        )
    })
}

fn call(snapshot: &Snapshot) -> impl Strategy<Value = Value> + use<> {
    let known: Vec<String> = snapshot
        .entries
        .values()
        .filter_map(|item| item.value.clone())
        .chain(std::iter::once("fallback-literal".to_owned()))
        .collect();
    let leaf = prop_oneof![
        prop::sample::select(known).prop_map(Value::String),
        value().prop_map(Value::String),
        any::<i32>().prop_map(Value::from),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn case() -> impl Strategy<Value = (Snapshot, Value)> {
    snapshot().prop_flat_map(|s| {
        let c = call(&s);
        (Just(s), c)
    })
}

/// Every token `${key}` in `value`.
fn tokens(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => {
            if let Some(key) = s.strip_prefix("${").and_then(|k| k.strip_suffix('}')) {
                out.push(key.to_owned());
            }
        }
        Value::Array(items) => items.iter().for_each(|v| tokens(v, out)),
        Value::Object(map) => map.values().for_each(|v| tokens(v, out)),
        _ => {}
    }
}

fn policy() -> TemplatePolicy {
    TemplatePolicy::default().with_min_chars(4)
}

proptest! {
    #[test]
    fn interpolating_the_template_gives_back_the_call((snapshot, call) in case()) {
        let templated = templatize(&call, &snapshot, &policy()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = interpolate(&templated.parameters, &snapshot, MissingKeys::Fail)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&*back, &call);
    }

    #[test]
    fn templating_inside_strings_still_gives_back_the_call((snapshot, call) in case()) {
        let policy = policy().with_inside(true);
        let templated = templatize(&call, &snapshot, &policy).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = interpolate(&templated.parameters, &snapshot, MissingKeys::Fail)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&*back, &call);
    }

    #[test]
    fn no_token_resolves_to_a_different_value((snapshot, call) in case()) {
        let templated = templatize(&call, &snapshot, &policy()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut keys = Vec::new();
        tokens(&templated.parameters, &mut keys);
        prop_assert_eq!(keys.len(), templated.substitutions.len());
        for sub in &templated.substitutions {
            let item = snapshot.entries.get(&sub.key);
            prop_assert!(item.is_some_and(|i| i.existed_before), "token for a key created by the call: {}", sub.key);
        }
    }

    #[test]
    fn the_result_does_not_depend_on_insertion_order((snapshot, call) in case()) {
        // Rebuild the snapshot from its entries in reverse order through a HashMap-backed
        // detour; the templated call and the report must not change.
        let reversed: BTreeMap<String, SnapshotItem> = snapshot.entries.clone().into_iter().rev().collect();
        let shuffled = Snapshot::from_entries(reversed);
        let a = templatize(&call, &snapshot, &policy()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let b = templatize(&call, &shuffled, &policy()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&a, &b);
        let again = templatize(&call, &snapshot, &policy()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&a, &again);
    }

    #[test]
    fn the_index_agrees_with_the_baseline_algorithm((snapshot, call) in case()) {
        let fast = templatize(&call, &snapshot, &policy()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(fast.parameters.into_owned(), baseline::templatize(&call, &snapshot, &policy()));
    }
}
