//! Every payload checked against the provider's request shape: a JSON Schema of each request
//! written from the provider's API reference (`tests/data/schemas/`), and, for what a schema
//! cannot say, Rust checks: roles alternate where the provider requires it, and every tool
//! call is answered by the next message. Checked on the realistic session under every style
//! and on random histories.

use std::path::Path;
use std::sync::LazyLock;

use agent_memory_core::InMemoryStore;
use agent_memory_turns::{
    ActivityStatus, AssistantTurn, Compaction, ContextPolicy, FailedCommand, History, MemoryStyle,
    ModelView, SessionEvent, StoreLog, ToolActivity, ToolCallRecord, TurnMemory, render,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::fixture::{STARTED_AT, realistic, session_id};

struct Schemas {
    chat: jsonschema::Validator,
    responses: jsonschema::Validator,
    genkit: jsonschema::Validator,
    anthropic: jsonschema::Validator,
    gemini: jsonschema::Validator,
}

fn validator(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/schemas")
        .join(name);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let schema: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

static SCHEMAS: LazyLock<Schemas> = LazyLock::new(|| Schemas {
    chat: validator("openai-chat-completions.request.json"),
    responses: validator("openai-responses.request.json"),
    genkit: validator("genkit.generate-request.json"),
    anthropic: validator("anthropic-messages.request.json"),
    gemini: validator("gemini-generate-content.request.json"),
});

/// The problems of `instance` under `schema`, one line each.
fn schema_errors(schema: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    schema
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn to_value<T: serde::Serialize>(payload: &T) -> Value {
    serde_json::to_value(payload).unwrap_or_else(|e| panic!("{e}"))
}

/// Each provider's complete request for `view`.
fn requests(view: &ModelView<'_>) -> [(&'static str, Value); 5] {
    let mut anthropic = json!({"model": "claude-sonnet-4-5", "max_tokens": 1024});
    if let (Some(request), Value::Object(rendered)) = (
        anthropic.as_object_mut(),
        to_value(&render::anthropic(view)),
    ) {
        request.extend(rendered);
    }
    [
        (
            "openai chat",
            json!({"model": "gpt-4.1", "messages": to_value(&render::openai_chat(view))}),
        ),
        (
            "openai responses",
            json!({"model": "gpt-4.1", "input": to_value(&render::openai_responses(view))}),
        ),
        (
            "genkit",
            json!({"messages": to_value(&render::genkit(view))}),
        ),
        ("anthropic", anthropic),
        ("gemini", to_value(&render::gemini(view))),
    ]
}

/// Every problem of the requests for `view`: schema errors and broken conversation rules.
fn problems(view: &ModelView<'_>) -> Vec<String> {
    let mut problems = Vec::new();
    for (provider, request) in requests(view) {
        let schema = match provider {
            "openai chat" => &SCHEMAS.chat,
            "openai responses" => &SCHEMAS.responses,
            "genkit" => &SCHEMAS.genkit,
            "anthropic" => &SCHEMAS.anthropic,
            _ => &SCHEMAS.gemini,
        };
        let empty_conversation = request
            .as_object()
            .and_then(|r| {
                ["messages", "input", "contents"]
                    .iter()
                    .find_map(|k| r.get(*k))
            })
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty);
        if empty_conversation {
            // Nothing to send: every API refuses an empty conversation, and there is none.
            continue;
        }
        for error in schema_errors(schema, &request) {
            problems.push(format!("{provider}: {error}"));
        }
        let rules = match provider {
            "openai chat" => chat_rules(&request),
            "openai responses" => responses_rules(&request),
            "genkit" => genkit_rules(&request),
            "anthropic" => anthropic_rules(&request),
            _ => gemini_rules(&request),
        };
        problems.extend(rules.into_iter().map(|p| format!("{provider}: {p}")));
    }
    problems
}

fn items<'v>(value: &'v Value, key: &str) -> &'v [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn str_of<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The ids of `blocks` of one kind, in order.
fn ids(blocks: &[Value], kind: &str, id_key: &str) -> Vec<String> {
    blocks
        .iter()
        .filter(|b| str_of(b, "type") == kind)
        .map(|b| str_of(b, id_key).to_owned())
        .collect()
}

/// Anthropic: roles alternate; every tool_use is answered, in order, by the tool_result
/// blocks that open the next user message, and no tool_result answers anything else.
fn anthropic_rules(request: &Value) -> Vec<String> {
    let messages = items(request, "messages");
    let mut problems = Vec::new();
    for (i, pair) in messages.windows(2).enumerate() {
        if str_of(&pair[0], "role") == str_of(&pair[1], "role") {
            problems.push(format!("messages {i} and {} share a role", i + 1));
        }
    }
    for (i, message) in messages.iter().enumerate() {
        let blocks = items(message, "content");
        let uses = ids(blocks, "tool_use", "id");
        let answered = match messages.get(i + 1) {
            Some(next) => ids(items(next, "content"), "tool_result", "tool_use_id"),
            None => Vec::new(),
        };
        if str_of(message, "role") == "assistant" && uses != answered {
            problems.push(format!(
                "message {i} calls {uses:?}, the next answers {answered:?}"
            ));
        }
        let results = ids(blocks, "tool_result", "tool_use_id");
        let leading = blocks
            .iter()
            .take_while(|b| str_of(b, "type") == "tool_result")
            .count();
        if leading != results.len() {
            problems.push(format!("message {i} has text before a tool_result"));
        }
        let called = match i.checked_sub(1).and_then(|p| messages.get(p)) {
            Some(previous) => ids(items(previous, "content"), "tool_use", "id"),
            None => Vec::new(),
        };
        if !results.is_empty() && results != called {
            problems.push(format!("message {i} answers {results:?}, not {called:?}"));
        }
    }
    problems
}

/// Gemini: roles alternate; the function calls of a model turn are answered by the
/// function responses of the next turn, with the same ids and names.
fn gemini_rules(request: &Value) -> Vec<String> {
    let contents = items(request, "contents");
    let mut problems = Vec::new();
    let calls = |content: &Value, key: &str| -> Vec<(String, String)> {
        items(content, "parts")
            .iter()
            .filter_map(|p| p.get(key))
            .map(|c| (str_of(c, "id").to_owned(), str_of(c, "name").to_owned()))
            .collect()
    };
    for (i, pair) in contents.windows(2).enumerate() {
        if str_of(&pair[0], "role") == str_of(&pair[1], "role") {
            problems.push(format!("contents {i} and {} share a role", i + 1));
        }
    }
    for (i, content) in contents.iter().enumerate() {
        let made = calls(content, "functionCall");
        let answered = contents
            .get(i + 1)
            .map(|next| calls(next, "functionResponse"))
            .unwrap_or_default();
        if !made.is_empty() && made != answered {
            problems.push(format!(
                "content {i} calls {made:?}, the next answers {answered:?}"
            ));
        }
        let responses = calls(content, "functionResponse");
        let asked = i
            .checked_sub(1)
            .and_then(|p| contents.get(p))
            .map(|previous| calls(previous, "functionCall"))
            .unwrap_or_default();
        if !responses.is_empty() && responses != asked {
            problems.push(format!("content {i} answers {responses:?}, not {asked:?}"));
        }
    }
    problems
}

/// OpenAI Chat: the tool calls of an assistant message are answered by the tool messages
/// right after it, and a tool message answers only those.
fn chat_rules(request: &Value) -> Vec<String> {
    let messages = items(request, "messages");
    let mut problems = Vec::new();
    let mut open: Vec<String> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        match str_of(message, "role") {
            "tool" => {
                let id = str_of(message, "tool_call_id");
                match open.iter().position(|o| o == id) {
                    Some(at) => {
                        open.remove(at);
                    }
                    None => problems.push(format!("message {i} answers {id}, which is not open")),
                }
            }
            role => {
                if !open.is_empty() {
                    problems.push(format!(
                        "message {i} ({role}) comes before {open:?} are answered"
                    ));
                }
                open = items(message, "tool_calls")
                    .iter()
                    .map(|c| str_of(c, "id").to_owned())
                    .collect();
            }
        }
    }
    if !open.is_empty() {
        problems.push(format!("{open:?} are never answered"));
    }
    problems
}

/// OpenAI Responses: every output answers an earlier call, and every call is answered.
fn responses_rules(request: &Value) -> Vec<String> {
    let input = items(request, "input");
    let calls = ids(input, "function_call", "call_id");
    let outputs = ids(input, "function_call_output", "call_id");
    let mut problems = Vec::new();
    for (i, item) in input.iter().enumerate() {
        if str_of(item, "type") == "function_call_output" {
            let id = str_of(item, "call_id");
            let called_before = input[..i]
                .iter()
                .any(|c| str_of(c, "type") == "function_call" && str_of(c, "call_id") == id);
            if !called_before {
                problems.push(format!("item {i} answers {id} before it is called"));
            }
        }
    }
    let mut unanswered: Vec<&String> = calls.iter().filter(|c| !outputs.contains(c)).collect();
    unanswered.dedup();
    if !unanswered.is_empty() {
        problems.push(format!("{unanswered:?} are never answered"));
    }
    problems
}

/// Genkit: a model message's tool requests are answered by the next (tool) message.
fn genkit_rules(request: &Value) -> Vec<String> {
    let messages = items(request, "messages");
    let refs = |message: &Value, key: &str| -> Vec<String> {
        items(message, "content")
            .iter()
            .filter_map(|p| p.get(key))
            .map(|t| str_of(t, "ref").to_owned())
            .collect()
    };
    let mut problems = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let made = refs(message, "toolRequest");
        let answered = messages
            .get(i + 1)
            .map(|next| refs(next, "toolResponse"))
            .unwrap_or_default();
        if !made.is_empty() && made != answered {
            problems.push(format!(
                "message {i} requests {made:?}, the next answers {answered:?}"
            ));
        }
    }
    problems
}

/// The policies every payload is checked under.
fn policies() -> Vec<ContextPolicy> {
    let system = "You are a coding agent.";
    vec![
        ContextPolicy::default(),
        ContextPolicy::default().with_memory_style(MemoryStyle::native()),
        ContextPolicy::keen(),
        ContextPolicy::keen().with_system_prompt(system),
        ContextPolicy::default()
            .with_memory_style(MemoryStyle::native())
            .with_system_prompt(system)
            .with_interrupted_marker(Some(" [stopped]".to_owned())),
    ]
}

#[test]
fn the_realistic_session_renders_valid_requests_for_every_provider() {
    let store = InMemoryStore::new();
    let session = realistic(StoreLog::new(&store, session_id("realistic")));
    for policy in policies() {
        let view = session.history().model_view(&policy);
        let problems = problems(&view);
        assert!(problems.is_empty(), "{policy:?}:\n{}", problems.join("\n"));
    }
}

#[test]
fn the_schemas_and_rules_refuse_broken_requests() {
    let cases = [
        (
            &SCHEMAS.anthropic,
            json!({"model": "m", "max_tokens": 1, "messages": [{"role": "system", "content": "x"}]}),
        ),
        (
            &SCHEMAS.anthropic,
            json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "text", "text": " "}]}]}),
        ),
        (
            &SCHEMAS.anthropic,
            json!({"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "a b", "name": "x", "input": {}}]}]}),
        ),
        (
            &SCHEMAS.anthropic,
            json!({"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": "text"}]}]}),
        ),
        (
            &SCHEMAS.gemini,
            json!({"contents": [{"role": "user", "parts": [{"text": "a", "functionCall": {"name": "f"}}]}]}),
        ),
        (
            &SCHEMAS.gemini,
            json!({"contents": [{"role": "assistant", "parts": [{"text": "a"}]}]}),
        ),
        (
            &SCHEMAS.gemini,
            json!({"contents": [{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": "ok"}}]}]}),
        ),
        (
            &SCHEMAS.chat,
            json!({"model": "m", "messages": [{"role": "tool", "content": "ok"}]}),
        ),
        (
            &SCHEMAS.chat,
            json!({"model": "m", "messages": [{"role": "assistant", "content": null}]}),
        ),
        (
            &SCHEMAS.responses,
            json!({"model": "m", "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}),
        ),
        (
            &SCHEMAS.responses,
            json!({"model": "m", "input": [{"role": "assistant", "content": [{"type": "input_text", "text": "x"}]}]}),
        ),
        (
            &SCHEMAS.genkit,
            json!({"messages": [{"role": "assistant", "content": [{"text": "x"}]}]}),
        ),
    ];
    for (i, (schema, request)) in cases.iter().enumerate() {
        assert!(
            !schema_errors(schema, request).is_empty(),
            "case {i} passed: {request}"
        );
    }
    let two_users = json!({"messages": [
        {"role": "user", "content": [{"type": "text", "text": "a"}]},
        {"role": "user", "content": [{"type": "text", "text": "b"}]},
    ]});
    assert_eq!(anthropic_rules(&two_users).len(), 1);
    let unanswered = json!({"messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "b"}]},
    ]});
    assert_eq!(anthropic_rules(&unanswered).len(), 1);
    let early = json!({"contents": [
        {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "f"}}]},
        {"role": "user", "parts": [{"text": "b"}]},
    ]});
    assert_eq!(gemini_rules(&early).len(), 1);
    let stray = json!({"messages": [{"role": "tool", "tool_call_id": "x", "content": "ok"}]});
    assert_eq!(chat_rules(&stray).len(), 1);
}

/// What one step of a random session does.
#[derive(Debug, Clone)]
enum Step {
    User(String),
    Assistant {
        text: String,
        offsets: Vec<(usize, u8, bool, bool)>,
        kept_calls: u8,
        failed: bool,
        interrupted: bool,
    },
    Compact(usize),
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), Just(" ".to_owned()), "[a-cé ]{1,12}",]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        text().prop_map(Step::User),
        (
            text(),
            prop::collection::vec((0_usize..16, 0_u8..4, any::<bool>(), any::<bool>()), 0..5),
            0_u8..3,
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(
                |(text, offsets, kept_calls, failed, interrupted)| Step::Assistant {
                    text,
                    offsets,
                    kept_calls,
                    failed,
                    interrupted,
                }
            ),
        (1_usize..6).prop_map(Step::Compact),
    ]
}

const TOOLS: [&str; 4] = ["read_file", "bash", "write_file", "grep"];

/// The history of `steps`; a compaction larger than the history compacts all of it.
fn session(steps: &[Step]) -> History {
    let mut events = vec![SessionEvent::SessionStarted {
        session: "random".to_owned(),
        started_at: STARTED_AT,
    }];
    let mut entries = 0_usize;
    for (n, step) in steps.iter().enumerate() {
        match step {
            Step::User(text) => {
                events.push(SessionEvent::UserMessage { text: text.clone() });
                entries += 1;
            }
            Step::Assistant {
                text,
                offsets,
                kept_calls,
                failed,
                interrupted,
            } => {
                let activity = offsets
                    .iter()
                    .map(|(offset, tool, with_input, error)| {
                        let activity = ToolActivity::new(*offset, TOOLS[usize::from(*tool)]);
                        let activity = if *with_input {
                            activity.with_input(json!({"path": "src/a.rs"}))
                        } else {
                            activity
                        };
                        if *error {
                            activity.with_status(ActivityStatus::Error)
                        } else {
                            activity.with_exit_code(Some(i32::from(*tool)))
                        }
                    })
                    .collect();
                let calls = (0..*kept_calls)
                    .map(|k| {
                        ToolCallRecord::new(format!("call_{n}_{k}"), "bash", json!("ls"), "")
                            .with_error(*failed)
                    })
                    .collect();
                let memory = failed.then(|| TurnMemory {
                    failed_commands: vec![FailedCommand {
                        command: "make".to_owned(),
                        exit_code: 2,
                    }],
                    ..TurnMemory::default()
                });
                events.push(SessionEvent::AssistantTurn(
                    AssistantTurn::new(text.clone())
                        .with_activity(activity)
                        .with_tool_calls(calls)
                        .with_memory(memory)
                        .with_interrupted(*interrupted),
                ));
                entries += 1;
            }
            Step::Compact(n) if entries > 0 => {
                let compacted = (*n).min(entries);
                events.push(SessionEvent::CompactionApplied(Compaction {
                    summary: "summary".to_owned(),
                    compacted_entries: compacted,
                    memory: None,
                    last_user_message: None,
                }));
                entries = entries - compacted + 1;
            }
            Step::Compact(_) => {}
        }
    }
    History::replay(events).unwrap_or_else(|e| panic!("replay: {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn random_sessions_render_valid_requests(steps in prop::collection::vec(step(), 0..10)) {
        let history = session(&steps);
        for policy in policies() {
            let view = history.model_view(&policy);
            let problems = problems(&view);
            prop_assert!(problems.is_empty(), "{:?}\n{:?}\n{}", steps, policy, problems.join("\n"));
        }
    }
}

#[test]
fn imported_keen_sessions_render_valid_requests() {
    for name in [
        "keen-current.transcript_events.jsonl",
        "keen-0.2.3.transcript_events.jsonl",
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/keen")
            .join(name);
        let loaded = agent_memory_turns::keen::read(&path).unwrap_or_else(|e| panic!("{e}"));
        let history = History::replay(loaded.events).unwrap_or_else(|e| panic!("{e}"));
        for policy in policies() {
            let problems = problems(&history.model_view(&policy));
            assert!(
                problems.is_empty(),
                "{name} {policy:?}:\n{}",
                problems.join("\n")
            );
        }
    }
}
