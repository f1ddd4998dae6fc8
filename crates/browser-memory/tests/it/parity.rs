//! Edge parity with browser-agent-driver, found by randomized differential runs against its
//! own classes: each test shows a case where this crate used to answer differently and
//! checks the reference's answer.

use agent_memory_browser::compat::{utf16_len, utf16_prefix};
use agent_memory_browser::{
    BrowserMemory, Budget, Layout, MatchOptions, MemoryRoot, Policy, RunRegistry, RunReport,
    RunStart, TRUNCATION_MARK, Turn, assemble, find_best_match, import_dir, origin_of,
    session_history, site_key,
};
use agent_memory_core::store::browser::{HintStore, SessionEntry, SiteMemoryStore};
use agent_memory_core::{InMemoryStore, MILLIS_PER_DAY, ManualClock, Scope, SeededIds, Timestamp};

const NOW: Timestamp = Timestamp::from_millis(1_767_225_600_000);

fn session(outcome: &str, timestamp: &str) -> SessionEntry {
    SessionEntry {
        id: "s".to_owned(),
        goal: "Buy a kettle".to_owned(),
        outcome: outcome.to_owned(),
        success: true,
        final_url: String::new(),
        timestamp: timestamp.to_owned(),
        turns_used: 3,
        duration_ms: 3000,
    }
}

fn turn(url: &str) -> Turn {
    Turn {
        url: url.to_owned(),
        action: r#"{"action":"click","selector":"@b1"}"#.to_owned(),
        verified: true,
        duration_ms: 1000,
        ..Turn::default()
    }
}

#[test]
fn the_compatibility_layout_counts_and_cuts_in_utf16_units() {
    // The reference's budget takes JavaScript string lengths: 300 emoji are 600 units. The
    // old count saw 300 characters and kept the part whole within 500.
    let store = InMemoryStore::new();
    let memory = BrowserMemory::new(
        &store,
        Scope::shared(),
        ManualClock::new(NOW),
        SeededIds::new(1),
    );
    let outcome = "😀".repeat(300);
    memory
        .record_run(
            &RunReport::new("Buy a kettle", "https://shop.test/")
                .with_turns(vec![turn("https://shop.test/")])
                .with_outcome(outcome),
        )
        .expect("record");
    let context = |layout| {
        memory
            .context(
                "something else",
                "https://shop.test/",
                layout,
                Budget::Chars(500),
                Policy::StopAtOverflow,
            )
            .expect("context")
    };
    let compat = context(Layout::Compatibility);
    let cut = compat
        .strip_suffix(TRUNCATION_MARK)
        .expect("cut in the compatibility layout");
    assert_eq!(utf16_len(cut), 500, "{compat}");
    let site = memory
        .site("https://shop.test/")
        .expect("site")
        .expect("stored");
    let whole = assemble(None, &site, None, Layout::Compatibility)
        .build(Budget::Chars(100_000), Policy::StopAtOverflow);
    assert_eq!(cut, utf16_prefix(&whole, 500));
    // The layered layout keeps counting characters (documented).
    let layered = context(Layout::Layered);
    assert!(!layered.ends_with(TRUNCATION_MARK), "{layered}");
}

#[test]
fn older_outcomes_are_cut_at_80_utf16_units() {
    // `slice(0, 80)` on 50 emoji keeps 40; the old cut counted characters and kept all 50.
    let long = "😀".repeat(50);
    let sessions = [
        session("first", "2026-01-03T10:00:00.000Z"),
        session("second", "2026-01-02T10:00:00.000Z"),
        session(&long, "2026-01-01T10:00:00.000Z"),
    ];
    let text = session_history(&sessions);
    let line = text.lines().last().expect("a line");
    assert!(
        line.contains(&format!("→ {}… (3 turns, 3s)", "😀".repeat(40))),
        "{text}"
    );
    // An odd cut through a pair leaves U+FFFD, as Node writes the lone surrogate.
    let odd = format!("a{}", "😀".repeat(50));
    let sessions = [
        sessions[0].clone(),
        sessions[1].clone(),
        session(&odd, "2026-01-01T10:00:00.000Z"),
    ];
    let text = session_history(&sessions);
    assert!(
        text.contains(&format!("→ a{}\u{fffd}… (3 turns", "😀".repeat(39))),
        "{text}"
    );
}

#[test]
fn session_timestamps_show_their_own_text() {
    // The old display converted to UTC: `[2025-12-28 12:00]`.
    let text = session_history(&[session("ok", "2025-12-28T14:00:00.000+02:00")]);
    assert!(text.contains("[2025-12-28 14:00] ✓"), "{text}");
    let text = session_history(&[session("ok", "yesterday at noon")]);
    assert!(text.contains("[yesterday at noo] ✓"), "{text}");
}

#[test]
fn timestamps_date_parse_accepts_expire_under_the_ttl() {
    // A date-only timestamp is UTC midnight for `Date.parse`; the old parser took only full
    // RFC 3339 date-times and counted this trajectory as undated, so it never expired.
    let dir = tempfile::tempdir().expect("temp dir");
    let file = serde_json::json!({
        "id": "traj_1_abc",
        "goal": "Search for smart watch reviews",
        "origin": "https://shop.test",
        "steps": [],
        "success": true,
        "durationMs": 1000,
        "model": "m",
        "timestamp": "2025-11-01",
    });
    std::fs::write(dir.path().join("traj_1_abc.json"), file.to_string()).expect("write");
    let store = InMemoryStore::new();
    import_dir(
        &store,
        &Scope::shared(),
        &MemoryRoot::new(dir.path()),
        NOW,
        None,
    )
    .expect("import");
    let at = |days: i64| {
        find_best_match(
            &store,
            &Scope::shared(),
            "search for smart watch reviews",
            Some("https://shop.test/"),
            &MatchOptions::new(),
            Timestamp::from_millis(1_761_955_200_000 + days * MILLIS_PER_DAY),
        )
        .expect("match")
    };
    let fresh = at(29).expect("within 30 days of 2025-11-01");
    assert_eq!(
        fresh.trajectory.recorded_at,
        Some(Timestamp::from_millis(1_761_955_200_000))
    );
    assert!(at(31).is_none(), "expired after 30 days");
    // Trace scoring gives it its real recency, not the undated 0.5.
    let scored = find_best_match(
        &store,
        &Scope::shared(),
        "search for smart watch reviews",
        None,
        &MatchOptions::new().with_scoring(true),
        Timestamp::from_millis(1_761_955_200_000),
    )
    .expect("match")
    .expect("found");
    let expected = 0.6 + 0.2 + 0.1 / (1.0 + 1000.0 / 60_000.0) + 0.1 * 0.5;
    assert!((scored.score - expected).abs() < 1e-12, "{}", scored.score);
}

#[test]
fn internationalized_domains_become_punycode_origins_and_site_keys() {
    // The hand-written parser kept `bücher.example` as it was typed.
    assert_eq!(
        origin_of("https://Bücher.example/x").as_deref(),
        Some("https://xn--bcher-kva.example")
    );
    assert_eq!(
        site_key("https://bücher.example:8443/"),
        "xn--bcher-kva.example_8443"
    );
    let store = InMemoryStore::new();
    let memory = BrowserMemory::new(
        &store,
        Scope::shared(),
        ManualClock::new(NOW),
        SeededIds::new(2),
    );
    let stored = memory
        .record_run(
            &RunReport::new("Find a cookbook", "https://bücher.example/")
                .with_turns(vec![turn("https://bücher.example/")])
                .with_success(true),
        )
        .expect("record");
    assert_eq!(
        stored.origin.as_deref(),
        Some("https://xn--bcher-kva.example")
    );
    // The punycode spelling and the Unicode one name the same site and origin.
    let found = memory
        .find_match(
            "find a cookbook",
            Some("https://xn--bcher-kva.example/shelf"),
        )
        .expect("match");
    assert!(found.is_some());
    assert!(
        memory
            .site("https://xn--bcher-kva.example/")
            .expect("site")
            .is_some()
    );
}

#[test]
fn resume_and_fork_accept_the_file_name_form_of_a_run_id() {
    // The reference's `getRun` reads `<id with [^a-zA-Z0-9_-] as _>.json`.
    let store = InMemoryStore::new();
    let runs = RunRegistry::new(
        &store,
        Scope::shared(),
        ManualClock::new(NOW),
        SeededIds::new(3),
    );
    runs.start(
        RunStart::new("proj 7_1773572400000", "Find the cart", "shop.test")
            .with_start_url("https://shop.test/"),
    )
    .expect("start");
    assert!(
        runs.get("proj_7_1773572400000").expect("get").is_none(),
        "get is exact"
    );
    let resumed = runs
        .resume("proj_7_1773572400000", None)
        .expect("resume by file name");
    assert_eq!(resumed.parent_run_id, "proj 7_1773572400000");
    assert_eq!(resumed.start_url, "https://shop.test/");
    let forked = runs
        .fork("proj?7_1773572400000", "Other goal")
        .expect("fork");
    assert_eq!(forked.parent_run_id, "proj 7_1773572400000");
    assert!(runs.resume("proj_8_1773572400000", None).is_err());
}

#[test]
fn the_compatibility_layout_appends_stored_hints_to_the_reference() {
    let store = InMemoryStore::new();
    let memory = BrowserMemory::new(
        &store,
        Scope::shared(),
        ManualClock::new(NOW),
        SeededIds::new(4),
    );
    memory
        .record_run(
            &RunReport::new("Search for smart watch reviews", "https://shop.test/")
                .with_turns(vec![turn("https://shop.test/")])
                .with_success(true),
        )
        .expect("record");
    store
        .hints_put(
            &Scope::shared(),
            "FEEDBACK FROM PREVIOUS RUNS:\n- be quick",
            "t",
            None,
        )
        .expect("hints");
    let report = memory
        .context_report(
            "search for smart watch reviews",
            "https://shop.test/",
            Layout::Compatibility,
            Budget::Chars(8000),
            Policy::StopAtOverflow,
        )
        .expect("context");
    assert!(
        report.built.text.contains("(on https://shop.test/) [verified]\n\nFEEDBACK FROM PREVIOUS RUNS:\n- be quick\nUse this as a guide"),
        "{}",
        report.built.text
    );
    assert_eq!(report.matched.map(|m| m.similarity), Some(1.0));
    // Empty hints add nothing, as the reference's `data.hints || null`.
    store
        .hints_put(&Scope::shared(), "", "t", None)
        .expect("hints");
    let site = store
        .site_get(&Scope::shared(), &site_key("https://shop.test/"))
        .expect("site")
        .unwrap_or_default();
    let without = assemble(None, &site, Some(""), Layout::Compatibility)
        .build(Budget::Chars(8000), Policy::StopAtOverflow);
    assert!(!without.contains("REFERENCE TRAJECTORY"), "{without}");
}

#[test]
fn facts_are_learned_only_from_a_start_url_with_a_hostname() {
    // The reference extracts patterns only when `new URL(startUrl).hostname` is non-empty;
    // the old code took the host from the site key, which an unparsable url also has.
    let store = InMemoryStore::new();
    let memory = BrowserMemory::new(
        &store,
        Scope::shared(),
        ManualClock::new(NOW),
        SeededIds::new(5),
    );
    for start in ["not a url", "https://shop.test/"] {
        memory
            .record_run(
                &RunReport::new("Buy a kettle", start)
                    .with_turns(vec![turn(start), turn(start)])
                    .with_success(true),
            )
            .expect("record");
    }
    let facts = |url: &str| memory.facts(url, Some(0.0)).expect("facts");
    assert!(facts("not a url").is_empty(), "{:?}", facts("not a url"));
    assert!(!facts("https://shop.test/").is_empty());
}

#[test]
fn a_tie_with_an_unparsable_time_goes_to_directory_order() {
    use agent_memory_browser::baseline::linear_scan_match;
    use agent_memory_core::store::browser::{Trajectory, TrajectoryStep};

    // Two trajectories with the same goal tie on similarity (scoring off). The reference reads
    // its files in name order and keeps that order among equal scores; when one time does not
    // parse, it is that order (the ids) that decides, not which one is dated.
    let trajectory = |id: &str, timestamp: &str, recorded_at: Option<Timestamp>| Trajectory {
        id: id.to_owned(),
        goal: "Buy a kettle".to_owned(),
        origin: Some("https://shop.test".to_owned()),
        steps: vec![TrajectoryStep {
            url: "https://shop.test/".to_owned(),
            action: r#"{"action":"click","selector":"@b1"}"#.to_owned(),
            snapshot_hash: "1".to_owned(),
            verified: true,
            expected_effect: None,
        }],
        success: true,
        duration_ms: 1000,
        model: "m".to_owned(),
        timestamp: timestamp.to_owned(),
        recorded_at,
        provenance: None,
    };
    let dated_at = NOW.add_millis(-MILLIS_PER_DAY);
    for (first, second) in [
        (
            trajectory("traj_a", "not a time", None),
            trajectory("traj_b", "2025-12-31T00:00:00.000Z", Some(dated_at)),
        ),
        (
            trajectory("traj_a", "2025-12-31T00:00:00.000Z", Some(dated_at)),
            trajectory("traj_b", "not a time", None),
        ),
    ] {
        let in_directory_order = [first.clone(), second.clone()];
        let options = MatchOptions::default();
        let reference = linear_scan_match(
            &in_directory_order,
            "Buy a kettle",
            Some("https://shop.test/"),
            &options,
            NOW,
        )
        .expect("the reference matches");
        let store = crate::support::store_of(&[second, first]);
        let ours = find_best_match(
            &store,
            &Scope::shared(),
            "Buy a kettle",
            Some("https://shop.test/"),
            &options,
            NOW,
        )
        .expect("match")
        .expect("a match");
        assert_eq!(ours.trajectory.id, reference.id);
        assert_eq!(ours.trajectory.id, "traj_a");
    }
}
