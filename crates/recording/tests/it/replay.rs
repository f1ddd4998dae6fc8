//! The replay rules: the analysis before the run, resolution at dispatch time, resuming from
//! the writes so far, and secrets staying masked for the whole replay.

use agent_memory_recording::{
    Action, Dispatch, Error, MemoryWrites, MissingKeys, ReplayOptions, Replayer, Seeds, Trail,
};
use serde_json::json;

fn trail(text: &str) -> Trail {
    Trail::from_yaml_str(text, "replay.trail.yaml").unwrap_or_else(|e| panic!("{e}"))
}

fn replayer<'t>(trail: &'t Trail, seeds: &Seeds) -> Replayer<'t> {
    Replayer::new(trail, "android", seeds, ReplayOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The analysis of `text` under `seeds`, one `key step tool path` per token.
fn analysis(text: &str, seeds: &Seeds) -> Vec<String> {
    let trail = trail(text);
    replayer(&trail, seeds)
        .analysis()
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|m| {
            format!(
                "{} {} {} {}",
                m.key,
                m.step.unwrap_or(usize::MAX),
                m.tool.as_deref().unwrap_or("-"),
                m.path
            )
        })
        .collect()
}

fn call(dispatch: &Dispatch) -> (&str, &serde_json::Value) {
    match &dispatch.action {
        Action::Call(call) => (call.tool.as_str(), &call.parameters),
        Action::Agent => ("agent", &serde_json::Value::Null),
    }
}

const WRITERS: &str = "\
trail:
- step: Remember the order number
  recording:
    android:
    - rememberText:
        prompt: the order number
        variable: order_id
- step: Search for it
  recording:
    android:
    - inputText:
        text: ${order_id} ${other}
- step: Load an account
  recording:
    android:
    - merchantFactory_load: {}
- step: Sign in
  recording:
    android:
    - signIn:
        email: '{{memory.merchant_email}}'
        who: ${args.who}
";

#[test]
fn the_analysis_trusts_earlier_known_writers_only_for_what_they_write() {
    // `rememberText` writes `order_id`, not `other`; `merchantFactory_*` may write any key;
    // an argument is never written by a tool.
    assert_eq!(
        analysis(WRITERS, &Seeds::new()),
        [
            "other 1 inputText trail[1].recording.android[0].inputText.text",
            "args.who 3 signIn trail[3].recording.android[0].signIn.who",
        ]
    );
    // A value given before the run resolves it.
    assert_eq!(
        analysis(WRITERS, &Seeds::new().with_memory("other", "x")),
        ["args.who 3 signIn trail[3].recording.android[0].signIn.who"]
    );
    // A writer's own parameters cannot use what it writes, and a later writer does not help.
    let late = "\
trail:
- step: a
  recording:
    android:
    - rememberText:
        prompt: ${order_id}
        variable: order_id
    - inputTextRandom:
        variable: later
";
    assert_eq!(
        analysis(late, &Seeds::new()),
        ["order_id 0 rememberText trail[0].recording.android[0].rememberText.prompt"]
    );
    // A step the agent drives writes nothing the analysis can count on.
    let agent = "\
trail:
- step: the agent remembers it
- step: b
  recording:
    android:
    - inputText:
        text: ${order_id}
";
    assert_eq!(
        analysis(agent, &Seeds::new()),
        ["order_id 1 inputText trail[1].recording.android[0].inputText.text"]
    );
}

#[test]
fn each_call_is_resolved_when_it_is_dispatched() {
    let trail = trail(WRITERS);
    let seeds = Seeds::new().with_memory("other", "x");
    let mut replay = Replayer::new(
        &trail,
        "android-phone",
        &seeds,
        ReplayOptions::default().with_missing(MissingKeys::Leave),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut seen = Vec::new();
    let writes = [
        MemoryWrites::new().set("order_id", "A-1"),
        MemoryWrites::new(),
        MemoryWrites::new().set("merchant_email", "new@example.com"),
        MemoryWrites::new(),
    ];
    for writes in writes {
        let dispatch = replay
            .next_dispatch()
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("a dispatch"));
        let again = replay.next_dispatch().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            again.as_ref(),
            Some(&dispatch),
            "asking twice gives the same dispatch"
        );
        let (tool, params) = call(&dispatch);
        seen.push(format!("{tool} {params}"));
        replay.complete(writes).unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(
        seen,
        [
            r#"rememberText {"prompt":"the order number","variable":"order_id"}"#,
            r#"inputText {"text":"A-1 x"}"#,
            "merchantFactory_load {}",
            r#"signIn {"email":"new@example.com","who":"${args.who}"}"#,
        ]
    );
    assert!(replay.is_finished());
    assert!(matches!(
        replay.complete(MemoryWrites::new()),
        Err(Error::ReplayFinished { dispatches: 4 })
    ));
}

#[test]
fn a_token_still_missing_at_dispatch_fails_with_its_place_by_default() {
    let trail = trail(WRITERS);
    let mut replay = replayer(&trail, &Seeds::new().with_memory("other", "x"));
    replay
        .complete(MemoryWrites::new())
        .unwrap_or_else(|e| panic!("{e}"));
    // `rememberText` reported no write: the analysis trusted it, the dispatch cannot.
    let err = replay
        .next_dispatch()
        .expect_err("order_id was never written");
    let Error::Unresolved { missing } = &err else {
        panic!("{err}")
    };
    assert_eq!(missing[0].key, "order_id");
    assert_eq!(missing[0].step, Some(1));
    assert_eq!(missing[0].tool.as_deref(), Some("inputText"));
    assert_eq!(
        err.to_string(),
        r#"unresolved memory keys: "order_id" at trail[1].recording.android[0].inputText.text"#
    );
}

#[test]
fn resuming_from_the_writes_so_far_gives_the_same_next_dispatch() {
    let trail = trail(WRITERS);
    let seeds = Seeds::new().with_memory("other", "x");
    let options = ReplayOptions::default().with_missing(MissingKeys::Leave);
    let mut live =
        Replayer::new(&trail, "android", &seeds, options.clone()).unwrap_or_else(|e| panic!("{e}"));
    let writes = [
        MemoryWrites::new()
            .set("order_id", "A-1")
            .secret("pin", "9999zq"),
        MemoryWrites::new().delete("pin"),
        MemoryWrites::new().set("merchant_email", "new@example.com"),
    ];
    for (done, writes) in writes.into_iter().enumerate() {
        let resumed =
            Replayer::resume(&trail, "android", &seeds, options.clone(), live.completed())
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            resumed.next_dispatch().unwrap_or_else(|e| panic!("{e}")),
            live.next_dispatch().unwrap_or_else(|e| panic!("{e}")),
            "after {done} dispatch(es)"
        );
        live.complete(writes).unwrap_or_else(|e| panic!("{e}"));
    }
    // The writes round-trip through their JSON form, the state a stateless server keeps.
    let json: Vec<serde_json::Value> = live.completed().iter().map(MemoryWrites::to_json).collect();
    let back: Vec<MemoryWrites> = json
        .iter()
        .map(|j| MemoryWrites::from_json(j).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    assert_eq!(back, live.completed());
    let too_many = vec![MemoryWrites::new(); 5];
    assert!(matches!(
        Replayer::resume(&trail, "android", &seeds, options, &too_many),
        Err(Error::ReplayFinished { dispatches: 4 })
    ));
}

#[test]
fn secrets_stay_masked_for_the_whole_replay() {
    let text = "\
trail:
- step: a
  recording:
    android:
    - load: {}
    - use:
        pin: ${pin}
        again: 'pin ${pin}, token ${token}'
    - after: {note: old pin 9999zq}
";
    let trail = trail(text);
    let seeds = Seeds::new().with_secret("token", "tok-5555zq");
    let mut replay = replayer(&trail, &seeds);
    replay
        .complete(MemoryWrites::new().secret("pin", "9999zq"))
        .unwrap_or_else(|e| panic!("{e}"));
    let dispatch = replay
        .next_dispatch()
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("a dispatch"));
    let (_, params) = call(&dispatch);
    assert_eq!(
        *params,
        json!({"pin": "9999zq", "again": "pin 9999zq, token tok-5555zq"})
    );
    let shown = serde_json::to_value(&dispatch).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        shown["parameters"],
        json!({"pin": "${pin}", "again": "pin ${pin}, token ${token}"})
    );
    assert_eq!(shown["masked"], json!(["pin", "token"]));
    assert!(!format!("{dispatch:?}").contains("9999zq"), "{dispatch:?}");
    // A plain write to a sensitive key stays sensitive; a deleted secret stays masked.
    replay
        .complete(MemoryWrites::new().set("pin", "1111zq").delete("token"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(replay.memory().is_sensitive("pin"));
    assert_eq!(
        replay.mask(&json!("1111zq 9999zq tok-5555zq")),
        json!("${pin} ${pin} ${token}")
    );
    let last = replay
        .next_dispatch()
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("a dispatch"));
    let shown = serde_json::to_string(&last).unwrap_or_else(|e| panic!("{e}"));
    assert!(shown.contains("old pin ${pin}"), "{shown}");
}

#[test]
fn memory_writes_errors_name_the_field_and_never_the_value() {
    for (input, message) in [
        (
            json!([1]),
            "memory writes: memory writes are a JSON object with `set`, `secrets` and `delete`, not a list",
        ),
        (
            json!({"secrets": {"pin": 9999}}),
            "memory writes: `secrets.pin` must be a string, not a number",
        ),
        (
            json!({"set": "x"}),
            "memory writes: `set` is an object of keys to strings, not a string",
        ),
        (
            json!({"delete": [true]}),
            "memory writes: `delete[0]` is a key (a string), not a boolean",
        ),
        (json!({"sets": {}}), "memory writes: unknown field \"sets\""),
    ] {
        let err = MemoryWrites::from_json(&input).expect_err(message);
        assert!(err.to_string().starts_with(message), "{err}");
        assert!(!err.to_string().contains("9999"), "{err}");
    }
}

#[test]
fn no_device_is_refused_when_the_trail_has_recordings() {
    let with = trail(WRITERS);
    assert!(matches!(
        Replayer::new(&with, " ", &Seeds::new(), ReplayOptions::default()),
        Err(Error::NoDevice)
    ));
    let without = trail("trail:\n- step: the agent does it\n");
    let replay = Replayer::new(&without, "", &Seeds::new(), ReplayOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(replay.len(), 1);
}

#[test]
fn legacy_trails_replay_their_trailhead_first() {
    let text = "\
- config:
    memory:
      app: com.example
- trailhead: launch
- tools:
  - open:
      app: ${app}
- prompts:
  - step: do it
    recordable: false
    recording:
      tools:
      - never: {}
  - verify: it is done
    recording:
      tools: []
";
    let trail = trail(text);
    let mut replay = replayer(&trail, &Seeds::new());
    let mut seen = Vec::new();
    while let Some(dispatch) = replay.next_dispatch().unwrap_or_else(|e| panic!("{e}")) {
        let (tool, params) = call(&dispatch);
        seen.push(format!("{} {tool} {params}", dispatch.step));
        replay
            .complete(MemoryWrites::new())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    // `recordable: false` is driven by the agent; the empty recording is a no-op.
    assert_eq!(
        seen,
        [
            "0 launch {}",
            r#"1 open {"app":"com.example"}"#,
            "2 agent null"
        ]
    );
    assert_eq!(replay.outline().len(), 4);
}
