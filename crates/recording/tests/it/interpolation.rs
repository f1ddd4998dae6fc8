//! Trailblaze's interpolation tests (`AgentMemoryTest`, `AgentMemoryArgsTest`), ported as one
//! table: each case seeds a replay as Trailblaze seeds its memory (trail `config.memory`, then
//! values, then secrets, then the trail's arguments) and resolves one call whose parameters
//! are the case's input.

use std::collections::BTreeMap;

use agent_memory_recording::{Action, MissingKeys, ReplayOptions, Replayer, Seeds, Trail};
use serde_json::{Value, json};

/// One ported case.
struct Case {
    /// The Kotlin test it comes from.
    test: &'static str,
    /// `config.memory` of the trail.
    trail_memory: &'static [(&'static str, &'static str)],
    /// Plain values.
    memory: &'static [(&'static str, &'static str)],
    /// Secrets.
    secrets: &'static [(&'static str, &'static str)],
    /// Declared arguments, each with the value given (its type is the value's JSON type).
    args: Value,
    /// Unknown tokens become empty strings (Trailblaze's kill-switch) instead of staying.
    blank_unknown: bool,
    /// The call's parameters.
    input: Value,
    /// The resolved parameters, or the text the error must contain.
    expected: Result<Value, &'static str>,
}

const NONE: &[(&str, &str)] = &[];

fn case(test: &'static str, input: Value, expected: Value) -> Case {
    Case {
        test,
        trail_memory: NONE,
        memory: NONE,
        secrets: NONE,
        args: json!({}),
        blank_unknown: false,
        input,
        expected: Ok(expected),
    }
}

impl Case {
    fn memory(mut self, memory: &'static [(&'static str, &'static str)]) -> Self {
        self.memory = memory;
        self
    }

    fn trail_memory(mut self, memory: &'static [(&'static str, &'static str)]) -> Self {
        self.trail_memory = memory;
        self
    }

    fn secrets(mut self, secrets: &'static [(&'static str, &'static str)]) -> Self {
        self.secrets = secrets;
        self
    }

    fn args(mut self, args: Value) -> Self {
        self.args = args;
        self
    }

    fn blank(mut self) -> Self {
        self.blank_unknown = true;
        self
    }

    fn fails(mut self, needle: &'static str) -> Self {
        self.expected = Err(needle);
        self
    }
}

fn arg_type(value: &Value) -> &'static str {
    match value {
        Value::Bool(_) => "boolean",
        Value::Number(_) => "integer",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        _ => "string",
    }
}

/// A trail declaring the case's memory and arguments, with one call `probe` of `input`.
fn trail_of(case: &Case) -> Trail {
    let mut config = serde_json::Map::new();
    if !case.trail_memory.is_empty() {
        let memory: serde_json::Map<String, Value> = case
            .trail_memory
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        config.insert("memory".to_owned(), Value::Object(memory));
    }
    if let Value::Object(args) = &case.args
        && !args.is_empty()
    {
        let declared: serde_json::Map<String, Value> = args
            .iter()
            .map(|(name, value)| (name.clone(), json!(arg_type(value))))
            .collect();
        config.insert("args".to_owned(), Value::Object(declared));
    }
    let document = json!({
        "config": config,
        "trail": [{"step": "probe", "recording": {"android": [{"probe": case.input}]}}],
    });
    let text = serde_yaml::to_string(&document).unwrap_or_else(|e| panic!("{e}"));
    Trail::from_yaml_str(&text, case.test).unwrap_or_else(|e| panic!("{}: {e}\n{text}", case.test))
}

fn seeds_of(case: &Case) -> Seeds {
    let mut seeds = Seeds::new();
    for (k, v) in case.memory {
        seeds = seeds.with_memory(*k, *v);
    }
    for (k, v) in case.secrets {
        seeds = seeds.with_secret(*k, *v);
    }
    if let Value::Object(args) = &case.args {
        let given: BTreeMap<String, Value> =
            args.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        seeds.args = given;
    }
    seeds
}

fn check(case: &Case) {
    let trail = trail_of(case);
    let missing = if case.blank_unknown {
        MissingKeys::Empty
    } else {
        MissingKeys::Leave
    };
    let options = ReplayOptions::default().with_missing(missing);
    let resolved = Replayer::new(&trail, "android", &seeds_of(case), options).and_then(|replay| {
        let dispatch = replay.next_dispatch()?;
        match dispatch.map(|d| d.action) {
            Some(Action::Call(call)) => Ok(call.parameters),
            other => panic!("{}: expected the probe call, got {other:?}", case.test),
        }
    });
    match (&case.expected, resolved) {
        (Ok(expected), Ok(got)) => assert_eq!(&got, expected, "{}", case.test),
        (Err(needle), Err(e)) => {
            assert!(e.to_string().contains(needle), "{}: {e}", case.test);
        }
        (Ok(_), Err(e)) => panic!("{}: {e}", case.test),
        (Err(needle), Ok(got)) => panic!(
            "{}: expected an error with {needle:?}, got {got}",
            case.test
        ),
    }
}

#[test]
fn trailblaze_interpolation_cases() {
    let ada = &[("first", "Ada"), ("last", "Lovelace")];
    let known = &[("known", "V")];
    let cases = [
        // AgentMemoryTest
        case("substitutes both syntaxes", json!("{{first}} ${last}"), json!("Ada Lovelace"))
            .memory(ada),
        case(
            "JSON resolves nested objects and arrays and passes non-strings through",
            json!({"email": "${email}", "nested": {"who": "{{email}}"}, "list": ["id=${id}", "literal"], "count": 7, "flag": true, "nothing": null}),
            json!({"email": "merchant@example.com", "nested": {"who": "merchant@example.com"}, "list": ["id=42", "literal"], "count": 7, "flag": true, "nothing": null}),
        )
        .memory(&[("email", "merchant@example.com"), ("id", "42")]),
        case("JSON is a no-op when memory is empty", json!({"email": "${email}"}), json!({"email": "${email}"})),
        case(
            "leaves unknown tokens in place as literals",
            json!("{{known}} {{nope}} ${also_nope}"),
            json!("V {{nope}} ${also_nope}"),
        )
        .memory(known),
        case("leaves unknown tokens in place when memory is empty", json!("hi {{nope}} world"), json!("hi {{nope}} world")),
        case("blank-unknown mode resolves unknown tokens to empty string", json!("{{known}} {{nope}} world"), json!("V  world"))
            .memory(known)
            .blank(),
        case("single-pass: a resolved value containing a token is not re-resolved", json!("{{a}}"), json!("{{b}}"))
            .memory(&[("a", "{{b}}"), ("b", "x")]),
        case(
            "JSON leaves unknown tokens as literals when memory is non-empty",
            json!({"resolved": "${known}", "typo": "{{knwon}}", "nested": {"inner": "id=${missing}"}}),
            json!({"resolved": "V", "typo": "{{knwon}}", "nested": {"inner": "id=${missing}"}}),
        )
        .memory(known),
        case("memory-prefixed tokens resolve identically to bare tokens", json!("{{memory.first}} ${memory.last}"), json!("Ada Lovelace"))
            .memory(ada),
        case("memory-prefixed unknown token behaves like a bare unknown token", json!("[{{memory.nope}}]"), json!("[{{memory.nope}}]"))
            .memory(known),
        case("memory-prefixed unknown token when memory is empty", json!("[${memory.nope}]"), json!("[${memory.nope}]")),
        case("memory-prefixed token resolves a sensitive key", json!("{{memory.pin}} {{pin}}"), json!("1234 1234"))
            .secrets(&[("pin", "1234")]),
        case("memory-prefixed token falls back to a key literally named with the prefix", json!("{{memory.foo}}"), json!("literal-value"))
            .memory(&[("memory.foo", "literal-value")]),
        case(
            "memory-prefixed token prefers the stripped key when both exist",
            json!(["{{memory.foo}}", "{{foo}}"]),
            json!(["stripped-value", "stripped-value"]),
        )
        .memory(&[("foo", "stripped-value"), ("memory.foo", "literal-value")]),
        case("single-pass holds for memory-prefixed tokens", json!("{{memory.a}}"), json!("{{memory.b}}"))
            .memory(&[("a", "{{memory.b}}"), ("b", "x")]),
        case(
            "JSON resolves memory-prefixed tokens in nested structures",
            json!({"dollar": "${memory.email}", "nested": {"curly": "{{memory.email}}"}}),
            json!({"dollar": "merchant@example.com", "nested": {"curly": "merchant@example.com"}}),
        )
        .memory(&[("email", "merchant@example.com")]),
        case(
            "seeded values, sensitive ones included, resolve through tokens (values win over config.memory)",
            json!("{{user}} signs in with {{password}}"),
            json!("sam signs in with hunter2"),
        )
        .trail_memory(&[("user", "ci-default")])
        .memory(&[("user", "sam")])
        .secrets(&[("password", "hunter2")]),
        case(
            "a sensitive seed wins over the same key in config.memory and values",
            json!("{{token}}"),
            json!("the-real-secret"),
        )
        .trail_memory(&[("token", "yaml-default")])
        .memory(&[("token", "cli-non-secret")])
        .secrets(&[("token", "the-real-secret")]),
        case(
            "once seeded, an unknown token still survives as a literal",
            json!({"url": "https://example.com/{{not-a-var}}"}),
            json!({"url": "https://example.com/{{not-a-var}}"}),
        )
        .memory(&[("user", "sam")]),
        // AgentMemoryArgsTest
        case("whole-scalar integer arg substitutes the native JSON number", json!("{{args.retries}}"), json!(3))
            .args(json!({"retries": 3})),
        case("whole-scalar boolean arg substitutes the native JSON boolean", json!("{{args.verbose}}"), json!(true))
            .args(json!({"verbose": true})),
        case("whole-scalar string arg stays a string", json!("${args.recipient}"), json!("alice@example.com"))
            .args(json!({"recipient": "alice@example.com"})),
        case("embedded arg token renders the scalar as text", json!("retry {{args.retries}} times"), json!("retry 3 times"))
            .args(json!({"retries": 3})),
        case("dotted sub-path resolves into an object arg", json!("{{args.reply_to.email}}"), json!("a@b.com"))
            .args(json!({"reply_to": {"email": "a@b.com"}})),
        case("plain string interpolation renders an embedded arg", json!("Hi {{args.name}}"), json!("Hi Ada"))
            .args(json!({"name": "Ada"})),
        case(
            "args and memory namespaces resolve independently",
            json!(["{{memory.email}}", "{{args.email}}", "{{email}}"]),
            json!(["mem@example.com", "arg@example.com", "mem@example.com"]),
        )
        .memory(&[("email", "mem@example.com")])
        .args(json!({"email": "arg@example.com"})),
        case("an expression-bearing args token hard-errors", json!("x {{args.count + 1}}"), json!(null))
            .args(json!({"count": 1}))
            .fails("dotted paths only"),
        case("an expression-bearing whole-scalar args token hard-errors", json!("{{args.count | upper}}"), json!(null))
            .args(json!({"count": 1}))
            .fails("malformed args token {{args.count | upper}} at trail[0].recording.android[0].probe"),
        case("an unknown args reference is left as a literal", json!("{{args.unknown}}"), json!("{{args.unknown}}"))
            .args(json!({"known": "v"})),
        case("a deferred whole-scalar array arg stays a literal token", json!("{{args.items}}"), json!("{{args.items}}"))
            .args(json!({"items": ["a", "b"]})),
        case("a deferred whole-scalar object arg stays a literal token", json!("{{args.opts}}"), json!("{{args.opts}}"))
            .args(json!({"opts": {"verbose": true}})),
        case("a deferred embedded object arg stays a literal token", json!("config: {{args.opts}}"), json!("config: {{args.opts}}"))
            .args(json!({"opts": {"verbose": true}})),
        case("a deferred embedded array arg stays a literal token", json!("items: {{args.items}}"), json!("items: {{args.items}}"))
            .args(json!({"items": ["a", "b"]})),
        case(
            "a deferred array or object arg never blanks, even under the kill-switch",
            json!(["{{args.items}}", "{{args.opts}}"]),
            json!(["{{args.items}}", "{{args.opts}}"]),
        )
        .args(json!({"items": ["a"], "opts": {"verbose": true}}))
        .blank(),
        case(
            "unknown args and memory tokens blank alike under the kill-switch",
            json!(["{{args.unknown}}", "{{memory.unknown}}"]),
            json!(["", ""]),
        )
        .args(json!({"known": "v"}))
        .blank(),
        case(
            "unknown args and memory tokens stay alike by default",
            json!(["{{args.unknown}}", "{{memory.unknown}}"]),
            json!(["{{args.unknown}}", "{{memory.unknown}}"]),
        )
        .args(json!({"known": "v"})),
        case("a token-valued arg resolves against seeded memory", json!("{{args.recipient}}"), json!("seeded@example.com"))
            .memory(&[("email", "seeded@example.com")])
            .args(json!({"recipient": "{{memory.email}}"})),
        case(
            "a sibling-arg reference resolves fully whatever the order",
            json!(["{{args.subject}}", "{{args.a_subject}}"]),
            json!(["Re: seeded@example.com", "Re: seeded@example.com"]),
        )
        .memory(&[("email", "seeded@example.com")])
        .args(json!({"subject": "Re: {{args.recipient}}", "recipient": "{{memory.email}}", "a_subject": "Re: {{args.recipient}}"})),
        case("a sibling-arg reference cycle terminates and leaves a literal", json!("{{args.a}}"), json!("{{args.a}}"))
            .args(json!({"a": "{{args.b}}", "b": "{{args.a}}"})),
        case("an arg that captured a sensitive value still resolves", json!("{{args.vaultCode}}"), json!("9876"))
            .secrets(&[("pin", "9876")])
            .args(json!({"vaultCode": "{{memory.pin}}", "recipient": "alice@example.com"})),
        case("memory-only interpolation is unaffected when no args are seeded", json!(["Hi {{name}}", "Hi {{memory.name}}"]), json!(["Hi Ada", "Hi Ada"]))
            .memory(&[("name", "Ada")]),
    ];
    for case in &cases {
        check(case);
    }
    assert_eq!(cases.len(), 41);
}

/// The cycle case above must end with a token standing: whichever argument is read, the
/// resolution stops on a literal `{{args.…}}` rather than looping or blanking.
#[test]
fn an_argument_cycle_stabilizes_on_a_literal() {
    let case = case("cycle", json!(["{{args.a}}", "{{args.b}}"]), json!(null))
        .args(json!({"a": "{{args.b}}", "b": "{{args.a}}"}));
    let trail = trail_of(&case);
    let replay = Replayer::new(
        &trail,
        "android",
        &seeds_of(&case),
        ReplayOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for (_, value) in replay.args().iter() {
        let text = value.as_str().unwrap_or_default();
        assert!(text.starts_with("{{args."), "{text}");
    }
}

/// An argument that captured a secret is masked in what a replay shows, as Trailblaze hides
/// it from logs, even after the secret's own key is deleted.
#[test]
fn an_argument_that_captured_a_secret_is_masked_for_good() {
    let case = case(
        "laundered",
        json!({"code": "{{args.vaultCode}}", "to": "{{args.recipient}}"}),
        json!(null),
    )
    .secrets(&[("pin", "9876zq")])
    .args(json!({"vaultCode": "{{memory.pin}}", "recipient": "alice@example.com"}));
    let trail = trail_of(&case);
    let replay = Replayer::new(
        &trail,
        "android",
        &seeds_of(&case),
        ReplayOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let dispatch = replay
        .next_dispatch()
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("a dispatch"));
    let shown = serde_json::to_string(&dispatch).unwrap_or_else(|e| panic!("{e}"));
    assert!(!shown.contains("9876zq"), "{shown}");
    assert!(shown.contains(r#""code":"${pin}""#), "{shown}");
    assert!(shown.contains("alice@example.com"), "{shown}");
    let Action::Call(call) = &dispatch.action else {
        panic!("a call")
    };
    assert_eq!(
        call.parameters["code"], "9876zq",
        "the tool itself gets the value"
    );
}
