//! Benchmarks on workload W-turn: capture throughput, the model view of
//! a long session rendered as OpenAI messages, append to and resume from the event log, and
//! compaction of the whole session; and the same session with tool activity (every call at
//! its place in the text), rendered in the positional style as OpenAI messages and as an
//! Anthropic request, for the last 10 turns (the default) and for every turn (as Keen Code).
//!
//! Generator: one splitmix64 stream seeded 42. Per turn `below(9)` events; per event
//! `k = below(10)`: 0..=3 `write_file`, 4..=5 `edit_file` (then `below(200)` for the path
//! `src/m{n}.rs`), 6..=7 `bash` (then `below(10)`: exit 0 when `< 8`, else `[1, 2, 101]`
//! by `below(3)`; then `below(30)` for `cargo test -p c{n}`), 8..=9 `read_file` (no further
//! draw; path `src/lib.rs`).

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::hint::black_box;

use agent_memory_benchkit::{Figure, keep, sizes};
use agent_memory_core::{ManualClock, Provenance, SessionId, Source, SplitMix64, Timestamp};
use agent_memory_sqlite::SqliteStore;
use agent_memory_turns::{
    AssistantTurn, CaptureConfig, CaptureRules, ContextPolicy, History, JsonlLog, Session,
    SessionEvent, StoreLog, ToolEnd, render,
};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_main};
use serde_json::{Value, json};

const ROOT: &str = "/work/app";

struct Event {
    tool: &'static str,
    input: Value,
    exit_code: Option<i32>,
}

/// The W-turn session: `turns` lists of tool events.
fn workload(turns: usize) -> Vec<Vec<Event>> {
    let mut rng = SplitMix64::new(42);
    (0..turns)
        .map(|_| {
            let events = rng.below(9);
            (0..events)
                .map(|_| match rng.below(10) {
                    k @ 0..=5 => Event {
                        tool: if k <= 3 { "write_file" } else { "edit_file" },
                        input: json!({ "path": format!("src/m{}.rs", rng.below(200)) }),
                        exit_code: None,
                    },
                    6 | 7 => {
                        let exit_code = if rng.below(10) < 8 {
                            0
                        } else {
                            [1, 2, 101][rng.below(3) as usize]
                        };
                        Event {
                            tool: "bash",
                            input: json!({ "command": format!("cargo test -p c{}", rng.below(30)) }),
                            exit_code: Some(exit_code),
                        }
                    }
                    _ => Event {
                        tool: "read_file",
                        input: json!({ "path": "src/lib.rs" }),
                        exit_code: None,
                    },
                })
                .collect()
        })
        .collect()
}

fn session_id() -> SessionId {
    SessionId::new("w-turn").unwrap_or_else(|e| panic!("{e}"))
}

/// The session's events: a user message and an assistant turn with its memory per turn.
fn session_events(rules: &CaptureRules, turns: &[Vec<Event>]) -> Vec<SessionEvent> {
    let mut events = Vec::with_capacity(turns.len() * 2 + 1);
    events.push(SessionEvent::SessionStarted {
        session: session_id().into_string(),
        started_at: 1_767_225_600_000,
    });
    for (i, turn) in turns.iter().enumerate() {
        let mut capture = rules.start_turn();
        for e in turn {
            capture.observe(&tool_end(e));
        }
        events.push(SessionEvent::UserMessage {
            text: format!("Please continue with step {i}."),
        });
        events.push(SessionEvent::AssistantTurn(
            AssistantTurn::new(format!("Step {i} is done.")).with_memory(capture.finish()),
        ));
    }
    events
}

/// The session with tool activity: each turn streams "Working on step i. ", runs its tools,
/// then says "Step i is done.", so every call sits between the two sentences.
fn session_events_with_activity(rules: &CaptureRules, turns: &[Vec<Event>]) -> Vec<SessionEvent> {
    let mut events = Vec::with_capacity(turns.len() * 2 + 1);
    events.push(SessionEvent::SessionStarted {
        session: session_id().into_string(),
        started_at: 1_767_225_600_000,
    });
    for (i, turn) in turns.iter().enumerate() {
        let mut capture = rules.start_turn();
        capture.text(&format!("Working on step {i}. "));
        for e in turn {
            capture.observe(&tool_end(e));
        }
        capture.text(&format!("Step {i} is done."));
        events.push(SessionEvent::UserMessage {
            text: format!("Please continue with step {i}."),
        });
        events.push(SessionEvent::AssistantTurn(capture.into_turn()));
    }
    events
}

/// The positional policies: memories of the last 10 turns (the default), and of every turn.
fn positional_policies() -> [(&'static str, ContextPolicy); 2] {
    let keen = ContextPolicy::keen().with_system_prompt("You are a coding agent.");
    [
        ("last-10", keen.clone()),
        ("every-turn", keen.with_recent_memories(usize::MAX)),
    ]
}

fn tool_end(e: &Event) -> ToolEnd<'_> {
    ToolEnd {
        tool: e.tool,
        input: &e.input,
        output: "",
        is_error: false,
        exit_code: e.exit_code,
    }
}

fn replay(events: &[SessionEvent]) -> History {
    History::replay(events.iter().cloned()).unwrap_or_else(|e| panic!("{e}"))
}

fn write_log<L: agent_memory_turns::EventLog>(log: L, events: &[SessionEvent]) -> Session<L> {
    let clock = ManualClock::new(Timestamp::from_millis(1_767_225_600_000));
    let mut session = Session::start(log, session_id(), &clock).unwrap_or_else(|e| panic!("{e}"));
    for event in &events[1..] {
        session
            .record(event.clone())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    session
}

fn bench(c: &mut Criterion) {
    let rules = CaptureRules::for_workspace(ROOT).unwrap_or_else(|e| panic!("{e}"));
    let sizes = sizes(&[1_000]);
    let workloads: Vec<(usize, Vec<Vec<Event>>)> =
        sizes.iter().map(|&n| (n, workload(n))).collect();

    let mut group = c.benchmark_group("W-turn/capture");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(3));
    for (n, turns) in &workloads {
        let events: usize = turns.iter().map(Vec::len).sum();
        group.throughput(Throughput::Elements(events as u64));
        group.bench_with_input(BenchmarkId::new("ours", n), turns, |b, turns| {
            b.iter(|| {
                for turn in turns {
                    let mut capture = rules.start_turn();
                    for e in turn {
                        capture.observe(&tool_end(e));
                    }
                    black_box(capture.finish());
                }
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("W-turn/render-openai");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(3));
    for (n, turns) in &workloads {
        let history = replay(&session_events(&rules, turns));
        group.throughput(Throughput::Elements(*n as u64));
        group.bench_with_input(BenchmarkId::new("ours", n), &history, |b, history| {
            b.iter(|| {
                let view = history.model_view(&ContextPolicy::default());
                let messages = render::openai_chat(&view);
                black_box(serde_json::to_string(&messages).unwrap_or_default())
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("W-turn/render-positional");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(3));
    for (n, turns) in &workloads {
        let history = replay(&session_events_with_activity(&rules, turns));
        group.throughput(Throughput::Elements(*n as u64));
        for (name, policy) in positional_policies() {
            group.bench_with_input(
                BenchmarkId::new(format!("openai-{name}"), n),
                &history,
                |b, history| {
                    b.iter(|| {
                        let view = history.model_view(&policy);
                        let messages = render::openai_chat(&view);
                        black_box(serde_json::to_string(&messages).unwrap_or_default())
                    });
                },
            );
            group.bench_with_input(
                BenchmarkId::new(format!("anthropic-{name}"), n),
                &history,
                |b, history| {
                    b.iter(|| {
                        let view = history.model_view(&policy);
                        let request = render::anthropic(&view);
                        black_box(serde_json::to_string(&request).unwrap_or_default())
                    });
                },
            );
        }
    }
    group.finish();

    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group("W-turn/append-jsonl");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(3));
    for (n, turns) in &workloads {
        let events = session_events(&rules, turns);
        group.throughput(Throughput::Elements(events.len() as u64));
        group.bench_with_input(BenchmarkId::new("ours", n), &events, |b, events| {
            b.iter(|| {
                let path = dir.path().join("append.jsonl");
                let _ = std::fs::remove_file(&path);
                black_box(write_log(JsonlLog::at(&path), events).history().turns())
            });
        });
    }
    group.finish();

    // One event appended to a SQLite log per call (its own transaction), without a writer
    // and with one, in the same run: what keeping who appended it costs.
    let mut group = c.benchmark_group("W-turn/append-sqlite-one");
    group.sample_size(20);
    group.measurement_time(std::time::Duration::from_secs(3));
    group.throughput(Throughput::Elements(1));
    let writer = Provenance::new(
        Source::Model("claude".to_owned()),
        Timestamp::from_millis(0),
    )
    .with_session("run-7")
    .with_client("mcp:agent");
    for (variant, writer) in [("ours", None), ("ours with writer", Some(writer))] {
        let store = SqliteStore::open(
            dir.path()
                .join(format!("append-one-{}.db", writer.is_some())),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut log = StoreLog::new(&store, session_id());
        if let Some(writer) = writer {
            log = log.with_writer(writer);
        }
        let event = SessionEvent::UserMessage {
            text: "run the tests again".to_owned(),
        };
        group.bench_function(BenchmarkId::new(variant, 1), |b| {
            b.iter(|| {
                agent_memory_turns::EventLog::append(&mut log, black_box(&event))
                    .unwrap_or_else(|e| panic!("{e}"));
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("W-turn/resume-jsonl");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(3));
    for (n, turns) in &workloads {
        let events = session_events(&rules, turns);
        let path = dir.path().join(format!("resume-{n}.jsonl"));
        drop(write_log(JsonlLog::at(&path), &events));
        group.throughput(Throughput::Elements(events.len() as u64));
        group.bench_with_input(BenchmarkId::new("ours", n), &path, |b, path| {
            b.iter(|| {
                let (session, _) =
                    Session::resume(JsonlLog::at(path)).unwrap_or_else(|e| panic!("{e}"));
                black_box(session.history().turns())
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("W-turn/resume-sqlite");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(3));
    for (n, turns) in &workloads {
        let events = session_events(&rules, turns);
        let store = SqliteStore::open(dir.path().join(format!("resume-{n}.db")))
            .unwrap_or_else(|e| panic!("{e}"));
        let stored: Vec<_> = events
            .iter()
            .map(|e| e.to_stored().unwrap_or_else(|e| panic!("{e}")))
            .collect();
        agent_memory_core::SessionStore::session_append(&store, &session_id(), &stored)
            .unwrap_or_else(|e| panic!("{e}"));
        group.throughput(Throughput::Elements(events.len() as u64));
        group.bench_with_input(BenchmarkId::new("ours", n), &store, |b, store| {
            b.iter(|| {
                let (session, _) = Session::resume(StoreLog::new(store, session_id()))
                    .unwrap_or_else(|e| panic!("{e}"));
                black_box(session.history().turns())
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("W-turn/compact");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(3));
    for (n, turns) in &workloads {
        let history = replay(&session_events(&rules, turns));
        group.throughput(Throughput::Elements(*n as u64));
        group.bench_with_input(BenchmarkId::new("ours", n), &history, |b, history| {
            b.iter(|| {
                black_box(
                    history
                        .plan_compaction("summary of the session", 10)
                        .unwrap_or_else(|e| panic!("{e}")),
                )
            });
        });
    }
    group.finish();
}

/// On-CPU time of the calling thread, from `/proc/thread-self/schedstat` (Linux). Wall time
/// on a machine shared with other work counts time spent waiting for a core; on-CPU time
/// does not, so these figures compare across runs under different loads.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// The median on-CPU nanoseconds of one call of `f`, over `samples` samples. The kernel
/// accounts CPU time in scheduler ticks, so each sample repeats `f` for at least 200 ms of
/// wall time and divides.
fn median_cpu_ns(samples: usize, mut f: impl FnMut()) -> Option<f64> {
    let once = std::time::Instant::now();
    f();
    let repeats = (0.2 / once.elapsed().as_secs_f64().max(1e-6))
        .ceil()
        .max(1.0) as u32;
    let mut per_call = Vec::with_capacity(samples);
    for _ in 0..samples {
        let start = thread_cpu_ns()?;
        for _ in 0..repeats {
            f();
        }
        per_call.push(thread_cpu_ns()?.saturating_sub(start) as f64 / f64::from(repeats));
    }
    per_call.sort_by(f64::total_cmp);
    per_call.get(samples / 2).copied().filter(|ns| *ns > 0.0)
}

/// Figures criterion cannot express: on-CPU time of the workload's operations.
fn cpu_figures() {
    if std::env::args().any(|a| a == "--test") {
        return;
    }
    let rules = CaptureRules::for_workspace(ROOT).unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut figures = Vec::new();
    let mut figure = |name: &str, n: usize, value: Option<f64>, unit: &str, lower: bool| {
        if let Some(value) = value {
            let figure = Figure::new("W-turn", name, n, (value * 1000.0).round() / 1000.0, unit);
            figures.push(if lower {
                figure
            } else {
                figure.higher_is_better()
            });
        }
    };
    for n in sizes(&[1_000]) {
        let turns = workload(n);
        let events: usize = turns.iter().map(Vec::len).sum();
        let capture = median_cpu_ns(5, || {
            for turn in &turns {
                let mut capture = rules.start_turn();
                for e in turn {
                    capture.observe(&tool_end(e));
                }
                black_box(capture.finish());
            }
        });
        figure(
            "capture, on-CPU",
            n,
            capture.map(|ns| events as f64 / ns * 1e3),
            "Mevents/s",
            false,
        );
        let memory_only = CaptureRules::new(CaptureConfig::new(ROOT).with_record_activity(false))
            .unwrap_or_else(|e| panic!("{e}"));
        let capture = median_cpu_ns(5, || {
            for turn in &turns {
                let mut capture = memory_only.start_turn();
                for e in turn {
                    capture.observe(&tool_end(e));
                }
                black_box(capture.finish());
            }
        });
        figure(
            "capture without tool activity, on-CPU",
            n,
            capture.map(|ns| events as f64 / ns * 1e3),
            "Mevents/s",
            false,
        );
        let session = session_events(&rules, &turns);
        let history = replay(&session);
        let render = median_cpu_ns(5, || {
            let view = history.model_view(&ContextPolicy::default());
            black_box(serde_json::to_string(&render::openai_chat(&view)).unwrap_or_default());
        });
        figure(
            "model view as OpenAI messages, on-CPU",
            n,
            render.map(|ns| ns / 1e6),
            "ms",
            true,
        );
        let with_activity = replay(&session_events_with_activity(&rules, &turns));
        for (name, policy) in positional_policies() {
            let view_only = median_cpu_ns(5, || {
                black_box(with_activity.model_view(&policy).items.len());
            });
            figure(
                &format!("model view with tool activity, positional ({name}), on-CPU"),
                n,
                view_only.map(|ns| ns / 1e6),
                "ms",
                true,
            );
            let openai = median_cpu_ns(5, || {
                let view = with_activity.model_view(&policy);
                black_box(serde_json::to_string(&render::openai_chat(&view)).unwrap_or_default());
            });
            figure(
                &format!(
                    "model view with tool activity as OpenAI messages, positional ({name}), on-CPU"
                ),
                n,
                openai.map(|ns| ns / 1e6),
                "ms",
                true,
            );
            let anthropic = median_cpu_ns(5, || {
                let view = with_activity.model_view(&policy);
                black_box(serde_json::to_string(&render::anthropic(&view)).unwrap_or_default());
            });
            figure(
                &format!(
                    "model view with tool activity as an Anthropic request, positional ({name}), on-CPU"
                ),
                n,
                anthropic.map(|ns| ns / 1e6),
                "ms",
                true,
            );
        }
        let path = dir.path().join(format!("figures-{n}.jsonl"));
        drop(write_log(JsonlLog::at(&path), &session));
        let resume = median_cpu_ns(5, || {
            let (s, _) = Session::resume(JsonlLog::at(&path)).unwrap_or_else(|e| panic!("{e}"));
            black_box(s.history().turns());
        });
        figure(
            "resume from JSONL, on-CPU",
            n,
            resume.map(|ns| ns / 1e6),
            "ms",
            true,
        );
        let compact = median_cpu_ns(5, || {
            black_box(
                history
                    .plan_compaction("summary", 10)
                    .unwrap_or_else(|e| panic!("{e}")),
            );
        });
        figure(
            "compaction of the whole session, on-CPU",
            n,
            compact.map(|ns| ns / 1e6),
            "ms",
            true,
        );
    }
    keep("W-turn.jsonl", &figures);
}

fn benches() {
    cpu_figures();
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
}

criterion_main!(benches);
