//! The tools the server offers: one per operation of the JSON contract that the contract's
//! table marks for MCP, each with the operation's committed input and output schemas and its
//! description, written for a model.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

pub(crate) use crate::ops::operations::Effect;
use crate::ops::operations::{self, Operation};
use crate::ops::{self, Env};

/// One tool: what a client lists, and the operation a call runs.
pub(crate) struct ToolDef {
    /// As listed to clients.
    pub(crate) tool: Tool,
    /// Reads, writes or deletes.
    pub(crate) effect: Effect,
    operation: Operation,
}

impl ToolDef {
    /// Runs the operation on `arguments`; a bad argument is an `invalid_input` failure.
    pub(crate) fn call(&self, env: &Env<'_>, arguments: JsonObject) -> Result<Value> {
        self.operation.call(env, Value::Object(arguments))
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

fn define(operation: Operation) -> Result<ToolDef> {
    let name = operation.name;
    let input = schema_object(&format!("{name}.input"))?.unwrap_or_else(no_arguments);
    let output = schema_object(&format!("{}.output", operation.output))?
        .with_context(|| format!("the operation {name} has no output schema"))?;
    let effect = operation.effect;
    let annotations = ToolAnnotations::new()
        .read_only(effect == Effect::Reads)
        .destructive(effect == Effect::Deletes)
        .idempotent(effect != Effect::Writes)
        .open_world(false);
    let tool = Tool::new(name, operation.description, input)
        .with_raw_output_schema(output)
        .annotate(annotations);
    Ok(ToolDef {
        tool,
        effect,
        operation,
    })
}

/// Every tool, in the order clients list them: the contract's operations the server offers.
pub(crate) fn all() -> Result<Vec<ToolDef>> {
    of_families(operations::FAMILIES)
}

/// The tools of the named families only (`--tools trajectory,browser`), in the same order.
pub(crate) fn of_families(families: &[&str]) -> Result<Vec<ToolDef>> {
    operations::all()
        .into_iter()
        .filter(|op| op.mcp && families.contains(&op.family()))
        .map(define)
        .collect()
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
                "notes",
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
