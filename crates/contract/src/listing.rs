//! The schemas as a tool list carries them: lean, because a client puts the whole list in
//! every session's context.
//!
//! A listed input schema is the committed one with what a model reads to call the tool: the
//! arguments and their descriptions (for a union of commands, each command's and its
//! arguments'), every type and constraint, and nothing else: no `$schema`, no `title`, no
//! description of the input as a whole (the tool's description says it) nor of the fields
//! inside an argument (an argument's description names what is unusual in them), no number
//! `format`, no default that says nothing (`""`, `false`, `0`, `[]`, `{}`), and every definition used once written
//! in place (one used more than once stays in `$defs`, once).
//! Output schemas are not listed: a model never reads them, and the committed ones under
//! `schemas/` (with every description) are what the language packages' types come from.

use serde_json::{Map, Value};

/// The input schema of a tool, as listed.
pub fn input(schema: &Value) -> Value {
    let mut schema = schema.clone();
    let Some(object) = schema.as_object_mut() else {
        return schema;
    };
    object.remove("$schema");
    if let Some(Value::Object(mut defs)) = object.remove("$defs") {
        let mut uses = Map::new();
        count_refs(&Value::Object(object.clone()), &mut uses);
        count_refs(&Value::Object(defs.clone()), &mut uses);
        let once: Vec<String> = defs
            .keys()
            .filter(|name| uses.get(&reference(name)).and_then(Value::as_u64) == Some(1))
            .filter(|name| !refers_to(&defs[name.as_str()], &reference(name)))
            .cloned()
            .collect();
        // A definition used once may itself use another used once: inline until none is left.
        for name in &once {
            let Some(def) = defs.remove(name) else {
                continue;
            };
            let target = reference(name);
            let mut root = Value::Object(std::mem::take(object));
            let mut placed = replace_ref(&mut root, &target, &def);
            if let Value::Object(root) = root {
                *object = root;
            }
            for other in defs.values_mut() {
                placed |= replace_ref(other, &target, &def);
            }
            if !placed {
                defs.insert(name.clone(), def);
            }
        }
        if !defs.is_empty() {
            object.insert("$defs".to_owned(), Value::Object(defs));
        }
    }
    keep_argument_descriptions(&mut schema);
    schema
}

fn reference(name: &str) -> String {
    format!("#/$defs/{name}")
}

fn count_refs(value: &Value, uses: &mut Map<String, Value>) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(target)) = object.get("$ref") {
                let n = uses.get(target).and_then(Value::as_u64).unwrap_or(0);
                uses.insert(target.clone(), Value::from(n + 1));
            }
            object.values().for_each(|v| count_refs(v, uses));
        }
        Value::Array(items) => items.iter().for_each(|v| count_refs(v, uses)),
        _ => {}
    }
}

fn refers_to(value: &Value, target: &str) -> bool {
    match value {
        Value::Object(object) => {
            object.get("$ref").and_then(Value::as_str) == Some(target)
                || object.values().any(|v| refers_to(v, target))
        }
        Value::Array(items) => items.iter().any(|v| refers_to(v, target)),
        _ => false,
    }
}

/// Writes `def` where `{"$ref": target}` is, keeping the reference's own keywords (its
/// description) over the definition's; whether it found the reference.
fn replace_ref(value: &mut Value, target: &str, def: &Value) -> bool {
    match value {
        Value::Object(object) => {
            if object.get("$ref").and_then(Value::as_str) == Some(target) {
                object.remove("$ref");
                if let Value::Object(def) = def {
                    for (key, v) in def {
                        if key != "title" && !object.contains_key(key) {
                            object.insert(key.clone(), v.clone());
                        }
                    }
                }
                return true;
            }
            object
                .values_mut()
                .fold(false, |found, v| replace_ref(v, target, def) | found)
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |found, v| replace_ref(v, target, def) | found),
        _ => false,
    }
}

/// Drops every description but the arguments' (and, for a union of commands, each
/// command's), and every title.
fn keep_argument_descriptions(root: &mut Value) {
    if let Value::Object(object) = root {
        object.remove("description");
        keep_arguments(object);
    }
}

/// Keeps the descriptions of `object`'s own properties and, in a union, of each branch and
/// its properties; drops the rest, and the titles.
fn keep_arguments(object: &mut Map<String, Value>) {
    object.remove("title");
    for (key, value) in object.iter_mut() {
        match (key.as_str(), value) {
            ("description", _) => {}
            ("properties", Value::Object(arguments)) => {
                arguments.values_mut().for_each(keep_own_description);
            }
            ("oneOf" | "anyOf", Value::Array(commands)) => {
                for command in commands {
                    if let Value::Object(command) = command {
                        keep_arguments(command);
                    }
                }
            }
            (_, value) => strip(value),
        }
    }
}

/// Keeps the schema's own description and drops what [`strip`] drops, there and below.
fn keep_own_description(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    let description = object.remove("description");
    strip(schema);
    if let (Value::Object(object), Some(description)) = (schema, description) {
        object.insert("description".to_owned(), description);
    }
}

/// Drops a default that says nothing: `""`, `false`, `0`, `[]` or `{}`.
fn drop_empty_default(schema: &mut Map<String, Value>) {
    let empty = match schema.get("default") {
        Some(Value::String(text)) => text.is_empty(),
        Some(Value::Bool(flag)) => !flag,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::Object(members)) => members.is_empty(),
        _ => false,
    };
    if empty {
        schema.remove("default");
    }
}

/// Drops every `title`, `description` and `format` keyword; a map of properties holds only schemas
/// (objects), so a string under these names is the keyword, and properties of those names
/// stay.
fn strip(value: &mut Value) {
    match value {
        Value::Object(object) => {
            // `int64` or `double` tells a model nothing `integer` or `number` does not.
            for keyword in ["title", "description", "format"] {
                if object.get(keyword).is_some_and(Value::is_string) {
                    object.remove(keyword);
                }
            }
            drop_empty_default(object);
            object.values_mut().for_each(strip);
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A definition used once is written in place, one used twice stays; only the
    /// arguments keep a description.
    #[test]
    fn definitions_used_once_are_inlined() {
        let committed = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "In",
            "description": "The input.",
            "type": "object",
            "properties": {
                "a": {"description": "An a.", "$ref": "#/$defs/A"},
                "b": {"$ref": "#/$defs/B"},
                "c": {"$ref": "#/$defs/B"}
            },
            "$defs": {
                "A": {"title": "A", "description": "Any A.", "type": "object",
                      "properties": {"x": {"description": "An x.", "type": "string"}}},
                "B": {"description": "A B.", "type": "integer"}
            }
        });
        assert_eq!(
            input(&committed),
            json!({
                "type": "object",
                "properties": {
                    "a": {"description": "An a.", "type": "object",
                          "properties": {"x": {"type": "string"}}},
                    "b": {"$ref": "#/$defs/B"},
                    "c": {"$ref": "#/$defs/B"}
                },
                "$defs": {"B": {"type": "integer"}}
            })
        );
    }

    /// Each command of a union keeps its description and its arguments'; a property named
    /// `title` is data and stays.
    #[test]
    fn commands_keep_their_descriptions() {
        let committed = json!({
            "type": "object",
            "oneOf": [{
                "description": "Views.",
                "type": "object",
                "properties": {
                    "title": {"description": "A title.", "type": "string"},
                    "range": {"description": "Lines.", "type": "array",
                              "items": {"description": "A line.", "type": "integer"}}
                }
            }]
        });
        let listed = input(&committed);
        assert_eq!(listed["oneOf"][0]["description"], "Views.");
        assert_eq!(
            listed["oneOf"][0]["properties"]["title"]["description"],
            "A title."
        );
        assert_eq!(
            listed["oneOf"][0]["properties"]["range"]["items"],
            json!({"type": "integer"})
        );
    }
}
