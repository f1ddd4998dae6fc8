//! The guided tour of the memories (`agent-memory demo`): one chapter per feature crate, each
//! step written as it is done, so a reader learns the project by running it. The clock is
//! fixed, so the tour writes the same text every time, on SQLite or PostgreSQL.
//!
//! The tour drives the feature crates' own Rust APIs (what the operations are built on), on a
//! store opened as every door opens one; the command line checks that the database is fresh
//! and prints what [`run`] writes.

use std::io::Write;
use std::path::Path;

use agent_memory_browser::{BrowserMemory, Budget, Layout, Policy, RunReport, Turn};
use agent_memory_core::evidence::Writer;
use agent_memory_core::store::tool_log::ToolLogStore;
use agent_memory_core::{
    Clock, ManualClock, Partition, Scope, SeededIds, SessionId, SharedClock, Source, Timestamp,
};
use agent_memory_recording::{
    Action, GenerationPolicy, Memory, MemoryWrites, Objective, Provenance, ReplayOptions, Replayer,
    Seeds, StepKind, ToolOutcome, capture, generate_recording,
};
use agent_memory_trajectory::{Config, TrajectoryMemory};
use agent_memory_turns::{
    AssistantTurn, CaptureRules, ContextPolicy, Session, StoreLog, ToolEnd, render,
};
use serde_json::{Value, json};

use crate::database::{self, Store};
use crate::{Result, ResultExt};

/// 2026-01-01T00:00:00Z: the tour's fixed "now".
pub const START: i64 = 1_767_225_600_000;

/// Runs the tour on `store`, the database at `db` (a second connection to it serves the
/// procedural memory's chapter), writing each step to `out`. The database should be fresh:
/// the tour writes sample memories.
pub fn run(store: &Store, db: &Path, out: &mut dyn Write) -> Result<()> {
    let mut tour = Tour { out };
    let clock = ManualClock::new(Timestamp::from_millis(START));
    tour.recordings(store, &clock)
        .context("chapter 1, recordings")?;
    tour.procedures(db, &clock)
        .context("chapter 2, procedural memory")?;
    tour.turns(store, &clock)
        .context("chapter 3, turn memory")?;
    tour.browser(store, &clock)
        .context("chapter 4, browser memory")?;
    Ok(())
}

/// Where the tour writes.
struct Tour<'a> {
    out: &'a mut dyn Write,
}

impl Tour<'_> {
    fn heading(&mut self, title: &str) -> Result<()> {
        writeln!(self.out, "{title}\n{}", "=".repeat(title.chars().count()))?;
        Ok(())
    }

    fn step(&mut self, text: &str) -> Result<()> {
        writeln!(self.out, "- {text}")?;
        Ok(())
    }

    fn indented(&mut self, text: &str) -> Result<()> {
        for line in text.lines() {
            writeln!(self.out, "    {line}")?;
        }
        Ok(())
    }

    /// Chapter 1: a session's tool calls become a recording that survives a new account.
    fn recordings(&mut self, store: &Store, clock: &ManualClock) -> Result<()> {
        self.heading("1. Recordings that survive a change of memory (crate `recording`)")?;
        let session = SessionId::new("demo-recording")?;
        let mut memory = Memory::new();
        let call =
            |tool: &str, params: Value, memory: &Memory, before, trace: &str| -> Result<()> {
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
        self.step(
        "a provisioning tool loaded an account into memory: merchant_email, merchant_token, a sensitive merchant_password, country",
    )?;

        let before = memory.keys();
        let sign_in = json!({
            "email": "merchant.coffee-shop.abc123@example.com",
            "token": "ML4XV8YWNMESK",
            "password": "pw-9999zq",
            "country": "US",
        });
        call("myapp_launchAppSignedIn", sign_in, &memory, &before, "t2")?;
        self.step(
        "the agent signed in, copying the literal values it was shown; the call was logged with a memory snapshot (the password already replaced by its token)",
    )?;

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
        self.step(
            "recording generated from the logs; literals equal to memory values became tokens:",
        )?;
        self.indented(&yaml)?;
        for substitution in &generated.substitutions {
            self.indented(&format!("substituted: {substitution}"))?;
        }
        self.step("`country: US` stays literal: two characters are too ambiguous to template")?;

        let mut replay = Replayer::new(
            &generated.trail,
            "android-phone",
            &Seeds::new(),
            ReplayOptions::default(),
        )?;
        self.step(
            "a later run replays the recording; its provisioning call loads a different account:",
        )?;
        while let Some(dispatch) = replay.next_dispatch()? {
            let mut writes = MemoryWrites::new();
            if let Action::Call(call) = &dispatch.action {
                // Secrets show as their tokens; the tool itself receives the value.
                self.indented(&format!("{} {}", call.tool, call.masked_parameters()))?;
                if call.tool == "merchantFactory_loadAccount" {
                    writes = writes
                        .set("merchant_email", "merchant.tea-house.xyz789@example.com")
                        .set("merchant_token", "QK2PL9ZZTRW4A")
                        .secret("merchant_password", "pw-tea-house");
                }
            }
            replay.complete(writes)?;
        }
        writeln!(self.out)?;
        Ok(())
    }

    /// Chapter 2: episodes crystallize into a pattern that recall ranks.
    fn procedures(&mut self, db: &Path, clock: &ManualClock) -> Result<()> {
        self.heading("2. Procedural memory: what worked last time (crate `trajectory`)")?;
        let store = database::open(db, &SharedClock::new(ManualClock::new(clock.now())))?;
        let memory = TrajectoryMemory::new(
            store,
            clock,
            Config::new(["problem_topology", "affected_layer"]),
        )?
        .with_writer(Writer {
            source: Some(Source::User),
            session: Some("tour".to_owned()),
            client: None,
        });
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
        self.step(
        "recorded 5 episodes of fixing a flaky test: 3 times read_logs → pin_seed → run_tests (all succeeded), 2 times read_logs → retry_ci (one failed)",
    )?;
        let patterns = memory.crystallize(&team)?;
        for pattern in &patterns {
            self.step(&format!(
            "crystallized one pattern: canonical sequence {} with confidence {:.3} from {} episodes ({} corroborating, {} contradicting)",
            pattern.canonical_sequence.join(" → "),
            pattern.stats.confidence,
            pattern.stats.evidence_count,
            pattern.stats.corroborations,
            pattern.stats.contradictions,
        ))?;
        }
        let again = memory.crystallize(&team)?;
        self.step(&format!(
            "crystallizing again with nothing new changes nothing ({} patterns returned)",
            again.len()
        ))?;
        clock.advance(86_400_000);
        let recalled = memory.recall(&[("affected_layer", "ci")], &team)?;
        for scored in &recalled {
            self.step(&format!(
                "a day later, recall for affected_layer=ci ranks it first: score {:.3}, do {}",
                scored.score,
                scored.pattern.canonical_sequence.join(" → ")
            ))?;
        }
        writeln!(self.out)?;
        Ok(())
    }

    /// Chapter 3: a coding session's turn memories survive a compaction.
    fn turns(&mut self, store: &Store, clock: &ManualClock) -> Result<()> {
        self.heading("3. Turn memory of a coding agent (crate `turn-memory`)")?;
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
        self.step(
        "turn 1: the agent edited src/parser.rs and `cargo test -p parser` failed with exit 101; both were captured from tool events, never from the model's text",
    )?;

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
        self.step(
        "turn 2: a write to ./src/../src/lexer.rs (kept as src/lexer.rs); the read-only tool left nothing; a tag in the prose stays prose",
    )?;

        let view = session.history().model_view(&ContextPolicy::default());
        let messages = serde_json::to_value(render::openai_chat(&view))?;
        if let Some(content) = messages
            .get(1)
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
        {
            self.step("what the model sees for turn 1 (OpenAI Chat Completions):")?;
            self.indented(content)?;
        }

        session.compact(
            "The parser tests were being fixed; the lexer now lives in its own file.",
            0,
        )?;
        let view = session.history().model_view(&ContextPolicy::default());
        let messages = serde_json::to_value(render::openai_chat(&view))?;
        self.step(
        "compacted the whole session into a summary; the memories of the compacted turns survive as one block:",
    )?;
        if let Some(content) = messages
            .get(0)
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
        {
            self.indented(content)?;
        }
        let events =
            agent_memory_core::SessionStore::session_load(store, &SessionId::new("demo-coding")?)?;
        self.step(&format!(
        "the session's {} events are in the database; a restart resumes it and renders the same view",
        events.len()
    ))?;
        writeln!(self.out)?;
        Ok(())
    }

    /// Chapter 4: browser runs whose memory shapes the next run's context.
    fn browser(&mut self, store: &Store, clock: &ManualClock) -> Result<()> {
        self.heading("4. Memory of a browser agent (crate `browser-memory`)")?;
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
        self.step(
        "run 1 succeeded: accept cookies, search, open the first result; saved as a trajectory, a session, learned facts and two selectors, in one transaction",
    )?;
        clock.advance(3_600_000);
        memory.record_run(
            &RunReport::new("Add the Acme smart watch to the cart", site)
                .with_turns(
                    (0..3)
                        .map(|_| Turn {
                            verified: false,
                            expected_effect: Some("the cart count goes up".into()),
                            ..browser_turn(
                                site,
                                json!({"action": "click", "selector": "@add-to-cart"}),
                            )
                        })
                        .collect(),
                )
                .with_success(false)
                .with_model("demo-model")
                .with_outcome("The cart count never went up"),
        )?;
        self.step(
        "run 2 failed: three clicks on add-to-cart, the cart never changed; it is remembered in the session history, never offered as a reference",
    )?;
        let hints = memory.analyse_trajectories()?;
        self.step("the stored trajectories, analysed, give hints for every later run:")?;
        self.indented(&hints)?;

        clock.advance(3_600_000);
        let goal = "find reviews for the acme smart watch";
        if let Some(found) = memory.find_match(goal, Some(site))? {
            self.step(&format!(
            "a new goal, {goal:?}, matches run 1's goal with Jaccard similarity {:.2} (it needs more than 0.50)",
            found.similarity
        ))?;
        }
        let context = memory.context(
            goal,
            site,
            Layout::Layered,
            Budget::Chars(8_000),
            Policy::SkipOverflow,
        )?;
        self.step("the context the next run gets, within an 8,000-character budget:")?;
        self.indented(&context)?;
        writeln!(self.out)?;
        Ok(())
    }
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
