//! Strict tool schemas (pi-ai's `constrained-sampling.js`): which tools ask
//! for constrained sampling, and the strict subset of JSON Schema providers
//! accept for it (every property required, optional ones made nullable, no
//! extra properties).
//!
//! pi's built-in `read`, `bash`, `edit` and `write` tools declare
//! `constrainedSampling: {type: "json_schema", strict: "prefer"}`: they are
//! sent strict where the model supports it and the schema allows it, and
//! plain otherwise. [`ToolSpec`] carries no such declaration, so the tools
//! are recognised by name.

use serde_json::{Map, Value, json};

use super::ToolSpec;

/// pi's tools that prefer strict sampling.
const STRICT_PREFERRING_TOOLS: [&str; 4] = ["read", "bash", "edit", "write"];

/// Keywords no strict schema may use.
const UNSUPPORTED_KEYS: [&str; 16] = [
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
];

/// A provider's extra test for keywords its strict mode rejects.
pub type KeywordFilter = fn(&str, &Value) -> bool;

/// Whether the tool asks for strict sampling when possible.
pub fn prefers_strict(tool: &ToolSpec) -> bool {
    STRICT_PREFERRING_TOOLS.contains(&tool.name.as_str())
}

fn is_structured(schema: &Value) -> bool {
    let Some(o) = schema.as_object() else { return false };
    let types: Vec<&str> = match o.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    types.contains(&"object") || types.contains(&"array") || o.contains_key("properties") || o.contains_key("items")
}

fn allows_null(schema: &Value) -> bool {
    let Some(o) = schema.as_object() else { return false };
    let null_type = match o.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => false,
    };
    null_type
        || o.get("const") == Some(&Value::Null)
        || o.get("enum").and_then(Value::as_array).is_some_and(|e| e.contains(&Value::Null))
        || o.get("anyOf").and_then(Value::as_array).is_some_and(|v| v.iter().any(allows_null))
}

fn make_node_strict(schema: &mut Value, filter: Option<KeywordFilter>) -> Result<(), String> {
    let Some(o) = schema.as_object_mut() else { return Err("boolean schemas are unsupported".into()) };
    if let Some(key) = UNSUPPORTED_KEYS.iter().find(|k| o.contains_key(**k)) {
        return Err(format!("{key} schemas are unsupported"));
    }
    if let Some(filter) = filter
        && let Some((key, _)) = o.iter().find(|(k, v)| filter(k, v))
    {
        return Err(format!("{key} is unsupported"));
    }
    if !o.contains_key("type") && !o.contains_key("anyOf") && !o.contains_key("enum") {
        return Err("schemas without a type are unsupported".into());
    }
    if let Some(any_of) = o.get_mut("anyOf") {
        let Some(variants) = any_of.as_array_mut().filter(|v| !v.is_empty()) else {
            return Err("anyOf must contain at least one schema".into());
        };
        for variant in variants {
            if is_structured(variant) {
                return Err("object and array unions are unsupported".into());
            }
            make_node_strict(variant, filter)?;
        }
    }
    if let Some(items) = o.get_mut("items") {
        if items.is_array() {
            return Err("tuple schemas are unsupported".into());
        }
        make_node_strict(items, filter)?;
    }
    let is_object = o.get("type").and_then(Value::as_str) == Some("object");
    if o.contains_key("properties") && !is_object {
        return Err("properties require type object".into());
    }
    if !is_object {
        return Ok(());
    }
    if o.get("additionalProperties").is_some_and(|a| *a != Value::Bool(false)) {
        return Err("schema-valued or true additionalProperties is unsupported".into());
    }
    if o.get("properties").is_some_and(|p| !p.is_object()) {
        return Err("object properties must be a schema map".into());
    }
    let required: Vec<String> = match o.get("required") {
        None => Vec::new(),
        Some(Value::Array(r)) if r.iter().all(Value::is_string) => {
            r.iter().filter_map(Value::as_str).map(str::to_string).collect()
        }
        Some(_) => return Err("object required must be a string array".into()),
    };
    let mut properties = match o.get_mut("properties") {
        Some(Value::Object(p)) => std::mem::take(p),
        _ => Map::new(),
    };
    if required.iter().any(|r| !properties.contains_key(r)) {
        return Err("required contains an unknown property".into());
    }
    for (key, property) in properties.iter_mut() {
        make_node_strict(property, filter)?;
        if !required.contains(key) && !allows_null(property) {
            let original = std::mem::take(property);
            *property = json!({"anyOf": [original, {"type": "null"}]});
        }
    }
    let names: Vec<Value> = properties.keys().map(|k| json!(k)).collect();
    if o.contains_key("properties") {
        o.insert("properties".into(), Value::Object(properties));
    }
    o.insert("required".into(), Value::Array(names));
    o.insert("additionalProperties".into(), json!(false));
    Ok(())
}

/// pi's `makeStrictJsonSchema`: the strict form of a tool's parameters, or
/// why it has none.
pub fn make_strict(schema: &Value, filter: Option<KeywordFilter>) -> Result<Value, String> {
    let mut cloned = schema.clone();
    if !cloned.is_object() {
        return Err("root schema must have type object".into());
    }
    make_node_strict(&mut cloned, filter)?;
    if cloned.get("type").and_then(Value::as_str) != Some("object") {
        return Err("root schema must have type object".into());
    }
    Ok(cloned)
}

/// pi's `resolveJsonSchemaStrictSampling` for `strict: "prefer"` tools: the
/// strict parameters when the tool prefers them, the model supports them
/// and the schema allows them; `None` means send the tool as it is.
pub fn strict_parameters(tool: &ToolSpec, supported: bool, filter: Option<KeywordFilter>) -> Option<Value> {
    if !supported || !prefers_strict(tool) {
        return None;
    }
    make_strict(&tool.parameters, filter).ok()
}

/// Keywords Claude's strict tool use rejects (numeric bounds, item counts
/// beyond 0/1, string formats other than the listed ones).
pub fn anthropic_unsupported_keyword(key: &str, value: &Value) -> bool {
    const REJECTED: [&str; 11] = [
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "maxItems",
        "uniqueItems",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
    ];
    const FORMATS: [&str; 10] =
        ["date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"];
    if REJECTED.contains(&key) {
        return true;
    }
    match key {
        "minItems" => *value != json!(0) && *value != json!(1),
        "format" => value.as_str().is_none_or(|f| !FORMATS.contains(&f)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, parameters: Value) -> ToolSpec {
        ToolSpec { name: name.into(), description: String::new(), parameters }
    }

    #[test]
    fn optional_properties_become_nullable_and_required() {
        let t = tool(
            "read",
            json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"},
                "offset": {"type": "number"}, "mode": {"type": ["string", "null"]}}}),
        );
        assert_eq!(
            strict_parameters(&t, true, None).unwrap(),
            json!({"type": "object", "required": ["path", "offset", "mode"], "properties": {"path": {"type": "string"},
                "offset": {"anyOf": [{"type": "number"}, {"type": "null"}]}, "mode": {"type": ["string", "null"]}},
                "additionalProperties": false})
        );
        assert_eq!(strict_parameters(&t, false, None), None);
        assert_eq!(strict_parameters(&tool("grep", t.parameters.clone()), true, None), None);
    }

    #[test]
    fn unsupported_schemas_stay_plain() {
        let bounded = json!({"type": "object", "properties": {"n": {"type": "number", "minimum": 1}}});
        assert!(make_strict(&bounded, None).is_ok());
        assert!(make_strict(&bounded, Some(anthropic_unsupported_keyword)).is_err());
        for bad in [
            json!({"type": "object", "properties": {"x": {"$ref": "#/a"}}}),
            json!({"type": "object", "additionalProperties": true}),
            json!({"type": "object", "properties": {"x": {"description": "untyped"}}}),
            json!({"type": "object", "required": ["y"], "properties": {}}),
            json!({"type": "object", "properties": {"u": {"anyOf": [{"type": "object"}]}}}),
            json!({"type": "string"}),
        ] {
            assert!(make_strict(&bad, None).is_err(), "{bad}");
        }
        assert!(!anthropic_unsupported_keyword("format", &json!("uuid")));
        assert!(anthropic_unsupported_keyword("minItems", &json!(2)));
    }
}
