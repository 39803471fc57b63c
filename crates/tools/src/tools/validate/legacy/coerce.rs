//! The old validator's copy of the argument coercion, as pi-schema does it with `coerce: true`:
//! pass 1 drops an optional `null`, pass 2 applies TypeBox's conversion rules
//! (`"42"` to 42, 5 to `"5"`, one value to a one-item array, unions take the
//! first branch that converts), pass 3 coerces primitives by `type` (Ajv style).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::{Validator, item_schema_at, json_eq, matches_type, pattern_properties, required_of, types_of};
use crate::tools::js::{js_number_of, js_string_to_number, number_value};

static BIGINT_LITERAL: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^(-?(?:0|[1-9][0-9]*))(?:n|\.[0-9]+)?$").ok());

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
            Some(0.0) => Some(false),
            Some(1.0) => Some(true),
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

impl Validator<'_> {
    // Pass 1: a `null` in an optional property whose schema rejects null is dropped.
    pub(super) fn drop_optional_nulls(&self, v: Value, schema: &Value) -> Value {
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
    pub(super) fn convert(&self, node: &Value, v: Value, depth: usize) -> Value {
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
    pub(super) fn coerce_types(&self, v: Value, schema: &Value, depth: usize) -> Value {
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
            if let Some(branches) = s.get(key).and_then(Value::as_array)
                && !branches.iter().any(|b| self.passes(b, &next))
            {
                for b in branches {
                    let c = self.coerce_types(next.clone(), b, depth + 1);
                    if self.passes(b, &c) {
                        next = c;
                        break;
                    }
                }
            }
        }
        let types = types_of(s);
        let matches_member = types.len() > 1 && types.iter().any(|t| matches_type(&next, t));
        if !types.is_empty() && !matches_member {
            for t in &types {
                if let Some(c) = coerce_primitive(&next, t)
                    && c != next
                {
                    next = c;
                    break;
                }
            }
        }
        if types.contains(&"object")
            && let Value::Object(map) = next
        {
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
        if types.contains(&"array")
            && let Value::Array(items) = next
        {
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
        next
    }
}
