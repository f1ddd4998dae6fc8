//! Automatic compaction as a policy: Keen Code's budget and trigger, the local reducer, the
//! five-section summary with the latest user message kept verbatim, the lifecycle events, and
//! the checkpoint and compaction written in one atomic step on every log.
//!
//! Ported from Keen Code's own tests, each named where it is used:
//! `internal/llm/auto_compaction_test.go` and `internal/llm/context_reducer_test.go`.

use std::borrow::Cow;

use agent_memory_core::{InMemoryStore, ManualClock, SessionStore, Timestamp};
use agent_memory_sqlite::SqliteStore;
use agent_memory_turns::{
    AssistantTurn, AutoCompaction, AutoCompactionEvent, CompactionAction, CompactionReason,
    ContextBudget, ContextPolicy, EventLog, JsonlLog, ModelItem, ModelView, REMOVED_TOOL_RESULT,
    SUMMARY_INSTRUCTIONS, SUMMARY_SECTIONS, Session, SessionEvent, StoreLog, ToolActivity, render,
};

use crate::fixture::{STARTED_AT, session_id};

const SUMMARY: &str = "## Goal\nRename the crate to `loud`.\n\n## Key Instructions\nKeep the public API.\n\n## Discoveries\nThe name appears in three manifests.\n\n## Accomplished\nRead the manifests; next, edit them.\n\n## Relevant Files\nCargo.toml, crates/a/Cargo.toml";

#[test]
fn budget_and_threshold_are_keens() {
    // auto_compaction_test.go, TestContextBudgetAndAutoCompactionThreshold;
    // context_reducer_test.go, TestContextFitsBudget.
    // (context window, input budget, threshold)
    for (window, budget, threshold) in [
        (100_000, 95_000, 85_500),
        (13_050, 8_954, 8_059),
        (81_920, 77_824, 70_042),
        (0, 190_000, 171_000),
        (4_000, 1, 1),
    ] {
        let b = ContextBudget::new(window);
        assert_eq!(b.input_budget(), budget, "window {window}");
        assert_eq!(b.threshold(), threshold, "window {window}");
    }
    let b = ContextBudget::new(100_000);
    assert!(b.should_compact(85_500) && !b.should_compact(85_499));
    assert!(700 <= ContextBudget::new(13_050).input_budget());
    assert!(9_000 > ContextBudget::new(13_050).input_budget());
}

/// A view of tool results of these sizes (in bytes, counted one token per byte).
fn results(sizes: &[usize]) -> ModelView<'static> {
    let items = sizes
        .iter()
        .enumerate()
        .map(|(i, size)| ModelItem::ToolResult {
            id: Cow::Owned(format!("call_{i}")),
            name: Cow::Borrowed("read_file"),
            output: if *size == 0 {
                Cow::Borrowed(REMOVED_TOOL_RESULT)
            } else {
                Cow::Owned("x".repeat(*size))
            },
            is_error: false,
        })
        .collect();
    ModelView::new(items)
}

/// (test name, result sizes, budget, replaced indexes, fits)
type ReducerCase = (&'static str, Vec<usize>, usize, Vec<usize>, bool);

#[test]
fn the_reducer_replaces_the_oldest_results_first() {
    let bytes = |text: &str| text.len();
    let marker = REMOVED_TOOL_RESULT.len();
    // (test in context_reducer_test.go, result sizes (0 = already the marker), budget,
    //  replaced indexes, fits)
    let cases: [ReducerCase; 5] = [
        (
            "RemovesOldestUntilBudgetFits",
            vec![50, 100, 100, 600],
            800,
            vec![0, 1],
            true,
        ),
        (
            "ReturnsNotFitAfterRemovingAllTargets",
            vec![50, 950],
            60,
            vec![0, 1],
            false,
        ),
        (
            "SkipsTargetsBelowThreshold",
            vec![5, marker + 1, 760],
            800,
            vec![1],
            true,
        ),
        (
            "SkipsExistingPlaceholders",
            vec![0, 800, 13],
            500,
            vec![1],
            true,
        ),
        (
            "SkipsReductionWhenFullEstimateFits",
            vec![100, 100],
            200,
            vec![],
            true,
        ),
    ];
    for (name, sizes, budget, replaced, fits) in cases {
        let mut view = results(&sizes);
        let reduction = view.reduce_tool_results(budget, &bytes);
        let original: usize = sizes
            .iter()
            .map(|s| if *s == 0 { marker } else { *s })
            .sum();
        assert_eq!(reduction.original_tokens, original, "{name}");
        let now: Vec<usize> = view
            .items
            .iter()
            .enumerate()
            .filter(|(i, item)| {
                matches!(item, ModelItem::ToolResult { output, .. } if output == REMOVED_TOOL_RESULT)
                    && sizes[*i] != 0
            })
            .map(|(i, _)| i)
            .collect();
        assert_eq!(now, replaced, "{name}");
        assert_eq!(reduction.removed_tool_results, replaced.len(), "{name}");
        assert_eq!(reduction.fits_budget, fits, "{name}");
        let expected =
            original - replaced.iter().map(|i| sizes[*i]).sum::<usize>() + replaced.len() * marker;
        assert_eq!(reduction.reduced_tokens, expected, "{name}");
        assert_eq!(view.estimate(&bytes), expected, "{name}");
    }
}

fn read(offset: usize) -> ToolActivity {
    ToolActivity::new(offset, "read_file")
}

/// A session with one user message and an earlier finished turn, on `log`.
fn session<L: EventLog>(log: L, name: &str) -> Session<L> {
    let clock = ManualClock::new(Timestamp::from_millis(STARTED_AT));
    let mut session =
        Session::start(log, session_id(name), &clock).unwrap_or_else(|e| panic!("{e}"));
    session
        .user_message("What does the crate do?")
        .unwrap_or_else(|e| panic!("{e}"));
    session
        .assistant_turn(AssistantTurn::new("It prints its arguments.").with_activity(vec![read(0)]))
        .unwrap_or_else(|e| panic!("{e}"));
    session
        .user_message("Rename the crate to `loud`.")
        .unwrap_or_else(|e| panic!("{e}"));
    session
}

/// The turn under way after `calls` reads, with enough text to pass the trigger of a small
/// window.
fn pending(calls: usize) -> AssistantTurn {
    AssistantTurn::new("Reading the manifests. ".repeat(600))
        .with_activity((0..calls).map(|_| read(0)).collect())
}

#[test]
fn the_policy_answers_after_each_tool_turn() {
    let mut s = session(StoreLog::new(InMemoryStore::new(), session_id("p")), "p");
    let policy = ContextPolicy::keen();
    let mut auto = AutoCompaction::new(8_000);
    // A turn that ran no tool: never compaction, however large.
    let none = auto.after_tool_turn(
        s.history(),
        &AssistantTurn::new("x".repeat(40_000)),
        &policy,
    );
    assert_eq!(
        (none.action, none.reason),
        (CompactionAction::Continue, CompactionReason::NoNewToolTurn)
    );
    // Small: continue.
    let small = AssistantTurn::new("ok").with_activity(vec![read(0)]);
    let advice = auto.after_tool_turn(s.history(), &small, &policy);
    assert_eq!(
        (advice.action, advice.reason),
        (CompactionAction::Continue, CompactionReason::UnderThreshold)
    );
    // At the trigger after a new tool turn: summarise.
    let advice = auto.after_tool_turn(s.history(), &pending(2), &policy);
    assert_eq!(
        (advice.action, advice.reason),
        (CompactionAction::Summarise, CompactionReason::Threshold)
    );
    assert!(advice.estimated_tokens >= advice.threshold);
    assert_eq!((advice.input_budget, advice.threshold), (3_904, 3_514));
    // The same state again (a retry after a provider's context-length error): no new tool
    // turn, so no compaction.
    let again = auto.after_tool_turn(s.history(), &pending(2), &policy);
    assert_eq!(again.reason, CompactionReason::NoNewToolTurn);
    assert_ne!(again.action, CompactionAction::Summarise);
    // Cancelled: suppressed until the next tool turn, and the history is unchanged.
    let before = s.history().clone();
    assert_eq!(auto.start(), AutoCompactionEvent::AutoCompactionStarted);
    assert_eq!(auto.cancel(), AutoCompactionEvent::AutoCompactionCancelled);
    assert_eq!(s.history(), &before);
    let advice = auto.after_tool_turn(s.history(), &pending(2), &policy);
    assert_ne!(advice.action, CompactionAction::Summarise);
    let advice = auto.after_tool_turn(s.history(), &pending(3), &policy);
    assert_eq!(advice.action, CompactionAction::Summarise);
    // The plan: Keen's five sections asked for, the latest user message kept apart.
    let plan = advice.plan.unwrap_or_else(|| panic!("a plan"));
    assert_eq!(plan.last_user_message, "Rename the crate to `loud`.");
    assert_eq!(plan.request.system.as_deref(), Some(SUMMARY_INSTRUCTIONS));
    for section in SUMMARY_SECTIONS {
        assert!(
            SUMMARY_INSTRUCTIONS.contains(&format!("## {section}\n")),
            "{section}"
        );
    }
    // A blank summary fails (auto_compaction_test.go, TestAutoCompactIsTransactional).
    let event = auto.apply(&mut s, &plan, " \n");
    assert!(
        matches!(&event, AutoCompactionEvent::AutoCompactionFailed { reason } if reason.contains("blank")),
        "{event:?}"
    );
    assert_eq!(s.history(), &before);
    // Applied.
    let event = auto.apply(&mut s, &plan, SUMMARY);
    assert_eq!(
        event,
        AutoCompactionEvent::AutoCompactionApplied {
            compacted_entries: 4
        }
    );
    // Keen's replacement (TestAutoCompactBuildsPrivateReplacement): the summary, then the
    // latest user message verbatim, in one user message.
    let view = s.history().model_view(&policy);
    let [ModelItem::User(text)] = view.items.as_slice() else {
        panic!("one user message: {view:?}");
    };
    assert!(text.starts_with("<compacted_context>\n"), "{text}");
    assert!(text.contains(SUMMARY));
    assert!(
        text.ends_with("\n\nRename the crate to `loud`.\n</last_user_message>"),
        "{text}"
    );
    // A plan made before the history moved is refused, and changes nothing.
    let after = s.history().clone();
    let event = auto.apply(&mut s, &plan, SUMMARY);
    assert!(matches!(
        event,
        AutoCompactionEvent::AutoCompactionFailed { .. }
    ));
    assert_eq!(s.history(), &after);
}

/// Compacts a session on `log` and checks that the log holds the checkpoint and the
/// compaction, adjacent, and resumes to the same history.
fn compacts_atomically<L: EventLog>(log: L, name: &str) -> L {
    let mut s = session(log, name);
    let mut auto = AutoCompaction::new(8_000);
    let advice = auto.after_tool_turn(s.history(), &pending(3), &ContextPolicy::keen());
    let plan = advice.plan.unwrap_or_else(|| panic!("{name}: a plan"));
    let event = auto.apply(&mut s, &plan, SUMMARY);
    assert!(
        matches!(event, AutoCompactionEvent::AutoCompactionApplied { .. }),
        "{name}: {event:?}"
    );
    let (history, mut log) = s.into_parts();
    let loaded = log.load().unwrap_or_else(|e| panic!("{e}"));
    let kinds: Vec<&str> = loaded.events.iter().map(SessionEvent::kind).collect();
    assert_eq!(
        kinds,
        [
            "session_started",
            "user_message",
            "assistant_turn",
            "user_message",
            "assistant_turn",
            "compaction_applied"
        ],
        "{name}"
    );
    let SessionEvent::CompactionApplied(c) = &loaded.events[5] else {
        panic!("{name}")
    };
    assert_eq!(
        c.last_user_message.as_deref(),
        Some("Rename the crate to `loud`.")
    );
    let (resumed, _) = Session::resume(log).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resumed.history(), &history, "{name}");
    resumed.into_parts().1
}

#[test]
fn the_checkpoint_and_the_compaction_are_one_step_on_every_log() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let jsonl = JsonlLog::new(dir.path(), &session_id("j")).unwrap_or_else(|e| panic!("{e}"));
    let jsonl = compacts_atomically(jsonl, "j");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert_eq!(
        names,
        [std::ffi::OsString::from("j.jsonl")],
        "no temporary file is left"
    );
    // The log still takes ordinary appends after the rename.
    let (mut s, _) = Session::resume(jsonl).unwrap_or_else(|e| panic!("{e}"));
    s.user_message("thanks").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        JsonlLog::read(s.log().path()).map(|l| l.events.len()).ok(),
        Some(7)
    );

    compacts_atomically(StoreLog::new(InMemoryStore::new(), session_id("m")), "m");
    let sqlite = SqliteStore::open(dir.path().join("memory.db")).unwrap_or_else(|e| panic!("{e}"));
    compacts_atomically(StoreLog::new(&sqlite, session_id("q")), "q");
    assert_eq!(
        sqlite.session_load(&session_id("q")).map(|e| e.len()).ok(),
        Some(6)
    );
    if let Ok(url) = std::env::var("AGENT_MEMORY_TEST_POSTGRES") {
        let options = agent_memory_postgres::PostgresOptions::default()
            .with_schema(format!("t_turns_{}", std::process::id()))
            .with_pool_size(2);
        let pg = agent_memory_postgres::PostgresStore::connect_with(&url, &options)
            .unwrap_or_else(|e| panic!("connect: {e}"));
        compacts_atomically(StoreLog::new(&pg, session_id("g")), "g");
        pg.drop_schema().unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A log whose batch append always fails.
struct Refusing(StoreLog<InMemoryStore>);

impl EventLog for Refusing {
    fn append(&mut self, event: &SessionEvent) -> agent_memory_turns::Result<()> {
        self.0.append(event)
    }
    fn load(&mut self) -> agent_memory_turns::Result<agent_memory_turns::Loaded> {
        self.0.load()
    }
}

#[test]
fn a_failed_write_leaves_the_history_and_the_log_unchanged() {
    let mut s = session(
        Refusing(StoreLog::new(InMemoryStore::new(), session_id("r"))),
        "r",
    );
    let before = s.history().clone();
    let mut auto = AutoCompaction::new(8_000);
    let advice = auto.after_tool_turn(s.history(), &pending(1), &ContextPolicy::keen());
    let plan = advice.plan.unwrap_or_else(|| panic!("a plan"));
    let event = auto.apply(&mut s, &plan, SUMMARY);
    assert!(
        matches!(&event, AutoCompactionEvent::AutoCompactionFailed { reason } if reason.contains("atomic")),
        "{event:?}"
    );
    assert_eq!(s.history(), &before);
    let (_, mut log) = s.into_parts();
    assert_eq!(log.load().map(|l| l.events.len()).ok(), Some(4));
}

#[test]
fn the_model_view_before_and_after_an_automatic_compaction() {
    let clock = ManualClock::new(Timestamp::from_millis(STARTED_AT));
    let log = StoreLog::new(InMemoryStore::new(), session_id("v"));
    let mut s = Session::start(log, session_id("v"), &clock).unwrap_or_else(|e| panic!("{e}"));
    s.set_tool_history(agent_memory_turns::ToolHistory::Full)
        .unwrap_or_else(|e| panic!("{e}"));
    s.user_message("What does the crate do?")
        .unwrap_or_else(|e| panic!("{e}"));
    let source = "fn main() {\n    println!(\"{:?}\", std::env::args());\n}\n".repeat(80);
    let first = read(0).with_retained_output(&source);
    s.assistant_turn(AssistantTurn::new("It prints its arguments.").with_activity(vec![first]))
        .unwrap_or_else(|e| panic!("{e}"));
    s.user_message("Rename the crate to `loud`.")
        .unwrap_or_else(|e| panic!("{e}"));
    let policy = ContextPolicy::keen().with_system_prompt("You are a coding agent.");
    let turn = AssistantTurn::new("Reading the manifests. ").with_activity(vec![
        read(23).with_retained_output("[package]\nname = \"quiet\"\n"),
    ]);
    let mut auto = AutoCompaction::new(5_000);
    let advice = auto.after_tool_turn(s.history(), &turn, &policy);
    assert_eq!(advice.action, CompactionAction::Summarise);
    assert_eq!(advice.reduction.removed_tool_results, 1);
    let plan = advice.plan.unwrap_or_else(|| panic!("a plan"));
    // Before: the conversation with the turn under way, as the summary request carries it
    // (the old read's result replaced by the reducer's marker).
    let before = render::to_pretty_json(&render::openai_chat(&plan.request));
    assert!(before.contains(REMOVED_TOOL_RESULT));
    insta::assert_snapshot!("auto_compaction_before", before);
    let event = auto.apply(&mut s, &plan, SUMMARY);
    assert!(matches!(
        event,
        AutoCompactionEvent::AutoCompactionApplied { .. }
    ));
    let after = render::to_pretty_json(&render::openai_chat(&s.history().model_view(&policy)));
    insta::assert_snapshot!("auto_compaction_after", after);
}
