//! Reverse templating with the round-trip law as the oracle: for non-sensitive memory and
//! literals free of token syntax, `interpolate(templatize(call, snapshot), snapshot) == call`,
//! and, without templating inside strings, the value index agrees with the baseline algorithm.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use agent_memory_core::Timestamp;
use agent_memory_recording::{
    MissingKeys, Snapshot, SnapshotItem, TemplatePolicy, baseline, interpolate, templatize,
};
use serde_json::Value;

/// Characters of values and literals: no `$`, `{` or `}`, so that only the templater writes
/// tokens; multibyte characters so that lengths in characters and bytes differ.
const VALUE_CHARS: &[char] = &['a', 'b', 'c', '0', '1', '@', '.', ' ', 'é', '日', '\n', '"'];
/// Characters of keys: the token-safe ones and some that are not.
const KEY_CHARS: &[char] = &['a', 'b', 'z', '_', '.', '-', '0', ' ', '}', '$', '{', 'é'];

fn text(u: &mut Unstructured<'_>, chars: &[char], max: usize) -> Result<String> {
    let len = u.int_in_range(0..=max)?;
    (0..len).map(|_| u.choose(chars).copied()).collect()
}

fn snapshot(u: &mut Unstructured<'_>) -> Result<Snapshot> {
    let mut entries = BTreeMap::new();
    for _ in 0..u.int_in_range(0..=8)? {
        let key = text(u, KEY_CHARS, 6)?;
        let mut item = SnapshotItem::new(text(u, VALUE_CHARS, 12)?)
            .with_written_at(Timestamp::from_millis(u.int_in_range(0..=4)?))
            .with_existed_before(u.arbitrary()?);
        if let Some(writer) =
            u.choose(&[None, Some("rememberText"), Some("merchantFactory_x"), Some("other")])?
        {
            item = item.with_writer(*writer);
        }
        entries.insert(key, item);
    }
    Ok(Snapshot::from_entries(entries))
}

fn call(u: &mut Unstructured<'_>, known: &[String], depth: u8) -> Result<Value> {
    let pick = u.int_in_range(0..=if depth == 0 { 4 } else { 6 })?;
    Ok(match pick {
        0 if !known.is_empty() => Value::String(u.choose(known)?.clone()),
        0 | 1 => Value::String(text(u, VALUE_CHARS, 12)?),
        2 => Value::from(u.arbitrary::<i32>()?),
        3 => Value::Bool(u.arbitrary()?),
        4 => Value::Null,
        5 => {
            let len = u.int_in_range(0..=4)?;
            Value::Array((0..len).map(|_| call(u, known, depth - 1)).collect::<Result<_>>()?)
        }
        _ => {
            let mut map = serde_json::Map::new();
            for _ in 0..u.int_in_range(0..=4)? {
                map.insert(text(u, KEY_CHARS, 4)?, call(u, known, depth - 1)?);
            }
            Value::Object(map)
        }
    })
}

fn case(u: &mut Unstructured<'_>) -> Result<(Snapshot, Value, TemplatePolicy)> {
    let snapshot = snapshot(u)?;
    let known: Vec<String> = snapshot.entries.values().filter_map(|i| i.value.clone()).collect();
    let call = call(u, &known, 4)?;
    let policy = TemplatePolicy::default()
        .with_min_chars(u.int_in_range(0..=10)?)
        .with_inside(u.arbitrary()?);
    Ok((snapshot, call, policy))
}

fuzz_target!(|bytes: &[u8]| {
    let Ok((snapshot, call, policy)) = case(&mut Unstructured::new(bytes)) else { return };
    let templated = templatize(&call, &snapshot, &policy).expect("a shallow call templates");
    let back = interpolate(&templated.parameters, &snapshot, MissingKeys::Fail)
        .expect("every token the templater writes resolves");
    assert_eq!(*back, call, "the round trip changed the call: {:?}", templated.parameters);
    if !policy.inside {
        assert_eq!(
            *templated.parameters,
            baseline::templatize(&call, &snapshot, &policy),
            "the index and the baseline algorithm disagree"
        );
    }
});
