//! Every operation of the contract as data: the whole public surface of every door.
//!
//! An [`Operation`] says what it is called at each door (its name and schemas, the Python
//! method, the Node method, the command line's words, whether the MCP server lists it), what it
//! does to the memory, when to call it, and how to run it from JSON. [`table`] is every
//! operation; the MCP server lists its tools from it, the language packages dispatch through it
//! and `cargo xtask codegen` writes their methods, stubs and error classes from it, so a door
//! never lists or converts an operation of its own.
//!
//! Each entry is one call of `op`, the one constructor, with the door names it does not take
//! from the defaults:
//!
//! - Python: the operation's name (`trajectory_record`); the `memory_` operations drop the
//!   prefix (`list`, `forget`, `stats`).
//! - Node: the family's object and the rest in camelCase (`trajectory.record`,
//!   `browser.runStart`); an operation named as its family, or an admin one, is a method of the
//!   store itself (`notes`, `list`).
//! - The command line: the family and the rest with dashes (`trajectory record`,
//!   `recording next-call`); admin operations drop `memory_` (`list`, `forget`).

use std::any::TypeId;

use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use agent_memory_core::excerpt::{Excerpt, bounded};

use crate::{Env, Error, ErrorKind, Result, schema_of};

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

impl Effect {
    /// Its word: `reads`, `writes` or `deletes`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Reads => "reads",
            Effect::Writes => "writes",
            Effect::Deletes => "deletes",
        }
    }
}

/// The memory an operation belongs to; a door may serve the families apart (`agent-memory
/// mcp --tools`), and the language packages group methods by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Notes: the memory tool's `/memories` tree.
    Notes,
    /// Procedural memory: episodes and patterns.
    Trajectory,
    /// A browser agent's memory and its run registry.
    Browser,
    /// A coding agent's sessions.
    Turns,
    /// Recordings of tool calls and their trails.
    Recording,
    /// What spans the memories: list, forget, stats, check.
    Admin,
}

impl Family {
    /// Every family, in the order a door lists them.
    pub const ALL: &'static [Family] = &[
        Family::Notes,
        Family::Trajectory,
        Family::Browser,
        Family::Turns,
        Family::Recording,
        Family::Admin,
    ];

    /// Its name: `notes`, `trajectory`, `browser`, `turns`, `recording` or `admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Notes => "notes",
            Family::Trajectory => "trajectory",
            Family::Browser => "browser",
            Family::Turns => "turns",
            Family::Recording => "recording",
            Family::Admin => "admin",
        }
    }

    /// The family named `name`.
    pub fn named(name: &str) -> Option<Family> {
        Family::ALL.iter().copied().find(|f| f.as_str() == name)
    }
}

/// The names of the families (`agent-memory mcp --tools` takes them).
pub const FAMILIES: &[&str] = &[
    "notes",
    "trajectory",
    "browser",
    "turns",
    "recording",
    "admin",
];

/// The input of an operation that takes none: JSON `null` or an empty object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct NoInput {}

impl<'de> Deserialize<'de> for NoInput {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{Error as _, MapAccess, Visitor};
        struct Nothing;
        impl<'de> Visitor<'de> for Nothing {
            type Value = NoInput;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("no arguments (null or an empty object)")
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<NoInput, E> {
                Ok(NoInput {})
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<NoInput, E> {
                Ok(NoInput {})
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NoInput, A::Error> {
                match map.next_key::<String>()? {
                    None => Ok(NoInput {}),
                    Some(key) => Err(A::Error::custom(format!(
                        "takes no arguments (got {key:?})"
                    ))),
                }
            }
        }
        deserializer.deserialize_any(Nothing)
    }
}

type Call = Box<dyn Fn(&Env<'_>, Value) -> Result<Value> + Send + Sync>;
type TextCall = Box<dyn Fn(&Env<'_>, &str) -> Result<String> + Send + Sync>;

/// One operation of the contract: its names at every door, what it does, and its call.
pub struct Operation {
    /// Its name: `<name>.input` is its input schema under `schemas/`, and the MCP tool's name.
    pub name: &'static str,
    /// The memory it belongs to.
    pub family: Family,
    /// When to call it, in a sentence or two, written for whoever decides (a model, too).
    pub description: &'static str,
    /// Reads, writes or deletes.
    pub effect: Effect,
    /// Whether the MCP server offers it as a tool (a model should not call some: approving,
    /// importing files).
    pub mcp: bool,
    /// The method of the Python `Store` (snake_case).
    pub python: String,
    /// The method of the Node `Store`: `group.method` or `method` (camelCase).
    pub node: String,
    /// The command line's words (`trajectory record`).
    pub cli: String,
    /// The stem of its output schema (`<output>.output`), usually its name.
    pub output: &'static str,
    /// For an operation that writes only with some inputs, the inputs it only reads with.
    reads_when: Option<fn(&Value) -> bool>,
    input_schema: Option<fn() -> Schema>,
    output_schema: fn() -> Schema,
    call: Call,
    call_text: TextCall,
}

impl std::fmt::Debug for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operation")
            .field("name", &self.name)
            .field("family", &self.family)
            .field("effect", &self.effect)
            .finish_non_exhaustive()
    }
}

impl Operation {
    /// Its family's name (`trajectory`, ..., `admin`).
    pub fn family(&self) -> &'static str {
        self.family.as_str()
    }

    /// Whether it takes a JSON input (else its input is `{}` or null).
    pub fn takes_input(&self) -> bool {
        self.input_schema.is_some()
    }

    /// The schema of its input, as committed under `schemas/<name>.input.json`; `None` for an
    /// operation without input.
    pub fn input_schema(&self) -> Option<Schema> {
        self.input_schema.map(|schema| schema())
    }

    /// The schema of its output, as committed under `schemas/<output>.output.json`.
    pub fn output_schema(&self) -> Schema {
        (self.output_schema)()
    }

    /// What it does to the memory when called with `input`: its [`effect`](Self::effect),
    /// except for an operation that only reads with some inputs (`notes` with `view` or
    /// `search`). A door opens a database that does not exist yet only for a call that
    /// writes.
    pub fn effect_on(&self, input: &Value) -> Effect {
        match self.reads_when {
            Some(reads) if reads(input) => Effect::Reads,
            _ => self.effect,
        }
    }

    /// Runs the operation on `input`, its JSON input (an object; null or `{}` for an
    /// operation without input), and returns its output as JSON. An input that does not fit
    /// the schema is an `invalid_input` error naming the operation and the place that does
    /// not fit.
    pub fn call(&self, env: &Env<'_>, input: Value) -> Result<Value> {
        (self.call)(env, input)
    }

    /// [`Operation::call`] from JSON text to JSON text: the input is read straight into the
    /// operation's input type and the output written straight from its output type, without
    /// a `Value` on either side (an object's fields come in the order of its type, where a
    /// `Value` sorts them). Text that is not JSON is an `invalid_input` error about `input`;
    /// JSON that does not fit the schema fails as in [`Operation::call`], with the same
    /// message.
    pub fn call_text(&self, env: &Env<'_>, input: &str) -> Result<String> {
        (self.call_text)(env, input)
    }

    /// Its description, written for a model.
    fn about(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }

    /// Not offered by the MCP server.
    fn offline(mut self) -> Self {
        self.mcp = false;
        self
    }

    /// The command line's words, when not the default.
    fn cli(mut self, words: &str) -> Self {
        words.clone_into(&mut self.cli);
        self
    }

    /// Only reads when `reads` says so of its input, though it may write.
    fn reads_when(mut self, reads: fn(&Value) -> bool) -> Self {
        self.reads_when = Some(reads);
        self
    }

    /// The stem of an output schema shared with other operations.
    fn output(mut self, stem: &'static str) -> Self {
        self.output = stem;
        self
    }
}

/// The rest of an operation's name after its family's (`record` in `trajectory_record`), or
/// after `memory_` for an admin one; the whole name when it is the family's.
fn rest_of(name: &str, family: Family) -> &str {
    let prefix = match family {
        Family::Admin => "memory",
        other => other.as_str(),
    };
    name.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'))
        .unwrap_or(name)
}

/// `snake_case` as `camelCase`.
fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

/// The family an operation's name says: its first word (`trajectory_record`), and `admin` for
/// the memory-wide ones.
fn family_of(name: &str) -> Family {
    Family::ALL
        .iter()
        .copied()
        .find(|family| {
            name == family.as_str()
                || name
                    .strip_prefix(family.as_str())
                    .is_some_and(|rest| rest.starts_with('_'))
        })
        .unwrap_or(Family::Admin)
}

/// The operation `name`, running `run` on its input read from JSON: the one constructor of
/// the table. The family comes from the name and the door names from the defaults (see the
/// module's documentation); the entry's setters change what differs.
fn op<I, O>(name: &'static str, effect: Effect, run: fn(&Env<'_>, I) -> Result<O>) -> Operation
where
    I: DeserializeOwned + JsonSchema + 'static,
    O: Serialize + JsonSchema + 'static,
{
    let family = family_of(name);
    let rest = rest_of(name, family);
    let (python, node, cli) = if rest == name {
        (name.to_owned(), camel(name), name.replace('_', "-"))
    } else if family == Family::Admin {
        (rest.to_owned(), camel(rest), rest.replace('_', "-"))
    } else {
        (
            name.to_owned(),
            format!("{}.{}", family.as_str(), camel(rest)),
            format!("{} {}", family.as_str(), rest.replace('_', "-")),
        )
    };
    let takes_input = TypeId::of::<I>() != TypeId::of::<NoInput>();
    let call: Call = Box::new(move |env, input| {
        if !takes_input {
            no_arguments(name, &input)?;
        }
        encode(&run(env, arguments::<I>(name, input)?)?)
    });
    let call_text: TextCall = Box::new(move |env, input| {
        if !takes_input {
            let value: Value = serde_json::from_str(input)
                .map_err(|e| Error::invalid("input", format!("input: {e}")))?;
            no_arguments(name, &value)?;
        }
        encode_text(&run(env, arguments_from_text::<I>(name, input)?)?)
    });
    Operation {
        name,
        family,
        description: "",
        effect,
        mcp: true,
        python,
        node,
        cli,
        output: name,
        reads_when: None,
        input_schema: takes_input.then_some(schema_of::<I> as fn() -> Schema),
        output_schema: schema_of::<O>,
        call,
        call_text,
    }
}

/// Refuses any argument to operation `name`, which takes none, naming the first.
fn no_arguments(name: &str, input: &Value) -> Result<()> {
    match input {
        Value::Null => Ok(()),
        Value::Object(fields) => match fields.keys().next() {
            None => Ok(()),
            Some(key) => Err(Error::invalid(
                key.as_str(),
                format!("{name} takes no arguments (got {key:?})"),
            )),
        },
        other => Err(Error::invalid(
            "arguments",
            format!(
                "{name} takes no arguments (got {})",
                Excerpt::plain(&other.to_string())
            ),
        )),
    }
}

/// The input text as the operation's input type: where the text is JSON but not that type, the
/// error [`arguments`] reports for the same JSON, whose reason names no place in a text.
fn arguments_from_text<I: DeserializeOwned>(name: &str, input: &str) -> Result<I> {
    serde_json::from_str(input).map_err(|e| {
        if !e.is_data() {
            return Error::invalid("input", format!("input: {e}"));
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
        misfit(name, &path, reason)
    })
}

/// `input` as operation `name`'s input type, or an `invalid_input` error that names the place
/// in the input that does not fit it (`episodes[0].trajectory`, the error's `input`; the
/// whole input is `arguments`) and says why: `invalid arguments for trajectory_record:
/// episodes[0].trajectory: invalid type: string "ab", expected a sequence`.
pub fn arguments<I: DeserializeOwned>(name: &str, input: Value) -> Result<I> {
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

/// The error of an input to operation `name` that does not fit its type at `path` (`.` for
/// the input itself), for `reason`. The reason is serde's, which quotes a misfit string whole
/// (`invalid type: string "..."`); it is [`bounded`], and so is the path, which holds the
/// input's keys.
fn misfit(name: &str, path: &str, reason: impl std::fmt::Display) -> Error {
    let reason = reason.to_string();
    let reason = bounded(&reason);
    let path = Excerpt::plain(path).to_string();
    if path == "." {
        Error::invalid(
            "arguments",
            format!("invalid arguments for {name}: {reason}"),
        )
    } else {
        Error::invalid(
            path.as_str(),
            format!("invalid arguments for {name}: {path}: {reason}"),
        )
    }
}

/// `output` as a JSON value.
fn encode<O: Serialize>(output: &O) -> Result<Value> {
    serde_json::to_value(output).map_err(unencodable)
}

/// `output` as JSON text.
fn encode_text<O: Serialize>(output: &O) -> Result<String> {
    serde_json::to_string(output).map_err(unencodable)
}

/// The error of an output that is not JSON.
fn unencodable(e: serde_json::Error) -> Error {
    Error::new(
        ErrorKind::Other,
        format!("encoding the result as JSON: {e}"),
    )
}

/// Every operation: the MCP server lists its tools (`mcp: true`) in this order, and the
/// operations only the command line and the language packages offer (`mcp: false`) stand
/// among them.
pub fn all() -> Vec<Operation> {
    use crate::{
        browser, browser_compat, check, evidence, memory, notes, persistent, recording, review,
        runs, stats, trajectory, turns,
    };
    use Effect::{Deletes, Reads, Writes};
    vec![
        op("trajectory_record", Writes, trajectory::record).about(
            "Record finished tasks as episodes (fingerprint, actions, outcome). Call it after each task so later ones learn what worked.",
        ),
        op("trajectory_crystallize", Writes, trajectory::crystallize).about(
            "Turn the episodes recorded since the last run into patterns: the action sequence that works per fingerprint. Call it after a batch of records.",
        ),
        op("trajectory_recall", Reads, trajectory::recall).about(
            "The patterns that worked for a task like this one (a full or partial fingerprint), best first. Call it before a task to reuse what worked.",
        ),
        op("trajectory_patterns", Reads, trajectory::patterns).about(
            "Every pattern of a partition with its confidence and evidence. Call it to review what procedural memory learned.",
        ),
        op("browser_context", Reads, browser::context).about(
            "Memory for a browser run with this goal on this URL: past sessions, a reference trajectory, app knowledge, selectors. Call it before the run; put the text in the prompt.",
        ),
        op("browser_record_run", Writes, browser::record_run)
            .cli("browser record")
            .about(
                "Record a finished browser run (goal, start URL, turns, success) so later runs on the site learn from it. Call it once when a run ends.",
            ),
        op("browser_runs", Reads, browser::runs).about(
            "Registered browser runs, newest first, by session, domain or status. Call it to find a run to resume or fork.",
        ),
        op("browser_resume", Reads, browser::resume).about(
            "The scenario that continues a run in its session from where it ended. Call it to pick an interrupted run back up.",
        ),
        op("browser_fork", Reads, browser::fork).about(
            "The scenario that branches from a run into a new session, starting where it ended. Call it to try another approach.",
        ),
        op("turns_append", Writes, turns::append).about(
            "Append a coding session's events (start, user messages, assistant turns with files changed and commands failed) as they happen; a retry is safe.",
        ),
        op("turns_view", Reads, turns::view).cli("turns context").about(
            "A coding session's model view for a provider, and whether to compact it. Call it to build the next model request.",
        ),
        op("recording_append", Writes, recording::append).about(
            "Append recorded tool calls, each with the memory after it, to a session. Call it as tools run, so the session can become a replayable trail.",
        ),
        op("recording_templatize", Reads, recording::templatize).about(
            "Turn a session's tool calls into trail YAML with memory literals as ${key} tokens. Call it when a session succeeded and should be replayable.",
        ),
        op("recording_lint", Reads, recording::lint).about(
            "Find trail literals equal to current or past memory values (recordings that will go stale). Call it before committing or replaying a trail.",
        ),
        op("recording_next_call", Reads, recording::next_call).about(
            "The next step of a trail replay for a device, its calls resolved against memory as it is now, or done. Call it after each step.",
        ),
        op("recording_import", Writes, recording::import).offline().about(
            "Import a file of tool logs (this library's JSON documents or Trailblaze's) into the store, all or nothing; a session already stored with the same logs stays as it is.",
        ),
        op("recording_replay", Reads, recording::replay).offline().about(
            "Plan the replay of a trail on a device under the memory values given: every step with its calls resolved, or every memory token nothing resolves.",
        ),
        op("recording_fmt", Reads, recording::fmt).offline().about(
            "Write trails in canonical form, as Trailblaze writes them, saying which already were; a trail Trailblaze would refuse fails the whole call.",
        ),
        op("notes", Writes, notes::notes).reads_when(notes::reads_only).about(
            "Your memory directory /memories (Anthropic's memory tool commands, plus search). View it before a task; record progress, decisions and facts as you go.",
        ),
        op("memory_list", Reads, memory::list).about(
            "Everything the memory holds (partitions, coding sessions, tool-log sessions, browser and note scopes) with counts. Call it to find what to recall or forget.",
        ),
        op("memory_forget", Deletes, memory::forget).about(
            "Forget a partition, session, scope (or one site of it), run or trajectory for good, erasing its text. Call it only when the user asks to delete that memory.",
        ),
        op("memory_stats", Reads, stats::stats).cli("stats").about(
            "The database, its schema version, size and the rows of every table. Call it to check the store's health or size.",
        ),
        op("browser_run_start", Writes, runs::start)
            .offline()
            .output("browser_run")
            .cli("browser run start")
            .about(
                "Register a browser run as running (goal, domain, start URL, session, parent run) before it starts. Call it when a run begins so it can be listed, resumed or forked.",
            ),
        op("browser_run_update", Writes, runs::update)
            .offline()
            .output("browser_run")
            .cli("browser run update")
            .about(
                "Record a running browser run's progress (state, turns so far, current URL, artifacts, or any other field of its manifest but its id and start). Call it as the run goes on; absent fields stay as they are.",
            ),
        op("browser_run_complete", Writes, runs::complete)
            .offline()
            .output("browser_run")
            .cli("browser run complete")
            .about(
                "Mark a browser run finished: success, turns taken, final URL, summary or failure reason. Call it once when the run ends.",
            ),
        op("turns_import", Writes, turns::import).offline().about(
            "Import a coding session's log from a file (this library's JSON lines or a Keen Code session log) into the store, all or nothing; importing it again changes nothing.",
        ),
        op("browser_import", Writes, browser::import).offline().about(
            "Import browser-agent-driver's .agent-memory/ directory into a scope, all or nothing; records already stored stay as they are, and files not read are listed.",
        ),
        op("browser_export", Reads, browser::export).offline().about(
            "Write a scope's browser memory as browser-agent-driver's .agent-memory/ directory: trajectories, site knowledge and selectors, runs, hints, suite summaries.",
        ),
        op("browser_prune", Deletes, browser::prune).offline().about(
            "Remove a scope's trajectories older than the TTL (30 days unless given), for good. Call it to keep old runs out of the browser memory.",
        ),
        op("browser_hints", Writes, browser::hints).offline().about(
            "A scope's stored cross-domain hints; with refresh, analysed from its stored trajectories (and stored, replacing the old ones) first.",
        ),
        op("browser_facts", Reads, browser::facts).offline().about(
            "What a scope's browser memory holds about a site: its facts (timings, selectors, patterns, quirks) with their confidence, at least the one asked for.",
        ),
        op("browser_adopt_files", Writes, browser_compat::adopt_files)
            .offline()
            .about(
                "Adopt the files one of browser-agent-driver's memory classes kept (a TrajectoryStore or agent-runs folder, a knowledge.json or selectors.json) into a scope: records it does not hold yet are stored, those it holds stay as they are.",
            ),
        op("browser_save_trajectory", Writes, browser_compat::save_trajectory)
            .offline()
            .about(
                "Save the trajectory of a finished browser run given as browser-agent-driver's turns, and nothing else (as its TrajectoryStore.save: no session, fact or selector), answering the trajectory in its shape.",
            ),
        op("browser_trajectories", Reads, browser_compat::trajectories)
            .offline()
            .about(
                "Every stored trajectory of a scope, oldest first, in browser-agent-driver's shape (steps with their actions, snapshot hashes and verification).",
            ),
        op("browser_match", Reads, browser_compat::best_match)
            .offline()
            .about(
                "The stored successful trajectory most like a goal (on a site, within a TTL, by similarity or trace score), above a similarity threshold; none when nothing is close.",
            ),
        op("browser_replayable", Reads, browser_compat::replayable)
            .offline()
            .output("browser_match")
            .about(
                "The trajectory to replay without a model: a goal at least 0.85 (or min_similarity) similar, exactly the same origin, at least one step, successful and within the TTL.",
            ),
        op("browser_reference_text", Reads, browser_compat::reference_text)
            .offline()
            .output("browser_text")
            .about(
                "A trajectory rendered as the prompt's reference: its goal, then one line per step with its action, page and verification. It reads and writes nothing.",
            ),
        op("browser_record_fact", Writes, browser_compat::record_fact)
            .offline()
            .output("browser_site")
            .about(
                "Record one observed fact (timing, selector, pattern or quirk) about a site: the same value again raises its confidence, another value halves it.",
            ),
        op("browser_record_session", Writes, browser_compat::record_session)
            .offline()
            .output("browser_site")
            .about(
                "Append a previous run (browser-agent-driver's session entry) to a site's session history; the newest five by timestamp are kept.",
            ),
        op("browser_sessions", Reads, browser_compat::sessions)
            .offline()
            .about(
                "A site's session history (its previous runs: goal, outcome, success, final URL, turns, time), newest first, in browser-agent-driver's shape.",
            ),
        op("browser_knowledge", Reads, browser_compat::knowledge)
            .offline()
            .output("browser_text")
            .about(
                "A site's block for the prompt, as browser-agent-driver's AppKnowledge renders it: its SESSION HISTORY, then its APP KNOWLEDGE (facts of confidence 0.5 and up, by kind, most confident first); empty when it has neither.",
            ),
        op("browser_record_selector", Writes, browser_compat::record_selector)
            .offline()
            .output("browser_site")
            .about(
                "Record that a selector (an @ref or a stable selector) found an element of a site, counting its successes.",
            ),
        op("browser_selectors", Reads, browser_compat::selectors)
            .offline()
            .about(
                "A site's selector cache: each element with its last @ref, its stable selector and how often one worked, in the order first recorded.",
            ),
        op("browser_selectors_text", Reads, browser_compat::selectors_text)
            .offline()
            .output("browser_text")
            .about(
                "The KNOWN SELECTORS block for the prompt from the selector entries given, most used first; empty without entries. It reads and writes nothing.",
            ),
        op("browser_save_hints", Writes, browser_compat::save_hints)
            .offline()
            .output("browser_hints")
            .about(
                "Store a scope's cross-domain hints text, replacing the stored one, and answer it with the time it was stored.",
            ),
        op("browser_forget_knowledge", Deletes, browser_compat::forget_knowledge)
            .offline()
            .about(
                "Forget, for good, the facts learned about a site and, if asked, its session history; its selectors stay. One atomic step.",
            ),
        op("browser_save_suite_summary", Writes, browser_compat::save_suite_summary)
            .offline()
            .about(
                "Store a test suite's summary (a JSON object named by its id), replacing one with the same id; browser_export writes it as runs/<id>.json.",
            ),
        op("browser_suite_summaries", Reads, browser_compat::suite_summaries)
            .offline()
            .about(
                "Every test suite summary stored in a scope, as stored, ordered by id.",
            ),
        op("browser_site_key", Reads, browser_compat::site_of)
            .offline()
            .output("browser_site")
            .about(
                "The site a URL's memory is filed under (its host and port, or a safe name for what is no URL). It reads and writes nothing.",
            ),
        op("browser_suite_hints", Reads, browser_compat::suite_hints)
            .offline()
            .output("browser_text")
            .about(
                "The FEEDBACK FROM PREVIOUS RUNS hints of a test suite's evaluated runs (efficiency, accuracy, stale refs, loops, failures); empty when nothing stands out.",
            ),
        op("browser_run_id", Reads, browser_compat::run_id)
            .offline()
            .about(
                "A fresh run id, run_<ms>_<6 base36>, as the run registry makes them. It reads and writes nothing.",
            ),
        op("browser_build_context", Reads, browser_compat::build_context)
            .offline()
            .output("browser_text")
            .about(
                "Parts of a context assembled highest priority first within a budget of UTF-16 units, stopping at the part that overflows or skipping it. It reads and writes nothing.",
            ),
        op("turns_history", Reads, turns::history)
            .offline()
            .cli("turns show")
            .about(
                "A coding session, stored or in a log file, as the user sees it or as the model is sent it (neutral items or a provider's request).",
            ),
        op("turns_compact", Writes, turns::compact).offline().about(
            "Replace all but the last turns of a coding session (stored or a log file) by a summary, keeping the compacted turns' memories.",
        ),
        op("turns_tool_history", Writes, turns::tool_history)
            .offline()
            .output("turns_view")
            .about(
                "A coding session's tool-history setting, set to full or none for the turns that start after it when a mode is given, with its model view.",
            ),
        op("turns_memory", Reads, persistent::show)
            .cli("turns memory show")
            .about(
                "The user's global memory and a project's (Keen Code's MEMORY.md files, kept as notes): their texts, sizes and whether the system prompt cuts them at the cap.",
            ),
        op("turns_memory_write", Writes, persistent::write)
            .offline()
            .cli("turns memory write")
            .about(
                "Replace the global or a project's memory text. Only when the user asks to remember or forget something; a text that looks like a secret is refused.",
            ),
        op("turns_memory_import", Writes, persistent::import)
            .offline()
            .cli("turns memory import")
            .about(
                "Import the global or a project's memory from Keen Code's file (<home>/.keen/memory/global/MEMORY.md, <repo>/.keen/MEMORY.md), replacing the stored one.",
            ),
        op("turns_memory_export", Reads, persistent::export)
            .offline()
            .cli("turns memory export")
            .about(
                "Write the global or a project's memory as Keen Code's file (<home>/.keen/memory/global/MEMORY.md, <repo>/.keen/MEMORY.md), atomically.",
            ),
        op("trajectory_fingerprint", Reads, trajectory::fingerprint)
            .offline()
            .about(
                "popoto's 16-hex fingerprint of a JSON object of features (sorted keys, Python's JSON text, SHA-256). It reads and writes nothing.",
            ),
        op("trajectory_timeline", Reads, trajectory::timeline).offline().about(
            "A group's confidence after each of its episodes, oldest first, replayed with its partition's settings: how a pattern's confidence came to be.",
        ),
        op("note_history", Reads, evidence::history).about(
            "A note's versions, oldest first, each with who wrote it and what the write screen found.",
        ),
        op("note_restore", Writes, evidence::restore).about(
            "Put a note back to an earlier version (by number or time). Call it to undo a bad edit.",
        ),
        op("note_forget_by", Deletes, evidence::forget_by)
            .offline()
            .about(
                "Forget everything one writer wrote in the notes (a source, session or client), in one step and for good: each note goes back to its newest version left, or is gone.",
            ),
        op("note_export", Reads, evidence::export)
            .offline()
            .about(
                "Every note of a scope, held ones too, with each version's text, writer and findings: a copy note_import writes back.",
            ),
        op("note_import", Writes, evidence::import)
            .offline()
            .about(
                "Write the notes of a note_export document into a scope in one step, each with its versions and writers; nothing is written when one is refused.",
            ),
        op("browser_forget_by", Deletes, evidence::forget_browser_by)
            .offline()
            .about(
                "Forget every browser run one writer stored (a source, session or client) and what it taught each site, in one step and for good, each recorded in the audit trail.",
            ),
        op("turns_forget_by", Deletes, evidence::forget_turns_by)
            .offline()
            .about(
                "Forget, whole, every stored coding session one writer (a source, session or client) appended an event to, in one step and for good, each in the audit trail.",
            ),
        op("trajectory_forget_by", Deletes, trajectory::forget_by)
            .offline()
            .about(
                "Forget every episode one writer (a source, session or client) recorded in a partition, in one step and for good, and rebuild the patterns they fed from the episodes left.",
            ),
        op("recording_forget_by", Deletes, evidence::forget_recording_by)
            .offline()
            .about(
                "Forget every tool call one writer logged (a source, session or client), from every recorded session, in one step and for good, each session's forget in the audit trail.",
            ),
        op("memory_review", Reads, evidence::review)
            .cli("review list")
            .about(
                "The items the write screen held for review: text, writer, reasons.",
            ),
        op("memory_approve", Writes, evidence::approve)
            .offline()
            .cli("review approve")
            .about(
                "Approve a held item's version: recalled from now on, marked approved. Only a person should approve.",
            ),
        op("memory_reject", Deletes, evidence::reject)
            .cli("review reject")
            .about(
                "Reject a held item's version: forgotten for good.",
            ),
        op("memory_approve_run", Writes, evidence::approve_run)
            .offline()
            .cli("review approve-run")
            .about(
                "Approve a held browser run: recorded as it was held. Only a person should approve.",
            ),
        op("memory_reject_run", Deletes, evidence::reject_run)
            .cli("review reject-run")
            .about("Reject a held browser run: erased for good."),
        op("turns_review", Reads, review::turns_review)
            .offline()
            .cli("review outputs")
            .about(
                "The tool outputs of a stored session that the write screen flags: each with the reasons and whether approved, and who wrote the session.",
            ),
        op("turns_approve_output", Writes, review::turns_approve_output)
            .offline()
            .cli("review approve-output")
            .about(
                "Approve a flagged tool output of a stored session: every view shows it from now on, marked approved. Only a person should approve.",
            ),
        op("trajectory_review", Reads, review::trajectory_review)
            .offline()
            .cli("review patterns")
            .about(
                "The patterns of a partition that the write screen flags: each with the reasons and whether approved.",
            ),
        op(
            "trajectory_approve_pattern",
            Writes,
            review::trajectory_approve_pattern,
        )
        .offline()
        .cli("review approve-pattern")
        .about(
            "Approve a flagged pattern: recall returns it from now on. Only a person should approve.",
        ),
        op("memory_screen_policy", Reads, evidence::screen_policy)
            .offline()
            .cli("review policy")
            .about(
                "The store's write screen policy: off, flag (store and mark what it finds) or quarantine (hold it for review).",
            ),
        op("memory_set_screen_policy", Writes, evidence::set_screen_policy)
            .offline()
            .cli("review set-policy")
            .about(
                "Set the store's write screen policy (off, flag or quarantine) for every later write through every door.",
            ),
        op("memory_audit", Reads, evidence::audit)
            .cli("audit")
            .about(
                "The audit trail: each write, review and forget, with who and when.",
            ),
        op("check", Reads, check::check).offline().about(
            "Check a SQLite database: its integrity and the store's own invariants, every check with its findings. Call it when the memory seems wrong.",
        ),
    ]
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

/// The schemas of every operation, by file stem (`<name>.input`, `<output>.output`), each
/// once, in the table's order.
pub fn schemas() -> Vec<(String, Schema)> {
    let mut all: Vec<(String, Schema)> = Vec::new();
    for op in table() {
        if let Some(input) = op.input_schema() {
            all.push((format!("{}.input", op.name), input));
        }
        let output = format!("{}.output", op.output);
        if !all.iter().any(|(stem, _)| *stem == output) {
            all.push((output, op.output_schema()));
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole surface, one line per operation: a change of any door's name is a change of
    /// this snapshot, reviewed as such.
    /// `notes` writes, except with a command that only reads; other operations keep their
    /// effect whatever their input.
    #[test]
    fn the_effect_of_a_call_follows_its_input_where_it_may() {
        let op = |name: &str| table().iter().find(|op| op.name == name).expect(name);
        let notes = op("notes");
        for (input, effect) in [
            (
                serde_json::json!({"command": "view", "path": "/memories"}),
                Effect::Reads,
            ),
            (
                serde_json::json!({"command": "search", "query": "a"}),
                Effect::Reads,
            ),
            (
                serde_json::json!({"command": "create", "path": "/memories/a", "file_text": ""}),
                Effect::Writes,
            ),
            (serde_json::json!({"command": 7}), Effect::Writes),
        ] {
            assert_eq!(notes.effect_on(&input), effect, "{input}");
        }
        let recall = op("trajectory_recall");
        assert_eq!(
            recall.effect_on(&serde_json::json!({"command": "view"})),
            Effect::Reads
        );
        let forget = op("memory_forget");
        assert_eq!(forget.effect_on(&serde_json::Value::Null), Effect::Deletes);
    }

    #[test]
    fn every_door_name_of_every_operation() {
        let lines: Vec<String> = table()
            .iter()
            .map(|op| {
                format!(
                    "{:<22} {:<10} {:<7} mcp={:<5} python={:<22} node={:<22} cli={}",
                    op.name,
                    op.family(),
                    op.effect.as_str(),
                    op.mcp,
                    op.python,
                    op.node,
                    op.cli
                )
            })
            .collect();
        insta::assert_snapshot!(lines.join("\n"));
    }

    /// Every operation has a description of a useful length, names unique at every door, and
    /// a family the door lists.
    #[test]
    fn every_operation_is_described_and_named_once_per_door() {
        let mut seen = std::collections::BTreeSet::new();
        for op in table() {
            assert!(
                (40..=300).contains(&op.description.len()),
                "{}: {}",
                op.name,
                op.description
            );
            for (door, name) in [
                ("name", op.name.to_owned()),
                ("python", op.python.clone()),
                ("node", op.node.clone()),
                ("cli", op.cli.clone()),
            ] {
                assert!(seen.insert((door, name.clone())), "{door} {name} twice");
            }
            assert!(FAMILIES.contains(&op.family()), "{}", op.name);
        }
        assert_eq!(
            FAMILIES,
            Family::ALL.iter().map(|f| f.as_str()).collect::<Vec<_>>()
        );
    }

    /// Every operation is in the family its name says; the memory-wide ones are admin.
    #[test]
    fn families_follow_the_names() {
        let family = |name: &str| find(name).expect(name).family();
        assert_eq!(family("trajectory_recall"), "trajectory");
        assert_eq!(family("browser_run_start"), "browser");
        assert_eq!(family("turns_view"), "turns");
        assert_eq!(family("recording_next_call"), "recording");
        assert_eq!(family("notes"), "notes");
        assert_eq!(family("memory_forget"), "admin");
        assert_eq!(family("check"), "admin");
    }

    /// An input that does not fit is an `invalid_input` error naming the operation.
    #[test]
    fn a_wrong_input_is_invalid_input_naming_the_operation() {
        let store = crate::tests::in_memory();
        let env = crate::tests::env_on(&store);
        let recall = find("trajectory_recall").expect("recall");
        let error = recall
            .call(&env, serde_json::json!({"partition": 3}))
            .expect_err("a number is no partition");
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        assert!(error.message().contains("trajectory_recall"), "{error}");
        let list = find("memory_list").expect("list");
        let error = list
            .call(&env, serde_json::json!({"extra": 1}))
            .expect_err("list takes nothing");
        assert_eq!(error.input(), Some("extra"));
        assert_eq!(
            error.message(),
            "memory_list takes no arguments (got \"extra\")"
        );
        assert!(list.call(&env, Value::Null).is_ok());
        assert!(list.call(&env, serde_json::json!({})).is_ok());
        let error = list
            .call(&env, serde_json::json!([1]))
            .expect_err("an array is no input");
        assert_eq!(error.input(), Some("arguments"));
    }

    /// An input that does not fit its operation names the place that does not fit, as the
    /// error's `input` and in its message, from text and from a value alike (an unknown
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
                operation.call_text(&env, &text).map(Value::String),
            ] {
                let error = result.expect_err("a misfit");
                assert_eq!(
                    (error.kind(), error.input()),
                    (ErrorKind::InvalidInput, Some(place))
                );
                assert!(error.message().starts_with(message), "{error}");
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
                operation.call_text(&env, &text).map(Value::String),
            ] {
                let error = result.expect_err("a misfit");
                assert!(error.message().starts_with(&message), "{error}");
                assert!(error.message().chars().count() < 600, "{error}");
                let input = error.input().unwrap_or_default();
                assert!(input.chars().count() < 600, "{input}");
            }
        }
    }

    /// The same input as text or as a `Value` gives the same answer, and the same error with
    /// the same message, whether the input fits or not; text that is not JSON is an
    /// `invalid_input` about `input`.
    #[test]
    fn a_call_from_text_answers_as_a_call_from_a_value() {
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
        assert_eq!(
            serde_json::from_str::<Value>(&from_text).expect("JSON text"),
            from_value
        );
        let recall = find("trajectory_recall").expect("recall");
        for wrong in [
            r#"{"partition": 3}"#,
            r#"{"fingerprint": {}}"#,
            r#"{"partition": "p", "fingerprint": {"tool": "x"}, "limit": "two"}"#,
            r#"{"partition": "p", "fingerprint": {"tool": "x"}, "unknown": true}"#,
        ] {
            let value: Value = serde_json::from_str(wrong).expect("JSON");
            let expected = recall.call(&env, value).expect_err("a misfit");
            assert_eq!(
                recall.call_text(&env, wrong).expect_err("a misfit"),
                expected,
                "{wrong}"
            );
            assert!(!expected.message().contains(" at line "), "{expected}");
        }
        let error = recall
            .call_text(&env, "{\"partition\": ")
            .expect_err("no JSON");
        assert_eq!(
            (error.kind(), error.input()),
            (ErrorKind::InvalidInput, Some("input"))
        );
        assert!(error.message().starts_with("input: EOF"), "{error}");
        // An operation without input reads its text with the same checks.
        let list = find("memory_list").expect("list");
        assert_eq!(
            list.call_text(&env, r#"{"extra": 1}"#).expect_err("extra"),
            list.call(&env, serde_json::json!({"extra": 1}))
                .expect_err("extra")
        );
        assert!(list.call_text(&env, "null").is_ok());
    }

    #[test]
    fn camel_case_of_snake_case() {
        assert_eq!(camel("run_start"), "runStart");
        assert_eq!(camel("next_call"), "nextCall");
        assert_eq!(camel("list"), "list");
    }
}
