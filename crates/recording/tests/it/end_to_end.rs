//! The whole story on a SQLite file: a provisioning tool loads an account into memory, a
//! sign-in tool uses it, the generated recording holds tokens, and a second session with a
//! different account replays it with the new values. The password never reaches the log,
//! the database file or the recording.

use agent_memory_core::store::tool_log::ToolLogStore;
use agent_memory_core::{SessionId, Timestamp};
use agent_memory_recording::{
    Action, GenerationPolicy, Memory, MemoryWrites, Objective, Provenance, ReplayOptions, Replayer,
    Seeds, StepKind, ToolOutcome, Trail, capture, generate_recording,
};
use agent_memory_sqlite::SqliteStore;
use serde_json::{Value, json};

const CANARY: &str = "9999zq";

struct Account {
    email: &'static str,
    token: &'static str,
    password: &'static str,
}

const FIRST: Account = Account {
    email: "trailblaze+merchant.coffee-shop.abc123@example.com",
    token: "ML4XV8YWNMESK",
    password: "pw-9999zq-first",
};

const SECOND: Account = Account {
    email: "trailblaze+merchant.tea-house.xyz789@example.com",
    token: "QK2PL9ZZTRW4A",
    password: "pw-other-second",
};

fn load_account(memory: &mut Memory, account: &Account, at: Timestamp) {
    let writer = || Provenance::tool("merchantFactory_loadAccount", at);
    memory.remember("merchant_email", account.email, writer());
    memory.remember("merchant_token", account.token, writer());
    memory.remember_secret("merchant_password", account.password, writer());
    memory.remember("country", "US", Provenance::unknown(at));
}

fn outcome(at: i64, trace: &str) -> ToolOutcome {
    ToolOutcome::succeeded(40, Timestamp::from_millis(at)).with_trace(trace)
}

fn file_bytes(path: &std::path::Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {path:?}: {e}"));
    if let Ok(wal) = std::fs::read(path.with_extension("db-wal")) {
        bytes.extend(wal);
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Runs the first session: every call captured into `store`.
fn first_session(store: &SqliteStore, session: &SessionId) {
    let mut memory = Memory::new();
    let append = |tool: &str, params: Value, outcome: ToolOutcome, memory: &Memory, before| {
        let log = capture(
            session,
            tool,
            &params,
            &outcome,
            &memory.snapshot_after(before),
        )
        .unwrap_or_else(|e| panic!("capture {tool}: {e}"));
        store
            .append_tool_log(&log)
            .unwrap_or_else(|e| panic!("append {tool}: {e}"));
    };
    // Provisioning writes the account into memory; its own parameters do not come from it.
    let before = memory.keys();
    load_account(&mut memory, &FIRST, Timestamp::from_millis(1_000));
    append(
        "merchantFactory_loadAccount",
        json!({"account": "coffee-shop"}),
        outcome(1_000, "t1"),
        &memory,
        &before,
    );
    // The agent signs in with the literals it was shown.
    let before = memory.keys();
    let mut failed = outcome(2_000, "t2");
    failed.success = false;
    failed.error = Some(format!(
        "wrong password {} for {}",
        FIRST.password, FIRST.email
    ));
    let sign_in = json!({
        "email": FIRST.email,
        "password": FIRST.password,
        "token": FIRST.token,
        "country": "US",
        "retries": 3,
    });
    append(
        "myapp_ios_launchAppSignedIn",
        sign_in.clone(),
        failed,
        &memory,
        &before,
    );
    append(
        "myapp_ios_launchAppSignedIn",
        sign_in.clone(),
        outcome(3_000, "t3"),
        &memory,
        &before,
    );
    // The same execution logged twice, and a status tool that is not recorded.
    append(
        "myapp_ios_launchAppSignedIn",
        sign_in,
        outcome(3_000, "t3"),
        &memory,
        &before,
    );
    append(
        "objectiveStatus",
        json!({"status": "done"}),
        outcome(3_100, "t4"),
        &memory,
        &before,
    );
    append(
        "assertVisibleWithText",
        json!({"text": format!("Signed in as {}", FIRST.email)}),
        outcome(4_000, "t5"),
        &memory,
        &before,
    );
}

#[test]
fn recordings_survive_a_new_account_and_never_hold_the_password() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let path = dir.path().join("memory.db");
    let store = SqliteStore::open(&path).unwrap_or_else(|e| panic!("open: {e}"));
    let session = SessionId::new("first-run").unwrap_or_else(|e| panic!("{e}"));
    first_session(&store, &session);

    let logs = store
        .list_tool_logs(&session)
        .unwrap_or_else(|e| panic!("list: {e}"));
    assert_eq!(logs.len(), 6);
    for log in &logs {
        let text = format!("{log:?}");
        assert!(!text.contains(CANARY), "a log holds the password: {text}");
    }
    let bytes = file_bytes(&path);
    assert!(
        contains(&bytes, FIRST.email),
        "the check must be able to see values in the file"
    );
    assert!(
        !contains(&bytes, CANARY),
        "the database file holds the password"
    );

    let objectives = [
        Objective::new(
            StepKind::Step,
            "Load the coffee shop merchant",
            Timestamp::from_millis(500),
        ),
        Objective::new(
            StepKind::Step,
            "Launch the app signed in as the merchant",
            Timestamp::from_millis(1_500),
        ),
        Objective::new(
            StepKind::Verify,
            "The merchant's email is shown",
            Timestamp::from_millis(3_500),
        ),
        Objective::new(
            StepKind::Verify,
            "Nothing else to check",
            Timestamp::from_millis(9_000),
        ),
    ];
    let generated = generate_recording(
        &objectives,
        &logs,
        &GenerationPolicy::for_classifier("ios-iphone"),
    )
    .unwrap_or_else(|e| panic!("generate: {e}"));
    let yaml = generated
        .trail
        .to_yaml_string()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!yaml.contains(CANARY));
    assert!(
        yaml.contains("country: US"),
        "a short value stays literal:\n{yaml}"
    );
    let report: Vec<String> = generated
        .substitutions
        .iter()
        .map(ToString::to_string)
        .collect();
    insta::assert_snapshot!(
        "generated_recording",
        format!("{yaml}\n# substitutions\n{}", report.join("\n"))
    );

    decision_024_replay(&generated.trail);
}

/// The second run: memory starts empty, the recording's provisioning call loads another
/// account mid-replay, and the sign-in calls after it use that account. Every dispatch and
/// the writes reported for it form the snapshot; the password never appears in it.
fn decision_024_replay(trail: &Trail) {
    let mut replay = Replayer::new(trail, "ios-iphone", &Seeds::new(), ReplayOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let unresolved = replay.analysis().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        unresolved.is_empty(),
        "the provisioning tool writes the account before the sign-in: {unresolved:?}"
    );
    let mut transcript = Vec::new();
    let mut sign_ins = Vec::new();
    while let Some(dispatch) = replay.next_dispatch().unwrap_or_else(|e| panic!("{e}")) {
        let shown = serde_json::to_string(&dispatch).unwrap_or_else(|e| panic!("{e}"));
        let writes = match &dispatch.action {
            Action::Call(call) if call.tool == "merchantFactory_loadAccount" => MemoryWrites::new()
                .set("merchant_email", SECOND.email)
                .set("merchant_token", SECOND.token)
                .secret("merchant_password", SECOND.password),
            Action::Call(call) => {
                if call.tool == "myapp_ios_launchAppSignedIn" {
                    sign_ins.push(call.parameters.clone());
                }
                MemoryWrites::new()
            }
            Action::Agent => MemoryWrites::new(),
        };
        transcript.push(format!("-> {shown}\n<- {:?}", writes));
        replay.complete(writes).unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(
        sign_ins.len(),
        2,
        "the failed call and its retry are kept, the duplicate is not"
    );
    for params in &sign_ins {
        assert_eq!(
            *params,
            json!({"email": SECOND.email, "password": SECOND.password, "token": SECOND.token, "country": "US", "retries": 3})
        );
    }
    let transcript = transcript.join("\n");
    assert!(!transcript.contains(SECOND.password), "{transcript}");
    insta::assert_snapshot!("decision_024_replay", transcript);

    // Without the provisioning step, nothing writes the account: the analysis names every
    // token that cannot resolve, with its step, tool and path, before anything runs.
    let Trail::Unified(mut unified) = trail.clone() else {
        panic!("a generated trail is unified")
    };
    if let Some(steps) = unified.trail.as_mut() {
        steps.remove(0);
    }
    let without = Trail::Unified(unified);
    let replay = Replayer::new(
        &without,
        "ios-iphone",
        &Seeds::new(),
        ReplayOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let unresolved: Vec<String> = replay
        .analysis()
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|m| {
            format!(
                "step {} {}: {}",
                m.step.unwrap_or_default(),
                m.tool.as_deref().unwrap_or_default(),
                m
            )
        })
        .collect();
    insta::assert_snapshot!("unresolved_without_provisioning", unresolved.join("\n"));
}

#[test]
fn logs_without_a_snapshot_still_produce_recordings() {
    let log = agent_memory_core::testkit::tool_log::sample_log("old", "tapOn", 10);
    let objectives = [Objective::new(
        StepKind::Step,
        "tap",
        Timestamp::from_millis(100),
    )];
    // The log predates the only objective: an orphan, attached to the last step.
    let generated = generate_recording(
        &objectives,
        &[log],
        &GenerationPolicy::for_classifier("android"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let yaml = generated
        .trail
        .to_yaml_string()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        yaml,
        "config:\n  id: old\ntrail:\n- step: tap\n  recording:\n    android:\n    - tapOn:\n        at: 10\n"
    );
    assert!(generated.substitutions.is_empty());
}

#[test]
fn lint_finds_literals_that_will_go_stale() {
    let trail = agent_memory_recording::Trail::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/trailblaze-examples/unified-text-input.trail.yaml"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut memory = Memory::new();
    let at = Timestamp::from_millis(0);
    memory.remember(
        "user_name",
        "Jane Doe",
        Provenance::tool("testUser_create", at),
    );
    memory.remember(
        "user_email",
        "jane@example.com",
        Provenance::tool("testUser_create", at),
    );
    let findings = agent_memory_recording::lint_trail(
        &trail,
        &memory.snapshot(),
        &[],
        &agent_memory_recording::TemplatePolicy::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<String> = findings
        .iter()
        .map(|f| {
            format!(
                "{} {} ${{{}}} ({}, {:?})",
                f.location,
                f.found.name(),
                f.key,
                f.reason,
                f.origin
            )
        })
        .collect();
    insta::assert_snapshot!("lint_unified_text_input", lines.join("\n"));
}
