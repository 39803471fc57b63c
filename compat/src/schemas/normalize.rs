//! Post-processing of generated schemas so that they read well and are
//! strict: `$ref`s with sibling properties are inlined (so every object lists
//! all of its properties in one place), objects that list their properties
//! are closed, and definitions nothing refers to are dropped.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

const DEFS_PREFIX: &str = "#/$defs/";

/// Normalise a root schema in place.
pub fn normalize(root: &mut Value) {
    let mut defs = take_defs(root);
    // Inline inside the definitions first (to a fixed point), then in the body.
    for _ in 0..8 {
        let snapshot = defs.clone();
        let mut changed = false;
        for def in defs.values_mut() {
            changed |= inline_ref_siblings(def, &snapshot);
        }
        if !changed {
            break;
        }
    }
    inline_ref_siblings(root, &defs);
    for def in defs.values_mut() {
        close_objects(def);
    }
    close_objects(root);
    let used = reachable(root, &defs);
    defs.retain(|name, _| used.contains(name));
    if let Some(obj) = root.as_object_mut()
        && !defs.is_empty()
    {
        obj.insert("$defs".into(), Value::Object(defs));
    }
}

fn take_defs(root: &mut Value) -> Map<String, Value> {
    match root.as_object_mut().and_then(|o| o.remove("$defs")) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

fn def_name(reference: &str) -> Option<&str> {
    reference.strip_prefix(DEFS_PREFIX)
}

/// A definition that is a plain object schema (safe to merge into another).
fn plain_object(def: &Value) -> Option<&Map<String, Value>> {
    let obj = def.as_object()?;
    let composite = ["oneOf", "anyOf", "allOf", "$ref", "if"].iter().any(|k| obj.contains_key(*k));
    (obj.contains_key("properties") && !composite).then_some(obj)
}

/// Inline `{"$ref": X, "properties": …}` nodes; true when anything changed.
fn inline_ref_siblings(node: &mut Value, defs: &Map<String, Value>) -> bool {
    let mut changed = false;
    match node {
        Value::Object(obj) => {
            let target = obj
                .get("$ref")
                .and_then(Value::as_str)
                .filter(|_| obj.contains_key("properties") || obj.contains_key("required"))
                .and_then(def_name)
                .and_then(|name| defs.get(name))
                .and_then(plain_object)
                .cloned();
            if let Some(def) = target {
                obj.remove("$ref");
                merge_object(obj, &def);
                changed = true;
            }
            for v in obj.values_mut() {
                changed |= inline_ref_siblings(v, defs);
            }
        }
        Value::Array(items) => {
            for v in items {
                changed |= inline_ref_siblings(v, defs);
            }
        }
        _ => {}
    }
    changed
}

/// Merge a plain object definition into a node that refers to it.
fn merge_object(node: &mut Map<String, Value>, def: &Map<String, Value>) {
    let mut props = match node.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    if let Some(Value::Object(def_props)) = def.get("properties") {
        for (k, v) in def_props {
            props.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    let mut required: Vec<Value> = match node.remove("required") {
        Some(Value::Array(r)) => r,
        _ => Vec::new(),
    };
    if let Some(Value::Array(def_req)) = def.get("required") {
        for r in def_req {
            if !required.contains(r) {
                required.push(r.clone());
            }
        }
    }
    for (k, v) in def {
        if k != "properties" && k != "required" && k != "title" {
            node.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    node.insert("type".into(), Value::String("object".into()));
    node.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        node.insert("required".into(), Value::Array(required));
    }
}

/// Close every object that lists its properties and says nothing about others.
fn close_objects(node: &mut Value) {
    match node {
        Value::Object(obj) => {
            if obj.contains_key("properties")
                && !obj.contains_key("additionalProperties")
                && !obj.contains_key("unevaluatedProperties")
            {
                obj.insert("additionalProperties".into(), Value::Bool(false));
            }
            for v in obj.values_mut() {
                close_objects(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

fn collect_refs(node: &Value, out: &mut Vec<String>) {
    match node {
        Value::Object(obj) => {
            if let Some(name) = obj.get("$ref").and_then(Value::as_str).and_then(def_name) {
                out.push(name.to_string());
            }
            obj.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Names of the definitions reachable from the body.
fn reachable(root: &Value, defs: &Map<String, Value>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = Vec::new();
    collect_refs(root, &mut todo);
    while let Some(name) = todo.pop() {
        if seen.insert(name.clone())
            && let Some(def) = defs.get(&name)
        {
            collect_refs(def, &mut todo);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn refs_with_siblings_are_inlined_and_objects_closed() {
        let mut s = json!({
            "oneOf": [{ "type": "object", "properties": { "role": { "const": "user" } }, "required": ["role"], "$ref": "#/$defs/User" }],
            "$defs": {
                "User": { "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] },
                "Unused": { "type": "string" },
                "Open": { "type": "object", "properties": {}, "additionalProperties": true }
            }
        });
        normalize(&mut s);
        assert_eq!(
            s,
            json!({
                "oneOf": [{
                    "type": "object",
                    "properties": { "role": { "const": "user" }, "text": { "type": "string" } },
                    "required": ["role", "text"],
                    "additionalProperties": false
                }]
            })
        );
    }
}
