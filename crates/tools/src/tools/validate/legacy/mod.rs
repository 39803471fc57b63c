//! The hand-written validator that `jsonschema` replaced, kept only to prove the
//! replacement gives the same results (deleted once the results are recorded).
//!
//! Like pi (pi-schema with `coerce: true`), arguments are first coerced towards
//! the schema — an optional `null` is dropped, `"42"` becomes 42 for a number,
//! 5 becomes `"5"` for a string, a single value becomes a one-item array — and
//! then checked. Failures are reported one per failing keyword, in pi's words
//! (`missing`, `expected number, got string`, `unknown field`, …) at a dotted
//! path, followed by the received arguments as `JSON.stringify(args, null, 2)`.

#![allow(dead_code)]

use regex::Regex;
use serde_json::{Map, Value};

use crate::tools::js::{js_number_string, js_stringify, js_stringify_pretty};

/// Check `args` against `schema`; the error is the text the model sees.
pub fn validate_args(tool: &str, schema: &Value, args: &Value) -> Result<(), String> {
    coerce_and_validate(tool, schema, args).map(|_| ())
}

/// Coerce `args` towards `schema` and check them: the coerced arguments, or
/// pi's `Validation failed for tool …` text.
pub fn coerce_and_validate(tool: &str, schema: &Value, args: &Value) -> Result<Value, String> {
    let v = Validator { root: schema };
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
    Validator { root: schema }.coerce(value)
}

/// One failing keyword: where (a JSON pointer) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaError {
    pub path: String,
    pub message: String,
}

/// The errors of `value` against `schema` (empty when valid).
pub fn schema_errors(schema: &Value, value: &Value) -> Vec<SchemaError> {
    Validator { root: schema }.errors(value)
}

/// A JSON pointer as the dotted path pi shows (`/edits/0/oldText` -> `edits.0.oldText`).
fn format_pointer(pointer: &str) -> String {
    if pointer.is_empty() {
        return "root".to_string();
    }
    pointer[1..].split('/').map(|s| s.replace("~1", "/").replace("~0", "~")).collect::<Vec<_>>().join(".")
}

fn pointer(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

pub(super) fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.is_finite() && f.fract() == 0.0),
        _ => false,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Array(_) => "array",
        Value::Number(_) if is_integer(v) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
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

fn list_values(values: &[Value]) -> String {
    const LISTED: usize = 20;
    if values.len() <= LISTED {
        return js_stringify(&Value::Array(values.to_vec()));
    }
    let listed = js_stringify(&Value::Array(values[..LISTED].to_vec()));
    format!("{}, ... and {} more]", &listed[..listed.len() - 1], values.len() - LISTED)
}

fn bound_message(v: f64, schema: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    let num = |k: &str| schema.get(k).and_then(Value::as_f64);
    if let Some(m) = num("minimum").filter(|m| v < *m) {
        out.push(format!("expected >= {}", js_number_string(m)));
    }
    if let Some(m) = num("maximum").filter(|m| v > *m) {
        out.push(format!("expected <= {}", js_number_string(m)));
    }
    if let Some(m) = num("exclusiveMinimum").filter(|m| v <= *m) {
        out.push(format!("expected > {}", js_number_string(m)));
    }
    if let Some(m) = num("exclusiveMaximum").filter(|m| v >= *m) {
        out.push(format!("expected < {}", js_number_string(m)));
    }
    if let Some(d) = num("multipleOf").filter(|d| *d != 0.0 && ((v / d).round() - v / d).abs() > 1e-9) {
        out.push(format!("expected a multiple of {}", js_number_string(d)));
    }
    out
}

/// A schema together with its root (for `$ref`).
pub(super) struct Validator<'a> {
    pub(super) root: &'a Value,
}

impl<'a> Validator<'a> {
    pub(super) fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let path = reference.strip_prefix('#')?;
        if path.is_empty() {
            return Some(self.root);
        }
        self.root.pointer(path)
    }

    pub(super) fn passes(&self, node: &Value, v: &Value) -> bool {
        let mut out = Vec::new();
        self.walk(node, v, "", &mut out);
        out.is_empty()
    }

    fn errors(&self, v: &Value) -> Vec<SchemaError> {
        let mut out = Vec::new();
        self.walk(self.root, v, "", &mut out);
        out
    }

    fn coerce(&self, v: Value) -> Value {
        let v = self.drop_optional_nulls(v, self.root);
        let v = self.convert(self.root, v, 0);
        self.coerce_types(v, self.root, 0)
    }

    // The explanation walk: one error per failing keyword.
    fn walk(&self, node: &Value, v: &Value, path: &str, out: &mut Vec<SchemaError>) {
        self.walk_depth(node, v, path, out, 0)
    }

    fn walk_depth(&self, node: &Value, v: &Value, path: &str, out: &mut Vec<SchemaError>, depth: usize) {
        let push =
            |out: &mut Vec<SchemaError>, at: String, message: String| out.push(SchemaError { path: at, message });
        let s = match node {
            Value::Bool(true) => return,
            Value::Bool(false) => return push(out, path.into(), "no value is allowed here".into()),
            Value::Object(s) => s,
            _ => return,
        };
        if depth > 64 {
            return;
        }
        let types = types_of(s);
        if s.contains_key("type") && !types.iter().any(|t| matches_type(v, t)) {
            return push(out, path.into(), format!("expected {}, got {}", types.join(" or "), type_name(v)));
        }
        if let Some(values) = s.get("enum").and_then(Value::as_array)
            && !values.iter().any(|m| json_eq(m, v))
        {
            push(out, path.into(), format!("expected one of {}", list_values(values)));
        }
        if let Some(c) = s.get("const")
            && !json_eq(c, v)
        {
            push(out, path.into(), format!("expected {}", js_stringify(c)));
        }
        match v {
            Value::String(text) => {
                let n = text.chars().count() as f64;
                if let Some(m) = s.get("minLength").and_then(Value::as_f64).filter(|m| n < *m) {
                    push(out, path.into(), format!("expected at least {} characters", js_number_string(m)));
                }
                if let Some(m) = s.get("maxLength").and_then(Value::as_f64).filter(|m| n > *m) {
                    push(out, path.into(), format!("expected at most {} characters", js_number_string(m)));
                }
                if let Some(p) = s.get("pattern").and_then(Value::as_str)
                    && Regex::new(p).is_ok_and(|re| !re.is_match(text))
                {
                    push(out, path.into(), format!("expected to match {p}"));
                }
            }
            Value::Number(n) => {
                for m in bound_message(n.as_f64().unwrap_or(0.0), s) {
                    push(out, path.into(), m);
                }
            }
            Value::Object(map) => self.walk_object(s, map, path, out, depth),
            Value::Array(items) => self.walk_array(s, items, path, out, depth),
            _ => {}
        }
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            for m in all {
                self.walk_depth(m, v, path, out, depth + 1);
            }
        }
        if let Some(b) = s.get("anyOf").and_then(Value::as_array) {
            self.walk_union(b, v, path, out, false, depth);
        }
        if let Some(b) = s.get("oneOf").and_then(Value::as_array) {
            self.walk_union(b, v, path, out, true, depth);
        }
        if let Some(not) = s.get("not")
            && self.passes(not, v)
        {
            push(out, path.into(), "must not match the schema in not".into());
        }
        if let Some(cond) = s.get("if") {
            let branch = if self.passes(cond, v) { s.get("then") } else { s.get("else") };
            if let Some(b) = branch {
                self.walk_depth(b, v, path, out, depth + 1);
            }
        }
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            match self.resolve(r) {
                Some(target) => self.walk_depth(target, v, path, out, depth + 1),
                None => push(out, path.into(), format!("unresolved reference {r}")),
            }
        }
    }

    fn walk_object(
        &self,
        s: &Map<String, Value>,
        map: &Map<String, Value>,
        path: &str,
        out: &mut Vec<SchemaError>,
        depth: usize,
    ) {
        let props = s.get("properties").and_then(Value::as_object);
        for key in required_of(s) {
            if !map.contains_key(key) {
                out.push(SchemaError { path: pointer(path, key), message: "missing".into() });
            }
        }
        if let Some(props) = props {
            for (key, prop) in props {
                if let Some(item) = map.get(key) {
                    self.walk_depth(prop, item, &pointer(path, key), out, depth + 1);
                }
            }
        }
        let patterns = pattern_properties(s);
        for (key, item) in map {
            let mut matched = props.is_some_and(|p| p.contains_key(key));
            for (re, ps) in &patterns {
                if re.is_match(key) {
                    matched = true;
                    self.walk_depth(ps, item, &pointer(path, key), out, depth + 1);
                }
            }
            match s.get("additionalProperties") {
                Some(Value::Bool(false)) if !matched => {
                    out.push(SchemaError { path: pointer(path, key), message: "unknown field".into() })
                }
                Some(extra) if !matched => self.walk_depth(extra, item, &pointer(path, key), out, depth + 1),
                _ => {}
            }
            if let Some(names) = s.get("propertyNames")
                && !self.passes(names, &Value::String(key.clone()))
            {
                out.push(SchemaError { path: pointer(path, key), message: "invalid property name".into() });
            }
        }
        let count = map.len() as f64;
        if let Some(m) = s.get("minProperties").and_then(Value::as_f64).filter(|m| count < *m) {
            out.push(SchemaError {
                path: path.into(),
                message: format!("expected at least {} properties", js_number_string(m)),
            });
        }
        if let Some(m) = s.get("maxProperties").and_then(Value::as_f64).filter(|m| count > *m) {
            out.push(SchemaError {
                path: path.into(),
                message: format!("expected at most {} properties", js_number_string(m)),
            });
        }
    }

    fn walk_array(
        &self,
        s: &Map<String, Value>,
        items: &[Value],
        path: &str,
        out: &mut Vec<SchemaError>,
        depth: usize,
    ) {
        for (i, item) in items.iter().enumerate() {
            if let Some(is) = item_schema_at(s, i) {
                self.walk_depth(is, item, &format!("{path}/{i}"), out, depth + 1);
            }
        }
        let n = items.len() as f64;
        if let Some(m) = s.get("minItems").and_then(Value::as_f64).filter(|m| n < *m) {
            out.push(SchemaError {
                path: path.into(),
                message: format!("expected at least {} items", js_number_string(m)),
            });
        }
        if let Some(m) = s.get("maxItems").and_then(Value::as_f64).filter(|m| n > *m) {
            out.push(SchemaError {
                path: path.into(),
                message: format!("expected at most {} items", js_number_string(m)),
            });
        }
        if s.get("uniqueItems") == Some(&Value::Bool(true))
            && items.iter().enumerate().any(|(i, a)| items[..i].iter().any(|b| json_eq(a, b)))
        {
            out.push(SchemaError { path: path.into(), message: "expected unique items".into() });
        }
        if let Some(contains) = s.get("contains")
            && !items.iter().any(|item| self.passes(contains, item))
        {
            out.push(SchemaError { path: path.into(), message: "expected at least 1 matching item".into() });
        }
    }

    fn walk_union(
        &self,
        branches: &[Value],
        v: &Value,
        path: &str,
        out: &mut Vec<SchemaError>,
        exactly_one: bool,
        depth: usize,
    ) {
        let matches = branches.iter().filter(|b| self.passes(b, v)).count();
        if matches == 1 || (!exactly_one && matches > 0) {
            return;
        }
        if matches > 1 {
            out.push(SchemaError { path: path.into(), message: "matches more than one alternative".into() });
            return;
        }
        let resolved: Vec<&Value> = branches
            .iter()
            .map(|b| b.get("$ref").and_then(Value::as_str).and_then(|r| self.resolve(r)).unwrap_or(b))
            .collect();
        if let (Some((key, tags)), Value::Object(map)) = (tag_of(&resolved), v) {
            match tags.iter().position(|t| map.get(&key) == Some(t)) {
                Some(i) => self.walk_depth(&branches[i], v, path, out, depth + 1),
                None => out.push(SchemaError {
                    path: pointer(path, &key),
                    message: format!("expected one of {}", list_values(&tags)),
                }),
            }
            return;
        }
        let mut best: Option<(Vec<SchemaError>, usize)> = None;
        for (b, r) in branches.iter().zip(&resolved) {
            let mut errs = Vec::new();
            self.walk_depth(b, v, path, &mut errs, depth + 1);
            if errs.is_empty() {
                continue;
            }
            let declared = match (v, r.get("properties").and_then(Value::as_object)) {
                (Value::Object(map), Some(props)) => map.keys().filter(|k| props.contains_key(*k)).count(),
                _ => 0,
            };
            let better = match &best {
                None => true,
                Some((be, bd)) => declared > *bd || (declared == *bd && errs[0].path.len() > be[0].path.len()),
            };
            if better {
                best = Some((errs, declared));
            }
        }
        match best {
            Some((errs, _)) => out.extend(errs),
            None => out.push(SchemaError { path: path.into(), message: "matches no alternative".into() }),
        }
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

pub(super) fn pattern_properties(s: &Map<String, Value>) -> Vec<(Regex, &Value)> {
    s.get("patternProperties")
        .and_then(Value::as_object)
        .map(|p| p.iter().filter_map(|(pat, sch)| Regex::new(pat).ok().map(|re| (re, sch))).collect())
        .unwrap_or_default()
}

/// The discriminating property of a tagged union: a key whose `const` values
/// are primitive and distinct across all branches.
fn tag_of(branches: &[&Value]) -> Option<(String, Vec<Value>)> {
    let first = branches.first()?.get("properties")?.as_object()?;
    for key in first.keys() {
        let tags: Vec<Option<&Value>> = branches
            .iter()
            .map(|b| b.get("properties").and_then(|p| p.get(key)).and_then(|t| t.get("const")))
            .collect();
        let primitive = tags.iter().all(|t| t.is_some_and(|t| !t.is_object() && !t.is_array()));
        if !primitive {
            continue;
        }
        let values: Vec<Value> = tags.into_iter().flatten().cloned().collect();
        let distinct = values.iter().enumerate().all(|(i, a)| !values[..i].contains(a));
        if distinct {
            return Some((key.clone(), values));
        }
    }
    None
}

mod coerce;
