//! Portable schemas: what every schema of the contract is made into before it is committed or
//! listed, so that a client which maps tool schemas onto a narrower dialect (a single `type`
//! per schema, no `null` type, formats from a known list) takes them as they are.
//!
//! The rules, checked over every schema by [`problems`]:
//!
//! - optional means "not required": an `Option<T>` field is `T`'s schema, never a type array
//!   with `"null"` nor an `anyOf` with a `{"type": "null"}` branch, and never `default: null`
//!   (serde still accepts an explicit `null` for it, as before);
//! - no bare `true` or `false` where a schema is expected (`additionalProperties` may be a
//!   boolean) and no schema without a validation keyword: a free-form value says what it is
//!   ([`json_object`], [`object_or_number`], ...);
//! - integer formats are `int32` or `int64`, the ones clients know; an unsigned integer is
//!   `minimum: 0` without a format.

use schemars::transform::{RecursiveTransform, Transform};
use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value};

/// The formats a portable schema may carry.
pub const KNOWN_FORMATS: &[&str] = &["int32", "int64", "float", "double", "date-time"];

/// The transform that makes a generated schema portable (see the module's rules).
pub fn transform() -> impl Transform + Clone + Send + 'static {
    RecursiveTransform(|schema: &mut Schema| {
        if let Some(object) = schema.as_object_mut() {
            make_portable(object);
        }
    })
}

fn is_null_schema(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some("null")
}

fn make_portable(object: &mut Map<String, Value>) {
    if object.get("default").is_some_and(Value::is_null) {
        object.remove("default");
    }
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if let [single] = types.as_slice() {
            let single = single.clone();
            object.insert("type".to_owned(), single);
        }
    }
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(branches)) = object.get_mut("anyOf") {
        branches.retain(|b| !is_null_schema(b));
        if let [Value::Object(_)] = branches.as_slice() {
            collapse_single_branch(object);
        }
    }
    let unknown_format = object
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|format| !KNOWN_FORMATS.contains(&format));
    if unknown_format {
        object.remove("format");
    }
}

/// `{"anyOf": [X], "description": ...}` becomes X with the outer keywords (a description, a
/// default) beside it, unless a keyword is in both.
fn collapse_single_branch(object: &mut Map<String, Value>) {
    let Some(Value::Array(mut branches)) = object.remove("anyOf") else {
        return;
    };
    let Some(Value::Object(branch)) = branches.pop() else {
        return;
    };
    if branch.keys().any(|key| object.contains_key(key)) {
        object.insert(
            "anyOf".to_owned(),
            Value::Array(vec![Value::Object(branch)]),
        );
        return;
    }
    object.extend(branch);
}

/// A JSON object with any members.
pub fn json_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "object"})
}

/// A list of JSON objects with any members.
pub fn json_objects(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "array", "items": {"type": "object"}})
}

/// A JSON object or a number.
pub fn object_or_number(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"anyOf": [{"type": "object"}, {"type": "number"}]})
}

/// A JSON object or a string (its JSON text).
pub fn object_or_string(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"anyOf": [{"type": "object"}, {"type": "string"}]})
}

/// A JSON array or object.
pub fn array_or_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"anyOf": [{"type": "array"}, {"type": "object"}]})
}

/// The keywords that constrain a value: a schema with none of them accepts anything.
const CONSTRAINING: &[&str] = &[
    "type",
    "enum",
    "const",
    "$ref",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "properties",
    "items",
    "required",
    "minimum",
    "maximum",
    "pattern",
    "format",
];

/// Every way `schema` breaks the rules of this module, each as `path: problem`; none for a
/// portable schema.
pub fn problems(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    check(schema, "", &mut found);
    found
}

fn check(value: &Value, path: &str, found: &mut Vec<String>) {
    let Value::Object(object) = value else {
        found.push(format!("{path}: a bare {value} where a schema is expected"));
        return;
    };
    if !CONSTRAINING.iter().any(|key| object.contains_key(*key)) {
        found.push(format!("{path}: a schema that names no type"));
    }
    match object.get("type") {
        Some(Value::Array(types)) => found.push(format!("{path}: a type array {types:?}")),
        Some(Value::String(null)) if null == "null" => {
            found.push(format!("{path}: the null type"));
        }
        _ => {}
    }
    if object.get("default").is_some_and(Value::is_null) {
        found.push(format!("{path}: default null"));
    }
    if let Some(format) = object.get("format").and_then(Value::as_str)
        && !KNOWN_FORMATS.contains(&format)
    {
        found.push(format!("{path}: the format {format:?} clients do not know"));
    }
    for (key, child) in object {
        let at = format!("{path}/{key}");
        match key.as_str() {
            "properties" | "$defs" | "patternProperties" => {
                for (name, schema) in child.as_object().into_iter().flatten() {
                    check(schema, &format!("{at}/{name}"), found);
                }
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                for (i, schema) in child.as_array().into_iter().flatten().enumerate() {
                    check(schema, &format!("{at}/{i}"), found);
                }
            }
            "items" | "not" | "contains" | "propertyNames" => check(child, &at, found),
            "additionalProperties" if !child.is_boolean() => check(child, &at, found),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn portable(mut schema: Schema) -> Value {
        transform().transform(&mut schema);
        schema.to_value()
    }

    /// Nullable forms become the plain type, and each is a problem before.
    #[test]
    fn optional_values_lose_their_null() {
        let cases = [
            (
                json!({"type": ["integer", "null"], "format": "uint64", "minimum": 0, "default": null}),
                json!({"type": "integer", "minimum": 0}),
            ),
            (
                json!({"description": "d", "anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}]}),
                json!({"description": "d", "$ref": "#/$defs/X"}),
            ),
            (
                json!({"type": ["string", "null"], "enum": ["a", null]}),
                json!({"type": "string", "enum": ["a"]}),
            ),
            (
                json!({"type": "integer", "format": "int64"}),
                json!({"type": "integer", "format": "int64"}),
            ),
        ];
        for (before, after) in cases {
            let schema = Schema::try_from(before.clone()).expect("schema");
            assert_eq!(portable(schema), after, "{before}");
            assert!(problems(&after).is_empty(), "{after}");
            if before != after {
                assert!(!problems(&before).is_empty(), "{before}");
            }
        }
    }

    /// A bare `true`, an untyped property and a null type are each found, with their path.
    #[test]
    fn problems_name_where_they_are() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": true,
                "b": {"description": "anything"},
                "c": {"type": "array", "items": {"type": "null"}},
                "d": {"type": "object", "additionalProperties": true}
            }
        });
        assert_eq!(
            problems(&schema),
            [
                "/properties/a: a bare true where a schema is expected",
                "/properties/b: a schema that names no type",
                "/properties/c/items: the null type",
            ]
        );
    }
}
