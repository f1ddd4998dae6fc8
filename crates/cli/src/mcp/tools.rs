//! The tools the server offers: one per operation of the JSON contract, each with the
//! operation's committed input and output schemas and a description written for a model.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ops::{self, Env, Failure};

/// What a tool does to the memory, for the client's annotations and the server's write gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Reads only.
    Reads,
    /// Adds to the memory.
    Writes,
    /// Deletes from the memory, for good.
    Deletes,
}

type Call = Box<dyn Fn(&Env<'_>, JsonObject) -> Result<Value> + Send + Sync>;

/// One tool: what a client lists, and the operation a call runs.
pub(crate) struct ToolDef {
    /// As listed to clients.
    pub(crate) tool: Tool,
    /// Reads, writes or deletes.
    pub(crate) effect: Effect,
    call: Call,
}

impl ToolDef {
    /// Runs the operation on `arguments`; a bad argument is an `invalid_input` failure.
    pub(crate) fn call(&self, env: &Env<'_>, arguments: JsonObject) -> Result<Value> {
        (self.call)(env, arguments)
    }
}

/// A schema of the contract as a JSON object; `None` for an operation without a JSON input
/// (listed with a schema that takes no argument).
fn schema_object(name: &str) -> Result<Option<Arc<JsonObject>>> {
    let Some((_, schema)) = ops::schemas().into_iter().find(|(n, _)| *n == name) else {
        return Ok(None);
    };
    match serde_json::to_value(schema)? {
        Value::Object(object) => Ok(Some(Arc::new(object))),
        other => bail!("the schema {name} is not an object: {other}"),
    }
}

/// The input schema of a tool that takes no argument.
fn no_arguments() -> Arc<JsonObject> {
    let mut object = JsonObject::new();
    object.insert("type".to_owned(), Value::from("object"));
    object.insert("properties".to_owned(), Value::Object(JsonObject::new()));
    object.insert("additionalProperties".to_owned(), Value::Bool(false));
    Arc::new(object)
}

fn define(
    name: &'static str,
    description: &'static str,
    effect: Effect,
    call: Call,
) -> Result<ToolDef> {
    let input = schema_object(&format!("{name}.input"))?.unwrap_or_else(no_arguments);
    let output = schema_object(&format!("{name}.output"))?
        .with_context(|| format!("the operation {name} has no output schema"))?;
    let annotations = ToolAnnotations::new()
        .read_only(effect == Effect::Reads)
        .destructive(effect == Effect::Deletes)
        .idempotent(effect != Effect::Writes)
        .open_world(false);
    let tool = Tool::new(name, description, input)
        .with_raw_output_schema(output)
        .annotate(annotations);
    Ok(ToolDef { tool, effect, call })
}

/// The arguments as the operation's input; a mistake names the tool and serde's reason.
fn arguments<I: DeserializeOwned>(tool: &str, arguments: JsonObject) -> Result<I> {
    serde_json::from_value(Value::Object(arguments)).map_err(|e| {
        Failure::invalid("arguments", format!("invalid arguments for {tool}: {e}")).into()
    })
}

fn encode<O: Serialize>(output: &O) -> Result<Value> {
    serde_json::to_value(output).context("encoding the result as JSON")
}

/// A tool whose operation takes a JSON input.
fn with_input<I, O>(
    name: &'static str,
    description: &'static str,
    effect: Effect,
    op: fn(&Env<'_>, &I) -> Result<O>,
) -> Result<ToolDef>
where
    I: DeserializeOwned + 'static,
    O: Serialize + 'static,
{
    let call: Call = Box::new(move |env, args| encode(&op(env, &arguments::<I>(name, args)?)?));
    define(name, description, effect, call)
}

/// A tool whose operation takes no input.
fn without_input<O>(
    name: &'static str,
    description: &'static str,
    effect: Effect,
    op: fn(&Env<'_>) -> Result<O>,
) -> Result<ToolDef>
where
    O: Serialize + 'static,
{
    let call: Call = Box::new(move |env, args| {
        if let Some(key) = args.keys().next() {
            return Err(Failure::invalid(
                key.as_str(),
                format!("{name} takes no arguments (got {key:?})"),
            )
            .into());
        }
        encode(&op(env)?)
    });
    define(name, description, effect, call)
}

/// Every tool, in the order clients list them.
pub(crate) fn all() -> Result<Vec<ToolDef>> {
    use Effect::{Deletes, Reads, Writes};
    use ops::{browser, memory, recording, stats, trajectory, turns};
    Ok(vec![
        with_input(
            "trajectory_record",
            "Record finished tasks as episodes (fingerprint, actions taken, outcome) in procedural memory. Call it after each task so later tasks can learn what worked.",
            Writes,
            trajectory::record,
        )?,
        with_input(
            "trajectory_crystallize",
            "Turn the episodes recorded since the last run into patterns: the action sequence that works for each fingerprint, with its confidence. Call it after recording a batch of episodes.",
            Writes,
            trajectory::crystallize,
        )?,
        with_input(
            "trajectory_recall",
            "Recall the patterns that worked for a task like this one (a full or partial fingerprint), best first. Call it before starting a task to reuse a proven sequence of actions.",
            Reads,
            trajectory::recall,
        )?,
        with_input(
            "trajectory_patterns",
            "List every pattern of a partition with its confidence and evidence, no fingerprint needed. Call it to review what procedural memory has learned.",
            Reads,
            trajectory::patterns,
        )?,
        with_input(
            "browser_context",
            "The memory context for a browser run with this goal on this URL: past sessions on the site, a reference trajectory, app knowledge and known selectors. Call it before the run and put the text in the prompt.",
            Reads,
            browser::context,
        )?,
        with_input(
            "browser_record_run",
            "Record a finished browser run (goal, start URL, turns, success) so later runs on the site get its trajectory, session, learned facts and selectors. Call it once when a run ends.",
            Writes,
            browser::record_run,
        )?,
        with_input(
            "browser_runs",
            "List registered browser runs, newest first, filtered by session, domain or status. Call it to find a run to resume or fork.",
            Reads,
            browser::runs,
        )?,
        with_input(
            "browser_resume",
            "The scenario that continues a run in its session from where it ended (goal, start URL, session). Call it to pick an interrupted run back up.",
            Reads,
            browser::resume,
        )?,
        with_input(
            "browser_fork",
            "The scenario that branches from a run into a new session, starting where it ended. Call it to try another approach without touching the original session.",
            Reads,
            browser::fork,
        )?,
        with_input(
            "turns_append",
            "Append a coding session's events (session start, user messages, assistant turns with their memory of files changed and commands failed) as they happen. Retrying with the same events at the same positions is safe.",
            Writes,
            turns::append,
        )?,
        with_input(
            "turns_view",
            "The model view of a coding session rendered for a provider (OpenAI Chat, OpenAI Responses or Genkit), with the recent turns' memories. Call it to build the messages for the next model request.",
            Reads,
            turns::view,
        )?,
        with_input(
            "recording_append",
            "Append recorded tool calls, each with the memory snapshot after it, to a session. Call it as tools run so the session can later become a replayable trail.",
            Writes,
            recording::append,
        )?,
        with_input(
            "recording_templatize",
            "Turn a session's recorded tool calls into trail YAML whose literals from memory are ${key} tokens, so the recording survives a change of memory. Call it when a session succeeded and should be replayable.",
            Reads,
            recording::templatize,
        )?,
        with_input(
            "recording_lint",
            "Find literals in a trail that equal current or past memory values: recordings that will go stale. Call it before committing or replaying a trail.",
            Reads,
            recording::lint,
        )?,
        with_input(
            "recording_next_call",
            "The next step of a trail replay for a device: its tool calls resolved against memory as it stands now, or done. Call it after each step, passing the memory and the number of steps done.",
            Reads,
            recording::next_call,
        )?,
        without_input(
            "memory_list",
            "List everything the memory holds: procedural partitions, coding sessions, tool-log sessions and browser scopes, with counts. Call it to discover what to recall or forget.",
            Reads,
            memory::list,
        )?,
        with_input(
            "memory_forget",
            "Forget one partition, session, browser scope (or one site of it), run or trajectory for good, erasing its text from the database. Call it only when the user asks to delete that memory.",
            Deletes,
            memory::forget,
        )?,
        without_input(
            "memory_stats",
            "The database file, its schema version, size and the rows of every table. Call it to check the memory store's health or size.",
            Reads,
            stats::stats,
        )?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tool the issue names, exactly so, and each with its operation's schemas.
    #[test]
    fn every_named_tool_is_listed_with_object_schemas() {
        let tools = all().expect("tools");
        let names: Vec<&str> = tools.iter().map(|t| t.tool.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "trajectory_record",
                "trajectory_crystallize",
                "trajectory_recall",
                "trajectory_patterns",
                "browser_context",
                "browser_record_run",
                "browser_runs",
                "browser_resume",
                "browser_fork",
                "turns_append",
                "turns_view",
                "recording_append",
                "recording_templatize",
                "recording_lint",
                "recording_next_call",
                "memory_list",
                "memory_forget",
                "memory_stats",
            ]
        );
        for def in &tools {
            let name = &def.tool.name;
            assert_eq!(def.tool.input_schema["type"], "object", "{name}");
            let output = def.tool.output_schema.as_ref().expect("output schema");
            assert_eq!(output["type"], "object", "{name}");
            let description = def.tool.description.as_deref().unwrap_or_default();
            assert!(
                (40..=300).contains(&description.len()),
                "{name}: {description}"
            );
        }
    }
}
