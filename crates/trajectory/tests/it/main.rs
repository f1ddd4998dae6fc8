//! Integration tests of `trajectory`: popoto's reference numbers, the fixed divergences,
//! laws, edge parity with popoto, crystallizers in several processes, the W-traj generator,
//! and crystallize hooks (popoto's extension points overridden by a caller).

mod divergences;
mod hooks;
mod laws;
mod parity;
mod processes;
mod reference;
mod workload;

/// The line of popoto's reference output for `section`.
pub fn reference_line(section: &str) -> serde_json::Value {
    include_str!("data/popoto-reference-output.jsonl")
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).expect("reference line is JSON")
        })
        .find(|v| v["section"] == section)
        .unwrap_or_else(|| panic!("no reference section {section}"))
}
