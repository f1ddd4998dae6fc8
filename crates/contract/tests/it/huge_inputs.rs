//! No refusal grows with its input: every operation is called with a valid input in which one
//! string at a time (a value, or a key of an object) is replaced by a huge one, and each
//! failure's whole chain of messages, as the operations write it (before any door bounds
//! it), must stay short.

use std::sync::Arc;

use agent_memory_contract::database::Store;
use agent_memory_contract::files::FileAccess;
use agent_memory_contract::{Env, operations};
use agent_memory_core::{ManualClock, SeededIds, Timestamp};
use serde_json::{Value, json};

/// The longest chain of messages a refusal may have, in characters.
const BOUND: usize = 1_500;

/// The string each string of an input is replaced by, in turn.
fn huge() -> String {
    "h".repeat(100_000)
}

/// A valid call of every operation that takes an input, in an order where each finds what it
/// needs stored by those before it (each is made as given before its changed copies).
fn calls() -> Vec<(&'static str, Value)> {
    let episode = json!({
        "fingerprint": {"task": "deploy"},
        "trajectory": ["build", "test", "ship"],
        "outcome": {"success": true},
        "recorded_at": "2026-01-01T00:00:00.000Z"
    });
    let run = crate::calls::green_tea_run();
    let events = crate::calls::fixed_test_events();
    let log = |tool: &str, parameters: Value, at: i64| {
        json!({
            "toolName": tool,
            "parameters": parameters,
            "successful": true,
            "durationMs": 12,
            "timestamp": at,
            "memorySnapshot": [
                {"key": "merchant_email", "value": "shop@example.com",
                 "writtenBy": "loadAccount", "writtenAt": 1000, "existedBefore": true},
                {"key": "merchant_password", "sensitive": true,
                 "writtenBy": "loadAccount", "writtenAt": 1000, "existedBefore": true}
            ]
        })
    };
    let trail = "- tools:\n  - signIn:\n      email: shop@example.com\n";
    vec![
        (
            "trajectory_record",
            json!({"partition": "team", "fields": ["task"], "episodes": [episode],
                   "cluster_threshold": 1}),
        ),
        ("trajectory_crystallize", json!({"partition": "team"})),
        (
            "trajectory_recall",
            json!({"partition": "team", "fingerprint": {"task": "deploy"},
                   "confidence_weight": 0.5, "recency_weight": 0.5, "limit": 3}),
        ),
        ("trajectory_patterns", json!({"partition": "team"})),
        (
            "trajectory_fingerprint",
            json!({"features": {"task": "deploy", "env": "staging"}}),
        ),
        ("browser_record_run", run),
        (
            "browser_context",
            json!({"goal": "find green tea", "url": "https://shop.test/", "scope": "shared"}),
        ),
        ("browser_resume", json!({"run_id": "run-1"})),
        (
            "browser_fork",
            json!({"run_id": "run-1", "goal": "find black tea"}),
        ),
        ("browser_runs", json!({"status": "completed"})),
        (
            "browser_import",
            json!({"scope": "shared", "dir": concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../browser-memory/tests/it/fixtures/bad-examples/agent-memory"
            )}),
        ),
        ("browser_hints", json!({"scope": "shared", "refresh": true})),
        ("browser_prune", json!({"scope": "shared", "ttl_days": 30})),
        (
            "browser_run_start",
            json!({"run_id": "run-2", "goal": "g", "domain": "shop.test",
                   "start_url": "https://shop.test/", "session_id": "s-2"}),
        ),
        (
            "browser_run_update",
            json!({"run_id": "run-2", "current_url": "https://shop.test/a",
                   "artifact_paths": ["a.png"]}),
        ),
        (
            "browser_run_complete",
            json!({"run_id": "run-2", "success": true, "turn_count": 2,
                   "final_url": "https://shop.test/b", "summary": "done"}),
        ),
        (
            "browser_save_trajectory",
            json!({"scope": "compat", "goal": "buy green tea", "success": true,
                   "model": "m", "origin": "https://shop.test/",
                   "turns": [{"state": {"url": "https://shop.test/", "snapshot": "page"},
                              "action": {"action": "click", "selector": "#tea"},
                              "durationMs": 5, "expectedEffect": "the cart opens",
                              "reasoning": "r", "error": "e", "verificationFailure": "v"}]}),
        ),
        ("browser_trajectories", json!({"scope": "compat"})),
        (
            "browser_match",
            json!({"scope": "compat", "goal": "buy green tea", "origin": "https://shop.test/"}),
        ),
        (
            "browser_replayable",
            json!({"scope": "compat", "goal": "buy green tea", "origin": "https://shop.test/"}),
        ),
        (
            "browser_reference_text",
            json!({"trajectory": {"goal": "g", "steps": [
                {"url": "https://shop.test/", "action": {"action": "click", "selector": "#a"}}
            ]}}),
        ),
        (
            "browser_record_fact",
            json!({"scope": "compat", "url": "https://shop.test/", "type": "quirk",
                   "key": "banner", "value": "a"}),
        ),
        (
            "browser_record_session",
            json!({"scope": "compat", "url": "https://shop.test/", "session": {
                "id": "s1", "goal": "g", "outcome": "o", "finalUrl": "https://shop.test/",
                "timestamp": "2026-01-01T00:00:00.000Z"}}),
        ),
        (
            "browser_sessions",
            json!({"scope": "compat", "url": "https://shop.test/"}),
        ),
        (
            "browser_knowledge",
            json!({"scope": "compat", "url": "https://shop.test/"}),
        ),
        (
            "browser_record_selector",
            json!({"scope": "compat", "url": "https://shop.test/", "element": "button \"Pay\"",
                   "selector": "#pay"}),
        ),
        (
            "browser_selectors",
            json!({"scope": "compat", "url": "https://shop.test/"}),
        ),
        (
            "browser_selectors_text",
            json!({"selectors": [{"element": "e", "lastRef": "@e1", "stableSelector": "#e",
                                  "successCount": 1, "lastUsed": "2026-01-01T00:00:00.000Z"}]}),
        ),
        (
            "browser_save_hints",
            json!({"scope": "compat", "hints": "Prefer data-testid selectors."}),
        ),
        (
            "browser_forget_knowledge",
            json!({"scope": "compat", "url": "https://shop.test/", "sessions": true}),
        ),
        (
            "browser_save_suite_summary",
            json!({"scope": "compat", "summary": {"id": "run_1", "model": "m"}}),
        ),
        ("browser_suite_summaries", json!({"scope": "compat"})),
        ("browser_site_key", json!({"url": "https://shop.test/"})),
        (
            "browser_suite_hints",
            json!({"runs": [{"name": "n", "goal": "g", "verdict": "v",
                             "failedCriteria": ["c"], "turns": [
                                 {"state": {"url": "u"}, "action": {"action": "click"},
                                  "error": "Stale ref"}]}]}),
        ),
        (
            "browser_build_context",
            json!({"parts": [{"label": "l", "content": "c", "priority": 1}],
                   "policy": "skip"}),
        ),
        (
            "turns_append",
            json!({"session": "code-1", "events": events}),
        ),
        (
            "turns_view",
            json!({"session": "code-1", "provider": "openai_chat"}),
        ),
        (
            "turns_history",
            json!({"session": "code-1", "view": "model", "system_prompt": "Be careful.",
                   "memory_style": "positional"}),
        ),
        (
            "turns_tool_history",
            json!({"session": "code-1", "mode": "full"}),
        ),
        (
            "turns_compact",
            json!({"session": "code-1", "summary": "Fixed the flaky test.", "keep_last": 0}),
        ),
        (
            "recording_append",
            json!({"session": "rec-1", "logs": [
                log("loadAccount", json!({"account": "coffee"}), 1000),
                log("signIn", json!({"email": "shop@example.com"}), 2000)
            ]}),
        ),
        (
            "recording_templatize",
            json!({"session": "rec-1", "objectives": [
                {"step": "Load the account", "started_at": 0},
                {"step": "Sign in", "started_at": 1500}
            ]}),
        ),
        (
            "recording_lint",
            json!({"trail": trail, "memory": {"merchant_email": "shop@example.com"}}),
        ),
        (
            "recording_next_call",
            json!({"trail": trail, "device": "android-phone", "writes": [{"set": {"k": "v"}}]}),
        ),
        (
            "notes",
            json!({"command": "create", "path": "/memories/a.md", "file_text": "one\ntwo\n"}),
        ),
        (
            "notes",
            json!({"command": "str_replace", "path": "/memories/a.md", "old_str": "one",
                   "new_str": "1", "scope": "default", "secrets": {"pin": "2468"}}),
        ),
        (
            "notes",
            json!({"command": "insert", "path": "/memories/a.md", "insert_line": 0,
                   "insert_text": "zero"}),
        ),
        (
            "notes",
            json!({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"}),
        ),
        (
            "notes",
            json!({"command": "search", "query": "two", "path": "/memories"}),
        ),
        (
            "notes",
            json!({"command": "view", "path": "/memories/b.md", "view_range": [1, -1]}),
        ),
        (
            "notes",
            json!({"command": "delete", "path": "/memories/b.md"}),
        ),
        ("memory_forget", json!({"partition": "team"})),
        ("memory_forget", json!({"session": "code-1"})),
        ("memory_stats", json!({})),
    ]
}

/// `input` with one string replaced by `with`, for every string (value or key) in it.
fn each_string_replaced(input: &Value, with: &str) -> Vec<Value> {
    let mut out = Vec::new();
    match input {
        Value::String(_) => out.push(Value::String(with.to_owned())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                for replaced in each_string_replaced(item, with) {
                    let mut copy = items.clone();
                    copy[i] = replaced;
                    out.push(Value::Array(copy));
                }
            }
        }
        Value::Object(map) => {
            for (key, value) in map {
                let mut renamed = map.clone();
                let taken = renamed.remove(key).unwrap_or(Value::Null);
                renamed.insert(with.to_owned(), taken);
                out.push(Value::Object(renamed));
                for replaced in each_string_replaced(value, with) {
                    let mut copy = map.clone();
                    copy.insert(key.clone(), replaced);
                    out.push(Value::Object(copy));
                }
            }
        }
        _ => {}
    }
    out
}

#[test]
fn no_refusal_quotes_a_huge_input_whole() {
    let store: Store =
        Arc::new(agent_memory_sqlite::SqliteStore::open_in_memory().expect("an in-memory store"));
    let env = Env {
        client: None,
        store: &store,
        clock: Box::new(ManualClock::new(Timestamp::from_millis(1_767_225_600_000))),
        ids: Box::new(SeededIds::new(7)),
        files: FileAccess::Any,
    };
    let huge = huge();
    let mut refusals = 0;
    let mut too_long = Vec::new();
    for (name, input) in calls() {
        let operation = operations::find(name).expect(name);
        operation
            .call(&env, input.clone())
            .unwrap_or_else(|e| panic!("{name} as given: {e:#}"));
        for changed in each_string_replaced(&input, &huge) {
            let text = changed.to_string();
            for result in [
                operation.call(&env, changed.clone()),
                operation.call_text(&env, &text).map(Value::String),
            ] {
                let Err(error) = result else { continue };
                refusals += 1;
                let chain = format!("{error:#}");
                let chars = chain.chars().count();
                if chars >= BOUND {
                    let head: String = chain.chars().take(300).collect();
                    too_long.push(format!("{name}: {chars} characters: {head}"));
                }
            }
        }
    }
    assert!(
        refusals > 100,
        "only {refusals} refusals: the inputs are not valid"
    );
    assert!(too_long.is_empty(), "{}", too_long.join("\n"));
}
