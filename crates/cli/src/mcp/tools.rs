//! The tools the server offers: one per operation of the JSON contract that the contract's
//! table marks for MCP, each with the operation's committed input schema as a list carries it
//! ([`listing`]: lean, without output schemas) and its description, written for a model.

use std::sync::Arc;

use anyhow::{Result, bail};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

use crate::ops::Env;
use crate::ops::listing;
pub(crate) use crate::ops::operations::Effect;
use crate::ops::operations::{self, Operation};

/// One tool: what a client lists, and the operation a call runs.
pub(crate) struct ToolDef {
    /// As listed to clients.
    pub(crate) tool: Tool,
    operation: Operation,
}

impl ToolDef {
    /// What the call does to the memory with `arguments` (`notes` reads with `view`).
    pub(crate) fn effect_on(&self, arguments: &Value) -> Effect {
        self.operation.effect_on(arguments)
    }

    /// Runs the operation on `arguments`; a bad argument is an `invalid_input` failure.
    pub(crate) fn call(&self, env: &Env<'_>, arguments: Value) -> Result<Value> {
        Ok(self.operation.call(env, arguments)?)
    }
}

/// The input schema of `operation` as listed ([`listing`]); `None` for an operation without
/// a JSON input (listed with a schema that takes no argument).
fn input_schema(operation: &Operation) -> Result<Option<Arc<JsonObject>>> {
    let Some(schema) = operation.input_schema() else {
        return Ok(None);
    };
    match listing::input(&serde_json::to_value(schema)?) {
        Value::Object(object) => Ok(Some(Arc::new(object))),
        other => bail!("the schema {} is not an object: {other}", operation.name),
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
    let input = input_schema(&operation)?.unwrap_or_else(no_arguments);
    let effect = operation.effect;
    // Only the hints that differ from the protocol's defaults (not read-only, destructive,
    // not idempotent, open world); whether a read is destructive or idempotent means nothing.
    let annotations = match effect {
        Effect::Reads => ToolAnnotations::new().read_only(true),
        Effect::Writes => ToolAnnotations::new().destructive(false),
        Effect::Deletes => ToolAnnotations::new().idempotent(true),
    }
    .open_world(false);
    let tool = Tool::new(name, operation.description, input).annotate(annotations);
    Ok(ToolDef { tool, operation })
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

    /// Every tool the contract offers over MCP, exactly so, each with an object input schema.
    #[test]
    fn every_named_tool_is_listed_with_object_schemas() {
        let tools = all().expect("tools");
        // Every operation the table marks for MCP, under its name, in the table's order.
        let names: Vec<&str> = tools.iter().map(|t| t.tool.name.as_ref()).collect();
        let marked: Vec<&str> = operations::table()
            .iter()
            .filter(|op| op.mcp)
            .map(|op| op.name)
            .collect();
        assert_eq!(names, marked);
        assert!(names.contains(&"notes") && names.len() >= 19, "{names:?}");
        for def in &tools {
            let name = &def.tool.name;
            assert_eq!(def.tool.input_schema["type"], "object", "{name}");
            assert!(def.tool.output_schema.is_none(), "{name}");
            let description = def.tool.description.as_deref().unwrap_or_default();
            assert!(
                (40..=300).contains(&description.len()),
                "{name}: {description}"
            );
        }
    }

    /// The bytes of a `tools/list` result serving `families`, as a client receives it.
    fn listed_bytes(families: &[&str]) -> usize {
        let tools: Vec<Tool> = of_families(families)
            .expect("tools")
            .into_iter()
            .map(|def| def.tool)
            .collect();
        serde_json::to_vec(&serde_json::json!({ "tools": tools }))
            .expect("JSON")
            .len()
    }

    /// The whole list fits in 28 KB (about 2 KB of it the typed events of `turns_append`,
    /// which let a model write a session right the first time, 2.5 KB the review, history
    /// and audit tools, and 0.4 KB the writer fields of the record and append tools) and the notes family alone in 4 KB, so a client that serves them keeps
    /// its context small.
    #[test]
    fn the_lists_stay_small() {
        let all = listed_bytes(operations::FAMILIES);
        assert!(all <= 28 * 1024, "tools/list is {all} bytes");
        let notes = listed_bytes(&["notes"]);
        assert!(
            notes <= 4 * 1024,
            "tools/list --tools notes is {notes} bytes"
        );
    }

    /// Every listed schema is portable: no null types or type arrays, no bare booleans or
    /// untyped values, only integer formats clients know.
    #[test]
    fn every_listed_schema_is_portable() {
        for def in all().expect("tools") {
            let name = &def.tool.name;
            let input = Value::Object((*def.tool.input_schema).clone());
            let problems = crate::ops::portable::problems(&input);
            assert!(problems.is_empty(), "{name}: {problems:#?}");
        }
    }
}
