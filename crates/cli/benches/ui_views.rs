//! W-ui: how fast the inspector page (`agent-memory ui`) gets each view's data, over HTTP
//! from the real binary, on a SQLite store holding 100,000 episodes (1,000 fingerprint
//! groups, crystallized) and 10,000 browser trajectories on 10 sites, plus a coding session,
//! a recorded session and a notes tree. The target: every view's data under 50 ms p99.
//!
//! Each view is asked 200 times after 10 warm-up requests, the way the page asks (a `POST`
//! with the CSRF token); p50 and p99 are printed and appended to
//! `<target>/bench-figures/W-ui.jsonl`, with the round trip of a static asset (`GET
//! /app.js`), measured between the same requests, as the baseline: the floor of any request
//! to the server.
//!
//! The same store holds a second partition of 100,000 groups below the threshold (one
//! episode each), the view that once answered 13 MB and grew the server to 760 MiB. Its
//! first page is timed cold (the server's first request for it) and warm, and the server's
//! resident memory (`VmRSS`, and its peak `VmHWM`, from `/proc`) is read after the first
//! page and after every page of the 100,000 groups was asked for in turn, each against the
//! server's memory before any view was asked. The targets: the first page under 200 ms, the
//! server under 100 MiB. Under `cargo test --benches` (no `--bench`) the store is small and
//! each view is asked a few times, to check that it all runs.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use agent_memory_benchkit::{Figure, keep, keeps_figures, percentile};
use agent_memory_contract::files::FileAccess;
use agent_memory_contract::{Env, database, operations};
use agent_memory_core::{ManualClock, SeededIds, SplitMix64, Timestamp};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_agent-memory");
const WORKLOAD: &str = "W-ui";
/// 2026-01-01T00:00:00Z: every record is written at or after it, the server's "now" is
/// 2026-01-20.
const START: i64 = 1_767_225_600_000;
const ACTIONS: [&str; 8] = [
    "read_logs",
    "pin_seed",
    "run_tests",
    "bisect",
    "revert",
    "retry",
    "patch",
    "deploy",
];

fn call(env: &Env<'_>, operation: &str, input: Value) -> Value {
    operations::find(operation)
        .expect("operation")
        .call(env, input)
        .unwrap_or_else(|e| panic!("{operation}: {e:#}"))
}

/// Fills `db` with `episodes` episodes and `trajectories` browser runs, and the rest, and a
/// partition `wide` of `wide` groups of one episode each.
fn fill(db: &Path, episodes: usize, trajectories: usize, wide: usize) {
    let store =
        database::open(db, &agent_memory_core::SharedClock::default()).expect("open the store");
    let env = Env {
        client: None,
        store: &store,
        clock: Box::new(ManualClock::new(Timestamp::from_millis(START))),
        ids: Box::new(SeededIds::new(7)),
        files: FileAccess::Any,
    };
    let mut rng = SplitMix64::new(20_261_126);
    let groups = (episodes / 100).max(1);
    for batch in 0..episodes.div_ceil(5_000) {
        let episodes = (batch * 5_000..((batch + 1) * 5_000).min(episodes))
            .map(|i| {
                let group = rng.below(groups as u64);
                let steps: Vec<&str> = (0..4)
                    .map(|k| ACTIONS[((group + k) % ACTIONS.len() as u64) as usize])
                    .collect();
                json!({
                    "fingerprint": {"task": format!("task-{group}"), "env": "ci"},
                    "trajectory": steps,
                    "outcome": {"success": rng.below(10) < 8},
                    "recorded_at": START + i as i64 * 1_000,
                })
            })
            .collect::<Vec<_>>();
        call(
            &env,
            "trajectory_record",
            json!({"partition": "bench", "fields": ["task", "env"], "episodes": episodes}),
        );
    }
    call(
        &env,
        "trajectory_crystallize",
        json!({"partition": "bench"}),
    );
    for batch in 0..wide.div_ceil(5_000) {
        let episodes = (batch * 5_000..((batch + 1) * 5_000).min(wide))
            .map(|i| {
                json!({
                    "fingerprint": {"task": format!("wide-{i:06}"), "env": "ci"},
                    "trajectory": ["read_logs", "run_tests"],
                    "outcome": {"success": true},
                    "recorded_at": START + i as i64,
                })
            })
            .collect::<Vec<_>>();
        call(
            &env,
            "trajectory_record",
            json!({"partition": "wide", "fields": ["task", "env"], "episodes": episodes}),
        );
    }
    call(&env, "trajectory_crystallize", json!({"partition": "wide"}));
    for i in 0..trajectories {
        let site = format!("https://site{}.test/", i % 10);
        let turns = (0..5)
            .map(|k| {
                json!({"url": format!("{site}page{k}"),
                       "action": format!("{{\"action\":\"click\",\"selector\":\"@e{k}\"}}"),
                       "verified": k % 2 == 0})
            })
            .collect::<Vec<_>>();
        call(
            &env,
            "browser_record_run",
            json!({"goal": format!("find report {} of {}", i % 50, i % 7), "start_url": site,
                   "turns": turns, "success": i % 4 != 0, "selectors": [
                       {"element": "button \"Search\"", "selector": "[data-testid=search]"}]}),
        );
    }
    call(
        &env,
        "turns_append",
        json!({"session": "coding", "events": [
            {"type": "session_started", "session": "coding", "started_at": START},
            {"type": "user_message", "text": "make the tests pass"},
            {"type": "assistant_turn", "text": "Fixed the parser.",
             "memory": {"files_changed": ["src/parser.rs"]}}]}),
    );
    call(
        &env,
        "recording_append",
        json!({"session": "recorded", "logs": [
            {"toolName": "signIn", "parameters": {"email": "shop@example.com"}, "successful": true,
             "durationMs": 5, "timestamp": 1000,
             "memorySnapshot": [{"key": "email", "value": "shop@example.com"}]}]}),
    );
    for i in 0..50 {
        call(
            &env,
            "notes",
            json!({"command": "create", "path": format!("/memories/dir{}/note{i}.md", i % 5),
                   "file_text": "a note about the release\n"}),
        );
    }
}

struct Server {
    child: std::process::Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(db: &Path) -> Server {
    let mut child = Command::new(BIN)
        .arg("--db")
        .arg(db)
        .args([
            "--now",
            "2026-01-20T00:00:00Z",
            "ui",
            "--listen",
            "127.0.0.1:0",
        ])
        .env_remove("AGENT_MEMORY_DB")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the inspector");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the inspector listens")
            .expect("stderr");
        if let Some(at) = line.find("http://") {
            break line[at..].trim_end_matches('/').to_owned();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    Server { child, url }
}

/// Keeps one figure, in microseconds, against `baseline` (see [`keep`]).
fn figure(name: &str, n: usize, value: f64, baseline: f64) {
    figure_in(name, n, value, "us", baseline);
}

/// Keeps one figure in `unit` against `baseline`.
fn figure_in(name: &str, n: usize, value: f64, unit: &str, baseline: f64) {
    keep(
        "W-ui.jsonl",
        &[Figure::new(WORKLOAD, name, n, value, unit).against(baseline)],
    );
}

/// The server's resident memory now and at its peak, in MiB (`VmRSS` and `VmHWM` of
/// `/proc/<pid>/status`); zeros where `/proc` is not there.
fn memory_of(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .map_or(0.0, |kib| kib / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn main() {
    let full = keeps_figures();
    let (episodes, trajectories, wide, warm, calls) = if full {
        (100_000, 10_000, 100_000, 10, 200)
    } else {
        (1_000, 50, 2_000, 1, 3)
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("memory.db");
    let filled = Instant::now();
    fill(&db, episodes, trajectories, wide);
    println!(
        "{WORKLOAD}: {episodes} episodes, {wide} groups below the threshold and {trajectories} browser trajectories written in {:.1}s",
        filled.elapsed().as_secs_f64()
    );
    let server = start(&db);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let views: Vec<(&str, Value)> = vec![
        ("overview", json!({})),
        ("partition", json!({"partition": "bench"})),
        ("partition", json!({"partition": "wide"})),
        (
            "recall",
            json!({"partition": "bench", "fingerprint": {"task": "task-7"}}),
        ),
        (
            "timeline",
            json!({"partition": "bench", "fingerprint": {"task": "task-7", "env": "ci"}}),
        ),
        ("browser", json!({"scope": "shared"})),
        (
            "context",
            json!({"scope": "shared", "goal": "find report 7 of 3", "url": "https://site3.test/"}),
        ),
        (
            "session",
            json!({"session": "coding", "provider": "anthropic"}),
        ),
        ("recording", json!({"session": "recorded"})),
        ("notes", json!({"scope": "default"})),
    ];
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let page = client
            .get(format!("{}/", server.url))
            .send()
            .await
            .expect("GET /")
            .text()
            .await
            .expect("page");
        let token = page
            .split("name=\"csrf-token\" content=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("a CSRF token")
            .to_owned();
        let post = |view: &str, input: &Value| {
            client
                .post(format!("{}/api/{view}", server.url))
                .header("x-csrf-token", &token)
                .header("content-type", "application/json")
                .body(input.to_string())
                .send()
        };
        // The partition of `wide` groups below the threshold: its first page, cold, and the
        // server's memory before, after it, and after every page was asked for in turn.
        let pid = server.child.id();
        let (before, _) = memory_of(pid);
        let wide_input = json!({"partition": "wide"});
        let started = Instant::now();
        let first = post("partition", &wide_input).await.expect("POST");
        assert_eq!(first.status().as_u16(), 200, "the first page");
        let first: Value = first.json().await.expect("JSON");
        let cold = started.elapsed().as_secs_f64() * 1e6;
        let (after_first, _) = memory_of(pid);
        let started = Instant::now();
        let mut cursor = first["truncated"]["pending"]["next"].as_str().map(str::to_owned);
        let (mut pages, mut groups) = (1, first["pending"].as_array().map_or(0, Vec::len));
        while let Some(after) = cursor {
            let mut input = wide_input.clone();
            input["page"] = json!({"list": "pending", "after": after});
            let page: Value = post("partition", &input)
                .await
                .expect("POST")
                .json()
                .await
                .expect("JSON");
            pages += 1;
            groups += page["pending"].as_array().map_or(0, Vec::len);
            cursor = page["truncated"]["pending"]["next"].as_str().map(str::to_owned);
        }
        assert_eq!(groups, wide, "every group below the threshold, a page at a time");
        let walked = started.elapsed().as_secs_f64();
        let (after_all, peak) = memory_of(pid);
        println!(
            "{WORKLOAD}: {wide} groups below the threshold: first page {:.1} ms cold; {pages} pages in {walked:.1}s; \
             server RSS {before:.1} MiB before, {after_first:.1} MiB after the first page, \
             {after_all:.1} MiB (peak {peak:.1} MiB) after every page",
            cold / 1e3
        );
        println!(
            "{:<10} {:>10} {:>10} {:>12} {:>12} {:>10}",
            "view", "p50 ms", "p99 ms", "floor p50 ms", "floor p99 ms", "bytes"
        );
        let mut floor_p50 = Vec::new();
        for (view, input) in &views {
            let mut samples = Vec::with_capacity(calls);
            let mut floor = Vec::with_capacity(calls);
            let mut size = 0;
            for i in 0..warm + calls {
                let started = Instant::now();
                let response = client
                    .post(format!("{}/api/{view}", server.url))
                    .header("x-csrf-token", &token)
                    .header("content-type", "application/json")
                    .body(input.to_string())
                    .send()
                    .await
                    .expect("POST");
                assert_eq!(response.status().as_u16(), 200, "{view}");
                size = response.bytes().await.expect("body").len();
                let took = started.elapsed().as_secs_f64() * 1e6;
                let started = Instant::now();
                let asset = client
                    .get(format!("{}/app.js", server.url))
                    .send()
                    .await
                    .expect("GET");
                asset.bytes().await.expect("asset");
                let asset_took = started.elapsed().as_secs_f64() * 1e6;
                if i >= warm {
                    samples.push(took);
                    floor.push(asset_took);
                }
            }
            let (p50, p99) = (
                percentile(&mut samples, 0.5),
                percentile(&mut samples, 0.99),
            );
            let (f50, f99) = (percentile(&mut floor, 0.5), percentile(&mut floor, 0.99));
            let shown = if input["partition"] == "wide" { "wide" } else { view };
            println!(
                "{shown:<10} {:>10.2} {:>10.2} {:>12.2} {:>12.2} {size:>10}",
                p50 / 1e3,
                p99 / 1e3,
                f50 / 1e3,
                f99 / 1e3
            );
            floor_p50.push(f50);
            if full {
                let view = match input.get("partition").and_then(Value::as_str) {
                    Some("wide") => "partition of 100,000 groups below the threshold, first page",
                    _ => view,
                };
                figure(&format!("{view} p50 (vs GET /app.js)"), calls, p50, f50);
                figure(&format!("{view} p99 (vs GET /app.js)"), calls, p99, f99);
            }
        }
        if full {
            let floor = percentile(&mut floor_p50, 0.5);
            figure(
                "partition of 100,000 groups below the threshold, first page cold (vs GET /app.js)",
                wide,
                cold,
                floor,
            );
            for (name, value) in [
                ("server RSS after its first page", after_first),
                ("server RSS after all its pages", after_all),
                ("server peak RSS over all its pages", peak),
            ] {
                figure_in(
                    &format!("{name}, 100,000 groups below the threshold (vs RSS before any view)"),
                    wide,
                    value,
                    "MiB",
                    before,
                );
            }
        }
    });
}
