//! Any JSON value and any memory through interpolation: a resolved value or an error, never
//! a panic. With an empty memory and missing keys left alone, nothing changes (or the value
//! holds an `args.` token that is not a dotted path, which is an error).
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use agent_memory_recording::{MissingKeys, interpolate, interpolate_str};
use serde_json::Value;

/// A memory of a few keys; keys and values are arbitrary text, tokens included.
fn memory(u: &mut Unstructured<'_>) -> Result<BTreeMap<String, String>> {
    let mut memory = BTreeMap::new();
    for _ in 0..u.int_in_range(0..=6)? {
        memory.insert(u.arbitrary::<String>()?, u.arbitrary::<String>()?);
    }
    Ok(memory)
}

fuzz_target!(|bytes: &[u8]| {
    let mut u = Unstructured::new(bytes);
    let Ok(memory) = memory(&mut u) else { return };
    let rest = u.take_rest();
    // The rest as JSON when it is JSON, else as one string.
    let value = serde_json::from_slice::<Value>(rest)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(rest).into_owned()));
    for policy in [MissingKeys::Leave, MissingKeys::Empty, MissingKeys::Fail] {
        let _ = interpolate(&value, &memory, policy);
        if let Value::String(text) = &value {
            let _ = interpolate_str(text, &memory, policy, &mut |_| {});
        }
    }
    let empty = BTreeMap::<String, String>::new();
    match interpolate(&value, &empty, MissingKeys::Leave) {
        Ok(same) => assert_eq!(*same, value, "an empty memory changed the value"),
        Err(e) => assert!(
            e.to_string().contains("deep") || e.to_string().starts_with("malformed args token"),
            "unexpected error: {e}"
        ),
    }
});
