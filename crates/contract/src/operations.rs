//! Every operation of the contract as data: its name (the stem of its schemas), what it does
//! to the memory, a description written for whoever decides when to call it, and a call from
//! JSON to JSON. The MCP server lists its tools from this table and the language packages
//! dispatch through it, so a door never lists or converts an operation of its own.

use anyhow::{Context, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use agent_memory_core::excerpt::{Excerpt, bounded};

use crate::{Env, Failure};

/// What an operation does to the memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads only.
    Reads,
    /// Adds to the memory.
    Writes,
    /// Deletes from the memory, for good.
    Deletes,
}

type Call = Box<dyn Fn(&Env<'_>, Value) -> Result<Value> + Send + Sync>;
type TextCall = Box<dyn Fn(&Env<'_>, &str) -> Result<Value> + Send + Sync>;

/// One operation of the contract.
pub struct Operation {
    /// Its name: `<name>.input` and `<output>.output` are its schemas under `schemas/`.
    pub name: &'static str,
    /// When to call it, in a sentence or two.
    pub description: &'static str,
    /// Reads, writes or deletes.
    pub effect: Effect,
    /// The stem of its output schema (usually its name).
    pub output: &'static str,
    /// Whether it takes a JSON input (else its input is `{}` or null).
    pub takes_input: bool,
    /// Whether the MCP server offers it as a tool.
    pub mcp: bool,
    call: Call,
    /// The same call from JSON text, straight into the input type; `None` where the input is
    /// read as a `Value` anyway.
    call_text: Option<TextCall>,
}

impl std::fmt::Debug for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operation")
            .field("name", &self.name)
            .field("effect", &self.effect)
            .finish_non_exhaustive()
    }
}

/// The families of operations, which a door may serve apart (`agent-memory mcp --tools`).
pub const FAMILIES: &[&str] = &[
    "notes",
    "trajectory",
    "browser",
    "turns",
    "recording",
    "admin",
];

impl Operation {
    /// Its family: the memory it belongs to (`trajectory`, `browser`, `turns`, `recording`,
    /// `notes`), or `admin` for what spans them (list, forget, stats).
    pub fn family(&self) -> &'static str {
        FAMILIES
            .iter()
            .copied()
            .find(|family| {
                self.name == *family
                    || self
                        .name
                        .strip_prefix(family)
                        .is_some_and(|rest| rest.starts_with('_'))
            })
            .unwrap_or("admin")
    }

    /// Runs the operation on `input`, its JSON input (an object; null or `{}` for an
    /// operation without input), and returns its output as JSON. An input that does not fit
    /// the schema is an `invalid_input` failure naming the operation and serde's reason.
    pub fn call(&self, env: &Env<'_>, input: Value) -> Result<Value> {
        (self.call)(env, input)
    }

    /// [`Operation::call`] on `input`, the JSON text of its input: read straight into the
    /// operation's input type, without a `Value` in between. Text that is not JSON is an
    /// `invalid_input` failure about `input`; JSON that does not fit the schema fails as in
    /// [`Operation::call`], with the same message.
    pub fn call_text(&self, env: &Env<'_>, input: &str) -> Result<Value> {
        match &self.call_text {
            Some(call) => call(env, input),
            None => (self.call)(env, parse_text(input)?),
        }
    }
}

/// `input`, JSON text, as a `Value`, or an `invalid_input` failure about `input`.
fn parse_text(input: &str) -> Result<Value> {
    serde_json::from_str(input).map_err(|e| Failure::invalid("input", format!("input: {e}")).into())
}

/// The input text as the operation's input type: where the text is JSON but not that type, the
/// failure [`arguments`] reports for the same JSON, whose reason names no place in a text.
fn arguments_from_text<I: DeserializeOwned>(name: &str, input: &str) -> Result<I> {
    serde_json::from_str(input).map_err(|e| {
        if !e.is_data() {
            return Failure::invalid("input", format!("input: {e}")).into();
        }
        // Read again, only now that it failed, keeping track of the place.
        let path = match serde_path_to_error::deserialize::<_, I>(
            &mut serde_json::Deserializer::from_str(input),
        ) {
            Err(traced) => traced.path().to_string(),
            Ok(_) => ".".to_owned(),
        };
        let text = e.to_string();
        let place = format!(" at line {} column {}", e.line(), e.column());
        let reason = text.strip_suffix(place.as_str()).unwrap_or(&text);
        misfit(name, &path, reason).into()
    })
}

/// `input` as operation `name`'s input type, or an `invalid_input` failure that names the place
/// in the input that does not fit it (`episodes[0].trajectory`, the failure's `input`; the
/// whole input is `arguments`) and says why: `invalid arguments for trajectory_record:
/// episodes[0].trajectory: invalid type: string "ab", expected a sequence`.
pub fn arguments<I: DeserializeOwned>(name: &str, input: Value) -> Result<I, Failure> {
    // Read from a reference, so the input is still there to read again when it does not fit,
    // keeping track of the place this time: tracking it on every read would double its cost.
    I::deserialize(&input).map_err(|e| {
        let path = match serde_path_to_error::deserialize::<_, I>(&input) {
            Err(traced) => traced.path().to_string(),
            Ok(_) => ".".to_owned(),
        };
        misfit(name, &path, e)
    })
}

/// The failure of an input to operation `name` that does not fit its type at `path` (`.` for
/// the input itself), for `reason`. The reason is serde's, which quotes a misfit string whole
/// (`invalid type: string "..."`); it is [`bounded`], and so is the path, which holds the
/// input's keys.
fn misfit(name: &str, path: &str, reason: impl std::fmt::Display) -> Failure {
    let reason = reason.to_string();
    let reason = bounded(&reason);
    let path = Excerpt::plain(path).to_string();
    if path == "." {
        Failure::invalid(
            "arguments",
            format!("invalid arguments for {name}: {reason}"),
        )
    } else {
        Failure::invalid(
            path.as_str(),
            format!("invalid arguments for {name}: {path}: {reason}"),
        )
    }
}

fn encode<O: Serialize>(output: &O) -> Result<Value> {
    serde_json::to_value(output).context("encoding the result as JSON")
}

/// An operation that takes its input by reference.
fn with_input<I, O>(
    name: &'static str,
    description: &'static str,
    effect: Effect,
    op: fn(&Env<'_>, &I) -> Result<O>,
) -> Operation
where
    I: DeserializeOwned + 'static,
    O: Serialize + 'static,
{
    let call: Call = Box::new(move |env, input| encode(&op(env, &arguments::<I>(name, input)?)?));
    let call_text: TextCall =
        Box::new(move |env, input| encode(&op(env, &arguments_from_text::<I>(name, input)?)?));
    Operation {
        name,
        description,
        effect,
        output: name,
        takes_input: true,
        mcp: true,
        call,
        call_text: Some(call_text),
    }
}

/// An operation that takes its input by value and whose output schema is shared.
fn by_value<I, O>(
    name: &'static str,
    description: &'static str,
    effect: Effect,
    output: &'static str,
    op: fn(&Env<'_>, I) -> Result<O>,
) -> Operation
where
    I: DeserializeOwned + 'static,
    O: Serialize + 'static,
{
    let call: Call = Box::new(move |env, input| encode(&op(env, arguments::<I>(name, input)?)?));
    let call_text: TextCall =
        Box::new(move |env, input| encode(&op(env, arguments_from_text::<I>(name, input)?)?));
    Operation {
        name,
        description,
        effect,
        output,
        takes_input: true,
        mcp: false,
        call,
        call_text: Some(call_text),
    }
}

/// An operation that takes no input: null or an empty object.
fn without_input<O>(
    name: &'static str,
    description: &'static str,
    effect: Effect,
    op: fn(&Env<'_>) -> Result<O>,
) -> Operation
where
    O: Serialize + 'static,
{
    let call: Call = Box::new(move |env, input| {
        if let Value::Object(fields) = &input
            && let Some(key) = fields.keys().next()
        {
            return Err(Failure::invalid(
                key.as_str(),
                format!("{name} takes no arguments (got {key:?})"),
            )
            .into());
        }
        if !matches!(input, Value::Null | Value::Object(_)) {
            return Err(Failure::invalid(
                "arguments",
                format!("{name} takes no arguments (got {input})"),
            )
            .into());
        }
        encode(&op(env)?)
    });
    Operation {
        name,
        description,
        effect,
        output: name,
        takes_input: false,
        mcp: true,
        call,
        call_text: None,
    }
}

/// Every operation: first the MCP server's tools in the order clients list them, then the
/// operations only the command line and the language packages offer.
pub fn all() -> Vec<Operation> {
    use crate::{browser, check, memory, notes, recording, runs, stats, trajectory, turns};
    use Effect::{Deletes, Reads, Writes};
    vec![
        with_input(
            "trajectory_record",
            "Record finished tasks as episodes (fingerprint, actions, outcome). Call it after each task so later ones learn what worked.",
            Writes,
            trajectory::record,
        ),
        with_input(
            "trajectory_crystallize",
            "Turn the episodes recorded since the last run into patterns: the action sequence that works per fingerprint. Call it after a batch of records.",
            Writes,
            trajectory::crystallize,
        ),
        with_input(
            "trajectory_recall",
            "The patterns that worked for a task like this one (a full or partial fingerprint), best first. Call it before a task to reuse what worked.",
            Reads,
            trajectory::recall,
        ),
        with_input(
            "trajectory_patterns",
            "Every pattern of a partition with its confidence and evidence. Call it to review what procedural memory learned.",
            Reads,
            trajectory::patterns,
        ),
        with_input(
            "browser_context",
            "Memory for a browser run with this goal on this URL: past sessions, a reference trajectory, app knowledge, selectors. Call it before the run; put the text in the prompt.",
            Reads,
            browser::context,
        ),
        with_input(
            "browser_record_run",
            "Record a finished browser run (goal, start URL, turns, success) so later runs on the site learn from it. Call it once when a run ends.",
            Writes,
            browser::record_run,
        ),
        with_input(
            "browser_runs",
            "Registered browser runs, newest first, by session, domain or status. Call it to find a run to resume or fork.",
            Reads,
            browser::runs,
        ),
        with_input(
            "browser_resume",
            "The scenario that continues a run in its session from where it ended. Call it to pick an interrupted run back up.",
            Reads,
            browser::resume,
        ),
        with_input(
            "browser_fork",
            "The scenario that branches from a run into a new session, starting where it ended. Call it to try another approach.",
            Reads,
            browser::fork,
        ),
        with_input(
            "turns_append",
            "Append a coding session's events (start, user messages, assistant turns with files changed and commands failed) as they happen; a retry is safe.",
            Writes,
            turns::append,
        ),
        with_input(
            "turns_view",
            "A coding session's model view for a provider, and whether to compact it. Call it to build the next model request.",
            Reads,
            turns::view,
        ),
        with_input(
            "recording_append",
            "Append recorded tool calls, each with the memory after it, to a session. Call it as tools run, so the session can become a replayable trail.",
            Writes,
            recording::append,
        ),
        with_input(
            "recording_templatize",
            "Turn a session's tool calls into trail YAML with memory literals as ${key} tokens. Call it when a session succeeded and should be replayable.",
            Reads,
            recording::templatize,
        ),
        with_input(
            "recording_lint",
            "Find trail literals equal to current or past memory values (recordings that will go stale). Call it before committing or replaying a trail.",
            Reads,
            recording::lint,
        ),
        with_input(
            "recording_next_call",
            "The next step of a trail replay for a device, its calls resolved against memory as it is now, or done. Call it after each step.",
            Reads,
            recording::next_call,
        ),
        by_value(
            "notes",
            "Your memory directory /memories (Anthropic's memory tool commands, plus search). View it before a task; record progress, decisions and facts as you go.",
            Writes,
            "notes",
            notes::notes,
        )
        .for_mcp(),
        without_input(
            "memory_list",
            "Everything the memory holds (partitions, coding sessions, tool-log sessions, browser and note scopes) with counts. Call it to find what to recall or forget.",
            Reads,
            memory::list,
        ),
        with_input(
            "memory_forget",
            "Forget a partition, session, scope (or one site of it), run or trajectory for good, erasing its text. Call it only when the user asks to delete that memory.",
            Deletes,
            memory::forget,
        ),
        without_input(
            "memory_stats",
            "The database, its schema version, size and the rows of every table. Call it to check the store's health or size.",
            Reads,
            stats::stats,
        ),
        by_value(
            "browser_run_start",
            "Register a browser run as running (goal, domain, start URL, session, parent run) before it starts. Call it when a run begins so it can be listed, resumed or forked.",
            Writes,
            "browser_run",
            runs::start,
        ),
        by_value(
            "browser_run_update",
            "Record a running browser run's progress (state, turns so far, current URL, artifacts). Call it as the run goes on; absent fields stay as they are.",
            Writes,
            "browser_run",
            runs::update,
        ),
        by_value(
            "browser_run_complete",
            "Mark a browser run finished: success, turns taken, final URL, summary or failure reason. Call it once when the run ends.",
            Writes,
            "browser_run",
            runs::complete,
        ),
        Operation {
            mcp: false,
            ..without_input(
                "check",
                "Check a SQLite database: its integrity and the store's own invariants, every check with its findings. Call it when the memory seems wrong.",
                Reads,
                check::check,
            )
        },
    ]
}

impl Operation {
    /// The same operation, offered by the MCP server too.
    fn for_mcp(mut self) -> Self {
        self.mcp = true;
        self
    }
}

/// Every operation, as [`all`] lists them, built once for the life of the process: a door
/// that dispatches a call by name looks it up here instead of building the table each time.
pub fn table() -> &'static [Operation] {
    static TABLE: std::sync::OnceLock<Vec<Operation>> = std::sync::OnceLock::new();
    TABLE.get_or_init(all)
}

/// The operation named `name`.
pub fn find(name: &str) -> Option<&'static Operation> {
    table().iter().find(|op| op.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation has its schemas and a description of a useful length.
    #[test]
    fn every_operation_has_its_schemas_and_a_description() {
        let schemas: Vec<&str> = crate::schemas().iter().map(|(n, _)| *n).collect();
        for op in all() {
            let input = format!("{}.input", op.name);
            assert_eq!(
                schemas.contains(&input.as_str()),
                op.takes_input,
                "{}",
                op.name
            );
            let output = format!("{}.output", op.output);
            assert!(schemas.contains(&output.as_str()), "{}", op.name);
            assert!(
                (40..=300).contains(&op.description.len()),
                "{}: {}",
                op.name,
                op.description
            );
        }
    }

    /// Every operation is in the family its name says; the memory-wide ones are admin.
    #[test]
    fn families_follow_the_names() {
        let family = |name: &str| find(name).expect(name).family();
        assert_eq!(family("trajectory_recall"), "trajectory");
        assert_eq!(family("browser_run_start"), "browser");
        assert_eq!(family("turns_view"), "turns");
        assert_eq!(family("recording_next_call"), "recording");
        assert_eq!(family("memory_forget"), "admin");
        assert_eq!(family("memory_stats"), "admin");
        for op in all() {
            assert!(FAMILIES.contains(&op.family()), "{}", op.name);
        }
    }

    /// An input that does not fit is an `invalid_input` failure naming the operation.
    #[test]
    fn a_wrong_input_is_invalid_input_naming_the_operation() {
        let store = crate::tests::in_memory();
        let env = crate::tests::env_on(&store);
        let recall = find("trajectory_recall").expect("recall");
        let error = recall
            .call(&env, serde_json::json!({"partition": 3}))
            .expect_err("a number is no partition");
        let body = crate::ErrorBody::of(&error, error.to_string());
        assert_eq!(body.kind, "invalid_input");
        assert!(
            body.message.contains("trajectory_recall"),
            "{}",
            body.message
        );
        let list = find("memory_list").expect("list");
        let error = list
            .call(&env, serde_json::json!({"extra": 1}))
            .expect_err("list takes nothing");
        assert_eq!(
            crate::ErrorBody::of(&error, String::new()).input.as_deref(),
            Some("extra")
        );
        assert!(list.call(&env, Value::Null).is_ok());
    }

    /// An input that does not fit its operation names the place that does not fit, as the
    /// failure's `input` and in its message, from text and from a value alike (an unknown
    /// field names itself); a misfit of the input itself (a missing field at the top) is
    /// about `arguments`.
    #[test]
    fn a_misfit_names_its_place_in_the_input() {
        let store = crate::tests::in_memory();
        let env = crate::tests::env_on(&store);
        let cases = [
            (
                "trajectory_record",
                serde_json::json!({"partition": null, "fields": ["a"], "episodes": []}),
                "partition",
                "invalid arguments for trajectory_record: partition: invalid type: null, expected a string",
            ),
            (
                "trajectory_record",
                serde_json::json!({"partition": "p", "fields": ["a"], "episodes": [
                    {"fingerprint": {"a": "x"}, "trajectory": ["s"], "outcome": "ok"},
                    {"fingerprint": {"a": "x"}, "trajectory": "ab", "outcome": "ok"},
                ]}),
                "episodes[1].trajectory",
                "invalid arguments for trajectory_record: episodes[1].trajectory: invalid type: string \"ab\", expected a sequence",
            ),
            (
                "trajectory_recall",
                serde_json::json!({"partition": "p", "fingerprint": {"a": 1}}),
                "fingerprint.a",
                "invalid arguments for trajectory_recall: fingerprint.a: invalid type: integer `1`, expected a string",
            ),
            (
                "trajectory_recall",
                serde_json::json!({"partition": "p", "fingerprint": {}, "limits": 3}),
                "limits",
                "invalid arguments for trajectory_recall: limits: unknown field `limits`",
            ),
            (
                "trajectory_recall",
                serde_json::json!({"fingerprint": {}}),
                "arguments",
                "invalid arguments for trajectory_recall: missing field `partition`",
            ),
        ];
        for (name, input, place, message) in cases {
            let operation = find(name).expect(name);
            let text = input.to_string();
            for result in [
                operation.call(&env, input),
                operation.call_text(&env, &text),
            ] {
                let error = result.expect_err("a misfit");
                let body = crate::ErrorBody::of(&error, error.to_string());
                assert_eq!(
                    (body.kind, body.input.as_deref()),
                    ("invalid_input", Some(place))
                );
                assert!(body.message.starts_with(message), "{}", body.message);
            }
        }
    }

    /// A misfit quotes the input's text cut, with its length, from text and from a value
    /// alike: a huge string where a list belongs, a huge unknown command, a huge unknown
    /// field. Each message stays under 600 characters, and so does its `input`.
    #[test]
    fn a_misfit_quotes_a_huge_input_cut() {
        let store = crate::tests::in_memory();
        let env = crate::tests::env_on(&store);
        let huge = "s".repeat(1_000_000);
        let kept = "s".repeat(200);
        let cases = [
            (
                "trajectory_record",
                serde_json::json!({"partition": "p", "fields": ["a"], "episodes": [
                    {"fingerprint": {"a": "x"}, "trajectory": huge, "outcome": "ok"},
                ]}),
                format!(
                    "invalid arguments for trajectory_record: episodes[0].trajectory: invalid type: string \"{kept}…\" (1,000,000 characters), expected a sequence"
                ),
            ),
            (
                "notes",
                serde_json::json!({"command": huge, "path": "/memories"}),
                format!(
                    "invalid arguments for notes: unknown variant `{kept}…` (1,000,000 characters), expected one of"
                ),
            ),
            (
                "trajectory_recall",
                serde_json::json!({"partition": "p", "fingerprint": {}, huge.clone(): 1}),
                format!(
                    "invalid arguments for trajectory_recall: {kept}… (1,000,000 characters): unknown field `{kept}…` (1,000,000 characters), expected one of"
                ),
            ),
        ];
        for (name, input, message) in cases {
            let operation = find(name).expect(name);
            let text = input.to_string();
            for result in [
                operation.call(&env, input),
                operation.call_text(&env, &text),
            ] {
                let error = result.expect_err("a misfit");
                let body = crate::ErrorBody::of(&error, crate::one_line(&error));
                assert!(body.message.starts_with(&message), "{}", body.message);
                assert!(body.message.chars().count() < 600, "{}", body.message);
                let input = body.input.unwrap_or_default();
                assert!(input.chars().count() < 600, "{input}");
            }
        }
    }

    /// The same input as text or as a `Value` gives the same answer, and the same failure
    /// with the same message, whether the input fits or not; text that is not JSON is an
    /// `invalid_input` about `input`.
    #[test]
    fn a_call_from_text_answers_as_a_call_from_a_value() {
        let failure = |result: Result<Value>| {
            let error = result.expect_err("a failure");
            let body = crate::ErrorBody::of(&error, error.to_string());
            (body.kind, body.input, body.message)
        };
        let store = crate::tests::in_memory();
        let env = crate::tests::env_on(&store);
        let record = find("trajectory_record").expect("record");
        let input = serde_json::json!({
            "partition": "p",
            "fields": ["tool"],
            "episodes": [{"fingerprint": {"tool": "x"}, "trajectory": ["a", "b"], "outcome": {"success": true}}],
        });
        let from_value = record.call(&env, input.clone()).expect("from a value");
        let from_text = record
            .call_text(&env, &input.to_string())
            .expect("from text");
        assert_eq!(from_text, from_value);
        let recall = find("trajectory_recall").expect("recall");
        for wrong in [
            r#"{"partition": 3}"#,
            r#"{"fingerprint": {}}"#,
            r#"{"partition": "p", "fingerprint": {"tool": "x"}, "limit": "two"}"#,
            r#"{"partition": "p", "fingerprint": {"tool": "x"}, "unknown": true}"#,
        ] {
            let value: Value = serde_json::from_str(wrong).expect("JSON");
            let expected = failure(recall.call(&env, value));
            assert_eq!(failure(recall.call_text(&env, wrong)), expected, "{wrong}");
            assert!(!expected.2.contains(" at line "), "{}", expected.2);
        }
        let (kind, input, message) = failure(recall.call_text(&env, "{\"partition\": "));
        assert_eq!((kind, input.as_deref()), ("invalid_input", Some("input")));
        assert!(message.starts_with("input: EOF"), "{message}");
        // An operation without input reads its text as a value, with the same checks.
        let list = find("memory_list").expect("list");
        assert_eq!(
            failure(list.call_text(&env, r#"{"extra": 1}"#)),
            failure(list.call(&env, serde_json::json!({"extra": 1})))
        );
        assert!(list.call_text(&env, "null").is_ok());
    }
}
