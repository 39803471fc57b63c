//! Validation of tool arguments against the tool's JSON Schema, with pi's error text.
//!
//! Like pi (pi-schema with `coerce: true`), arguments are first coerced towards
//! the schema (`coerce.rs`) — an optional `null` is dropped, `"42"` becomes 42
//! for a number, 5 becomes `"5"` for a string, a single value becomes a
//! one-item array — and then checked. The `jsonschema` crate decides what is
//! valid (`compiled.rs`); `explain.rs` words each failing keyword as pi does
//! (`missing`, `expected number, got string`, `unknown field`, …) at a dotted
//! path, in pi's order, followed by the received arguments as
//! `JSON.stringify(args, null, 2)`.

use serde_json::{Map, Value};

pub use super::js::{
    js_number_of, js_number_string, js_string_to_number, js_stringify, js_stringify_pretty, number_value,
};

mod compiled;
mod explain;

use compiled::CompiledSchema;

/// Check `args` against `schema`; the error is the text the model sees.
pub fn validate_args(tool: &str, schema: &Value, args: &Value) -> Result<(), String> {
    coerce_and_validate(tool, schema, args).map(|_| ())
}

/// Coerce `args` towards `schema` and check them: the coerced arguments, or
/// pi's `Validation failed for tool …` text.
pub fn coerce_and_validate(tool: &str, schema: &Value, args: &Value) -> Result<Value, String> {
    let v = Validator::new(schema);
    let coerced = v.coerce(args.clone());
    let errors = v.errors(&coerced);
    if errors.is_empty() {
        return Ok(coerced);
    }
    let lines: Vec<String> = errors.iter().map(|e| format!("  - {}: {}", format_pointer(&e.path), e.message)).collect();
    Err(format!(
        "Validation failed for tool \"{tool}\":\n{}\n\nReceived arguments:\n{}",
        lines.join("\n"),
        js_stringify_pretty(args)
    ))
}

/// Coerce a value towards a schema without checking it (idempotent).
pub fn coerce(schema: &Value, value: Value) -> Value {
    Validator::new(schema).coerce(value)
}

/// One failing keyword: where (a JSON pointer) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaError {
    pub path: String,
    pub message: String,
}

/// The errors of `value` against `schema` (empty when valid).
pub fn schema_errors(schema: &Value, value: &Value) -> Vec<SchemaError> {
    Validator::new(schema).errors(value)
}

/// A JSON pointer as the dotted path pi shows (`/edits/0/oldText` -> `edits.0.oldText`).
fn format_pointer(pointer: &str) -> String {
    if pointer.is_empty() {
        return "root".to_string();
    }
    pointer[1..].split('/').map(|s| s.replace("~1", "/").replace("~0", "~")).collect::<Vec<_>>().join(".")
}

pub(super) fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.is_finite() && f.fract() == 0.0),
        _ => false,
    }
}

pub(super) fn matches_type(v: &Value, ty: &str) -> bool {
    match ty {
        "number" => v.is_number(),
        "integer" => is_integer(v),
        "boolean" => v.is_boolean(),
        "string" => v.is_string(),
        "null" => v.is_null(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => false,
    }
}

pub(super) fn types_of(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// JSON equality with numbers compared by value (1 == 1.0).
pub(super) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| json_eq(a, b)))
        }
        _ => a == b,
    }
}

/// A schema together with its root (for `$ref`) and its compiled form.
pub(super) struct Validator<'a> {
    pub(super) root: &'a Value,
    compiled: CompiledSchema<'a>,
}

impl<'a> Validator<'a> {
    fn new(root: &'a Value) -> Self {
        Validator { root, compiled: CompiledSchema::new(root) }
    }

    /// The schema a local `$ref` (`#`, `#/definitions/…`, `#/$defs/…`) points to.
    pub(super) fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let path = reference.strip_prefix('#')?;
        if path.is_empty() {
            return Some(self.root);
        }
        self.root.pointer(path)
    }

    /// Whether `v` is valid against `node`, a part of the root schema.
    pub(super) fn passes(&self, node: &Value, v: &Value) -> bool {
        self.compiled.passes(node, v)
    }

    fn errors(&self, v: &Value) -> Vec<SchemaError> {
        self.compiled.errors(v)
    }

    fn coerce(&self, v: Value) -> Value {
        let v = self.drop_optional_nulls(v, self.root);
        let v = self.convert(self.root, v, 0);
        self.coerce_types(v, self.root, 0)
    }
}

pub(super) fn required_of(s: &Map<String, Value>) -> Vec<&str> {
    s.get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

pub(super) fn item_schema_at(s: &Map<String, Value>, i: usize) -> Option<&Value> {
    if let Some(Value::Array(tuple)) = s.get("items") {
        return tuple.get(i);
    }
    if let Some(Value::Array(prefix)) = s.get("prefixItems")
        && i < prefix.len()
    {
        return prefix.get(i);
    }
    s.get("items")
}

pub(super) fn pattern_properties(s: &Map<String, Value>) -> Vec<(regex::Regex, &Value)> {
    s.get("patternProperties")
        .and_then(Value::as_object)
        .map(|p| p.iter().filter_map(|(pat, sch)| regex::Regex::new(pat).ok().map(|re| (re, sch))).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod equivalence;

#[cfg(test)]
mod tests;
