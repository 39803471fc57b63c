//! Validation of tool arguments against the tool's JSON Schema, with pi's error text.
//!
//! Like pi (pi-schema with `coerce: true`), arguments are first coerced towards
//! the schema — an optional `null` is dropped, `"42"` becomes 42 for a number,
//! 5 becomes `"5"` for a string, a single value becomes a one-item array — and
//! then checked. Failures are reported one per failing keyword, in pi's words
//! (`missing`, `expected number, got string`, `unknown field`, …) at a dotted
//! path, followed by the received arguments as `JSON.stringify(args, null, 2)`.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Number, Value};

static DECIMAL_LITERAL: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$").ok());
static BIGINT_LITERAL: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^(-?(?:0|[1-9][0-9]*))(?:n|\.[0-9]+)?$").ok());

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

// ---------------------------------------------------------------------------
// JavaScript number and JSON formatting
// ---------------------------------------------------------------------------

/// `String(x)` for a JavaScript number.
pub fn js_number_string(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if x == 0.0 {
        return "0".into();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i64;
    let n = exp.parse::<i64>().unwrap_or(0) + 1;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e_sign = if e >= 0 { "+" } else { "-" };
        if k == 1 {
            format!("{digits}e{e_sign}{}", e.abs())
        } else {
            format!("{}.{}e{e_sign}{}", &digits[..1], &digits[1..], e.abs())
        }
    };
    format!("{sign}{body}")
}

/// `String(n)` for a JSON number.
pub fn js_number_of(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    js_number_string(n.as_f64().unwrap_or(f64::NAN))
}

fn js_quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn stringify_into(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number_of(n)),
        Value::String(s) => js_quote(s, out),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                out.push_str(&" ".repeat(indent + 2));
                stringify_into(item, indent + 2, out);
            }
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            out.push(']');
        }
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                out.push_str(&" ".repeat(indent + 2));
                js_quote(k, out);
                out.push_str(": ");
                stringify_into(item, indent + 2, out);
            }
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            out.push('}');
        }
    }
}

/// `JSON.stringify(v, null, 2)`.
pub fn js_stringify_pretty(v: &Value) -> String {
    let mut out = String::new();
    stringify_into(v, 0, &mut out);
    out
}

/// `JSON.stringify(v)` (compact).
pub fn js_stringify(v: &Value) -> String {
    match v {
        Value::Number(n) => js_number_of(n),
        Value::String(s) => {
            let mut out = String::new();
            js_quote(s, &mut out);
            out
        }
        Value::Array(items) => format!("[{}]", items.iter().map(js_stringify).collect::<Vec<_>>().join(",")),
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, item)| {
                    let mut key = String::new();
                    js_quote(k, &mut key);
                    format!("{key}:{}", js_stringify(item))
                })
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        other => other.to_string(),
    }
}

/// JavaScript's `Number(string)`: trimmed decimal, hex/octal/binary, `Infinity`, empty as 0.
pub fn js_string_to_number(s: &str) -> f64 {
    let is_js_space = |c: char| {
        matches!(c, '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}')
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}')
    };
    let t = s.trim_matches(is_js_space);
    if t.is_empty() {
        return 0.0;
    }
    for (prefix, radix) in [("0x", 16), ("0X", 16), ("0o", 8), ("0O", 8), ("0b", 2), ("0B", 2)] {
        if let Some(rest) = t.strip_prefix(prefix) {
            if rest.is_empty() || !rest.chars().all(|c| c.is_digit(radix)) {
                return f64::NAN;
            }
            return rest.chars().fold(0.0, |acc, c| acc * radix as f64 + c.to_digit(radix).unwrap_or(0) as f64);
        }
    }
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    if unsigned == "Infinity" {
        return if t.starts_with('-') { f64::NEG_INFINITY } else { f64::INFINITY };
    }
    let valid = DECIMAL_LITERAL.as_ref().is_some_and(|re| re.is_match(t));
    if !valid {
        return f64::NAN;
    }
    t.parse::<f64>().unwrap_or(f64::NAN)
}

/// A JSON number from an f64, as an integer when it is one (so it prints as JS prints it).
pub fn number_value(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15 {
        return Value::Number(Number::from(x as i64));
    }
    Number::from_f64(x).map(Value::Number).unwrap_or(Value::Null)
}

fn is_integer(v: &Value) -> bool {
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

fn matches_type(v: &Value, ty: &str) -> bool {
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

fn types_of(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

// TypeBox's conversion helpers (pass 2): `None` when the value does not convert.
fn try_string(v: &Value) -> Option<Value> {
    match v {
        Value::Bool(b) => Some(Value::String(b.to_string())),
        Value::Number(n) => Some(Value::String(js_number_of(n))),
        Value::Null => Some(Value::String("null".into())),
        Value::String(_) => Some(v.clone()),
        _ => None,
    }
}

fn big_int_of_string(s: &str) -> Option<f64> {
    let caps = BIGINT_LITERAL.as_ref()?.captures(s)?;
    let int = caps.get(1)?.as_str().parse::<f64>().ok()?;
    (int.abs() <= 9_007_199_254_740_991.0).then_some(int)
}

fn try_number(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => n.as_f64(),
        Value::Null => Some(0.0),
        Value::String(s) => {
            let x = js_string_to_number(s);
            if x.is_finite() {
                return Some(x);
            }
            match s.to_lowercase().as_str() {
                "false" => Some(0.0),
                "true" => Some(1.0),
                _ => big_int_of_string(s),
            }
        }
        _ => None,
    }
}

fn try_boolean(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_f64() {
            Some(x) if x == 0.0 => Some(false),
            Some(x) if x == 1.0 => Some(true),
            _ => None,
        },
        Value::Null => Some(false),
        Value::String(s) => match s.to_lowercase().as_str() {
            "false" | "0" => Some(false),
            "true" | "1" => Some(true),
            _ => None,
        },
        _ => None,
    }
}

fn try_null(v: &Value) -> Option<Value> {
    let ok = match v {
        Value::Bool(b) => !*b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
        Value::String(s) => matches!(s.to_lowercase().as_str(), "undefined" | "null" | "" | "0"),
        _ => false,
    };
    ok.then_some(Value::Null)
}

fn convert_literal(literal: &Value, v: &Value) -> Value {
    if literal == v {
        return v.clone();
    }
    let converted = match literal {
        Value::String(_) => try_string(v),
        Value::Number(_) => try_number(v).map(number_value),
        Value::Bool(_) => try_boolean(v).map(Value::Bool),
        _ => None,
    };
    match converted {
        Some(c) if json_eq(&c, literal) => c,
        _ => v.clone(),
    }
}

/// JSON equality with numbers compared by value (1 == 1.0).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| json_eq(a, b)))
        }
        _ => a == b,
    }
}

// Pass 3: primitive coercion by type (Ajv's coerceTypes).
fn coerce_primitive(v: &Value, ty: &str) -> Option<Value> {
    match ty {
        "number" | "integer" => match v {
            Value::Null => Some(number_value(0.0)),
            Value::String(s) if !s.trim().is_empty() => {
                let x = js_string_to_number(s);
                let ok = if ty == "number" { x.is_finite() } else { x.is_finite() && x.fract() == 0.0 };
                ok.then(|| number_value(x))
            }
            Value::Bool(b) => Some(number_value(if *b { 1.0 } else { 0.0 })),
            _ => None,
        },
        "boolean" => match v {
            Value::Null => Some(Value::Bool(false)),
            Value::String(s) if s == "true" => Some(Value::Bool(true)),
            Value::String(s) if s == "false" => Some(Value::Bool(false)),
            Value::Number(n) if n.as_f64() == Some(1.0) => Some(Value::Bool(true)),
            Value::Number(n) if n.as_f64() == Some(0.0) => Some(Value::Bool(false)),
            _ => None,
        },
        "string" => match v {
            Value::Null => Some(Value::String(String::new())),
            Value::Number(n) => Some(Value::String(js_number_of(n))),
            Value::Bool(b) => Some(Value::String(b.to_string())),
            _ => None,
        },
        "null" => match v {
            Value::String(s) if s.is_empty() => Some(Value::Null),
            Value::Number(n) if n.as_f64() == Some(0.0) => Some(Value::Null),
            Value::Bool(false) => Some(Value::Null),
            _ => None,
        },
        _ => None,
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
struct Validator<'a> {
    root: &'a Value,
}

impl<'a> Validator<'a> {
    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let path = reference.strip_prefix('#')?;
        if path.is_empty() {
            return Some(self.root);
        }
        self.root.pointer(path)
    }

    fn passes(&self, node: &Value, v: &Value) -> bool {
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

    // Pass 1: a `null` in an optional property whose schema rejects null is dropped.
    fn drop_optional_nulls(&self, v: Value, schema: &Value) -> Value {
        let Some(s) = schema.as_object() else { return v };
        match v {
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| match item_schema_at(s, i) {
                        Some(is) => self.drop_optional_nulls(item, is),
                        None => item,
                    })
                    .collect(),
            ),
            Value::Object(mut map) => {
                let Some(props) = s.get("properties").and_then(Value::as_object) else {
                    return Value::Object(map);
                };
                let required = required_of(s);
                for (key, prop) in props {
                    let Some(current) = map.get(key) else { continue };
                    let is_ref = prop.get("$ref").is_some_and(Value::is_string);
                    if current.is_null()
                        && !required.contains(&key.as_str())
                        && !is_ref
                        && !self.passes(prop, &Value::Null)
                    {
                        map.shift_remove(key);
                        continue;
                    }
                    if let Some(cur) = map.get_mut(key) {
                        *cur = self.drop_optional_nulls(cur.take(), prop);
                    }
                }
                Value::Object(map)
            }
            other => other,
        }
    }

    // Pass 2: TypeBox's conversion rules.
    fn convert(&self, node: &Value, v: Value, depth: usize) -> Value {
        let Some(s) = node.as_object() else { return v };
        if depth > 64 {
            return v;
        }
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            return match self.resolve(r) {
                Some(target) => self.convert(target, v, depth + 1),
                None => v,
            };
        }
        if let Some(literal) = s.get("const") {
            return convert_literal(literal, &v);
        }
        if let Some(values) = s.get("enum").and_then(Value::as_array) {
            if values.iter().any(|m| json_eq(m, &v)) {
                return v;
            }
            for m in values {
                let c = convert_literal(m, &v);
                if c != v && self.passes(node, &c) {
                    return c;
                }
            }
            return v;
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = s.get(key).and_then(Value::as_array) {
                if branches.iter().any(|b| self.passes(b, &v)) {
                    return self.convert_members(s, v, depth);
                }
                for b in branches {
                    let c = self.convert_members(s, self.convert(b, v.clone(), depth + 1), depth);
                    if self.passes(node, &c) {
                        return c;
                    }
                }
                return self.convert_members(s, v, depth);
            }
        }
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            let next = all.iter().fold(v, |acc, m| self.convert(m, acc, depth + 1));
            return self.convert_members(s, next, depth);
        }
        match s.get("type").and_then(Value::as_str) {
            Some("string") => try_string(&v).unwrap_or(v),
            Some("number") => try_number(&v).map(number_value).unwrap_or(v),
            Some("integer") => try_number(&v).map(|x| number_value(x.trunc())).unwrap_or(v),
            Some("boolean") => try_boolean(&v).map(Value::Bool).unwrap_or(v),
            Some("null") => try_null(&v).unwrap_or(v),
            Some("array") => self.convert_array(s, v, depth),
            Some("object") => self.convert_object(s, v, depth),
            None if s.contains_key("properties") || s.contains_key("patternProperties") => {
                self.convert_object(s, v, depth)
            }
            None if s.contains_key("items") || s.contains_key("prefixItems") => self.convert_array(s, v, depth),
            _ => v,
        }
    }

    fn convert_members(&self, s: &Map<String, Value>, v: Value, depth: usize) -> Value {
        let declares = s.contains_key("properties")
            || s.contains_key("patternProperties")
            || s.contains_key("additionalProperties");
        if declares { self.convert_object(s, v, depth) } else { v }
    }

    fn convert_array(&self, s: &Map<String, Value>, v: Value, depth: usize) -> Value {
        let prefix =
            s.get("items").and_then(Value::as_array).or_else(|| s.get("prefixItems").and_then(Value::as_array));
        if let Some(prefix) = prefix {
            let rest = if s.get("items").is_some_and(Value::is_array) { None } else { s.get("items") };
            let Value::Array(items) = v else { return v };
            return Value::Array(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| match prefix.get(i).or(rest) {
                        Some(is) => self.convert(is, item, depth + 1),
                        None => item,
                    })
                    .collect(),
            );
        }
        match (v, s.get("items")) {
            (Value::Array(items), Some(is)) => {
                Value::Array(items.into_iter().map(|item| self.convert(is, item, depth + 1)).collect())
            }
            (Value::Array(items), None) => Value::Array(items),
            (single, Some(is)) if is.is_object() => Value::Array(vec![self.convert(is, single, depth + 1)]),
            (single, _) => Value::Array(vec![single]),
        }
    }

    fn convert_object(&self, s: &Map<String, Value>, v: Value, depth: usize) -> Value {
        let Value::Object(map) = v else { return v };
        let props = s.get("properties").and_then(Value::as_object);
        let patterns = pattern_properties(s);
        let additional = s.get("additionalProperties").filter(|a| a.is_object());
        let mut out = Map::new();
        for (key, item) in map {
            let mut next = item;
            let mut matched = false;
            if let Some(prop) = props.and_then(|p| p.get(&key)) {
                matched = true;
                next = self.convert(prop, next, depth + 1);
            }
            for (re, ps) in &patterns {
                if re.is_match(&key) {
                    matched = true;
                    next = self.convert(ps, next, depth + 1);
                }
            }
            if let (false, Some(a)) = (matched, additional) {
                next = self.convert(a, next, depth + 1);
            }
            out.insert(key, next);
        }
        Value::Object(out)
    }

    // Pass 3: primitive coercion by `type`.
    fn coerce_types(&self, v: Value, schema: &Value, depth: usize) -> Value {
        let Some(s) = schema.as_object() else { return v };
        if depth > 64 {
            return v;
        }
        let mut next = v;
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            for m in all {
                next = self.coerce_types(next, m, depth + 1);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = s.get(key).and_then(Value::as_array) {
                if !branches.iter().any(|b| self.passes(b, &next)) {
                    for b in branches {
                        let c = self.coerce_types(next.clone(), b, depth + 1);
                        if self.passes(b, &c) {
                            next = c;
                            break;
                        }
                    }
                }
            }
        }
        let types = types_of(s);
        let matches_member = types.len() > 1 && types.iter().any(|t| matches_type(&next, t));
        if !types.is_empty() && !matches_member {
            for t in &types {
                if let Some(c) = coerce_primitive(&next, t) {
                    if c != next {
                        next = c;
                        break;
                    }
                }
            }
        }
        if types.contains(&"object") {
            if let Value::Object(map) = next {
                let props = s.get("properties").and_then(Value::as_object);
                let patterns = pattern_properties(s);
                let additional = s.get("additionalProperties").filter(|a| a.is_object());
                let mut out = Map::new();
                for (key, item) in map {
                    let mut item = item;
                    let mut matched = false;
                    if let Some(prop) = props.and_then(|p| p.get(&key)) {
                        matched = true;
                        item = self.coerce_types(item, prop, depth + 1);
                    }
                    for (re, ps) in &patterns {
                        if re.is_match(&key) {
                            matched = true;
                            item = self.coerce_types(item, ps, depth + 1);
                        }
                    }
                    if let (false, Some(a)) = (matched, additional) {
                        item = self.coerce_types(item, a, depth + 1);
                    }
                    out.insert(key, item);
                }
                next = Value::Object(out);
            }
        }
        if types.contains(&"array") {
            if let Value::Array(items) = next {
                next = Value::Array(
                    items
                        .into_iter()
                        .enumerate()
                        .map(|(i, item)| match item_schema_at(s, i) {
                            Some(is) if is.is_object() => self.coerce_types(item, is, depth + 1),
                            _ => item,
                        })
                        .collect(),
                );
            }
        }
        next
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
        if let Some(values) = s.get("enum").and_then(Value::as_array) {
            if !values.iter().any(|m| json_eq(m, v)) {
                push(out, path.into(), format!("expected one of {}", list_values(values)));
            }
        }
        if let Some(c) = s.get("const") {
            if !json_eq(c, v) {
                push(out, path.into(), format!("expected {}", js_stringify(c)));
            }
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
                if let Some(p) = s.get("pattern").and_then(Value::as_str) {
                    if Regex::new(p).is_ok_and(|re| !re.is_match(text)) {
                        push(out, path.into(), format!("expected to match {p}"));
                    }
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
        if let Some(not) = s.get("not") {
            if self.passes(not, v) {
                push(out, path.into(), "must not match the schema in not".into());
            }
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
            if let Some(names) = s.get("propertyNames") {
                if !self.passes(names, &Value::String(key.clone())) {
                    out.push(SchemaError { path: pointer(path, key), message: "invalid property name".into() });
                }
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
        if let Some(contains) = s.get("contains") {
            if !items.iter().any(|item| self.passes(contains, item)) {
                out.push(SchemaError { path: path.into(), message: "expected at least 1 matching item".into() });
            }
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

fn required_of(s: &Map<String, Value>) -> Vec<&str> {
    s.get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn item_schema_at(s: &Map<String, Value>, i: usize) -> Option<&Value> {
    if let Some(Value::Array(tuple)) = s.get("items") {
        return tuple.get(i);
    }
    if let Some(Value::Array(prefix)) = s.get("prefixItems") {
        if i < prefix.len() {
            return prefix.get(i);
        }
    }
    s.get("items")
}

fn pattern_properties(s: &Map<String, Value>) -> Vec<(Regex, &Value)> {
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
