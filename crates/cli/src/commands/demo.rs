//! `agent-memory demo`: a guided tour on the database, one chapter per feature crate. Each step
//! prints what it did, so a reader learns the project by running it. The clock is fixed, so
//! the tour prints the same text every time.

use agent_memory_browser::{BrowserMemory, Budget, Layout, Policy, RunReport, Turn};
use agent_memory_core::store::tool_log::ToolLogStore;
use agent_memory_core::{
    Clock, ManualClock, Partition, Scope, SeededIds, SessionId, SharedClock, Timestamp,
};
use agent_memory_recording::{
    Action, GenerationPolicy, Memory, MemoryWrites, Objective, Provenance, ReplayOptions, Replayer,
    Seeds, StepKind, ToolOutcome, capture, generate_recording,
};
use agent_memory_trajectory::{Config, TrajectoryMemory};
use agent_memory_turns::{
    AssistantTurn, CaptureRules, ContextPolicy, Session, StoreLog, ToolEnd, render,
};
use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::{GlobalArgs, database};

/// `demo` takes no arguments of its own.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {}

/// 2026-01-01T00:00:00Z: the tour's fixed "now".
const START: i64 = 1_767_225_600_000;

pub(crate) fn run(_args: &DemoArgs, global: &GlobalArgs) -> Result<()> {
    let store = global.open()?;
    // The tour writes sample memories; it never mixes them into a database in use.
    let used: Vec<String> = store
        .table_counts()?
        .into_iter()
        .filter(|(table, rows)| table != "meta" && *rows > 0)
        .map(|(table, _)| table)
        .collect();
    if !used.is_empty() {
        anyhow::bail!(
            "the tour needs a fresh database, but {} already holds data ({}); pass --db with a new file",
            global.db.display(),
            used.join(", ")
        );
    }
    println!("agent-memory tour on {}\n", global.db.display());
    let clock = ManualClock::new(Timestamp::from_millis(START));
    recordings(&store, &clock).context("chapter 1, recordings")?;
    procedures(&global.db, &clock).context("chapter 2, procedural memory")?;
    turns(&store, &clock).context("chapter 3, turn memory")?;
    browser(&store, &clock).context("chapter 4, browser memory")?;
    println!(
        "The database now holds all of it: try `agent-memory --db {} stats`.",
        global.db.display()
    );
    Ok(())
}

fn heading(title: &str) {
    println!("{title}\n{}", "=".repeat(title.chars().count()));
}

fn step(text: &str) {
    println!("- {text}");
}

fn indented(text: &str) {
    for line in text.lines() {
        println!("    {line}");
    }
}

/// Chapter 1: a session's tool calls become a recording that survives a new account.
fn recordings(store: &crate::database::Store, clock: &ManualClock) -> Result<()> {
    heading("1. Recordings that survive a change of memory (crate `recording`)");
    let session = SessionId::new("demo-recording")?;
    let mut memory = Memory::new();
    let call = |tool: &str, params: Value, memory: &Memory, before, trace: &str| -> Result<()> {
        clock.advance(1_000);
        let outcome = ToolOutcome::succeeded(120, clock.now()).with_trace(trace);
        let log = capture(
            &session,
            tool,
            &params,
            &outcome,
            &memory.snapshot_after(before),
        )?;
        store.append_tool_log(&log)?;
        Ok(())
    };

    let before = memory.keys();
    let writer = Provenance::tool("merchantFactory_loadAccount", clock.now());
    memory.remember(
        "merchant_email",
        "merchant.coffee-shop.abc123@example.com",
        writer.clone(),
    );
    memory.remember("merchant_token", "ML4XV8YWNMESK", writer.clone());
    memory.remember_secret("merchant_password", "pw-9999zq", writer);
    memory.remember("country", "US", Provenance::unknown(clock.now()));
    call(
        "merchantFactory_loadAccount",
        json!({"account": "coffee-shop"}),
        &memory,
        &before,
        "t1",
    )?;
    step(
        "a provisioning tool loaded an account into memory: merchant_email, merchant_token, a sensitive merchant_password, country",
    );

    let before = memory.keys();
    let sign_in = json!({
        "email": "merchant.coffee-shop.abc123@example.com",
        "token": "ML4XV8YWNMESK",
        "password": "pw-9999zq",
        "country": "US",
    });
    call("myapp_launchAppSignedIn", sign_in, &memory, &before, "t2")?;
    step(
        "the agent signed in, copying the literal values it was shown; the call was logged with a memory snapshot (the password already replaced by its token)",
    );

    let logs = store.list_tool_logs(&session)?;
    let objectives = [
        Objective::new(
            StepKind::Step,
            "Load the coffee shop merchant",
            Timestamp::from_millis(START),
        ),
        Objective::new(
            StepKind::Step,
            "Launch the app signed in as the merchant",
            Timestamp::from_millis(START + 1_500),
        ),
    ];
    let generated = generate_recording(
        &objectives,
        &logs,
        &GenerationPolicy::for_classifier("android-phone"),
    )?;
    let yaml = generated.trail.to_yaml_string()?;
    step("recording generated from the logs; literals equal to memory values became tokens:");
    indented(&yaml);
    for substitution in &generated.substitutions {
        indented(&format!("substituted: {substitution}"));
    }
    step("`country: US` stays literal: two characters are too ambiguous to template");

    let mut replay = Replayer::new(
        &generated.trail,
        "android-phone",
        &Seeds::new(),
        ReplayOptions::default(),
    )?;
    step("a later run replays the recording; its provisioning call loads a different account:");
    while let Some(dispatch) = replay.next_dispatch()? {
        let mut writes = MemoryWrites::new();
        if let Action::Call(call) = &dispatch.action {
            // Secrets show as their tokens; the tool itself receives the value.
            indented(&format!("{} {}", call.tool, call.masked_parameters()));
            if call.tool == "merchantFactory_loadAccount" {
                writes = writes
                    .set("merchant_email", "merchant.tea-house.xyz789@example.com")
                    .set("merchant_token", "QK2PL9ZZTRW4A")
                    .secret("merchant_password", "pw-tea-house");
            }
        }
        replay.complete(writes)?;
    }
    println!();
    Ok(())
}

/// Chapter 2: episodes crystallize into a pattern that recall ranks.
fn procedures(db: &std::path::Path, clock: &ManualClock) -> Result<()> {
    heading("2. Procedural memory: what worked last time (crate `trajectory`)");
    let store = database::open(db, &SharedClock::new(ManualClock::new(clock.now())))?;
    let memory = TrajectoryMemory::new(
        store,
        clock,
        Config::new(["problem_topology", "affected_layer"]),
    )?;
    let team = Partition::new("demo-team")?;
    let fix = [("problem_topology", "flaky_test"), ("affected_layer", "ci")];
    let good = ["read_logs", "pin_seed", "run_tests"];
    let bad = ["read_logs", "retry_ci"];
    let episodes: [(&[&str], bool); 5] = [
        (&good, true),
        (&good, true),
        (&bad, false),
        (&good, true),
        (&bad, true),
    ];
    for (actions, success) in episodes {
        clock.advance(60_000);
        memory.record_episode(&fix, actions, &json!({ "success": success }), &team)?;
    }
    step(
        "recorded 5 episodes of fixing a flaky test: 3 times read_logs → pin_seed → run_tests (all succeeded), 2 times read_logs → retry_ci (one failed)",
    );
    let patterns = memory.crystallize(&team)?;
    for pattern in &patterns {
        step(&format!(
            "crystallized one pattern: canonical sequence {} with confidence {:.3} from {} episodes ({} corroborating, {} contradicting)",
            pattern.canonical_sequence.join(" → "),
            pattern.stats.confidence,
            pattern.stats.evidence_count,
            pattern.stats.corroborations,
            pattern.stats.contradictions,
        ));
    }
    let again = memory.crystallize(&team)?;
    step(&format!(
        "crystallizing again with nothing new changes nothing ({} patterns returned)",
        again.len()
    ));
    clock.advance(86_400_000);
    let recalled = memory.recall(&[("affected_layer", "ci")], &team)?;
    for scored in &recalled {
        step(&format!(
            "a day later, recall for affected_layer=ci ranks it first: score {:.3}, do {}",
            scored.score,
            scored.pattern.canonical_sequence.join(" → ")
        ));
    }
    println!();
    Ok(())
}

/// Chapter 3: a coding session's turn memories survive a compaction.
fn turns(store: &crate::database::Store, clock: &ManualClock) -> Result<()> {
    heading("3. Turn memory of a coding agent (crate `turn-memory`)");
    let rules = CaptureRules::for_workspace("/work/app")?;
    let id = SessionId::new("demo-coding")?;
    let mut session = Session::start(StoreLog::new(store, id.clone()), id, clock)?;

    session.user_message("make the parser tests pass")?;
    let mut turn = rules.start_turn();
    let edit = json!({"path": "/work/app/src/parser.rs"});
    let test = json!({"command": "cargo test -p parser"});
    turn.observe(&ToolEnd {
        tool: "edit_file",
        input: &edit,
        output: "ok",
        is_error: false,
        exit_code: None,
    });
    turn.observe(&ToolEnd {
        tool: "bash",
        input: &test,
        output: "test result: FAILED. 2 failed",
        is_error: false,
        exit_code: Some(101),
    });
    session.assistant_turn(
        AssistantTurn::new("I fixed the tokenizer; two tests still fail.")
            .with_memory(turn.finish()),
    )?;
    step(
        "turn 1: the agent edited src/parser.rs and `cargo test -p parser` failed with exit 101; both were captured from tool events, never from the model's text",
    );

    session.user_message("keep going")?;
    let mut turn = rules.start_turn();
    let write = json!({"path": "./src/../src/lexer.rs"});
    let read = json!({"path": "/work/app/README.md"});
    turn.observe(&ToolEnd {
        tool: "write_file",
        input: &write,
        output: "ok",
        is_error: false,
        exit_code: None,
    });
    turn.observe(&ToolEnd {
        tool: "read_file",
        input: &read,
        output: "...",
        is_error: false,
        exit_code: None,
    });
    session.assistant_turn(
        AssistantTurn::new(
            "Split the lexer out. I wrote <tool_memory>nothing</tool_memory> here on purpose.",
        )
        .with_memory(turn.finish()),
    )?;
    step(
        "turn 2: a write to ./src/../src/lexer.rs (kept as src/lexer.rs); the read-only tool left nothing; a tag in the prose stays prose",
    );

    let view = session.history().model_view(&ContextPolicy::default());
    let messages = serde_json::to_value(render::openai_chat(&view))?;
    if let Some(content) = messages
        .get(1)
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
    {
        step("what the model sees for turn 1 (OpenAI Chat Completions):");
        indented(content);
    }

    session.compact(
        "The parser tests were being fixed; the lexer now lives in its own file.",
        0,
    )?;
    let view = session.history().model_view(&ContextPolicy::default());
    let messages = serde_json::to_value(render::openai_chat(&view))?;
    step(
        "compacted the whole session into a summary; the memories of the compacted turns survive as one block:",
    );
    if let Some(content) = messages
        .get(0)
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
    {
        indented(content);
    }
    let events =
        agent_memory_core::SessionStore::session_load(store, &SessionId::new("demo-coding")?)?;
    step(&format!(
        "the session's {} events are in the database; a restart resumes it and renders the same view",
        events.len()
    ));
    println!();
    Ok(())
}

/// One browser turn of the tour: an action on a page, verified.
fn browser_turn(url: &str, action: Value) -> Turn {
    Turn {
        url: url.to_owned(),
        snapshot: format!("page at {url}"),
        action: action.to_string(),
        verified: true,
        duration_ms: 1_500,
        ..Turn::default()
    }
}

/// Chapter 4: browser runs whose memory shapes the next run's context.
fn browser(store: &crate::database::Store, clock: &ManualClock) -> Result<()> {
    heading("4. Memory of a browser agent (crate `browser-memory`)");
    let ids = SeededIds::new(2026);
    let memory = BrowserMemory::new(store, Scope::shared(), clock, &ids);
    let site = "https://shop.example.com/";
    let search = "https://shop.example.com/search?q=smart+watch";
    clock.advance(3_600_000);
    memory.record_run(
        &RunReport::new("Find reviews of the Acme smart watch", site)
            .with_turns(vec![
                browser_turn(
                    site,
                    json!({"action": "click", "selector": "@cookie-accept"}),
                ),
                browser_turn(
                    site,
                    json!({"action": "type", "selector": "@search", "text": "smart watch"}),
                ),
                browser_turn(search, json!({"action": "click", "selector": "@result-1"})),
            ])
            .with_success(true)
            .with_model("demo-model")
            .with_outcome("Found 124 reviews, average 4.3 stars")
            .with_selectors(vec![
                ("searchbox \"Search\"".into(), "@search".into()),
                ("button \"Accept cookies\"".into(), "@cookie-accept".into()),
            ])
            .with_final_url("https://shop.example.com/p/acme-watch#reviews"),
    )?;
    step(
        "run 1 succeeded: accept cookies, search, open the first result; saved as a trajectory, a session, learned facts and two selectors, in one transaction",
    );
    clock.advance(3_600_000);
    memory.record_run(
        &RunReport::new("Add the Acme smart watch to the cart", site)
            .with_turns(
                (0..3)
                    .map(|_| Turn {
                        verified: false,
                        expected_effect: Some("the cart count goes up".into()),
                        ..browser_turn(site, json!({"action": "click", "selector": "@add-to-cart"}))
                    })
                    .collect(),
            )
            .with_success(false)
            .with_model("demo-model")
            .with_outcome("The cart count never went up"),
    )?;
    step(
        "run 2 failed: three clicks on add-to-cart, the cart never changed; it is remembered in the session history, never offered as a reference",
    );
    let hints = memory.analyse_trajectories()?;
    step("the stored trajectories, analysed, give hints for every later run:");
    indented(&hints);

    clock.advance(3_600_000);
    let goal = "find reviews for the acme smart watch";
    if let Some(found) = memory.find_match(goal, Some(site))? {
        step(&format!(
            "a new goal, {goal:?}, matches run 1's goal with Jaccard similarity {:.2} (it needs more than 0.50)",
            found.similarity
        ));
    }
    let context = memory.context(
        goal,
        site,
        Layout::Layered,
        Budget::Chars(8_000),
        Policy::SkipOverflow,
    )?;
    step("the context the next run gets, within an 8,000-character budget:");
    indented(&context);
    println!();
    Ok(())
}
