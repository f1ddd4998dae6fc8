//! `cargo xtask inspector`: the official MCP Inspector (`@modelcontextprotocol/inspector`
//! from npm, at a pinned version, installed under `target/inspector/`) checks `agent-memory
//! mcp` over stdio as a client we did not write sees it.
//!
//! First its strict schema check (`--method tools/list --strict`) over every tool must find
//! 0 errors and 0 warnings; then its CLI mode calls every tool, with arguments written as
//! `--tool-arg key=value` the way a person types them (so optional arrays such as
//! `trajectory_record`'s `fields` go through the Inspector's own conversion), on a fresh
//! database, and each call must succeed with the result it names.
//!
//! Without Node.js or npm the step says so and passes on a developer's machine; with
//! `CI=true` either missing is an error, never a skip.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::{cargo, target_dir, workspace_root};

/// The Inspector version the check is written for.
const VERSION: &str = "2.12.0";

pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask inspector` takes no arguments (got {extra:?})");
    }
    let root = workspace_root();
    if let Some(missing) = ["node", "npm"].into_iter().find(|tool| !runs(tool)) {
        if crate::mcp_python::in_ci() {
            bail!("{missing} is not installed: CI runs the MCP Inspector, install Node.js and npm");
        }
        println!(
            "{missing} not found: the MCP Inspector check was skipped (CI=true makes this an error)"
        );
        return Ok(());
    }
    let target = target_dir(&root);
    let folder = target.join("inspector");
    let launcher = install(&folder)?;
    cargo(
        &root,
        &["build", "-p", "agent-memory-cli", "--bin", "agent-memory"],
        &[],
    )?;
    let binary = target
        .join("debug")
        .join(format!("agent-memory{}", std::env::consts::EXE_SUFFIX));
    let work = folder.join("work");
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    }
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let inspector = Inspector {
        launcher,
        binary,
        db: work.join("memory.db"),
        work,
    };
    inspector.strict_schema_check()?;
    inspector.call_every_tool()
}

/// Installs the pinned Inspector into `folder` unless it is there; returns its launcher.
fn install(folder: &Path) -> Result<PathBuf> {
    let package = folder.join("node_modules/@modelcontextprotocol/inspector");
    let launcher = package.join("clients/launcher/build/index.js");
    let installed = std::fs::read_to_string(package.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .is_some_and(|manifest| manifest["version"] == VERSION);
    if installed && launcher.exists() {
        return Ok(launcher);
    }
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    let manifest = json!({
        "private": true,
        "dependencies": {"@modelcontextprotocol/inspector": VERSION}
    });
    std::fs::write(
        folder.join("package.json"),
        serde_json::to_string_pretty(&manifest)?,
    )
    .context("writing the Inspector's package.json")?;
    println!("--- installing @modelcontextprotocol/inspector@{VERSION}");
    // The package's own install script only installs its clients' dependencies when it is
    // built from source; the published clients are bundled.
    let status = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--ignore-scripts"])
        .current_dir(folder)
        .status()
        .context("could not start npm")?;
    if !status.success() {
        bail!("installing the MCP Inspector failed ({status})");
    }
    if !launcher.exists() {
        bail!(
            "the MCP Inspector has no launcher at {}",
            launcher.display()
        );
    }
    Ok(launcher)
}

struct Inspector {
    launcher: PathBuf,
    binary: PathBuf,
    db: PathBuf,
    work: PathBuf,
}

impl Inspector {
    /// Runs the Inspector's CLI against the server with `options` after the target; returns
    /// its JSON output (`--format json`), or the failure with what it printed.
    fn run(&self, what: &str, options: &[String]) -> Result<Value> {
        let output = Command::new("node")
            .arg(&self.launcher)
            .arg("--cli")
            .arg(&self.binary)
            .arg("--db")
            .arg(&self.db)
            .arg("mcp")
            // Under --cli, what comes before `--` is the server's command line.
            .arg("--")
            .args(options)
            .args(["--format", "json"])
            .env_remove("AGENT_MEMORY_DB")
            .env_remove("AGENT_MEMORY_TOKEN")
            // The Inspector keeps a catalog and OAuth state in its storage folder: ours.
            .env("MCP_STORAGE_DIR", self.work.join("storage"))
            .env("HOME", &self.work)
            .current_dir(&self.work)
            .output()
            .with_context(|| format!("{what}: could not start node"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            bail!(
                "{what}: the Inspector failed ({})\n{stdout}{stderr}",
                output.status
            );
        }
        serde_json::from_str(stdout.trim())
            .with_context(|| format!("{what}: the Inspector printed no JSON\n{stdout}{stderr}"))
    }

    /// `tools/list --strict`: 0 errors and 0 warnings over every tool.
    fn strict_schema_check(&self) -> Result<()> {
        println!("--- the Inspector's strict schema check (tools/list --strict)");
        let options = ["--method", "tools/list", "--strict"].map(String::from);
        let listed = self.run("tools/list --strict", &options)?;
        let tools = listed["result"]["tools"].as_array().map_or(0, Vec::len);
        // Every MCP operation of the contract's table, no number typed here.
        let expected = agent_memory_contract::operations::table()
            .iter()
            .filter(|op| op.mcp)
            .count();
        if tools != expected {
            bail!("the Inspector listed {tools} tools, not {expected}");
        }
        let findings: Vec<&Value> = listed["schemaFindings"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|tool| tool["findings"].as_array().into_iter().flatten())
            .collect();
        if !findings.is_empty() {
            let report: Vec<String> = findings
                .iter()
                .map(|f| {
                    format!(
                        "{} {} {}: {}",
                        f["severity"], f["schema"], f["path"], f["issue"]
                    )
                })
                .collect();
            bail!(
                "the Inspector's strict schema check found {} problems:\n{}",
                findings.len(),
                report.join("\n")
            );
        }
        println!("{tools} tools, 0 errors, 0 warnings");
        Ok(())
    }

    /// Calls `tool` with `--tool-arg key=value` for each argument; returns the structured
    /// result, failing when the call failed.
    fn call(&self, tool: &str, arguments: &[(&str, String)]) -> Result<Value> {
        let mut options: Vec<String> = ["--method", "tools/call", "--tool-name", tool]
            .map(String::from)
            .to_vec();
        for (key, value) in arguments {
            options.push("--tool-arg".to_owned());
            options.push(format!("{key}={value}"));
        }
        let answer = self.run(&format!("tools/call {tool}"), &options)?;
        let result = &answer["result"];
        if result["isError"] == true {
            bail!("tools/call {tool} failed: {}", result["content"]);
        }
        println!("ok {tool}");
        Ok(result["structuredContent"].clone())
    }

    /// Every tool, in an agent's order, each result checked.
    fn call_every_tool(&self) -> Result<()> {
        println!("--- every tool through the Inspector's CLI mode");
        let episode = r#"{"fingerprint":{"task":"deploy"},"trajectory":["build","test","ship"],"outcome":{"success":true}}"#;
        let episodes = format!("[{episode},{episode},{episode}]");
        let recorded = self.call(
            "trajectory_record",
            &[
                ("partition", "team".into()),
                ("fields", r#"["task"]"#.into()),
                ("episodes", episodes),
            ],
        )?;
        expect(&recorded, "/episodes", json!(3))?;
        let crystallized = self.call("trajectory_crystallize", &[("partition", "team".into())])?;
        expect(
            &crystallized,
            "/patterns/0/canonical_sequence/2",
            json!("ship"),
        )?;
        let recalled = self.call(
            "trajectory_recall",
            &[
                ("partition", "team".into()),
                ("fingerprint", r#"{"task":"deploy"}"#.into()),
            ],
        )?;
        expect(
            &recalled,
            "/patterns/0/canonical_sequence/0",
            json!("build"),
        )?;
        let patterns = self.call("trajectory_patterns", &[("partition", "team".into())])?;
        expect(&patterns, "/patterns/0/evidence_count", json!(3))?;

        let turns = r##"[{"url":"https://shop.test/","action":{"action":"click","selector":"#search"},"verified":true,"duration_ms":900},{"url":"https://shop.test/results","action":"{\"action\":\"complete\"}","verified":true,"duration_ms":100}]"##;
        let stored = self.call(
            "browser_record_run",
            &[
                ("goal", "find green tea".into()),
                ("start_url", "https://shop.test/".into()),
                ("turns", turns.into()),
                ("success", "true".into()),
                ("outcome", "found it".into()),
                ("session_id", "tea-1".into()),
                (
                    "selectors",
                    r##"[{"element":"search box","selector":"#search"}]"##.into(),
                ),
                ("run_id", "run-1".into()),
            ],
        )?;
        expect(&stored, "/run_id", json!("run-1"))?;
        let context = self.call(
            "browser_context",
            &[
                ("goal", "find green tea".into()),
                ("url", "https://shop.test/".into()),
            ],
        )?;
        if !context["context"]
            .as_str()
            .is_some_and(|text| text.contains("SESSION HISTORY"))
        {
            bail!("browser_context has no session history: {context}");
        }
        let runs = self.call("browser_runs", &[("status", "completed".into())])?;
        expect(&runs, "/runs/0/run_id", json!("run-1"))?;
        let resumed = self.call("browser_resume", &[("run_id", "run-1".into())])?;
        expect(&resumed, "/session_id", json!("tea-1"))?;
        let forked = self.call(
            "browser_fork",
            &[
                ("run_id", "run-1".into()),
                ("goal", "find black tea".into()),
            ],
        )?;
        expect(&forked, "/goal", json!("find black tea"))?;

        let events = r#"[{"type":"session_started","session":"code-1","started_at":1767225600000},{"type":"user_message","text":"fix the flaky test"},{"type":"assistant_turn","text":"Fixed.","memory":{"files_changed":["src/retry.rs"]}}]"#;
        let appended = self.call(
            "turns_append",
            &[("session", "code-1".into()), ("events", events.into())],
        )?;
        expect(&appended, "/appended", json!(3))?;
        for provider in ["openai_chat", "anthropic", "gemini"] {
            let view = self.call(
                "turns_view",
                &[("session", "code-1".into()), ("provider", provider.into())],
            )?;
            expect(&view, "/provider", json!(provider))?;
        }

        let logs = r#"[{"toolName":"merchantFactory_loadAccount","parameters":{"account":"coffee-shop"},"successful":true,"timestamp":1000,"memorySnapshot":[{"key":"merchant_email","value":"shop+coffee.abc123@example.com","writtenBy":"merchantFactory_loadAccount","writtenAt":1000,"existedBefore":false}]},{"toolName":"signIn","parameters":{"email":"shop+coffee.abc123@example.com"},"successful":true,"timestamp":2000,"memorySnapshot":[{"key":"merchant_email","value":"shop+coffee.abc123@example.com","writtenBy":"merchantFactory_loadAccount","writtenAt":1000,"existedBefore":true}]}]"#;
        let appended = self.call(
            "recording_append",
            &[("session", "rec-1".into()), ("logs", logs.into())],
        )?;
        expect(&appended, "/appended", json!(2))?;
        let templatized = self.call(
            "recording_templatize",
            &[
                ("session", "rec-1".into()),
                (
                    "objectives",
                    r#"[{"step":"Load the account","started_at":0},{"step":"Sign in","started_at":1500}]"#
                        .into(),
                ),
            ],
        )?;
        let trail = templatized["trail"]
            .as_str()
            .with_context(|| format!("recording_templatize wrote no trail: {templatized}"))?
            .to_owned();
        if !trail.contains("${merchant_email}") {
            bail!("the trail has no ${{merchant_email}} token:\n{trail}");
        }
        let lint = self.call(
            "recording_lint",
            &[
                (
                    "trail",
                    "- tools:\n  - signIn:\n      email: shop+coffee.abc123@example.com\n".into(),
                ),
                (
                    "memory",
                    r#"{"merchant_email":"shop+coffee.abc123@example.com"}"#.into(),
                ),
            ],
        )?;
        expect(&lint, "/findings/0/key", json!("merchant_email"))?;
        let first = self.call(
            "recording_next_call",
            &[
                ("trail", trail.clone()),
                ("device", "android-phone".into()),
                ("writes", "[]".into()),
            ],
        )?;
        expect(&first, "/next/tool", json!("merchantFactory_loadAccount"))?;
        let second = self.call(
            "recording_next_call",
            &[
                ("trail", trail),
                ("device", "android-phone".into()),
                (
                    "writes",
                    r#"[{"set":{"merchant_email":"tea+new@example.com"}}]"#.into(),
                ),
            ],
        )?;
        expect(
            &second,
            "/next/parameters/email",
            json!("tea+new@example.com"),
        )?;

        self.call(
            "notes",
            &[
                ("command", "create".into()),
                ("path", "/memories/prefs.md".into()),
                ("file_text", "- prefers pnpm\n".into()),
            ],
        )?;
        self.call(
            "notes",
            &[
                ("command", "str_replace".into()),
                ("path", "/memories/prefs.md".into()),
                ("old_str", "pnpm".into()),
                ("new_str", "pnpm 9".into()),
            ],
        )?;
        let viewed = self.call(
            "notes",
            &[
                ("command", "view".into()),
                ("path", "/memories/prefs.md".into()),
                ("view_range", "[1,1]".into()),
            ],
        )?;
        let text = viewed.to_string();
        if !text.contains("prefers pnpm 9") {
            bail!("notes view does not show the edit: {viewed}");
        }

        let list = self.call("memory_list", &[])?;
        expect(&list, "/partitions/0/partition", json!("team"))?;
        let stats = self.call("memory_stats", &[])?;
        if stats["tables"].as_array().is_none_or(Vec::is_empty) {
            bail!("memory_stats lists no tables: {stats}");
        }
        let forgotten = self.call("memory_forget", &[("session", "code-1".into())])?;
        expect(&forgotten, "/events", json!(3))
    }
}

/// `value` holds `expected` at the JSON pointer `at`.
fn expect(value: &Value, at: &str, expected: Value) -> Result<()> {
    match value.pointer(at) {
        Some(found) if *found == expected => Ok(()),
        found => bail!("expected {expected} at {at}, found {found:?} in {value}"),
    }
}

fn runs(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}
