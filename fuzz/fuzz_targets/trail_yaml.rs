//! Any bytes as trail YAML: an error, or a trail that writes back to YAML and parses back
//! equal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use agent_memory_recording::Trail;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let Ok(trail) = Trail::from_yaml_str(text, "fuzz.trail.yaml") else { return };
    let written = trail.to_yaml_string().expect("a parsed trail writes back");
    let again = Trail::from_yaml_str(&written, "again.trail.yaml")
        .unwrap_or_else(|e| panic!("a written trail parses back: {e}\n{written}"));
    assert_eq!(trail, again, "the trail changed on the way back:\n{written}");
});
