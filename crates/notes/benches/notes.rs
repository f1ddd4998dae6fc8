//! Notes on a SQLite file holding 10,000 notes (100 directories of 100, about 400 bytes
//! each, words drawn by `SplitMix64` from a fixed seed): `view` of a file and of a directory,
//! `str_replace` (each a compare-and-swap commit), and `search` for a rare word (in 10 notes)
//! and for two common words (the first 20 notes holding both). Besides criterion's figures
//! it prints the search's p50/p99 over 1,000 calls, the figure the store is held to (p99
//! under 10 ms).
//!
//! Under `cargo test --benches` (no `--bench` argument) it runs on 500 notes, each bench
//! once, to check that it all works.

use std::time::{Duration, Instant};

use agent_memory_core::evidence::Evidence;
use agent_memory_core::store::notes::{NoteLimits, NotePath, NoteStore};
use agent_memory_core::{Provenance, Scope, Source, SplitMix64, Timestamp};
use agent_memory_notes::{Command, Notes};
use agent_memory_sqlite::SqliteStore;
use criterion::Criterion;

const WORDS: [&str; 16] = [
    "deploy", "cargo", "review", "release", "schema", "index", "budget", "client", "server",
    "retry", "cache", "token", "branch", "merge", "query", "latency",
];

fn benching() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// The text of note `i`: about 400 bytes of drawn words on lines of eight, a state line the
/// `str_replace` bench toggles, and a rare word in every thousandth note.
fn note_text(i: usize, rng: &mut SplitMix64) -> String {
    let mut text = format!("# note {i}\nstate: idle\n");
    for line in 0..6 {
        let words: Vec<&str> = (0..8)
            .map(|_| WORDS[(rng.next_u64() % WORDS.len() as u64) as usize])
            .collect();
        text.push_str(&words.join(" "));
        text.push('\n');
        if line == 2 && i % 1_000 == 7 {
            text.push_str("zanzibar appears here\n");
        }
    }
    text
}

fn fill(store: &SqliteStore, scope: &Scope, notes: usize) {
    let mut rng = SplitMix64::new(20_251_126);
    let limits = NoteLimits::default();
    let evidence = Evidence::unscreened(Provenance::new(Source::User, Timestamp::from_millis(0)));
    for i in 0..notes {
        let path = NotePath::new(format!("dir_{:03}/note_{i:05}.md", i % 100)).expect("path");
        store
            .note_create(scope, &path, &note_text(i, &mut rng), &evidence, &limits)
            .expect("create note");
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn main() {
    let count = if benching() { 10_000 } else { 500 };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("notes.db");
    let scope = Scope::new("bench").expect("scope");
    let store = SqliteStore::open(&db).expect("open");
    fill(&store, &scope, count);
    let notes = Notes::new(&store, scope);

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group(format!("notes-{count}"));
    group.bench_function("view-file", |b| {
        let command = Command::View {
            path: "/memories/dir_042/note_00042.md".into(),
            view_range: None,
        };
        b.iter(|| notes.execute(&command).expect("view"));
    });
    group.bench_function("view-directory", |b| {
        let command = Command::View {
            path: "/memories/dir_042".into(),
            view_range: None,
        };
        b.iter(|| notes.execute(&command).expect("view"));
    });
    // The note's state lives outside the closure: criterion calls it more than once.
    let busy = std::cell::Cell::new(false);
    group.bench_function("str_replace", |b| {
        b.iter(|| {
            let (old, new) = if busy.get() {
                ("busy", "idle")
            } else {
                ("idle", "busy")
            };
            busy.set(!busy.get());
            notes
                .execute(&Command::StrReplace {
                    path: "/memories/dir_013/note_00013.md".into(),
                    old_str: format!("state: {old}"),
                    new_str: format!("state: {new}"),
                })
                .expect("str_replace")
        });
    });
    let rare = Command::Search {
        query: "zanzibar".into(),
        path: None,
        limit: None,
    };
    let common = Command::Search {
        query: "deploy latency".into(),
        path: None,
        limit: None,
    };
    group.bench_function("search-rare", |b| {
        b.iter(|| notes.execute(&rare).expect("search"));
    });
    group.bench_function("search-common", |b| {
        b.iter(|| notes.execute(&common).expect("search"));
    });
    group.finish();

    // The figure criterion does not give: the tail of the search latency.
    let runs = if benching() { 1_000 } else { 10 };
    for (name, command) in [("rare", &rare), ("common", &common)] {
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let start = Instant::now();
                notes.execute(command).expect("search");
                start.elapsed()
            })
            .collect();
        times.sort_unstable();
        println!(
            "notes-{count}/search-{name}: p50 {:.3} ms, p99 {:.3} ms over {runs} calls",
            percentile(&times, 0.50).as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
        );
    }
    c.final_summary();
}
