//! W-mcp: the latency of a tool call to `agent-memory mcp` over stdio, warm, for
//! `trajectory_recall`, `browser_context` and the `notes` tool's `view` and `str_replace`
//! (on SQLite; the target is a p50 under 0.5 ms for both), next to the command line's per-call time for
//! the same question on the same database, measured in the same run.
//!
//! The client is rmcp's own, the server the real binary as a child process. The database
//! holds 1,000 episodes in 40 fingerprint groups (crystallized) and 300 recorded browser
//! runs on 5 sites, and a 40-line note. With `cargo bench` each tool is called 1,000 times after 50 warm-up
//! calls and the command line runs 100 times; p50 and p99 are printed and appended to
//! `<target>/bench-figures/W-mcp.jsonl` with the command line's figure as the baseline.
//! Under `cargo test --benches` (no `--bench`) a few calls check that it all runs.
//!
//! With `--bench`, and `node` and `npm` on the machine, the official MCP TypeScript SDK
//! (`@modelcontextprotocol/sdk`, installed by npm under `<target>/mcp-ts`, the client in
//! `benches/mcp_ts/latency.mjs`) makes the same calls over stdio and over streamable HTTP
//! (`mcp --http 127.0.0.1:0`); its HTTP figures are reported with its stdio ones as the
//! baseline. Without node or npm that part is skipped, saying so.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use agent_memory_benchkit::{Figure, keep, keeps_figures, percentile, target_dir};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_agent-memory");
const WORKLOAD: &str = "W-mcp";
const SITES: [&str; 5] = [
    "https://shop.test/",
    "https://news.test/",
    "https://mail.test/",
    "https://bank.test/",
    "https://docs.test/",
];
const WORDS: [&str; 12] = [
    "find", "green", "tea", "checkout", "cart", "search", "login", "invoice", "report", "filter",
    "black", "coffee",
];

type Client = RunningService<RoleClient, ()>;

/// One question asked both ways: as a tool call and as a command line.
struct Question {
    tool: &'static str,
    /// What the figures call it.
    label: &'static str,
    arguments: Value,
    command: Vec<String>,
    /// The arguments and command of every other call, for an edit that the next call
    /// undoes (a `str_replace` must find its text each time).
    undo: Option<(Value, Vec<String>)>,
}

impl Question {
    /// The arguments and command of the `i`th call.
    fn nth(&self, i: usize) -> (&Value, &[String]) {
        match &self.undo {
            Some((arguments, command)) if i % 2 == 1 => (arguments, command),
            _ => (&self.arguments, &self.command),
        }
    }
}

fn strings<const N: usize>(items: [&str; N]) -> Vec<String> {
    items.map(str::to_owned).to_vec()
}

/// `notes str_replace` of `old` by `new` in the bench's note, as a tool call and a command.
fn replace(old: &str, new: &str) -> (Value, Vec<String>) {
    (
        json!({"command": "str_replace", "path": NOTE, "old_str": old, "new_str": new}),
        strings(["notes", "str-replace", NOTE, "--old", old, "--new", new]),
    )
}

/// The note the notes questions read and edit.
const NOTE: &str = "/memories/project.md";

fn questions() -> [Question; 4] {
    let (edit, edit_command) = replace("status: draft", "status: final");
    [
        Question {
            tool: "trajectory_recall",
            label: "trajectory_recall",
            undo: None,
            arguments: json!({"partition": "team", "fingerprint": {"task": "task-7"}}),
            command: [
                "trajectory",
                "recall",
                "--partition",
                "team",
                "--field",
                "task=task-7",
            ]
            .map(str::to_owned)
            .to_vec(),
        },
        Question {
            tool: "browser_context",
            label: "browser_context",
            undo: None,
            arguments: json!({"goal": "find green tea checkout", "url": "https://shop.test/"}),
            command: [
                "browser",
                "context",
                "--goal",
                "find green tea checkout",
                "--url",
                "https://shop.test/",
            ]
            .map(str::to_owned)
            .to_vec(),
        },
        Question {
            tool: "notes",
            label: "notes view",
            arguments: json!({"command": "view", "path": NOTE}),
            command: strings(["notes", "view", NOTE]),
            undo: None,
        },
        Question {
            tool: "notes",
            label: "notes str_replace",
            arguments: edit,
            command: edit_command,
            undo: Some(replace("status: final", "status: draft")),
        },
    ]
}

async fn call(client: &Client, tool: &str, arguments: &Value) -> Value {
    let Value::Object(arguments) = arguments.clone() else {
        panic!("arguments must be an object");
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert_ne!(result.is_error, Some(true), "{tool}: {:?}", result.content);
    result.structured_content.unwrap_or_default()
}

/// 1,000 episodes in 40 groups, crystallized; 300 browser runs on 5 sites.
async fn fill(client: &Client) {
    let episodes: Vec<Value> = (0..1000)
        .map(|i| {
            json!({
                "fingerprint": {"task": format!("task-{}", i % 40)},
                "trajectory": ["plan", format!("step-{}", i % 3), "verify"],
                "outcome": {"success": i % 5 != 0},
            })
        })
        .collect();
    call(
        client,
        "trajectory_record",
        &json!({"partition": "team", "fields": ["task"], "episodes": episodes}),
    )
    .await;
    call(
        client,
        "trajectory_crystallize",
        &json!({"partition": "team"}),
    )
    .await;
    for i in 0..300_usize {
        let goal: Vec<&str> = (0..4)
            .map(|k| WORDS[(i * 7 + k * 5) % WORDS.len()])
            .collect();
        let site = SITES[i % SITES.len()];
        let run = json!({
            "goal": goal.join(" "),
            "start_url": site,
            "turns": [
                {"url": site, "action": {"action": "click", "selector": format!("#item-{}", i % 17)},
                 "verified": true, "duration_ms": 800},
                {"url": format!("{site}done"), "action": {"action": "type", "selector": "#q", "text": goal[0]},
                 "verified": i % 3 != 0, "duration_ms": 400}
            ],
            "success": i % 4 != 0,
            "outcome": "done",
            "session_id": format!("session-{}", i % 30),
            "final_url": format!("{site}done"),
            "selectors": [{"element": "search box", "selector": "#q"}],
        });
        call(client, "browser_record_run", &run).await;
    }
    let mut text = String::from("# Project\nstatus: draft\n");
    for i in 0..38 {
        text.push_str(&format!(
            "- decision {i}: keep the {} step\n",
            WORDS[i % WORDS.len()]
        ));
    }
    call(
        client,
        "notes",
        &json!({"command": "create", "path": NOTE, "file_text": text}),
    )
    .await;
}

/// Microseconds per call of `question` through the command line, `runs` times.
fn cli_samples(db: &Path, question: &Question, runs: usize) -> Vec<f64> {
    (0..runs)
        .map(|i| {
            let (_, command) = question.nth(i);
            let started = Instant::now();
            let status = Command::new(BIN)
                .arg("--db")
                .arg(db)
                .args(command)
                .arg("--json")
                .env_remove("AGENT_MEMORY_DB")
                .stdout(Stdio::null())
                .status()
                .expect("run the command line");
            let elapsed = started.elapsed().as_secs_f64() * 1e6;
            assert!(status.success(), "{command:?} failed");
            elapsed
        })
        .collect()
}

/// The TypeScript SDK's client script, with the SDK installed beside it under
/// `<target>/mcp-ts`; `None`, after saying why, when node or npm is missing or fails.
fn ts_client() -> Option<PathBuf> {
    let skip = |why: String| {
        eprintln!("{WORKLOAD}: skipping the TypeScript SDK: {why}");
        None
    };
    if !Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        return skip("node is not installed".to_owned());
    }
    let dir = target_dir().join("mcp-ts");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/mcp_ts");
    for file in ["package.json", "latency.mjs"] {
        let copied = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::copy(source.join(file), dir.join(file)));
        if let Err(e) = copied {
            return skip(format!("cannot copy {file} into {}: {e}", dir.display()));
        }
    }
    if !dir.join("node_modules/@modelcontextprotocol/sdk").exists() {
        let installed = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent"])
            .current_dir(&dir)
            .status();
        if !installed.is_ok_and(|s| s.success()) {
            return skip(format!("npm install failed in {}", dir.display()));
        }
    }
    Some(dir.join("latency.mjs"))
}

/// Microseconds per warm call, measured by the TypeScript client `script` with `config`
/// (its transport, the tool and its arguments, the warm-up and measured calls).
fn ts_samples(script: &Path, config: &Value) -> Vec<f64> {
    let output = Command::new("node")
        .arg(script)
        .arg(config.to_string())
        .stderr(Stdio::inherit())
        .output()
        .expect("run node");
    assert!(output.status.success(), "the TypeScript client failed");
    let result: Value = serde_json::from_slice(&output.stdout).expect("the client's JSON");
    result["samples_us"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|v| v.as_f64().expect("a number"))
        .collect()
}

/// `agent-memory mcp --http 127.0.0.1:0` on `db`, and the URL it serves.
fn http_server(db: &Path) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(BIN)
        .arg("--db")
        .arg(db)
        .args(["mcp", "--http", "127.0.0.1:0"])
        .env_remove("AGENT_MEMORY_DB")
        .env_remove("AGENT_MEMORY_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the HTTP server");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the server listens")
            .expect("its stderr");
        if let Some(at) = line.find("http://") {
            break line[at..].to_owned();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    (child, url)
}

/// The TypeScript SDK's calls of every question over stdio and HTTP, printed, and reported
/// as figures with stdio as the baseline.
fn typescript(db: &Path, warm: usize, calls: usize) {
    let Some(script) = ts_client() else {
        return;
    };
    let (mut server, url) = http_server(db);
    println!("{WORKLOAD}: {calls} warm calls with the official TypeScript SDK");
    println!(
        "{:<18} {:>12} {:>12} {:>12} {:>12}",
        "tool", "http p50 us", "http p99 us", "stdio p50 us", "stdio p99 us"
    );
    // The TypeScript client repeats one call, so an edit that must be undone stays out.
    for question in questions().into_iter().filter(|q| q.undo.is_none()) {
        let config = |transport: Value| {
            let mut config = json!({
                "tool": question.tool, "arguments": question.arguments,
                "warm": warm, "calls": calls,
            });
            if let (Value::Object(config), Value::Object(transport)) = (&mut config, transport) {
                config.extend(transport);
            }
            config
        };
        let stdio = config(json!({
            "transport": "stdio", "command": BIN,
            "args": ["--db", db, "mcp"],
        }));
        let http = config(json!({"transport": "http", "url": url}));
        let mut over_stdio = ts_samples(&script, &stdio);
        let mut over_http = ts_samples(&script, &http);
        let (s50, s99) = (
            percentile(&mut over_stdio, 0.5),
            percentile(&mut over_stdio, 0.99),
        );
        let (h50, h99) = (
            percentile(&mut over_http, 0.5),
            percentile(&mut over_http, 0.99),
        );
        let tool = question.label;
        println!("{tool:<18} {h50:>12.1} {h99:>12.1} {s50:>12.1} {s99:>12.1}");
        figure(
            &format!("{tool} p50 (TS SDK HTTP vs stdio)"),
            calls,
            h50,
            s50,
        );
        figure(
            &format!("{tool} p99 (TS SDK HTTP vs stdio)"),
            calls,
            h99,
            s99,
        );
    }
    let _ = server.kill();
    let _ = server.wait();
}

/// Keeps one figure, in microseconds, against `baseline` (see [`keep`]).
fn figure(name: &str, n: usize, value: f64, baseline: f64) {
    keep(
        "W-mcp.jsonl",
        &[Figure::new(WORKLOAD, name, n, value, "us").against(baseline)],
    );
}

fn main() {
    let full = keeps_figures();
    let (warm, calls, cli_runs) = if full { (50, 1000, 100) } else { (2, 10, 2) };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("memory.db");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mcp: Vec<(Vec<f64>, &'static str)> = runtime.block_on(async {
        let command = tokio::process::Command::new(BIN).configure(|c| {
            c.arg("--db")
                .arg(&db)
                .arg("mcp")
                .env_remove("AGENT_MEMORY_DB");
        });
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the server");
        let client: Client = ().serve(transport).await.expect("initialize");
        fill(&client).await;
        let mut measured = Vec::new();
        for question in questions() {
            // An even number of warm-up calls, so an edit is undone before measuring.
            for i in 0..warm {
                call(&client, question.tool, question.nth(i).0).await;
            }
            let mut samples = Vec::with_capacity(calls);
            for i in 0..calls {
                let arguments = question.nth(i).0;
                let started = Instant::now();
                let result = call(&client, question.tool, arguments).await;
                samples.push(started.elapsed().as_secs_f64() * 1e6);
                assert!(!result.is_null());
            }
            measured.push((samples, question.label));
        }
        let _ = client.cancel().await;
        measured
    });
    println!("{WORKLOAD}: {calls} warm calls over stdio, the command line {cli_runs} times");
    println!(
        "{:<18} {:>12} {:>12} {:>12} {:>12}",
        "tool", "mcp p50 us", "mcp p99 us", "cli p50 us", "cli p99 us"
    );
    for ((mut samples, tool), question) in mcp.into_iter().zip(questions()) {
        let mut cli = cli_samples(&db, &question, cli_runs);
        let (p50, p99) = (
            percentile(&mut samples, 0.5),
            percentile(&mut samples, 0.99),
        );
        let (c50, c99) = (percentile(&mut cli, 0.5), percentile(&mut cli, 0.99));
        println!("{tool:<18} {p50:>12.1} {p99:>12.1} {c50:>12.1} {c99:>12.1}");
        if full {
            figure(&format!("{tool} p50 (MCP stdio vs CLI)"), calls, p50, c50);
            figure(&format!("{tool} p99 (MCP stdio vs CLI)"), calls, p99, c99);
        }
    }
    if full {
        typescript(&db, warm, calls);
    }
}
