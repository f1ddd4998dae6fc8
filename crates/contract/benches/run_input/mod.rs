//! A finished run as the contract's `browser_record_run` takes it: the JSON text a language
//! package sends, shared by the benches that record runs or screen their text.

use agent_memory_browser::RunReport;
use serde_json::{Value, json};

/// `r` as `browser_record_run` takes it, under run id `run_id`.
pub(crate) fn input(r: &RunReport, run_id: &str) -> String {
    let turns: Vec<Value> = r
        .turns
        .iter()
        .map(|t| {
            json!({
                "url": t.url, "snapshot": t.snapshot, "action": t.action,
                "verified": t.verified, "duration_ms": t.duration_ms,
            })
        })
        .collect();
    let selectors: Vec<Value> = r
        .selectors
        .iter()
        .map(|(element, selector)| json!({ "element": element, "selector": selector }))
        .collect();
    json!({
        "goal": r.goal, "start_url": r.start_url, "success": r.success, "model": r.model,
        "outcome": r.outcome, "final_url": r.final_url, "run_id": run_id,
        "turns": turns, "selectors": selectors,
    })
    .to_string()
}
