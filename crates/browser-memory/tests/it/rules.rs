//! The rules of each layer, table-driven: session history, app knowledge, selectors, the run
//! registry, fact extraction and the replay match.

use agent_memory_browser::{
    BrowserMemory, MatchOptions, RunRegistry, RunReport, RunStart, Turn, extract_facts,
    find_replayable, generate_run_id, known_selectors, session_history, session_run_id, tokenize,
};
use agent_memory_core::store::browser::{
    FactKind, RunFilter, RunStatus, SelectorEntry, SessionEntry, Trajectory, TrajectoryStep,
    TrajectoryStore, append_session, observe_fact, record_selector,
};
use agent_memory_core::{InMemoryStore, ManualClock, Scope, SeededIds, Timestamp};

const NOW: Timestamp = Timestamp::from_millis(1_767_225_600_000);

fn session(hour: u32, outcome: &str, success: bool) -> SessionEntry {
    SessionEntry {
        id: format!("s{hour}"),
        goal: format!("goal {hour}"),
        outcome: outcome.to_owned(),
        success,
        final_url: format!("https://site.test/{hour}"),
        timestamp: format!("2026-03-15T{hour:02}:00:00.000Z"),
        turns_used: hour,
        duration_ms: 1500,
    }
}

#[test]
fn session_history_keeps_five_newest_and_renders_them() {
    let mut log = Vec::new();
    for hour in [3, 1, 7, 5, 2, 6] {
        append_session(
            &mut log,
            session(hour, &"x".repeat(hour as usize * 20), hour % 2 == 1),
        );
    }
    assert_eq!(log.len(), 5);
    let text = session_history(&log);
    insta::assert_snapshot!(text);
    assert_eq!(
        session_history(&[session(1, "ok", true)]).lines().next(),
        Some("SESSION HISTORY (1 previous run on this site):")
    );
    assert_eq!(session_history(&[]), "");
}

#[test]
fn knowledge_confidence_rules() {
    let mut facts = Vec::new();
    observe_fact(&mut facts, FactKind::Quirk, "modal", "shadow dom", "t1");
    assert_eq!((facts[0].confidence, facts[0].sources), (0.6, 1));
    for _ in 0..200 {
        observe_fact(&mut facts, FactKind::Quirk, "modal", "shadow dom", "t2");
    }
    assert!(
        facts[0].confidence > 0.9999 && facts[0].confidence <= 1.0,
        "approaches 1, never above"
    );
    assert_eq!(facts[0].sources, 201);
    // Repeated contradictions halve the old value until it is pruned below 0.1.
    for value in ["a", "b", "c", "d"] {
        observe_fact(&mut facts, FactKind::Quirk, "modal", value, "t3");
    }
    let values: Vec<&str> = facts.iter().map(|f| f.value.as_str()).collect();
    assert_eq!(
        values,
        ["b", "c", "d"],
        "shadow dom fell to 0.0625 and a to 0.075"
    );
}

#[test]
fn selectors_rank_by_count_then_insertion() {
    let mut entries: Vec<SelectorEntry> = Vec::new();
    for i in 0..25 {
        record_selector(
            &mut entries,
            &format!("button \"b{i}\""),
            &format!("@r{i}"),
            "t",
        );
    }
    record_selector(&mut entries, "button \"b24\"", "[data-testid=\"x\"]", "t2");
    let text = known_selectors(&entries);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 21);
    assert_eq!(
        lines[1],
        "  - button \"b24\" → [data-testid=\"x\"] (used 2x)"
    );
    assert_eq!(lines[2], "  - button \"b0\" → @r0 (used 1x)");
    assert_eq!(
        entries[24].last_ref.as_deref(),
        Some("@r24"),
        "a stable selector keeps the last ref"
    );
}

#[test]
fn run_registry_lists_filters_and_limits() {
    let store = InMemoryStore::new();
    let clock = ManualClock::new(NOW);
    let ids = SeededIds::new(3);
    let registry = RunRegistry::new(&store, Scope::shared(), &clock, &ids);
    let id = generate_run_id(NOW, &ids);
    assert!(
        id.starts_with("run_1767225600000_") && id.len() == "run_1767225600000_".len() + 6,
        "{id}"
    );
    assert_eq!(session_run_id("proj_1", NOW), "proj_1_1767225600000");
    for i in 0..6 {
        clock.advance(1000);
        let run_id = format!("r{i}");
        registry
            .start(
                RunStart::new(run_id.clone(), "g", format!("d{}", i % 3))
                    .with_session_id(format!("s{}", i % 2)),
            )
            .expect("start");
        if i % 2 == 0 {
            registry
                .complete(&run_id, agent_memory_browser::RunOutcome::new(i == 0, 0))
                .expect("complete");
        }
    }
    let ids_of = |filter: RunFilter| -> Vec<String> {
        registry
            .list(&filter)
            .expect("list")
            .into_iter()
            .map(|m| m.run_id)
            .collect()
    };
    assert_eq!(
        ids_of(RunFilter::default()),
        ["r5", "r4", "r3", "r2", "r1", "r0"]
    );
    assert_eq!(
        ids_of(RunFilter {
            domain: Some("d0".into()),
            ..Default::default()
        }),
        ["r3", "r0"]
    );
    assert_eq!(
        ids_of(RunFilter {
            session_id: Some("s1".into()),
            limit: Some(2),
            ..Default::default()
        }),
        ["r5", "r3"]
    );
    assert_eq!(
        ids_of(RunFilter {
            status: Some(RunStatus::Failed),
            ..Default::default()
        }),
        ["r4", "r2"]
    );
    assert!(registry.resume("missing", None).is_err());
    let fork = registry.fork("r1", "other").expect("fork");
    assert!(
        fork.session_id
            .as_deref()
            .is_some_and(|s| s.starts_with("fork_1767225606000_"))
    );
}

fn turn(action: &str, snapshot: &str) -> Turn {
    Turn {
        url: "https://shop.test/".into(),
        snapshot: snapshot.into(),
        action: action.into(),
        duration_ms: 10,
        ..Turn::default()
    }
}

#[test]
fn facts_are_extracted_from_successful_runs_only() {
    let turns = vec![
        turn(
            r#"{"action":"navigate","url":"https://shop.test/s?q=watch&page=2"}"#,
            "",
        ),
        turn(r#"{"action":"wait","ms":500}"#, ""),
        turn(
            r#"{"action":"click","selector":"@c1"}"#,
            "dialog: Accept cookies",
        ),
        turn(r#"{"action":"type","selector":"@t1","text":"a"}"#, ""),
        turn(r#"{"action":"type","selector":"@t2","text":"b"}"#, ""),
    ];
    let facts: Vec<(FactKind, String, String)> = extract_facts(&turns, "shop.test", true)
        .into_iter()
        .map(|f| (f.kind, f.key, f.value))
        .collect();
    let expected = [
        (FactKind::Pattern, "cookie-dismiss", "Turn 3: click @c1"),
        (
            FactKind::Timing,
            "first-meaningful-action",
            "Turn 3 (2 setup turns)",
        ),
        (FactKind::Pattern, "search-url", "/s?q={value}&page={value}"),
        (FactKind::Timing, "typical-turns", "5 turns"),
        (FactKind::Selector, "form-fields", "@t1 → @t2"),
    ];
    let expected: Vec<(FactKind, String, String)> = expected
        .iter()
        .map(|(k, a, b)| (*k, a.to_string(), b.to_string()))
        .collect();
    assert_eq!(facts, expected);
    assert!(extract_facts(&turns, "shop.test", false).is_empty());
}

#[test]
fn replay_needs_085_steps_and_the_exact_origin() {
    let store = InMemoryStore::new();
    let scope = Scope::shared();
    let make = |id: &str, goal: &str, origin: &str, steps: usize| Trajectory {
        id: id.into(),
        goal: goal.into(),
        origin: Some(origin.into()),
        steps: (0..steps)
            .map(|_| TrajectoryStep {
                url: "u".into(),
                action: "{}".into(),
                snapshot_hash: "0".into(),
                verified: true,
                expected_effect: None,
            })
            .collect(),
        success: true,
        duration_ms: 1,
        model: "m".into(),
        timestamp: agent_memory_browser::compat::iso(NOW),
        recorded_at: Some(NOW),
        provenance: None,
    };
    for t in [
        make(
            "empty",
            "open the billing settings page now",
            "https://a.test",
            0,
        ),
        make(
            "other-site",
            "open the billing settings page now",
            "https://b.test",
            2,
        ),
        make(
            "close",
            "open the billing settings page",
            "https://a.test",
            2,
        ),
    ] {
        store
            .trajectory_put(&scope, &t, &tokenize(&t.goal))
            .expect("put");
    }
    let options = MatchOptions::default();
    let found = |goal: &str| {
        find_replayable(&store, &scope, goal, "https://a.test/x", &options, NOW)
            .expect("replay")
            .map(|m| m.trajectory.id)
    };
    // 5/6 = 0.83 is below 0.85; the identical goal has no steps.
    assert_eq!(found("open the billing settings page now"), None);
    assert_eq!(
        found("open the billing settings page").as_deref(),
        Some("close")
    );
}

#[test]
fn recording_a_run_feeds_every_layer() {
    let store = InMemoryStore::new();
    let clock = ManualClock::new(NOW);
    let ids = SeededIds::new(9);
    let memory = BrowserMemory::new(&store, Scope::shared(), &clock, &ids);
    let turns = vec![
        turn(r#"{"action":"click","selector":"@c1"}"#, "cookie banner"),
        turn(r#"{"action":"type","selector":"@t1","text":"x"}"#, ""),
        turn(r#"{"action":"complete","result":"done"}"#, ""),
    ];
    let saved = memory
        .record_run(
            &RunReport::new("find the x", "https://shop.test:8443/")
                .with_turns(turns)
                .with_success(true)
                .with_outcome("done")
                .with_selectors(vec![("button \"Go\"".into(), "@b1".into())]),
        )
        .expect("record");
    assert_eq!(saved.steps.len(), 2, "complete is not a step");
    assert_eq!(saved.origin.as_deref(), Some("https://shop.test:8443"));
    let site = memory
        .site("https://shop.test:8443/other")
        .expect("site")
        .expect("recorded");
    assert_eq!(site.site, "shop.test_8443");
    assert_eq!(site.sessions.len(), 1);
    assert_eq!(site.selectors.len(), 1);
    assert!(site.facts.iter().any(|f| f.key == "cookie-dismiss"));
}

#[test]
fn an_action_that_is_not_a_json_object_is_refused_and_nothing_is_stored() {
    let store = InMemoryStore::new();
    let clock = ManualClock::new(NOW);
    let ids = SeededIds::new(9);
    let memory = BrowserMemory::new(&store, Scope::shared(), &clock, &ids);
    for (bad, why) in [
        ("click the buy button", "is not JSON"),
        (r#""click""#, "is another JSON value"),
        (r#"["click"]"#, "is another JSON value"),
    ] {
        let turns = vec![
            turn(r#"{"action":"click","selector":"@c1"}"#, ""),
            turn(bad, ""),
        ];
        let error = memory
            .record_run(
                &RunReport::new("buy", "https://shop.test/")
                    .with_turns(turns)
                    .with_success(true),
            )
            .expect_err(bad);
        let message = error.to_string();
        assert!(
            message.starts_with("invalid turns[1].action: must be the JSON text of an object")
                && message.contains(why),
            "{bad}: {message}"
        );
        assert!(
            store
                .trajectory_list(&Scope::shared())
                .expect("list")
                .is_empty(),
            "{bad}: nothing stored"
        );
        assert!(memory.site("https://shop.test/").expect("site").is_none());
    }
}

#[test]
fn hints_reproduce_the_reference_sample() {
    use agent_memory_browser::{EvaluatedRun, generate_hints};
    let click = |error: Option<&str>| Turn {
        action: r#"{"action":"click","selector":"@b3c4"}"#.into(),
        error: error.map(str::to_owned),
        ..Turn::default()
    };
    let runs = [
        EvaluatedRun {
            name: "c1".into(),
            goal: "add to cart".into(),
            turns: vec![
                click(None),
                click(Some("Stale ref @b3c4")),
                click(Some("timeout")),
                click(None),
            ],
            agent_success: true,
            verified: false,
            verdict: Some("cart is empty".into()),
            turns_used: 4,
            ..EvaluatedRun::default()
        },
        EvaluatedRun {
            name: "c2".into(),
            goal: "search".into(),
            turns: vec![click(Some("detached")), click(None)],
            agent_success: true,
            verified: true,
            turns_used: 2,
            ..EvaluatedRun::default()
        },
    ];
    let sample =
        std::fs::read_to_string(crate::support::reference_dir().join("agent-memory/hints.json"))
            .expect("hints");
    let sample: serde_json::Value = serde_json::from_str(&sample).expect("json");
    assert_eq!(
        generate_hints(&runs),
        sample["hints"].as_str().expect("text")
    );
    assert_eq!(generate_hints(&[]), "");
}

#[test]
fn fact_reads_default_to_030_and_selectors_accumulate() {
    let store = InMemoryStore::new();
    let clock = ManualClock::new(NOW);
    let ids = SeededIds::new(2);
    let memory = BrowserMemory::new(&store, Scope::shared(), &clock, &ids);
    let url = "https://app.test/login";
    memory
        .record_fact(url, FactKind::Timing, "load", "2s")
        .expect("fact");
    memory
        .record_fact(url, FactKind::Timing, "load", "4s")
        .expect("fact");
    memory
        .record_fact(url, FactKind::Timing, "load", "6s")
        .expect("fact");
    // 2s: 0.6 -> 0.3 -> 0.15; 4s: 0.6 -> 0.3; 6s: 0.6.
    let values = |min: Option<f64>| -> Vec<String> {
        memory
            .facts(url, min)
            .expect("facts")
            .into_iter()
            .map(|f| f.value)
            .collect()
    };
    assert_eq!(values(None), ["4s", "6s"]);
    assert_eq!(values(Some(0.1)), ["2s", "4s", "6s"]);
    memory
        .record_selector(url, "button \"Log in\"", "@l1")
        .expect("selector");
    memory
        .record_selector(url, "button \"Log in\"", "[data-testid=login]")
        .expect("selector");
    let site = memory.site(url).expect("site").expect("recorded");
    assert_eq!(site.selectors[0].success_count, 2);
    memory.save_hints("FEEDBACK").expect("hints");
}

/// An imported `knowledge.json` may hold more sessions than a recorded run leaves (here six,
/// plus an old `type: "session"` fact migrated next to them): the import keeps every one, in
/// file order, as the reference keeps what it loads, so an export reads back the same; the
/// bound of five applies when the next run records its session.
#[test]
fn an_import_keeps_every_session_of_a_site_until_a_run_records_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let site = dir.path().join("domains").join("site.test");
    std::fs::create_dir_all(&site).expect("site dir");
    let sessions: Vec<serde_json::Value> = (1..=6)
        .map(|hour| {
            serde_json::json!({
                "id": format!("s{hour}"), "goal": format!("goal {hour}"), "outcome": "done",
                "success": true, "finalUrl": "https://site.test/", "turnsUsed": 1,
                "timestamp": format!("2026-03-15T0{hour}:00:00.000Z"), "durationMs": 1000,
            })
        })
        .collect();
    let knowledge = serde_json::json!({
        "domain": "https://site.test/",
        "facts": [{
            "type": "session", "key": "latest", "value": "an old run", "confidence": 0.6,
            "sources": 1, "lastSeen": "2026-03-15T09:00:00.000Z",
        }],
        "sessions": sessions,
        "updatedAt": "2026-03-15T09:00:00.000Z",
    });
    std::fs::write(site.join("knowledge.json"), knowledge.to_string()).expect("write");
    let store = InMemoryStore::new();
    let scope = Scope::shared();
    let root = agent_memory_browser::MemoryRoot::new(dir.path());
    agent_memory_browser::import_dir(&store, &scope, &root, NOW, None).expect("import");
    let stored = |store: &InMemoryStore| {
        agent_memory_core::store::browser::SiteMemoryStore::site_get(store, &scope, "site.test")
            .expect("read")
            .expect("site")
    };
    let memory = stored(&store);
    let kept: Vec<&str> = memory
        .sessions
        .iter()
        .map(|s| s.timestamp.as_str())
        .collect();
    assert_eq!(
        kept,
        vec![
            "2026-03-15T01:00:00.000Z",
            "2026-03-15T02:00:00.000Z",
            "2026-03-15T03:00:00.000Z",
            "2026-03-15T04:00:00.000Z",
            "2026-03-15T05:00:00.000Z",
            "2026-03-15T06:00:00.000Z",
            "2026-03-15T09:00:00.000Z",
        ]
    );
    assert_eq!(memory.sessions[6].outcome, "an old run");
    // Export, then import the export: the same seven sessions come back.
    let out = tempfile::tempdir().expect("temp dir");
    let exported = agent_memory_browser::MemoryRoot::new(out.path());
    agent_memory_browser::export_dir(&store, &scope, &exported).expect("export");
    let again = InMemoryStore::new();
    agent_memory_browser::import_dir(&again, &scope, &exported, NOW, None).expect("re-import");
    assert_eq!(stored(&again), memory);
    // The next recorded session applies the bound: the newest five by timestamp remain.
    let mut log = memory.sessions.clone();
    agent_memory_core::store::browser::append_session(
        &mut log,
        agent_memory_core::store::browser::SessionEntry {
            timestamp: "2026-03-15T10:00:00.000Z".to_owned(),
            ..memory.sessions[0].clone()
        },
    );
    let newest: Vec<&str> = log.iter().map(|s| s.timestamp.as_str()).collect();
    assert_eq!(
        newest,
        vec![
            "2026-03-15T10:00:00.000Z",
            "2026-03-15T09:00:00.000Z",
            "2026-03-15T06:00:00.000Z",
            "2026-03-15T05:00:00.000Z",
            "2026-03-15T04:00:00.000Z",
        ]
    );
}
